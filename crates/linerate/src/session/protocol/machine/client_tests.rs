//! The client machine driven through every phase, time-out and unexpected message, with
//! fake instants and no socket.

use std::time::{Duration, Instant};

use linerate_wire::control::{
    Accept, AuthChallenge, AuthOk, DelaySpec, Direction, ErrorCode, ErrorMsg, Feature, Features,
    Finished, IntervalMsg, Message, ProtocolVersion, Reject, Results, ReturnedCapture, RrSpec,
    ServerLimits, Start, Stop, TestSpec, Transport, Welcome,
};
use linerate_wire::doctor::{DoctorReport, DoctorRequest, Finding, Severity, MAX_FINDINGS};
use linerate_wire::report::{HostInfo, IntervalReport, Role, SideReport, Totals};
use linerate_wire::stream_hello;

use super::client::{
    downgrade, Action, ClientConfig, ClientError, ClientMachine, EngineStatus, Input, Phase,
};
use super::{Incoming, CLIENT_DONE, CLIENT_HANDSHAKE, CLIENT_RESULTS, UDP_HELLO_PERIOD};
use crate::model::plan::{default_spec, Credentials};
use crate::session::protocol::auth::{self, Prover};

const SERVER_NONCE: [u8; 32] = [7; 32];
const CLIENT_NONCE: [u8; 32] = [9; 32];
const TOKEN: [u8; 16] = [0x5a; 16];

fn cfg(credentials: Option<Credentials>) -> ClientConfig {
    ClientConfig {
        server: "srv:5301".into(),
        credentials,
        client_nonce: CLIENT_NONCE,
        software: "linerate test".into(),
    }
}

fn alice() -> Credentials {
    Credentials::new("alice", "s3cret").unwrap()
}

fn welcome(features: Features) -> Welcome {
    Welcome {
        protocol: ProtocolVersion::CURRENT,
        session_id: "s".into(),
        features: features.names(),
        software: "linerate server".into(),
        limits: ServerLimits {
            max_duration_ms: 3_600_000,
            max_streams: 128,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 64 << 20,
        },
        auth: None,
    }
}

fn msg(m: Message) -> Input {
    Input::Received(Incoming::Msg(m))
}

fn error(code: ErrorCode, text: &str) -> Message {
    Message::Error(ErrorMsg {
        code,
        message: text.into(),
    })
}

/// Every action queued, in order.
fn drain(m: &mut ClientMachine) -> Vec<Action> {
    std::iter::from_fn(|| m.poll_action()).collect()
}

fn failure(m: &ClientMachine) -> String {
    assert_eq!(*m.phase(), Phase::Failed);
    m.error().expect("an error").to_string()
}

/// A machine that got `welcome` with `features` (no challenge) at `t0`.
fn connected(t0: Instant, features: Features) -> ClientMachine {
    let mut m = ClientMachine::new(cfg(None), t0);
    drain(&mut m);
    m.handle(t0, msg(Message::Welcome(welcome(features))));
    assert_eq!(*m.phase(), Phase::Connected);
    m
}

fn spec() -> TestSpec {
    default_spec(Transport::Tcp, Direction::Send, 1000, 1000)
}

/// A machine whose test runs (engine started at `t0`) with `spec`.
fn running(t0: Instant, spec: TestSpec, features: Features) -> ClientMachine {
    let mut m = connected(t0, features);
    m.request_test(t0, spec);
    m.handle(t0, msg(accept()));
    m.handle(t0, Input::StreamsOpened { udp_ports: vec![] });
    m.handle(t0, msg(Message::Start(Start {})));
    m.handle(t0, Input::EngineStarted);
    drain(&mut m);
    assert!(
        matches!(m.phase(), Phase::Running { .. }),
        "{:?}",
        m.phase()
    );
    m
}

fn accept() -> Message {
    Message::Accept(Accept {
        token: stream_hello::token_to_hex(&TOKEN),
        server_cpu_count: 2,
        crr_port: None,
        quic: None,
    })
}

