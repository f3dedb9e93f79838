//! What a server accepts: a request checked against its limits, with a message that says
//! which flag to change. Pure; the server machine calls [`check_request`] on every
//! `test_request`, and `cli` uses the same constants to refuse bad flags before asking.
//!
//! Besides one test's limits, what all tests together may use: a server-wide [`Budget`] of
//! streams and buffer bytes that each test's [`Cost`] is reserved from, and the
//! [`AuthLimiter`] that counts failed authentications per address and per user name.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    Direction, ErrorCode, RecvMode, RrSpec, SendMode, ServerLimits, TestSpec, Transport,
};
use linerate_wire::report::Role;

use crate::model::plan::stream_slots;

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// Longest hold a server makes between a bounceback's request and its response, ns
/// (`--bounceback-hold`): 10 s.
pub const MAX_HOLD_NS: u64 = 10_000_000_000;

/// Most requests in flight per stream a server accepts (`--burst`).
pub const MAX_BURST: u32 = 1024;
/// Longest UDP time-out a server accepts, ms.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// Most streams per direction a test may have (`-P`, `serve --max-streams`): with
/// `--bidir` the stream indices run to twice this, which must fit 16 bits.
pub const MAX_STREAMS: u16 = 32_767;

/// A refusal: the code for the `error` message and its text.
pub type Refusal = (ErrorCode, String);

/// Checks a request against the server's limits and its CPUs (`server_cpu` must exist).
pub fn check_request(
    spec: &TestSpec,
    limits: &ServerLimits,
    cpu_count: u32,
) -> Result<(), Refusal> {
    validate_spec(spec, limits)?;
    // The copy modes this end would use: refused here, before any stream opens, on a kernel
    // without them (a loopback connection of the server's own tries them).
    let sends = spec.direction.client_receives() && spec.rr.is_none();
    let receives = spec.direction.client_sends() && spec.rr.is_none();
    crate::sys::zerocopy::check_support(
        sends && spec.send_mode == SendMode::Zerocopy,
        sends && spec.send_mode == SendMode::Sendfile,
        receives && spec.recv_mode == RecvMode::Trunc,
    )
    .map_err(|e| (ErrorCode::BadRequest, format!("the server: {e}")))?;
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
    if let Some(p) = &spec.profile {
        let max = linerate_wire::profile::MAX_FREQUENCY_HZ;
        if p.frequency_hz == 0 || p.frequency_hz > max {
            return bad(format!(
                "profile frequency must be 1 to {max} Hz (--profile-hz)"
            ));
        }
    }
    if let Some(rr) = &spec.rr {
        validate_rr(rr, limits)?;
    }
    check_quic(spec)?;
    if spec.transport == Transport::Udp && !(spec.send_mode.is_copy() && spec.recv_mode.is_copy()) {
        return bad("--zerocopy, --sendfile and --no-rx-copy apply to TCP stream tests".into());
    }
    if let Some(d) = spec.duration_ms {
        if spec.omit_ms >= d {
            return bad("the warm-up (--omit) must be shorter than the test (-t)".into());
        }
    }
    Ok(())
}

/// A QUIC test: a build with QUIC, no request/response, and between one connection and one
/// per stream.
fn check_quic(spec: &TestSpec) -> Result<(), Refusal> {
    if spec.transport != Transport::Quic {
        return Ok(());
    }
    if !cfg!(feature = "quic") {
        return bad("this server has no QUIC (a build without the `quic` feature, such as the board's core): run the full build of `linerate serve`".into());
    }
    if spec.rr.is_some() {
        return bad("request/response tests do not run over QUIC yet: use `linerate rr`".into());
    }
    let per_direction = spec.streams;
    match spec.quic_connections.unwrap_or(1) {
        0 => bad("a QUIC test needs at least one connection (-P)".into()),
        n if n > per_direction => bad(format!(
            "{n} QUIC connections for {per_direction} streams per direction: at most one connection per stream"
        )),
        _ => Ok(()),
    }
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
    if spec.streams > MAX_STREAMS {
        return bad(format!(
            "{} streams requested; a test has at most {MAX_STREAMS} per direction (-P)",
            spec.streams
        ));
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
    if let Some(bb) = &rr.bounceback {
        if rr.udp || rr.connect_per_transaction || rr.burst != 1 || rr.target_tps.is_some() {
            return bad("a bounceback runs over one TCP connection, one exchange at a time: drop --udp, --connect, --burst and --rate".into());
        }
        if bb.burst == 0 || bb.burst > MAX_BURST {
            return bad(format!(
                "bounceback burst {} is outside 1..={MAX_BURST} (--bounceback N)",
                bb.burst
            ));
        }
        if bb.hold_ns > MAX_HOLD_NS {
            return bad(format!(
                "bounceback hold {} ns is over {MAX_HOLD_NS} ns (--bounceback-hold)",
                bb.hold_ns
            ));
        }
    }
    Ok(())
}

/// What all running tests together may use on a server (`serve --max-total-streams`,
/// `--max-total-buffer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Streams of all running tests (each is a thread and a socket).
    pub streams: u32,
    /// Buffer bytes of all running tests ([`cost`]).
    pub buffer_bytes: u64,
}

