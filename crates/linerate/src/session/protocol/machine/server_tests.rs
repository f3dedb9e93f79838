//! The server machine driven through every phase, time-out and unexpected message, with
//! fake instants and no socket.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    AuthResponse, Direction, ErrorCode, ErrorMsg, Features, Hello, IntervalMsg, Message,
    ProtocolVersion, ReturnedCapture, ServerLimits, Start, Stop, StreamsReady, TestRequest,
    TestSpec, Transport, FEATURES,
};
use linerate_wire::doctor::{DoctorReport, DoctorRequest, Finding, Severity, MAX_FINDINGS};
use linerate_wire::report::{HostInfo, IntervalReport, Role, SideReport, Totals};
use linerate_wire::stream_hello::{self, StreamHello};

use super::server::{
    results_message, Action, EngineStatus, Input, Phase, ServerMachine, ServerSettings,
};
use super::{Incoming, AUTH_FAIL_DELAY, HARD_STOP_GRACE, SERVER_RESULTS};
use crate::model::plan::default_spec;
use crate::model::plan::Key;
use crate::session::protocol::auth::{self, Prover, Users};

const HS: Duration = Duration::from_secs(2);
const IDLE: Duration = Duration::from_secs(60);
const NONCE: [u8; 32] = [3; 32];
const TOKEN: [u8; 16] = [0xa5; 16];
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

fn settings(users: Option<Users>) -> ServerSettings {
    ServerSettings {
        limits: ServerLimits {
            max_duration_ms: 10_000,
            max_streams: 8,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 1 << 26,
        },
        handshake_timeout: HS,
        idle_timeout: IDLE,
        port: 5301,
        cpu_count: 4,
        session_id: "abcd".into(),
        software: "linerate test".into(),
        max_frame: 1 << 22,
        peer_ip: PEER,
        users: users.map(Arc::new),
        nonce: Ok(NONCE),
        refuse: None,
    }
}

fn msg(m: Message) -> Input {
    Input::Received(Incoming::Msg(m))
}

fn hello(features: &[&str]) -> Message {
    Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: "c".into(),
        features: features.iter().map(|f| f.to_string()).collect(),
    })
}

fn drain(m: &mut ServerMachine) -> Vec<Action> {
    std::iter::from_fn(|| m.poll_action()).collect()
}

/// The `error` a failed session sent, its close, and its outcome.
#[track_caller]
fn refused(m: &mut ServerMachine, code: ErrorCode) -> String {
    let a = drain(m);
    let Some(Action::Send(Message::Error(ErrorMsg { code: c, message }))) = a.first() else {
        panic!("no error sent: {a:?}")
    };
    assert_eq!(*c, code, "{message}");
    assert_eq!(a.get(1), Some(&Action::Close), "{a:?}");
    assert_eq!(*m.phase(), Phase::Failed);
    assert_eq!(m.outcome(), Some(&Err(message.clone())));
    message.clone()
}

/// Ended without a word to the client.
#[track_caller]
fn aborted(m: &mut ServerMachine) -> String {
    let a = drain(m);
    assert_eq!(a.first(), Some(&Action::Close), "{a:?}");
    assert_eq!(*m.phase(), Phase::Failed);
    match m.outcome() {
        Some(Err(why)) => why.clone(),
        other => panic!("{other:?}"),
    }
}

/// A session past `welcome` (features: all) at `t0`.
fn welcomed(t0: Instant, features: &[&str]) -> ServerMachine {
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(t0, msg(hello(features)));
    drain(&mut m);
    m
}

/// A session that accepted `spec` with [`TOKEN`].
fn accepted(t0: Instant, spec: TestSpec, features: &[&str]) -> ServerMachine {
    let mut m = welcomed(t0, features);
    m.handle(t0, msg(Message::TestRequest(TestRequest { spec })));
    assert_eq!(drain(&mut m), vec![Action::Admit]);
    m.handle(
        t0,
        Input::Admitted {
            token: TOKEN,
            crr_port: None,
            quic: None,
        },
    );
    drain(&mut m);
    m
}

fn tcp(direction: Direction, streams: u16) -> TestSpec {
    let mut s = default_spec(Transport::Tcp, direction, 1000, 1000);
    s.streams = streams;
    s
}

fn udp(direction: Direction) -> TestSpec {
    default_spec(Transport::Udp, direction, 1000, 1000)
}

fn ready(ports: Vec<u16>) -> Input {
    msg(Message::StreamsReady(StreamsReady { udp_ports: ports }))
}

/// A TCP send test of one stream, running since `t0` (start sent).
fn running(t0: Instant, spec: TestSpec, features: &[&str]) -> ServerMachine {
    let mut m = accepted(t0, spec, features);
    m.handle(t0, Input::DataConnection(0));
    m.handle(t0, ready(vec![]));
    m.handle(t0, Input::StreamsSetUp);
    drain(&mut m);
    assert!(
        matches!(m.phase(), Phase::Running { .. }),
        "{:?}",
        m.phase()
    );
    m
}

fn report() -> SideReport {
    SideReport {
        role: Role::Server,
        host: HostInfo::default(),
        streams: Vec::new(),
        intervals: Vec::new(),
        totals: Totals {
            rx_bytes: 125_000_000,
            rx_duration_ns: 1_000_000_000,
            ..Totals::default()
        },
        cpu: None,
        process_cpu: None,
        host_counters: None,
        interface: None,
        control_segments: None,
        profile: None,
        warnings: Vec::new(),
    }
}

fn interval(i: u64) -> IntervalReport {
    IntervalReport {
        start_ns: i,
        end_ns: i + 1,
        ..IntervalReport::default()
    }
}