fn report(role: Role) -> SideReport {
    SideReport {
        role,
        host: HostInfo::default(),
        streams: Vec::new(),
        intervals: vec![IntervalReport::default()],
        totals: Totals::default(),
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
fn hello_lists_every_feature_and_the_current_version() {
    let t0 = Instant::now();
    let mut m = ClientMachine::new(cfg(None), t0);
    let a = drain(&mut m);
    let [Action::Send(Message::Hello(h))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(h.protocol, ProtocolVersion::CURRENT);
    assert_eq!(h.features, linerate_wire::control::FEATURES);
    assert_eq!(m.poll_timeout(), Some(t0 + CLIENT_HANDSHAKE));
}

#[test]
fn welcome_opens_the_session_and_unused_credentials_are_named() {
    let t0 = Instant::now();
    let mut m = ClientMachine::new(cfg(Some(alice())), t0);
    drain(&mut m);
    let f = Features::from_names(&["tcp_stream", "rr"]);
    m.handle(t0, msg(Message::Welcome(welcome(f))));
    assert_eq!(*m.phase(), Phase::Connected);
    assert_eq!(m.features(), f);
    assert_eq!(m.poll_timeout(), None);
    assert!(
        m.warnings()[0].contains("does not ask for authentication"),
        "{:?}",
        m.warnings()
    );
}

#[test]
fn required_credentials_refuse_a_server_that_does_not_ask_for_them() {
    let t0 = Instant::now();
    let creds = Credentials {
        required: true,
        ..alice()
    };
    let mut m = ClientMachine::new(cfg(Some(creds)), t0);
    drain(&mut m);
    let f = Features::from_names(&["tcp_stream"]);
    m.handle(t0, msg(Message::Welcome(welcome(f))));
    let e = m.error().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("does not ask for authentication"), "{e}");
    assert_ne!(*m.phase(), Phase::Connected);
}

#[test]
fn no_welcome_in_time_is_a_failure_and_early_calls_do_nothing() {
    let t0 = Instant::now();
    let mut m = ClientMachine::new(cfg(None), t0);
    drain(&mut m);
    m.handle_timeout(t0 + CLIENT_HANDSHAKE - Duration::from_millis(1));
    assert!(matches!(m.phase(), Phase::AwaitWelcome { .. }));
    m.handle_timeout(t0 + CLIENT_HANDSHAKE);
    let e = failure(&m);
    assert!(e.contains("sent no welcome in time"), "{e}");
    assert_eq!(drain(&mut m), vec![Action::Close]);
}

#[test]
fn reject_error_close_and_out_of_order_before_welcome() {
    let t0 = Instant::now();
    let cases: Vec<(Input, &str)> = vec![
        (
            msg(Message::Reject(Reject {
                code: ErrorCode::IncompatibleVersion,
                server_protocol: ProtocolVersion { major: 2, minor: 0 },
                message: "no".into(),
            })),
            "the server at srv:5301 speaks protocol 2.0 and this client 1.3: no",
        ),
        (
            msg(accept()),
            "protocol error: expected welcome, got accept",
        ),
        (
            Input::Received(Incoming::Closed),
            "the server closed the connection while we waited for welcome",
        ),
        (
            Input::Received(Incoming::Broken("junk".into())),
            "bad control frame from the server while waiting for welcome: junk",
        ),
        (
            msg(error(ErrorCode::Busy, "full")),
            "server refused the test: full",
        ),
    ];
    for (input, want) in cases {
        let mut m = ClientMachine::new(cfg(None), t0);
        drain(&mut m);
        m.handle(t0, input);
        assert_eq!(failure(&m), want);
        assert_eq!(drain(&mut m), vec![Action::Close]);
    }
    let mut m = ClientMachine::new(cfg(None), t0);
    m.handle(t0, msg(error(ErrorCode::Busy, "full")));
    assert!(matches!(
        m.error(),
        Some(ClientError::Server {
            code: ErrorCode::Busy,
            ..
        })
    ));
}

/// A welcome at another major version is refused (the server did not negotiate, or speaks
/// another protocol); one above this client's minor runs at this client's version.
#[test]
fn a_welcome_is_held_to_the_version_both_speak() {
    let t0 = Instant::now();
    for major in [0, 2] {
        let mut m = ClientMachine::new(cfg(None), t0);
        drain(&mut m);
        let mut w = welcome(Features::all());
        w.protocol = ProtocolVersion { major, minor: 0 };
        m.handle(t0, msg(Message::Welcome(w)));
        assert_eq!(
            failure(&m),
            format!("the server at srv:5301 answered in protocol {major}.0 and this client speaks 1.3: use linerate versions with the same major version on both ends")
        );
        assert_eq!(drain(&mut m), vec![Action::Close]);
    }
    let mut m = ClientMachine::new(cfg(None), t0);
    drain(&mut m);
    let mut w = welcome(Features::all());
    w.protocol = ProtocolVersion { major: 1, minor: 9 };
    m.handle(t0, msg(Message::Welcome(w)));
    assert_eq!(*m.phase(), Phase::Connected);
    assert_eq!(
        m.welcome().map(|w| w.protocol),
        Some(ProtocolVersion::CURRENT)
    );
}

fn challenged(t0: Instant, creds: Option<Credentials>, method: &str, nonce: &str) -> ClientMachine {
    let mut m = ClientMachine::new(cfg(creds), t0);
    drain(&mut m);
    let mut w = welcome(Features::all());
    w.auth = Some(AuthChallenge {
        method: method.into(),
        nonce: nonce.into(),
    });
    m.handle(t0, msg(Message::Welcome(w)));
    m
}

#[test]
fn authentication_proves_both_ends() {
    let t0 = Instant::now();
    let mut m = challenged(t0, Some(alice()), auth::METHOD, &auth::hex(&SERVER_NONCE));
    let a = drain(&mut m);
    let [Action::Send(Message::Auth(r))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(r.user, "alice");
    assert_eq!(r.nonce, auth::hex(&CLIENT_NONCE));
    let key = alice().key;
    assert!(key.verify(
        Prover::Client,
        &SERVER_NONCE,
        &CLIENT_NONCE,
        "alice",
        &r.mac
    ));
    assert_eq!(m.poll_timeout(), Some(t0 + CLIENT_HANDSHAKE));
    let mac = key.proof(Prover::Server, &SERVER_NONCE, &CLIENT_NONCE, "alice");
    m.handle(t0, msg(Message::AuthOk(AuthOk { mac })));
    assert_eq!(*m.phase(), Phase::Connected);
}

#[test]
fn authentication_failures() {
    let t0 = Instant::now();
    let good = auth::hex(&SERVER_NONCE);
    let e = failure(&challenged(t0, None, auth::METHOD, &good));
    assert!(
        e.contains("requires authentication") && e.contains("--auth-user"),
        "{e}"
    );
    let e = failure(&challenged(t0, Some(alice()), "rot13", &good));
    assert!(e.contains("\"rot13\""), "{e}");
    let e = failure(&challenged(t0, Some(alice()), auth::METHOD, "abcd"));
    assert!(e.contains("nonce is not 32 bytes"), "{e}");
    // A server that cannot prove it knows the key.
    let mut m = challenged(t0, Some(alice()), auth::METHOD, &good);
    m.handle(
        t0,
        msg(Message::AuthOk(AuthOk {
            mac: "00".repeat(32),
        })),
    );
    assert!(failure(&m).contains("could not prove it knows the same secret"));
    // The server's refusal, something else, or nothing.
    let mut m = challenged(t0, Some(alice()), auth::METHOD, &good);
    m.handle(
        t0,
        msg(error(ErrorCode::AuthFailed, "authentication failed: x")),
    );
    assert!(failure(&m).contains("authentication failed"));
    let mut m = challenged(t0, Some(alice()), auth::METHOD, &good);
    m.handle(t0, msg(accept()));
    assert_eq!(failure(&m), "protocol error: expected auth_ok, got accept");
    let mut m = challenged(t0, Some(alice()), auth::METHOD, &good);
    m.handle_timeout(t0 + CLIENT_HANDSHAKE);
    assert!(failure(&m).contains("sent no auth_ok in time"));
}

#[test]
fn a_test_request_drops_what_the_server_does_not_offer() {
    let t0 = Instant::now();
    let mut s = default_spec(Transport::Udp, Direction::Both, 1000, 1000);
    s.one_way_delay = Some(DelaySpec { tag_seq: Some(3) });
    s.smooth_pacing = true;
    s.raw_frames = true;
    s.capture_snaplen = Some(128);
    let old = Features::from_names(&["udp_stream", "interval_events"]);
    let (r, w) = downgrade(&s, old);
    assert!(r.one_way_delay.is_none() && !r.smooth_pacing && !r.raw_frames);
    assert_eq!(r.capture_snaplen, None);
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w[2].contains("not raw frames"), "{w:?}");
    // A server that only receives needs no word about raw frames.
    let mut send = s.clone();
    send.direction = Direction::Send;
    assert_eq!(downgrade(&send, old).1.len(), 3);
    let (r, w) = downgrade(&s, Features::all());
    assert_eq!((r, w.len()), (s.clone(), 0));
    // The request carries the downgraded spec; the warnings stay for the record.
    let mut m = connected(t0, old);
    m.request_test(t0, s);
    let a = drain(&mut m);
    let [Action::Send(Message::TestRequest(req))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert!(!req.spec.raw_frames);
    assert_eq!(m.poll_timeout(), Some(t0 + CLIENT_HANDSHAKE));
    assert_eq!(m.warnings().len(), 4);
}

#[test]
fn an_rr_test_needs_a_server_that_offers_it() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::from_names(&["tcp_stream"]));
    let mut s = spec();
    s.rr = Some(RrSpec {
        request_bytes: 1,
        response_bytes: 1,
        burst: 1,
        connect_per_transaction: false,
        udp: false,
        timeout_ms: 0,
        target_tps: None,
        bounceback: None,
    });
    m.request_test(t0, s);
    let e = failure(&m);
    assert!(
        e.contains("does not offer request/response tests") && e.contains("1.3"),
        "{e}"
    );
}

#[test]
fn accept_opens_the_streams_with_its_token() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    m.request_test(t0, spec());
    drain(&mut m);
    m.handle(t0, msg(accept()));
    assert_eq!(drain(&mut m), vec![Action::OpenStreams { token: TOKEN }]);
    assert_eq!(*m.phase(), Phase::OpenStreams);
    assert_eq!(m.poll_timeout(), None);
    // A token that is not one, a refusal, or nothing.
    for (input, want) in [
        (
            msg(Message::Accept(Accept {
                token: "xyz".into(),
                server_cpu_count: 1,
                crr_port: None,
                quic: None,
            })),
            "token is not 32 hex digits",
        ),
        (
            msg(error(ErrorCode::LimitExceeded, "at most 2")),
            "at most 2",
        ),
        (msg(Message::Start(Start {})), "expected accept, got start"),
    ] {
        let mut m = connected(t0, Features::all());
        m.request_test(t0, spec());
        m.handle(t0, input);
        assert!(failure(&m).contains(want), "{want}");
    }
    let mut m = connected(t0, Features::all());
    m.request_test(t0, spec());
    m.handle_timeout(t0 + CLIENT_HANDSHAKE);
    assert!(failure(&m).contains("sent no accept in time"));
}

