//! `linerate serve`: one port for control and data, TCP and UDP, many tests at once.
//!
//! This file is the accept loop and what the sessions share: the limits (connections,
//! tests at once), the registry that routes data connections by token, and the claims on
//! client UDP ports. The accept loop hands every connection to its own thread, which reads
//! the first four bytes (within the handshake time-out): `LR\x01\x00` starts a control
//! session ([`session`], driving the protocol's [`crate::session::machine::server`]),
//! `LRD1` a data connection that is passed, by its token, to the session that issued the
//! token. Anything else is closed. Tests are isolated: each has its own token, sockets and
//! engine.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use linerate_wire::control::{self, ServerLimits};
use linerate_wire::stream_hello::{self, StreamHello};

mod capture;
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
    /// Longest control frame body read or written, bytes: [`control::MAX_CONTROL_FRAME`].
    /// Tests lower it to show that no result depends on the test's length fitting one frame.
    pub max_frame: u32,
    /// Capture a test's packets at the server when its client asks (`--capture`) and return
    /// them with the results (`serve --allow-capture`; needs CAP_NET_RAW).
    pub allow_capture: bool,
    /// Hooks the operator declared (`serve --hooks FILE`), which clients may ask to run.
    pub hooks: Option<Arc<super::hooks::HookSet>>,
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
            idle_timeout: Duration::from_secs(60),
            one_off: false,
            debug: Debug(false),
            log: true,
            allow_capture: false,
            hooks: None,
            users: None,
            max_frame: control::MAX_CONTROL_FRAME,
        }
    }
}

/// Most connections waiting for their first bytes or running; beyond this new ones are closed.
const MAX_CONNECTIONS: usize = 4096;

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
    shutdown: Arc<AtomicBool>,
    sessions: AtomicUsize,
}

/// A bound server.
pub struct Server {
    listener: TcpListener,
    _udp: UdpSocket,
    ctx: Arc<Ctx>,
}

impl Server {
    /// Binds the TCP listener and the UDP port. `[::]` listens on IPv4 too (dual stack); if
    /// IPv6 is unavailable it falls back to `0.0.0.0`.
    pub fn bind(cfg: ServerConfig) -> anyhow::Result<Server> {
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
            _udp: udp,
            ctx: Arc::new(Ctx {
                port: local.port(),
                cfg,
                registry: Mutex::new(HashMap::new()),
                udp_peers: Mutex::new(HashMap::new()),
                active_tests: AtomicUsize::new(0),
                connections: AtomicUsize::new(0),
                shutdown: Arc::new(AtomicBool::new(false)),
                sessions: AtomicUsize::new(0),
            }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
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
        while !self.ctx.shutdown.load(SeqCst) {
            let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(100u16)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e).context("waiting for connections"),
            }
            loop {
                match self.listener.accept() {
                    Ok((stream, peer)) => self.dispatch(stream, peer),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        // EMFILE and friends: log, back off, keep serving others.
                        eprintln!("linerate serve: accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(50));
                        break;
                    }
                }
            }
        }
        // Give sessions a moment to tell their clients and end their engines.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.ctx.sessions.load(SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn dispatch(&self, stream: TcpStream, peer: SocketAddr) {
        let Some(stream) = route_ready_data(&self.ctx, stream, peer) else {
            return;
        };
        if self.ctx.connections.fetch_add(1, SeqCst) >= MAX_CONNECTIONS {
            self.ctx.connections.fetch_sub(1, SeqCst);
            return; // dropping closes it
        }
        let ctx = self.ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("lr-conn".into())
            .spawn(move || {
                handle_conn(&ctx, stream, peer);
                ctx.connections.fetch_sub(1, SeqCst);
            });
        if spawned.is_err() {
            self.ctx.connections.fetch_sub(1, SeqCst);
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

fn log(ctx: &Ctx, line: &str) {
    if ctx.cfg.log {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        eprintln!("{now} {line}");
    }
}

/// Reads the first bytes within the handshake time-out and routes the connection.
fn handle_conn(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr) {
    if stream
        .set_read_timeout(Some(ctx.cfg.handshake_timeout))
        .is_err()
    {
        return;
    }
    let deadline = Instant::now() + ctx.cfg.handshake_timeout;
    let mut head = [0u8; 4];
    loop {
        match stream.peek(&mut head) {
            Ok(0) => return,
            Ok(4) => break,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(_) | Err(_) => {
                log(
                    ctx,
                    &format!("{peer}: no hello within the handshake time-out; closed"),
                );
                return;
            }
        }
    }
    if head == stream_hello::MAGIC {
        handle_data(ctx, stream, peer);
    } else if head[..2] == control::frame::MAGIC {
        // Control messages are small and answered at once. Data connections keep the
        // options the test asks for (-N): forcing TCP_NODELAY on them would make a server
        // that sends (-R) measure something else than a client that sends.
        let _ = stream.set_nodelay(true);
        ctx.sessions.fetch_add(1, SeqCst);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle_control(ctx, stream, peer)
        }));
        if r.is_err() {
            log(
                ctx,
                &format!("{peer}: session failed internally; other tests are unaffected"),
            );
        }
        ctx.sessions.fetch_sub(1, SeqCst);
    } else {
        log(
            ctx,
            &format!("{peer}: not a linerate client (bad magic); closed"),
        );
    }
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
    use std::os::fd::AsRawFd;
    let mut b = [0u8; stream_hello::LEN];
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
    let ready = matches!(recv(stream.as_raw_fd(), &mut b, flags), Ok(n) if n == b.len())
        && b[..4] == stream_hello::MAGIC;
    if !ready {
        return Some(stream);
    }
    handle_data(ctx, stream, peer);
    None
}

fn handle_data(ctx: &Ctx, mut stream: TcpStream, peer: SocketAddr) {
    use std::io::Read;
    let mut b = [0u8; stream_hello::LEN];
    if stream.read_exact(&mut b).is_err() {
        return;
    }
    let Ok(h) = StreamHello::parse(&b) else {
        log(ctx, &format!("{peer}: malformed stream hello; closed"));
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
            &format!("{peer}: data connection with an unknown token; closed"),
        ),
    }
}