#[test]
fn hello_gets_welcome_with_the_common_features() {
    let t0 = Instant::now();
    let mut m = ServerMachine::new(settings(None), t0);
    assert_eq!(m.poll_timeout(), Some(t0 + HS));
    m.handle(t0, msg(hello(&["udp_stream", "teleport", "rr"])));
    let a = drain(&mut m);
    let [Action::Send(Message::Welcome(w))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(w.features, vec!["udp_stream", "rr"]);
    assert_eq!(w.protocol, ProtocolVersion::CURRENT);
    assert_eq!((w.session_id.as_str(), w.auth.is_none()), ("abcd", true));
    assert_eq!(w.limits.max_streams, 8);
    assert_eq!(m.poll_timeout(), Some(t0 + IDLE));
    // An older minor version is served at its own.
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(
        t0,
        msg(Message::Hello(Hello {
            protocol: ProtocolVersion { major: 1, minor: 1 },
            software: String::new(),
            features: vec![],
        })),
    );
    let a = drain(&mut m);
    assert!(
        matches!(&a[0], Action::Send(Message::Welcome(w)) if w.protocol.minor == 1 && w.features.is_empty())
    );
}

#[test]
fn what_comes_instead_of_hello() {
    let t0 = Instant::now();
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(
        t0,
        msg(Message::TestRequest(TestRequest {
            spec: udp(Direction::Send),
        })),
    );
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "expected hello, got test_request"
    );
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(t0, Input::Received(Incoming::Broken("junk".into())));
    assert_eq!(refused(&mut m, ErrorCode::Protocol), "bad frame: junk");
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(aborted(&mut m), "client closed the connection before hello");
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle_timeout(t0 + HS - Duration::from_millis(1));
    assert!(drain(&mut m).is_empty());
    m.handle_timeout(t0 + HS);
    assert_eq!(
        refused(&mut m, ErrorCode::Timeout),
        "no hello within the time-out"
    );
    // After the end, nothing moves.
    m.handle(t0, msg(hello(FEATURES)));
    assert!(drain(&mut m).is_empty());
}

#[test]
fn another_major_version_is_rejected() {
    let t0 = Instant::now();
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(
        t0,
        msg(Message::Hello(Hello {
            protocol: ProtocolVersion { major: 9, minor: 0 },
            software: String::new(),
            features: vec![],
        })),
    );
    let a = drain(&mut m);
    let [Action::Send(Message::Reject(r)), Action::Close] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(r.code, ErrorCode::IncompatibleVersion);
    assert!(
        r.message.contains("9.0") && r.message.contains("1.3"),
        "{}",
        r.message
    );
    assert!(matches!(m.outcome(), Some(Err(e)) if *e == r.message));
}

fn users() -> Users {
    Users::parse("alice:s3cret\n").unwrap()
}

fn auth_response(user: &str, key: &Key) -> Message {
    let cn = [8u8; 32];
    Message::Auth(AuthResponse {
        user: user.into(),
        nonce: auth::hex(&cn),
        mac: key.proof(Prover::Client, &NONCE, &cn, user),
    })
}

fn challenged(t0: Instant) -> ServerMachine {
    let mut m = ServerMachine::new(settings(Some(users())), t0);
    m.handle(t0, msg(hello(FEATURES)));
    let a = drain(&mut m);
    let [Action::Send(Message::Welcome(w))] = a.as_slice() else {
        panic!("{a:?}")
    };
    let ch = w.auth.as_ref().expect("a challenge");
    assert_eq!(
        (ch.method.as_str(), ch.nonce.clone()),
        (auth::METHOD, auth::hex(&NONCE))
    );
    assert_eq!(m.poll_timeout(), Some(t0 + HS));
    m
}