#[test]
fn udp_stream_hellos_repeat_until_start() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    m.request_test(
        t0,
        default_spec(Transport::Udp, Direction::Send, 1000, 1000),
    );
    m.handle(t0, msg(accept()));
    drain(&mut m);
    m.handle(
        t0,
        Input::StreamsOpened {
            udp_ports: vec![4000],
        },
    );
    let a = drain(&mut m);
    assert_eq!(a.len(), 2, "{a:?}");
    assert!(matches!(&a[0], Action::Send(Message::StreamsReady(r)) if r.udp_ports == [4000]));
    assert_eq!(a[1], Action::SendUdpHellos);
    let mut t = t0;
    for _ in 0..3 {
        assert_eq!(m.poll_timeout(), Some(t + UDP_HELLO_PERIOD));
        t += UDP_HELLO_PERIOD;
        m.handle_timeout(t);
        assert_eq!(drain(&mut m), vec![Action::SendUdpHellos]);
    }
    m.handle(t, msg(Message::Start(Start {})));
    assert!(matches!(drain(&mut m).as_slice(), [Action::StartEngine(_)]));
    // Without start, the hellos end at the deadline with a failure.
    let mut m = connected(t0, Features::all());
    m.request_test(
        t0,
        default_spec(Transport::Udp, Direction::Send, 1000, 1000),
    );
    m.handle(t0, msg(accept()));
    m.handle(
        t0,
        Input::StreamsOpened {
            udp_ports: vec![4000],
        },
    );
    drain(&mut m);
    m.handle_timeout(t0 + CLIENT_HANDSHAKE);
    assert!(failure(&m).contains("sent no start in time"));
}