/// Most streams of all tests at once by default: enough for two tests of 128 streams in
/// both directions, few enough threads for a small board.
pub const DEFAULT_TOTAL_STREAMS: u32 = 512;
/// The buffer budget when the host's memory cannot be read.
pub const FALLBACK_TOTAL_BUFFER: u64 = 1 << 30;

impl Budget {
    /// The default: [`DEFAULT_TOTAL_STREAMS`], and a quarter of the host's memory for
    /// buffers (so it fits a board with 512 MiB as well as a server).
    pub fn default_for_host() -> Budget {
        Budget {
            streams: DEFAULT_TOTAL_STREAMS,
            buffer_bytes: crate::sys::host::mem_total_bytes()
                .map_or(FALLBACK_TOTAL_BUFFER, |m| m / 4),
        }
    }
}

/// What a test takes from the [`Budget`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Its streams at the server.
    pub streams: u32,
    /// Its buffers at the server, at most: per stream the engine's own buffer and the
    /// socket's send or receive buffer (twice what was asked, as the kernel books it).
    pub buffer_bytes: u64,
}

/// A socket buffer the test did not size: the kernel's autotuning may grow it to a few MiB
/// (tcp_rmem's default maximum is 6 MiB); this is what the budget books for it.
pub const UNSIZED_SOCKET_BUFFER: u64 = 4 << 20;

/// What `spec` costs the server.
pub fn cost(spec: &TestSpec) -> Cost {
    let slots = stream_slots(spec, Role::Server);
    let streams = if slots.is_empty() {
        // TCP_CRR: its connections come and go, one responder per stream.
        u64::from(spec.streams)
    } else {
        slots.len() as u64
    };
    let write = u64::from(spec.write_size);
    let user = match (&spec.rr, spec.transport) {
        (Some(rr), _) => u64::from(rr.request_bytes.max(rr.response_bytes)) * u64::from(rr.burst),
        // A batch of datagrams (GSO or sendmmsg) per call.
        (None, Transport::Udp) => write * 64,
        (None, Transport::Tcp) => write.max(64 << 10),
        // A QUIC receiver buffers up to its stream's flow-control window in user space.
        (None, Transport::Quic) => write.max(crate::engine::quic::STREAM_WINDOW_BYTES),
    };
    let sized = |b: Option<u32>| b.map_or(UNSIZED_SOCKET_BUFFER, |b| 2 * u64::from(b));
    let socket = match spec.direction {
        Direction::Send => sized(spec.server_rcvbuf),
        Direction::Receive => sized(spec.server_sndbuf),
        Direction::Both => sized(spec.server_rcvbuf).max(sized(spec.server_sndbuf)),
    };
    Cost {
        streams: u32::try_from(streams).unwrap_or(u32::MAX),
        buffer_bytes: streams.saturating_mul(user.saturating_add(socket)),
    }
}

