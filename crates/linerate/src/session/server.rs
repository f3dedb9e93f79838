//! `linerate serve`: one port for control and data, TCP and UDP, many tests at once.
//!
//! This file is the accept loop and what the sessions share: the limits (connections,
//! tests at once), the registry that routes data connections by token, and the claims on
//! client UDP ports. The accept thread waits (poll) for a new connection's first bytes, up
//! to [`MAX_WAITING`] connections at once and each within the handshake time-out: a data
//! connection (`LRD1` and its stream hello) is passed right there, by its token, to the
//! session that issued the token (or to a TCP_CRR responder), so that TCP_CRR costs no thread
//! start per transaction. Any other connection gets its own thread, which reads the first
//! four bytes: `LR\x01\x00` starts a control session ([`session`], driving the protocol's
//! [`crate::session::machine::server`]), an iperf3 cookie an iperf3 session or stream.
//! Anything else is closed. Tests are isolated: each has its own token, sockets and
//! engine.
//!
//! What one peer can hold is bounded: connections per address
//! (`--max-connections-per-address`), sessions still in their handshake per address
//! (`--max-handshakes-per-address`, counted from a control connection's magic or an iperf3
//! cookie), the frames before `hello`/`auth` (4 KiB, read on the connection's one thread),
//! the handshake time as a total from the accept, the
//! streams and buffers of all tests together ([`limits::Budget`]), failed
//! authentications per address and user ([`limits::AuthLimiter`]), and log lines per
//! address. A connection over a limit gets a `busy` error where it can be told. The caps
//! are fitted to the open-file limit ([`fit_open_files`]), raised to the hard limit at
//! start.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use linerate_wire::control::{self, ErrorCode, ErrorMsg, Message, ServerLimits};
use linerate_wire::stream_hello::{self, StreamHello};

use super::limits::{self, AuthLimiter, Budget, Cost};
use crate::sys::sockets;

mod capture;
mod iperf3;
mod session;
mod streams;

use session::{handle_control, Event};

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
    pub users: Option<Arc<super::auth::Users>>,
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
    pub hooks: Option<Arc<super::hooks::HookSet>>,
    /// Figures for monitoring that every session updates (`serve --metrics`).
    pub metrics: Option<Arc<super::metrics::ServerMetrics>>,
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
/// Default of `--max-connections-per-address`: a test of 128 streams each way opens 257
/// connections at once; twice that leaves room for a second test.
pub const DEFAULT_CONNECTIONS_PER_ADDRESS: usize = 512;
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

struct Ctx {
    cfg: ServerConfig,
    port: u16,
    registry: Registry,
    /// The client addresses of the UDP streams of running tests, each with the token of the
    /// test it belongs to: a UDP stream's socket belongs to exactly one test.
    udp_peers: Mutex<HashMap<SocketAddr, [u8; 16]>>,
    active_tests: AtomicUsize,
    connections: AtomicUsize,
    /// Most connections at once: [`MAX_CONNECTIONS`], or fewer if the open-file limit
    /// holds fewer.
    max_connections: usize,
    /// The open-file limit (soft, raised to the hard limit at start).
    open_files: u64,
    shutdown: Arc<AtomicBool>,
    sessions: AtomicUsize,
    /// Connections and sessions in their handshake, per client address.
    per_address: Mutex<HashMap<IpAddr, AddressUse>>,
    busy_answers: AtomicUsize,
    /// What the running tests hold of `cfg.budget`.
    budget_used: Mutex<Cost>,
    auth_limiter: Mutex<AuthLimiter>,
    log_limiter: Mutex<LogLimiter>,
    /// Accepted connections so far: the order of an iperf3 test's data connections.
    accept_seq: portable_atomic::AtomicU64,
    /// iperf3 sessions waiting for their TCP data connections, by cookie.
    iperf3_streams: Mutex<HashMap<linerate_wire::iperf3::Cookie, Sender<(u64, TcpStream)>>>,
    /// The iperf3 session of each client address that is opening UDP streams.
    iperf3_udp: Mutex<HashMap<IpAddr, Sender<SocketAddr>>>,
}

