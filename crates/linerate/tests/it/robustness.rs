//! A server facing bad peers keeps serving others, never crashes and never waits forever.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use linerate_wire::control::{self, ErrorCode, Hello, Message, ProtocolVersion, TestRequest};
use linerate_wire::control::{Direction, Transport};
use linerate_wire::stream_hello::StreamHello;

use crate::common::{bin, plan, run, spec, TestServer};

fn connect(srv: &TestServer) -> TcpStream {
    let s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn read_msg(s: &mut TcpStream) -> Option<Message> {
    linerate::session::protocol::conn::read_frame(s, control::MAX_CONTROL_FRAME)
        .ok()
        .flatten()
}

/// Reads until the server closes; panics if it does not within 5 s.
fn assert_closed(s: &mut TcpStream) {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!(
                "server did not close the connection: {e} after {:?}",
                start.elapsed()
            ),
        }
    }
}

fn hello(major: u16) -> Vec<u8> {
    control::encode(&Message::Hello(Hello {
        protocol: ProtocolVersion { major, minor: 0 },
        software: "test".into(),
        features: vec![],
    }))
    .unwrap()
}

fn still_serves(srv: &TestServer) {
    let rec = run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send)));
    assert!(rec.server.is_some(), "server still completes a normal test");
}

#[test]
fn garbage_truncated_and_oversized_frames() {
    let srv = TestServer::start();
    // Not our magic at all.
    let mut s = connect(&srv);
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert_closed(&mut s);
    // Our magic, then a length far beyond the cap: refused before any allocation.
    let mut s = connect(&srv);
    s.write_all(&[b'L', b'R', 1, 0, 0xff, 0xff, 0xff, 0xff])
        .unwrap();
    let m = read_msg(&mut s);
    assert!(
        matches!(m, Some(Message::Error(ref e)) if e.code == ErrorCode::Protocol),
        "{m:?}"
    );
    assert_closed(&mut s);
    // A truncated frame, then the client goes away.
    let mut s = connect(&srv);
    let f = hello(1);
    s.write_all(&f[..f.len() / 2]).unwrap();
    drop(s);
    // A well-framed body that is not JSON.
    let mut s = connect(&srv);
    s.write_all(&[b'L', b'R', 1, 0, 0, 0, 0, 4]).unwrap();
    s.write_all(b"\xff\x00{[").unwrap();
    assert!(matches!(read_msg(&mut s), Some(Message::Error(_))));
    assert_closed(&mut s);
    still_serves(&srv);
}

#[test]
fn message_in_the_wrong_phase_is_a_protocol_error() {
    let srv = TestServer::start();
    let mut s = connect(&srv);
    let req = control::encode(&Message::TestRequest(TestRequest {
        spec: spec(Transport::Tcp, Direction::Send),
    }))
    .unwrap();
    s.write_all(&req).unwrap();
    match read_msg(&mut s) {
        Some(Message::Error(e)) => {
            assert_eq!(e.code, ErrorCode::Protocol);
            assert!(e.message.contains("expected hello"), "{}", e.message);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_closed(&mut s);
    still_serves(&srv);
}

#[test]
fn incompatible_major_version_is_rejected_clearly() {
    let srv = TestServer::start();
    let mut s = connect(&srv);
    s.write_all(&hello(99)).unwrap();
    match read_msg(&mut s) {
        Some(Message::Reject(r)) => {
            assert_eq!(r.code, ErrorCode::IncompatibleVersion);
            assert_eq!(r.server_protocol, ProtocolVersion::CURRENT);
            assert!(r.message.contains("99.0"), "{}", r.message);
        }
        other => panic!("expected reject, got {other:?}"),
    }
    assert_closed(&mut s);
}

#[test]
fn slow_hello_is_timed_out() {
    let srv = TestServer::with(|c| c.handshake_timeout = Duration::from_millis(300));
    let mut s = connect(&srv);
    // Two bytes of a header and then nothing.
    s.write_all(b"LR").unwrap();
    let t = Instant::now();
    assert_closed(&mut s);
    assert!(t.elapsed() < Duration::from_secs(4));
    // A client that sends nothing at all is closed too.
    let mut s = connect(&srv);
    assert_closed(&mut s);
    still_serves(&srv);
}

#[test]
fn unknown_data_token_is_refused() {
    let srv = TestServer::start();
    let mut s = connect(&srv);
    s.write_all(
        &StreamHello {
            token: [7; 16],
            stream_index: 0,
        }
        .to_bytes(),
    )
    .unwrap();
    assert_closed(&mut s);
}

#[test]
fn limits_are_enforced_and_explained() {
    let srv = TestServer::with(|c| c.limits.max_streams = 2);
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.streams = 3;
    let never = std::sync::atomic::AtomicBool::new(false);
    let err = linerate::session::protocol::client::run(
        &plan(srv.addr, s),
        &mut linerate::session::protocol::client::Quiet,
        &never,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("at most 2"), "{err}");
    assert!(err.contains("--max-streams"), "{err}");
}

#[test]
fn client_that_vanishes_mid_test_frees_its_slot() {
    // One test at a time: the next test only runs if the vanished one was cleaned up.
    let srv = TestServer::with(|c| c.max_tests = 1);
    let mut child = bin()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &srv.addr.port().to_string(),
            "-t",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let never = std::sync::atomic::AtomicBool::new(false);
        match linerate::session::protocol::client::run(
            &plan(srv.addr, spec(Transport::Tcp, Direction::Send)),
            &mut linerate::session::protocol::client::Quiet,
            &never,
        ) {
            Ok(rec) => {
                assert!(rec.server.is_some());
                break;
            }
            Err(e) if Instant::now() < deadline && e.to_string().contains("maximum") => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("server did not recover from a vanished client: {e}"),
        }
    }
}
