//! The server's side of the control protocol, without I/O.
//!
//! ```text
//! AwaitHello ─► [AwaitAuth ─► CheckingAuth ─► (AuthFailing)] ─► AwaitRequest ─┬─► Admitting ─► CollectStreams
//!     ─► SetUpStreams ─► [AwaitUdpHellos] ─► Running ─► Draining ─► AwaitResults ─► Done
//!                                                               ├─► AnsweringDoctor ─► Done
//!                                     (feature hooks)          ├─► RunningHook ─► AwaitHookRequest
//!                                                              │    ▲──────────────────┘ (closed: Done)
//!                           (feature device_counters)          └─► ReadingCounters ─► AwaitCountersRequest
//!                                                                   ▲──────────────────┘ (closed: Done)
//!                           (feature multicast)                └─► JoiningMulticast ─► ReceivingMulticast
//!                                                                   ─► EndingMulticast ─► Done
//! any phase ─► Failed
//! ```
//!
//! What needs the server's shared state (the count of running tests, the token registry,
//! the UDP port claims) or the system (sockets, captures, engines, the doctor's readings)
//! is an action for the driver, which answers with an input (`Admitted`, `StreamsSetUp`,
//! `EngineFinished`, ...) or refuses with [`ServerMachine::fail`].

use std::collections::{BTreeSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    self, negotiate, Accept, AuthChallenge, AuthOk, Done, ErrorCode, ErrorMsg, Feature, Features,
    Finished, IntervalMsg, Message, ProtocolVersion, Reject, Results, ReturnedCapture,
    ServerLimits, Start, TestSpec, Transport, Welcome,
};
use linerate_wire::device::DeviceSnapshot;
use linerate_wire::doctor::{DoctorReport, DoctorRequest, MAX_FINDINGS};
use linerate_wire::fleet::{FleetOrder, FleetReport};
use linerate_wire::hooks::{HookRequest, HookResult, MAX_OUTPUT};
use linerate_wire::multicast::{McastJoin, McastJoined, McastReport};
use linerate_wire::report::{IntervalReport, Role, SideReport};
use linerate_wire::stream_hello::{self, StreamHello};

use super::{Incoming, AUTH_FAIL_DELAY, HARD_STOP_GRACE, SERVER_RESULTS};
use crate::model::plan::stream_slots;
use crate::session::protocol::auth::{self, Prover, Users, NONCE_LEN};
use crate::session::server::policy::limits::check_request;

/// What the server machine needs besides the messages.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Limits sent in `welcome` and enforced.
    pub limits: ServerLimits,
    /// Time for `hello`, `auth`, the data connections and the UDP hellos.
    pub handshake_timeout: Duration,
    /// Time between `welcome` and `test_request`.
    pub idle_timeout: Duration,
    /// The server's port, for messages.
    pub port: u16,
    /// The server's CPUs (`server_cpu` must be below, `accept` tells the client).
    pub cpu_count: u32,
    /// This session's id, for `welcome` and the log.
    pub session_id: String,
    /// "linerate x.y.z", for `welcome`.
    pub software: String,
    /// Longest frame body the server sends.
    pub max_frame: u32,
    /// The client's address (canonical: IPv4-mapped addresses as IPv4).
    pub peer_ip: IpAddr,
    /// Users allowed to run tests (`--auth-users`).
    pub users: Option<Arc<Users>>,
    /// This session's nonce for the challenge, or why there is none.
    pub nonce: Result<[u8; NONCE_LEN], String>,
    /// Refuse the session after `hello` with this code and text (the server is busy: too
    /// many sessions of this address in their handshake).
    pub refuse: Option<(ErrorCode, String)>,
}