/// Books `c` in `used` if it fits `budget`; otherwise says why, with the flags to change:
/// `limit_exceeded` when the test alone is over the budget, `busy` when other tests hold
/// what it needs.
pub fn reserve(used: &mut Cost, c: Cost, budget: &Budget) -> Result<(), Refusal> {
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    if c.streams > budget.streams || c.buffer_bytes > budget.buffer_bytes {
        return over(format!(
            "the test needs {} streams and up to {:.0} MiB of buffers at the server, which allows {} streams and {:.0} MiB for all tests together (fewer -P, a smaller -l or -w/-S, or linerate serve --max-total-streams / --max-total-buffer)",
            c.streams,
            mib(c.buffer_bytes),
            budget.streams,
            mib(budget.buffer_bytes)
        ));
    }
    let streams = used.streams.saturating_add(c.streams);
    let bytes = used.buffer_bytes.saturating_add(c.buffer_bytes);
    if streams > budget.streams || bytes > budget.buffer_bytes {
        return Err((
            ErrorCode::Busy,
            format!(
                "the server's running tests use {} of its {} streams and {:.0} of its {:.0} MiB of buffers; this test needs {} streams and up to {:.0} MiB: retry later (linerate serve --max-total-streams / --max-total-buffer)",
                used.streams,
                budget.streams,
                mib(used.buffer_bytes),
                mib(budget.buffer_bytes),
                c.streams,
                mib(c.buffer_bytes)
            ),
        ));
    }
    used.streams = streams;
    used.buffer_bytes = bytes;
    Ok(())
}

/// Gives back what [`reserve`] booked.
pub fn release(used: &mut Cost, c: Cost) {
    used.streams = used.streams.saturating_sub(c.streams);
    used.buffer_bytes = used.buffer_bytes.saturating_sub(c.buffer_bytes);
}

/// Failed authentications one address may make within [`AUTH_FAILURE_WINDOW`].
pub const AUTH_FAILURES_PER_ADDRESS: u32 = 10;
/// Failed authentications for one user name, from anywhere, within the window.
pub const AUTH_FAILURES_PER_USER: u32 = 20;
/// The window over which failed authentications are counted.
pub const AUTH_FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Most addresses and most user names the limiter remembers; beyond it the oldest go.
const MAX_TRACKED: usize = 4096;

/// Counts failed authentications per client address and per user name over a window, so
/// that guessing is slow however many connections a guesser opens at once. Pure: the time
/// is passed in.
#[derive(Debug)]
pub struct AuthLimiter {
    per_address: u32,
    per_user: u32,
    window: Duration,
    addresses: HashMap<IpAddr, Window>,
    users: HashMap<String, Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

impl AuthLimiter {
    /// A limiter of `per_address` and `per_user` failures per `window`.
    pub fn new(per_address: u32, per_user: u32, window: Duration) -> AuthLimiter {
        AuthLimiter {
            per_address,
            per_user,
            window,
            addresses: HashMap::new(),
            users: HashMap::new(),
        }
    }

    /// Whether `ip` may try to authenticate as `user` now; `Err` says for how long not.
    /// An attempt let through counts as a failure at once (so that attempts made at the
    /// same moment cannot all pass): [`AuthLimiter::succeeded`] takes it back.
    pub fn attempt(&mut self, ip: IpAddr, user: &str, now: Instant) -> Result<(), String> {
        self.check(ip, user, now)?;
        self.failed(ip, user, now);
        Ok(())
    }

    /// Takes back the failure [`AuthLimiter::attempt`] counted for an attempt that passed.
    pub fn succeeded(&mut self, ip: IpAddr, user: &str) {
        let user: String = user
            .chars()
            .take(crate::session::protocol::auth::MAX_USER_LEN)
            .collect();
        for w in [self.addresses.get_mut(&ip), self.users.get_mut(&user)]
            .into_iter()
            .flatten()
        {
            w.failures = w.failures.saturating_sub(1);
        }
    }

    /// Whether `ip` may try to authenticate as `user` now; `Err` says for how long not.
    pub fn check(&mut self, ip: IpAddr, user: &str, now: Instant) -> Result<(), String> {
        let window = self.window;
        let left = |w: Option<&Window>, max: u32| {
            w.filter(|w| now.saturating_duration_since(w.start) < window && w.failures >= max)
                .map(|w| (w.start + window).saturating_duration_since(now))
        };
        if let Some(t) = left(self.addresses.get(&ip), self.per_address) {
            return Err(format!(
                "too many failed authentications from {ip}: retry in {} s",
                t.as_secs() + 1
            ));
        }
        if let Some(t) = left(self.users.get(user), self.per_user) {
            return Err(format!(
                "too many failed authentications for this user: retry in {} s",
                t.as_secs() + 1
            ));
        }
        Ok(())
    }

