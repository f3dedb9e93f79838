//! `linerate demo` arguments.

use clap::Args as ClapArgs;

use super::units;

/// `linerate demo` arguments.
#[derive(Debug, ClapArgs)]
pub struct DemoArgs {
    /// Seconds per test.
    #[arg(short = 't', long, default_value = "2", value_parser = units::parse_duration)]
    pub time: std::time::Duration,
    /// Print the records as a JSON array.
    #[arg(long)]
    pub json: bool,
}