#[test]
fn the_right_key_passes_and_the_server_proves_its_own() {
    let t0 = Instant::now();
    let mut m = challenged(t0);
    let key = Key::derive("alice", "s3cret");
    m.handle(t0, msg(auth_response("alice", &key)));
    // The server's limiter is asked first.
    assert_eq!(
        drain(&mut m),
        vec![Action::CheckAuth {
            user: "alice".into()
        }]
    );
    assert!(m.in_handshake());
    m.handle(t0, Input::AuthChecked(Ok(())));
    let a = drain(&mut m);
    let [Action::AuthSucceeded { user }, Action::Send(Message::AuthOk(ok))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(user, "alice");
    assert!(key.verify(Prover::Server, &NONCE, &[8u8; 32], "alice", &ok.mac));
    assert_eq!(m.user(), Some("alice"));
    assert_eq!(m.poll_timeout(), Some(t0 + IDLE));
}

#[test]
fn a_wrong_key_is_answered_late_and_alike() {
    let t0 = Instant::now();
    for (user, secret) in [("alice", "wrong"), ("mallory", "s3cret")] {
        let mut m = challenged(t0);
        m.handle(t0, msg(auth_response(user, &Key::derive(user, secret))));
        assert_eq!(drain(&mut m), vec![Action::CheckAuth { user: user.into() }]);
        m.handle(t0, Input::AuthChecked(Ok(())));
        // The attempt stays counted as a failure; nothing goes to the client before the
        // delay.
        assert!(drain(&mut m).is_empty(), "nothing before the delay");
        assert_eq!(m.poll_timeout(), Some(t0 + AUTH_FAIL_DELAY));
        // Whatever comes meanwhile waits.
        m.handle(t0, msg(Message::Stop(Stop::default())));
        m.handle(t0, Input::Received(Incoming::Closed));
        assert!(drain(&mut m).is_empty());
        m.handle_timeout(t0 + AUTH_FAIL_DELAY);
        let a = drain(&mut m);
        let Some(Action::Send(Message::Error(e))) = a.first() else {
            panic!("{a:?}")
        };
        assert_eq!(e.code, ErrorCode::AuthFailed);
        assert!(!e.message.contains(user), "names are not revealed");
        assert_eq!(
            m.outcome(),
            Some(&Err(format!("authentication failed for user {user:?}")))
        );
    }
}

#[test]
fn an_address_or_user_over_the_failure_limit_is_refused_without_a_check() {
    let t0 = Instant::now();
    let mut m = challenged(t0);
    // The right key, but the limiter says no: refused late, like a failure, and not counted.
    m.handle(
        t0,
        msg(auth_response("alice", &Key::derive("alice", "s3cret"))),
    );
    drain(&mut m);
    m.handle(
        t0,
        Input::AuthChecked(Err(
            "too many failed authentications from 10.0.0.1: retry in 42 s".into(),
        )),
    );
    assert!(drain(&mut m).is_empty());
    assert_eq!(m.poll_timeout(), Some(t0 + AUTH_FAIL_DELAY));
    m.handle_timeout(t0 + AUTH_FAIL_DELAY);
    let a = drain(&mut m);
    let Some(Action::Send(Message::Error(ErrorMsg { code, message: e }))) = a.first() else {
        panic!("{a:?}")
    };
    assert_eq!(*code, ErrorCode::AuthFailed);
    assert_eq!(
        m.outcome(),
        Some(&Err("authentication refused for user \"alice\": too many failed authentications from 10.0.0.1: retry in 42 s".to_string()))
    );
    assert!(
        e.contains("too many failed authentications") && e.contains("retry in 42 s"),
        "{e}"
    );
    assert_eq!(m.user(), None);
}

#[test]
fn a_busy_server_refuses_after_hello() {
    let t0 = Instant::now();
    let mut s = settings(None);
    s.refuse = Some((
        ErrorCode::Busy,
        "10.0.0.1 has 16 sessions in their handshake".into(),
    ));
    let mut m = ServerMachine::new(s, t0);
    assert!(m.in_handshake());
    m.handle(t0, msg(hello(FEATURES)));
    let e = refused(&mut m, ErrorCode::Busy);
    assert!(e.contains("16 sessions"), "{e}");
    assert!(!m.in_handshake());
}

#[test]
fn the_handshake_ends_with_the_request() {
    let t0 = Instant::now();
    let m = welcomed(t0, FEATURES);
    assert!(m.in_handshake());
    let m = accepted(t0, tcp(Direction::Send, 1), FEATURES);
    assert!(!m.in_handshake());
}

#[test]
fn anything_but_auth_after_a_challenge() {
    let t0 = Instant::now();
    let mut m = challenged(t0);
    m.handle(
        t0,
        msg(Message::TestRequest(TestRequest {
            spec: udp(Direction::Send),
        })),
    );
    let e = refused(&mut m, ErrorCode::AuthRequired);
    assert!(
        e.contains("got test_request before auth") && e.contains("--auth-user"),
        "{e}"
    );
    let mut m = challenged(t0);
    m.handle_timeout(t0 + HS);
    assert_eq!(
        refused(&mut m, ErrorCode::Timeout),
        "no auth within the time-out"
    );
    // No randomness, no challenge.
    let mut s = settings(Some(users()));
    s.nonce = Err("no entropy".into());
    let mut m = ServerMachine::new(s, t0);
    m.handle(t0, msg(hello(FEATURES)));
    assert!(refused(&mut m, ErrorCode::Internal).contains("no entropy"));
}

#[test]
fn requests_are_checked_then_admitted() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    m.handle(
        t0,
        msg(Message::TestRequest(TestRequest {
            spec: tcp(Direction::Send, 9),
        })),
    );
    assert!(refused(&mut m, ErrorCode::LimitExceeded).contains("--max-streams"));
    let mut s = tcp(Direction::Send, 1);
    s.server_cpu = Some(4);
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::TestRequest(TestRequest { spec: s })));
    assert!(refused(&mut m, ErrorCode::BadRequest).contains("CPUs 0-3"));
    let mut m = welcomed(t0, FEATURES);
    m.handle(
        t0,
        msg(Message::TestRequest(TestRequest {
            spec: tcp(Direction::Send, 1),
        })),
    );
    assert_eq!(drain(&mut m), vec![Action::Admit]);
    assert_eq!(m.poll_timeout(), None);
    let t1 = t0 + Duration::from_millis(5);
    m.handle(
        t1,
        Input::Admitted {
            token: TOKEN,
            crr_port: None,
            quic: None,
        },
    );
    let a = drain(&mut m);
    let [Action::Send(Message::Accept(acc))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(acc.token, stream_hello::token_to_hex(&TOKEN));
    assert_eq!(acc.server_cpu_count, 4);
    assert_eq!(m.token(), Some(TOKEN));
    assert_eq!(m.poll_timeout(), Some(t1 + HS));
    // The driver refuses a test the server has no room for.
    let mut m = welcomed(t0, FEATURES);
    m.handle(
        t0,
        msg(Message::TestRequest(TestRequest {
            spec: tcp(Direction::Send, 1),
        })),
    );
    drain(&mut m);
    m.fail(ErrorCode::Busy, "full".into());
    assert_eq!(refused(&mut m, ErrorCode::Busy), "full");
}

#[test]
fn request_time_out_and_wrong_messages() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    m.handle_timeout(t0 + IDLE);
    assert_eq!(
        refused(&mut m, ErrorCode::Timeout),
        "no test_request within the time-out"
    );
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::Start(Start {})));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "expected test_request, got start"
    );
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(
        aborted(&mut m),
        "client closed the connection before test_request"
    );
}

#[test]
fn doctor_answers_with_findings_and_done() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    let req = DoctorRequest {
        buffer_bytes: None,
        rtt_us: Some(3),
    };
    m.handle(t0, msg(Message::DoctorRequest(req.clone())));
    assert_eq!(drain(&mut m), vec![Action::AnswerDoctor(req)]);
    let f = Finding {
        severity: Severity::Warn,
        check: "c".into(),
        what: "w".into(),
        value: None,
        fix: Some("x".into()),
    };
    m.handle(
        t0,
        Input::DoctorAnswered(DoctorReport {
            host: None,
            interface: None,
            findings: vec![f; MAX_FINDINGS + 1],
        }),
    );
    let a = drain(&mut m);
    assert!(
        matches!(&a[0], Action::Send(Message::DoctorReport(r)) if r.findings.len() == MAX_FINDINGS)
    );
    assert_eq!(
        a[1..],
        [
            Action::Send(Message::Done(Default::default())),
            Action::Close
        ]
    );
    assert_eq!(
        m.outcome(),
        Some(&Ok(format!("doctor: {MAX_FINDINGS} findings sent")))
    );
    assert_eq!(m.token(), None, "a doctor session is no test");
}

