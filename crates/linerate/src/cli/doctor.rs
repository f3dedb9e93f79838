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
    /// A TCP_CRR rate (connections per second) to check this host's conntrack table
    /// against: each closed connection keeps an entry for nf_conntrack_tcp_timeout_time_wait
    /// (120 s by default).
    #[arg(long, value_name = "TPS", value_parser = parse_crr_rate)]
    pub crr_rate: Option<u64>,
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

/// `--crr-rate`: a whole number of connections per second, at least 1.
fn parse_crr_rate(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a rate: give TCP_CRR connections per second, a whole number of at least 1 (e.g. --crr-rate 10000)"
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn crr_rate_is_a_positive_whole_number() {
        assert_eq!(super::parse_crr_rate("10000"), Ok(10_000));
        for bad in ["0", "-5", "1.5", "fast"] {
            let e = super::parse_crr_rate(bad).unwrap_err();
            assert!(e.contains("connections per second"), "{e}");
        }
    }
}
