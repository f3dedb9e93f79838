//! `linerate serve`: one port for control and data, TCP and UDP, many tests at once.
//!
//! The accept loop hands every connection to its own thread, which reads the first four
//! bytes (within the handshake time-out): `LR\x01\x00` starts a control session, `LRD1` a
//! data connection that is passed, by its token, to the session that issued the token.
//! Anything else is closed. Tests are isolated: each has its own token, sockets and engine.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use linerate_wire::control::{
    self, negotiate, Accept, AuthChallenge, AuthOk, Done, ErrorCode, ErrorMsg, Message,
    ProtocolVersion, Reject, ServerLimits, Welcome,
};
use linerate_wire::report::IntervalReport;
use linerate_wire::stream_hello::{self, StreamHello};

mod phases;

use phases::{collect_streams, run_test};

use super::auth;
use super::conn::{self, ControlWriter, Debug, Incoming};
use super::validate_spec;
use crate::sys;

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

enum Event {
    Ctl(Incoming),
    Data(u16, TcpStream),
    Interval(IntervalReport),
}

fn ctl(i: Incoming) -> Event {
    Event::Ctl(i)
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

/// Why a session ended early.
struct Abort(String);

/// Pause before answering a failed authentication, so that guessing is slow.
const AUTH_FAIL_DELAY: Duration = Duration::from_millis(500);

/// Expects `auth` and checks it against `users`; answers `auth_ok` and returns the user, or
/// `error` (`auth_required` or `auth_failed`) and ends the session.
fn authenticate(
    s: &mut Session<'_>,
    users: &auth::Users,
    server_nonce: &[u8],
) -> Result<String, Abort> {
    let deadline = Instant::now() + s.ctx.cfg.handshake_timeout;
    let r = match s.expect("auth", deadline)? {
        Message::Auth(r) => r,
        other => {
            return Err(s.fail(
                ErrorCode::AuthRequired,
                format!(
                    "this server requires authentication (got {} before auth): run the client with --auth-user NAME and --auth-secret-file FILE, from linerate with protocol 1.2 or later",
                    other.name()
                ),
            ))
        }
    };
    let client_nonce = auth::unhex(&r.nonce).filter(|n| n.len() == auth::NONCE_LEN);
    let key = users.key(&r.user);
    match (key, client_nonce) {
        (Some(key), Some(cn))
            if key.verify(auth::Prover::Client, server_nonce, &cn, &r.user, &r.mac) =>
        {
            let mac = key.proof(auth::Prover::Server, server_nonce, &cn, &r.user);
            s.w.send(&Message::AuthOk(AuthOk { mac }))
                .map_err(|e| Abort(format!("write failed: {e}")))?;
            Ok(r.user)
        }
        _ => {
            std::thread::sleep(AUTH_FAIL_DELAY);
            // One message for unknown users and wrong secrets: names are not revealed.
            let _ = s.w.send(&Message::Error(ErrorMsg {
                code: ErrorCode::AuthFailed,
                message: "authentication failed: unknown user or wrong secret (check --auth-user and the secret against the server's --auth-users file)".into(),
            }));
            s.w.close();
            let user: String = r.user.chars().take(auth::MAX_USER_LEN).collect();
            Err(Abort(format!("authentication failed for user {user:?}")))
        }
    }
}

struct Session<'a> {
    ctx: &'a Arc<Ctx>,
    peer: SocketAddr,
    w: ControlWriter,
    rx: mpsc::Receiver<Event>,
    tx: Sender<Event>,
    id: String,
    /// The authenticated user, for the log.
    user: Option<String>,
    /// Features both ends offered (from `welcome`).
    features: Vec<String>,
}

impl Session<'_> {
    /// Whether both ends offered `feature`.
    fn has(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

impl Session<'_> {
    fn fail(&mut self, code: ErrorCode, message: String) -> Abort {
        let _ = self.w.send(&Message::Error(ErrorMsg {
            code,
            message: message.clone(),
        }));
        self.w.close();
        Abort(message)
    }

    /// Waits for the next control message until `deadline`.
    fn expect(&mut self, what: &str, deadline: Instant) -> Result<Message, Abort> {
        loop {
            match conn::recv_until(&self.rx, deadline) {
                None => {
                    return Err(
                        self.fail(ErrorCode::Timeout, format!("no {what} within the time-out"))
                    )
                }
                Some(Event::Ctl(Incoming::Msg(m))) => return Ok(m),
                Some(Event::Ctl(Incoming::Closed)) => {
                    return Err(Abort(format!("client closed the connection before {what}")))
                }
                Some(Event::Ctl(Incoming::Broken(e))) => {
                    return Err(self.fail(ErrorCode::Protocol, format!("bad frame: {e}")))
                }
                Some(Event::Data(..)) | Some(Event::Interval(_)) => continue,
            }
        }
    }

    fn unexpected(&mut self, expected: &str, got: &Message) -> Abort {
        self.fail(
            ErrorCode::Protocol,
            format!("expected {expected}, got {}", got.name()),
        )
    }
}

