//! The output flags of the test commands (`--json`, `--json-stream`, `--csv`, `--format`)
//! and the format they pick.

use clap::Args as ClapArgs;

use super::UsageError;
use crate::export::Format;

/// Output selection, shared by commands that print results.
#[derive(Debug, Clone, ClapArgs)]
pub struct OutputArgs {
    /// One JSON record (schema: docs/json-schema/run-v1.json).
    #[arg(long, conflicts_with_all = ["json_stream", "csv", "format"])]
    pub json: bool,
    /// Line-delimited JSON events: start, every interval, end.
    #[arg(long, conflicts_with_all = ["csv", "format"])]
    pub json_stream: bool,
    /// CSV: a header and one row per direction.
    #[arg(long, conflicts_with = "format")]
    pub csv: bool,
    /// Output format: table, json, json-stream, csv, netperf, ttcp.
    #[arg(long)]
    pub format: Option<String>,
}

/// Picks the output format.
pub fn output_format(o: &OutputArgs) -> Result<Format, UsageError> {
    if o.json {
        return Ok(Format::Json);
    }
    if o.json_stream {
        return Ok(Format::JsonStream);
    }
    if o.csv {
        return Ok(Format::Csv);
    }
    match &o.format {
        None => Ok(Format::Table),
        Some(f) => f
            .parse()
            .map_err(|e: crate::export::UnknownFormat| UsageError(format!("--format: {e}"))),
    }
}
