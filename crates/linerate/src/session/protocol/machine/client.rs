//! The client's side of the control protocol, without I/O.
//!
//! ```text
//! AwaitWelcome ─► [AwaitAuthOk] ─► Connected ─┬─► AwaitAccept ─► OpenStreams ─► AwaitStart
//!                                              │        ─► Running ─► AwaitResults ─► FinishEngine
//!                                              │        ─► [AwaitDone] ─► Closed
//!                                              ├─► AwaitDoctorReport ─► Closed
//!                                              ├─► AwaitHookResult ─► Connected (feature hooks)
//!                                              ├─► AwaitCounters ─► Connected (feature device_counters)
//!                                              └─► AwaitMcastJoined ─► Connected ─► AwaitMcastReport
//!                                                       ─► Closed (feature multicast)
//! any phase ─► Failed
//! ```
//!
//! The connect path (hello, welcome, version check, authentication) ends in `Connected`;
//! the caller then asks for a test ([`ClientMachine::request_test`]) or for the server's
//! settings ([`ClientMachine::request_doctor`]). A test that the server ends early, or
//! whose results do not come, still finishes with what was measured: those become
//! warnings, not failures.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    negotiate, AuthResponse, ErrorCode, Feature, Features, Hello, Message, ProtocolVersion,
    Results, ReturnedCapture, Stop, StreamsReady, TestRequest, TestSpec, Transport, Welcome,
};
use linerate_wire::device::{CountersRequest, DeviceSnapshot};
use linerate_wire::doctor::{DoctorReport, DoctorRequest, MAX_FINDINGS};
use linerate_wire::fleet::{FleetOrder, FleetReport};
use linerate_wire::hooks::{HookRequest, HookResult};
use linerate_wire::multicast::{McastJoin, McastJoined, McastReport, McastStop};
use linerate_wire::report::{IntervalReport, SideReport};
use linerate_wire::stream_hello;

use super::{
    Incoming, BYTE_DEADLINE_SLACK, CLIENT_DONE, CLIENT_HANDSHAKE, CLIENT_RESULTS, DUT_ANSWER_WAIT,
    HARD_STOP_GRACE, HOOK_RESULT_WAIT, INTERVAL_BURST, MIN_BYTE_RATE_BPS, UDP_HELLO_PERIOD,
};
use crate::model::plan::Credentials;
use crate::session::protocol::auth::{self, Prover, NONCE_LEN};
use crate::session::protocol::plausible;

/// What the client machine needs besides the messages.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The server as the user named it ("host:port"), for messages.
    pub server: String,
    /// Credentials for a server that asks for authentication.
    pub credentials: Option<Credentials>,
    /// This session's 32 random bytes for the authentication proof.
    pub client_nonce: [u8; NONCE_LEN],
    /// "linerate x.y.z", sent in `hello`.
    pub software: String,
}

/// Where the client is in the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// `hello` sent; waiting for `welcome` or `reject`.
    AwaitWelcome {
        /// When to give up.
        deadline: Instant,
    },
    /// `auth` sent; waiting for the server's proof.
    AwaitAuthOk {
        /// When to give up.
        deadline: Instant,
        /// The server's nonce from `welcome`.
        server_nonce: Vec<u8>,
    },
    /// The session is open; the caller asks for a test or for the server's settings.
    Connected,
    /// `test_request` sent; waiting for `accept`.
    AwaitAccept {
        /// When to give up.
        deadline: Instant,
    },
    /// The driver opens the data streams ([`Action::OpenStreams`]).
    OpenStreams,
    /// `streams_ready` sent; waiting for `start`.
    AwaitStart {
        /// When to give up.
        deadline: Instant,
        /// When to send the UDP stream hellos again (protocol 1.3), if there are any.
        next_hello: Option<Instant>,
    },
    /// Both engines run.
    Running {
        /// When a timed test ends; set once the engine has started.
        end: Option<Instant>,
    },
    /// `stop` sent; waiting for the server's results.
    AwaitResults {
        /// When to give up on them.
        deadline: Instant,
    },
    /// The driver finishes the engine ([`Action::FinishEngine`]).
    FinishEngine,
    /// Our results sent; waiting for `done`.
    AwaitDone {
        /// When to stop waiting.
        deadline: Instant,
    },
    /// `doctor_request` sent; waiting for the report.
    AwaitDoctorReport {
        /// When to give up.
        deadline: Instant,
    },
    /// `fleet_order` sent; waiting for the ordered test's `fleet_report`.
    AwaitFleetReport {
        /// When to give up (the test's length and more).
        deadline: Instant,
    },
    /// `hook_request` sent; waiting for `hook_result` (then `Connected` again).
    AwaitHookResult {
        /// When to give up.
        deadline: Instant,
    },
    /// `counters_request` sent; waiting for `counters_snapshot` (then `Connected` again).
    AwaitCounters {
        /// When to give up.
        deadline: Instant,
    },
    /// `mcast_join` sent; waiting for `mcast_joined` (then `Connected`, and the caller
    /// sends to the group).
    AwaitMcastJoined {
        /// When to give up.
        deadline: Instant,
    },
    /// `mcast_stop` sent; waiting for `mcast_report`.
    AwaitMcastReport {
        /// When to give up.
        deadline: Instant,
    },
    /// The session ended as the protocol says.
    Closed,
    /// The session failed ([`ClientMachine::error`]).
    Failed,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this message.
    Send(Message),
    /// Open the data streams with this token; then feed [`Input::StreamsOpened`].
    OpenStreams {
        /// The test's token.
        token: [u8; 16],
    },
    /// Send every UDP stream's hello datagram once.
    SendUdpHellos,
    /// Start the engine with this spec; then feed [`Input::EngineStarted`].
    StartEngine(Box<TestSpec>),
    /// One of the server's intervals, for the observer.
    ServerInterval(IntervalReport),
    /// Stop this end's senders: the measured window ends.
    StopSenders,
    /// Finish the engine; then feed [`Input::EngineFinished`].
    FinishEngine,
    /// Close the control connection.
    Close,
}

