//! One control session at the server: the driver of the
//! [`ServerMachine`](crate::session::protocol::machine::server::ServerMachine). It performs the
//! machine's actions (sends, the test's admission into the server's registry, data sockets,
//! UDP hellos, the engine, the capture, the doctor's findings), waits for the next control
//! message, data connection, engine interval or deadline, and feeds it. Every wait has a
//! deadline, so no peer can make it wait forever.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_wire::control::ErrorCode;
use linerate_wire::doctor::{DoctorReport, DoctorRequest, Finding, Severity, MAX_FINDINGS};
use linerate_wire::hooks::{HookRequest, HookResult};
use linerate_wire::report::{IntervalReport, Role};

use super::capture::{self, ServerCapture};
use super::data_sockets::{self, Ends};
use super::multicast::{self, McastReceiver};
use super::policy::hooks;
use super::policy::limits::{self, Cost};
use super::{log, log_always, Ctx, Route};
use crate::engine::quic;
use crate::engine::{DataSocket, StreamSetup};
use crate::session::protocol::auth;
use crate::session::protocol::conn::{self, Backlog, ControlWriter, Incoming};
use crate::session::protocol::engine_select::{Running, StartLinks};
use crate::session::protocol::machine::earliest;
use crate::session::protocol::machine::server::{
    Action, EngineStatus, Input, Phase, ServerMachine, ServerSettings,
};
use crate::sys::{self, sockets};
use linerate_wire::control;

/// What a session's thread waits on.
pub(super) enum Event {
    /// The control connection.
    Ctl(Incoming),
    /// A data connection routed here by its token, for stream `index`.
    Data(u16, TcpStream),
    /// A QUIC stream of this test's endpoint that carried the token, for stream `index`.
    Quic(u16, quic::QuicStream),
    /// An interval of this session's engine.
    Interval(IntervalReport),
}

/// How often a session looks at its engine and at the shutdown flag.
const TICK: Duration = Duration::from_millis(50);

/// Runs the control session on `stream` from `peer` (accepted at `accepted`, counted
/// against `--max-handshakes-per-address` by the caller) to its end, then frees what the
/// test held and logs one line.
///
/// Until the peer has said who it is (`hello`, and `auth` when the server has users), the
/// session reads its frames on this thread, each capped at
/// [`control::MAX_HANDSHAKE_FRAME`]; the reader thread, with the full frame cap, starts
/// only after that.
pub(super) fn handle_control(
    ctx: &Arc<Ctx>,
    stream: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
) {
    let (tx, rx) = mpsc::channel();
    let cfg = &ctx.cfg;
    let (Ok(reader), Ok(w)) = (
        stream.try_clone(),
        ControlWriter::new(stream, "server", cfg.debug),
    ) else {
        ctx.leave_handshake(sockets::canonical(peer.ip()));
        return;
    };
    let mut id = [0u8; 4];
    let _ = getrandom::getrandom(&mut id);
    let id = linerate_wire::hex::encode(&id);
    let settings = settings(ctx, peer, &id);
    let local = reader.local_addr().map_or(peer.ip(), |a| a.ip());
    let mut s = Session {
        ctx,
        peer,
        local,
        id,
        w: w.with_max_frame(cfg.max_frame),
        rx,
        tx,
        backlog: None,
        in_handshake: true,
        cost: None,
        machine: ServerMachine::new(settings, accepted),
        arrived: None,
        tcp: HashMap::new(),
        arrived_quic: None,
        quic: HashMap::new(),
        quic_server: None,
        setups: Vec::new(),
        early_host: None,
        engine: None,
        token: None,
        counted: false,
        capture: None,
        restores: Vec::new(),
        crr_listener: None,
        fleet_order: None,
        mcast: None,
        cap: conn::FrameCap::new(control::MAX_HANDSHAKE_FRAME),
    };
    s.greet(&reader);
    if !s.machine.is_over() {
        let _ = reader.set_read_timeout(None);
        match conn::spawn_reader(
            reader,
            s.cap.clone(),
            cfg.debug,
            "server",
            s.tx.clone(),
            Event::Ctl,
        ) {
            Ok(b) => s.backlog = Some(b),
            Err(e) => s.machine.fail(
                ErrorCode::Internal,
                format!("cannot start the control reader: {e}"),
            ),
        }
    }
    s.run();
    s.end();
}

