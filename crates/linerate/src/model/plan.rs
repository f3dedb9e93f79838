//! The plan of a test: what the client asks for ([`StreamPlan`]), the socket options of
//! each end ([`SockOpts`]), and the streams of a test as one end sees them
//! ([`stream_slots`]: index, role, byte quota and paced rate).
//!
//! Plain data and pure functions: `cli::plan` builds the plans from the command line, the
//! client and server sessions carry them out, and both ends split a test's byte count and
//! rate over its streams with the same [`split`], so the shares the server gives its
//! senders are the ones the client gives its own.

use std::fmt;
use std::time::Duration;

use linerate_wire::control::{Direction, TestSpec, Transport};
use linerate_wire::report::{Role, StreamRole};

use super::PlanRecord;

pub use crate::sys::sockets::{SockOpts, UDP_DEFAULT_RCVBUF};

/// Everything the client needs to run one stream or request/response test.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// Server host name or address.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// What to ask the server for.
    pub spec: TestSpec,
    /// The client's own socket options.
    pub local: SockOpts,
    /// CPU for the client's data threads.
    pub client_cpu: Option<u32>,
    /// Connection time-out.
    pub connect_timeout: Duration,
    /// Log control frames.
    pub debug: Debug,
    /// Credentials for a server that requires authentication (`--auth-user`).
    pub auth: Option<Credentials>,
    /// Longest a byte-count test (`-n`) may run before the client ends it with an error
    /// (`--max-time`); `None`: derived from the byte count at a minimum rate.
    pub max_time: Option<Duration>,
}

impl StreamPlan {
    /// The plan as recorded in results.
    pub fn record(&self) -> PlanRecord {
        let s = &self.spec;
        PlanRecord {
            server: format!("{}:{}", self.host, self.port),
            transport: s.transport,
            direction: s.direction,
            streams: s.streams,
            duration_ms: s.duration_ms,
            bytes: s.bytes,
            write_size: s.write_size,
            local_sndbuf: self.local.sndbuf,
            local_rcvbuf: self.local.rcvbuf,
            remote_sndbuf: s.server_sndbuf,
            remote_rcvbuf: s.server_rcvbuf,
            nodelay: s.nodelay,
            mss: s.mss,
            congestion: s.congestion.clone(),
            tos: s.tos,
            rate_bps: s.rate_bps,
            interval_ms: s.interval_ms,
            omit_ms: s.omit_ms,
            client_cpu: self.client_cpu,
            server_cpu: s.server_cpu,
            udp_offload: s.udp_offload,
            link_rate_bps: None,
            send_mode: s.send_mode,
            recv_mode: s.recv_mode,
        }
    }

    /// The options of the client's data sockets: the plan's, and for a UDP receiver that
    /// asked for no receive buffer, [`UDP_DEFAULT_RCVBUF`].
    pub fn client_sock_opts(&self) -> SockOpts {
        let mut o = self.local.clone();
        let s = &self.spec;
        if s.transport == Transport::Udp && s.direction.client_receives() && o.rcvbuf.is_none() {
            o.rcvbuf = Some(UDP_DEFAULT_RCVBUF);
        }
        o
    }
}

/// Logs every control frame to stderr when `--debug-protocol` is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Debug(pub bool);

/// What a client authenticates with (`--auth-user`); the session's `auth` module derives
/// the key and computes the proofs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub user: String,
    /// The user's key.
    pub key: Key,
    /// The server must ask for authentication and prove it knows the same key: one that
    /// does not is refused before anything else is said (a fleet agent's test towards
    /// another agent, `session::server::order`).
    pub required: bool,
}

/// A user's 32-byte key. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(pub(crate) [u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
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
        raw_tx: Default::default(),
        capture_snaplen: None,
        profile: None,
        send_mode: Default::default(),
        recv_mode: Default::default(),
        fleet_order: None,
        quic_connections: None,
    }
}

/// Splits a per-direction total over `n` streams; the first streams take the remainder.
pub fn split(total: u64, n: u16, i: u16) -> u64 {
    let n = u64::from(n.max(1));
    total / n + u64::from(u64::from(i) < total % n)
}

/// The streams of a test: `(index, client_sends)`. With `Both`, indices `0..n` carry
/// client → server and `n..2n` server → client. Indices are 16 bits on the wire, so both
/// ends refuse more than `session::server::policy::limits::MAX_STREAMS` (32,767) streams per direction;
/// should a larger `n` come here anyway, the indices that do not fit are left out rather
/// than wrapped onto others.
pub fn stream_layout(direction: Direction, n: u16) -> Vec<(u16, bool)> {
    match direction {
        Direction::Send => (0..n).map(|i| (i, true)).collect(),
        Direction::Receive => (0..n).map(|i| (i, false)).collect(),
        Direction::Both => (0..n)
            .map(|i| (i, true))
            .chain((0..n).filter_map(|i| Some((n.checked_add(i)?, false))))
            .collect(),
    }
}

/// One stream of a test as one end sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSlot {
    /// Index within the test (what its stream hello carries).
    pub index: u16,
    /// Whether this end sends or receives on it.
    pub role: StreamRole,
    /// Bytes this end sends on it (fixed-size tests; senders only).
    pub quota: Option<u64>,
    /// Paced rate of this stream, bits per second (senders only).
    pub rate_bps: Option<u64>,
}

