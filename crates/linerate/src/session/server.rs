//! `linerate serve`: one port for control and data, TCP and UDP, many tests at once.
//!
//! This file is what the sessions share (the accept loop is in `accept.rs`): the limits (connections,
//! tests at once), the registry that routes data connections by token, and the claims on
//! client UDP ports. The accept thread waits (poll) for a new connection's first bytes, up
//! to `MAX_WAITING` connections at once and each within the handshake time-out: a data
//! connection (`LRD1` and its stream hello) is passed right there, by its token, to the
//! session that issued the token (or to a TCP_CRR responder), so that TCP_CRR costs no thread
//! start per transaction. Any other connection gets its own thread, which reads the first
//! four bytes: `LR\x01\x00` starts a control session (`connection.rs`, driving the protocol's
//! [`crate::session::protocol::machine::server`]), an iperf3 cookie an iperf3 session or stream.
//! Anything else is closed. Tests are isolated: each has its own token, sockets and
//! engine.
//!
//! What one peer can hold is bounded: connections per address
//! (`--max-connections-per-address`), sessions still in their handshake per address
//! (`--max-handshakes-per-address`, counted from a control connection's magic or an iperf3
//! cookie), the frames before `hello`/`auth` (4 KiB, read on the connection's one thread),
//! the handshake time as a total from the accept, the
//! streams and buffers of all tests together ([`policy::limits::Budget`]), failed
//! authentications per address and user ([`policy::limits::AuthLimiter`]), and log lines per
//! address. A connection over a limit gets a `busy` error where it can be told. The caps
//! are fitted to the open-file limit ([`fit_open_files`]), raised to the hard limit at
//! start.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use linerate_wire::control::{self, ServerLimits};

use crate::sys::sockets;
use policy::limits::{self, AuthLimiter, Budget, Cost};

mod accept;
mod capture;
mod connection;
pub(in crate::session) mod data_sockets;
pub mod multicast;
pub mod order;
pub mod policy;

use connection::Event;

use crate::model::plan::Debug;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Limits sent to clients and enforced.
    pub limits: ServerLimits,
    /// Tests running at once.
    pub max_tests: usize,
    /// Time a new connection has to send its first message or stream hello.
    pub handshake_timeout: Duration,
    /// Time a session may sit between messages before the test runs.
    pub idle_timeout: Duration,
    /// Serve one test, then exit.
    pub one_off: bool,
    /// Log every control frame.
    pub debug: Debug,
    /// Print one log line per test on stderr.
    pub log: bool,
    /// Users allowed to run tests (`--auth-users`); `None` lets anyone in.
    pub users: Option<Arc<crate::session::protocol::auth::Users>>,
    /// Lets iperf3 clients (which carry no linerate credentials) test while `users` is set
    /// (`serve --allow-iperf3-unauthenticated`); otherwise they are refused with iperf3's
    /// "test authorization failed".
    pub allow_iperf3_unauthenticated: bool,
    /// Longest control frame body read or written, bytes: [`control::MAX_CONTROL_FRAME`].
    /// Tests lower it to show that no result depends on the test's length fitting one frame.
    pub max_frame: u32,
    /// Capture a test's packets at the server when its client asks (`--capture`) and return
    /// them with the results (`serve --allow-capture`; needs CAP_NET_RAW).
    pub allow_capture: bool,
    /// Profile this host's CPUs when a test's client asks (`--profile`) and return the
    /// profile with the results (`serve --allow-profile`; needs root or CAP_PERFMON). A
    /// profile names kernel functions and the processes that ran, so it is opt-in.
    pub allow_profile: bool,
    /// TCP_CRR tests take their connections on the one port too (`serve --one-port`),
    /// rather than on a port of each test's own (feature `crr_port`), for a firewall that
    /// opens only the one port: each connection then goes through the accept thread.
    pub one_port: bool,
    /// Connections one address may have open that are not data connections of a running
    /// test: those still in their first bytes and control sessions.
    pub max_connections_per_address: usize,
    /// Control sessions one address may have before their test request (in `hello`,
    /// authentication, or waiting for the request).
    pub max_handshakes_per_address: usize,
    /// Streams and buffer bytes of all running tests together.
    pub budget: Budget,
    /// Failed authentications per address and per user name within `auth_failure_window`
    /// before further attempts are refused.
    pub auth_failures_per_address: u32,
    /// See `auth_failures_per_address`.
    pub auth_failures_per_user: u32,
    /// See `auth_failures_per_address`.
    pub auth_failure_window: Duration,
    /// Hooks the operator declared (`serve --hooks FILE`), which clients may ask to run.
    pub hooks: Option<Arc<policy::hooks::HookSet>>,
    /// Figures for monitoring that every session updates (`serve --metrics`).
    pub metrics: Option<Arc<policy::metrics::ServerMetrics>>,
    /// Takes third-party test orders from authenticated users (`serve --fleet-agent`).
    pub fleet_agent: Option<Arc<order::Agent>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 0], super::DEFAULT_PORT)),
            limits: ServerLimits {
                max_duration_ms: 3_600_000,
                max_streams: 128,
                max_rate_bps: None,
                max_write_size: 1 << 20,
                max_socket_buffer: 64 << 20,
            },
            max_tests: 16,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            one_off: false,
            debug: Debug(false),
            log: true,
            allow_capture: false,
            allow_profile: false,
            one_port: false,
            hooks: None,
            metrics: None,
            fleet_agent: None,
            users: None,
            allow_iperf3_unauthenticated: false,
            max_frame: control::MAX_CONTROL_FRAME,
            max_connections_per_address: DEFAULT_CONNECTIONS_PER_ADDRESS,
            max_handshakes_per_address: DEFAULT_HANDSHAKES_PER_ADDRESS,
            budget: Budget::default_for_host(),
            auth_failures_per_address: limits::AUTH_FAILURES_PER_ADDRESS,
            auth_failures_per_user: limits::AUTH_FAILURES_PER_USER,
            auth_failure_window: limits::AUTH_FAILURE_WINDOW,
        }
    }
}

