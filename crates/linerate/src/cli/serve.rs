//! `linerate serve` arguments.

use clap::Args as ClapArgs;

use super::units;

/// `linerate serve` arguments.
#[derive(Debug, ClapArgs)]
pub struct ServeArgs {
    /// Address to listen on; [::] also accepts IPv4.
    #[arg(long, default_value = "::")]
    pub bind: String,
    /// Port for control and data, TCP and UDP.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// Longest test accepted.
    #[arg(long, default_value = "3600", value_parser = units::parse_duration)]
    pub max_duration: std::time::Duration,
    /// Most parallel streams per direction in one test.
    #[arg(long, default_value_t = 128)]
    pub max_streams: u16,
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
    /// Time a session may sit idle before its test starts.
    #[arg(long, default_value = "60", value_parser = units::parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// Serve one test, then exit.
    #[arg(long)]
    pub one_off: bool,
    /// Require authentication: FILE has one `user:secret` (or `user:sha256:HEX`) per line and
    /// must not be readable by group or others. Clients pass --auth-user.
    #[arg(long, value_name = "FILE")]
    pub auth_users: Option<std::path::PathBuf>,
    /// Capture a test's packets here too when its client asks (linerate tcp|udp|rr
    /// --capture) and return them with the results (at most 1 MiB; needs CAP_NET_RAW).
    #[arg(long)]
    pub allow_capture: bool,
    /// Hooks clients may ask this server to run between a sweep's points (linerate sweep
    /// --hook): a TOML file declaring each hook's command, its typed and range-checked
    /// parameters and a restore command run when the client's session ends. Nothing else is
    /// ever run for a client; see docs/protocol.md.
    #[arg(long, value_name = "FILE")]
    pub hooks: Option<std::path::PathBuf>,
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
    /// No per-test log lines.
    #[arg(short, long)]
    pub quiet: bool,
}