/// Where the server is in the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Waiting for `hello`.
    AwaitHello {
        /// When to give up.
        deadline: Instant,
    },
    /// `welcome` with a challenge sent; waiting for `auth`.
    AwaitAuth {
        /// When to give up.
        deadline: Instant,
        /// The challenge's nonce.
        nonce: [u8; NONCE_LEN],
    },
    /// `auth` came; the driver asks the server's limiter whether this address and user
    /// may try now ([`Action::CheckAuth`]).
    CheckingAuth {
        /// The challenge's nonce.
        nonce: [u8; NONCE_LEN],
        /// What the client answered.
        response: control::AuthResponse,
    },
    /// A failed authentication is answered late, so that guessing is slow.
    AuthFailing {
        /// When to answer.
        until: Instant,
        /// Who tried, for the log.
        user: String,
        /// Why the attempt was refused without a check (too many failures), if it was.
        refused: Option<String>,
    },
    /// Waiting for `test_request` or `doctor_request`.
    AwaitRequest {
        /// When to give up.
        deadline: Instant,
    },
    /// The driver admits the test ([`Action::Admit`]).
    Admitting,
    /// The driver gathers the findings ([`Action::AnswerDoctor`]).
    AnsweringDoctor,
    /// The driver runs a declared hook ([`Action::RunHook`]).
    RunningHook,
    /// The driver runs an ordered third-party test ([`Action::RunOrder`]).
    RunningOrder,
    /// A hook ran; waiting for the next `hook_request`, or for the client to close (then
    /// the driver restores what the hooks changed).
    AwaitHookRequest {
        /// When to give up (and restore).
        deadline: Instant,
    },
    /// The driver reads this host's counters ([`Action::ReadCounters`]).
    ReadingCounters,
    /// A snapshot was sent; waiting for the next `counters_request`, or for the client to
    /// close.
    AwaitCountersRequest {
        /// When to give up.
        deadline: Instant,
    },
    /// The driver joins the group of `mcast_join` ([`Action::JoinMulticast`]).
    JoiningMulticast,
    /// `mcast_joined` sent; the driver's receiver counts; waiting for `mcast_stop`.
    ReceivingMulticast {
        /// When the client has sent past its duration and the server's grace.
        deadline: Instant,
    },
    /// The driver stops the receiver and leaves the group ([`Action::EndMulticast`]).
    EndingMulticast,
    /// `accept` sent; waiting for the data connections and `streams_ready`.
    CollectStreams {
        /// When to give up.
        deadline: Instant,
        /// The UDP ports of `streams_ready`, once it came.
        ready: Option<Vec<u16>>,
        /// The TCP data connections that arrived, by stream index.
        tcp: BTreeSet<u16>,
    },
    /// The driver claims the UDP ports and sets up the sockets ([`Action::SetUpStreams`]).
    SetUpStreams {
        /// The data connections' deadline, which the UDP hellos share.
        deadline: Instant,
    },
    /// Waiting for each UDP stream's hello from its client port (protocol 1.3).
    AwaitUdpHellos {
        /// When to give up.
        deadline: Instant,
        /// Position of the stream waited for in the list of UDP streams.
        next: usize,
    },
    /// The engine runs; waiting for `stop`.
    Running {
        /// When the test has run past the server's limit.
        hard_stop: Instant,
        /// `finished` was sent.
        finished_sent: bool,
    },
    /// The driver stops and finishes the engine ([`Action::FinishEngine`]).
    Draining,
    /// Our results sent; waiting for the client's.
    AwaitResults {
        /// When to give up.
        deadline: Instant,
    },
    /// The session ended as the protocol says ([`ServerMachine::outcome`]).
    Done,
    /// The session ended early ([`ServerMachine::outcome`]).
    Failed,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this message.
    Send(Message),
    /// Close the control connection.
    Close,
    /// Count the test, make its token, register it, start the capture it asks for; then
    /// feed [`Input::Admitted`] or call [`ServerMachine::fail`] (busy, no randomness).
    Admit,
    /// Ask the server's limiter whether this address may try to authenticate as `user`
    /// now, counting the attempt as a failure until it succeeds; then feed
    /// [`Input::AuthChecked`].
    CheckAuth {
        /// The user name the client gave.
        user: String,
    },
    /// The attempt passed: take back the failure [`Action::CheckAuth`] counted.
    AuthSucceeded {
        /// The user name the client gave.
        user: String,
    },
    /// Read this host's settings for the client; then feed [`Input::DoctorAnswered`].
    AnswerDoctor(DoctorRequest),
    /// Check the request against the declared hooks and run it; then feed
    /// [`Input::HookRan`].
    RunHook(HookRequest),
    /// Take the fleet order (as the session's user): refuse it or run it; then feed
    /// [`Input::OrderRan`].
    RunOrder(FleetOrder),
    /// Read this host's counters for the device-counters session; then feed
    /// [`Input::CountersRead`].
    ReadCounters,
    /// Count the join as a test, join the group on the control connection's interface
    /// and start counting; then feed [`Input::MulticastJoined`].
    JoinMulticast(McastJoin),
    /// Stop counting and leave the group; then feed [`Input::MulticastEnded`].
    EndMulticast,
    /// Keep the data connection just fed, for stream `index`.
    StoreConnection(u16),
    /// Hand the data connection just fed to the running engine (TCP_CRR).
    AddConnection(u16),
    /// Claim these client UDP ports for the test and set up the data sockets in stream
    /// order; then feed [`Input::StreamsSetUp`] or fail.
    SetUpStreams {
        /// The client's UDP port of each UDP stream (empty for TCP).
        udp_ports: Vec<u16>,
    },
    /// Take this end's host counters now, before the client can start sending.
    TakeEarlyHost,
    /// Start the engine (or fail with `internal`).
    StartEngine,
    /// Stop the senders and finish the engine; in a session that goes on, then feed the
    /// intervals left and [`Input::EngineFinished`].
    FinishEngine {
        /// Quiet time the receivers wait for late data.
        quiet: Duration,
        /// Longest drain.
        max_drain: Duration,
    },
}

/// What the driver feeds in.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// From the control connection.
    Received(Incoming),
    /// A TCP data connection of this test, for stream `index`.
    DataConnection(u16),
    /// The limiter's answer to [`Action::CheckAuth`]: `Err` says why not now.
    AuthChecked(Result<(), String>),
    /// The test is admitted with this token.
    Admitted {
        /// The test's token.
        token: [u8; 16],
        /// TCP_CRR: the port the driver listens on for the test's connections (feature
        /// `crr_port`), if it opened one.
        crr_port: Option<u16>,
        /// A QUIC test: the UDP port the driver opened for it and its certificate's hash.
        quic: Option<control::QuicOffer>,
    },
    /// This host's findings.
    DoctorAnswered(DoctorReport),
    /// The hook ran, or the reason it was refused (not declared, a value out of range).
    HookRan(Result<HookResult, String>),
    /// The ordered test ran, or the agent refused the order (the error's code and text).
    OrderRan(Result<Box<FleetReport>, (ErrorCode, String)>),
    /// This host's counters, for `counters_snapshot`.
    CountersRead(Box<DeviceSnapshot>),
    /// The group is joined, or why not (busy, no such interface, the kernel's refusal).
    MulticastJoined(Result<McastJoined, (ErrorCode, String)>),
    /// What the multicast receiver counted.
    MulticastEnded(Box<McastReport>),
    /// The data sockets are set up.
    StreamsSetUp,
    /// A datagram on the socket of the UDP stream waited for.
    UdpDatagram {
        /// Its source (canonical address).
        from: SocketAddr,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// One interval of the engine.
    EngineInterval(IntervalReport),
    /// The engine's state.
    EngineStatus(EngineStatus),
    /// The server is shutting down.
    ShuttingDown,
    /// The engine's report and the server's capture.
    EngineFinished {
        /// The report (its intervals come as `EngineInterval`s).
        report: Box<SideReport>,
        /// The capture, when the request asked for one.
        capture: Option<ReturnedCapture>,
    },
    /// Sending a message failed.
    SendFailed {
        /// The message's type name.
        message: &'static str,
        /// The error.
        error: String,
    },
}

/// The engine's state as `finished` needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStatus {
    /// This end has sending streams.
    pub has_senders: bool,
    /// All of them ended by themselves.
    pub senders_done: bool,
}