/// What the driver feeds in.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// From the control connection.
    Received(Incoming),
    /// The data streams are open; the client's UDP port of each UDP stream, by index.
    StreamsOpened {
        /// Ports for `streams_ready`.
        udp_ports: Vec<u16>,
    },
    /// The engine runs.
    EngineStarted,
    /// The engine's state, fed while the test runs.
    Engine(EngineStatus),
    /// Ctrl-C.
    Interrupt,
    /// The engine's report (intervals left out).
    EngineFinished(Box<SideReport>),
    /// Sending a message failed.
    SendFailed {
        /// The message's type name.
        message: &'static str,
        /// The error.
        error: String,
    },
}

/// The engine's state as the stop rule of a fixed-size test needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStatus {
    /// This end has sending streams.
    pub has_senders: bool,
    /// All of them ended by themselves.
    pub senders_done: bool,
    /// All receivers saw the end of their data.
    pub receivers_done: bool,
}

/// Why a client session failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The server answered `error`.
    #[error("server refused the test: {message}")]
    Server {
        /// The server's code.
        code: ErrorCode,
        /// The server's words.
        message: String,
    },
    /// Anything else, as one line.
    #[error("{0}")]
    Failed(String),
}

pub use linerate_wire::text::MAX_PEER_TEXT;

/// What a finished test leaves besides the engine's report.
#[derive(Debug, Clone, PartialEq)]
pub struct TestOutcome {
    /// The version the session ran at.
    pub protocol: Option<ProtocolVersion>,
    /// Cut short (Ctrl-C, or the server ended the test).
    pub interrupted: bool,
    /// The server's report, with its streamed intervals put back.
    pub server_report: Option<SideReport>,
    /// The server's capture (`--capture`).
    pub server_capture: Option<ReturnedCapture>,
    /// What the session noticed, in the order it did.
    pub warnings: Vec<String>,
    /// Why the test failed once it had started (the server ended it or vanished, sent no
    /// results, flooded intervals, or a byte count was not reached in time): what was
    /// measured is still reported, and the command exits 2.
    pub failure: Option<String>,
}

/// The client's protocol state.
#[derive(Debug)]
pub struct ClientMachine {
    cfg: ClientConfig,
    phase: Phase,
    actions: VecDeque<Action>,
    welcome: Option<Welcome>,
    features: Features,
    warnings: Vec<String>,
    /// The spec as the plan asked for it, and as requested after the feature checks.
    asked: Option<TestSpec>,
    requested: Option<TestSpec>,
    interrupted: bool,
    early_error: Option<String>,
    server_finished: bool,
    server_intervals: Vec<IntervalReport>,
    server_report: Option<SideReport>,
    server_capture: Option<ReturnedCapture>,
    doctor_report: Option<DoctorReport>,
    fleet_report: Option<FleetReport>,
    hook_result: Option<HookResult>,
    counters: Option<DeviceSnapshot>,
    /// The receiver's answers (feature `multicast`).
    mcast_joined: Option<McastJoined>,
    mcast_report: Option<McastReport>,
    error: Option<ClientError>,
    /// Longest a byte-count test may run (`--max-time`); derived from the byte count when
    /// not given ([`ClientMachine::byte_deadline`]).
    max_time: Option<Duration>,
    /// When `start` came: the server's intervals are counted against the time since.
    started: Option<Instant>,
    /// The server's intervals received, and those left out as implausible.
    server_interval_count: u64,
    implausible_intervals: u64,
    failure: Option<String>,
    /// TCP_CRR: the port the server gave the test's connections (feature `crr_port`).
    crr_port: Option<u16>,
    /// A QUIC test: where its connections go and the certificate to pin (feature `quic`).
    quic: Option<linerate_wire::control::QuicOffer>,
}

impl ClientMachine {
    /// A session that sends `hello` now.
    pub fn new(cfg: ClientConfig, now: Instant) -> ClientMachine {
        let hello = Message::Hello(Hello {
            protocol: ProtocolVersion::CURRENT,
            software: cfg.software.clone(),
            features: Features::all().names(),
        });
        ClientMachine {
            cfg,
            phase: Phase::AwaitWelcome {
                deadline: now + CLIENT_HANDSHAKE,
            },
            actions: VecDeque::from([Action::Send(hello)]),
            welcome: None,
            features: Features::NONE,
            warnings: Vec::new(),
            asked: None,
            requested: None,
            interrupted: false,
            early_error: None,
            server_finished: false,
            crr_port: None,
            quic: None,
            server_intervals: Vec::new(),
            server_report: None,
            server_capture: None,
            doctor_report: None,
            fleet_report: None,
            hook_result: None,
            counters: None,
            mcast_joined: None,
            mcast_report: None,
            error: None,
            max_time: None,
            started: None,
            server_interval_count: 0,
            implausible_intervals: 0,
            failure: None,
        }
    }