/// What one client address holds.
#[derive(Debug, Default, Clone, Copy)]
struct AddressUse {
    connections: usize,
    handshakes: usize,
}

impl Ctx {
    /// Counts a new connection from `ip`, or says why it is refused.
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
                let u = m.entry(ip).or_default();
                if u.connections >= max {
                    Some(format!(
                        "{ip} has {max} connections open to this server, its limit per address: retry later (linerate serve --max-connections-per-address)"
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
    fn enter_handshake(&self, ip: IpAddr) -> Result<(), String> {
        let max = self.cfg.max_handshakes_per_address;
        let Ok(mut m) = self.per_address.lock() else {
            return Err("the server's connection table is unavailable".into());
        };
        let u = m.entry(ip).or_default();
        if u.handshakes >= max {
            return Err(format!(
                "{ip} has {max} sessions in their handshake on this server, its limit per address: retry later (linerate serve --max-handshakes-per-address)"
            ));
        }
        u.handshakes += 1;
        Ok(())
    }

    fn leave_handshake(&self, ip: IpAddr) {
        self.forget(ip, |u| u.handshakes = u.handshakes.saturating_sub(1));
    }

    /// Changes what `ip` holds, and forgets it when that is nothing.
    fn forget(&self, ip: IpAddr, f: impl FnOnce(&mut AddressUse)) {
        if let Ok(mut m) = self.per_address.lock() {
            if let Some(u) = m.get_mut(&ip) {
                f(u);
                if u.connections == 0 && u.handshakes == 0 {
                    m.remove(&ip);
                }
            }
        }
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

/// Raises this process's soft limit of open files to its hard limit (an unlimited hard
/// limit: to the kernel's `fs.nr_open`); returns the soft limit now in force (`u64::MAX`
/// if unknown).
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 here, u32 on 32-bit targets
fn raise_open_files() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return u64::MAX;
    };
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse::<libc::rlim_t>().ok()) // 32 bits on 32-bit targets
        .unwrap_or(libc::rlim_t::MAX);
    let want = hard.min(nr_open);
    if soft < want && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
        return want as u64;
    }
    soft as u64
}

/// Fits the connection caps and the streams of all tests to `open_files` descriptors:
/// connections (at most [`MAX_CONNECTIONS`]), the data sockets of running tests (the
/// budget's streams), [`MAX_BUSY_ANSWERS`] and [`FD_RESERVE`] must all fit, and one address
/// may hold at most a quarter of the connections. Returns the most connections and, when
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
        .min((connections / 4).max(1));
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
        let open_files = raise_open_files();
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

