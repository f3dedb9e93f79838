//! `linerate history`: the stored runs that match the filters, newest first, as a table or
//! JSON (`export::history`).

use std::process::ExitCode;

use super::write_out;
use crate::cli::history::{filter, HistoryArgs};
use crate::export;
use crate::store::{default_path, HistoryRecord, Store};

/// Runs `linerate history`.
pub fn command(a: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let f = filter(a)?;
    let path = match &a.db {
        Some(p) => p.clone(),
        None => default_path()?,
    };
    let store = Store::open_existing(&path)?;
    let rec = HistoryRecord {
        database: store.path().to_string(),
        schema_version: store.version()?,
        runs: store.list(&f)?,
    };
    let text = if a.json {
        export::json::pretty(&rec)
    } else {
        export::history::render(&rec)
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}