fn handle_control(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr) {
    let (tx, rx) = mpsc::channel();
    let reader = match stream.try_clone() {
        Ok(r) => r,
        Err(_) => return,
    };
    let _ = reader.set_read_timeout(None);
    if conn::spawn_reader(
        reader,
        ctx.cfg.max_frame,
        ctx.cfg.debug,
        "server",
        tx.clone(),
        ctl,
    )
    .is_err()
    {
        return;
    }
    let Ok(w) = ControlWriter::new(stream, "server", ctx.cfg.debug) else {
        return;
    };
    let w = w.with_max_frame(ctx.cfg.max_frame);
    let mut id = [0u8; 4];
    let _ = getrandom::getrandom(&mut id);
    let mut s = Session {
        ctx,
        peer,
        w,
        rx,
        tx,
        id: linerate_wire::hex::encode(&id),
        user: None,
        features: Vec::new(),
    };
    let mut token: Option<[u8; 16]> = None;
    let mut counted = false;
    let outcome = run_session(&mut s, &mut token, &mut counted);
    if let Some(t) = token {
        if let Ok(mut r) = ctx.registry.lock() {
            r.remove(&t);
        }
        if let Ok(mut u) = ctx.udp_peers.lock() {
            u.retain(|_, owner| *owner != t);
        }
    }
    if counted {
        ctx.active_tests.fetch_sub(1, SeqCst);
        if ctx.cfg.one_off {
            ctx.shutdown.store(true, SeqCst);
        }
    }
    let who = s
        .user
        .as_ref()
        .map_or(String::new(), |u| format!(" user {u}"));
    match outcome {
        Ok(line) => log(ctx, &format!("[{}] {peer}{who} {line}", s.id)),
        Err(Abort(why)) => log(ctx, &format!("[{}] {peer}{who} ended: {why}", s.id)),
    }
    s.w.close();
}

fn run_session(
    s: &mut Session<'_>,
    token_out: &mut Option<[u8; 16]>,
    counted: &mut bool,
) -> Result<String, Abort> {
    let cfg = &s.ctx.cfg;
    // 1. hello
    let hello = match s.expect("hello", Instant::now() + cfg.handshake_timeout)? {
        Message::Hello(h) => h,
        other => return Err(s.unexpected("hello", &other)),
    };
    let Some(version) = negotiate(ProtocolVersion::CURRENT, hello.protocol) else {
        let message = format!(
            "client speaks protocol {} and this server {}: use linerate versions with the same major version",
            hello.protocol,
            ProtocolVersion::CURRENT
        );
        let _ = s.w.send(&Message::Reject(Reject {
            code: ErrorCode::IncompatibleVersion,
            server_protocol: ProtocolVersion::CURRENT,
            message: message.clone(),
        }));
        s.w.close();
        return Err(Abort(message));
    };
    let features = control::version::common_features(&hello.features);
    s.features = features.clone();
    let send_intervals = s.has("interval_events");
    let challenge = match &cfg.users {
        Some(_) => Some(auth::nonce().map_err(|e| {
            s.fail(
                ErrorCode::Internal,
                format!("no randomness for a nonce: {e}"),
            )
        })?),
        None => None,
    };
    s.w.send(&Message::Welcome(Welcome {
        protocol: version,
        session_id: s.id.clone(),
        features,
        software: crate::software(),
        limits: cfg.limits.clone(),
        auth: challenge.map(|n| AuthChallenge {
            method: auth::METHOD.to_string(),
            nonce: auth::hex(&n),
        }),
    }))
    .map_err(|e| Abort(format!("write failed: {e}")))?;
    if let (Some(users), Some(nonce)) = (&cfg.users, challenge) {
        s.user = Some(authenticate(s, users, &nonce)?);
    }
    // 2. request
    let spec = match s.expect("test_request", Instant::now() + cfg.idle_timeout)? {
        Message::TestRequest(r) => r.spec,
        // `linerate doctor HOST` (feature "doctor"): findings instead of a test.
        Message::DoctorRequest(q) => {
            return crate::doctor::answer(&mut s.w, s.peer.ip(), &q).map_err(Abort)
        }
        other => return Err(s.unexpected("test_request", &other)),
    };
    if let Err((code, msg)) = validate_spec(&spec, &cfg.limits) {
        return Err(s.fail(code, msg));
    }
    if let Some(cpu) = spec.server_cpu {
        let n = sys::host::cpu_count();
        if cpu >= n {
            return Err(s.fail(
                ErrorCode::BadRequest,
                format!(
                    "server CPU {cpu} does not exist: the server has CPUs 0-{} (-A)",
                    n.saturating_sub(1)
                ),
            ));
        }
    }
    if s.ctx.active_tests.fetch_add(1, SeqCst) >= cfg.max_tests {
        s.ctx.active_tests.fetch_sub(1, SeqCst);
        return Err(s.fail(
            ErrorCode::Busy,
            format!(
                "the server runs its maximum of {} tests at once; retry later (linerate serve --max-tests)",
                cfg.max_tests
            ),
        ));
    }
    *counted = true;
    let mut token = [0u8; 16];
    getrandom::getrandom(&mut token).map_err(|e| {
        s.fail(
            ErrorCode::Internal,
            format!("no randomness for a token: {e}"),
        )
    })?;
    if let Ok(mut r) = s.ctx.registry.lock() {
        r.insert(
            token,
            Route {
                session: s.tx.clone(),
                crr: None,
            },
        );
    }
    *token_out = Some(token);
    // The server's capture of this test (feature `capture`, `serve --allow-capture`).
    let mut capture = start_capture(s, &spec);
    s.w.send(&Message::Accept(Accept {
        token: stream_hello::token_to_hex(&token),
        server_cpu_count: sys::host::cpu_count(),
    }))
    .map_err(|e| Abort(format!("write failed: {e}")))?;
    // 3. data connections
    let streams = collect_streams(s, &spec, &token)?;
    // 4. run
    let (report, interrupted) = run_test(s, &spec, &token, streams, send_intervals)?;
    // 5. results exchange
    let rx_bps = (report.totals.rx_duration_ns > 0)
        .then(|| report.totals.rx_bytes as f64 * 8e9 / report.totals.rx_duration_ns as f64);
    let tx_bps = (report.totals.tx_duration_ns > 0)
        .then(|| report.totals.tx_bytes as f64 * 8e9 / report.totals.tx_duration_ns as f64);
    let cpu = report.cpu.as_ref().map(|c| c.util_percent);
    let capture = capture.as_mut().map(finish_capture);
    let results = phases::results_message(report, send_intervals, capture, s.w.max_frame());
    s.w.send(&results)
        .map_err(|e| Abort(format!("write failed: {e}")))?;
    match s.expect("results", Instant::now() + Duration::from_secs(10)) {
        Ok(Message::Results(_)) => {
            let _ = s.w.send(&Message::Done(Done {}));
        }
        Ok(other) => return Err(s.unexpected("results", &other)),
        Err(a) => return Err(a),
    }
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |b| format!("{:.1} Mbit/s", b / 1e6));
    Ok(format!(
        "{} p={} len={}: rx {} tx {} cpu {}{}",
        format!("{:?} {:?}", spec.transport, spec.direction).to_lowercase(),
        spec.streams,
        spec.write_size,
        fmt(rx_bps),
        fmt(tx_bps),
        cpu.map_or("-".into(), |c| format!("{c:.1}%")),
        if interrupted { " (interrupted)" } else { "" }
    ))
}