    /// Sets the longest a byte-count test (`-n`) may run before the client ends it with an
    /// error (`--max-time`); without it the limit is derived from the byte count.
    pub fn set_max_time(&mut self, max: Option<Duration>) {
        self.max_time = max;
    }

    /// How long a byte-count test of `bytes` may run: `--max-time`, or the time the bytes
    /// take at [`MIN_BYTE_RATE_BPS`] plus [`BYTE_DEADLINE_SLACK`], but no longer than the
    /// server's own limit (after which it ends the test itself) plus a grace.
    pub fn byte_deadline(&self, bytes: u64) -> Duration {
        if let Some(t) = self.max_time {
            return t;
        }
        let secs = bytes as f64 * 8.0 / MIN_BYTE_RATE_BPS as f64;
        let derived = BYTE_DEADLINE_SLACK + Duration::from_secs_f64(secs.min(1e9));
        match &self.welcome {
            Some(w) => derived.min(
                Duration::from_millis(w.limits.max_duration_ms)
                    + HARD_STOP_GRACE
                    + BYTE_DEADLINE_SLACK,
            ),
            None => derived,
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
            Phase::AwaitWelcome { deadline }
            | Phase::AwaitAuthOk { deadline, .. }
            | Phase::AwaitAccept { deadline }
            | Phase::AwaitResults { deadline }
            | Phase::AwaitDone { deadline }
            | Phase::AwaitDoctorReport { deadline }
            | Phase::AwaitFleetReport { deadline }
            | Phase::AwaitHookResult { deadline }
            | Phase::AwaitCounters { deadline }
            | Phase::AwaitMcastJoined { deadline }
            | Phase::AwaitMcastReport { deadline } => Some(*deadline),
            Phase::AwaitStart {
                deadline,
                next_hello,
            } => Some(next_hello.map_or(*deadline, |h| h.min(*deadline))),
            Phase::Running { end } => *end,
            _ => None,
        }
    }

