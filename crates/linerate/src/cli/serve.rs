//! `linerate serve` arguments.

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args as ClapArgs;

use super::{units, UsageError};
use crate::model::plan::Debug;
use crate::session::protocol::auth;
use crate::session::server::policy::hooks::HookSet;
use crate::session::server::ServerConfig;

/// `linerate serve` arguments.
#[derive(Debug, ClapArgs)]
pub struct ServeArgs {
    /// Address to listen on; [::] also accepts IPv4.
    #[arg(long, default_value = "::")]
    pub bind: String,
    /// Port for control and data, TCP and UDP (linerate's and iperf3's clients alike).
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// Longest test accepted.
    #[arg(long, default_value = "3600", value_parser = units::parse_duration)]
    pub max_duration: std::time::Duration,
    /// Most parallel streams per direction in one test (at most 32767).
    #[arg(long, default_value_t = 128,
          value_parser = clap::value_parser!(u16).range(1..=i64::from(crate::session::server::policy::limits::MAX_STREAMS)))]
    pub max_streams: u16,
    /// Most streams of all running tests together (each is a thread and a socket).
    #[arg(long, default_value_t = crate::session::server::policy::limits::DEFAULT_TOTAL_STREAMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_total_streams: u32,
    /// Most buffer bytes of all running tests together: per stream its write buffer and
    /// twice the socket buffer it asks for (4 MiB when it asks for none). Default: a
    /// quarter of the host's memory.
    #[arg(long, value_parser = units::parse_size)]
    pub max_total_buffer: Option<u64>,
    /// Most connections one client address (an IPv6 address: its /64) may hold open
    /// besides the data connections of its admitted tests (control sessions, connections
    /// not yet identified). Lowered at start, and said so, when the open-file limit cannot
    /// hold it.
    #[arg(long, default_value_t = crate::session::server::DEFAULT_CONNECTIONS_PER_ADDRESS,
          value_parser = parse_count)]
    pub max_connections_per_address: usize,
    /// Most control sessions one client address may have before their test request.
    #[arg(long, default_value_t = crate::session::server::DEFAULT_HANDSHAKES_PER_ADDRESS,
          value_parser = parse_count)]
    pub max_handshakes_per_address: usize,
    /// Tests running at once.
    #[arg(long, default_value_t = 16)]
    pub max_tests: usize,
    /// Highest paced rate per direction (e.g. 1G); unlimited if not given.
    #[arg(long, value_parser = units::parse_rate)]
    pub max_rate: Option<u64>,
    /// Largest write or datagram size.
    #[arg(long, default_value = "1M", value_parser = units::parse_size32)]
    pub max_write_size: u32,
    /// Largest socket buffer a client may request.
    #[arg(long, default_value = "64M", value_parser = units::parse_size32)]
    pub max_socket_buffer: u32,
    /// Time a new connection has to send its hello.
    #[arg(long, default_value = "10", value_parser = units::parse_duration)]
    pub handshake_timeout: std::time::Duration,
    /// Time a session may take between its welcome and its test request.
    #[arg(long, default_value = "10", value_parser = units::parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// Serve one test, then exit.
    #[arg(long)]
    pub one_off: bool,
    /// Require authentication: FILE has one `user:secret` (or `user:sha256:HEX`) per line and
    /// must not be readable by group or others. Clients pass --auth-user.
    #[arg(long, value_name = "FILE")]
    pub auth_users: Option<std::path::PathBuf>,
    /// With --auth-users, let iperf3 clients (iperf3 -c, linerate tcp|udp --iperf3) test
    /// without credentials: iperf3's protocol carries none, so by default they are refused
    /// with iperf3's "test authorization failed".
    #[arg(long, requires = "auth_users")]
    pub allow_iperf3_unauthenticated: bool,
    /// Be a fleet agent: take third-party test orders (`linerate fleet run`) from the users
    /// of --fleet-coordinators: run the ordered tcp, udp or rr test towards another agent
    /// (as the same user, with this file's key) and return its record. One ordered test at a
    /// time; each is logged as `fleet: test ID start ...` and `fleet: test ID end ...`.
    #[arg(long, requires_all = ["auth_users", "fleet_coordinators"])]
    pub fleet_agent: bool,
    /// With --fleet-agent: the users of --auth-users who may order tests (comma-separated);
    /// the others may only test against this server.
    #[arg(
        long,
        value_name = "USER,...",
        value_delimiter = ',',
        requires = "fleet_agent"
    )]
    pub fleet_coordinators: Vec<String>,
    /// With --fleet-agent: an address or network (CIDR) this agent may test besides the
    /// other agents of its fleet (servers that prove they know the ordering user's key);
    /// repeat it for more. Towards any other host an ordered test does not start.
    #[arg(long, value_name = "ADDR|CIDR", value_parser = crate::cli::order::AllowedNet::parse, requires = "fleet_agent")]
    pub fleet_allow: Vec<crate::cli::order::AllowedNet>,
    /// Capture a test's packets here too when its client asks (linerate tcp|udp|rr
    /// --capture) and return them with the results (at most 1 MiB; needs CAP_NET_RAW).
    #[arg(long)]
    pub allow_capture: bool,
    /// Profile this host's CPUs during a test when its client asks (linerate tcp|udp|rr
    /// --profile) and return the profile with the results: the top kernel functions and
    /// the names of the processes that ran. Needs root or CAP_PERFMON.
    #[arg(long)]
    pub allow_profile: bool,
    /// Serve TCP_CRR tests (linerate rr --connect) on this port too. By default each such
    /// test gets a port of its own on this address, where its threads accept the test's
    /// connections directly (faster: no hand-over from the accept thread); use this when a
    /// firewall opens only --port.
    #[arg(long)]
    pub one_port: bool,
    /// Hooks clients may ask this server to run between a sweep's points (linerate sweep
    /// --hook): a TOML file declaring each hook's command, its typed and range-checked
    /// parameters and a restore command run when the client's session ends. Nothing else is
    /// ever run for a client; see docs/protocol.md.
    #[arg(long, value_name = "FILE")]
    pub hooks: Option<std::path::PathBuf>,
    /// Serve figures for monitoring at http://ADDR/metrics in the Prometheus text format:
    /// tests run and failed, bytes, current and last throughput, CPU, errors (e.g.
    /// 127.0.0.1:9464; GET /metrics only, no authentication: bind it where only the
    /// monitoring system reaches).
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_metrics_addr)]
    pub metrics: Option<std::net::SocketAddr>,
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
    /// No per-test log lines.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--metrics`: an IP address and a port.