    /// Serves until the shutdown flag is set (or after one test with `one_off`). Running tests
    /// are told the server is shutting down and given a moment to end.
    pub fn run(self) -> anyhow::Result<()> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        self.listener.set_nonblocking(true)?;
        // The UDP port's reader: iperf3 clients announce their UDP streams on it.
        let udp = self.udp.try_clone().context("UDP port")?;
        let ctx = self.ctx.clone();
        let udp_reader = std::thread::Builder::new()
            .name("lr-udp-port".into())
            .spawn(move || iperf3::udp_dispatch(ctx, udp))
            .context("starting the UDP port's reader")?;
        let mut waiting: Vec<Waiting> = Vec::new();
        let mut accept_errors = AcceptErrors::default();
        while !self.ctx.shutdown.load(SeqCst) {
            // The listener and the connections still waiting for their first bytes, for at
            // most 100 ms or until the first of their handshake time-outs.
            let now = Instant::now();
            let wait = waiting
                .iter()
                .map(|w| w.deadline.saturating_duration_since(now))
                .fold(Duration::from_millis(100), Duration::min);
            let timeout =
                PollTimeout::try_from(wait.as_millis().max(1)).unwrap_or(PollTimeout::MAX);
            let mut fds = Vec::with_capacity(1 + waiting.len());
            fds.push(PollFd::new(self.listener.as_fd(), PollFlags::POLLIN));
            fds.extend(
                waiting
                    .iter()
                    .map(|w| PollFd::new(w.stream.as_fd(), PollFlags::POLLIN)),
            );
            let ready: Vec<bool> = match poll(&mut fds, timeout) {
                Ok(_) => fds
                    .iter()
                    .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                    .collect(),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e).context("waiting for connections"),
            };
            drop(fds);
            let now = Instant::now();
            // From the back, so that swap_remove leaves the indices still to visit alone.
            for k in (0..waiting.len()).rev() {
                if ready[k + 1] || now >= waiting[k].deadline {
                    self.first_bytes(waiting.swap_remove(k));
                }
            }
            if !ready[0] {
                continue;
            }
            loop {
                match self.listener.accept() {
                    Ok((stream, peer)) => self.dispatch(stream, peer, &mut waiting),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        // EMFILE and friends: log (rarely), back off, keep serving others.
                        accept_errors.failed(&self.ctx, &e, Instant::now());
                        std::thread::sleep(Duration::from_millis(50));
                        break;
                    }
                }
            }
        }
        for w in waiting {
            self.ctx.close_connection(w.ip);
        }
        // Give sessions a moment to tell their clients and end their engines.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.ctx.sessions.load(SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = udp_reader.join();
        Ok(())
    }

    /// A new connection: a data connection whose stream hello is already there is routed at
    /// once; any other waits (counted against the limits) in `waiting` for its first bytes,
    /// or gets a thread at once when [`MAX_WAITING`] already wait.
    fn dispatch(&self, stream: TcpStream, peer: SocketAddr, waiting: &mut Vec<Waiting>) {
        let accepted = Instant::now();
        let seq = self.ctx.accept_seq.fetch_add(1, SeqCst);
        let Some(stream) = route_ready_data(&self.ctx, stream, peer) else {
            return;
        };
        let ip = sockets::canonical(peer.ip());
        // Descriptors are the lowest free: a number this high means nearly all are open.
        let fd = stream.as_raw_fd() as u64;
        let keep = FD_RESERVE + MAX_BUSY_ANSWERS as u64;
        if fd >= self.ctx.open_files.saturating_sub(keep) {
            let why = format!(
                "the server has nearly all of its {} file descriptors open: retry later",
                self.ctx.open_files
            );
            return answer_busy(&self.ctx, stream, peer, why);
        }
        if let Err(why) = self.ctx.open_connection(ip) {
            return answer_busy(&self.ctx, stream, peer, why);
        }
        let w = Waiting {
            deadline: accepted + self.ctx.cfg.handshake_timeout,
            stream,
            peer,
            ip,
            accepted,
            seq,
        };
        if waiting.len() < MAX_WAITING {
            waiting.push(w);
        } else {
            self.spawn_conn(w);
        }
    }

    /// A waiting connection that became readable (or whose handshake time is up): a data
    /// connection with its whole stream hello is routed here, on the accept thread; any other
    /// gets its own thread, which reads and routes it (and logs a time-out).
    fn first_bytes(&self, w: Waiting) {
        match route_ready_data(&self.ctx, w.stream, w.peer) {
            None => self.ctx.close_connection(w.ip),
            Some(stream) => self.spawn_conn(Waiting { stream, ..w }),
        }
    }

    fn spawn_conn(&self, w: Waiting) {
        let ctx = self.ctx.clone();
        let ip = w.ip;
        let spawned = std::thread::Builder::new()
            .name("lr-conn".into())
            .spawn(move || {
                handle_conn(&ctx, w.stream, w.peer, w.accepted, w.seq);
                ctx.close_connection(w.ip);
            });
        if spawned.is_err() {
            self.ctx.close_connection(ip);
        }
    }
}

/// Failed accepts: the first is logged, then at most one line per
/// [`ACCEPT_ERROR_LOG_EVERY`] with the number of failures since the last line.
#[derive(Debug, Default)]
struct AcceptErrors {
    last_logged: Option<Instant>,
    not_logged: u64,
}