/// The server's side of `--capture`: `Some` when the request asked for it (with a note when
/// the server does not capture), holding the running capture and its temporary file.
struct ServerCapture {
    running: Option<(sys::capture::Capture, std::path::PathBuf)>,
    note: Option<String>,
}

fn start_capture(s: &Session<'_>, spec: &control::TestSpec) -> Option<ServerCapture> {
    let snaplen = spec.capture_snaplen?;
    if !s.ctx.cfg.allow_capture {
        return Some(ServerCapture {
            running: None,
            note: Some(
                "the server does not allow captures (linerate serve --allow-capture)".into(),
            ),
        });
    }
    let path = std::env::temp_dir().join(format!(
        "linerate-capture-{}-{}.pcap",
        std::process::id(),
        s.id
    ));
    let snaplen = snaplen.clamp(64, 262_144);
    // At the server the filter is the client's address and the server's port.
    let filter = SocketAddr::new(s.peer.ip(), s.ctx.port);
    match sys::capture::Capture::start_filtered(
        &path,
        filter,
        s.peer.ip(),
        snaplen,
        control::MAX_RETURNED_CAPTURE as u64,
    ) {
        Ok(c) => Some(ServerCapture {
            running: Some((c, path)),
            note: None,
        }),
        Err(e) => Some(ServerCapture {
            running: None,
            note: Some(format!("the server could not capture: {e}")),
        }),
    }
}

fn finish_capture(c: &mut ServerCapture) -> control::ReturnedCapture {
    let Some((cap, path)) = c.running.take() else {
        return control::ReturnedCapture {
            pcap_hex: None,
            note: c.note.take(),
        };
    };
    let stats = cap.stop();
    let bytes = std::fs::read(&path);
    let _ = std::fs::remove_file(&path);
    match (stats, bytes) {
        (Ok(st), Ok(b)) => control::ReturnedCapture {
            pcap_hex: Some(linerate_wire::hex::encode(&b)),
            note: (st.over_cap > 0).then(|| {
                format!(
                    "{} packets left out: the returned capture is capped at {} MiB",
                    st.over_cap,
                    control::MAX_RETURNED_CAPTURE >> 20
                )
            }),
        },
        (Err(e), _) | (_, Err(e)) => control::ReturnedCapture {
            pcap_hex: None,
            note: Some(format!("the server's capture failed: {e}")),
        },
    }
}
