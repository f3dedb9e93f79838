//! What a server accepts: a request checked against its limits, with a message that says
//! which flag to change. Pure; the server machine calls [`check_request`] on every
//! `test_request`, and `cli` uses the same constants to refuse bad flags before asking.

use linerate_wire::control::{ErrorCode, RrSpec, ServerLimits, TestSpec, Transport};

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// Most requests in flight per stream a server accepts (`--burst`).
pub const MAX_BURST: u32 = 1024;
/// Longest UDP time-out a server accepts, ms.
pub const MAX_TIMEOUT_MS: u64 = 60_000;

/// A refusal: the code for the `error` message and its text.
pub type Refusal = (ErrorCode, String);

/// Checks a request against the server's limits and its CPUs (`server_cpu` must exist).
pub fn check_request(
    spec: &TestSpec,
    limits: &ServerLimits,
    cpu_count: u32,
) -> Result<(), Refusal> {
    validate_spec(spec, limits)?;
    match spec.server_cpu {
        Some(cpu) if cpu >= cpu_count => Err((
            ErrorCode::BadRequest,
            format!(
                "server CPU {cpu} does not exist: the server has CPUs 0-{} (-A)",
                cpu_count.saturating_sub(1)
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks a request against the server's limits. The message says which flag to change.
pub fn validate_spec(spec: &TestSpec, limits: &ServerLimits) -> Result<(), Refusal> {
    check_streams_and_length(spec, limits)?;
    check_sizes_and_rate(spec, limits)?;
    if spec.interval_ms < 10 {
        return bad("interval must be at least 10 ms (-i)".into());
    }
    if let Some(rr) = &spec.rr {
        validate_rr(rr, limits)?;
    }
    if let Some(d) = spec.duration_ms {
        if spec.omit_ms >= d {
            return bad("the warm-up (--omit) must be shorter than the test (-t)".into());
        }
    }
    Ok(())
}

fn bad(m: String) -> Result<(), Refusal> {
    Err((ErrorCode::BadRequest, m))
}

fn over(m: String) -> Result<(), Refusal> {
    Err((ErrorCode::LimitExceeded, m))
}

fn check_streams_and_length(spec: &TestSpec, limits: &ServerLimits) -> Result<(), Refusal> {
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
            bad("exactly one of a duration (-t) and a byte count (-n) must be given".into())
        }
        (Some(d), None) if d > limits.max_duration_ms => over(format!(
            "duration {} s exceeds this server's limit of {} s (-t, or linerate serve --max-duration)",
            d / 1000,
            limits.max_duration_ms / 1000
        )),
        (Some(0), None) => bad("duration must be above zero (-t)".into()),
        (None, Some(0)) => bad("byte count must be above zero (-n)".into()),
        _ => Ok(()),
    }
}

fn check_sizes_and_rate(spec: &TestSpec, limits: &ServerLimits) -> Result<(), Refusal> {
    if spec.write_size == 0 || spec.write_size > limits.max_write_size {
        return over(format!(
            "write size {} is outside 1..={} bytes (-l, or linerate serve --max-write-size)",
            spec.write_size, limits.max_write_size
        ));
    }
    let probe = linerate_wire::probe::LEN as u32;
    if spec.transport == Transport::Udp && !(probe..=MAX_UDP_PAYLOAD).contains(&spec.write_size) {
        return bad(format!(
            "UDP datagram size {} is outside {probe}..={MAX_UDP_PAYLOAD} bytes (-l)",
            spec.write_size,
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
        match v {
            Some(v) if v > limits.max_socket_buffer => {
                return over(format!(
                    "socket buffer {v} bytes exceeds this server's limit of {} ({name})",
                    limits.max_socket_buffer
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks an RR request against the server's limits; the message names the flag.
pub fn validate_rr(rr: &RrSpec, limits: &ServerLimits) -> Result<(), Refusal> {
    let max = limits.max_write_size;
    let probe = linerate_wire::probe::LEN as u32;
    for (what, v) in [
        ("request", rr.request_bytes),
        ("response", rr.response_bytes),
    ] {
        if v == 0 || v > max {
            return over(format!(
                "{what} size {v} is outside 1..={max} bytes (-r, or linerate serve --max-write-size)"
            ));
        }
        if rr.udp && !(probe..=MAX_UDP_PAYLOAD).contains(&v) {
            return bad(format!(
                "UDP {what} size {v} is outside {probe}..={MAX_UDP_PAYLOAD} bytes (-r)"
            ));
        }
    }
    if rr.burst == 0 || rr.burst > MAX_BURST {
        return bad(format!(
            "burst {} is outside 1..={MAX_BURST} (--burst)",
            rr.burst
        ));
    }
    if rr.connect_per_transaction && (rr.burst != 1 || rr.udp) {
        return bad("TCP_CRR (--connect) runs one transaction at a time over TCP: drop --burst and --udp, use -P for parallel connections".into());
    }
    if rr.udp && (rr.timeout_ms == 0 || rr.timeout_ms > MAX_TIMEOUT_MS) {
        return bad(format!(
            "UDP time-out {} ms is outside 1..={MAX_TIMEOUT_MS} ms (--timeout)",
            rr.timeout_ms
        ));
    }
    if rr.target_tps == Some(0) {
        return bad("a target rate of 0 transactions/s is not a rate: leave --rate out".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::default_spec;
    use linerate_wire::control::Direction;

    fn spec() -> TestSpec {
        default_spec(Transport::Tcp, Direction::Send, 131072, 1000)
    }

    pub(crate) fn limits() -> ServerLimits {
        ServerLimits {
            max_duration_ms: 10_000,
            max_streams: 8,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 1 << 26,
        }
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

    #[test]
    fn rates_buffers_and_intervals_name_their_flags() {
        let mut l = limits();
        l.max_rate_bps = Some(1000);
        let mut s = spec();
        s.rate_bps = Some(2000);
        assert!(validate_spec(&s, &l).unwrap_err().1.contains("--max-rate"));
        let mut s = spec();
        s.transport = Transport::Udp;
        s.write_size = 1200;
        assert!(validate_spec(&s, &l).unwrap_err().1.contains("give -b"));
        let mut s = spec();
        s.server_rcvbuf = Some(1 << 27);
        assert!(validate_spec(&s, &limits())
            .unwrap_err()
            .1
            .contains("--remote-rcvbuf"));
        let mut s = spec();
        s.interval_ms = 5;
        assert!(validate_spec(&s, &limits()).unwrap_err().1.contains("-i"));
    }

    #[test]
    fn a_server_cpu_must_exist() {
        let mut s = spec();
        s.server_cpu = Some(2);
        assert!(check_request(&s, &limits(), 3).is_ok());
        let (code, msg) = check_request(&s, &limits(), 2).unwrap_err();
        assert_eq!(code, ErrorCode::BadRequest);
        assert!(msg.contains("CPUs 0-1 (-A)"), "{msg}");
    }

    fn rr() -> RrSpec {
        RrSpec {
            request_bytes: 1,
            response_bytes: 1,
            burst: 1,
            connect_per_transaction: false,
            udp: false,
            timeout_ms: 0,
            target_tps: None,
        }
    }

    #[test]
    fn server_limits_on_rr_requests_name_the_flag() {
        assert!(validate_rr(&rr(), &limits()).is_ok());
        let check = |f: &dyn Fn(&mut RrSpec), flag: &str| {
            let mut s = rr();
            f(&mut s);
            let (_, msg) = validate_rr(&s, &limits()).expect_err("refused");
            assert!(msg.contains(flag), "{msg}");
        };
        check(&|s| s.response_bytes = 2 << 20, "--max-write-size");
        check(&|s| s.burst = MAX_BURST + 1, "--burst");
        check(&|s| s.burst = 0, "--burst");
        check(
            &|s| {
                s.connect_per_transaction = true;
                s.burst = 2;
            },
            "-P",
        );
        check(
            &|s| {
                s.udp = true;
                s.request_bytes = 8;
            },
            "-r",
        );
        check(
            &|s| {
                s.udp = true;
                s.request_bytes = 16;
                s.response_bytes = 16;
            },
            "--timeout",
        );
        check(&|s| s.target_tps = Some(0), "--rate");
    }
}
