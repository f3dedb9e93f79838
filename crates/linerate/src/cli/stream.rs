//! `linerate tcp` and `linerate udp`: their arguments, and their validation into a plan with
//! every default applied. All cross-flag checks live here, so the engines and sessions
//! never see raw arguments.

use std::time::Duration;

use linerate_wire::control::{Direction, RecvMode, SendMode, TestSpec, Transport};

use clap::Args as ClapArgs;

use super::common::AuthArgs;
use super::output::OutputArgs;
use super::{units, UsageError};
use crate::model::criteria::Criteria;
use crate::model::plan::{Debug, SockOpts, StreamPlan};

/// Arguments of `tcp` and `udp`.
#[derive(Debug, ClapArgs)]
pub struct StreamArgs {
    /// Server host name or address.
    pub host: String,
    /// Server port (default 5301; with --iperf3, iperf3's 5201).
    #[arg(short, long)]
    pub port: Option<u16>,
    /// The server is an iperf3 server (`iperf3 -s`, 3.x): speak iperf3's control protocol.
    /// The record holds what iperf3 reports of its end (bytes, UDP loss and jitter, its CPU);
    /// what it cannot give is absent with a warning. The default port becomes 5201.
    #[arg(long)]
    pub iperf3: bool,
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
    /// With -n: end the test with an error when the bytes have not gone through in this
    /// time (default: the byte count at 1 Mbit/s plus 10 s, at most the server's limit).
    #[arg(long, value_parser = units::parse_duration, requires = "bytes")]
    pub max_time: Option<std::time::Duration>,
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
    /// With --raw-frames, the kernel path the frames go through, at both ends: auto (an
    /// AF_XDP socket, zero-copy where the driver takes it, else copy mode; the AF_PACKET
    /// ring, with one warning saying why, where AF_XDP cannot be used), xdp (AF_XDP only),
    /// or afpacket (the AF_PACKET ring only). The record names the path used (`raw_tx`).
    #[arg(long, default_value = "auto", value_parser = parse_raw_tx, requires = "raw_frames")]
    pub raw_tx: linerate_wire::control::RawTxChoice,
    /// TCP: send with MSG_ZEROCOPY (SO_ZEROCOPY), reading the kernel's completions, on
    /// every sending end (the server's too with -R/--bidir). The record counts the sends the
    /// kernel really did not copy: to a socket on the same host it always copies.
    #[arg(long)]
    pub zerocopy: bool,
    /// TCP: send with sendfile(2) from a memfd filled once (netperf TCP_SENDFILE, iperf3
    /// -Z), on every sending end.
    #[arg(long)]
    pub sendfile: bool,
    /// TCP: receive with recv(MSG_TRUNC), which discards the data in the kernel without
    /// copying it to user space, on every receiving end (the server's too without -R).
    #[arg(long)]
    pub no_rx_copy: bool,
    /// Time to wait for the server to answer the connection.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: std::time::Duration,
    /// The path's link or shaped rate (e.g. 100M) for the diagnosis's "link bound". Needed
    /// only when the bottleneck is beyond both ends' interfaces (a shaping router, a slower
    /// hop): linerate reads physical interface speeds and a tbf/htb on the sender itself.
    #[arg(long, value_parser = units::parse_rate)]
    pub link_rate: Option<u64>,
    /// Latency under load: TCP_RR and UDP_RR probes (10 a second each) alone for a 2 s idle
    /// baseline, then beside the load; reports idle and loaded RTT percentiles, the increase,
    /// the loaded flows' smoothed RTT and the responsiveness in round trips per minute (RPM).
    /// The probes are tests of the same server (each takes one of its --max-tests slots).
    #[arg(long)]
    pub latency: bool,
    /// Exit with code 1 when more than PERCENT of the datagrams of a direction were lost
    /// (UDP; the results are printed all the same). With --repeat, every run must pass.
    #[arg(long, value_name = "PERCENT", value_parser = units::parse_percent)]
    pub max_loss: Option<f64>,
    #[command(flatten)]
    pub mcast: super::common::McastArgs,
    #[command(flatten)]
    pub auth: AuthArgs,
    #[command(flatten)]
    pub dut: super::common::DutArgs,
    #[command(flatten)]
    pub profile: super::common::ProfileArgs,
    #[command(flatten)]
    pub store: super::common::StoreArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub repeat: super::repeat::RepeatArgs,
    #[command(flatten)]
    pub capture: super::analyze::CaptureArgs,
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
}