#[test]
fn tcp_connections_and_streams_ready_come_in_any_order() {
    let t0 = Instant::now();
    let mut m = accepted(t0, tcp(Direction::Both, 1), FEATURES);
    m.handle(t0, Input::DataConnection(1));
    assert_eq!(drain(&mut m), vec![Action::StoreConnection(1)]);
    // Not a stream of this test: dropped.
    m.handle(t0, Input::DataConnection(2));
    assert!(drain(&mut m).is_empty());
    m.handle(t0, ready(vec![]));
    assert!(drain(&mut m).is_empty(), "stream 0 is missing");
    m.handle(t0, Input::DataConnection(0));
    assert_eq!(
        drain(&mut m),
        vec![
            Action::StoreConnection(0),
            Action::SetUpStreams { udp_ports: vec![] }
        ]
    );
    // Data sockets ready: start (TCP needs no UDP hello).
    m.handle(t0, Input::StreamsSetUp);
    assert_eq!(
        drain(&mut m),
        vec![Action::StartEngine, Action::Send(Message::Start(Start {}))]
    );
    // The test's own duration (1 s) and the grace, not the server's limit.
    let limit = Duration::from_millis(1000) + HARD_STOP_GRACE;
    assert_eq!(m.poll_timeout(), Some(t0 + limit));
}

/// The board's core has no QUIC stack: a QUIC test is refused in one line that says which
/// build has it, and the connection closed.
#[cfg(not(feature = "quic"))]
#[test]
fn a_build_without_quic_refuses_a_quic_test_and_says_which_build_has_it() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    let mut spec = default_spec(Transport::Quic, Direction::Both, 1000, 1000);
    spec.quic_connections = Some(1);
    m.handle(t0, msg(Message::TestRequest(TestRequest { spec })));
    let got = drain(&mut m);
    assert!(
        matches!(&got[..], [Action::Send(Message::Error(e)), Action::Close]
            if e.code == ErrorCode::BadRequest && e.message.contains("no QUIC") && !e.message.contains('\n')),
        "{got:?}"
    );
}

// QUIC is the workstation build's (Cargo.toml's `quic` feature); the board's core refuses it.
#[cfg(feature = "quic")]
#[test]
fn a_quic_test_gives_its_port_and_collects_its_streams_as_connections() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    let mut spec = default_spec(Transport::Quic, Direction::Both, 1000, 1000);
    spec.streams = 2;
    spec.quic_connections = Some(2);
    m.handle(t0, msg(Message::TestRequest(TestRequest { spec })));
    assert_eq!(drain(&mut m), vec![Action::Admit]);
    let offer = linerate_wire::control::QuicOffer {
        port: 4433,
        cert_sha256: "ab".repeat(32),
    };
    m.handle(
        t0,
        Input::Admitted {
            token: TOKEN,
            crr_port: None,
            quic: Some(offer.clone()),
        },
    );
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [Action::Send(Message::Accept(a))] if a.quic.as_ref() == Some(&offer)),
        "{sent:?}"
    );
    // Four streams (two each way), in any order with streams_ready.
    m.handle(t0, ready(vec![]));
    for i in [3, 0, 2] {
        m.handle(t0, Input::DataConnection(i));
    }
    assert_eq!(drain(&mut m).len(), 3, "stream 1 is missing");
    m.handle(t0, Input::DataConnection(1));
    assert_eq!(
        drain(&mut m),
        vec![
            Action::StoreConnection(1),
            Action::SetUpStreams { udp_ports: vec![] }
        ]
    );
    // More connections than streams: refused with one line.
    let mut m = welcomed(t0, FEATURES);
    let mut spec = default_spec(Transport::Quic, Direction::Send, 1000, 1000);
    spec.quic_connections = Some(2);
    m.handle(t0, msg(Message::TestRequest(TestRequest { spec })));
    let e = refused(&mut m, ErrorCode::BadRequest);
    assert!(e.contains("at most one connection per stream"), "{e}");
}

#[test]
fn collecting_streams_fails_clearly() {
    let t0 = Instant::now();
    let mut m = accepted(t0, tcp(Direction::Send, 2), FEATURES);
    m.handle(t0, Input::DataConnection(0));
    m.handle(t0, ready(vec![]));
    drain(&mut m);
    m.handle_timeout(t0 + HS);
    let e = refused(&mut m, ErrorCode::Timeout);
    assert_eq!(
        e,
        "only 1 of 2 data connections arrived in time: check that port 5301/tcp is reachable"
    );
    let mut m = accepted(t0, tcp(Direction::Send, 2), FEATURES);
    m.handle(t0, ready(vec![]));
    m.handle(t0, ready(vec![]));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "streams_ready sent twice"
    );
    let mut m = accepted(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, msg(Message::Stop(Stop::default())));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "expected streams_ready, got stop"
    );
    let mut m = accepted(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(
        aborted(&mut m),
        "client closed the connection while opening streams"
    );
    let mut m = accepted(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::Received(Incoming::Broken("x".into())));
    assert_eq!(refused(&mut m, ErrorCode::Protocol), "bad frame: x");
}

#[test]
fn udp_ports_are_checked_before_they_are_claimed() {
    let t0 = Instant::now();
    for (ports, want) in [
        (vec![], "expected 1 UDP ports, got 0"),
        (vec![0], "streams_ready lists UDP port 0 (not a port)"),
    ] {
        let mut m = accepted(t0, udp(Direction::Send), FEATURES);
        m.handle(t0, ready(ports));
        assert_eq!(refused(&mut m, ErrorCode::Protocol), want);
    }
    let mut m = accepted(t0, udp(Direction::Both), FEATURES);
    m.handle(t0, ready(vec![4000, 4000]));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "streams_ready lists UDP port 4000 twice"
    );
    // TCP connections to a UDP test are not kept.
    let mut m = accepted(t0, udp(Direction::Both), FEATURES);
    m.handle(t0, Input::DataConnection(0));
    assert!(drain(&mut m).is_empty());
    m.handle(t0, ready(vec![4000, 4001]));
    assert_eq!(
        drain(&mut m),
        vec![Action::SetUpStreams {
            udp_ports: vec![4000, 4001]
        }]
    );
    // The driver refuses a port another test holds.
    m.fail(ErrorCode::BadRequest, "taken".into());
    assert_eq!(refused(&mut m, ErrorCode::BadRequest), "taken");
}