#[test]
fn no_hellos_for_tcp_or_an_older_server() {
    let t0 = Instant::now();
    let old = Features::all().intersection(Features::from_names(&["tcp_stream", "udp_stream"]));
    for (features, transport, ports) in [
        (Features::all(), Transport::Tcp, vec![]),
        (old, Transport::Udp, vec![4000]),
    ] {
        let mut m = connected(t0, features);
        m.request_test(t0, default_spec(transport, Direction::Send, 1000, 1000));
        m.handle(t0, msg(accept()));
        drain(&mut m);
        m.handle(t0, Input::StreamsOpened { udp_ports: ports });
        assert_eq!(drain(&mut m).len(), 1);
        assert_eq!(m.poll_timeout(), Some(t0 + CLIENT_HANDSHAKE));
    }
}

#[test]
fn start_runs_the_engine_with_this_ends_raw_frames() {
    let t0 = Instant::now();
    let mut s = default_spec(Transport::Udp, Direction::Send, 1000, 1000);
    s.raw_frames = true;
    // The server does not offer raw frames: the request drops them, this end keeps them.
    let f = Features::all().intersection(Features::from_names(&["udp_stream"]));
    let mut m = connected(t0, f);
    m.request_test(t0, s);
    m.handle(t0, msg(accept()));
    m.handle(t0, Input::StreamsOpened { udp_ports: vec![1] });
    drain(&mut m);
    m.handle(t0, msg(Message::Start(Start {})));
    let a = drain(&mut m);
    let [Action::StartEngine(engine)] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert!(engine.raw_frames);
    // The test's time counts from the engine's start.
    assert_eq!(m.poll_timeout(), None);
    let t1 = t0 + Duration::from_millis(30);
    m.handle(t1, Input::EngineStarted);
    assert_eq!(m.poll_timeout(), Some(t1 + Duration::from_millis(1000)));
}

#[test]
fn a_timed_test_stops_at_its_end_and_exchanges_results() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    let end = t0 + Duration::from_millis(1000);
    m.handle(
        t0,
        msg(Message::Interval(IntervalMsg {
            interval: interval(1),
        })),
    );
    assert_eq!(drain(&mut m), vec![Action::ServerInterval(interval(1))]);
    m.handle_timeout(end - Duration::from_millis(1));
    assert!(drain(&mut m).is_empty());
    m.handle_timeout(end);
    assert_eq!(
        drain(&mut m),
        vec![
            Action::StopSenders,
            Action::Send(Message::Stop(Stop { interrupted: false }))
        ]
    );
    assert_eq!(m.poll_timeout(), Some(end + CLIENT_RESULTS));
    // More intervals while the server drains; then results without them.
    m.handle(
        end,
        msg(Message::Interval(IntervalMsg {
            interval: interval(2),
        })),
    );
    m.handle(end, msg(Message::Finished(Finished {})));
    let mut server = report(Role::Server);
    server.intervals.clear();
    let capture = ReturnedCapture {
        pcap_hex: Some("00".into()),
        note: None,
    };
    m.handle(
        end,
        msg(Message::Results(Box::new(Results {
            report: server,
            intervals_streamed: true,
            capture: Some(capture.clone()),
        }))),
    );
    assert_eq!(
        drain(&mut m),
        vec![Action::ServerInterval(interval(2)), Action::FinishEngine]
    );
    // Late messages while the engine finishes are ignored.
    m.handle(
        end,
        msg(Message::Interval(IntervalMsg {
            interval: interval(3),
        })),
    );
    assert!(drain(&mut m).is_empty());
    m.handle(end, Input::EngineFinished(Box::new(report(Role::Client))));
    let a = drain(&mut m);
    let [Action::Send(Message::Results(mine))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert!(mine.report.intervals.is_empty() && !mine.intervals_streamed);
    assert_eq!(m.poll_timeout(), Some(end + CLIENT_DONE));
    m.handle(end, msg(Message::Done(linerate_wire::control::Done {})));
    assert_eq!(drain(&mut m), vec![Action::Close]);
    assert_eq!(*m.phase(), Phase::Closed);
    let o = m.outcome();
    assert!(!o.interrupted && o.warnings.is_empty(), "{o:?}");
    assert_eq!(o.protocol, Some(ProtocolVersion::CURRENT));
    assert_eq!(o.server_capture, Some(capture));
    let server = o.server_report.expect("server report");
    // The streamed intervals are put back, in order.
    assert_eq!(server.intervals, vec![interval(1), interval(2)]);
}

#[test]
fn done_may_not_come() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    m.handle(t0, Input::Interrupt);
    m.handle(
        t0,
        msg(Message::Results(Box::new(Results {
            report: report(Role::Server),
            intervals_streamed: false,
            capture: None,
        }))),
    );
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    drain(&mut m);
    m.handle_timeout(t0 + CLIENT_DONE);
    assert_eq!(drain(&mut m), vec![Action::Close]);
    let o = m.outcome();
    assert!(o.interrupted);
    assert_eq!(
        o.warnings,
        vec!["interrupted: the totals cover the part of the test that ran"]
    );
    // Not streamed: the server's own intervals stay.
    assert_eq!(o.server_report.map(|r| r.intervals.len()), Some(1));
}

#[test]
fn ctrl_c_stops_the_test_as_interrupted() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    m.handle(t0, Input::Interrupt);
    assert_eq!(
        drain(&mut m),
        vec![
            Action::StopSenders,
            Action::Send(Message::Stop(Stop { interrupted: true }))
        ]
    );
    // Ctrl-C again, and the engine's state, change nothing now.
    m.handle(t0, Input::Interrupt);
    m.handle(t0, Input::Engine(EngineStatus::default()));
    assert!(drain(&mut m).is_empty());
}

