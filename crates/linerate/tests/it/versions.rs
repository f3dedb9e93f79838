//! Peers of other linerate versions (a board's linerate and a workstation's are rarely
//! built from the same commit): the hello negotiates a version and a set of features, and
//! a peer of another major version, or one that does not negotiate, meets a one-line error
//! naming both versions, never a misread frame. Fake peers (tests/it/fake.rs) claim the
//! versions; the real end is the in-process server or the `linerate` binary.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use linerate_wire::control::{
    self, Hello, Message, ProtocolVersion, ServerLimits, StreamsReady, Transport, Welcome,
    PROTOCOL_MAJOR, PROTOCOL_MINOR,
};
use linerate_wire::report::{Role, Totals};

use crate::common::{bin, spec, TestServer};
use crate::fake::{accept_and_start, all_features, finish, server_report, FakeClient, Peer};

/// The features a 1.0 client listed (docs/protocol.md, "Versioning").
const FEATURES_1_0: [&str; 6] = [
    "tcp_stream",
    "udp_stream",
    "bidir",
    "udp_gso",
    "cpu_pin",
    "interval_events",
];

fn version(major: u16, minor: u16) -> ProtocolVersion {
    ProtocolVersion { major, minor }
}

fn hello(p: &mut Peer, v: ProtocolVersion, features: &[&str]) {
    p.send(&Message::Hello(Hello {
        protocol: v,
        software: format!("linerate of protocol {v}"),
        features: features.iter().map(|f| f.to_string()).collect(),
    }))
    .unwrap();
}

fn welcome(v: ProtocolVersion, features: &[&str]) -> Message {
    Message::Welcome(Welcome {
        protocol: v,
        session_id: "fake".into(),
        features: features.iter().map(|f| f.to_string()).collect(),
        software: format!("linerate of protocol {v}"),
        limits: ServerLimits {
            max_duration_ms: 3_600_000,
            max_streams: 128,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 64 << 20,
        },
        auth: None,
    })
}

/// A server that answers the first hello with `answer` (raw bytes: a frame or anything
/// else) and then runs `script`.
fn fake_server(
    answer: Vec<u8>,
    script: impl FnOnce(&mut Peer) + Send + 'static,
) -> (u16, std::thread::JoinHandle<Option<Hello>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut p = Peer::new(s);
        let Some(Message::Hello(h)) = p.recv() else {
            return None;
        };
        p.send_raw(&answer).unwrap();
        script(&mut p);
        Some(h)
    });
    (port, t)
}

fn frame(m: &Message) -> Vec<u8> {
    control::encode(m).unwrap()
}

/// `linerate tcp 127.0.0.1 -p PORT ARGS`: (exit code, stdout, stderr).
fn tcp_cli(port: u16, args: &[&str]) -> (Option<i32>, String, String) {
    let port = port.to_string();
    let mut argv = vec!["tcp", "127.0.0.1", "-p", port.as_str()];
    argv.extend_from_slice(args);
    let out = bin().args(&argv).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn one_line_error(err: &str) -> &str {
    let err = err.trim();
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("linerate: error: "), "{err}");
    err
}

/// A client of a newer minor version, listing features this build does not know, is
/// welcomed at this server's version with only the features both know; the session then
/// runs (a test is accepted).
#[test]
fn a_newer_minor_client_is_welcomed_at_this_servers_version_and_common_features() {
    let srv = TestServer::start();
    let mut c = FakeClient::connect(srv.addr);
    let mut features = all_features();
    features.extend(["teleport", "quantum_pacing"]);
    hello(
        &mut c.peer,
        version(PROTOCOL_MAJOR, PROTOCOL_MINOR + 7),
        &features,
    );
    let Message::Welcome(w) = c.peer.expect("welcome") else {
        unreachable!()
    };
    assert_eq!(w.protocol, ProtocolVersion::CURRENT);
    // Every feature this build's server has: QUIC is the workstation build's alone.
    let offered: Vec<_> = control::FEATURES
        .iter()
        .copied()
        .filter(|&f| f != "quic" || cfg!(feature = "quic"))
        .collect();
    assert_eq!(w.features, offered);
    c.welcome = Some(w);
    c.request(spec(Transport::Tcp, control::Direction::Send));
    assert!(c.token.is_some());
}