fn udp_hello(token: [u8; 16], index: u16) -> Vec<u8> {
    StreamHello {
        token,
        stream_index: index,
    }
    .to_bytes()
    .to_vec()
}

fn awaiting_hellos(t0: Instant) -> ServerMachine {
    let mut m = accepted(t0, udp(Direction::Both), FEATURES);
    m.handle(t0, ready(vec![4000, 4001]));
    m.handle(t0, Input::StreamsSetUp);
    drain(&mut m);
    m
}

#[test]
fn each_udp_port_proves_the_token_before_the_start() {
    let t0 = Instant::now();
    let mut m = awaiting_hellos(t0);
    let a0 = SocketAddr::new(PEER, 4000);
    let a1 = SocketAddr::new(PEER, 4001);
    assert_eq!(m.awaited_udp_hello(), Some((0, a0)));
    assert_eq!(m.poll_timeout(), Some(t0 + HS));
    let data = |data| Input::UdpDatagram { from: a0, data };
    // From elsewhere, the wrong size, not a hello: not the proof, and no harm.
    m.handle(
        t0,
        Input::UdpDatagram {
            from: SocketAddr::new(PEER, 9),
            data: udp_hello(TOKEN, 0),
        },
    );
    m.handle(t0, data(vec![0; 16]));
    m.handle(t0, data(vec![0; 24]));
    assert!(drain(&mut m).is_empty());
    assert_eq!(m.awaited_udp_hello(), Some((0, a0)));
    m.handle(t0, data(udp_hello(TOKEN, 0)));
    assert_eq!(m.awaited_udp_hello(), Some((1, a1)));
    m.handle(
        t0,
        Input::UdpDatagram {
            from: a1,
            data: udp_hello(TOKEN, 1),
        },
    );
    assert_eq!(
        drain(&mut m),
        vec![Action::StartEngine, Action::Send(Message::Start(Start {}))]
    );
    assert_eq!(m.awaited_udp_hello(), None);
}

#[test]
fn a_wrong_or_missing_udp_hello_ends_the_session() {
    let t0 = Instant::now();
    let a0 = SocketAddr::new(PEER, 4000);
    for bad in [udp_hello([1; 16], 0), udp_hello(TOKEN, 1)] {
        let mut m = awaiting_hellos(t0);
        m.handle(
            t0,
            Input::UdpDatagram {
                from: a0,
                data: bad,
            },
        );
        let e = refused(&mut m, ErrorCode::BadRequest);
        assert!(
            e.starts_with("the UDP port 4000 listed for stream 0 sent another test's token"),
            "{e}"
        );
    }
    let mut m = awaiting_hellos(t0);
    m.handle(
        t0,
        Input::UdpDatagram {
            from: a0,
            data: udp_hello(TOKEN, 0),
        },
    );
    m.handle_timeout(t0 + HS);
    let e = refused(&mut m, ErrorCode::Timeout);
    assert!(
        e.starts_with("no UDP hello for stream 1 arrived from 10.0.0.1:4001 in time"),
        "{e}"
    );
    let mut m = awaiting_hellos(t0);
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(
        aborted(&mut m),
        "client closed the connection while opening streams"
    );
    let mut m = awaiting_hellos(t0);
    m.handle(t0, msg(Message::Stop(Stop::default())));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "expected nothing, got stop"
    );
}

#[test]
fn a_client_before_1_3_sends_no_udp_hello() {
    let t0 = Instant::now();
    let old: Vec<&str> = FEATURES
        .iter()
        .copied()
        .filter(|f| *f != "udp_stream_hello")
        .collect();
    let mut m = accepted(t0, udp(Direction::Send), &old);
    m.handle(t0, ready(vec![4000]));
    m.handle(t0, Input::StreamsSetUp);
    assert_eq!(drain(&mut m)[1], Action::StartEngine);
    assert!(matches!(m.phase(), Phase::Running { .. }));
}

#[test]
fn raw_frames_send_start_before_the_engine() {
    let t0 = Instant::now();
    for (direction, early) in [(Direction::Send, true), (Direction::Receive, false)] {
        let mut s = udp(direction);
        s.raw_frames = true;
        let mut m = accepted(t0, s, FEATURES);
        m.handle(t0, ready(vec![4000]));
        m.handle(t0, Input::StreamsSetUp);
        let from = SocketAddr::new(PEER, 4000);
        m.handle(
            t0,
            Input::UdpDatagram {
                from,
                data: udp_hello(TOKEN, 0),
            },
        );
        let a = drain(&mut m);
        let mut want = vec![Action::Send(Message::Start(Start {})), Action::StartEngine];
        if early {
            want.insert(0, Action::TakeEarlyHost);
        }
        assert_eq!(a[1..], want, "{direction:?}");
    }
}