/// The server's protocol state for one control connection.
#[derive(Debug)]
pub struct ServerMachine {
    cfg: ServerSettings,
    phase: Phase,
    actions: VecDeque<Action>,
    features: Features,
    user: Option<String>,
    spec: Option<TestSpec>,
    token: Option<[u8; 16]>,
    /// The UDP streams: index and the client's address, in stream order.
    udp_streams: Vec<(u16, SocketAddr)>,
    engine_running: bool,
    interrupted: bool,
    intervals: Vec<IntervalReport>,
    outcome: Option<Result<String, String>>,
    hooks_run: u32,
    snapshots_sent: u32,
    /// The group joined (feature `multicast`) and the datagrams the client says it sent.
    mcast: Option<(McastJoin, u64)>,
}

impl ServerMachine {
    /// A session on a new control connection.
    pub fn new(cfg: ServerSettings, now: Instant) -> ServerMachine {
        let deadline = now + cfg.handshake_timeout;
        ServerMachine {
            cfg,
            phase: Phase::AwaitHello { deadline },
            actions: VecDeque::new(),
            features: Features::NONE,
            user: None,
            spec: None,
            token: None,
            udp_streams: Vec::new(),
            engine_running: false,
            interrupted: false,
            intervals: Vec::new(),
            outcome: None,
            hooks_run: 0,
            snapshots_sent: 0,
            mcast: None,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The next action, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next deadline, if the phase has one.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.phase {
            Phase::AwaitHello { deadline }
            | Phase::AwaitAuth { deadline, .. }
            | Phase::AwaitRequest { deadline }
            | Phase::AwaitHookRequest { deadline }
            | Phase::AwaitCountersRequest { deadline }
            | Phase::ReceivingMulticast { deadline }
            | Phase::CollectStreams { deadline, .. }
            | Phase::AwaitUdpHellos { deadline, .. }
            | Phase::AwaitResults { deadline } => Some(*deadline),
            Phase::AuthFailing { until, .. } => Some(*until),
            Phase::Running { hard_stop, .. } => Some(*hard_stop),
            _ => None,
        }
    }

    /// The test's spec, once requested and valid.
    pub fn spec(&self) -> Option<&TestSpec> {
        self.spec.as_ref()
    }

    /// The test's token, once admitted.
    pub fn token(&self) -> Option<[u8; 16]> {
        self.token
    }

    /// The authenticated user, for the log.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The features both ends offer.
    pub fn features(&self) -> Features {
        self.features
    }

    /// While waiting for UDP hellos: the position of the stream waited for (in stream
    /// order) and the client address its hello must come from.
    pub fn awaited_udp_hello(&self) -> Option<(usize, SocketAddr)> {
        match self.phase {
            Phase::AwaitUdpHellos { next, .. } => self.udp_streams.get(next).map(|s| (next, s.1)),
            _ => None,
        }
    }

    /// How the session ended: the log line, or why it ended early.
    pub fn outcome(&self) -> Option<&Result<String, String>> {
        self.outcome.as_ref()
    }

    /// Whether the session is still in its handshake (before a test or doctor request):
    /// such sessions are limited per address.
    pub fn in_handshake(&self) -> bool {
        matches!(
            self.phase,
            Phase::AwaitHello { .. }
                | Phase::AwaitAuth { .. }
                | Phase::CheckingAuth { .. }
                | Phase::AuthFailing { .. }
                | Phase::AwaitRequest { .. }
        )
    }

    /// Whether the session is over.
    pub fn is_over(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed)
    }

    fn push(&mut self, a: Action) {
        self.actions.push_back(a);
    }

    fn send(&mut self, m: Message) {
        self.push(Action::Send(m));
    }

    /// Ends the session with an `error` to the client (code and text) and closes.
    pub fn fail(&mut self, code: ErrorCode, message: String) {
        if self.is_over() {
            return;
        }
        self.actions.clear();
        self.send(Message::Error(ErrorMsg {
            code,
            message: message.clone(),
        }));
        self.end(Err(message));
    }

    /// Ends the session without a word to the client (it is gone, or cannot be written to).
    fn abort(&mut self, why: String) {
        self.actions.clear();
        self.end(Err(why));
    }

    fn end(&mut self, outcome: Result<String, String>) {
        self.push(Action::Close);
        if self.engine_running && outcome.is_err() {
            self.engine_running = false;
            self.push(Action::FinishEngine {
                quiet: Duration::ZERO,
                max_drain: Duration::from_millis(200),
            });
        }
        self.phase = if outcome.is_ok() {
            Phase::Done
        } else {
            Phase::Failed
        };
        self.outcome = Some(outcome);
    }

    /// Feeds one input.
    pub fn handle(&mut self, now: Instant, input: Input) {
        if self.is_over() {
            return;
        }
        match input {
            Input::Received(i) => self.on_received(now, i),
            Input::AuthChecked(verdict) => self.on_auth_checked(now, verdict),
            Input::DataConnection(i) => self.on_data_connection(i),
            Input::Admitted {
                token,
                crr_port,
                quic,
            } => self.on_admitted(now, token, crr_port, quic),
            Input::DoctorAnswered(r) => self.on_doctor_answered(r),
            Input::HookRan(r) => self.on_hook_ran(now, r),
            Input::OrderRan(r) => self.on_order_ran(r),
            Input::CountersRead(snap) => self.on_counters_read(now, *snap),
            Input::MulticastJoined(r) => self.on_mcast_joined(now, r),
            Input::MulticastEnded(r) => self.on_mcast_ended(*r),
            Input::StreamsSetUp => self.on_streams_set_up(now),
            Input::UdpDatagram { from, data } => self.on_udp_datagram(now, from, &data),
            Input::EngineInterval(iv) => self.on_interval(iv),
            Input::EngineStatus(s) => self.on_engine_status(s),
            Input::ShuttingDown => {
                if matches!(self.phase, Phase::AwaitCountersRequest { .. }) {
                    return self.fail(
                        ErrorCode::ShuttingDown,
                        "the server is shutting down: no more device counters".into(),
                    );
                }
                if matches!(self.phase, Phase::ReceivingMulticast { .. }) {
                    return self.fail(
                        ErrorCode::ShuttingDown,
                        "the server is shutting down: it left the multicast group".into(),
                    );
                }
                if matches!(self.phase, Phase::AwaitHookRequest { .. }) {
                    return self.fail(
                        ErrorCode::ShuttingDown,
                        "the server is shutting down; what the hooks changed is restored".into(),
                    );
                }
                if matches!(self.phase, Phase::Running { .. }) {
                    self.fail(
                        ErrorCode::ShuttingDown,
                        "the server is shutting down; the test was cut short".into(),
                    );
                }
            }
            Input::EngineFinished { report, capture } => {
                self.on_engine_finished(now, *report, capture)
            }
            Input::SendFailed { message, error } => {
                // `error`, `reject`, `done`, `interval` and `finished` are fire-and-forget.
                let fatal = ["welcome", "auth_ok", "accept", "start", "results"];
                if fatal.contains(&message)
                    || message == "doctor_report"
                    || message == "hook_result"
                    || message == "fleet_report"
                    || message == "counters_snapshot"
                    || message == "mcast_joined"
                    || message == "mcast_report"
                {
                    self.abort(format!("write failed: {error}"));
                }
            }
        }
    }

