//! `linerate doctor` arguments.

use std::time::Duration;

use super::common::AuthArgs;
use super::units;

/// `linerate doctor` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// A host running `linerate serve`: check its settings too, and the path to it.
    pub host: Option<String>,
    /// The server's port.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// The socket buffer size you mean to request (-w), checked against rmem_max and
    /// wmem_max on both ends; default: linerate's 4 MiB UDP receive buffer.
    #[arg(short = 'w', long, value_parser = units::parse_size32)]
    pub window: Option<u32>,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
    /// Time to wait for the server.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: Duration,
    #[command(flatten)]
    pub store: super::common::StoreArgs,
    #[command(flatten)]
    pub auth: AuthArgs,
}