/// Most connections waiting for their first bytes or running; beyond this new ones are
/// refused as busy. Lowered when the open-file limit cannot hold it ([`fit_open_files`]).
const MAX_CONNECTIONS: usize = 4096;
/// File descriptors kept for what is not a connection or a test's data socket: stdio, the
/// listener and the UDP port, /proc and sysfs reads, a capture, a profile's perf events,
/// hook commands' pipes, TCP_CRR tests' own listeners.
const FD_RESERVE: u64 = 128;
/// Accept failures (EMFILE and the like) logged at most once per this time, with the
/// number not logged.
const ACCEPT_ERROR_LOG_EVERY: Duration = Duration::from_secs(10);
/// Default of `--max-connections-per-address`: the connections of one address (an IPv6
/// /64) that are not yet data connections of its admitted tests (those come on top:
/// [`Ctx::expect_data`]), so that 64 addresses are needed to fill [`MAX_CONNECTIONS`] with
/// idle connections, where 512 let 8 addresses lock every test out.
pub const DEFAULT_CONNECTIONS_PER_ADDRESS: usize = 64;
/// The open-file limit lowers `--max-connections-per-address` to this share of the
/// connections, so that as many addresses are needed to fill them.
const ADDRESSES_TO_FILL: usize = 16;
/// Default of `--max-handshakes-per-address`: a client is in its handshake for a few round
/// trips, so 16 at once from one address is a script running tests in parallel at most.
pub const DEFAULT_HANDSHAKES_PER_ADDRESS: usize = 16;
/// Connections over a limit that are answered `busy` at once (each for at most
/// [`BUSY_ANSWER_TIME`]); beyond them they are closed without a word.
const MAX_BUSY_ANSWERS: usize = 64;
/// How long a connection over a limit is given to send its `hello` before it is told.
const BUSY_ANSWER_TIME: Duration = Duration::from_secs(1);
/// Longest log line, characters; a peer's text in it is escaped and cut.
const MAX_LOG_LINE: usize = 400;
/// Log lines one address may cause in a burst, and per second after it.
const LOG_BURST: f64 = 20.0;
const LOG_PER_SECOND: f64 = 1.0;

/// Where a token's data connections go: its session, or for a running server TCP_CRR test
/// straight to the responders.
#[derive(Clone)]
struct Route {
    session: Sender<Event>,
    crr: Option<crate::rr::CrrInbox>,
}