fn bytes_spec(direction: Direction, transport: Transport) -> TestSpec {
    let mut s = default_spec(transport, direction, 1000, 1000);
    s.duration_ms = None;
    s.bytes = Some(1 << 20);
    s
}

#[test]
fn a_fixed_size_test_stops_when_both_ends_are_through() {
    let t0 = Instant::now();
    let done = EngineStatus {
        has_senders: true,
        senders_done: true,
        receivers_done: false,
    };
    let busy = EngineStatus {
        senders_done: false,
        ..done
    };
    // Sending: when this end's senders are done.
    let mut m = running(
        t0,
        bytes_spec(Direction::Send, Transport::Tcp),
        Features::all(),
    );
    // Even a byte count has an end: 1 MiB at 1 Mbit/s, plus 10 s.
    assert_eq!(m.poll_timeout(), Some(t0 + m.byte_deadline(1 << 20)));
    m.handle(t0, Input::Engine(busy));
    assert!(drain(&mut m).is_empty());
    m.handle(t0, Input::Engine(done));
    assert_eq!(drain(&mut m)[0], Action::StopSenders);
    // Receiving TCP: after the server's `finished` and the last byte in.
    let recv = EngineStatus {
        has_senders: false,
        senders_done: false,
        receivers_done: true,
    };
    let mut m = running(
        t0,
        bytes_spec(Direction::Receive, Transport::Tcp),
        Features::all(),
    );
    m.handle(t0, Input::Engine(recv));
    assert!(drain(&mut m).is_empty(), "not before `finished`");
    m.handle(t0, msg(Message::Finished(Finished {})));
    m.handle(
        t0,
        Input::Engine(EngineStatus {
            receivers_done: false,
            ..recv
        }),
    );
    assert!(drain(&mut m).is_empty(), "not before the last byte");
    m.handle(t0, Input::Engine(recv));
    assert_eq!(drain(&mut m)[0], Action::StopSenders);
    // Receiving UDP: `finished` is enough (no end of stream to see).
    let mut m = running(
        t0,
        bytes_spec(Direction::Receive, Transport::Udp),
        Features::all(),
    );
    m.handle(t0, msg(Message::Finished(Finished {})));
    m.handle(t0, Input::Engine(EngineStatus::default()));
    assert_eq!(drain(&mut m)[0], Action::StopSenders);
}

#[test]
fn the_server_ending_the_test_keeps_what_was_measured() {
    let t0 = Instant::now();
    for (input, want) in [
        (
            msg(error(ErrorCode::ShuttingDown, "bye")),
            "the test ended early: bye",
        ),
        (
            msg(accept()),
            "the test ended early: protocol error: unexpected accept during the test",
        ),
        (
            Input::Received(Incoming::Closed),
            "the test ended early: the server closed the control connection during the test",
        ),
    ] {
        let mut m = running(t0, spec(), Features::all());
        m.handle(t0, input);
        // No `stop`: the server is gone or has ended it.
        assert_eq!(
            drain(&mut m),
            vec![Action::StopSenders, Action::FinishEngine]
        );
        m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
        assert_eq!(drain(&mut m), vec![Action::Close]);
        let o = m.outcome();
        assert!(o.interrupted);
        assert_eq!(o.warnings[0], want);
        // A failure: the command prints what was measured and exits 2.
        assert_eq!(o.failure.as_deref(), Some(want));
        assert!(o.warnings[1].starts_with("server measurements are missing"));
        assert_eq!(
            o.warnings.len(),
            2,
            "no 'interrupted' line: the server ended it"
        );
    }
}

#[test]
fn results_that_do_not_come_are_warnings() {
    let t0 = Instant::now();
    let stopped = |t0| {
        let mut m = running(t0, spec(), Features::all());
        m.handle_timeout(t0 + Duration::from_secs(1));
        drain(&mut m);
        m
    };
    let t1 = t0 + Duration::from_secs(1);
    for (input, want) in [
        (
            Some(msg(error(ErrorCode::Internal, "oops"))),
            "the server reported an error instead of results: oops",
        ),
        (
            Some(msg(accept())),
            "protocol error: expected results, got accept",
        ),
        (
            Some(Input::Received(Incoming::Closed)),
            "the server closed the connection before sending its results",
        ),
        (None, "the server sent no results within 15 s"),
    ] {
        let mut m = stopped(t0);
        match input {
            Some(i) => m.handle(t1, i),
            None => m.handle_timeout(t1 + CLIENT_RESULTS),
        }
        assert_eq!(drain(&mut m), vec![Action::FinishEngine]);
        // Without the server's results ours are not sent either.
        m.handle(t1, Input::EngineFinished(Box::new(report(Role::Client))));
        assert_eq!(drain(&mut m), vec![Action::Close]);
        let o = m.outcome();
        assert_eq!(o.warnings[0], want);
        assert_eq!(o.failure.as_deref(), Some(want));
        assert!(o.server_report.is_none());
    }
}

#[test]
fn failed_sends_end_the_handshake_but_not_the_last_messages() {
    let t0 = Instant::now();
    let mut m = ClientMachine::new(cfg(None), t0);
    drain(&mut m);
    m.handle(
        t0,
        Input::SendFailed {
            message: "hello",
            error: "Broken pipe".into(),
        },
    );
    assert_eq!(failure(&m), "Broken pipe");
    let mut m = running(t0, spec(), Features::all());
    m.handle(t0, Input::Interrupt);
    drain(&mut m);
    m.handle(
        t0,
        Input::SendFailed {
            message: "stop",
            error: "Broken pipe".into(),
        },
    );
    assert!(matches!(m.phase(), Phase::AwaitResults { .. }));
}