    /// The server's `welcome`, once it came.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.welcome.as_ref()
    }

    /// The features both ends offer.
    pub fn features(&self) -> Features {
        self.features
    }

    /// TCP_CRR: the port of the server's address where the test's connections go, when the
    /// server gave one; else they go to the port of the control connection.
    pub fn crr_port(&self) -> Option<u16> {
        self.crr_port
    }

    /// A QUIC test: the UDP port and certificate hash the server gave in `accept`.
    pub fn quic(&self) -> Option<&linerate_wire::control::QuicOffer> {
        self.quic.as_ref()
    }

    /// Why the session failed, once it did.
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// The warnings so far (the connect path's, e.g. unused credentials).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The ordered test's report, after `fleet_report`.
    pub fn take_fleet_report(&mut self) -> Option<FleetReport> {
        self.fleet_report.take()
    }

    /// The server's findings, after `doctor_report`.
    pub fn take_doctor_report(&mut self) -> Option<DoctorReport> {
        self.doctor_report.take()
    }

    /// The last `hook_result`, once.
    pub fn take_hook_result(&mut self) -> Option<HookResult> {
        self.hook_result.take()
    }

    /// Asks the server to run a declared hook (feature `hooks`); from `Connected` only, and
    /// back to `Connected` when its result comes.
    pub fn request_hook(&mut self, now: Instant, req: HookRequest) {
        if self.phase != Phase::Connected {
            return;
        }
        self.push(Action::Send(Message::HookRequest(req)));
        self.phase = Phase::AwaitHookResult {
            deadline: now + HOOK_RESULT_WAIT,
        };
    }

    /// The last `counters_snapshot`, once.
    pub fn take_counters(&mut self) -> Option<DeviceSnapshot> {
        self.counters.take()
    }

    /// Asks the device under test for a snapshot of its counters (feature
    /// `device_counters`); from `Connected` only, and back to `Connected` when it comes.
    /// A server without the feature fails the session with an error that says so.
    pub fn request_counters(&mut self, now: Instant) {
        if self.phase != Phase::Connected {
            return;
        }
        if !self.features.has(Feature::DeviceCounters) {
            let v = self.welcome.as_ref().map(|w| w.protocol);
            let v = v.map_or_else(|| "?".to_string(), |v| v.to_string());
            return self.failed(format!(
                "{}'s linerate serve is too old for --dut: it does not offer device counters (protocol {v}, no 'device_counters' feature): upgrade linerate there, or leave out --dut",
                self.cfg.server
            ));
        }
        self.push(Action::Send(Message::CountersRequest(CountersRequest {})));
        self.phase = Phase::AwaitCounters {
            deadline: now + DUT_ANSWER_WAIT,
        };
    }

    /// Orders the server to join a multicast group (in `Connected`, feature `multicast`);
    /// back to `Connected` when it has. A server without the feature fails the session
    /// with an error that says so.
    pub fn request_mcast_join(&mut self, now: Instant, j: McastJoin) {
        if self.phase != Phase::Connected {
            return;
        }
        if !self.features.has(Feature::Multicast) {
            return self.failed(format!(
                "{}'s linerate serve is too old to receive multicast (no 'multicast' feature): upgrade linerate there",
                self.cfg.server
            ));
        }
        self.push(Action::Send(Message::McastJoin(j)));
        self.phase = Phase::AwaitMcastJoined {
            deadline: now + DUT_ANSWER_WAIT,
        };
    }

    /// Tells the receiver that the sender stopped (in `Connected` after a join) and waits
    /// for its report.
    pub fn request_mcast_stop(&mut self, now: Instant, sent: u64) {
        if self.phase != Phase::Connected || self.mcast_joined.is_none() {
            return;
        }
        self.push(Action::Send(Message::McastStop(McastStop { sent })));
        self.phase = Phase::AwaitMcastReport {
            deadline: now + CLIENT_RESULTS,
        };
    }

    /// The receiver's `mcast_joined`, once it came.
    pub fn mcast_joined(&self) -> Option<&McastJoined> {
        self.mcast_joined.as_ref()
    }

    /// The receiver's `mcast_report`, once.
    pub fn take_mcast_report(&mut self) -> Option<McastReport> {
        self.mcast_report.take()
    }

    fn push(&mut self, a: Action) {
        self.actions.push_back(a);
    }

    fn fail(&mut self, e: ClientError) {
        self.actions.clear();
        self.actions.push_back(Action::Close);
        self.error = Some(e);
        self.phase = Phase::Failed;
    }

    fn failed(&mut self, text: String) {
        self.fail(ClientError::Failed(text));
    }

    fn close(&mut self) {
        self.push(Action::Close);
        self.phase = Phase::Closed;
    }

    /// Asks for a test (in `Connected`): checks what the server offers, drops the wishes it
    /// cannot honour with a warning each, and sends `test_request`.
    pub fn request_test(&mut self, now: Instant, spec: TestSpec) {
        if self.phase != Phase::Connected {
            return;
        }
        if spec.rr.is_some() && !self.features.has(Feature::Rr) {
            let v = self.welcome.as_ref().map(|w| w.protocol);
            let v = v.map_or_else(|| "?".to_string(), |v| v.to_string());
            return self.failed(format!(
                "the server at {} does not offer request/response tests (protocol {v}, no 'rr' feature): upgrade linerate on the server",
                self.cfg.server
            ));
        }
        if spec.transport == Transport::Quic && !self.features.has(Feature::Quic) {
            return self.failed(format!(
                "the server at {} does not offer QUIC tests (no 'quic' feature: an older linerate, or a build without QUIC such as the board's core): upgrade linerate on the server or use its full build",
                self.cfg.server
            ));
        }
        if let Some(why) = copy_modes_refusal(&spec, self.features) {
            return self.failed(format!("the server at {} {why}", self.cfg.server));
        }
        let (requested, warnings) = downgrade(&spec, self.features);
        self.warnings.extend(warnings);
        self.push(Action::Send(Message::TestRequest(TestRequest {
            spec: requested.clone(),
        })));
        self.asked = Some(spec);
        self.requested = Some(requested);
        self.phase = Phase::AwaitAccept {
            deadline: now + CLIENT_HANDSHAKE,
        };
    }

    /// Orders a third-party test (in `Connected`, feature `fleet_orders`) and waits up to
    /// `wait` for its report.
    pub fn request_order(&mut self, now: Instant, order: FleetOrder, wait: Duration) {
        if self.phase != Phase::Connected {
            return;
        }
        self.push(Action::Send(Message::FleetOrder(order)));
        self.phase = Phase::AwaitFleetReport {
            deadline: now + wait,
        };
    }

    /// Asks for the server's settings (in `Connected`, feature `doctor`).
    pub fn request_doctor(&mut self, now: Instant, req: DoctorRequest) {
        if self.phase != Phase::Connected {
            return;
        }
        self.push(Action::Send(Message::DoctorRequest(req)));
        self.phase = Phase::AwaitDoctorReport {
            deadline: now + CLIENT_HANDSHAKE,
        };
    }

    /// Feeds one input.
    pub fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Received(i) => self.on_received(now, sanitize(i)),
            Input::StreamsOpened { udp_ports } => self.on_streams_opened(now, udp_ports),
            Input::EngineStarted => self.on_engine_started(now),
            Input::Engine(status) => self.on_engine_status(now, status),
            Input::Interrupt => {
                if matches!(self.phase, Phase::Running { .. }) {
                    self.stop(now, true);
                }
            }
            Input::EngineFinished(report) => self.on_engine_finished(now, *report),
            Input::SendFailed { message, error } => {
                // `stop` and our `results` are fire-and-forget: the missing answer tells.
                let over = matches!(self.phase, Phase::Closed | Phase::Failed);
                if !over && !matches!(message, "stop" | "results") {
                    self.failed(error);
                }
            }
        }
    }

    /// Acts on the phase's deadline, if it has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_none_or(|t| now < t) {
            return;
        }
        match self.phase.clone() {
            Phase::AwaitStart {
                deadline,
                next_hello: Some(_),
            } if now < deadline => {
                self.push(Action::SendUdpHellos);
                self.phase = Phase::AwaitStart {
                    deadline,
                    next_hello: Some(now + UDP_HELLO_PERIOD),
                };
            }
            Phase::Running { .. } => match self.requested.as_ref().and_then(|s| s.bytes) {
                Some(bytes) => {
                    let limit = self.byte_deadline(bytes);
                    let how = match self.max_time {
                        Some(_) => "--max-time".to_string(),
                        None => format!(
                            "at least {} Mbit/s; give --max-time for a slower path",
                            MIN_BYTE_RATE_BPS / 1_000_000
                        ),
                    };
                    let e = format!(
                        "the byte count (-n {bytes}) was not reached within {} s ({how}): the transfer stalled or the server stopped sending",
                        limit.as_secs()
                    );
                    self.failure = Some(e.clone());
                    self.warnings.push(e);
                    self.stop(now, true)
                }
                None => self.stop(now, false),
            },
            Phase::AwaitResults { .. } => {
                let w = format!(
                    "the server sent no results within {} s",
                    CLIENT_RESULTS.as_secs()
                );
                self.failure = Some(w.clone());
                self.warnings.push(w);
                self.finish_engine();
            }
            Phase::AwaitDone { .. } => self.close(),
            phase => {
                let what = awaited(&phase).unwrap_or("answer");
                self.failed(format!(
                    "the server sent no {what} in time: is it overloaded or not a linerate server?"
                ));
            }
        }
    }

    fn on_received(&mut self, now: Instant, i: Incoming) {
        match self.phase {
            Phase::Running { .. } => return self.on_running(now, i),
            Phase::AwaitResults { .. } => return self.on_results(now, i),
            Phase::AwaitDone { .. } => return self.close(),
            // Late messages while the engine finishes: the results are in or given up.
            Phase::FinishEngine | Phase::Closed | Phase::Failed => return,
            _ => {}
        }
        let what = awaited(&self.phase).unwrap_or("nothing");
        match i {
            Incoming::Msg(Message::Error(e)) => self.fail(ClientError::Server {
                code: e.code,
                message: clip(&e.message),
            }),
            Incoming::Msg(m) => self.on_answer(now, m, what),
            Incoming::Closed => self.failed(format!(
                "the server closed the connection while we waited for {what}"
            )),
            Incoming::Broken(e) => self.failed(format!(
                "bad control frame from the server while waiting for {what}: {e}"
            )),
        }
    }

    /// The answer the handshake or the doctor exchange waits for (`what`), or a failure.
    fn on_answer(&mut self, now: Instant, m: Message, what: &str) {
        match (self.phase.clone(), m) {
            (Phase::AwaitWelcome { .. }, Message::Welcome(w)) => self.on_welcome(now, w),
            (Phase::AwaitWelcome { .. }, Message::Reject(r)) => self.failed(format!(
                "the server at {} speaks protocol {} and this client {}: {}",
                self.cfg.server,
                r.server_protocol,
                ProtocolVersion::CURRENT,
                clip(&r.message)
            )),
            (Phase::AwaitAuthOk { server_nonce, .. }, Message::AuthOk(ok)) => {
                self.on_auth_ok(&server_nonce, &ok.mac)
            }
            (Phase::AwaitAccept { .. }, Message::Accept(a)) => {
                match stream_hello::token_from_hex(&a.token) {
                    Some(token) => {
                        // Port 0 is no port: the test then uses the one port.
                        self.crr_port = a
                            .crr_port
                            .filter(|&p| p != 0 && self.features.has(Feature::CrrPort));
                        self.quic = a.quic;
                        self.push(Action::OpenStreams { token });
                        self.phase = Phase::OpenStreams;
                    }
                    None => self
                        .failed("protocol error: the server's token is not 32 hex digits".into()),
                }
            }
            (Phase::AwaitStart { .. }, Message::Start(_)) => self.on_start(now),
            (Phase::AwaitHookResult { .. }, Message::HookResult(r)) => {
                self.hook_result = Some(r);
                self.phase = Phase::Connected;
            }
            (Phase::AwaitCounters { .. }, Message::CountersSnapshot(snap)) => {
                match snap.check_sizes() {
                    Ok(()) => {
                        self.counters = Some(*snap);
                        self.phase = Phase::Connected;
                    }
                    Err(e) => {
                        self.failed(format!("the device's counters_snapshot is too large: {e}"))
                    }
                }
            }
            (Phase::AwaitMcastJoined { .. }, Message::McastJoined(mut j)) => {
                j.interface = j
                    .interface
                    .map(|i| clip_to(&i, linerate_wire::multicast::MAX_IFNAME));
                j.boot_id = j.boot_id.map(|b| clip_to(&b, 64));
                self.mcast_joined = Some(j);
                self.phase = Phase::Connected;
            }
            (Phase::AwaitMcastReport { .. }, Message::McastReport(r)) => match r.check_sizes() {
                Ok(()) => {
                    self.mcast_report = Some(*r);
                    self.close();
                }
                Err(e) => self.failed(format!("the receiver's mcast_report is too large: {e}")),
            },
            (Phase::AwaitFleetReport { .. }, Message::FleetReport(r)) => {
                self.fleet_report = Some(*r);
                self.close();
            }
            (Phase::AwaitDoctorReport { .. }, Message::DoctorReport(mut r)) => {
                r.findings.truncate(MAX_FINDINGS);
                self.doctor_report = Some(r);
                self.close();
            }
            (_, m) => self.failed(format!("protocol error: expected {what}, got {}", m.name())),
        }
    }

    fn on_welcome(&mut self, now: Instant, mut w: Welcome) {
        // The server picks the version (same major, the lower minor); one that picked
        // another major, or a minor above this client's, did not negotiate: the session
        // runs at what both speak, or not at all.
        let Some(version) = negotiate(ProtocolVersion::CURRENT, w.protocol) else {
            return self.failed(format!(
                "the server at {} answered in protocol {} and this client speaks {}: use linerate versions with the same major version on both ends",
                self.cfg.server,
                w.protocol,
                ProtocolVersion::CURRENT
            ));
        };
        w.protocol = version;
        self.features = w.feature_set();
        let challenge = w.auth.clone();
        self.welcome = Some(w);
        let server = self.cfg.server.clone();
        let Some(ch) = challenge else {
            if self.cfg.credentials.as_ref().is_some_and(|c| c.required) {
                return self.failed(format!(
                    "the server at {server} does not ask for authentication: it is not a server that shares this user's key"
                ));
            }
            if self.cfg.credentials.is_some() {
                self.warnings.push(format!(
                    "the server at {server} does not ask for authentication: --auth-user was not used"
                ));
            }
            self.phase = Phase::Connected;
            return;
        };
        if ch.method != auth::METHOD {
            return self.failed(format!(
                "the server at {server} asks for authentication by {:?}, which this linerate does not know: use the same linerate version on both ends",
                ch.method
            ));
        }
        let Some(creds) = self.cfg.credentials.clone() else {
            return self.failed(format!(
                "the server at {server} requires authentication: pass --auth-user NAME and --auth-secret-file FILE (or set LINERATE_AUTH_SECRET)"
            ));
        };
        let Some(server_nonce) = auth::unhex(&ch.nonce).filter(|n| n.len() == NONCE_LEN) else {
            return self.failed(format!(
                "protocol error: the server's nonce is not {NONCE_LEN} bytes of hex"
            ));
        };
        let cn = self.cfg.client_nonce;
        self.push(Action::Send(Message::Auth(AuthResponse {
            user: creds.user.clone(),
            nonce: auth::hex(&cn),
            mac: creds
                .key
                .proof(Prover::Client, &server_nonce, &cn, &creds.user),
        })));
        self.phase = Phase::AwaitAuthOk {
            deadline: now + CLIENT_HANDSHAKE,
            server_nonce,
        };
    }

    fn on_auth_ok(&mut self, server_nonce: &[u8], mac: &str) {
        let Some(creds) = &self.cfg.credentials else {
            return self.failed("protocol error: auth_ok without a challenge".into());
        };
        let cn = self.cfg.client_nonce;
        if creds
            .key
            .verify(Prover::Server, server_nonce, &cn, &creds.user, mac)
        {
            self.phase = Phase::Connected;
        } else {
            let e = format!(
                "the server at {} accepted user {} but could not prove it knows the same secret: it may not be the server you meant (check the address and its --auth-users file)",
                self.cfg.server, creds.user
            );
            self.failed(e);
        }
    }

    fn on_streams_opened(&mut self, now: Instant, udp_ports: Vec<u16>) {
        if self.phase != Phase::OpenStreams {
            return;
        }
        // Protocol 1.3: each UDP socket proves that it belongs to this test, until `start`.
        let hellos = self.features.has(Feature::UdpStreamHello) && !udp_ports.is_empty();
        self.push(Action::Send(Message::StreamsReady(StreamsReady {
            udp_ports,
        })));
        if hellos {
            self.push(Action::SendUdpHellos);
        }
        self.phase = Phase::AwaitStart {
            deadline: now + CLIENT_HANDSHAKE,
            next_hello: hellos.then(|| now + UDP_HELLO_PERIOD),
        };
    }

    fn on_start(&mut self, now: Instant) {
        let (Some(asked), Some(requested)) = (&self.asked, &self.requested) else {
            return self.failed("protocol error: start without a test".into());
        };
        // This end sends raw frames, profiles itself, and uses the copy modes it was asked
        // for, whatever the server offers (a server without copy modes was only spared
        // modes it would not use).
        let engine = TestSpec {
            raw_frames: asked.raw_frames,
            raw_tx: asked.raw_tx,
            profile: asked.profile,
            send_mode: asked.send_mode,
            recv_mode: asked.recv_mode,
            ..requested.clone()
        };
        self.push(Action::StartEngine(Box::new(engine)));
        self.started = Some(now);
        self.phase = Phase::Running { end: None };
    }

    /// Every running test has an end: its duration, or for a byte count the time it may
    /// take ([`ClientMachine::byte_deadline`]).
    fn on_engine_started(&mut self, now: Instant) {
        let (duration, bytes) = match &self.requested {
            Some(s) => (s.duration_ms, s.bytes),
            None => (None, None),
        };
        if let Phase::Running { end: None } = self.phase {
            let end = match (duration, bytes) {
                (Some(d), _) => Some(now + Duration::from_millis(d)),
                (None, Some(b)) => Some(now + self.byte_deadline(b)),
                (None, None) => None,
            };
            self.phase = Phase::Running { end };
        }
    }

    /// Takes one of the server's intervals: left out when its figures are not plausible,
    /// and the test's end (an error) when the server sends more of them than the time since
    /// `start` accounts for. `false` when the test ends here.
    fn on_server_interval(&mut self, now: Instant, mut iv: IntervalReport) -> bool {
        self.server_interval_count += 1;
        let interval_ms = self.requested.as_ref().map_or(1000, |s| s.interval_ms);
        let since = self
            .started
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        let allowed = allowed_intervals(since, interval_ms);
        if self.server_interval_count > allowed {
            let e = format!(
                "the server sent {} intervals in {:.1} s, more than its {interval_ms} ms interval allows: it is not a working linerate server",
                self.server_interval_count,
                since.as_secs_f64()
            );
            self.failure = Some(e.clone());
            self.early_error = Some(e);
            return false;
        }
        match plausible::interval(&mut iv) {
            Ok(()) => {
                self.server_intervals.push(iv.clone());
                self.push(Action::ServerInterval(iv));
            }
            Err(_) => self.implausible_intervals += 1,
        }
        true
    }

    fn on_engine_status(&mut self, now: Instant, e: EngineStatus) {
        let Some(spec) = &self.requested else {
            return;
        };
        if !matches!(self.phase, Phase::Running { .. }) || spec.bytes.is_none() {
            return;
        }
        let receives = spec.direction.client_receives();
        let mine = !e.has_senders || e.senders_done;
        let theirs = !receives || self.server_finished;
        // The client's receivers see the server's last byte shortly after `finished`.
        let drained = !receives || e.receivers_done || spec.transport == Transport::Udp;
        if mine && theirs && drained {
            self.stop(now, false);
        }
    }

    fn on_running(&mut self, now: Instant, i: Incoming) {
        let early = match i {
            Incoming::Msg(Message::Interval(m)) => {
                if self.on_server_interval(now, m.interval) {
                    return;
                }
                return self.stop(now, true);
            }
            Incoming::Msg(Message::Finished(_)) => {
                self.server_finished = true;
                return;
            }
            Incoming::Msg(Message::Error(e)) => clip(&e.message),
            Incoming::Msg(other) => {
                format!(
                    "protocol error: unexpected {} during the test",
                    other.name()
                )
            }
            Incoming::Closed => "the server closed the control connection during the test".into(),
            Incoming::Broken(e) => {
                format!("the control connection broke during the test: {e}")
            }
        };
        self.failure = Some(format!("the test ended early: {early}"));
        self.early_error = Some(early);
        self.stop(now, true);
    }

    /// Ends the measured window: stops this end's senders and, unless the server already
    /// ended the test, tells it to stop and waits for its results.
    fn stop(&mut self, now: Instant, interrupted: bool) {
        self.interrupted |= interrupted;
        self.push(Action::StopSenders);
        if let Some(e) = &self.early_error {
            self.warnings.push(format!("the test ended early: {e}"));
            return self.finish_engine();
        }
        self.push(Action::Send(Message::Stop(Stop {
            interrupted: self.interrupted,
        })));
        self.phase = Phase::AwaitResults {
            deadline: now + CLIENT_RESULTS,
        };
    }

    fn on_results(&mut self, now: Instant, i: Incoming) {
        let warning = match i {
            Incoming::Msg(Message::Results(r)) => {
                let r = *r;
                let mut report = r.report;
                if r.intervals_streamed {
                    report.intervals = std::mem::take(&mut self.server_intervals);
                }
                let since = self
                    .started
                    .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
                self.server_report = plausible::checked(report, since, &mut self.warnings);
                self.server_capture = r.capture;
                return self.finish_engine();
            }
            Incoming::Msg(Message::Interval(m)) => {
                if self.on_server_interval(now, m.interval) {
                    return;
                }
                self.early_error.take().unwrap_or_default()
            }
            Incoming::Msg(Message::Finished(_)) => return,
            Incoming::Msg(Message::Error(e)) => format!(
                "the server reported an error instead of results: {}",
                clip(&e.message)
            ),
            Incoming::Msg(other) => {
                format!("protocol error: expected results, got {}", other.name())
            }
            Incoming::Closed => {
                "the server closed the connection before sending its results".into()
            }
            Incoming::Broken(e) => {
                format!("the control connection broke before the server's results: {e}")
            }
        };
        if self.failure.is_none() {
            self.failure = Some(warning.clone());
        }
        self.warnings.push(warning);
        self.finish_engine();
    }

    fn finish_engine(&mut self) {
        self.push(Action::FinishEngine);
        self.phase = Phase::FinishEngine;
    }

    fn on_engine_finished(&mut self, now: Instant, report: SideReport) {
        if self.phase != Phase::FinishEngine {
            return;
        }
        if self.server_report.is_none() {
            return self.close();
        }
        // Without the intervals: the server does not use them, and a long test's would
        // not fit one frame.
        let mut report = report;
        report.intervals = Vec::new();
        self.push(Action::Send(Message::Results(Box::new(Results {
            report,
            intervals_streamed: false,
            capture: None,
        }))));
        self.phase = Phase::AwaitDone {
            deadline: now + CLIENT_DONE,
        };
    }

    /// What the test leaves, with the session's closing warnings; call it in `Closed`.
    pub fn outcome(&mut self) -> TestOutcome {
        let mut warnings = std::mem::take(&mut self.warnings);
        if self.interrupted && self.early_error.is_none() {
            warnings.push("interrupted: the totals cover the part of the test that ran".into());
        }
        if self.server_report.is_none() {
            warnings.push("server measurements are missing: receiver-side figures, server CPU and service demand are not shown".into());
        }
        if self.implausible_intervals > 0 {
            warnings.push(format!(
                "{} of the server's intervals were left out: their figures are not plausible (rates above {} Tbit/s or CPU outside 0-100%)",
                self.implausible_intervals,
                plausible::MAX_RATE_BPS / 1e12
            ));
        }
        TestOutcome {
            protocol: self.welcome.as_ref().map(|w| w.protocol),
            interrupted: self.interrupted,
            server_report: self.server_report.take(),
            server_capture: self.server_capture.take(),
            warnings,
            failure: self.failure.take(),
        }
    }
}