/// A 1.0 client (the features it listed then) gets 1.0 and exactly those features, and a
/// whole TCP test runs: the server's results count the bytes the client wrote, and without
/// `interval_events` in the hello it sends no `interval` message.
#[test]
fn a_1_0_client_gets_1_0_its_features_and_no_later_messages() {
    let srv = TestServer::start();
    let mut c = FakeClient::connect(srv.addr);
    hello(&mut c.peer, version(1, 0), &FEATURES_1_0[..5]);
    let Message::Welcome(w) = c.peer.expect("welcome") else {
        unreachable!()
    };
    assert_eq!(w.protocol, version(1, 0));
    assert_eq!(w.features, &FEATURES_1_0[..5]);
    let mut s = spec(Transport::Tcp, control::Direction::Send);
    s.duration_ms = Some(400);
    s.streams = 1;
    c.request(s);
    let mut data = TcpStream::connect(srv.addr).unwrap();
    data.write_all(&c.udp_hello(0)).unwrap();
    c.peer
        .send(&Message::StreamsReady(StreamsReady { udp_ports: vec![] }))
        .unwrap();
    let mut seen = Vec::new();
    let m = c.peer.recv().expect("start");
    seen.push(m.name());
    assert_eq!(m.name(), "start", "{seen:?}");
    let chunk = vec![0x42u8; 16 << 10];
    let mut written = 0u64;
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(400) {
        data.write_all(&chunk).unwrap();
        written += chunk.len() as u64;
    }
    drop(data);
    c.peer
        .send(&Message::Stop(control::Stop::default()))
        .unwrap();
    let results = loop {
        match c.peer.recv().expect("the server's messages up to results") {
            Message::Results(r) => break r,
            m => seen.push(m.name()),
        }
    };
    assert!(
        !seen.contains(&"interval"),
        "interval messages to a client that did not list interval_events: {seen:?}"
    );
    assert!(!results.intervals_streamed);
    assert_eq!(results.report.role, Role::Server);
    assert_eq!(results.report.totals.rx_bytes, written);
    let mut mine = server_report(Totals {
        tx_bytes: written,
        tx_calls: Some(written / chunk.len() as u64),
        rx_calls: Some(0),
        ..Totals::default()
    });
    mine.role = Role::Client;
    c.peer
        .send(&Message::Results(Box::new(control::Results {
            report: mine,
            intervals_streamed: false,
            capture: None,
        })))
        .unwrap();
    c.peer.expect("done");
}

/// A client of an older or a newer major version is rejected with this server's version
/// and a message naming both; the server closes.
#[test]
fn a_client_of_another_major_is_rejected_naming_both_versions() {
    let srv = TestServer::start();
    for theirs in [version(0, 9), version(PROTOCOL_MAJOR + 1, 0)] {
        let mut c = FakeClient::connect(srv.addr);
        hello(&mut c.peer, theirs, &all_features());
        match c.peer.recv() {
            Some(Message::Reject(r)) => {
                assert_eq!(r.code, control::ErrorCode::IncompatibleVersion);
                assert_eq!(r.server_protocol, ProtocolVersion::CURRENT);
                assert!(r.message.contains(&theirs.to_string()), "{}", r.message);
                assert!(
                    r.message.contains(&ProtocolVersion::CURRENT.to_string()),
                    "{}",
                    r.message
                );
                assert!(!r.message.contains('\n'), "{}", r.message);
            }
            other => panic!("{theirs}: expected reject, got {other:?}"),
        }
        assert!(c.peer.recv_within(Duration::from_secs(2)).is_none());
    }
}