/// Arguments of `quic`: those of a stream test, `-P` counting connections, and the streams
/// on each.
#[derive(Debug, ClapArgs)]
pub struct QuicArgs {
    #[command(flatten)]
    pub stream: StreamArgs,
    /// QUIC streams on each connection (-P connections): -P x --streams per direction.
    #[arg(long, default_value_t = 1)]
    pub streams: u16,
}

/// The flags of `tcp` and `udp` that a QUIC test cannot honour, one line each.
pub fn quic_checks(q: &QuicArgs) -> Result<(), UsageError> {
    let a = &q.stream;
    let refused = [
        (a.iperf3, "--iperf3 (iperf3 has no QUIC tests)"),
        (a.nodelay || a.mss.is_some() || a.congestion.is_some(), "-N, -M and -C (TCP options)"),
        (a.zerocopy || a.sendfile || a.no_rx_copy, "--zerocopy, --sendfile and --no-rx-copy (TCP's copy modes)"),
        (a.raw_frames || a.no_offload, "--raw-frames and --no-offload (UDP stream options; quinn uses GSO where the kernel has it)"),
        (a.window.is_some() || a.local_buffer.is_some() || a.remote_buffer.is_some()
            || a.local_sndbuf.is_some() || a.local_rcvbuf.is_some()
            || a.remote_sndbuf.is_some() || a.remote_rcvbuf.is_some(), "socket buffers (-w, -s, -S: QUIC's windows are its own)"),
        (a.tos.is_some() || a.dscp.is_some(), "--tos and --dscp"),
        (a.latency, "--latency (its probes are TCP and UDP tests)"),
        (a.capture.capture.is_some(), "--capture (it filters on the server's one port)"),
    ];
    if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
        return Err(UsageError(format!(
            "linerate quic: {what} do not apply to QUIC tests; leave them out"
        )));
    }
    Ok(())
}

/// Spreads a QUIC test's streams: `-P` connections of `streams` each, so `-P x streams`
/// streams per direction.
pub fn quic_layout(plan: &mut StreamPlan, streams: u16) -> Result<(), UsageError> {
    let connections = plan.spec.streams;
    let max = crate::session::server::policy::limits::MAX_STREAMS;
    let total = u32::from(connections) * u32::from(streams);
    if streams == 0 {
        return Err(UsageError("--streams must be at least 1".into()));
    }
    if total > u32::from(max) {
        return Err(UsageError(format!(
            "-P {connections} --streams {streams}: {total} streams per direction, at most {max}"
        )));
    }
    plan.spec.streams = u16::try_from(total).unwrap_or(max);
    plan.spec.quic_connections = Some(connections);
    Ok(())
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

/// Default TCP write size (iperf3's; netperf's -m 131072 in the benchmarks).
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// Default UDP payload: fits a 1500-byte MTU with IPv4 and IPv6 headers.
pub const DEFAULT_UDP_LEN: u32 = 1400;
/// Default test length.
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);

