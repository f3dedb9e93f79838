//! Raw command-line arguments (clap derive). Nothing here is validated across flags; that is
//! [`super::plan`]'s job, so engines never see these types.

use clap::{Args as ClapArgs, Parser, Subcommand};

use super::units;

const EXIT_CODES: &str = "Exit codes: 0 success; 1 the run completed but a pass/fail criterion failed; 2 usage, network, protocol or I/O error.";

/// linerate: how much data a system really moves, at what CPU cost, and what stops it.
#[derive(Debug, Parser)]
#[command(name = "linerate", version, about, after_help = EXIT_CODES)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a server that many clients can test against at once (netserver, iperf3 -s).
    #[command(
        after_help = "Examples:\n  linerate serve                      # port 5301, TCP and UDP, IPv4 and IPv6\n  linerate serve --port 6000 --max-tests 4 --max-duration 60\n  linerate serve --one-off            # serve one test, then exit\n\nSIGINT or SIGTERM end running tests cleanly."
    )]
    Serve(ServeArgs),
    /// TCP stream test against a server (netperf TCP_STREAM / TCP_MAERTS, ttcp, iperf3).
    #[command(
        after_help = "Examples:\n  linerate tcp 192.0.2.10                   # send for 10 s\n  linerate tcp HOST -R                      # server sends (TCP_MAERTS)\n  linerate tcp HOST --bidir -P 4            # both ways, 4 streams each\n  linerate tcp HOST -n 16M -l 8K --format ttcp   # ttcp: buflen=8192 nbuf=2048\n  linerate tcp HOST -l 64K -s 256K -S 256K --format netperf\n  linerate tcp HOST -t 30 -O 2 --json > run.json"
    )]
    Tcp(StreamArgs),
    /// UDP stream test: loss, duplicates, reordering, jitter, packets per second.
    #[command(
        after_help = "Examples:\n  linerate udp HOST -l 64                   # smallest datagrams, as fast as possible\n  linerate udp HOST -b 100M -l 1400         # paced at 100 Mbit/s\n  linerate udp HOST -R -b 1G --format netperf"
    )]
    Udp(StreamArgs),
    /// Request/response latency test (netperf TCP_RR, TCP_CRR with --connect, UDP_RR with --udp).
    #[command(
        after_help = "Examples:\n  linerate rr HOST                          # TCP_RR, 1-byte request and response, 10 s\n  linerate rr HOST -r 64,1024 --burst 8     # 8 transactions in flight\n  linerate rr HOST --connect                # TCP_CRR: a connection per transaction\n  linerate rr HOST --udp --timeout 50ms     # UDP_RR with lost-transaction accounting\n  linerate rr HOST --rate 10k               # paced; latency from the intended send time\n  linerate rr HOST -A 0,1 --format netperf  # netperf's TCP_RR table\n  linerate rr HOST --confidence 99,5 --json > b.json"
    )]
    Rr(super::rr_args::RrArgs),
    /// Compare results side by side: difference, ratio, confidence interval and a verdict per metric.
    #[command(
        after_help = "Examples:\n  linerate tcp HOST --repeat 5 --json > a.json   # (change something)\n  linerate tcp HOST --repeat 5 --json > b.json\n  linerate compare a.json b.json\n\nThe test is Welch's two-sided t-test at 95 % confidence; files with single runs are shown side\nby side without a verdict (use --repeat 5 or more)."
    )]
    Compare(super::rr_args::CompareArgs),
    /// Start a server on loopback and run a short suite: the quickest way to see linerate work.
    #[command(after_help = "Examples:\n  linerate demo\n  linerate demo --json > demo.json")]
    Demo(DemoArgs),
    /// RFC 2544 benchmarks of a device between this host and a `linerate serve` beyond it:
    /// throughput, latency, frame loss rate, back-to-back frames per frame size.
    #[command(
        after_help = "Examples:\n  linerate rfc2544 198.51.100.2                        # throughput, RFC 2544 frame sizes\n  linerate rfc2544 HOST --bidir --line-rate 1G --chart tput.svg\n  linerate rfc2544 HOST --test all --loss 0,0.1 --json > rfc2544.json\n  linerate rfc2544 HOST --frame-sizes 64,512,1518 --trial-time 2 --confirm-time 10\n\nThe server runs `linerate serve` on the far side of the device; see docs/rfc2544.md."
    )]
    Rfc2544(super::rfc2544::Rfc2544Args),
    /// Network-namespace labs on this machine (needs root): try linerate without a second host.
    #[command(
        after_help = "Examples:\n  linerate lab up demo --topology router --rate 100M\n  linerate lab exec demo b -- linerate serve &\n  linerate lab exec demo a -- linerate rfc2544 B_ADDR --line-rate 1G\n  linerate lab list\n  linerate lab down demo"
    )]
    Lab(super::lab::LabArgs),
    /// Check this host's (and with HOST, the server's) settings that matter for throughput:
    /// socket buffer limits, TCP memory, congestion control, MTU, CPU governor, offloads,
    /// interrupt coalescing and affinity. Prints the commands that would fix them; changes
    /// nothing.
    #[command(
        after_help = "Examples:\n  linerate doctor                     # this host, the interface of the default route\n  linerate doctor 192.0.2.10          # both ends: asks `linerate serve` there for its findings\n  linerate doctor HOST -w 16M --json  # check limits against 16 MiB socket buffers"
    )]
    Doctor(super::doctor::DoctorArgs),
    /// Analyse a packet capture (pcap or pcapng): per TCP connection retransmissions, RTT,
    /// windows, delayed-ACK stalls, window- and application-limited time, loss recovery;
    /// UDP flows; RFC 6349 metrics with --link-rate.
    #[command(
        after_help = "Examples:\n  linerate analyze trace.pcap\n  linerate analyze trace.pcapng --link-rate 100M --json > a.json\n  linerate analyze trace.pcap --graph graphs/       # time-sequence SVGs\n  tcpdump -i eth0 -s 128 -w - port 5301 | linerate analyze -"
    )]
    Analyze(super::analyze::AnalyzeArgs),
    /// Print the JSON Schema of the result record (--json) or of the event stream.
    #[command(hide = true)]
    Schema {
        /// "run", "event", "trials", "rfc2544" or "analyze".
        #[arg(default_value = "run")]
        which: String,
    },
}

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
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
    /// No per-test log lines.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `tcp` and `udp`.