#[test]
fn intervals_stream_or_wait_for_the_results() {
    let t0 = Instant::now();
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::EngineInterval(interval(1)));
    assert_eq!(
        drain(&mut m),
        vec![Action::Send(Message::Interval(IntervalMsg {
            interval: interval(1)
        }))]
    );
    m.handle(t0, msg(Message::Stop(Stop { interrupted: true })));
    assert_eq!(
        drain(&mut m),
        vec![Action::FinishEngine {
            quiet: Duration::from_millis(100),
            max_drain: Duration::from_secs(3)
        }]
    );
    // The last intervals, then the report: results say they were streamed.
    m.handle(t0, Input::EngineInterval(interval(2)));
    let t1 = t0 + Duration::from_secs(1);
    m.handle(
        t1,
        Input::EngineFinished {
            report: Box::new(report()),
            capture: None,
        },
    );
    let a = drain(&mut m);
    assert_eq!(
        a[0],
        Action::Send(Message::Interval(IntervalMsg {
            interval: interval(2)
        }))
    );
    let Action::Send(Message::Results(r)) = &a[1] else {
        panic!("{a:?}")
    };
    assert!(r.intervals_streamed && r.report.intervals.is_empty());
    assert_eq!(m.poll_timeout(), Some(t1 + SERVER_RESULTS));
    m.handle(t1, msg(Message::Results(r.clone())));
    assert_eq!(
        drain(&mut m),
        vec![
            Action::Send(Message::Done(Default::default())),
            Action::Close
        ]
    );
    assert_eq!(
        m.outcome(),
        Some(&Ok(
            "tcp send p=1 len=1000: rx 1000.0 Mbit/s tx - cpu - (interrupted)".into()
        ))
    );
    // A client without interval_events gets them in the results.
    let old: Vec<&str> = FEATURES
        .iter()
        .copied()
        .filter(|f| *f != "interval_events")
        .collect();
    let mut m = running(t0, tcp(Direction::Send, 1), &old);
    m.handle(t0, Input::EngineInterval(interval(1)));
    m.handle(t0, msg(Message::Stop(Stop::default())));
    m.handle(t0, Input::EngineInterval(interval(2)));
    drain(&mut m);
    m.handle(
        t0,
        Input::EngineFinished {
            report: Box::new(report()),
            capture: None,
        },
    );
    let a = drain(&mut m);
    let [Action::Send(Message::Results(r))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert!(!r.intervals_streamed);
    assert_eq!(r.report.intervals, vec![interval(1), interval(2)]);
}

#[test]
fn finished_goes_once_when_byte_count_senders_end() {
    let t0 = Instant::now();
    let mut s = tcp(Direction::Receive, 1);
    s.duration_ms = None;
    s.bytes = Some(1000);
    let mut m = running(t0, s, FEATURES);
    let done = EngineStatus {
        has_senders: true,
        senders_done: true,
    };
    m.handle(
        t0,
        Input::EngineStatus(EngineStatus {
            senders_done: false,
            ..done
        }),
    );
    assert!(drain(&mut m).is_empty());
    m.handle(t0, Input::EngineStatus(done));
    m.handle(t0, Input::EngineStatus(done));
    assert_eq!(
        drain(&mut m),
        vec![Action::Send(Message::Finished(Default::default()))]
    );
    // A timed test never says finished.
    let mut m = running(t0, tcp(Direction::Receive, 1), FEATURES);
    m.handle(t0, Input::EngineStatus(done));
    assert!(drain(&mut m).is_empty());
}

#[test]
fn crr_connections_go_to_the_running_engine() {
    let t0 = Instant::now();
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::DataConnection(0));
    assert_eq!(drain(&mut m), vec![Action::AddConnection(0)]);
}

#[test]
fn a_running_test_ends_early_with_its_engine() {
    let t0 = Instant::now();
    let quick = Action::FinishEngine {
        quiet: Duration::ZERO,
        max_drain: Duration::from_millis(200),
    };
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, msg(Message::StreamsReady(StreamsReady::default())));
    let e = refused_with_engine(&mut m, ErrorCode::Protocol, &quick);
    assert_eq!(e, "expected stop, got streams_ready");
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::ShuttingDown);
    refused_with_engine(&mut m, ErrorCode::ShuttingDown, &quick);
    // A timed test (1 s) ends at its own duration plus the grace, whatever the client
    // does, long before the server's limit (10 s).
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    assert_eq!(
        m.poll_timeout(),
        Some(t0 + Duration::from_millis(1000) + HARD_STOP_GRACE)
    );
    m.handle_timeout(t0 + Duration::from_millis(999) + HARD_STOP_GRACE);
    assert!(drain(&mut m).is_empty(), "not before");
    m.handle_timeout(t0 + Duration::from_millis(1000) + HARD_STOP_GRACE);
    let e = refused_with_engine(&mut m, ErrorCode::Timeout, &quick);
    assert!(e.contains("past its duration of 1.0 s"), "{e}");
    // A byte count has no duration: the server's limit ends it.
    let mut bytes = tcp(Direction::Receive, 1);
    bytes.duration_ms = None;
    bytes.bytes = Some(1 << 20);
    let mut m = running(t0, bytes, FEATURES);
    m.handle_timeout(t0 + Duration::from_millis(10_000) + HARD_STOP_GRACE);
    let e = refused_with_engine(&mut m, ErrorCode::LimitExceeded, &quick);
    assert!(
        e.contains("limit of 10 s (linerate serve --max-duration)"),
        "{e}"
    );
    for (input, want) in [
        (Incoming::Closed, "client vanished during the test"),
        (
            Incoming::Broken("x".into()),
            "control connection broke during the test: x",
        ),
    ] {
        let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
        m.handle(t0, Input::Received(input));
        assert_eq!(drain(&mut m), vec![Action::Close, quick.clone()]);
        assert_eq!(m.outcome(), Some(&Err(want.to_string())));
    }
}