impl AcceptErrors {
    fn failed(&mut self, ctx: &Ctx, e: &io::Error, now: Instant) {
        let due = self
            .last_logged
            .is_none_or(|t| now.saturating_duration_since(t) >= ACCEPT_ERROR_LOG_EVERY);
        if !due {
            self.not_logged += 1;
            return;
        }
        if ctx.cfg.log {
            let more = match self.not_logged {
                0 => String::new(),
                n => format!(" ({n} more failures since the last line)"),
            };
            eprintln!("linerate serve: accept failed: {e}{more}");
        }
        self.last_logged = Some(now);
        self.not_logged = 0;
    }
}

/// A connection accepted before its first bytes: TCP_CRR's data connections nearly always
/// are (the accept thread wakes on the handshake's last ACK, before the hello that follows
/// it), so they wait here, on the accept thread, rather than each costing a thread start.
struct Waiting {
    stream: TcpStream,
    peer: SocketAddr,
    ip: IpAddr,
    accepted: Instant,
    seq: u64,
    /// The end of its handshake time.
    deadline: Instant,
}

/// Connections that wait on the accept thread at most; more get a thread each.
const MAX_WAITING: usize = 256;

/// Tells a connection over a limit that the server is busy: a control client gets an
/// `error` (code `busy`, with `why`) after its `hello`, within [`BUSY_ANSWER_TIME`], so it
/// can say so instead of "connection closed". At most [`MAX_BUSY_ANSWERS`] at once; the
/// others are closed at once.
fn answer_busy(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, why: String) {
    if ctx.busy_answers.fetch_add(1, SeqCst) >= MAX_BUSY_ANSWERS {
        ctx.busy_answers.fetch_sub(1, SeqCst);
        return;
    }
    log(ctx, peer, &format!("{peer}: refused: {why}"));
    let c = ctx.clone();
    let spawned = std::thread::Builder::new()
        .name("lr-busy".into())
        .spawn(move || {
            tell_busy(stream, why);
            c.busy_answers.fetch_sub(1, SeqCst);
        });
    if spawned.is_err() {
        ctx.busy_answers.fetch_sub(1, SeqCst);
    }
}