/// A peer's text as an error or a warning quotes it: escaped and cut.
fn clip(s: &str) -> String {
    linerate_wire::text::clip(s, MAX_PEER_TEXT)
}

/// What the connection delivered, with every string from the peer escaped.
fn sanitize(i: Incoming) -> Incoming {
    match i {
        Incoming::Msg(m) => Incoming::Msg(linerate_wire::text::sanitize_message(m)),
        Incoming::Broken(e) => Incoming::Broken(clip(&e)),
        Incoming::Closed => Incoming::Closed,
    }
}

/// Most server intervals a test may have received `since` its start with `interval_ms`
/// intervals: twice as many as the time accounts for, plus [`INTERVAL_BURST`] of them
/// (late ones arrive in bursts), plus a few for the drain.
pub fn allowed_intervals(since: Duration, interval_ms: u64) -> u64 {
    let per = interval_ms.max(1) as u128;
    let ms = (since + INTERVAL_BURST).as_millis();
    u64::try_from(2 * ms / per)
        .unwrap_or(u64::MAX)
        .saturating_add(16)
}

/// A peer's string, escaped and cut to `max` characters.
fn clip_to(s: &str, max: usize) -> String {
    linerate_wire::text::clip(s, max)
}

/// The message a phase waits for, as errors name it.
fn awaited(phase: &Phase) -> Option<&'static str> {
    Some(match phase {
        Phase::AwaitWelcome { .. } => "welcome",
        Phase::AwaitAuthOk { .. } => "auth_ok",
        Phase::AwaitAccept { .. } => "accept",
        Phase::AwaitStart { .. } => "start",
        Phase::AwaitResults { .. } => "results",
        Phase::AwaitDoctorReport { .. } => "doctor_report",
        Phase::AwaitFleetReport { .. } => "fleet_report",
        Phase::AwaitHookResult { .. } => "hook_result",
        Phase::AwaitCounters { .. } => "counters_snapshot",
        Phase::AwaitMcastJoined { .. } => "mcast_joined",
        Phase::AwaitMcastReport { .. } => "mcast_report",
        _ => return None,
    })
}