/// `--raw-tx`.
pub fn parse_raw_tx(s: &str) -> Result<linerate_wire::control::RawTxChoice, String> {
    use linerate_wire::control::RawTxChoice;
    match s {
        "auto" => Ok(RawTxChoice::Auto),
        "xdp" => Ok(RawTxChoice::Xdp),
        "afpacket" => Ok(RawTxChoice::Afpacket),
        _ => Err(format!(
            "unknown raw-frame path '{s}': use auto (AF_XDP where possible, else AF_PACKET), xdp, or afpacket"
        )),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The pass/fail criteria of a stream test (`--max-loss`, UDP only).
pub fn criteria(a: &StreamArgs, transport: Transport) -> Result<Criteria, UsageError> {
    if a.max_loss.is_some() && transport == Transport::Tcp {
        return Err(UsageError(
            "--max-loss applies to UDP: use `linerate udp` (TCP retransmits what it loses)".into(),
        ));
    }
    Ok(Criteria {
        max_loss_percent: a.max_loss,
    })
}

/// The checks across flags of `tcp` and `udp` that [`stream_plan`] does not make, before
/// anything runs: what holds one test only (`--capture`, `--latency` against
/// `--repeat`/`--confidence`), what `--dut` cannot do yet, and [`iperf3_checks`].
pub fn cross_flag_checks(a: &StreamArgs) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.repeat.is_set() && a.capture.capture.is_some() {
        return err("--capture records one test: leave out --repeat/--confidence");
    }
    if a.latency && a.repeat.is_set() {
        return err("--latency measures one test: leave out --repeat/--confidence");
    }
    if a.latency && a.dut.dut.is_some() {
        return err("--dut and --latency are not supported together yet: run them as two tests");
    }
    iperf3_checks(a)
}

/// With `--iperf3`: the options an iperf3 server cannot honour are refused, one line each
/// saying what to do instead.
pub fn iperf3_checks(a: &StreamArgs) -> Result<(), UsageError> {
    if !a.iperf3 {
        return Ok(());
    }
    let no = |what: &str, why: &str| Err(UsageError(format!("--iperf3: {what} {why}")));
    if a.remote_buffer.is_some() || a.remote_sndbuf.is_some() || a.remote_rcvbuf.is_some() {
        return no(
            "-S/--remote-sndbuf/--remote-rcvbuf",
            "are linerate server options: use -w (iperf3's window, both ends)",
        );
    }
    if a.affinity.is_some_and(|(_, r)| r.is_some()) {
        return no(
            "-A LOCAL,REMOTE",
            "cannot pin an iperf3 server: give -A LOCAL",
        );
    }
    if a.tos.is_some() || a.dscp.is_some() {
        return no("--tos/--dscp", "are not sent to an iperf3 server");
    }
    if a.raw_frames {
        return no("--raw-frames", "needs a linerate server");
    }
    if a.latency || a.dut.dut.is_some() || a.capture.capture.is_some() || a.profile.profile {
        return no(
            "--latency, --dut, --capture and --profile",
            "need a linerate server",
        );
    }
    if a.auth.credentials()?.is_some() {
        return no("--auth-user", "is linerate's authentication, not iperf3's");
    }
    if a.zerocopy || a.sendfile || a.no_rx_copy {
        return no(
            "--zerocopy, --sendfile and --no-rx-copy",
            "are not offered with an iperf3 server (iperf3 -Z is its own client's option)",
        );
    }
    let whole = |d: Option<Duration>| d.is_none_or(|d| d.subsec_nanos() == 0);
    if !whole(a.time) || !whole(a.omit) {
        return no(
            "-t and -O",
            "are whole seconds for iperf3 (e.g. -t 10 -O 2)",
        );
    }
    if a.parallel > linerate_wire::iperf3::MAX_PARALLEL as u16 {
        return no("-P", "is at most 128 for iperf3");
    }
    Ok(())
}

/// Builds the client's plan.
pub fn stream_plan(a: &StreamArgs, transport: Transport) -> Result<StreamPlan, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    check_streams(a)?;
    let direction = if a.bidir {
        Direction::Both
    } else if a.reverse {
        Direction::Receive
    } else {
        Direction::Send
    };
    let len = write_len(a, transport)?;
    let (duration_ms, bytes, omit_ms) = test_length(a)?;
    if a.interval < Duration::from_millis(10) {
        return err("-i must be at least 10ms");
    }
    if a.rate == Some(0) {
        return err("-b 0 is not a rate: leave -b out to send as fast as possible");
    }
    if transport == Transport::Tcp && (a.no_offload || a.raw_frames) {
        return err("--no-offload and --raw-frames apply to UDP tests only");
    }
    let (send_mode, recv_mode) = io_modes(a, transport, direction)?;
    if transport == Transport::Udp && (a.nodelay || a.mss.is_some() || a.congestion.is_some()) {
        return err("-N, -M and -C are TCP options: use `linerate tcp`");
    }
    let (client_cpu, server_cpu) = a.affinity.unwrap_or((None, None));
    let n_cpus = crate::sys::host::cpu_count();
    if let Some(c) = client_cpu {
        if c >= n_cpus {
            return Err(UsageError(format!(
                "-A {c}: this host has CPUs 0-{}",
                n_cpus.saturating_sub(1)
            )));
        }
    }
    let local_both = a.local_buffer.or(a.window);
    let remote_both = a.remote_buffer.or(a.window);
    let tos = a.tos.or(a.dscp.map(|d| d << 2));
    let spec = TestSpec {
        transport,
        direction,
        streams: a.parallel,
        duration_ms,
        bytes,
        write_size: len,
        server_sndbuf: a.remote_sndbuf.or(remote_both),
        server_rcvbuf: a.remote_rcvbuf.or(remote_both),
        nodelay: a.nodelay,
        mss: a.mss,
        congestion: a.congestion.clone(),
        tos,
        rate_bps: a.rate,
        interval_ms: ms(a.interval),
        omit_ms,
        server_cpu,
        udp_offload: !a.no_offload && !a.raw_frames,
        rr: None,
        one_way_delay: None,
        smooth_pacing: false,
        raw_frames: a.raw_frames,
        raw_tx: a.raw_tx,
        capture_snaplen: None,
        profile: a.profile.spec()?,
        send_mode,
        recv_mode,
        fleet_order: None,
        quic_connections: None,
    };
    Ok(StreamPlan {
        host: a.host.clone(),
        port: a.port.unwrap_or(if a.iperf3 {
            linerate_wire::iperf3::DEFAULT_PORT
        } else {
            crate::session::DEFAULT_PORT
        }),
        spec,
        local: SockOpts {
            sndbuf: a.local_sndbuf.or(local_both),
            rcvbuf: a.local_rcvbuf.or(local_both),
            nodelay: a.nodelay,
            mss: a.mss,
            congestion: a.congestion.clone(),
            tos,
        },
        client_cpu,
        connect_timeout: a.connect_timeout,
        debug: Debug(a.debug_protocol),
        auth: a.auth.credentials()?,
        max_time: a.max_time,
    })
}

