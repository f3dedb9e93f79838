//! Client and server sessions of the control protocol, and what both ends share.
//!
//! See `docs/protocol.md` for the message sequence. Each session runs on its own thread and
//! waits on one channel of [`conn::Incoming`] control events and engine intervals, always with
//! a deadline, so that no peer can make it wait forever.

pub mod auth;
pub mod client;
pub mod conn;
pub mod server;
pub mod sockets;

use linerate_wire::control::{Direction, ErrorCode, ServerLimits, TestSpec, Transport};

/// Documented default port for control and data, TCP and UDP.
pub const DEFAULT_PORT: u16 = 5301;

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: u32 = 65_507;

/// The streams of a test: `(index, client_sends)`. With `Both`, indices `0..n` carry
/// client → server and `n..2n` server → client.
pub fn stream_layout(direction: Direction, n: u16) -> Vec<(u16, bool)> {
    match direction {
        Direction::Send => (0..n).map(|i| (i, true)).collect(),
        Direction::Receive => (0..n).map(|i| (i, false)).collect(),
        Direction::Both => (0..n)
            .map(|i| (i, true))
            .chain((0..n).map(|i| (n + i, false)))
            .collect(),
    }
}

/// A test spec with linerate's defaults for everything but what is given: one stream, a
/// timed test, 1 s intervals, no warm-up, no socket options, UDP offloads allowed.
pub fn default_spec(
    transport: Transport,
    direction: Direction,
    write_size: u32,
    duration_ms: u64,
) -> TestSpec {
    TestSpec {
        transport,
        direction,
        streams: 1,
        duration_ms: Some(duration_ms),
        bytes: None,
        write_size,
        server_sndbuf: None,
        server_rcvbuf: None,
        nodelay: false,
        mss: None,
        congestion: None,
        tos: None,
        rate_bps: None,
        interval_ms: 1000,
        omit_ms: 0,
        server_cpu: None,
        udp_offload: true,
        rr: None,
        one_way_delay: None,
        smooth_pacing: false,
        raw_frames: false,
        capture_snaplen: None,
    }
}

/// Splits a per-direction total over `n` streams; the first streams take the remainder.
pub fn split(total: u64, n: u16, i: u16) -> u64 {
    let n = u64::from(n.max(1));
    total / n + u64::from(u64::from(i) < total % n)
}

/// Checks a request against the server's limits. The message says which flag to change.
pub fn validate_spec(spec: &TestSpec, limits: &ServerLimits) -> Result<(), (ErrorCode, String)> {
    let bad = |m: String| Err((ErrorCode::BadRequest, m));
    let over = |m: String| Err((ErrorCode::LimitExceeded, m));
    if spec.streams == 0 {
        return bad("at least one stream is needed (-P 1 or more)".into());
    }
    if spec.streams > limits.max_streams {
        return over(format!(
            "{} streams requested; this server allows at most {} (-P, or linerate serve --max-streams)",
            spec.streams, limits.max_streams
        ));
    }
    match (spec.duration_ms, spec.bytes) {
        (Some(_), Some(_)) | (None, None) => {
            return bad("exactly one of a duration (-t) and a byte count (-n) must be given".into())
        }
        (Some(d), None) if d > limits.max_duration_ms => {
            return over(format!(
                "duration {} s exceeds this server's limit of {} s (-t, or linerate serve --max-duration)",
                d / 1000,
                limits.max_duration_ms / 1000
            ))
        }
        (Some(0), None) => return bad("duration must be above zero (-t)".into()),
        (None, Some(0)) => return bad("byte count must be above zero (-n)".into()),
        _ => {}
    }
    if spec.write_size == 0 || spec.write_size > limits.max_write_size {
        return over(format!(
            "write size {} is outside 1..={} bytes (-l, or linerate serve --max-write-size)",
            spec.write_size, limits.max_write_size
        ));
    }
    if spec.transport == Transport::Udp
        && !(linerate_wire::probe::LEN as u32..=MAX_UDP_PAYLOAD).contains(&spec.write_size)
    {
        return bad(format!(
            "UDP datagram size {} is outside {}..={} bytes (-l)",
            spec.write_size,
            linerate_wire::probe::LEN,
            MAX_UDP_PAYLOAD
        ));
    }
    if let (Some(r), Some(max)) = (spec.rate_bps, limits.max_rate_bps) {
        if r > max {
            return over(format!(
                "rate {r} bit/s exceeds this server's limit of {max} bit/s (-b, or linerate serve --max-rate)"
            ));
        }
    }
    if spec.transport == Transport::Udp && spec.rate_bps.is_none() {
        if let Some(max) = limits.max_rate_bps {
            return over(format!(
                "this server limits rate to {max} bit/s: give -b at or below it"
            ));
        }
    }
    for (name, v) in [
        ("-S/--remote-sndbuf", spec.server_sndbuf),
        ("-S/--remote-rcvbuf", spec.server_rcvbuf),
    ] {
        if let Some(v) = v {
            if v > limits.max_socket_buffer {
                return over(format!(
                    "socket buffer {v} bytes exceeds this server's limit of {} ({name})",
                    limits.max_socket_buffer
                ));
            }
        }
    }
    if spec.interval_ms < 10 {
        return bad("interval must be at least 10 ms (-i)".into());
    }
    if let Some(rr) = &spec.rr {
        crate::rr::session::validate(rr, limits)?;
    }
    if let Some(d) = spec.duration_ms {
        if spec.omit_ms >= d {
            return bad("the warm-up (--omit) must be shorter than the test (-t)".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> TestSpec {
        default_spec(Transport::Tcp, Direction::Send, 131072, 1000)
    }

    fn limits() -> ServerLimits {
        ServerLimits {
            max_duration_ms: 10_000,
            max_streams: 8,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 1 << 26,
        }
    }

    #[test]
    fn layout_both_uses_two_index_ranges() {
        assert_eq!(
            stream_layout(Direction::Both, 2),
            vec![(0, true), (1, true), (2, false), (3, false)]
        );
        assert_eq!(stream_layout(Direction::Receive, 1), vec![(0, false)]);
    }

    #[test]
    fn split_distributes_remainder() {
        let parts: Vec<u64> = (0..3).map(|i| split(10, 3, i)).collect();
        assert_eq!(parts, vec![4, 3, 3]);
        assert_eq!(parts.iter().sum::<u64>(), 10);
    }

    #[test]
    fn limits_are_enforced_with_flag_names() {
        assert!(validate_spec(&spec(), &limits()).is_ok());
        let mut s = spec();
        s.streams = 9;
        let (code, msg) = validate_spec(&s, &limits()).unwrap_err();
        assert_eq!(code, ErrorCode::LimitExceeded);
        assert!(msg.contains("--max-streams"), "{msg}");
        let mut s = spec();
        s.duration_ms = Some(20_000);
        assert!(validate_spec(&s, &limits()).unwrap_err().1.contains("-t"));
        let mut s = spec();
        s.bytes = Some(5);
        assert_eq!(
            validate_spec(&s, &limits()).unwrap_err().0,
            ErrorCode::BadRequest
        );
        let mut s = spec();
        s.transport = Transport::Udp;
        s.write_size = 8;
        assert!(validate_spec(&s, &limits()).is_err());
        let mut s = spec();
        s.omit_ms = 1000;
        assert!(validate_spec(&s, &limits()).is_err());
    }
}
