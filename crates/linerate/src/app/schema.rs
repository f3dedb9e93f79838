//! `linerate schema [NAME]`: the JSON Schema of a record, as committed under
//! `docs/json-schema/NAME-v1.json`.

use std::process::ExitCode;

use super::write_out;
use crate::cli::schema::SchemaArgs;

/// Runs `linerate schema`.
pub fn command(a: &SchemaArgs) -> anyhow::Result<ExitCode> {
    write_out(&a.which.schema())?;
    Ok(ExitCode::SUCCESS)
}