/// The data streams `spec` opens before the start, as the end `side` sees them, with each
/// sender's share of the byte count and of the rate. Empty for TCP_CRR, whose connections
/// open during the test, one per transaction.
pub fn stream_slots(spec: &TestSpec, side: Role) -> Vec<StreamSlot> {
    if spec.rr.as_ref().is_some_and(|r| r.connect_per_transaction) {
        return Vec::new();
    }
    let n = spec.streams;
    stream_layout(spec.direction, n)
        .into_iter()
        .map(|(index, client_sends)| {
            let sends = client_sends == (side == Role::Client);
            let k = index % n.max(1);
            StreamSlot {
                index,
                role: if sends {
                    StreamRole::Tx
                } else {
                    StreamRole::Rx
                },
                quota: spec.bytes.filter(|_| sends).map(|b| split(b, n, k)),
                rate_bps: spec.rate_bps.filter(|_| sends).map(|r| split(r, n, k)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::control::RrSpec;

    #[test]
    fn layout_both_uses_two_index_ranges() {
        assert_eq!(
            stream_layout(Direction::Both, 2),
            vec![(0, true), (1, true), (2, false), (3, false)]
        );
        assert_eq!(stream_layout(Direction::Receive, 1), vec![(0, false)]);
        // Never wrapped: 40,000 streams each way do not fit 16-bit indices.
        let big = stream_layout(Direction::Both, 40_000);
        let mut idx: Vec<u16> = big.iter().map(|s| s.0).collect();
        idx.sort_unstable();
        idx.dedup();
        assert_eq!(idx.len(), big.len());
    }

    #[test]
    fn split_distributes_remainder() {
        let parts: Vec<u64> = (0..3).map(|i| split(10, 3, i)).collect();
        assert_eq!(parts, vec![4, 3, 3]);
        assert_eq!(parts.iter().sum::<u64>(), 10);
    }

    #[test]
    fn both_ends_see_the_same_streams_with_roles_swapped() {
        let mut s = default_spec(Transport::Udp, Direction::Both, 1200, 1000);
        s.streams = 3;
        s.duration_ms = None;
        s.bytes = Some(10_000);
        s.rate_bps = Some(1_000_000);
        let client = stream_slots(&s, Role::Client);
        let server = stream_slots(&s, Role::Server);
        assert_eq!(client.len(), 6);
        for (c, v) in client.iter().zip(&server) {
            assert_eq!(c.index, v.index);
            assert_ne!(c.role, v.role);
            // Exactly the sender carries a share; shares add up per direction.
            let tx = if c.role == StreamRole::Tx { c } else { v };
            let rx = if c.role == StreamRole::Tx { v } else { c };
            assert!(tx.quota.is_some() && tx.rate_bps.is_some());
            assert_eq!((rx.quota, rx.rate_bps), (None, None));
        }
        let sent: u64 = client.iter().filter_map(|c| c.quota).sum();
        let rate: u64 = server.iter().filter_map(|c| c.rate_bps).sum();
        assert_eq!((sent, rate), (10_000, 1_000_000));
        assert_eq!(
            client.iter().map(|c| c.quota).collect::<Vec<_>>(),
            vec![Some(3334), Some(3333), Some(3333), None, None, None]
        );
        // The server's senders are indices 3..6, split like the client's.
        assert_eq!(
            server.iter().map(|c| c.quota).collect::<Vec<_>>(),
            vec![None, None, None, Some(3334), Some(3333), Some(3333)]
        );
    }

    #[test]
    fn crr_opens_no_streams_before_the_start() {
        let mut s = default_spec(Transport::Tcp, Direction::Send, 1, 1000);
        s.rr = Some(RrSpec {
            request_bytes: 1,
            response_bytes: 1,
            burst: 1,
            connect_per_transaction: true,
            udp: false,
            timeout_ms: 0,
            target_tps: None,
            bounceback: None,
        });
        assert!(stream_slots(&s, Role::Client).is_empty());
        if let Some(r) = s.rr.as_mut() {
            r.connect_per_transaction = false;
        }
        assert_eq!(stream_slots(&s, Role::Server).len(), 1);
    }

    #[test]
    fn udp_receivers_get_the_default_buffer_unless_one_is_asked_for() {
        let s = default_spec(Transport::Udp, Direction::Send, 1200, 1000);
        assert_eq!(SockOpts::server(&s).rcvbuf, Some(UDP_DEFAULT_RCVBUF));
        let mut r = s.clone();
        r.server_rcvbuf = Some(65536);
        assert_eq!(SockOpts::server(&r).rcvbuf, Some(65536));
        let tcp = default_spec(Transport::Tcp, Direction::Send, 1200, 1000);
        assert_eq!(SockOpts::server(&tcp).rcvbuf, None);
        let plan = StreamPlan {
            host: "h".into(),
            port: 1,
            spec: default_spec(Transport::Udp, Direction::Receive, 1200, 1000),
            local: SockOpts::default(),
            client_cpu: None,
            connect_timeout: Duration::from_secs(1),
            debug: Debug(false),
            auth: None,
            max_time: None,
        };
        assert_eq!(plan.client_sock_opts().rcvbuf, Some(UDP_DEFAULT_RCVBUF));
        let send = StreamPlan { spec: s, ..plan };
        assert_eq!(send.client_sock_opts().rcvbuf, None);
    }
}