type Registry = Mutex<HashMap<[u8; 16], Route>>;

pub(in crate::session) struct Ctx {
    pub(in crate::session) cfg: ServerConfig,
    port: u16,
    registry: Registry,
    /// The client addresses of the UDP streams of running tests, each with the token of the
    /// test it belongs to: a UDP stream's socket belongs to exactly one test.
    pub(in crate::session) udp_peers: Mutex<HashMap<SocketAddr, [u8; 16]>>,
    pub(in crate::session) active_tests: AtomicUsize,
    connections: AtomicUsize,
    /// Most connections at once: [`MAX_CONNECTIONS`], or fewer if the open-file limit
    /// holds fewer.
    max_connections: usize,
    /// The open-file limit (soft, raised to the hard limit at start).
    open_files: u64,
    pub(in crate::session) shutdown: Arc<AtomicBool>,
    sessions: AtomicUsize,
    /// Connections and sessions in their handshake, per client address.
    per_address: Mutex<HashMap<IpAddr, AddressUse>>,
    busy_answers: AtomicUsize,
    /// What the running tests hold of `cfg.budget`.
    pub(in crate::session) budget_used: Mutex<Cost>,
    auth_limiter: Mutex<AuthLimiter>,
    log_limiter: Mutex<LogLimiter>,
    /// Accepted connections so far: the order of an iperf3 test's data connections.
    accept_seq: portable_atomic::AtomicU64,
    /// iperf3 sessions waiting for their TCP data connections, by cookie.
    pub(in crate::session) iperf3_streams:
        Mutex<HashMap<linerate_wire::iperf3::Cookie, Sender<(u64, TcpStream)>>>,
    /// The iperf3 session of each client address that is opening UDP streams.
    pub(in crate::session) iperf3_udp: Mutex<HashMap<IpAddr, Sender<SocketAddr>>>,
}

/// What one client address (an IPv6 /64: [`address_key`]) holds.
#[derive(Debug, Default, Clone, Copy)]
struct AddressUse {
    connections: usize,
    handshakes: usize,
    /// The data connections of its admitted tests, which it may open beyond its limit.
    expected: usize,
}

impl Ctx {
    /// Counts a new connection from `ip`, or says why it is refused: an address (an IPv6
    /// /64) holds at most `--max-connections-per-address` connections that are not data
    /// connections, plus one for each data connection its admitted tests still open.
    fn open_connection(&self, ip: IpAddr) -> Result<(), String> {
        let most = self.max_connections;
        if self.connections.fetch_add(1, SeqCst) >= most {
            self.connections.fetch_sub(1, SeqCst);
            return Err(format!(
                "the server has its maximum of {most} connections open: retry later"
            ));
        }
        let max = self.cfg.max_connections_per_address;
        let refused = match self.per_address.lock() {
            Ok(mut m) => {
                let u = m.entry(address_key(ip)).or_default();
                if u.connections >= max.saturating_add(u.expected) {
                    Some(format!(
                        "{} has {} connections open to this server, its limit per address: retry later (linerate serve --max-connections-per-address)",
                        address_name(ip),
                        u.connections
                    ))
                } else {
                    u.connections += 1;
                    None
                }
            }
            Err(_) => Some("the server's connection table is unavailable".into()),
        };
        match refused {
            Some(e) => {
                self.connections.fetch_sub(1, SeqCst);
                Err(e)
            }
            None => Ok(()),
        }
    }

    fn close_connection(&self, ip: IpAddr) {
        self.connections.fetch_sub(1, SeqCst);
        self.forget(ip, |u| u.connections = u.connections.saturating_sub(1));
    }

    /// Counts a control session of `ip` in its handshake, or says why it is refused.
    pub(in crate::session) fn enter_handshake(&self, ip: IpAddr) -> Result<(), String> {
        let max = self.cfg.max_handshakes_per_address;
        let Ok(mut m) = self.per_address.lock() else {
            return Err("the server's connection table is unavailable".into());
        };
        let u = m.entry(address_key(ip)).or_default();
        if u.handshakes >= max {
            return Err(format!(
                "{} has {max} sessions in their handshake on this server, its limit per address: retry later (linerate serve --max-handshakes-per-address)",
                address_name(ip)
            ));
        }
        u.handshakes += 1;
        Ok(())
    }

