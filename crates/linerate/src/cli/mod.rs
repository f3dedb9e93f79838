//! The command line: [`args`] holds the subcommands, and `cli/COMMAND.rs` each command's
//! arguments with their validation into a plan (every cross-flag check), so engines and
//! sessions never see raw arguments. [`units`] parses sizes, rates and durations.

pub mod analyze;
pub mod args;
pub mod campaign;
pub mod compare;
pub mod demo;
pub mod doctor;
pub mod history;
pub mod lab;
pub mod output;
pub mod repeat;
pub mod rfc2544;
pub mod rr;
pub mod schema;
pub mod serve;
pub mod stream;
pub mod sweep;
pub mod units;

/// A usage error: one line that says how to fix it (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