fn tell_busy(mut stream: TcpStream, why: String) {
    use std::io::{Read, Write};
    let deadline = Instant::now() + BUSY_ANSWER_TIME;
    let mut head = [0u8; 4];
    if peek_exact(&stream, &mut head, deadline).ok() != Some(4)
        || head[..2] != control::frame::MAGIC
    {
        return;
    }
    // Read the hello (capped as every frame before it), so that closing sends a FIN and
    // not a reset that could discard the answer.
    let left = deadline.saturating_duration_since(Instant::now());
    if stream
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .is_err()
    {
        return;
    }
    if super::conn::read_frame(&mut stream, control::MAX_HANDSHAKE_FRAME).is_err() {
        return;
    }
    let m = Message::Error(ErrorMsg {
        code: ErrorCode::Busy,
        message: why,
    });
    let Ok(frame) = control::encode(&m) else {
        return;
    };
    let _ = stream.set_write_timeout(Some(BUSY_ANSWER_TIME));
    if stream.write_all(&frame).is_err() {
        return;
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Until the client closes too (or the time is up), so that nothing unread is left.
    let mut sink = [0u8; 1024];
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Waits until `buf.len()` bytes can be read from `stream` or `deadline` passes, without
/// reading them, and returns how many are there (0: the peer closed). Each wait is one
/// blocking `recv(MSG_PEEK | MSG_WAITALL)` with the time left as its time-out, so a peer
/// that sends a byte and waits costs no CPU (no polling), and a peer that sends a byte now
/// and then cannot stretch the time past `deadline`.
pub(crate) fn peek_exact(
    stream: &TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> io::Result<usize> {
    use nix::errno::Errno;
    use nix::sys::socket::{recv, MsgFlags};
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let flags = if left.is_zero() {
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT
        } else {
            stream.set_read_timeout(Some(left))?;
            MsgFlags::MSG_PEEK | MsgFlags::MSG_WAITALL
        };
        match recv(stream.as_raw_fd(), buf, flags) {
            Ok(n) => return Ok(n),
            Err(Errno::EINTR) => continue,
            // The time-out (or nothing there when it is already up): how much is there?
            Err(Errno::EAGAIN) => {
                return match recv(
                    stream.as_raw_fd(),
                    buf,
                    MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
                ) {
                    Ok(n) => Ok(n),
                    Err(Errno::EAGAIN) => Err(io::ErrorKind::TimedOut.into()),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
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
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Logs one line about `peer` on stderr: escaped and cut (a peer's text may be in it), and
/// at most [`LOG_BURST`] lines per address at once, then [`LOG_PER_SECOND`]; the lines held
/// back are counted in the next one.
fn log(ctx: &Ctx, peer: SocketAddr, line: &str) {
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

/// Reads the first bytes within the handshake time-out (counted from the accept) and
/// routes the connection.
fn handle_conn(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, accepted: Instant, seq: u64) {
    let deadline = accepted + ctx.cfg.handshake_timeout;
    let mut head = [0u8; 4];
    match peek_exact(&stream, &mut head, deadline) {
        Ok(4) => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no hello within the handshake time-out; closed"),
            );
            return;
        }
    }
    if head == stream_hello::MAGIC {
        handle_data(ctx, stream, peer, deadline);
    } else if linerate_wire::iperf3::Cookie::could_start(&head) {
        handle_iperf3(ctx, stream, peer, accepted, seq);
    } else if head[..2] == control::frame::MAGIC {
        // Counted from its first bytes until its test request: over the limit, the peer
        // is told busy within a second, or closed (MAX_BUSY_ANSWERS at once).
        if let Err(why) = ctx.enter_handshake(sockets::canonical(peer.ip())) {
            log(ctx, peer, &format!("{peer}: refused: {why}"));
            if ctx.busy_answers.fetch_add(1, SeqCst) < MAX_BUSY_ANSWERS {
                tell_busy(stream, why);
            }
            ctx.busy_answers.fetch_sub(1, SeqCst);
            return;
        }
        // Control messages are small and answered at once. Data connections keep the
        // options the test asks for (-N): forcing TCP_NODELAY on them would make a server
        // that sends (-R) measure something else than a client that sends.
        let _ = stream.set_nodelay(true);
        ctx.sessions.fetch_add(1, SeqCst);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle_control(ctx, stream, peer, accepted)
        }));
        if r.is_err() {
            log(
                ctx,
                peer,
                &format!("{peer}: session failed internally; other tests are unaffected"),
            );
        }
        ctx.sessions.fetch_sub(1, SeqCst);
    } else {
        log(
            ctx,
            peer,
            &format!("{peer}: not a linerate client (bad magic); closed"),
        );
    }
}

/// A connection that begins like an iperf3 cookie: a data connection of a running iperf3
/// session, or a new iperf3 client.
fn handle_iperf3(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, accepted: Instant, seq: u64) {
    let mut b = [0u8; linerate_wire::iperf3::COOKIE_LEN];
    match peek_exact(&stream, &mut b, accepted + ctx.cfg.handshake_timeout) {
        Ok(n) if n == b.len() => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no complete iperf3 cookie within the handshake time-out; closed"),
            );
            return;
        }
    }
    let _ = stream.set_read_timeout(None);
    let (arrival, stream) = iperf3::route(ctx, stream, peer, seq);
    let (iperf3::Arrival::Control(cookie), Some(stream)) = (arrival, stream) else {
        return;
    };
    ctx.sessions.fetch_add(1, SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        iperf3::handle_control(ctx, stream, peer, cookie, accepted)
    }));
    if r.is_err() {
        log(
            ctx,
            peer,
            &format!("{peer}: iperf3 session failed internally; other tests are unaffected"),
        );
    }
    ctx.sessions.fetch_sub(1, SeqCst);
}