#[test]
fn doctor_asks_for_the_servers_findings() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    assert!(m.features().has(Feature::Doctor));
    let req = DoctorRequest {
        buffer_bytes: Some(1 << 20),
        rtt_us: Some(50),
    };
    m.request_doctor(t0, req.clone());
    assert_eq!(
        drain(&mut m),
        vec![Action::Send(Message::DoctorRequest(req.clone()))]
    );
    assert_eq!(m.poll_timeout(), Some(t0 + CLIENT_HANDSHAKE));
    // A test cannot be asked for meanwhile.
    m.request_test(t0, spec());
    assert!(drain(&mut m).is_empty());
    let f = Finding {
        severity: Severity::Ok,
        check: "c".into(),
        what: "w".into(),
        value: None,
        fix: None,
    };
    let report = DoctorReport {
        host: None,
        interface: None,
        findings: vec![f; MAX_FINDINGS + 5],
    };
    m.handle(t0, msg(Message::DoctorReport(report)));
    assert_eq!(drain(&mut m), vec![Action::Close]);
    let r = m.take_doctor_report().expect("report");
    assert_eq!(r.findings.len(), MAX_FINDINGS);
    // Something else, or nothing.
    let mut m = connected(t0, Features::all());
    m.request_doctor(t0, req.clone());
    m.handle(t0, msg(Message::Done(linerate_wire::control::Done {})));
    assert_eq!(
        failure(&m),
        "protocol error: expected doctor_report, got done"
    );
    let mut m = connected(t0, Features::all());
    m.request_doctor(t0, req);
    m.handle_timeout(t0 + CLIENT_HANDSHAKE);
    assert!(failure(&m).contains("sent no doctor_report in time"));
}

#[test]
fn out_of_order_while_waiting_for_start() {
    let t0 = Instant::now();
    let waiting = || {
        let mut m = connected(t0, Features::all());
        m.request_test(t0, spec());
        m.handle(t0, msg(accept()));
        m.handle(t0, Input::StreamsOpened { udp_ports: vec![] });
        drain(&mut m);
        m
    };
    // Nothing but `start` may come: an interval before it, a second accept, results.
    for (m2, name) in [
        (
            Message::Interval(IntervalMsg {
                interval: interval(0),
            }),
            "interval",
        ),
        (accept(), "accept"),
        (Message::Finished(Finished {}), "finished"),
    ] {
        let mut m = waiting();
        m.handle(t0, msg(m2));
        assert_eq!(
            failure(&m),
            format!("protocol error: expected start, got {name}")
        );
    }
    let mut m = waiting();
    m.handle(t0, Input::Received(Incoming::Closed));
    assert!(failure(&m).contains("closed the connection while we waited for start"));
    // Inputs of later phases change nothing before their time.
    let mut m = waiting();
    m.handle(t0, Input::Interrupt);
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    m.handle(t0, Input::StreamsOpened { udp_ports: vec![] });
    assert!(drain(&mut m).is_empty());
    assert!(matches!(m.phase(), Phase::AwaitStart { .. }));
}

#[test]
fn any_answer_or_its_absence_ends_the_wait_for_done() {
    let t0 = Instant::now();
    for input in [
        msg(error(ErrorCode::Internal, "x")),
        Input::Received(Incoming::Closed),
    ] {
        let mut m = running(t0, spec(), Features::all());
        m.handle(t0, Input::Interrupt);
        m.handle(
            t0,
            msg(Message::Results(Box::new(Results {
                report: report(Role::Server),
                intervals_streamed: false,
                capture: None,
            }))),
        );
        m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
        drain(&mut m);
        m.handle(t0, input);
        assert_eq!(drain(&mut m), vec![Action::Close]);
        assert_eq!(*m.phase(), Phase::Closed);
        assert!(m.outcome().server_report.is_some());
    }
}

#[test]
fn a_message_between_the_handshake_and_a_request_is_out_of_order() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    m.handle(t0, msg(Message::Start(Start {})));
    assert_eq!(failure(&m), "protocol error: expected nothing, got start");
}

#[test]
fn a_byte_count_that_stalls_ends_at_its_deadline_with_a_failure() {
    let t0 = Instant::now();
    let mut m = running(
        t0,
        bytes_spec(Direction::Receive, Transport::Tcp),
        Features::all(),
    );
    let limit = m.byte_deadline(1 << 20);
    // 1 MiB at 1 Mbit/s is 8.4 s; with the slack 18.4 s.
    assert!(
        limit > Duration::from_secs(18) && limit < Duration::from_secs(19),
        "{limit:?}"
    );
    m.handle_timeout(t0 + limit - Duration::from_millis(1));
    assert!(drain(&mut m).is_empty());
    m.handle_timeout(t0 + limit);
    assert_eq!(
        drain(&mut m),
        vec![
            Action::StopSenders,
            Action::Send(Message::Stop(Stop { interrupted: true }))
        ]
    );
    // The server's results still come and are kept.
    m.handle(
        t0 + limit,
        msg(Message::Results(Box::new(Results {
            report: report(Role::Server),
            intervals_streamed: true,
            capture: None,
        }))),
    );
    m.handle(
        t0 + limit,
        Input::EngineFinished(Box::new(report(Role::Client))),
    );
    m.handle(
        t0 + limit,
        msg(Message::Done(linerate_wire::control::Done {})),
    );
    let o = m.outcome();
    assert!(o.server_report.is_some());
    let f = o.failure.expect("a failure");
    assert!(
        f.contains("(-n 1048576) was not reached within 18 s") && f.contains("--max-time"),
        "{f}"
    );
    // --max-time sets it.
    let mut m = connected(t0, Features::all());
    m.set_max_time(Some(Duration::from_secs(3)));
    assert_eq!(m.byte_deadline(1 << 40), Duration::from_secs(3));
    // Without it, never longer than the server's own limit and a grace.
    let m = connected(t0, Features::all());
    assert!(m.byte_deadline(1 << 50) < Duration::from_secs(3_700));
}