fn settings(ctx: &Ctx, peer: SocketAddr, id: &str) -> ServerSettings {
    let cfg = &ctx.cfg;
    ServerSettings {
        limits: cfg.limits.clone(),
        handshake_timeout: cfg.handshake_timeout,
        idle_timeout: cfg.idle_timeout,
        port: ctx.port,
        cpu_count: sys::host::cpu_count(),
        session_id: id.to_string(),
        software: crate::software(),
        max_frame: cfg.max_frame,
        peer_ip: sockets::canonical(peer.ip()),
        users: cfg.users.clone(),
        nonce: match cfg.users {
            Some(_) => auth::nonce().map_err(|e| e.to_string()),
            None => Err("no authentication".into()),
        },
        refuse: None,
    }
}

/// Reads that all end by the deadline: each waits only for the time left, so a peer that
/// sends a byte now and then cannot stretch a frame past it.
struct ReadBy<'a>(&'a TcpStream, Instant);

impl std::io::Read for ReadBy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.1.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.0.set_read_timeout(Some(left))?;
        let mut s: &TcpStream = self.0;
        std::io::Read::read(&mut s, buf)
    }
}

struct Session<'a> {
    ctx: &'a Arc<Ctx>,
    peer: SocketAddr,
    /// This end's address of the control connection (a multicast join's interface).
    local: IpAddr,
    id: String,
    w: ControlWriter,
    rx: Receiver<Event>,
    tx: Sender<Event>,
    /// What the control reader has queued for this session (bounded); none before the
    /// reader starts, after the peer said who it is.
    backlog: Option<Backlog>,
    /// The session counts against `--max-handshakes-per-address`.
    in_handshake: bool,
    /// What the test holds of the server's budget.
    cost: Option<Cost>,
    machine: ServerMachine,
    /// The data connection just fed, until the machine says what to do with it.
    arrived: Option<TcpStream>,
    /// The test's TCP data connections, by stream index, until the sockets are set up.
    tcp: HashMap<u16, TcpStream>,
    /// The QUIC stream just fed, as `arrived`.
    arrived_quic: Option<quic::QuicStream>,
    /// The test's QUIC streams, by stream index, until the sockets are set up.
    quic: HashMap<u16, quic::QuicStream>,
    /// A QUIC test's endpoint, open until the session ends.
    quic_server: Option<quic::QuicServer>,
    setups: Vec<StreamSetup>,
    early_host: Option<sys::hostsnap::HostSnapshot>,
    engine: Option<Running>,
    /// The token registered for the test, and whether it counts against `--max-tests`.
    token: Option<[u8; 16]>,
    counted: bool,
    capture: Option<ServerCapture>,
    /// Restore commands of the hooks this session ran, by hook, in the order first run.
    restores: Vec<(String, Vec<String>)>,
    /// A TCP_CRR test's own listener, until its engine starts.
    crr_listener: Option<std::net::TcpListener>,
    /// The fleet order whose data runs here (a fleet agent as destination), from the
    /// start line it logged until the end line.
    fleet_order: Option<String>,
    /// The multicast group joined for the client (feature `multicast`), while it counts.
    mcast: Option<McastReceiver>,
    /// The control reader's frame cap, set by [`frame_cap`] for the machine's phase before
    /// each action, so that a message answered is read under the cap of the phase it
    /// starts.
    cap: conn::FrameCap,
}

/// The longest control frame the session reads in `phase`: a request's few KiB until a
/// test is accepted (more only on a server with hooks or fleet orders, whose requests
/// carry their words), the UDP ports of `streams_ready` while the streams open and the
/// test runs, and the full `max_frame` only while it waits for the client's `results`.
fn frame_cap(phase: &Phase, cfg: &super::ServerConfig) -> u32 {
    let small = cfg.max_frame.min(control::MAX_HANDSHAKE_FRAME);
    let cap = match phase {
        Phase::AwaitResults { .. } => return cfg.max_frame,
        Phase::AwaitRequest { .. }
        | Phase::AwaitHookRequest { .. }
        | Phase::Admitting
        | Phase::AnsweringDoctor
        | Phase::RunningHook
        | Phase::RunningOrder
        | Phase::ReadingCounters
        | Phase::AwaitCountersRequest { .. }
            if cfg.hooks.is_some() || cfg.fleet_agent.is_some() =>
        {
            control::MAX_REQUEST_FRAME
        }
        // `streams_ready`: "65535," per UDP port of both directions at most.
        Phase::CollectStreams { .. }
        | Phase::SetUpStreams { .. }
        | Phase::AwaitUdpHellos { .. }
        | Phase::Running { .. }
        | Phase::Draining => small.saturating_add(12 * u32::from(cfg.limits.max_streams)),
        _ => small,
    };
    cap.min(cfg.max_frame)
}