    pub(in crate::session) fn leave_handshake(&self, ip: IpAddr) {
        self.forget(ip, |u| u.handshakes = u.handshakes.saturating_sub(1));
    }

    /// A test of `ip`'s was admitted (`add`) or ended: its `streams` data connections may
    /// be open from that address beyond its own limit while it runs.
    pub(in crate::session) fn expect_data(&self, ip: IpAddr, streams: u32, add: bool) {
        let n = usize::try_from(streams).unwrap_or(usize::MAX);
        if add {
            if let Ok(mut m) = self.per_address.lock() {
                let u = m.entry(address_key(ip)).or_default();
                u.expected = u.expected.saturating_add(n);
            }
        } else {
            self.forget(ip, |u| u.expected = u.expected.saturating_sub(n));
        }
    }

    /// Changes what `ip` holds, and forgets it when that is nothing.
    fn forget(&self, ip: IpAddr, f: impl FnOnce(&mut AddressUse)) {
        if let Ok(mut m) = self.per_address.lock() {
            let key = address_key(ip);
            if let Some(u) = m.get_mut(&key) {
                f(u);
                if u.connections == 0 && u.handshakes == 0 && u.expected == 0 {
                    m.remove(&key);
                }
            }
        }
    }
}

/// What the limits per address count an address as: an IPv4 address itself, an IPv6
/// address by its /64 (one host or LAN commonly holds a whole /64, so counting each of its
/// addresses would let one peer take a server's every slot).
fn address_key(ip: IpAddr) -> IpAddr {
    match sockets::canonical(ip) {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

/// `ip` as the limits per address count it, for their messages.
fn address_name(ip: IpAddr) -> String {
    match address_key(ip) {
        IpAddr::V6(net) => format!("{net}/64"),
        v4 => v4.to_string(),
    }
}

/// Log lines per client address: a token bucket of [`LOG_BURST`] lines refilled at
/// [`LOG_PER_SECOND`]; what it holds back is counted and said with the next line let
/// through. At most [`MAX_LOG_PEERS`] addresses are remembered.
#[derive(Debug, Default)]
struct LogLimiter {
    peers: HashMap<IpAddr, LogBucket>,
}

#[derive(Debug, Clone, Copy)]
struct LogBucket {
    tokens: f64,
    at: Instant,
    held_back: u64,
}

const MAX_LOG_PEERS: usize = 4096;

impl LogLimiter {
    /// Whether a line of `ip`'s may be logged now, and how many were held back before it.
    fn admit(&mut self, ip: IpAddr, now: Instant) -> Option<u64> {
        if !self.peers.contains_key(&ip) && self.peers.len() >= MAX_LOG_PEERS {
            // Full buckets are the same as none.
            self.peers
                .retain(|_, b| b.held_back > 0 || refill(b, now) < LOG_BURST);
            if self.peers.len() >= MAX_LOG_PEERS {
                return None;
            }
        }
        let b = self.peers.entry(ip).or_insert(LogBucket {
            tokens: LOG_BURST,
            at: now,
            held_back: 0,
        });
        b.tokens = refill(b, now);
        b.at = now;
        if b.tokens < 1.0 {
            b.held_back += 1;
            return None;
        }
        b.tokens -= 1.0;
        Some(std::mem::take(&mut b.held_back))
    }
}

fn refill(b: &LogBucket, now: Instant) -> f64 {
    let dt = now.saturating_duration_since(b.at).as_secs_f64();
    (b.tokens + dt * LOG_PER_SECOND).min(LOG_BURST)
}

/// A bound server.
pub struct Server {
    listener: TcpListener,
    udp: UdpSocket,
    ctx: Arc<Ctx>,
    /// What the open-file limit made lower than configured, if anything.
    limits_note: Option<String>,
}

/// Fits the connection caps and the streams of all tests to `open_files` descriptors:
/// connections (at most [`MAX_CONNECTIONS`]), the data sockets of running tests (the
/// budget's streams), [`MAX_BUSY_ANSWERS`] and [`FD_RESERVE`] must all fit, and one address
/// may hold at most a [`ADDRESSES_TO_FILL`]th of the connections. Returns the most connections and, when
/// something configured was lowered, a line that says what.
fn fit_open_files(open_files: u64, cfg: &mut ServerConfig) -> (usize, Option<String>) {
    let room = open_files.saturating_sub(FD_RESERVE + MAX_BUSY_ANSWERS as u64);
    let room = usize::try_from(room).unwrap_or(usize::MAX).max(8);
    let streams = usize::try_from(cfg.budget.streams).unwrap_or(usize::MAX);
    let (connections, streams) = if MAX_CONNECTIONS.saturating_add(streams) <= room {
        (MAX_CONNECTIONS, streams)
    } else {
        // Half each at least, what one does not need to the other.
        let streams = streams.min(room / 2);
        ((room - streams).min(MAX_CONNECTIONS), streams)
    };
    let per_address = cfg
        .max_connections_per_address
        .min((connections / ADDRESSES_TO_FILL).max(1));
    let handshakes = cfg.max_handshakes_per_address.min(per_address);
    let mut lowered = Vec::new();
    if connections < MAX_CONNECTIONS {
        lowered.push(format!("{connections} connections (of {MAX_CONNECTIONS})"));
    }
    if per_address < cfg.max_connections_per_address {
        lowered.push(format!(
            "--max-connections-per-address {per_address} (of {})",
            cfg.max_connections_per_address
        ));
    }
    if handshakes < cfg.max_handshakes_per_address {
        lowered.push(format!(
            "--max-handshakes-per-address {handshakes} (of {})",
            cfg.max_handshakes_per_address
        ));
    }
    if streams < cfg.budget.streams as usize {
        lowered.push(format!(
            "--max-total-streams {streams} (of {})",
            cfg.budget.streams
        ));
    }
    cfg.max_connections_per_address = per_address;
    cfg.max_handshakes_per_address = handshakes;
    cfg.budget.streams = u32::try_from(streams).unwrap_or(u32::MAX);
    let note = (!lowered.is_empty()).then(|| {
        format!(
            "the open-file limit of {open_files} (its hard limit) holds {}: raise it (ulimit -Hn, systemd's LimitNOFILE) for more",
            lowered.join(", ")
        )
    });
    (connections, note)
}

impl Server {
    /// Binds the TCP listener and the UDP port. `[::]` listens on IPv4 too (dual stack); if
    /// IPv6 is unavailable it falls back to `0.0.0.0`.
    pub fn bind(mut cfg: ServerConfig) -> anyhow::Result<Server> {
        let open_files = crate::sys::process::raise_open_files();
        let (max_connections, limits_note) = fit_open_files(open_files, &mut cfg);
        let listener = bind_tcp(cfg.listen)
            .or_else(|e| {
                if cfg.listen.ip().is_unspecified() && cfg.listen.is_ipv6() {
                    bind_tcp(SocketAddr::from(([0, 0, 0, 0], cfg.listen.port())))
                } else {
                    Err(e)
                }
            })
            .with_context(|| {
                format!(
                    "cannot listen on {}: is another server using the port? pick another with --port",
                    cfg.listen
                )
            })?;
        let local = listener.local_addr()?;
        let udp = bind_udp(local).with_context(|| {
            format!("cannot bind UDP port {local}: is another program using it? pick another with --port")
        })?;
        Ok(Server {
            listener,
            udp,
            limits_note,
            ctx: Arc::new(Ctx {
                max_connections,
                open_files,
                port: local.port(),
                registry: Mutex::new(HashMap::new()),
                udp_peers: Mutex::new(HashMap::new()),
                active_tests: AtomicUsize::new(0),
                connections: AtomicUsize::new(0),
                shutdown: Arc::new(AtomicBool::new(false)),
                sessions: AtomicUsize::new(0),
                per_address: Mutex::new(HashMap::new()),
                busy_answers: AtomicUsize::new(0),
                budget_used: Mutex::new(Cost::default()),
                auth_limiter: Mutex::new(AuthLimiter::new(
                    cfg.auth_failures_per_address,
                    cfg.auth_failures_per_user,
                    cfg.auth_failure_window,
                )),
                log_limiter: Mutex::new(LogLimiter::default()),
                accept_seq: portable_atomic::AtomicU64::new(0),
                iperf3_streams: Mutex::new(HashMap::new()),
                iperf3_udp: Mutex::new(HashMap::new()),
                cfg,
            }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// What the open-file limit made lower than configured (connections, per address,
    /// streams of all tests), as a line for the log; `None` when it holds them all.
    pub fn limits_note(&self) -> Option<&str> {
        self.limits_note.as_deref()
    }

    /// A flag that stops the server when set (SIGINT/SIGTERM set it).
    pub fn shutdown_handle(&self) -> Arc<AtomicBool> {
        self.ctx.shutdown.clone()
    }
}

fn bind_tcp(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(false)?;
    }
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(false)?;
    }
    crate::sys::net::opt::set_reuse_port(&s, true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Logs one line about `peer` on stderr: escaped and cut (a peer's text may be in it), and
/// at most [`LOG_BURST`] lines per address at once, then [`LOG_PER_SECOND`]; the lines held
/// back are counted in the next one.
pub(in crate::session) fn log(ctx: &Ctx, peer: SocketAddr, line: &str) {
    if !ctx.cfg.log {
        return;
    }
    let ip = sockets::canonical(peer.ip());
    let admitted = ctx
        .log_limiter
        .lock()
        .ok()
        .and_then(|mut l| l.admit(ip, Instant::now()));
    let Some(held_back) = admitted else {
        return;
    };
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    let line = linerate_wire::text::clip(line, MAX_LOG_LINE);
    if held_back > 0 {
        eprintln!("{now} {line} ({held_back} earlier lines about {ip} not logged)");
    } else {
        eprintln!("{now} {line}");
    }
}

/// Logs one line on stderr whatever the log throttle says: the commands a server runs for
/// a client (hooks and their restores) are each on record. Escaped and cut as [`log`].
fn log_always(ctx: &Ctx, line: &str) {
    if !ctx.cfg.log {
        return;
    }
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    eprintln!("{now} {}", linerate_wire::text::clip(line, MAX_LOG_LINE));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_are_counted_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        assert_eq!(address_name(a), "2001:db8:1:2::/64");
        // IPv4, also mapped into IPv6, is its own address.
        let v4: IpAddr = "198.18.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:198.18.0.1".parse().unwrap();
        assert_eq!(address_key(mapped), v4);
        assert_ne!(address_key(v4), address_key("198.18.0.2".parse().unwrap()));
    }

    #[test]
    fn the_caps_fit_the_open_file_limit() {
        // A common hard limit of 1M holds everything as configured.
        let mut cfg = ServerConfig::default();
        let (most, note) = fit_open_files(1 << 20, &mut cfg);
        assert_eq!(most, MAX_CONNECTIONS);
        assert_eq!(note, None);
        assert_eq!(
            cfg.max_connections_per_address,
            DEFAULT_CONNECTIONS_PER_ADDRESS
        );
        assert_eq!(cfg.budget.streams, limits::DEFAULT_TOTAL_STREAMS);
        // 1,024: connections and streams share what the reserve leaves, one address holds a
        // sixteenth of the connections, and the line says so.
        let mut cfg = ServerConfig::default();
        let (most, note) = fit_open_files(1024, &mut cfg);
        let room = 1024 - FD_RESERVE as usize - MAX_BUSY_ANSWERS;
        assert_eq!(most + cfg.budget.streams as usize, room);
        assert!(most >= room / 2);
        assert_eq!(cfg.max_connections_per_address, most / ADDRESSES_TO_FILL);
        assert!(cfg.max_handshakes_per_address <= cfg.max_connections_per_address);
        let note = note.expect("a note");
        assert!(
            note.contains("1024") && note.contains(&format!("{most} connections")),
            "{note}"
        );
        assert!(note.contains("--max-connections-per-address"), "{note}");
        // Too few to speak of still leaves a connection per address.
        let mut cfg = ServerConfig::default();
        let (most, _) = fit_open_files(16, &mut cfg);
        assert!(most >= 1 && cfg.max_connections_per_address >= 1);
    }
}