#[track_caller]
fn refused_with_engine(m: &mut ServerMachine, code: ErrorCode, quick: &Action) -> String {
    let a = drain(m);
    assert!(
        matches!(&a[0], Action::Send(Message::Error(e)) if e.code == code),
        "{a:?}"
    );
    assert_eq!(a[1..], [Action::Close, quick.clone()]);
    match m.outcome() {
        Some(Err(e)) => e.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_clients_results_may_not_come() {
    let t0 = Instant::now();
    let stopped = || {
        let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
        m.handle(t0, msg(Message::Stop(Stop::default())));
        // Whatever comes while the engine drains is late.
        m.handle(t0, msg(Message::Stop(Stop::default())));
        m.handle(
            t0,
            Input::EngineFinished {
                report: Box::new(report()),
                capture: None,
            },
        );
        drain(&mut m);
        m
    };
    let mut m = stopped();
    m.handle_timeout(t0 + SERVER_RESULTS);
    assert_eq!(
        refused(&mut m, ErrorCode::Timeout),
        "no results within the time-out"
    );
    let mut m = stopped();
    m.handle(t0, msg(Message::Stop(Stop::default())));
    assert_eq!(
        refused(&mut m, ErrorCode::Protocol),
        "expected results, got stop"
    );
    let mut m = stopped();
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(
        aborted(&mut m),
        "client closed the connection before results"
    );
}

#[test]
fn failed_writes_of_what_matters_end_the_session() {
    let t0 = Instant::now();
    let failed = |message| Input::SendFailed {
        message,
        error: "Broken pipe".into(),
    };
    let mut m = ServerMachine::new(settings(None), t0);
    m.handle(t0, msg(hello(FEATURES)));
    m.handle(t0, failed("welcome"));
    assert_eq!(aborted(&mut m), "write failed: Broken pipe");
    // Fire-and-forget messages do not.
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, failed("interval"));
    m.handle(t0, failed("finished"));
    assert!(matches!(m.phase(), Phase::Running { .. }));
    // `start` after the engine: the engine ends too.
    let mut m = accepted(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, Input::DataConnection(0));
    m.handle(t0, ready(vec![]));
    m.handle(t0, Input::StreamsSetUp);
    assert_eq!(m.poll_action(), Some(Action::StoreConnection(0)));
    assert_eq!(
        m.poll_action(),
        Some(Action::SetUpStreams { udp_ports: vec![] })
    );
    assert_eq!(m.poll_action(), Some(Action::StartEngine));
    assert!(matches!(
        m.poll_action(),
        Some(Action::Send(Message::Start(_)))
    ));
    m.handle(t0, failed("start"));
    assert_eq!(
        drain(&mut m),
        vec![
            Action::Close,
            Action::FinishEngine {
                quiet: Duration::ZERO,
                max_drain: Duration::from_millis(200)
            }
        ]
    );
}

#[test]
fn results_that_do_not_fit_a_frame_leave_out_capture_then_intervals() {
    let mut r = report();
    r.intervals = (0..2000).map(interval).collect();
    let capture = ReturnedCapture {
        pcap_hex: Some("ab".repeat(4000)),
        note: None,
    };
    let size = |m: &Message| linerate_wire::control::encode(m).unwrap().len();
    let all = results_message(r.clone(), false, Some(capture.clone()), 1 << 22);
    let Message::Results(full) = &all else {
        panic!()
    };
    assert_eq!(full.report.intervals.len(), 2000);
    assert!(full.capture.as_ref().is_some_and(|c| c.pcap_hex.is_some()));
    // Room for the intervals but not the capture.
    let max = (size(&all) - 1000) as u32;
    let Message::Results(m) = results_message(r.clone(), false, Some(capture.clone()), max) else {
        panic!()
    };
    assert_eq!(m.report.intervals.len(), 2000);
    let c = m.capture.as_ref().unwrap();
    assert!(c.pcap_hex.is_none() && c.note.as_ref().unwrap().contains("left out"));
    // Room for neither.
    let Message::Results(m) = results_message(r.clone(), false, Some(capture), 4000) else {
        panic!()
    };
    assert!(m.report.intervals.is_empty());
    assert!(m.report.warnings[0].contains("2000 intervals are left out"));
    // Streamed: never in the results.
    let Message::Results(m) = results_message(r, true, None, 1 << 22) else {
        panic!()
    };
    assert!(m.intervals_streamed && m.report.intervals.is_empty());
}

#[test]
fn features_are_the_intersection() {
    let t0 = Instant::now();
    let m = welcomed(t0, &["rr", "auth"]);
    assert_eq!(m.features(), Features::from_names(&["rr", "auth"]));
}

#[test]
fn data_connections_before_the_test_or_after_it_are_dropped() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, Input::DataConnection(0));
    assert!(drain(&mut m).is_empty());
    assert!(matches!(m.phase(), Phase::AwaitRequest { .. }));
    let mut m = running(t0, tcp(Direction::Send, 1), FEATURES);
    m.handle(t0, msg(Message::Stop(Stop::default())));
    drain(&mut m);
    m.handle(t0, Input::DataConnection(0));
    assert!(drain(&mut m).is_empty());
    // Driver answers that come at the wrong time change nothing.
    m.handle(
        t0,
        Input::Admitted {
            token: [1; 16],
            crr_port: None,
            quic: None,
        },
    );
    m.handle(t0, Input::StreamsSetUp);
    assert!(drain(&mut m).is_empty());
    assert_eq!(m.token(), Some(TOKEN));
}

fn hook_req(name: &str, v: &str) -> linerate_wire::hooks::HookRequest {
    linerate_wire::hooks::HookRequest {
        name: name.into(),
        params: [("n".to_string(), v.to_string())].into(),
    }
}

/// hook_request → the driver runs it → hook_result; the session stays open for the next
/// request (waiting as long as a test may run), and the client closing ends it cleanly.
#[test]
fn hooks_run_one_after_another_until_the_client_closes() {
    use linerate_wire::hooks::{HookResult, MAX_OUTPUT};
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    for i in 0..2 {
        let req = hook_req("mtu", "9000");
        m.handle(t0, msg(Message::HookRequest(req.clone())));
        assert_eq!(drain(&mut m), vec![Action::RunHook(req)]);
        assert_eq!(*m.phase(), Phase::RunningHook);
        let res = HookResult {
            name: "mtu".into(),
            argv: vec!["ip".into()],
            exit_code: Some(0),
            stdout: "x".repeat(MAX_OUTPUT + 10),
            ..HookResult::default()
        };
        m.handle(t0, Input::HookRan(Ok(res)));
        let a = drain(&mut m);
        assert!(
            matches!(&a[..], [Action::Send(Message::HookResult(r))] if r.stdout.len() == MAX_OUTPUT),
            "{i}: {a:?}"
        );
        // Waits a test's length and the idle time-out for the next one.
        let deadline = m.poll_timeout().unwrap();
        assert_eq!(deadline, t0 + IDLE + Duration::from_millis(10_000));
    }
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(drain(&mut m), vec![Action::Close]);
    assert_eq!(*m.phase(), Phase::Done);
    assert!(matches!(m.outcome(), Some(Ok(l)) if l.contains("hooks: 2 run")));
}