    /// Acts on the phase's deadline, if it has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_none_or(|t| now < t) {
            return;
        }
        let port = self.cfg.port;
        match self.phase.clone() {
            Phase::AuthFailing { user, refused, .. } => {
                let user: String = user.chars().take(auth::MAX_USER_LEN).collect();
                match refused {
                    Some(why) => {
                        self.fail(
                            ErrorCode::AuthFailed,
                            format!("authentication refused: {why}"),
                        );
                        self.outcome = Some(Err(format!(
                            "authentication refused for user {user:?}: {why}"
                        )));
                    }
                    None => {
                        // One message for unknown users and wrong secrets: names are not
                        // revealed.
                        self.fail(ErrorCode::AuthFailed, "authentication failed: unknown user or wrong secret (check --auth-user and the secret against the server's --auth-users file)".into());
                        self.outcome =
                            Some(Err(format!("authentication failed for user {user:?}")));
                    }
                }
            }
            Phase::CollectStreams { tcp, .. } => {
                let want = self.layout_len();
                self.fail(ErrorCode::Timeout, format!(
                    "only {} of {want} data connections arrived in time: check that port {port}/tcp is reachable",
                    tcp.len()
                ));
            }
            Phase::AwaitUdpHellos { next, .. } => {
                let (index, peer) = self
                    .udp_streams
                    .get(next)
                    .copied()
                    .unwrap_or((0, SocketAddr::new(self.cfg.peer_ip, 0)));
                self.fail(ErrorCode::Timeout, format!(
                    "no UDP hello for stream {index} arrived from {peer} in time: check that UDP port {port} is reachable from the client (firewall, NAT)"
                ));
            }
            Phase::Running { .. } => match self.spec.as_ref().and_then(|s| s.duration_ms) {
                Some(d) => self.fail(
                    ErrorCode::Timeout,
                    format!(
                        "the test ran {} s past its duration of {:.1} s without a stop from the client: the server ended it",
                        HARD_STOP_GRACE.as_secs(),
                        d as f64 / 1000.0
                    ),
                ),
                None => self.fail(
                    ErrorCode::LimitExceeded,
                    format!(
                        "the test ran past this server's limit of {} s (linerate serve --max-duration)",
                        self.cfg.limits.max_duration_ms / 1000
                    ),
                ),
            },
            phase => {
                let what = awaited(&phase).unwrap_or("message");
                self.fail(ErrorCode::Timeout, format!("no {what} within the time-out"));
            }
        }
    }

    fn on_received(&mut self, now: Instant, i: Incoming) {
        match self.phase {
            Phase::CollectStreams { .. } => return self.on_collect(i),
            Phase::Running { .. } => return self.on_running(i),
            // Answered late whatever comes; the engine's end takes what comes meanwhile.
            Phase::CheckingAuth { .. } | Phase::AuthFailing { .. } | Phase::Draining => return,
            _ => {}
        }
        let what = awaited(&self.phase).unwrap_or("nothing");
        let m = match i {
            Incoming::Msg(m) => m,
            Incoming::Closed if matches!(self.phase, Phase::AwaitHookRequest { .. }) => {
                let n = self.hooks_run;
                return self.end(Ok(format!("hooks: {n} run, then the client closed")));
            }
            Incoming::Closed if matches!(self.phase, Phase::AwaitCountersRequest { .. }) => {
                let n = self.snapshots_sent;
                return self.end(Ok(format!(
                    "device counters: {n} snapshots sent, then the client closed"
                )));
            }
            Incoming::Closed if matches!(self.phase, Phase::AwaitUdpHellos { .. }) => {
                return self.abort("client closed the connection while opening streams".into())
            }
            Incoming::Closed => {
                return self.abort(format!("client closed the connection before {what}"))
            }
            Incoming::Broken(e) => {
                return self.fail(ErrorCode::Protocol, format!("bad frame: {e}"))
            }
        };
        match (&self.phase, m) {
            (Phase::AwaitHello { .. }, Message::Hello(h)) => self.on_hello(now, h),
            (Phase::AwaitAuth { nonce, .. }, Message::Auth(r)) => {
                // The limiter first: a guesser gets no answer about the key once over it.
                let nonce = *nonce;
                self.push(Action::CheckAuth {
                    user: r.user.clone(),
                });
                self.phase = Phase::CheckingAuth { nonce, response: r };
            }
            (Phase::AwaitAuth { .. }, other) => self.fail(
                ErrorCode::AuthRequired,
                format!(
                    "this server requires authentication (got {} before auth): run the client with --auth-user NAME and --auth-secret-file FILE, from linerate with protocol 1.2 or later",
                    other.name()
                ),
            ),
            (Phase::AwaitRequest { .. }, Message::TestRequest(r)) => self.on_request(r.spec),
            (
                Phase::AwaitRequest { .. } | Phase::AwaitHookRequest { .. },
                Message::HookRequest(q),
            ) => self.on_hook_request(q),
            (
                Phase::AwaitRequest { .. } | Phase::AwaitCountersRequest { .. },
                Message::CountersRequest(_),
            ) => self.on_counters_request(),
            (Phase::AwaitRequest { .. }, Message::FleetOrder(o)) => self.on_order(o),
            (Phase::AwaitRequest { .. }, Message::McastJoin(j)) => self.on_mcast_join(j),
            (Phase::ReceivingMulticast { .. }, Message::McastStop(st)) => {
                if let Some((_, sent)) = self.mcast.as_mut() {
                    *sent = st.sent;
                }
                self.push(Action::EndMulticast);
                self.phase = Phase::EndingMulticast;
            }
            (Phase::AwaitRequest { .. }, Message::DoctorRequest(q)) => {
                self.push(Action::AnswerDoctor(q));
                self.phase = Phase::AnsweringDoctor;
            }
            (Phase::AwaitResults { .. }, Message::Results(_)) => {
                self.send(Message::Done(Done {}));
                let line = self.outcome.take().and_then(Result::ok).unwrap_or_default();
                self.end(Ok(line));
            }
            (_, other) => self.fail(
                ErrorCode::Protocol,
                format!("expected {what}, got {}", other.name()),
            ),
        }
    }

    fn on_auth_checked(&mut self, now: Instant, verdict: Result<(), String>) {
        let Phase::CheckingAuth { nonce, response } = self.phase.clone() else {
            return;
        };
        match verdict {
            Ok(()) => self.on_auth(now, &nonce, response),
            Err(why) => {
                self.phase = Phase::AuthFailing {
                    until: now + AUTH_FAIL_DELAY,
                    user: response.user,
                    refused: Some(why),
                }
            }
        }
    }

    fn on_hello(&mut self, now: Instant, h: control::Hello) {
        if let Some((code, why)) = self.cfg.refuse.clone() {
            return self.fail(code, why);
        }
        let Some(version) = negotiate(ProtocolVersion::CURRENT, h.protocol) else {
            let message = format!(
                "client speaks protocol {} and this server {}: use linerate versions with the same major version",
                h.protocol,
                ProtocolVersion::CURRENT
            );
            self.send(Message::Reject(Reject {
                code: ErrorCode::IncompatibleVersion,
                server_protocol: ProtocolVersion::CURRENT,
                message: message.clone(),
            }));
            return self.end(Err(message));
        };
        self.features = offered().intersection(h.feature_set());
        let nonce = match (&self.cfg.users, &self.cfg.nonce) {
            (None, _) => None,
            (Some(_), Ok(n)) => Some(*n),
            (Some(_), Err(e)) => {
                let e = format!("no randomness for a nonce: {e}");
                return self.fail(ErrorCode::Internal, e);
            }
        };
        self.send(Message::Welcome(Welcome {
            protocol: version,
            session_id: self.cfg.session_id.clone(),
            features: self.features.names(),
            software: self.cfg.software.clone(),
            limits: self.cfg.limits.clone(),
            auth: nonce.map(|n| AuthChallenge {
                method: auth::METHOD.to_string(),
                nonce: auth::hex(&n),
            }),
        }));
        self.phase = match nonce {
            Some(nonce) => Phase::AwaitAuth {
                deadline: now + self.cfg.handshake_timeout,
                nonce,
            },
            None => Phase::AwaitRequest {
                deadline: now + self.cfg.idle_timeout,
            },
        };
    }

    fn on_auth(&mut self, now: Instant, nonce: &[u8], r: control::AuthResponse) {
        let client_nonce = auth::unhex(&r.nonce).filter(|n| n.len() == NONCE_LEN);
        let key = self
            .cfg
            .users
            .as_ref()
            .and_then(|u| u.key(&r.user).cloned());
        match (key, client_nonce) {
            (Some(key), Some(cn)) if key.verify(Prover::Client, nonce, &cn, &r.user, &r.mac) => {
                let mac = key.proof(Prover::Server, nonce, &cn, &r.user);
                self.push(Action::AuthSucceeded {
                    user: r.user.clone(),
                });
                self.send(Message::AuthOk(AuthOk { mac }));
                self.user = Some(r.user);
                self.phase = Phase::AwaitRequest {
                    deadline: now + self.cfg.idle_timeout,
                };
            }
            _ => {
                self.phase = Phase::AuthFailing {
                    until: now + AUTH_FAIL_DELAY,
                    user: r.user,
                    refused: None,
                }
            }
        }
    }

    fn on_request(&mut self, spec: TestSpec) {
        if let Err((code, msg)) = check_request(&spec, &self.cfg.limits, self.cfg.cpu_count) {
            return self.fail(code, msg);
        }
        self.spec = Some(spec);
        self.push(Action::Admit);
        self.phase = Phase::Admitting;
    }

    fn on_admitted(
        &mut self,
        now: Instant,
        token: [u8; 16],
        crr_port: Option<u16>,
        quic: Option<control::QuicOffer>,
    ) {
        if self.phase != Phase::Admitting {
            return;
        }
        self.token = Some(token);
        self.send(Message::Accept(Accept {
            token: stream_hello::token_to_hex(&token),
            server_cpu_count: self.cfg.cpu_count,
            crr_port,
            quic,
        }));
        self.phase = Phase::CollectStreams {
            deadline: now + self.cfg.handshake_timeout,
            ready: None,
            tcp: BTreeSet::new(),
        };
        // A UDP test with no stream to wait for is ready at once (never: streams >= 1).
        self.check_collected();
    }

    fn on_doctor_answered(&mut self, mut report: DoctorReport) {
        if self.phase != Phase::AnsweringDoctor {
            return;
        }
        report.findings.truncate(MAX_FINDINGS);
        let n = report.findings.len();
        self.send(Message::DoctorReport(report));
        self.send(Message::Done(Done {}));
        self.end(Ok(format!("doctor: {n} findings sent")));
    }

    fn on_hook_request(&mut self, q: HookRequest) {
        if !self.features.has(Feature::Hooks) {
            return self.fail(
                ErrorCode::Protocol,
                "hook_request without the hooks feature in hello".into(),
            );
        }
        if let Err(e) = q.check_sizes() {
            return self.fail(ErrorCode::BadRequest, e);
        }
        self.push(Action::RunHook(q));
        self.phase = Phase::RunningHook;
    }

    fn on_hook_ran(&mut self, now: Instant, r: Result<HookResult, String>) {
        if self.phase != Phase::RunningHook {
            return;
        }
        match r {
            Ok(mut res) => {
                res.stdout = linerate_wire::hooks::truncate(res.stdout, MAX_OUTPUT);
                res.stderr = linerate_wire::hooks::truncate(res.stderr, MAX_OUTPUT);
                self.send(Message::HookResult(res));
                self.hooks_run += 1;
                // A sweep's point (a test, or several with --repeat) runs between two
                // requests: wait as long as the longest test this server accepts, and more.
                let wait =
                    self.cfg.idle_timeout + Duration::from_millis(self.cfg.limits.max_duration_ms);
                self.phase = Phase::AwaitHookRequest {
                    deadline: now + wait,
                };
            }
            Err(why) => self.fail(ErrorCode::BadRequest, why),
        }
    }

    fn on_order(&mut self, o: FleetOrder) {
        if !self.features.has(Feature::FleetOrders) {
            return self.fail(
                ErrorCode::Protocol,
                "fleet_order without the fleet_orders feature in hello".into(),
            );
        }
        self.push(Action::RunOrder(o));
        self.phase = Phase::RunningOrder;
    }

    fn on_order_ran(&mut self, r: Result<Box<FleetReport>, (ErrorCode, String)>) {
        if self.phase != Phase::RunningOrder {
            return;
        }
        match r {
            Ok(report) => {
                let line = format!(
                    "fleet: ordered test {} {}",
                    report.id,
                    if report.error.is_none() {
                        "ran"
                    } else {
                        "failed"
                    }
                );
                self.send(Message::FleetReport(report));
                self.send(Message::Done(Done {}));
                self.end(Ok(line));
            }
            Err((code, why)) => self.fail(code, why),
        }
    }

    fn on_counters_request(&mut self) {
        if !self.features.has(Feature::DeviceCounters) {
            return self.fail(
                ErrorCode::Protocol,
                "counters_request without the device_counters feature in hello".into(),
            );
        }
        self.push(Action::ReadCounters);
        self.phase = Phase::ReadingCounters;
    }

    fn on_counters_read(&mut self, now: Instant, mut snap: DeviceSnapshot) {
        if self.phase != Phase::ReadingCounters {
            return;
        }
        if let Err(e) = snap.check_sizes() {
            // Never sent over its caps: the sections go, the reason stays.
            snap = DeviceSnapshot {
                monotonic_ns: snap.monotonic_ns,
                warnings: vec![format!(
                    "this device's counters exceed the protocol's caps: {e}"
                )],
                ..DeviceSnapshot::default()
            };
        }
        self.send(Message::CountersSnapshot(Box::new(snap)));
        self.snapshots_sent = self.snapshots_sent.saturating_add(1);
        // Between two snapshots runs a trial or a test (as long as the longest this server
        // accepts) or the wait between trials: wait that long, and the idle time more.
        let wait = self.cfg.idle_timeout + Duration::from_millis(self.cfg.limits.max_duration_ms);
        self.phase = Phase::AwaitCountersRequest {
            deadline: now + wait,
        };
    }

    fn on_mcast_join(&mut self, j: McastJoin) {
        if !self.features.has(Feature::Multicast) {
            return self.fail(
                ErrorCode::Protocol,
                "mcast_join without the multicast feature in hello".into(),
            );
        }
        if let Err(why) = j.check(self.cfg.limits.max_duration_ms) {
            return self.fail(ErrorCode::BadRequest, why);
        }
        self.push(Action::JoinMulticast(j.clone()));
        self.mcast = Some((j, 0));
        self.phase = Phase::JoiningMulticast;
    }

    fn on_mcast_joined(&mut self, now: Instant, r: Result<McastJoined, (ErrorCode, String)>) {
        if self.phase != Phase::JoiningMulticast {
            return;
        }
        let ms = self.mcast.as_ref().map_or(0, |(j, _)| j.duration_ms);
        match r {
            Ok(joined) => {
                self.send(Message::McastJoined(joined));
                self.phase = Phase::ReceivingMulticast {
                    deadline: now + Duration::from_millis(ms) + HARD_STOP_GRACE,
                };
            }
            Err((code, why)) => self.fail(code, why),
        }
    }

    fn on_mcast_ended(&mut self, mut report: McastReport) {
        if self.phase != Phase::EndingMulticast {
            return;
        }
        report
            .warnings
            .truncate(linerate_wire::multicast::MAX_WARNINGS);
        for w in &mut report.warnings {
            *w = linerate_wire::text::clip(w, linerate_wire::multicast::MAX_WARNING_TEXT / 2);
        }
        let (group, sent) = self
            .mcast
            .as_ref()
            .map_or((String::new(), 0), |(j, s)| (j.group.to_string(), *s));
        let line = format!(
            "multicast: {} of {sent} datagrams of group {group} received",
            report.datagrams
        );
        self.send(Message::McastReport(Box::new(report)));
        self.send(Message::Done(Done {}));
        self.end(Ok(line));
    }

    /// Streams opened before the start (none for TCP_CRR).
    fn layout_len(&self) -> usize {
        self.spec
            .as_ref()
            .map_or(0, |s| stream_slots(s, Role::Server).len())
    }

    /// Whether the test's streams arrive as connections (TCP, or QUIC streams, each with
    /// its stream hello) rather than as UDP ports in `streams_ready`.
    fn wants_tcp(&self) -> bool {
        self.spec
            .as_ref()
            .is_some_and(|s| matches!(s.transport, Transport::Tcp | Transport::Quic))
    }

    fn on_data_connection(&mut self, index: u16) {
        let (n, tcp) = (self.layout_len(), self.wants_tcp());
        match &mut self.phase {
            Phase::CollectStreams { tcp: got, .. } if tcp && usize::from(index) < n => {
                got.insert(index);
                self.push(Action::StoreConnection(index));
                self.check_collected();
            }
            Phase::Running { .. } => self.push(Action::AddConnection(index)),
            // Not this test's stream, or too early or late: dropping it closes it.
            _ => {}
        }
    }

    fn on_collect(&mut self, i: Incoming) {
        let n = self.layout_len();
        let tcp = self.wants_tcp();
        let Phase::CollectStreams { ready, .. } = &mut self.phase else {
            return;
        };
        match i {
            Incoming::Msg(Message::StreamsReady(r)) => {
                if ready.is_some() {
                    return self.fail(ErrorCode::Protocol, "streams_ready sent twice".into());
                }
                if !tcp && r.udp_ports.len() != n {
                    let got = r.udp_ports.len();
                    return self.fail(
                        ErrorCode::Protocol,
                        format!("expected {n} UDP ports, got {got}"),
                    );
                }
                *ready = Some(r.udp_ports);
                self.check_collected();
            }
            Incoming::Msg(other) => self.fail(
                ErrorCode::Protocol,
                format!("expected streams_ready, got {}", other.name()),
            ),
            Incoming::Closed => {
                self.abort("client closed the connection while opening streams".into())
            }
            Incoming::Broken(e) => self.fail(ErrorCode::Protocol, format!("bad frame: {e}")),
        }
    }

    /// Moves on once `streams_ready` came and, for TCP, every data connection.
    fn check_collected(&mut self) {
        let (n, tcp) = (self.layout_len(), self.wants_tcp());
        let Phase::CollectStreams {
            deadline,
            ready: Some(ports),
            tcp: got,
        } = &self.phase
        else {
            return;
        };
        if tcp && got.len() < n {
            return;
        }
        let (deadline, ports) = (*deadline, if tcp { Vec::new() } else { ports.clone() });
        if !tcp {
            if let Some(p) = bad_port(&ports) {
                let why = if p == 0 { "(not a port)" } else { "twice" };
                let e = format!("streams_ready lists UDP port {p} {why}");
                return self.fail(ErrorCode::Protocol, e);
            }
        }
        let slots = self.spec.as_ref().map(|s| stream_slots(s, Role::Server));
        self.udp_streams = slots
            .unwrap_or_default()
            .iter()
            .zip(&ports)
            .map(|(s, &p)| (s.index, SocketAddr::new(self.cfg.peer_ip, p)))
            .collect();
        self.push(Action::SetUpStreams { udp_ports: ports });
        self.phase = Phase::SetUpStreams { deadline };
    }

    fn on_streams_set_up(&mut self, now: Instant) {
        let Phase::SetUpStreams { deadline } = self.phase else {
            return;
        };
        if self.features.has(Feature::UdpStreamHello) && !self.udp_streams.is_empty() {
            self.phase = Phase::AwaitUdpHellos { deadline, next: 0 };
        } else {
            self.start(now);
        }
    }

    fn on_udp_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        let Some((next, peer)) = self.awaited_udp_hello() else {
            return;
        };
        // Only from exactly the listed address; anything else (a datagram that reached the
        // socket before it was connected) is not the proof.
        if from != peer || data.len() != stream_hello::LEN {
            return;
        }
        let Ok(h) = StreamHello::parse(data) else {
            return;
        };
        let index = self.udp_streams[next].0;
        if Some(h.token) != self.token || h.stream_index != index {
            return self.fail(ErrorCode::BadRequest, format!(
                "the UDP port {} listed for stream {index} sent another test's token or stream: a UDP port belongs to one stream of one test",
                peer.port()
            ));
        }
        if next + 1 < self.udp_streams.len() {
            if let Phase::AwaitUdpHellos { next: n, .. } = &mut self.phase {
                *n = next + 1;
            }
        } else {
            self.start(now);
        }
    }

    /// Starts the engine and tells the client. Raw frames (RFC 2544): `start` goes out
    /// before this end's senders do. Raw senders are not pushed back by a queue on the
    /// path, so an unpaced one fills a bottleneck's queue at once, and a `start` sent after
    /// it would wait behind it (TCP retransmissions) past the client's time-out. The host
    /// counters are taken first, so the client's frames still fall inside this end's
    /// interface window.
    fn start(&mut self, now: Instant) {
        let Some(spec) = &self.spec else {
            return self.fail(ErrorCode::Internal, "no test to start".into());
        };
        let start_first = spec.raw_frames && spec.transport == Transport::Udp && spec.rr.is_none();
        let client_sends = spec.direction.client_sends();
        // A timed test ends at its own duration (plus a grace for the client's `stop`),
        // whatever the client does; a byte count at the server's limit.
        let run_ms = spec.duration_ms.unwrap_or(self.cfg.limits.max_duration_ms);
        if start_first {
            if client_sends {
                self.push(Action::TakeEarlyHost);
            }
            self.send(Message::Start(Start {}));
            self.push(Action::StartEngine);
        } else {
            self.push(Action::StartEngine);
            self.send(Message::Start(Start {}));
        }
        self.engine_running = true;
        let limit = Duration::from_millis(run_ms) + HARD_STOP_GRACE;
        self.phase = Phase::Running {
            hard_stop: now + limit,
            finished_sent: false,
        };
    }

    fn on_running(&mut self, i: Incoming) {
        match i {
            Incoming::Msg(Message::Stop(st)) => {
                self.interrupted = st.interrupted;
                self.engine_running = false;
                self.push(Action::FinishEngine {
                    quiet: Duration::from_millis(100),
                    max_drain: Duration::from_secs(3),
                });
                self.phase = Phase::Draining;
            }
            Incoming::Msg(other) => self.fail(
                ErrorCode::Protocol,
                format!("expected stop, got {}", other.name()),
            ),
            Incoming::Closed => self.abort("client vanished during the test".into()),
            Incoming::Broken(e) => {
                self.abort(format!("control connection broke during the test: {e}"))
            }
        }
    }

    /// Sends an interval to the client as it happens (`interval_events`), or keeps it for
    /// the results when the client did not ask for that.
    fn on_interval(&mut self, iv: IntervalReport) {
        if !matches!(self.phase, Phase::Running { .. } | Phase::Draining) {
            return;
        }
        if self.features.has(Feature::IntervalEvents) {
            self.send(Message::Interval(IntervalMsg { interval: iv }));
        } else {
            self.intervals.push(iv);
        }
    }

    fn on_engine_status(&mut self, s: EngineStatus) {
        let bytes = self.spec.as_ref().is_some_and(|s| s.bytes.is_some());
        if let Phase::Running { finished_sent, .. } = &mut self.phase {
            if bytes && !*finished_sent && s.has_senders && s.senders_done {
                *finished_sent = true;
                self.send(Message::Finished(Finished {}));
            }
        }
    }

    fn on_engine_finished(
        &mut self,
        now: Instant,
        mut report: SideReport,
        capture: Option<ReturnedCapture>,
    ) {
        if self.phase != Phase::Draining {
            return;
        }
        report.intervals = std::mem::take(&mut self.intervals);
        let line = self
            .spec
            .as_ref()
            .map(|s| log_line(s, &report, self.interrupted));
        let streamed = self.features.has(Feature::IntervalEvents);
        self.send(results_message(
            report,
            streamed,
            capture,
            self.cfg.max_frame,
        ));
        // Kept until `done`: the session's log line.
        self.outcome = line.map(Ok);
        self.phase = Phase::AwaitResults {
            deadline: now + SERVER_RESULTS,
        };
    }
}