fn parse_metrics_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    s.trim().parse().map_err(|_| {
        format!("'{s}' is not an address and port: give e.g. 127.0.0.1:9464 or [::1]:9464")
    })
}

/// A count of at least 1.
fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("'{s}' is not a count of 1 or more")),
    }
}

/// The server's configuration from its flags, checked: an IP address to bind, at least one
/// stream and test, a total buffer above zero; the users and hooks files loaded.
pub fn server_config(a: &ServeArgs) -> Result<ServerConfig, UsageError> {
    let ip: std::net::IpAddr = a.bind.parse().map_err(|_| {
        UsageError(format!(
            "--bind {}: not an IP address (use :: or 0.0.0.0 or 127.0.0.1)",
            a.bind
        ))
    })?;
    if a.max_streams == 0 || a.max_tests == 0 {
        return Err(UsageError(
            "--max-streams and --max-tests must be at least 1".into(),
        ));
    }
    let mut cfg = ServerConfig {
        listen: SocketAddr::new(ip, a.port),
        max_tests: a.max_tests,
        handshake_timeout: a.handshake_timeout,
        idle_timeout: a.idle_timeout,
        one_off: a.one_off,
        allow_capture: a.allow_capture,
        allow_profile: a.allow_profile,
        one_port: a.one_port,
        debug: Debug(a.debug_protocol),
        log: !a.quiet,
        users: match &a.auth_users {
            Some(p) => Some(Arc::new(auth::Users::load(p).map_err(UsageError)?)),
            None => None,
        },
        allow_iperf3_unauthenticated: a.allow_iperf3_unauthenticated,
        hooks: match &a.hooks {
            Some(_) if !cfg!(feature = "hooks") => {
                return Err(super::not_in_this_build("--hooks", "hooks"));
            }
            Some(p) => Some(Arc::new(HookSet::load(p).map_err(UsageError)?)),
            None => None,
        },
        ..ServerConfig::default()
    };
    cfg.limits.max_duration_ms = u64::try_from(a.max_duration.as_millis()).unwrap_or(u64::MAX);
    cfg.limits.max_streams = a.max_streams;
    cfg.limits.max_rate_bps = a.max_rate;
    cfg.limits.max_write_size = a.max_write_size;
    cfg.limits.max_socket_buffer = a.max_socket_buffer;
    cfg.max_connections_per_address = a.max_connections_per_address;
    cfg.max_handshakes_per_address = a.max_handshakes_per_address;
    cfg.budget.streams = a.max_total_streams;
    if let Some(b) = a.max_total_buffer {
        if b == 0 {
            return Err(UsageError("--max-total-buffer must be above zero".into()));
        }
        cfg.budget.buffer_bytes = b;
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    fn config(argv: &[&str]) -> Result<ServerConfig, UsageError> {
        let mut v = vec!["linerate", "serve"];
        v.extend_from_slice(argv);
        server_config(&parse_one::<ServeArgs>("serve", &v).unwrap())
    }

    #[test]
    fn flags_are_checked_into_the_config() {
        let c = config(&["--bind", "127.0.0.1", "-p", "0", "--max-streams", "3"]).unwrap();
        assert_eq!(c.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!(c.limits.max_streams, 3);
        assert!(config(&["--bind", "nowhere"])
            .unwrap_err()
            .0
            .contains("not an IP address"));
        assert!(config(&["--max-tests", "0"])
            .unwrap_err()
            .0
            .contains("at least 1"));
        assert!(config(&["--max-total-buffer", "0"])
            .unwrap_err()
            .0
            .contains("above zero"));
    }
}