#[test]
fn a_flood_of_intervals_ends_the_test_with_a_failure() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    let iv = |i| {
        msg(Message::Interval(IntervalMsg {
            interval: interval(i),
        }))
    };
    // 1 s intervals: 5 s of burst twice over, and 16, may come at once.
    let allowed = super::client::allowed_intervals(Duration::ZERO, 1000);
    assert_eq!(allowed, 26);
    for i in 0..allowed {
        m.handle(t0, iv(i));
    }
    assert_eq!(drain(&mut m).len() as u64, allowed);
    m.handle(t0, iv(allowed));
    // No `stop` to a server that floods: the engine stops and the test ends.
    assert_eq!(
        drain(&mut m),
        vec![Action::StopSenders, Action::FinishEngine]
    );
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    let o = m.outcome();
    let f = o.failure.expect("a failure");
    assert!(
        f.contains("27 intervals") && f.contains("1000 ms interval"),
        "{f}"
    );
    // Over time, more are allowed: an hour at 10 ms intervals is 360,000.
    assert!(super::client::allowed_intervals(Duration::from_secs(3600), 10) > 360_000);
}

#[test]
fn a_flood_while_waiting_for_results_ends_the_wait() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    m.handle_timeout(t0 + Duration::from_secs(1));
    drain(&mut m);
    for i in 0..100 {
        m.handle(
            t0 + Duration::from_secs(1),
            msg(Message::Interval(IntervalMsg {
                interval: interval(i),
            })),
        );
    }
    assert_eq!(drain(&mut m).last(), Some(&Action::FinishEngine));
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    let o = m.outcome();
    assert!(o.failure.is_some_and(|f| f.contains("intervals")));
}

#[test]
fn what_the_server_says_is_escaped_before_anyone_prints_it() {
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    m.request_test(t0, spec());
    m.handle(
        t0,
        msg(error(ErrorCode::Busy, "busy\n\u{1b}[2J\u{7}fake prompt $ ")),
    );
    let e = failure(&m);
    assert!(!e.chars().any(linerate_wire::text::is_unsafe), "{e:?}");
    assert!(e.contains("busy\\n\\u{1b}[2J\\u{7}fake prompt"), "{e}");
    // And cut: a megabyte of text is not an error line.
    let mut m = connected(t0, Features::all());
    m.request_test(t0, spec());
    m.handle(t0, msg(error(ErrorCode::Busy, &"x".repeat(1 << 20))));
    assert!(failure(&m).len() < 1000);
    // Mid-test too, and in the results' warnings and host names.
    let mut m = running(t0, spec(), Features::all());
    let mut server = report(Role::Server);
    server.warnings.push("\u{1b}]0;owned\u{7}".into());
    server.host.hostname = Some("evil\nhost".into());
    m.handle_timeout(t0 + Duration::from_secs(1));
    m.handle(
        t0 + Duration::from_secs(1),
        msg(Message::Results(Box::new(Results {
            report: server,
            intervals_streamed: false,
            capture: None,
        }))),
    );
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    let server = m.outcome().server_report.expect("kept");
    assert_eq!(server.warnings, vec!["\\u{1b}]0;owned\\u{7}".to_string()]);
    assert_eq!(server.host.hostname.as_deref(), Some("evil\\nhost"));
}

#[test]
fn implausible_figures_from_the_server_are_left_out() {
    let t0 = Instant::now();
    let mut m = running(t0, spec(), Features::all());
    let absurd = IntervalReport {
        start_ns: 0,
        end_ns: 1_000_000_000,
        rx_bytes: u64::MAX,
        ..IntervalReport::default()
    };
    m.handle(t0, msg(Message::Interval(IntervalMsg { interval: absurd })));
    assert!(drain(&mut m).is_empty(), "not shown");
    m.handle_timeout(t0 + Duration::from_secs(1));
    let mut server = report(Role::Server);
    server.totals.rx_bytes = u64::MAX;
    server.totals.rx_duration_ns = 1;
    m.handle(
        t0 + Duration::from_secs(1),
        msg(Message::Results(Box::new(Results {
            report: server,
            intervals_streamed: true,
            capture: None,
        }))),
    );
    m.handle(t0, Input::EngineFinished(Box::new(report(Role::Client))));
    let o = m.outcome();
    assert!(o.server_report.is_none());
    assert!(
        o.warnings.iter().any(|w| w.contains("report is left out")),
        "{:?}",
        o.warnings
    );
    assert!(
        o.warnings
            .iter()
            .any(|w| w.starts_with("1 of the server's intervals were left out")),
        "{:?}",
        o.warnings
    );
    // Not a failure: the test ran; the server's figures are doubtful.
    assert!(o.failure.is_none());
}