/// The message a phase waits for, as errors name it.
fn awaited(phase: &Phase) -> Option<&'static str> {
    Some(match phase {
        Phase::AwaitHello { .. } => "hello",
        Phase::AwaitAuth { .. } => "auth",
        Phase::AwaitRequest { .. } => "test_request",
        Phase::AwaitHookRequest { .. } => "hook_request",
        Phase::AwaitCountersRequest { .. } => "counters_request",
        Phase::ReceivingMulticast { .. } => "mcast_stop",
        Phase::CollectStreams { .. } => "streams_ready",
        Phase::Running { .. } => "stop",
        Phase::AwaitResults { .. } => "results",
        _ => return None,
    })
}

/// A UDP port `streams_ready` may not list: 0, or one listed twice.
/// The features this server offers: every one this build knows, but QUIC only in a build
/// with the `quic` feature (the board's core has no QUIC stack).
fn offered() -> Features {
    Feature::ALL
        .iter()
        .copied()
        .filter(|&f| f != Feature::Quic || cfg!(feature = "quic"))
        .collect()
}

fn bad_port(ports: &[u16]) -> Option<u16> {
    let mut seen = BTreeSet::new();
    ports.iter().copied().find(|&p| p == 0 || !seen.insert(p))
}

/// One log line for a test that ran: rates and CPU at this end.
fn log_line(spec: &TestSpec, report: &SideReport, interrupted: bool) -> String {
    let t = &report.totals;
    let rate = |bytes: u64, ns: u64| (ns > 0).then(|| bytes as f64 * 8e9 / ns as f64);
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |b| format!("{:.1} Mbit/s", b / 1e6));
    let cpu = report.cpu.as_ref().map(|c| c.util_percent);
    // A request/response test says so, with its sizes, rather than "tcp send".
    let (what, sizes) = match &spec.rr {
        Some(rr) => (
            match crate::rr::kind(rr) {
                crate::model::rr::RrKind::TcpRr => "tcp_rr".to_string(),
                crate::model::rr::RrKind::TcpCrr => "tcp_crr".to_string(),
                crate::model::rr::RrKind::UdpRr => "udp_rr".to_string(),
                crate::model::rr::RrKind::TcpBounceback => "tcp_bounceback".to_string(),
            },
            format!("req={} resp={}", rr.request_bytes, rr.response_bytes),
        ),
        None => (
            format!("{:?} {:?}", spec.transport, spec.direction).to_lowercase(),
            format!("len={}", spec.write_size),
        ),
    };
    format!(
        "{what} p={} {sizes}: rx {} tx {} cpu {}{}",
        spec.streams,
        fmt(rate(t.rx_bytes, t.rx_duration_ns)),
        fmt(rate(t.tx_bytes, t.tx_duration_ns)),
        cpu.map_or("-".into(), |c| format!("{c:.1}%")),
        if interrupted { " (interrupted)" } else { "" }
    )
}