impl Session<'_> {
    /// The session took a control event off the channel.
    fn took(&self) {
        if let Some(b) = &self.backlog {
            b.took();
        }
    }

    /// Reads `hello` (and `auth`) on this thread, frames capped at
    /// [`control::MAX_HANDSHAKE_FRAME`], each within the machine's deadline, until the
    /// machine waits for something else or the session is over.
    fn greet(&mut self, r: &TcpStream) {
        let cap = self.ctx.cfg.max_frame.min(control::MAX_HANDSHAKE_FRAME);
        loop {
            self.pump();
            if self.machine.is_over() {
                return;
            }
            let now = Instant::now();
            match *self.machine.phase() {
                Phase::AwaitHello { .. } | Phase::AwaitAuth { .. } => {}
                // A failed authentication is answered after a delay.
                Phase::AuthFailing { until, .. } => {
                    std::thread::sleep(until.saturating_duration_since(now));
                    self.machine.handle_timeout(Instant::now().max(until));
                    continue;
                }
                _ => return,
            }
            let deadline = self.machine.poll_timeout().unwrap_or(now);
            let i = match conn::read_frame(&mut ReadBy(r, deadline), cap) {
                Ok(Some(m)) => {
                    if self.ctx.cfg.debug.0 {
                        eprintln!(
                            "[protocol] server <- {}",
                            serde_json::to_string(&m).unwrap_or_default()
                        );
                    }
                    Incoming::Msg(m)
                }
                Ok(None) => Incoming::Closed,
                // The read timed out: the deadline (a frame half sent by then is late too).
                Err(_) if Instant::now() + Duration::from_millis(20) >= deadline => {
                    self.machine.handle_timeout(Instant::now().max(deadline));
                    continue;
                }
                Err(e) => Incoming::Broken(e),
            };
            self.feed(Input::Received(i));
        }
    }

    fn run(&mut self) {
        loop {
            self.pump();
            if self.in_handshake && !self.machine.in_handshake() {
                self.in_handshake = false;
                self.ctx.leave_handshake(sockets::canonical(self.peer.ip()));
            }
            if self.machine.is_over() {
                return;
            }
            self.wait();
        }
    }

    fn feed(&mut self, input: Input) {
        self.machine.handle(Instant::now(), input);
    }

    fn pump(&mut self) {
        while let Some(a) = self.machine.poll_action() {
            self.cap.set(frame_cap(self.machine.phase(), &self.ctx.cfg));
            self.perform(a);
        }
        self.cap.set(frame_cap(self.machine.phase(), &self.ctx.cfg));
        // A data connection the machine did not keep is closed here.
        self.arrived = None;
        self.arrived_quic = None;
    }

    fn perform(&mut self, a: Action) {
        match a {
            Action::Send(m) => {
                if let Err(e) = self.w.send(&m) {
                    let (message, error) = (m.name(), e.to_string());
                    self.feed(Input::SendFailed { message, error });
                }
            }
            Action::Close => self.w.close(),
            Action::Admit => self.admit(),
            Action::CheckAuth { user } => {
                let ip = sockets::canonical(self.peer.ip());
                let now = Instant::now();
                let verdict = match self.ctx.auth_limiter.lock() {
                    Ok(mut l) => l.attempt(ip, &user, now),
                    Err(_) => Err("the server's authentication limiter is unavailable".into()),
                };
                self.feed(Input::AuthChecked(verdict));
            }
            Action::AuthSucceeded { user } => {
                let ip = sockets::canonical(self.peer.ip());
                if let Ok(mut l) = self.ctx.auth_limiter.lock() {
                    l.succeeded(ip, &user);
                }
            }
            Action::AnswerDoctor(req) => {
                let report = doctor_report(self.peer.ip(), &req);
                self.feed(Input::DoctorAnswered(report));
            }
            Action::RunHook(req) => {
                let r = self.run_hook(&req);
                self.feed(Input::HookRan(r));
            }
            Action::RunOrder(order) => {
                let r = match &self.ctx.cfg.fleet_agent {
                    Some(agent) => agent
                        .take(&order, self.machine.user(), self.ctx.cfg.users.as_deref(), self.peer)
                        .map(Box::new),
                    None => Err((
                        linerate_wire::control::ErrorCode::BadRequest,
                        "this server takes no fleet orders: start it with `linerate serve --auth-users FILE --fleet-agent --fleet-coordinators USER`".into(),
                    )),
                };
                self.feed(Input::OrderRan(r));
            }
            Action::ReadCounters => {
                let snap = sys::devsnap::take();
                self.feed(Input::CountersRead(Box::new(snap)));
            }
            Action::JoinMulticast(j) => self.join_multicast(&j),
            Action::EndMulticast => {
                let report = self.mcast.take().map(McastReceiver::finish);
                self.feed(Input::MulticastEnded(Box::new(report.unwrap_or_default())));
            }
            Action::StoreConnection(i) => {
                if let Some(st) = self.arrived.take() {
                    self.tcp.insert(i, st);
                }
                if let Some(q) = self.arrived_quic.take() {
                    self.quic.insert(i, q);
                }
            }
            Action::AddConnection(i) => {
                if let (Some(st), Some(e)) = (self.arrived.take(), &self.engine) {
                    e.add_connection(i, st);
                }
            }
            Action::SetUpStreams { udp_ports } => match self.set_up_streams(&udp_ports) {
                Ok(()) => self.feed(Input::StreamsSetUp),
                Err((code, msg)) => self.machine.fail(code, msg),
            },
            Action::TakeEarlyHost => self.take_early_host(),
            Action::StartEngine => self.start_engine(),
            Action::FinishEngine { quiet, max_drain } => self.finish_engine(quiet, max_drain),
        }
    }

    /// Waits for the next event or deadline and feeds it; while the UDP hellos are awaited,
    /// reads the stream's socket instead.
    fn wait(&mut self) {
        if let Some((pos, _)) = self.machine.awaited_udp_hello() {
            self.read_udp_hello(pos);
        } else {
            let now = Instant::now();
            let until = earliest(self.machine.poll_timeout(), Some(now + TICK));
            if let Some(ev) = conn::recv_until(&self.rx, until.unwrap_or(now + TICK)) {
                self.on_event(ev);
            }
        }
        if self.engine.is_none()
            && self.ctx.shutdown.load(SeqCst)
            && matches!(
                self.machine.phase(),
                Phase::AwaitHookRequest { .. }
                    | Phase::AwaitCountersRequest { .. }
                    | Phase::ReceivingMulticast { .. }
            )
        {
            self.feed(Input::ShuttingDown);
        }
        if let Some(e) = &self.engine {
            let status = EngineStatus {
                has_senders: e.has_senders(),
                senders_done: e.senders_done(),
            };
            if self.ctx.shutdown.load(SeqCst) {
                self.feed(Input::ShuttingDown);
            }
            self.feed(Input::EngineStatus(status));
        }
        self.machine.handle_timeout(Instant::now());
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Ctl(i) => {
                self.took();
                self.feed(Input::Received(i))
            }
            Event::Data(i, st) => {
                self.arrived = Some(st);
                self.feed(Input::DataConnection(i));
                self.pump();
            }
            Event::Quic(i, q) => {
                self.arrived_quic = Some(q);
                self.feed(Input::DataConnection(i));
                self.pump();
            }
            Event::Interval(iv) => self.interval(iv),
        }
    }

    /// An interval of this end's engine: counted for `--metrics`, then fed to the machine.
    fn interval(&mut self, iv: linerate_wire::report::IntervalReport) {
        if let Some(m) = &self.ctx.cfg.metrics {
            m.interval(&self.id, &iv);
        }
        self.feed(Input::EngineInterval(iv));
    }

    /// Reads the socket of the UDP stream at `pos` for up to one tick and feeds what came,
    /// then whatever the control connection delivered meanwhile.
    fn read_udp_hello(&mut self, pos: usize) {
        let Some(DataSocket::Udp(u)) = self.setups.get(pos).map(|s| &s.socket) else {
            return self
                .machine
                .fail(ErrorCode::Internal, "UDP stream missing".into());
        };
        let u = u.clone();
        let left = self
            .machine
            .poll_timeout()
            .map(|d| d.saturating_duration_since(Instant::now()));
        let wait = left.unwrap_or(TICK).clamp(Duration::from_millis(1), TICK);
        if u.set_read_timeout(Some(wait)).is_err() {
            return self
                .machine
                .fail(ErrorCode::Internal, "UDP socket time-out".into());
        }
        let mut buf = [0u8; 2048];
        match u.recv_from(&mut buf) {
            Ok((n, src)) => {
                let src = SocketAddr::new(sockets::canonical(src.ip()), src.port());
                let data = buf[..n].to_vec();
                self.feed(Input::UdpDatagram { from: src, data });
            }
            Err(e) if crate::engine::stream::is_timeout(&e) => {}
            // An ICMP error from an earlier send: nothing to do with the proof.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => self
                .machine
                .fail(ErrorCode::Internal, format!("UDP socket: {e}")),
        }
        while let Ok(ev) = self.rx.try_recv() {
            self.on_event(ev);
        }
    }

    /// Counts the test against `--max-tests` and books it in the server's budget of streams
    /// and buffers, registers its token, starts its capture.
    /// A multicast join is a test: it takes one of `--max-tests`, then the group is
    /// joined on the interface the control connection arrived on.
    fn join_multicast(&mut self, j: &linerate_wire::multicast::McastJoin) {
        let (ctx, cfg) = (self.ctx, &self.ctx.cfg);
        if ctx.active_tests.fetch_add(1, SeqCst) >= cfg.max_tests {
            ctx.active_tests.fetch_sub(1, SeqCst);
            let max = cfg.max_tests;
            let why = format!(
                "the server runs its maximum of {max} tests at once; retry later (linerate serve --max-tests)"
            );
            return self.feed(Input::MulticastJoined(Err((ErrorCode::Busy, why))));
        }
        self.counted = true;
        if let Some(m) = &ctx.cfg.metrics {
            m.test_started();
        }
        let r = multicast::start(j, self.local).map(|(rx, joined)| {
            self.mcast = Some(rx);
            joined
        });
        self.feed(Input::MulticastJoined(r));
    }

    fn admit(&mut self) {
        let (ctx, cfg) = (self.ctx, &self.ctx.cfg);
        if ctx.active_tests.fetch_add(1, SeqCst) >= cfg.max_tests {
            ctx.active_tests.fetch_sub(1, SeqCst);
            let max = cfg.max_tests;
            return self.machine.fail(ErrorCode::Busy, format!(
                "the server runs its maximum of {max} tests at once; retry later (linerate serve --max-tests)"
            ));
        }
        self.counted = true;
        if let Some(m) = &ctx.cfg.metrics {
            m.test_started();
        }
        if let Some(spec) = self.machine.spec() {
            let cost = limits::cost(spec);
            let booked = match ctx.budget_used.lock() {
                Ok(mut used) => limits::reserve(&mut used, cost, &cfg.budget),
                Err(_) => Err((ErrorCode::Internal, "budget unavailable".into())),
            };
            match booked {
                Ok(()) => {
                    ctx.expect_data(self.peer.ip(), cost.streams, true);
                    self.cost = Some(cost);
                }
                Err((code, why)) => return self.machine.fail(code, why),
            }
        }
        let mut token = [0u8; 16];
        if let Err(e) = getrandom::getrandom(&mut token) {
            let e = format!("no randomness for a token: {e}");
            return self.machine.fail(ErrorCode::Internal, e);
        }
        if let Ok(mut r) = ctx.registry.lock() {
            let route = Route {
                session: self.tx.clone(),
                crr: None,
            };
            r.insert(token, route);
        }
        self.token = Some(token);
        let crr_port = self.open_crr_port();
        if let Some(spec) = self.machine.spec() {
            // At the server the filter is the client's address and the server's port.
            let filter = SocketAddr::new(self.peer.ip(), ctx.port);
            self.capture = capture::start(spec, cfg.allow_capture, filter, &self.id);
        }
        let quic = match self.open_quic(token) {
            Ok(q) => q,
            Err(e) => return self.machine.fail(ErrorCode::Internal, e),
        };
        self.feed(Input::Admitted {
            token,
            crr_port,
            quic,
        });
    }

    /// TCP_CRR: a listener of the test's own on the control connection's address (the
    /// kernel picks the port), where the engine's threads accept the test's connections
    /// themselves. None, so that the one port serves them as it always can, for other
    /// tests, with `serve --one-port`, with a capture (it filters on the one port), for a
    /// client without feature `crr_port`, or when the listener cannot be opened (logged).
    fn open_crr_port(&mut self) -> Option<u16> {
        let spec = self.machine.spec()?;
        let per_transaction = spec.rr.as_ref().is_some_and(|r| r.connect_per_transaction);
        if !per_transaction
            || self.ctx.cfg.one_port
            || spec.capture_snaplen.is_some()
            || !self
                .machine
                .features()
                .has(linerate_wire::control::Feature::CrrPort)
        {
            return None;
        }
        let opts = sockets::SockOpts::server(spec);
        let opened = self.w.stream().local_addr().and_then(|a| {
            let a = SocketAddr::new(sockets::canonical(a.ip()), 0);
            let l = sys::listen::test_listener(a, &opts)?;
            Ok((l.local_addr()?.port(), l))
        });
        match opened {
            Ok((port, l)) => {
                self.crr_listener = Some(l);
                Some(port)
            }
            Err(e) => {
                let line = format!(
                    "{}: no port of its own for a TCP_CRR test ({e}); it uses the one port",
                    self.peer
                );
                log(self.ctx, self.peer, &line);
                None
            }
        }
    }

    /// A QUIC test: its own endpoint on the control connection's address (the kernel picks
    /// the port), which takes the test's connections and no more, and hands each stream
    /// that carried the token to this session.
    fn open_quic(&mut self, token: [u8; 16]) -> Result<Option<control::QuicOffer>, String> {
        let Some(spec) = self.machine.spec() else {
            return Ok(None);
        };
        if spec.transport != control::Transport::Quic {
            return Ok(None);
        }
        let adm = quic::Admission {
            token,
            connections: spec.quic_connections.unwrap_or(1).max(1),
            streams: u16::try_from(crate::model::plan::stream_slots(spec, Role::Server).len())
                .unwrap_or(u16::MAX),
        };
        let tx = self.tx.clone();
        let deliver: quic::Deliver = Arc::new(move |i, q| {
            let _ = tx.send(Event::Quic(i, q));
        });
        let ip = self
            .w
            .stream()
            .local_addr()
            .map_err(|e| e.to_string())?
            .ip();
        let (server, offer) = quic::QuicServer::open(sockets::canonical(ip), adm, deliver)?;
        self.quic_server = Some(server);
        Ok(Some(offer))
    }

    fn set_up_streams(&mut self, udp_ports: &[u16]) -> Result<(), (ErrorCode, String)> {
        let Some(spec) = self.machine.spec().cloned() else {
            return Err((ErrorCode::Internal, "no test to set up".into()));
        };
        let local = self.w.stream().local_addr();
        let local = local.map_err(|e| (ErrorCode::Internal, e.to_string()))?;
        let ends = Ends {
            local: SocketAddr::new(sockets::canonical(local.ip()), self.ctx.port),
            peer_ip: sockets::canonical(self.peer.ip()),
        };
        if spec.transport == linerate_wire::control::Transport::Udp {
            let token = self.token.unwrap_or_default();
            data_sockets::claim_udp_peers(self.ctx, ends.peer_ip, udp_ports, &token)?;
        }
        let arrived = data_sockets::Arrived {
            tcp: &mut self.tcp,
            quic: &mut self.quic,
        };
        self.setups = data_sockets::set_up(&spec, &ends, arrived, udp_ports)?;
        Ok(())
    }

    fn take_early_host(&mut self) {
        let peer = self.setups.first().and_then(|st| match &st.socket {
            DataSocket::Udp(u) => u.peer_addr().ok(),
            DataSocket::Tcp(t) => t.peer_addr().ok(),
            DataSocket::Quic(q) => q.peer_addr().ok(),
        });
        let iface = peer.and_then(|p| sys::iface::route_interface(p.ip()).ok());
        self.early_host = Some(sys::hostsnap::HostSnapshot::take(iface.as_deref()).0);
    }

    fn start_engine(&mut self) {
        let Some(mut spec) = self.machine.spec().cloned() else {
            return;
        };
        if !self.ctx.cfg.allow_profile {
            spec.profile = None;
        }
        let tx = self.tx.clone();
        let sink = move |iv| {
            let _ = tx.send(Event::Interval(iv));
        };
        let crr_listener = match (self.crr_listener.take(), self.token) {
            (Some(listener), Some(token)) => {
                Some(Arc::new(crate::rr::CrrListener { listener, token }))
            }
            _ => None,
        };
        let links = StartLinks {
            crr: None,
            crr_listener,
            control: self.w.stream().try_clone().ok().map(Arc::new),
            early_host: self.early_host.take(),
        };
        let setups = std::mem::take(&mut self.setups);
        match Running::start(Role::Server, &spec, spec.server_cpu, setups, links, sink) {
            Ok(e) => {
                if let (Some(inbox), Some(t)) = (e.crr_inbox(), self.token) {
                    if let Some(route) = self
                        .ctx
                        .registry
                        .lock()
                        .ok()
                        .as_mut()
                        .and_then(|r| r.get_mut(&t))
                    {
                        route.crr = Some(inbox);
                    }
                }
                self.engine = Some(e);
                self.fleet_start(&spec);
            }
            Err(e) => {
                let e = format!("cannot start threads: {e}");
                self.machine.fail(ErrorCode::Internal, e);
            }
        }
    }

    /// A fleet agent logs a fleet order's test whose data runs here (as destination), as
    /// the source logs its own (`session::server::order`): `fleet: test ID start at=TIME
    /// role=destination peer=IP user=USER` (the peer's IPv4 address as such, not mapped into
    /// IPv6 by a server bound to `::`), so its own log shows when it was busy. The id
    /// comes from the peer: clipped, and anything but letters, digits and `._:-` replaced.
    fn fleet_start(&mut self, spec: &control::TestSpec) {
        if self.ctx.cfg.fleet_agent.is_none() {
            return;
        }
        let Some(id) = spec.fleet_order.as_deref() else {
            return;
        };
        let id: String = id
            .chars()
            .take(control::MAX_FLEET_ORDER_LOGGED)
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._:-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let user = self.machine.user().unwrap_or("-");
        eprintln!(
            "fleet: test {id} start at={} role=destination peer={} user={}",
            super::order::now_rfc3339(),
            sockets::canonical(self.peer.ip()),
            linerate_wire::text::clip(user, 64).replace(' ', "_"),
        );
        self.fleet_order = Some(id);
    }

    /// The end line of [`Session::fleet_start`]'s test, once.
    fn fleet_end(&mut self, status: &str) {
        if let Some(id) = self.fleet_order.take() {
            eprintln!(
                "fleet: test {id} end at={} role=destination peer={} status={status}",
                super::order::now_rfc3339(),
                sockets::canonical(self.peer.ip())
            );
        }
    }

    /// Stops and finishes the engine, feeds the intervals it left and its report with the
    /// capture (a session that failed ignores them).
    fn finish_engine(&mut self, quiet: Duration, max_drain: Duration) {
        let Some(mut engine) = self.engine.take() else {
            return;
        };
        engine.stop_senders();
        let (mut report, _) = engine.finish(quiet, max_drain);
        let asked = self.machine.spec().is_some_and(|s| s.profile.is_some());
        if asked && !self.ctx.cfg.allow_profile {
            report.warnings.push(
                "--profile: this server does not allow profiles: start it with `linerate serve --allow-profile`"
                    .into(),
            );
        }
        // Control messages that came meanwhile are late, data connections are closed; but
        // a client that closed or broke the connection is gone, which the machine must
        // know once it waits for its results (rather than wait for them in vain).
        let mut gone = None;
        while let Ok(ev) = self.rx.try_recv() {
            match ev {
                Event::Interval(iv) => self.interval(iv),
                Event::Ctl(i) => {
                    self.took();
                    if !matches!(i, Incoming::Msg(_)) {
                        gone = Some(i);
                    }
                }
                Event::Data(..) | Event::Quic(..) => {}
            }
        }
        let capture = self.capture.as_mut().map(capture::finish);
        if let Some(m) = &self.ctx.cfg.metrics {
            m.test_finished(&report);
        }
        self.fleet_end("ok");
        let report = Box::new(report);
        self.feed(Input::EngineFinished { report, capture });
        if let Some(i) = gone {
            self.feed(Input::Received(i));
        }
    }

    /// Checks a client's hook request against `--hooks` and runs it (no shell, the hook's
    /// time-out); remembers its restore command for the session's end.
    fn run_hook(&mut self, req: &HookRequest) -> Result<HookResult, String> {
        let set = self.ctx.cfg.hooks.clone().unwrap_or_default();
        let inv = set.invocation(&req.name, &req.params)?;
        let o = sys::command::run(&inv.argv, inv.timeout);
        if let Some(r) = inv.restore {
            if !self.restores.iter().any(|(n, _)| *n == inv.name) {
                self.restores.push((inv.name.clone(), r));
            }
        }
        let (id, peer) = (&self.id, self.peer);
        let status = match (o.exit_code, o.timed_out) {
            (_, true) => "timed out".to_string(),
            (Some(c), _) => format!("exit {c}"),
            (None, _) => "did not run".to_string(),
        };
        log_always(
            self.ctx,
            &format!(
                "[{id}] {peer} hook {}: {} ({status})",
                inv.name,
                inv.argv.join(" ")
            ),
        );
        Ok(HookResult {
            name: inv.name,
            argv: inv.argv,
            exit_code: o.exit_code,
            timed_out: o.timed_out,
            stdout: o.stdout,
            stderr: o.stderr,
            duration_ms: u64::try_from(o.elapsed.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Runs the restore command of every hook that ran, the last one first.
    fn restore_hooks(&mut self) {
        let (id, peer) = (self.id.clone(), self.peer);
        while let Some((name, argv)) = self.restores.pop() {
            let o = sys::command::run(&argv, hooks::DEFAULT_TIMEOUT);
            let status = match (o.exit_code, o.timed_out) {
                (Some(0), false) => "ok".to_string(),
                (_, true) => "timed out".to_string(),
                (Some(c), _) => format!("exit {c}: {}", o.stderr.lines().next().unwrap_or("")),
                (None, _) => format!("did not run: {}", o.stderr.lines().next().unwrap_or("")),
            };
            log_always(
                self.ctx,
                &format!(
                    "[{id}] {peer} restore {name}: {} ({status})",
                    argv.join(" ")
                ),
            );
        }
    }

    /// Frees what the test held (token, UDP ports, its place among `--max-tests`, a capture
    /// it did not get to return), restores what its hooks changed, logs the session's line
    /// and closes.
    fn end(mut self) {
        self.restore_hooks();
        if let Some(e) = self.engine.take() {
            let _ = e.finish(Duration::ZERO, Duration::from_millis(200));
        }
        self.fleet_end("ended_early");
        if let Some(c) = self.capture.as_mut() {
            let _ = capture::finish(c);
        }
        let ctx = self.ctx;
        if self.in_handshake {
            ctx.leave_handshake(sockets::canonical(self.peer.ip()));
        }
        if let Some(c) = self.cost.take() {
            if let Ok(mut used) = ctx.budget_used.lock() {
                limits::release(&mut used, c);
            }
            ctx.expect_data(self.peer.ip(), c.streams, false);
        }
        if let Some(t) = self.token {
            if let Ok(mut r) = ctx.registry.lock() {
                r.remove(&t);
            }
            if let Ok(mut u) = ctx.udp_peers.lock() {
                u.retain(|_, owner| *owner != t);
            }
        }
        if self.counted {
            ctx.active_tests.fetch_sub(1, SeqCst);
            if ctx.cfg.one_off {
                ctx.shutdown.store(true, SeqCst);
            }
        }
        let who = self
            .machine
            .user()
            .map_or(String::new(), |u| format!(" user {u}"));
        let (id, peer) = (&self.id, self.peer);
        if let Some(m) = &ctx.cfg.metrics {
            let ok = !matches!(self.machine.outcome(), Some(Err(_)));
            m.session_ended(id, self.counted, ok);
        }
        match self.machine.outcome() {
            Some(Ok(line)) => log(ctx, peer, &format!("[{id}] {peer}{who} {line}")),
            Some(Err(why)) => log(ctx, peer, &format!("[{id}] {peer}{who} ended: {why}")),
            None => log(ctx, peer, &format!("[{id}] {peer}{who} ended")),
        }
        self.w.close();
    }
}

/// This host's findings for a client's `doctor_request`, checked toward the client. What
/// could not be read travels as findings: the client prints findings only.
fn doctor_report(peer: IpAddr, req: &DoctorRequest) -> DoctorReport {
    let target = crate::doctor::checks::Target {
        buffer_bytes: req.buffer_bytes.unwrap_or(sockets::UDP_DEFAULT_RCVBUF),
        rtt_us: req.rtt_us,
        // The request carries no TCP_CRR rate: the server's finding gives the rate its
        // table holds.
        crr_tps: None,
    };
    let (mut report, warnings) =
        crate::doctor::local_report(Some(sockets::canonical(peer)), &target);
    report
        .findings
        .extend(warnings.into_iter().map(|w| Finding {
            severity: Severity::Info,
            check: "doctor.unreadable".into(),
            what: w,
            value: None,
            fix: None,
        }));
    report.findings.truncate(MAX_FINDINGS);
    report
}