/// hook_request → hook_result → Connected again, for the next hook; the server's `error`
/// (a refused hook) is the failure, in its words.
#[test]
fn hooks_go_one_by_one_and_a_refusal_is_the_servers_error() {
    use linerate_wire::hooks::{HookRequest, HookResult};
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    assert!(m.features().has(Feature::Hooks));
    for _ in 0..2 {
        let req = HookRequest {
            name: "mtu".into(),
            params: [("mtu".to_string(), "9000".to_string())].into(),
        };
        m.request_hook(t0, req.clone());
        assert_eq!(drain(&mut m), vec![Action::Send(Message::HookRequest(req))]);
        assert_eq!(m.poll_timeout(), Some(t0 + super::HOOK_RESULT_WAIT));
        let res = HookResult {
            name: "mtu".into(),
            exit_code: Some(0),
            ..HookResult::default()
        };
        m.handle(t0, msg(Message::HookResult(res.clone())));
        assert_eq!(*m.phase(), Phase::Connected);
        assert_eq!(m.take_hook_result(), Some(res));
    }
    m.request_hook(t0, HookRequest::default());
    drain(&mut m);
    m.handle(
        t0,
        msg(error(
            ErrorCode::BadRequest,
            "this server has no hook named 'x'",
        )),
    );
    assert!(failure(&m).contains("no hook named 'x'"), "{}", failure(&m));
}

/// counters_request → counters_snapshot → Connected again, for the next trial; a server
/// without the feature is told apart with one line before anything is sent, an oversized
/// snapshot fails the session, and a device that stops answering fails it at the deadline
/// (the driver turns that into a warning and goes on without the device).
#[test]
fn device_counters_go_one_by_one_and_a_silent_device_times_out() {
    use linerate_wire::device::{CountersRequest, DeviceSnapshot, IfaceSnapshot};
    let t0 = Instant::now();
    let mut m = connected(t0, Features::all());
    for k in 1..=2u64 {
        m.request_counters(t0);
        assert_eq!(
            drain(&mut m),
            vec![Action::Send(Message::CountersRequest(CountersRequest {}))]
        );
        assert_eq!(m.poll_timeout(), Some(t0 + super::DUT_ANSWER_WAIT));
        let snap = DeviceSnapshot {
            monotonic_ns: k,
            ..DeviceSnapshot::default()
        };
        m.handle(t0, msg(Message::CountersSnapshot(Box::new(snap.clone()))));
        assert_eq!(*m.phase(), Phase::Connected);
        assert_eq!(m.take_counters(), Some(snap));
        assert_eq!(m.take_counters(), None);
    }
    // Silence: the deadline fails the session, naming what was awaited.
    m.request_counters(t0);
    drain(&mut m);
    m.handle_timeout(t0 + super::DUT_ANSWER_WAIT);
    assert!(failure(&m).contains("counters_snapshot"), "{}", failure(&m));

    // An old server: nothing is sent, the error names the fix.
    let old = Features::all()
        .iter()
        .filter(|f| *f != Feature::DeviceCounters)
        .collect();
    let mut m = connected(t0, old);
    m.request_counters(t0);
    let a = drain(&mut m);
    assert_eq!(a, vec![Action::Close]);
    let e = failure(&m);
    assert!(
        e.starts_with("srv:5301's linerate serve is too old for --dut"),
        "{e}"
    );

    // Oversized: refused.
    let mut m = connected(t0, Features::all());
    m.request_counters(t0);
    drain(&mut m);
    let big = DeviceSnapshot {
        interfaces: Some(vec![
            IfaceSnapshot::default();
            linerate_wire::device::MAX_DEVICE_INTERFACES + 1
        ]),
        ..DeviceSnapshot::default()
    };
    m.handle(t0, msg(Message::CountersSnapshot(Box::new(big))));
    assert!(failure(&m).contains("too large"), "{}", failure(&m));

    // Anything else instead of the snapshot is a protocol error.
    let mut m = connected(t0, Features::all());
    m.request_counters(t0);
    drain(&mut m);
    m.handle(t0, msg(Message::Start(Start {})));
    assert!(failure(&m).contains("expected counters_snapshot, got start"));
}

#[test]
fn copy_modes_a_server_without_them_would_use_are_refused_never_ignored() {
    use linerate_wire::control::{RecvMode, SendMode};
    let t0 = Instant::now();
    let old = Features::from_names(&["tcp_stream", "bidir", "interval_events"]);
    // The server would send with --zerocopy (-R): refused with the flag and the way out.
    let mut s = default_spec(Transport::Tcp, Direction::Receive, 65536, 1000);
    s.send_mode = SendMode::Zerocopy;
    let mut m = connected(t0, old);
    m.request_test(t0, s.clone());
    let e = failure(&m);
    assert!(e.contains("--zerocopy") && e.contains("copy_modes"), "{e}");
    // The server would receive with --no-rx-copy (no -R), or either with --bidir.
    for (dir, send, recv, flag) in [
        (
            Direction::Send,
            SendMode::Copy,
            RecvMode::Trunc,
            "--no-rx-copy",
        ),
        (
            Direction::Both,
            SendMode::Sendfile,
            RecvMode::Copy,
            "--sendfile",
        ),
    ] {
        let mut s = default_spec(Transport::Tcp, dir, 65536, 1000);
        s.send_mode = send;
        s.recv_mode = recv;
        let mut m = connected(t0, old);
        m.request_test(t0, s);
        assert!(failure(&m).contains(flag));
    }
    // Only this end uses the mode: the old server is asked without the fields it does not
    // know, and this end's engine still runs with them.
    s.direction = Direction::Send;
    let mut m = connected(t0, old);
    m.request_test(t0, s.clone());
    let a = drain(&mut m);
    let [Action::Send(Message::TestRequest(req))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(req.spec.send_mode, SendMode::Copy);
    let wire = serde_json::to_string(&req.spec).unwrap();
    assert!(!wire.contains("send_mode"), "{wire}");
    // A server with the feature gets the modes as asked.
    let (r, w) = downgrade(&s, Features::all());
    assert_eq!((r.send_mode, w.len()), (SendMode::Zerocopy, 0));
}