/// Why a test with copy modes cannot run on a server with `features`: the server would send
/// (`-R`, `--bidir`) with `--zerocopy`/`--sendfile`, or receive (`tcp` without `-R`,
/// `--bidir`) with `--no-rx-copy`, and does not offer `copy_modes`. An old server would
/// ignore the fields it does not know and copy silently, so the test is refused.
pub fn copy_modes_refusal(spec: &TestSpec, features: Features) -> Option<String> {
    if spec.rr.as_ref().is_some_and(|r| r.bounceback.is_some())
        && !features.has(Feature::Bounceback)
    {
        return Some(
            "does not offer --bounceback (no 'bounceback' feature): upgrade linerate on the server"
                .into(),
        );
    }
    if features.has(Feature::CopyModes) || spec.rr.is_some() {
        return None;
    }
    let flag = if !spec.send_mode.is_copy() && spec.direction.client_receives() {
        spec.send_mode.flag()
    } else if !spec.recv_mode.is_copy() && spec.direction.client_sends() {
        "--no-rx-copy"
    } else {
        return None;
    };
    Some(format!(
        "does not offer {flag} (no 'copy_modes' feature) and would use it in this test: upgrade linerate on the server, or run the test in the direction where only this end needs {flag}"
    ))
}

/// The spec to request from a server with `features`: what it does not offer is dropped,
/// with a warning that says what that means and how to get it.
pub fn downgrade(spec: &TestSpec, features: Features) -> (TestSpec, Vec<String>) {
    let mut s = spec.clone();
    let mut w = Vec::new();
    // One-way delay needs a server that stamps CLOCK_MONOTONIC (protocol 1.1).
    if s.one_way_delay.is_some() && !features.has(Feature::OneWayDelay) {
        s.one_way_delay = None;
        w.push("one-way delay not measured: the server does not offer it (upgrade it to linerate with protocol 1.1)".to_string());
    }
    if s.smooth_pacing && !features.has(Feature::SmoothPacing) {
        s.smooth_pacing = false;
        w.push("the server's senders may burst to catch up after a stall: it does not offer smooth pacing (upgrade it to linerate with protocol 1.1)".to_string());
    }
    // Raw frames (protocol 1.3): this end sends them whatever the server offers; a server
    // without the feature sends datagrams, and says so in its stream reports' absence of
    // `tx_path` (the caller states the deviation).
    if s.raw_frames && !features.has(Feature::RawFrames) {
        s.raw_frames = false;
        if s.direction.client_receives() {
            w.push("the server sends datagrams, not raw frames: it does not offer them (upgrade it to linerate with protocol 1.3)".to_string());
        }
    }
    // Copy modes the server would not use ([`copy_modes_refusal`] refused the others): an
    // old server must not be sent fields it does not know.
    if !features.has(Feature::CopyModes) {
        s.send_mode = Default::default();
        s.recv_mode = Default::default();
    }
    if s.capture_snaplen.is_some() && !features.has(Feature::Capture) {
        s.capture_snaplen = None;
        w.push("--capture: the server does not offer captures (upgrade it to linerate with protocol 1.3); only this end's packets were captured".to_string());
    }
    if s.profile.is_some() && !features.has(Feature::Profile) {
        s.profile = None;
        w.push("--profile: the server does not offer profiles (upgrade linerate there); only this end was profiled".to_string());
    }
    (s, w)
}