/// Routes a data connection whose whole stream hello is already readable, on the accept
/// thread, and returns `None`; returns the stream for a connection thread otherwise.
///
/// TCP_CRR opens a data connection per transaction and sends its hello with the request
/// right after connecting, so by the time it is accepted the hello is nearly always there:
/// this saves a thread start per transaction. The peek never blocks (`MSG_DONTWAIT`), so a
/// slow peer cannot stall the accept loop.
fn route_ready_data(ctx: &Ctx, stream: TcpStream, peer: SocketAddr) -> Option<TcpStream> {
    use nix::sys::socket::{recv, MsgFlags};
    let mut b = [0u8; stream_hello::LEN];
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
    let ready = matches!(recv(stream.as_raw_fd(), &mut b, flags), Ok(n) if n == b.len())
        && b[..4] == stream_hello::MAGIC;
    if !ready {
        return Some(stream);
    }
    // The peeked bytes are there: this read takes them without waiting.
    if (&stream).read_exact(&mut b).is_ok() {
        route_data(ctx, stream, peer, &b);
    }
    None
}

/// Reads a data connection's stream hello (all of it by `deadline`) and passes the
/// connection to the session that owns its token.
fn handle_data(ctx: &Ctx, mut stream: TcpStream, peer: SocketAddr, deadline: Instant) {
    let mut b = [0u8; stream_hello::LEN];
    match peek_exact(&stream, &mut b, deadline) {
        Ok(n) if n == b.len() => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no complete stream hello within the handshake time-out; closed"),
            );
            return;
        }
    }
    if stream.read_exact(&mut b).is_err() {
        return;
    }
    route_data(ctx, stream, peer, &b);
}

/// Passes a data connection whose stream hello `b` has been read to its session (or, in a
/// running server TCP_CRR test, straight to the stream's responder).
fn route_data(ctx: &Ctx, stream: TcpStream, peer: SocketAddr, b: &[u8; stream_hello::LEN]) {
    let Ok(h) = StreamHello::parse(b) else {
        log(
            ctx,
            peer,
            &format!("{peer}: malformed stream hello; closed"),
        );
        return;
    };
    let route = ctx
        .registry
        .lock()
        .ok()
        .and_then(|r| r.get(&h.token).cloned());
    match route {
        Some(Route {
            crr: Some(inbox), ..
        }) => inbox.deliver(h.stream_index, stream),
        Some(Route { session, .. }) => {
            let _ = stream.set_read_timeout(None);
            let _ = session.send(Event::Data(h.stream_index, stream));
        }
        None => log(
            ctx,
            peer,
            &format!("{peer}: data connection with an unknown token; closed"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // quarter of the connections, and the line says so.
        let mut cfg = ServerConfig::default();
        let (most, note) = fit_open_files(1024, &mut cfg);
        let room = 1024 - FD_RESERVE as usize - MAX_BUSY_ANSWERS;
        assert_eq!(most + cfg.budget.streams as usize, room);
        assert!(most >= room / 2);
        assert_eq!(cfg.max_connections_per_address, most / 4);
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

    #[test]
    fn accept_failures_are_counted_between_lines() {
        let mut a = AcceptErrors::default();
        let ctx_cfg = ServerConfig {
            log: false,
            ..ServerConfig::default()
        };
        let t0 = Instant::now();
        let e = io::Error::from_raw_os_error(24);
        // The line itself is off (log: false); what is counted is what matters.
        let server = Server::bind(ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ctx_cfg
        })
        .unwrap();
        for k in 0..100 {
            a.failed(&server.ctx, &e, t0 + Duration::from_millis(k * 10));
        }
        assert_eq!(a.not_logged, 99);
        a.failed(
            &server.ctx,
            &e,
            t0 + ACCEPT_ERROR_LOG_EVERY + Duration::from_secs(1),
        );
        assert_eq!(a.not_logged, 0);
    }
}