    /// Counts a failed authentication of `ip` as `user`.
    pub fn failed(&mut self, ip: IpAddr, user: &str, now: Instant) {
        let window = self.window;
        count(&mut self.addresses, ip, now, window);
        let user: String = user
            .chars()
            .take(crate::session::protocol::auth::MAX_USER_LEN)
            .collect();
        count(&mut self.users, user, now, window);
    }
}

fn count<K: Hash + Eq + Clone>(
    map: &mut HashMap<K, Window>,
    key: K,
    now: Instant,
    window: Duration,
) {
    let expired = |w: &Window| now.saturating_duration_since(w.start) >= window;
    if !map.contains_key(&key) && map.len() >= MAX_TRACKED {
        map.retain(|_, w| !expired(w));
        if map.len() >= MAX_TRACKED {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, w)| w.start)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
    }
    let w = map.entry(key).or_insert(Window {
        start: now,
        failures: 0,
    });
    if expired(w) {
        *w = Window {
            start: now,
            failures: 0,
        };
    }
    w.failures = w.failures.saturating_add(1);
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
            bounceback: None,
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

    #[test]
    fn more_than_32767_streams_per_direction_are_refused() {
        let mut l = limits();
        l.max_streams = u16::MAX;
        let mut s = spec();
        s.direction = Direction::Both;
        s.streams = MAX_STREAMS;
        assert!(validate_spec(&s, &l).is_ok());
        assert_eq!(
            stream_slots(&s, Role::Server).last().map(|x| x.index),
            Some(65_533)
        );
        s.streams = MAX_STREAMS + 1;
        let (code, msg) = validate_spec(&s, &l).unwrap_err();
        assert_eq!(code, ErrorCode::BadRequest);
        assert!(msg.contains("-P"), "{msg}");
    }

    #[test]
    fn the_budget_books_streams_and_buffers_and_says_who_holds_them() {
        let budget = Budget {
            streams: 8,
            buffer_bytes: 64 << 20,
        };
        let mut s = spec();
        s.streams = 4;
        let c = cost(&s);
        assert_eq!(c.streams, 4);
        assert_eq!(c.buffer_bytes, 4 * ((128 << 10) + UNSIZED_SOCKET_BUFFER));
        let mut used = Cost::default();
        reserve(&mut used, c, &budget).unwrap();
        reserve(&mut used, c, &budget).unwrap();
        let (code, msg) = reserve(&mut used, c, &budget).unwrap_err();
        assert_eq!(code, ErrorCode::Busy);
        assert!(msg.contains("8 of its 8 streams"), "{msg}");
        release(&mut used, c);
        reserve(&mut used, c, &budget).unwrap();
        // A test that alone is over the budget is refused as such.
        let mut big = spec();
        big.direction = Direction::Both;
        big.streams = 2;
        big.server_rcvbuf = Some(64 << 20);
        let (code, msg) = reserve(&mut Cost::default(), cost(&big), &budget).unwrap_err();
        assert_eq!(code, ErrorCode::LimitExceeded);
        assert!(msg.contains("--max-total-buffer"), "{msg}");
    }

    #[test]
    fn failed_authentications_are_limited_per_address_and_per_user() {
        let t0 = Instant::now();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let mut l = AuthLimiter::new(3, 5, Duration::from_secs(60));
        // A success takes its attempt back.
        l.attempt(a, "alice", t0).unwrap();
        l.succeeded(a, "alice");
        for _ in 0..3 {
            assert!(l.attempt(a, "alice", t0).is_ok());
        }
        let e = l.check(a, "bob", t0).unwrap_err();
        assert!(e.contains("from 10.0.0.1"), "{e}");
        // Another address may go on, until the user's own limit.
        assert!(l.check(b, "alice", t0).is_ok());
        l.failed(b, "alice", t0);
        l.failed(b, "alice", t0);
        let e = l.check(b, "alice", t0).unwrap_err();
        assert!(e.contains("for this user"), "{e}");
        assert!(l.check(b, "carol", t0).is_ok());
        // The window passes.
        let later = t0 + Duration::from_secs(61);
        assert!(l.check(a, "alice", later).is_ok());
    }

    #[test]
    fn the_limiter_forgets_the_oldest_beyond_its_size() {
        let t0 = Instant::now();
        let mut l = AuthLimiter::new(1, 1, Duration::from_secs(60));
        for i in 0..(MAX_TRACKED + 10) {
            l.failed(
                [10, 0, 0, 1].into(),
                &format!("u{i}"),
                t0 + Duration::from_millis(i as u64),
            );
        }
        assert!(l.users.len() <= MAX_TRACKED);
        assert!(l.addresses.len() == 1);
    }
}