/// The binary against a server of another major version that rejects it: exit 2 and one
/// line naming both versions.
#[test]
fn the_cli_rejected_by_a_server_of_another_major_says_both_versions_in_one_line() {
    let newer = version(PROTOCOL_MAJOR + 1, 0);
    let reject = Message::Reject(control::Reject {
        code: control::ErrorCode::IncompatibleVersion,
        server_protocol: newer,
        message: format!(
            "client speaks protocol {} and this server {newer}: use linerate versions with the same major version",
            ProtocolVersion::CURRENT
        ),
    });
    let (port, srv) = fake_server(frame(&reject), |_| {});
    let (code, _, err) = tcp_cli(port, &["-t", "1"]);
    let h = srv.join().unwrap().expect("a hello");
    assert_eq!(h.protocol, ProtocolVersion::CURRENT);
    let err = one_line_error(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&newer.to_string()), "{err}");
    assert!(err.contains(&ProtocolVersion::CURRENT.to_string()), "{err}");
}

/// A server that welcomes the client at another major version (one that does not negotiate,
/// or whose welcome changed meaning) is refused by the client before it asks for anything:
/// exit 2, one line naming both versions, and no `test_request` sent.
#[test]
fn the_cli_refuses_a_welcome_of_another_major() {
    for theirs in [version(PROTOCOL_MAJOR + 1, 0), version(0, 9)] {
        let (port, srv) = fake_server(frame(&welcome(theirs, &all_features())), |p| {
            // Nothing may follow the welcome but the close.
            let next = p.recv_within(Duration::from_secs(5));
            assert!(next.is_none(), "the client went on: {next:?}");
        });
        let (code, _, err) = tcp_cli(port, &["-t", "1"]);
        srv.join().unwrap().expect("a hello");
        let err = one_line_error(&err);
        assert_eq!(code, Some(2), "{theirs}: {err}");
        assert!(err.contains(&theirs.to_string()), "{err}");
        assert!(err.contains(&ProtocolVersion::CURRENT.to_string()), "{err}");
    }
}

/// A server that welcomes the client at a newer minor than the client's (it did not take
/// the lower): the test runs, and the record says the session ran at the client's version,
/// the lower of the two.
#[test]
fn a_welcome_above_the_clients_minor_runs_at_the_clients_version() {
    let theirs = version(PROTOCOL_MAJOR, PROTOCOL_MINOR + 5);
    let (port, srv) = fake_server(frame(&welcome(theirs, &all_features())), |p| {
        accept_and_start(p);
        finish(p, server_report(Totals::default()), true);
    });
    let (code, out, err) = tcp_cli(port, &["-t", "0.3", "--json"]);
    srv.join().unwrap().expect("a hello");
    assert_eq!(code, Some(0), "{err}");
    let rec: serde_json::Value = serde_json::from_str(&out).expect("a JSON record");
    assert_eq!(
        rec["protocol"],
        serde_json::json!({"major": PROTOCOL_MAJOR, "minor": PROTOCOL_MINOR}),
        "{out}"
    );
}

/// A peer whose frames have another header layout (a future `fver`) is named as such, in
/// one line, before anything in the frame is read.
#[test]
fn a_frame_of_another_layout_version_is_one_clear_line() {
    let mut answer = frame(&welcome(ProtocolVersion::CURRENT, &all_features()));
    answer[2] = 2;
    let (port, srv) = fake_server(answer, |_| {});
    let (code, _, err) = tcp_cli(port, &["-t", "1"]);
    srv.join().unwrap().expect("a hello");
    let err = one_line_error(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("frame layout version 2"), "{err}");
    assert!(err.contains("linerate versions"), "{err}");
    // And the real server, sent such a frame, says the same to the client and closes.
    let srv = TestServer::start();
    let mut c = FakeClient::connect(srv.addr);
    let mut h = frame(&Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: "future".into(),
        features: vec![],
    }));
    h[2] = 2;
    c.peer.send_raw(&h).unwrap();
    match c.peer.recv() {
        Some(Message::Error(e)) => {
            assert!(
                e.message.contains("frame layout version 2"),
                "{}",
                e.message
            )
        }
        other => panic!("expected an error, got {other:?}"),
    }
}