#[derive(Debug, ClapArgs)]
pub struct StreamArgs {
    /// Server host name or address.
    pub host: String,
    /// Server port.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// Server sends, client receives (netperf TCP_MAERTS, iperf3 -R).
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once, each with -P streams.
    #[arg(long)]
    pub bidir: bool,
    /// Parallel streams per direction.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// Test length (seconds, or with a unit: 500ms, 2m).
    #[arg(short = 't', long, value_parser = units::parse_duration, conflicts_with = "bytes")]
    pub time: Option<std::time::Duration>,
    /// Send this many bytes per direction instead of running for a time (ttcp's buflen x nbuf).
    #[arg(short = 'n', long, value_parser = units::parse_size)]
    pub bytes: Option<u64>,
    /// Write size (TCP, default 128K) or datagram payload (UDP, default 1400).
    #[arg(short = 'l', long, value_parser = units::parse_size32)]
    pub len: Option<u32>,
    /// Socket buffers (send and receive) on both ends, like iperf3 -w.
    #[arg(short = 'w', long, value_parser = units::parse_size32)]
    pub window: Option<u32>,
    /// Socket buffers (send and receive) on this end, like netperf -s.
    #[arg(short = 's', long, value_parser = units::parse_size32)]
    pub local_buffer: Option<u32>,
    /// Socket buffers (send and receive) on the server, like netperf -S.
    #[arg(short = 'S', long, value_parser = units::parse_size32)]
    pub remote_buffer: Option<u32>,
    /// SO_SNDBUF on this end (overrides -s/-w).
    #[arg(long, value_parser = units::parse_size32)]
    pub local_sndbuf: Option<u32>,
    /// SO_RCVBUF on this end (overrides -s/-w).
    #[arg(long, value_parser = units::parse_size32)]
    pub local_rcvbuf: Option<u32>,
    /// SO_SNDBUF on the server (overrides -S/-w).
    #[arg(long, value_parser = units::parse_size32)]
    pub remote_sndbuf: Option<u32>,
    /// SO_RCVBUF on the server (overrides -S/-w).
    #[arg(long, value_parser = units::parse_size32)]
    pub remote_rcvbuf: Option<u32>,
    /// TCP_NODELAY on data sockets.
    #[arg(short = 'N', long)]
    pub nodelay: bool,
    /// TCP maximum segment size.
    #[arg(short = 'M', long)]
    pub mss: Option<u32>,
    /// TCP congestion control (e.g. cubic, bbr, reno).
    #[arg(short = 'C', long)]
    pub congestion: Option<String>,
    /// IP TOS byte (e.g. 0x10); see also --dscp.
    #[arg(long, value_parser = parse_tos, conflicts_with = "dscp")]
    pub tos: Option<u8>,
    /// DSCP code point 0-63 (sets TOS to DSCP << 2).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..64))]
    pub dscp: Option<u8>,
    /// Pace each direction to this rate, all streams together (e.g. 100M, 1G).
    #[arg(short = 'b', long, value_parser = units::parse_rate)]
    pub rate: Option<u64>,
    /// Interval between reports.
    #[arg(short = 'i', long, default_value = "1", value_parser = units::parse_duration)]
    pub interval: std::time::Duration,
    /// Warm-up left out of the totals.
    #[arg(short = 'O', long, value_parser = units::parse_duration)]
    pub omit: Option<std::time::Duration>,
    /// Pin data threads: LOCAL[,REMOTE] CPU numbers (iperf3 -A, netperf -T).
    #[arg(short = 'A', long, value_parser = units::parse_affinity)]
    pub affinity: Option<(Option<u32>, Option<u32>)>,
    /// Don't use UDP GSO/GRO (segmentation offload) even where the kernel has them.
    #[arg(long)]
    pub no_offload: bool,
    /// UDP: write complete Ethernet frames with an AF_PACKET ring (needs CAP_NET_RAW; both
    /// ends, where they can), so that every datagram is one packet on the wire; without the
    /// capability the sender falls back to one datagram per sendmmsg message and says so.
    #[arg(long)]
    pub raw_frames: bool,
    /// Time to wait for the server to answer the connection.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: std::time::Duration,
    /// The path's link or shaped rate (e.g. 100M) for the diagnosis's "link bound". Needed
    /// only when the bottleneck is beyond both ends' interfaces (a shaping router, a slower
    /// hop): linerate reads physical interface speeds and a tbf/htb on the sender itself.
    #[arg(long, value_parser = units::parse_rate)]
    pub link_rate: Option<u64>,
    #[command(flatten)]
    pub auth: AuthArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub repeat: super::rr_args::RepeatArgs,
    #[command(flatten)]
    pub capture: super::analyze::CaptureArgs,
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
}

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

fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u8::from_str_radix(h, 16)
    } else {
        t.parse()
    };
    v.map_err(|_| format!("invalid TOS '{s}': use 0-255 or hex such as 0x10"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Args::command().debug_assert();
    }

    #[test]
    fn tos_parses_hex_and_decimal() {
        assert_eq!(parse_tos("0x10"), Ok(16));
        assert_eq!(parse_tos("184"), Ok(184));
        assert!(parse_tos("300").is_err());
    }
}

/// Client authentication to a server started with `serve --auth-users`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct AuthArgs {
    /// User name for a server that requires authentication (serve --auth-users).
    #[arg(long, env = "LINERATE_AUTH_USER", value_name = "NAME")]
    pub auth_user: Option<String>,
    /// File whose first line is the user's secret; without it the secret is read from the
    /// environment variable LINERATE_AUTH_SECRET (never from the command line, where other
    /// users of the host could see it).
    #[arg(long, value_name = "FILE")]
    pub auth_secret_file: Option<std::path::PathBuf>,
}

impl AuthArgs {
    /// The credentials given, if any; bad ones are a usage error.
    pub fn credentials(
        &self,
    ) -> Result<Option<crate::session::auth::Credentials>, super::plan::UsageError> {
        crate::session::auth::Credentials::from_args(
            self.auth_user.as_deref(),
            self.auth_secret_file.as_deref(),
            std::env::var("LINERATE_AUTH_SECRET").ok(),
        )
        .map_err(super::plan::UsageError)
    }
}