/// -P and --max-time: at least one stream, at most the server's limit; a time above zero.
fn check_streams(a: &StreamArgs) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.parallel == 0 {
        return err("-P must be at least 1");
    }
    if a.parallel > crate::session::server::policy::limits::MAX_STREAMS {
        return Err(UsageError(format!(
            "-P {}: at most {} streams per direction",
            a.parallel,
            crate::session::server::policy::limits::MAX_STREAMS
        )));
    }
    if a.max_time.is_some_and(|t| t.is_zero()) {
        return err("--max-time must be above zero");
    }
    Ok(())
}

/// The write size (-l), the transport's default when not given; a UDP payload must hold
/// the sequence header and fit a datagram.
fn write_len(a: &StreamArgs, transport: Transport) -> Result<u32, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    let len = a.len.unwrap_or(match transport {
        Transport::Tcp | Transport::Quic => DEFAULT_TCP_LEN,
        Transport::Udp => DEFAULT_UDP_LEN,
    });
    if len == 0 {
        return err("-l must be at least 1 byte");
    }
    if transport == Transport::Udp {
        let min = linerate_wire::probe::LEN as u32;
        if len < min || len > crate::session::server::policy::limits::MAX_UDP_PAYLOAD {
            return Err(UsageError(format!(
                "-l {len}: a UDP datagram payload must be {min}..={} bytes (it carries a {min}-byte sequence and timestamp header)",
                crate::session::server::policy::limits::MAX_UDP_PAYLOAD
            )));
        }
    }
    Ok(len)
}

/// How long the test runs: (duration in ms, bytes, omitted ms) from -t, -n and --omit.
fn test_length(a: &StreamArgs) -> Result<(Option<u64>, Option<u64>, u64), UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    let (duration_ms, bytes) = match (a.time, a.bytes) {
        (Some(_), Some(_)) => return err("give either -t (time) or -n (bytes), not both"),
        (None, Some(0)) => return err("-n must be above zero"),
        (None, Some(n)) => (None, Some(n)),
        (Some(t), None) if t.is_zero() => return err("-t must be above zero"),
        (t, None) => (Some(ms(t.unwrap_or(DEFAULT_TIME))), None),
    };
    let omit_ms = a.omit.map_or(0, ms);
    if omit_ms > 0 {
        if bytes.is_some() {
            return err(
                "--omit needs a timed test (-t): a fixed byte count (-n) counts every byte",
            );
        }
        if duration_ms.is_some_and(|d| omit_ms >= d) {
            return err("--omit must be shorter than the test (-t)");
        }
    }
    Ok((duration_ms, bytes, omit_ms))
}