#[test]
fn a_refused_hook_ends_the_session_with_the_reason() {
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::HookRequest(hook_req("rm", "1"))));
    drain(&mut m);
    m.handle(
        t0,
        Input::HookRan(Err("this server has no hook named 'rm'".into())),
    );
    let why = refused(&mut m, ErrorCode::BadRequest);
    assert!(why.contains("no hook named 'rm'"), "{why}");

    // Without the feature in hello, a hook_request is a protocol error.
    let mut m = welcomed(t0, &["tcp_stream"]);
    m.handle(t0, msg(Message::HookRequest(hook_req("mtu", "1"))));
    refused(&mut m, ErrorCode::Protocol);

    // Oversized requests are refused before the driver sees them.
    let mut m = welcomed(t0, FEATURES);
    let mut big = hook_req("mtu", "1");
    for i in 0..=linerate_wire::hooks::MAX_PARAMS {
        big.params.insert(format!("p{i}"), "1".into());
    }
    m.handle(t0, msg(Message::HookRequest(big)));
    refused(&mut m, ErrorCode::BadRequest);

    // Waiting past the deadline for the next request ends it (the driver restores).
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::HookRequest(hook_req("mtu", "1"))));
    drain(&mut m);
    m.handle(
        t0,
        Input::HookRan(Ok(linerate_wire::hooks::HookResult::default())),
    );
    drain(&mut m);
    let late = m.poll_timeout().unwrap() + Duration::from_millis(1);
    m.handle_timeout(late);
    let why = refused(&mut m, ErrorCode::Timeout);
    assert!(why.contains("hook_request"), "{why}");
}

/// counters_request → the driver reads → counters_snapshot; the session stays open for
/// the next request (as long as a test may run) and ends cleanly when the client closes.
/// It never asks for admission: a counters session takes no test slot.
#[test]
fn device_counters_are_sent_one_by_one_until_the_client_closes() {
    use linerate_wire::device::{CountersRequest, DeviceSnapshot};
    let t0 = Instant::now();
    let mut m = welcomed(t0, FEATURES);
    for k in 0..3u64 {
        m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
        assert_eq!(drain(&mut m), vec![Action::ReadCounters], "{k}");
        assert_eq!(*m.phase(), Phase::ReadingCounters);
        let snap = DeviceSnapshot {
            monotonic_ns: k,
            ..DeviceSnapshot::default()
        };
        m.handle(t0, Input::CountersRead(Box::new(snap.clone())));
        assert_eq!(
            drain(&mut m),
            vec![Action::Send(Message::CountersSnapshot(Box::new(snap)))]
        );
        assert!(!m.in_handshake());
        assert_eq!(
            m.poll_timeout(),
            Some(t0 + IDLE + Duration::from_millis(10_000))
        );
    }
    m.handle(t0, Input::Received(Incoming::Closed));
    assert_eq!(drain(&mut m), vec![Action::Close]);
    assert_eq!(*m.phase(), Phase::Done);
    assert!(matches!(m.outcome(), Some(Ok(l)) if l.contains("3 snapshots sent")));
}

#[test]
fn device_counters_need_the_feature_and_a_client_that_keeps_asking() {
    use linerate_wire::device::{CountersRequest, DeviceSnapshot, IfaceSnapshot};
    let t0 = Instant::now();
    // Without the feature in hello, a counters_request is a protocol error.
    let mut m = welcomed(t0, &["tcp_stream"]);
    m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
    refused(&mut m, ErrorCode::Protocol);

    // A client that goes quiet past the deadline is timed out.
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
    drain(&mut m);
    m.handle(t0, Input::CountersRead(Box::default()));
    drain(&mut m);
    let late = m.poll_timeout().unwrap() + Duration::from_millis(1);
    m.handle_timeout(late);
    let why = refused(&mut m, ErrorCode::Timeout);
    assert!(why.contains("counters_request"), "{why}");

    // A test request in a counters session is out of order.
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
    drain(&mut m);
    m.handle(t0, Input::CountersRead(Box::default()));
    drain(&mut m);
    m.handle(
        t0,
        msg(Message::TestRequest(linerate_wire::control::TestRequest {
            spec: tcp(Direction::Send, 1),
        })),
    );
    refused(&mut m, ErrorCode::Protocol);

    // A host whose counters exceed the caps sends the reason, not the sections.
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
    drain(&mut m);
    let huge = DeviceSnapshot {
        monotonic_ns: 7,
        interfaces: Some(vec![
            IfaceSnapshot::default();
            linerate_wire::device::MAX_DEVICE_INTERFACES + 1
        ]),
        ..DeviceSnapshot::default()
    };
    m.handle(t0, Input::CountersRead(Box::new(huge)));
    let a = drain(&mut m);
    let [Action::Send(Message::CountersSnapshot(s))] = &a[..] else {
        panic!("{a:?}")
    };
    assert!(s.interfaces.is_none() && s.monotonic_ns == 7);
    assert!(s.warnings[0].contains("caps"), "{:?}", s.warnings);

    // Shutting down ends a waiting counters session.
    let mut m = welcomed(t0, FEATURES);
    m.handle(t0, msg(Message::CountersRequest(CountersRequest {})));
    drain(&mut m);
    m.handle(t0, Input::CountersRead(Box::default()));
    drain(&mut m);
    m.handle(t0, Input::ShuttingDown);
    refused(&mut m, ErrorCode::ShuttingDown);
}
