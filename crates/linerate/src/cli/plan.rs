//! Validation: raw [`super::args`] become plans with every default applied. All cross-flag
//! checks live here, so the engines and sessions never see raw arguments.

use std::time::Duration;

use linerate_wire::control::{Direction, TestSpec, Transport};

use super::args::{OutputArgs, StreamArgs};
use crate::export::Format;
use crate::model::plan::{Debug, SockOpts, StreamPlan};

/// A usage error: one line that says how to fix it (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Default TCP write size (iperf3's; netperf's -m 131072 in the benchmarks).
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// Default UDP payload: fits a 1500-byte MTU with IPv4 and IPv6 headers.
pub const DEFAULT_UDP_LEN: u32 = 1400;
/// Default test length.
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Builds the client's plan.
pub fn stream_plan(a: &StreamArgs, transport: Transport) -> Result<StreamPlan, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.parallel == 0 {
        return err("-P must be at least 1");
    }
    let direction = if a.bidir {
        Direction::Both
    } else if a.reverse {
        Direction::Receive
    } else {
        Direction::Send
    };
    let len = a.len.unwrap_or(match transport {
        Transport::Tcp => DEFAULT_TCP_LEN,
        Transport::Udp => DEFAULT_UDP_LEN,
    });
    if len == 0 {
        return err("-l must be at least 1 byte");
    }
    if transport == Transport::Udp {
        let min = linerate_wire::probe::LEN as u32;
        if len < min || len > crate::session::MAX_UDP_PAYLOAD {
            return Err(UsageError(format!(
                "-l {len}: a UDP datagram payload must be {min}..={} bytes (it carries a {min}-byte sequence and timestamp header)",
                crate::session::MAX_UDP_PAYLOAD
            )));
        }
    }
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
    if a.interval < Duration::from_millis(10) {
        return err("-i must be at least 10ms");
    }
    if a.rate == Some(0) {
        return err("-b 0 is not a rate: leave -b out to send as fast as possible");
    }
    if transport == Transport::Tcp && (a.no_offload || a.raw_frames) {
        return err("--no-offload and --raw-frames apply to UDP tests only");
    }
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
        capture_snaplen: None,
    };
    Ok(StreamPlan {
        host: a.host.clone(),
        port: a.port,
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
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Args, Command};
    use clap::Parser;

    fn plan(argv: &[&str]) -> Result<StreamPlan, UsageError> {
        let args = Args::try_parse_from(argv).unwrap();
        match args.command {
            Command::Tcp(a) => stream_plan(&a, Transport::Tcp),
            Command::Udp(a) => stream_plan(&a, Transport::Udp),
            _ => unreachable!(),
        }
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
    fn dscp_sets_tos() {
        let p = plan(&["linerate", "tcp", "h", "--dscp", "46"]).unwrap();
        assert_eq!(p.spec.tos, Some(184));
    }
}