/// The server's `results`: without the intervals when they went to the client as `interval`
/// messages, so the frame does not grow with the test's length. Should it still not fit
/// `max_frame` (a client without `interval_events`), the capture and then the intervals are
/// left out with a note rather than the whole report lost.
pub fn results_message(
    mut report: SideReport,
    streamed: bool,
    mut capture: Option<ReturnedCapture>,
    max_frame: u32,
) -> Message {
    if streamed {
        report.intervals = Vec::new();
    }
    let msg = |report: SideReport, capture: Option<ReturnedCapture>| {
        Message::Results(Box::new(Results {
            report,
            intervals_streamed: streamed,
            capture,
        }))
    };
    let fits = |m: &Message| {
        control::encode(m).is_ok_and(|f| f.len() - control::FRAME_HEADER_LEN <= max_frame as usize)
    };
    let m = msg(report.clone(), capture.clone());
    if fits(&m) {
        return m;
    }
    // The capture goes first: the results are the test, the capture its evidence.
    if capture.as_ref().is_some_and(|c| c.pcap_hex.is_some()) {
        capture = Some(ReturnedCapture {
            pcap_hex: None,
            note: Some(format!(
                "the server's capture is left out: with the results it does not fit one control frame of {max_frame} bytes"
            )),
        });
        let m = msg(report.clone(), capture.clone());
        if fits(&m) {
            return m;
        }
    }
    if report.intervals.is_empty() {
        return msg(report, capture);
    }
    let n = report.intervals.len();
    report.intervals = Vec::new();
    report.warnings.push(format!(
        "the server's {n} intervals are left out: they do not fit one control frame, and this client did not ask for them as they happened (interval_events)"
    ));
    msg(report, capture)
}