/// How this end sends and receives (--zerocopy, --sendfile, --no-rx-copy), checked
/// against the transport and this kernel.
fn io_modes(
    a: &StreamArgs,
    transport: Transport,
    direction: Direction,
) -> Result<(SendMode, RecvMode), UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.zerocopy && a.sendfile {
        return err("--zerocopy and --sendfile are two ways to send: give one of them");
    }
    if transport == Transport::Udp && a.no_rx_copy {
        return err("--no-rx-copy applies to TCP: a UDP receiver reads each datagram's sequence header to count loss (MSG_TRUNC would still report every length, but not which datagrams arrived)");
    }
    if transport == Transport::Udp && (a.zerocopy || a.sendfile) {
        return err("--zerocopy and --sendfile apply to TCP: use `linerate tcp` (UDP sends with GSO or sendmmsg)");
    }
    let send_mode = if a.zerocopy {
        SendMode::Zerocopy
    } else if a.sendfile {
        SendMode::Sendfile
    } else {
        SendMode::Copy
    };
    let recv_mode = if a.no_rx_copy {
        RecvMode::Trunc
    } else {
        RecvMode::Copy
    };
    // This end's own kernel must have the modes it will use (the server checks its own).
    crate::sys::zerocopy::check_support(
        direction.client_sends() && send_mode == SendMode::Zerocopy,
        direction.client_sends() && send_mode == SendMode::Sendfile,
        direction.client_receives() && recv_mode == RecvMode::Trunc,
    )
    .map_err(UsageError)?;
    Ok((send_mode, recv_mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    #[test]
    fn raw_tx_picks_the_kernel_path_of_raw_frames() {
        use linerate_wire::control::RawTxChoice;
        let p = plan(&["linerate", "udp", "h", "--raw-frames"]).unwrap();
        assert_eq!(p.spec.raw_tx, RawTxChoice::Auto);
        let p = plan(&[
            "linerate",
            "udp",
            "h",
            "--raw-frames",
            "--raw-tx",
            "afpacket",
        ])
        .unwrap();
        assert_eq!(p.spec.raw_tx, RawTxChoice::Afpacket);
        assert_eq!(parse_raw_tx("xdp"), Ok(RawTxChoice::Xdp));
        assert!(parse_raw_tx("dpdk").unwrap_err().contains("use auto"));
        // Without --raw-frames there is no raw frame to route.
        assert!(
            parse_one::<StreamArgs>("udp", &["linerate", "udp", "h", "--raw-tx", "xdp"]).is_err()
        );
    }

    #[test]
    fn tos_parses_hex_and_decimal() {
        assert_eq!(parse_tos("0x10"), Ok(16));
        assert_eq!(parse_tos("184"), Ok(184));
        assert!(parse_tos("300").is_err());
    }

    fn plan(argv: &[&str]) -> Result<StreamPlan, UsageError> {
        match argv.get(1) {
            Some(&"tcp") => stream_plan(&parse_one("tcp", argv).unwrap(), Transport::Tcp),
            Some(&"udp") => stream_plan(&parse_one("udp", argv).unwrap(), Transport::Udp),
            _ => unreachable!(),
        }
    }

    #[test]
    fn cross_flag_checks_refuse_what_one_test_cannot_hold() {
        let check = |argv: &[&str]| cross_flag_checks(&parse_one("tcp", argv).unwrap());
        let refused = |argv: &[&str]| check(argv).unwrap_err().0;
        assert!(refused(&[
            "linerate",
            "tcp",
            "h",
            "--capture",
            "x.pcap",
            "--repeat",
            "3"
        ])
        .starts_with("--capture records one test"));
        assert!(
            refused(&["linerate", "tcp", "h", "--latency", "--repeat", "3"])
                .starts_with("--latency measures one test")
        );
        assert!(
            refused(&["linerate", "tcp", "h", "--latency", "--dut", "d"])
                .starts_with("--dut and --latency are not supported together")
        );
        assert!(check(&["linerate", "tcp", "h", "--latency"]).is_ok());
        assert!(check(&["linerate", "tcp", "h", "--repeat", "3"]).is_ok());
    }

    #[test]
    fn defaults() {
        let p = plan(&["linerate", "tcp", "h"]).unwrap();
        assert_eq!(p.spec.duration_ms, Some(10_000));
        assert_eq!(p.spec.write_size, DEFAULT_TCP_LEN);
        assert_eq!(p.spec.direction, Direction::Send);
        let p = plan(&["linerate", "udp", "h", "-R"]).unwrap();
        assert_eq!(p.spec.write_size, DEFAULT_UDP_LEN);
        assert_eq!(p.spec.direction, Direction::Receive);
    }

    #[test]
    fn ttcp_style_byte_count() {
        let p = plan(&["linerate", "tcp", "h", "-n", "16M", "-l", "8K"]).unwrap();
        assert_eq!(p.spec.bytes, Some(16 << 20));
        assert_eq!(p.spec.duration_ms, None);
        assert_eq!(p.spec.write_size, 8192);
    }

    #[test]
    fn buffers_local_remote_and_override() {
        let p = plan(&[
            "linerate",
            "tcp",
            "h",
            "-s",
            "64K",
            "-S",
            "256K",
            "--remote-rcvbuf",
            "1M",
        ])
        .unwrap();
        assert_eq!(p.local.sndbuf, Some(65536));
        assert_eq!(p.local.rcvbuf, Some(65536));
        assert_eq!(p.spec.server_sndbuf, Some(262144));
        assert_eq!(p.spec.server_rcvbuf, Some(1 << 20));
        let p = plan(&["linerate", "tcp", "h", "-w", "1M"]).unwrap();
        assert_eq!(p.local.rcvbuf, Some(1 << 20));
        assert_eq!(p.spec.server_sndbuf, Some(1 << 20));
    }

    #[test]
    fn cross_flag_errors_say_what_to_do() {
        assert!(plan(&["linerate", "udp", "h", "-l", "8"])
            .unwrap_err()
            .0
            .contains("-l 8"));
        assert!(plan(&["linerate", "tcp", "h", "-n", "1M", "-O", "1"])
            .unwrap_err()
            .0
            .contains("--omit"));
        assert!(plan(&["linerate", "tcp", "h", "-t", "2", "-O", "2"]).is_err());
        assert!(plan(&["linerate", "udp", "h", "-N"])
            .unwrap_err()
            .0
            .contains("TCP options"));
        assert!(plan(&["linerate", "tcp", "h", "-P", "0"]).is_err());
        assert!(plan(&["linerate", "tcp", "h", "-b", "0"]).is_err());
        assert!(plan(&["linerate", "tcp", "h", "-A", "999"]).is_err());
    }

    #[test]
    fn copy_modes_go_into_the_spec_and_nonsense_is_refused() {
        let p = plan(&[
            "linerate",
            "tcp",
            "h",
            "--zerocopy",
            "--no-rx-copy",
            "--bidir",
        ])
        .unwrap();
        assert_eq!(p.spec.send_mode, SendMode::Zerocopy);
        assert_eq!(p.spec.recv_mode, RecvMode::Trunc);
        let p = plan(&["linerate", "tcp", "h", "--sendfile", "-R"]).unwrap();
        assert_eq!(p.spec.send_mode, SendMode::Sendfile);
        assert_eq!(p.spec.recv_mode, RecvMode::Copy);
        let e = plan(&["linerate", "tcp", "h", "--zerocopy", "--sendfile"])
            .unwrap_err()
            .0;
        assert!(e.contains("give one of them"), "{e}");
        for f in ["--zerocopy", "--sendfile", "--no-rx-copy"] {
            let e = plan(&["linerate", "udp", "h", f]).unwrap_err().0;
            assert!(e.contains("TCP") && !e.contains('\n'), "{f}: {e}");
        }
    }

    #[test]
    fn dscp_sets_tos() {
        let p = plan(&["linerate", "tcp", "h", "--dscp", "46"]).unwrap();
        assert_eq!(p.spec.tos, Some(184));
    }
}
