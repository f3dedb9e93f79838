//! Hostile peers and long waits (issue 18): a client never waits forever, never grows
//! without bound and exits 2 when the test fails; a server never spins on a silent peer,
//! bounds what each address holds, ends a test at its duration whatever the client does,
//! escapes and rate-limits its log, and limits password guessing.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate::model::plan::Credentials;
use linerate::session::protocol::auth::Users;
use linerate_wire::control::{self, Direction, ErrorCode, IntervalMsg, Message, Transport};
use linerate_wire::report::Totals;

use crate::common::{banner_port, bin, first_line, plan, spec, TestServer};
use crate::fake::{
    accept_and_start, all_features, finish, interval, server_report, FakeClient, FakeServer,
};

fn try_run(p: &linerate::model::plan::StreamPlan) -> anyhow::Result<linerate::model::RunRecord> {
    let never = std::sync::atomic::AtomicBool::new(false);
    linerate::session::protocol::client::run(
        p,
        &mut linerate::session::protocol::client::Quiet,
        &never,
    )
}

/// Runs `linerate ARGS...` against a server on 127.0.0.1:`port`; exit code, stdout, stderr.
fn cli(cmd: &str, port: u16, args: &[&str]) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let port = port.to_string();
    let mut argv = vec![cmd, "127.0.0.1", "-p", port.as_str()];
    argv.extend_from_slice(args);
    let out = bin().args(&argv).output().unwrap();
    (out.status.code(), out.stdout, out.stderr)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- issue 18 item 1: every client wait has a deadline, a byte count too ----

#[test]
fn a_byte_count_test_against_a_silent_server_ends_at_its_deadline() {
    let srv = FakeServer::start(&all_features(), |p| {
        accept_and_start(p);
        // Nothing is sent; the client must give up and say `stop` (within 5 s).
        finish(p, server_report(Totals::default()), true);
    });
    let mut s = spec(Transport::Tcp, Direction::Receive);
    s.duration_ms = None;
    s.bytes = Some(1 << 20);
    let mut p = plan(srv.addr, s);
    p.max_time = Some(Duration::from_secs(1));
    let t = Instant::now();
    let rec = try_run(&p).expect("a record of what was measured");
    let took = t.elapsed();
    srv.join();
    assert!(took < Duration::from_secs(6), "{took:?}");
    let f = rec.failure.expect("a failure");
    assert!(f.contains("was not reached within 1 s"), "{f}");
    assert!(rec.server.is_some(), "the results still came");
}

#[test]
fn the_cli_gives_up_on_a_stalled_byte_count_with_exit_2_and_the_results() {
    let srv = FakeServer::start(&all_features(), |p| {
        accept_and_start(p);
        finish(p, server_report(Totals::default()), true);
    });
    let (code, out, err) = cli(
        "tcp",
        srv.addr.port(),
        &["-R", "-n", "1M", "--max-time", "1", "--json"],
    );
    srv.join();
    assert_eq!(code, Some(2), "{}", text(&err));
    let rec: serde_json::Value = serde_json::from_slice(&out).expect("the record is printed");
    assert_eq!(rec["interrupted"], true);
    let err = text(&err);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.starts_with("linerate: error: the byte count"), "{err}");
}

// ---- item 12: a test the server ends or never finishes exits 2 with what was measured ----

#[test]
fn a_server_that_closes_or_resets_mid_test_is_exit_2_with_the_results_printed() {
    for reset in [false, true] {
        let srv = FakeServer::start(&all_features(), move |p| {
            accept_and_start(p);
            std::thread::sleep(Duration::from_millis(400));
            if reset {
                // SO_LINGER 0: closing sends a reset.
                let s = socket2::SockRef::from(&p.stream);
                s.set_linger(Some(Duration::ZERO)).unwrap();
            }
            let _ = p.stream.shutdown(std::net::Shutdown::Both);
        });
        let (code, out, err) = cli("tcp", srv.addr.port(), &["-t", "5", "-i", "0.2"]);
        srv.join();
        let (out, err) = (text(&out), text(&err));
        assert_eq!(code, Some(2), "reset {reset}: {err}");
        // What was measured is printed: the table, with the warning.
        assert!(out.contains(" measured, started "), "{out}");
        assert!(out.contains("warning: the test ended early"), "{out}");
        assert!(
            err.contains("linerate: error: the test ended early"),
            "{err}"
        );
    }
}

// ---- item 2: a flood of intervals ends the test; the client does not queue it ----

#[test]
fn a_server_flooding_intervals_ends_the_test_with_an_error() {
    let srv = FakeServer::start(&all_features(), |p| {
        accept_and_start(p);
        p.stream
            .set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let m = Message::Interval(IntervalMsg {
            interval: interval(1, 10),
        });
        let frame = control::encode(&m).unwrap();
        let mut batch = Vec::new();
        for _ in 0..1000 {
            batch.extend_from_slice(&frame);
        }
        // As fast as the client takes them, until it goes away.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) && p.stream.write_all(&batch).is_ok() {}
    });
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.duration_ms = Some(10_000);
    s.interval_ms = 100;
    let t = Instant::now();
    let rec = try_run(&plan(srv.addr, s)).expect("a record");
    let took = t.elapsed();
    srv.join();
    assert!(took < Duration::from_secs(8), "{took:?}");
    let f = rec.failure.expect("a failure");
    assert!(
        f.contains("intervals") && f.contains("100 ms interval"),
        "{f}"
    );
    // What it kept is bounded by the rule, not by the flood.
    let kept = rec.server.map_or(0, |s| s.intervals.len());
    assert!(kept < 200, "{kept}");
}

// ---- item 3: no busy polling on a connection that sent part of the magic ----

/// `linerate serve` as a child on 127.0.0.1 with a free port; killed when dropped.
struct Serve {
    child: std::process::Child,
    port: u16,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        let mut child = bin()
            .args(["serve", "--bind", "127.0.0.1", "-p", "0"])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // "linerate serve: listening on 127.0.0.1:PORT (TCP and UDP)".
        let port = banner_port(&first_line(child.stderr.as_mut().unwrap()));
        Serve { child, port }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// CPU time (user + system) of the server process so far, in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 (utime, stime) are 12 and 13 after the command.
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    /// Stops the server and returns everything it logged.
    fn stop(mut self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        let _ = self.child.wait();
        s
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn connections_that_send_half_a_magic_cost_the_server_no_cpu() {
    let srv = Serve::start(&["--handshake-timeout", "30"]);
    let mut conns = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        s.write_all(b"L").unwrap();
        conns.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = srv.cpu_ticks();
    std::thread::sleep(Duration::from_millis(1500));
    let used = srv.cpu_ticks() - before;
    // 200 threads polling every 2 ms took most of a CPU; waiting in the kernel takes none.
    // 15 ticks (0.15 s) over 1.5 s leaves room for a noisy machine.
    assert!(
        used <= 15,
        "the server used {used} ticks of CPU on idle connections"
    );
    drop(conns);
    drop(srv);
}

// ---- item 4: limits per address, a total handshake time, a clear busy reply ----

#[test]
fn sessions_in_their_handshake_are_limited_per_address_with_a_clear_busy() {
    let srv = TestServer::with(|c| c.max_handshakes_per_address = 3);
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut a = FakeClient::connect(srv.addr);
        a.hello(&all_features());
        idle.push(a);
    }
    let e = try_run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("busy") || e.contains("handshake"),
        "not a clear busy: {e}"
    );
    assert!(e.contains("--max-handshakes-per-address"), "{e}");
    // Another address is not held up.
    let mut other = FakeClient::connect_from(srv.addr, IpAddr::from([127, 0, 0, 2]));
    other.hello(&all_features());
    drop(other);
    // Once one of them goes, a real test runs.
    drop(idle.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match try_run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send))) {
            Ok(rec) => {
                assert!(rec.server.is_some());
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert!(e.to_string().contains("handshake"), "{e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn connections_are_limited_per_address_with_a_clear_busy() {
    let srv = TestServer::with(|c| {
        c.max_connections_per_address = 4;
        c.handshake_timeout = Duration::from_secs(5);
    });
    let silent: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(srv.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let e = try_run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--max-connections-per-address"), "{e}");
    // From another address the server still answers.
    let mut other = FakeClient::connect_from(srv.addr, IpAddr::from([127, 0, 0, 2]));
    other.hello(&all_features());
    drop(silent);
}

#[test]
fn the_handshake_time_out_is_a_total_not_per_byte() {
    let srv = TestServer::with(|c| c.handshake_timeout = Duration::from_secs(1));
    // A data connection that sends its 24-byte hello one byte at a time, 150 ms apart:
    // 3.6 s in all, far past the 1 s the whole hello may take.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    let t = Instant::now();
    let hello = linerate_wire::stream_hello::StreamHello {
        token: [9; 16],
        stream_index: 0,
    }
    .to_bytes();
    let mut sent = 0;
    for b in hello {
        if s.write_all(&[b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(150));
        if t.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    // The server closed it at its time-out: the connection reads as closed.
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 16];
    let closed = matches!(s.read(&mut b), Ok(0) | Err(_));
    assert!(closed);
    assert!(
        t.elapsed() < Duration::from_millis(3300),
        "closed after {:?} ({sent} bytes sent)",
        t.elapsed()
    );
    // A control connection that dribbles its hello is cut at the same total.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    let t = Instant::now();
    let frame = control::encode(&Message::Hello(control::Hello {
        protocol: control::ProtocolVersion::CURRENT,
        software: "slow".into(),
        features: vec![],
    }))
    .unwrap();
    for b in frame {
        if s.write_all(&[b]).is_err() || t.elapsed() > Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let m = linerate::session::protocol::conn::read_frame(&mut s, control::MAX_CONTROL_FRAME);
    assert!(
        matches!(m, Ok(Some(Message::Error(ref e))) if e.code == ErrorCode::Timeout) || m.is_err(),
        "{m:?}"
    );
    assert!(
        t.elapsed() < Duration::from_millis(3300),
        "{:?}",
        t.elapsed()
    );
}

// ---- item 10: the server ends a test at its duration whatever the client does ----

#[test]
fn a_udp_receive_test_without_stop_ends_at_its_duration() {
    // The server's own limit is a minute: only the test's duration can end it in time.
    let srv = TestServer::with(|c| c.limits.max_duration_ms = 60_000);
    let mut a = FakeClient::connect(srv.addr);
    a.hello(&all_features());
    let mut s = spec(Transport::Udp, Direction::Receive);
    s.duration_ms = Some(1000);
    s.rate_bps = Some(2_000_000);
    a.request(s);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.connect(srv.addr).unwrap();
    let hello = a.udp_hello(0);
    a.peer
        .send(&Message::StreamsReady(control::StreamsReady {
            udp_ports: vec![u.local_addr().unwrap().port()],
        }))
        .unwrap();
    let mut answer = None;
    for _ in 0..100 {
        let _ = u.send(&hello);
        answer = a.peer.recv_within(Duration::from_millis(20));
        if answer.is_some() {
            break;
        }
    }
    assert!(matches!(answer, Some(Message::Start(_))), "{answer:?}");
    let started = Instant::now();
    // No `stop`, ever. The server ends the test 5 s past its 1 s.
    let end = a
        .peer
        .recv_skipping_intervals_within(Duration::from_secs(10));
    let took = started.elapsed();
    match end {
        Some(Message::Error(e)) => {
            assert_eq!(e.code, ErrorCode::Timeout, "{}", e.message);
            assert!(e.message.contains("past its duration"), "{}", e.message);
        }
        other => panic!("the server did not end the test: {other:?} after {took:?}"),
    }
    assert!(took < Duration::from_secs(9), "{took:?}");
    // And its datagrams stop.
    std::thread::sleep(Duration::from_millis(500));
    u.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 2048];
    while u.recv(&mut buf).is_ok() {}
    u.set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    assert!(u.recv(&mut buf).is_err(), "the server still sends");
}

#[test]
fn a_client_that_closes_while_the_server_drains_frees_its_slot_at_once() {
    let srv = TestServer::with(|c| c.max_tests = 1);
    let mut a = FakeClient::connect(srv.addr);
    a.hello(&all_features());
    let mut s = spec(Transport::Udp, Direction::Send);
    s.rate_bps = Some(1_000_000);
    a.request(s);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.connect(srv.addr).unwrap();
    a.peer
        .send(&Message::StreamsReady(control::StreamsReady {
            udp_ports: vec![u.local_addr().unwrap().port()],
        }))
        .unwrap();
    let hello = a.udp_hello(0);
    for _ in 0..100 {
        let _ = u.send(&hello);
        if let Some(m) = a.peer.recv_within(Duration::from_millis(20)) {
            assert!(matches!(m, Message::Start(_)), "{m:?}");
            break;
        }
    }
    a.peer.send(&Message::Stop(Default::default())).unwrap();
    drop(a);
    let t = Instant::now();
    // The server drains (up to 3 s), learns the client is gone, and frees its slot; it
    // used to wait 10 s more for results that could not come.
    loop {
        match try_run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send))) {
            Ok(_) => break,
            Err(e)
                if e.to_string().contains("maximum") && t.elapsed() < Duration::from_secs(20) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(t.elapsed() < Duration::from_secs(7), "{:?}", t.elapsed());
}

// ---- items 8 and 9: escaped and cut peer strings; plausible figures ----

#[test]
fn the_server_log_escapes_cuts_and_rate_limits_what_peers_send() {
    let srv = Serve::start(&[]);
    // An unknown message type with a newline, a forged log line and escape codes.
    let evil = "x\n2026-01-01T00:00:00Z [forged] 6.6.6.6:1 tcp send p=1\x1b[2J\x07";
    let body = serde_json::json!({"type": evil, "data": {}}).to_string();
    let mut frame = vec![b'L', b'R', 1, 0];
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(body.as_bytes());
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.write_all(&frame).unwrap();
    let _ = s.read(&mut [0u8; 1024]);
    drop(s);
    // Frames of 1 MiB whose type is the whole megabyte.
    for _ in 0..10 {
        let big = "y".repeat(1 << 20);
        let body = serde_json::json!({"type": big, "data": {}}).to_string();
        let mut frame = vec![b'L', b'R', 1, 0];
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(body.as_bytes());
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        let _ = s.write_all(&frame);
        let _ = s.read(&mut [0u8; 1024]);
    }
    // A hundred connections with a bad magic.
    for _ in 0..100 {
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.0\r\n\r\n");
        let _ = s.read(&mut [0u8; 16]);
    }
    std::thread::sleep(Duration::from_millis(300));
    let log = srv.stop();
    assert!(
        !log.contains('\x1b') && !log.contains('\x07'),
        "raw escapes in {log:?}"
    );
    for l in log.lines() {
        assert!(
            l.starts_with("20") && !l.starts_with("2026-01-01T00:00:00Z [forged]")
                || l.starts_with("linerate serve"),
            "a line no server wrote: {l:?}"
        );
        assert!(l.len() < 1000, "a line of {} bytes", l.len());
    }
    assert!(log.len() < 64 << 10, "{} bytes of log", log.len());
    // 112 lines were asked for; a burst went through and the rest was counted.
    assert!(log.lines().count() < 60, "{log}");
}

#[test]
fn the_client_escapes_what_the_server_says_and_leaves_out_absurd_figures() {
    let srv = FakeServer::start(&all_features(), |p| {
        accept_and_start(p);
        let mut report = server_report(Totals {
            duration_ns: 1_000_000_000,
            rx_bytes: u64::MAX,
            rx_duration_ns: 1,
            ..Totals::default()
        });
        report
            .warnings
            .push("\x1b]0;owned\x07\nforged: line".into());
        p.expect("stop");
        p.send(&Message::Results(Box::new(control::Results {
            report,
            intervals_streamed: true,
            capture: None,
        })))
        .unwrap();
        // Without the server's figures the client sends none of its own: it closes.
        assert!(p.recv().is_none());
    });
    let (code, out, err) = cli("tcp", srv.addr.port(), &["-t", "0.5"]);
    srv.join();
    let (out, err) = (text(&out), text(&err));
    assert_eq!(code, Some(0), "{err}");
    for t in [&out, &err] {
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
    }
    assert!(out.contains("report is left out"), "{out}");
    // The absurd rate is not shown as a figure, only named in the warning.
    for l in out.lines().filter(|l| l.contains("Tbit/s")) {
        assert!(l.contains("left out"), "{l}");
    }

    // An error mid-test with escape codes and a newline: escaped, one line, exit 2.
    let srv = FakeServer::start(&all_features(), |p| {
        accept_and_start(p);
        std::thread::sleep(Duration::from_millis(300));
        let _ = p.send(&Message::Error(control::ErrorMsg {
            code: ErrorCode::Internal,
            message: "bye\x1b[2J\x07\n2026-01-01 forged".into(),
        }));
    });
    let (code, out, err) = cli("tcp", srv.addr.port(), &["-t", "5"]);
    srv.join();
    let (out, err) = (text(&out), text(&err));
    assert_eq!(code, Some(2), "{err}");
    for t in [&out, &err] {
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
    }
    assert!(
        err.contains("bye\\u{1b}[2J\\u{7}\\n2026-01-01 forged"),
        "{err}"
    );
}

// ---- item 11: password guessing is limited per address and per user over time ----

#[test]
fn parallel_password_guessing_is_limited_per_address() {
    let users = Users::parse("alice:s3cret\n").unwrap();
    let srv = TestServer::with(|c| {
        c.users = Some(Arc::new(users));
        c.auth_failures_per_address = 3;
        c.auth_failures_per_user = 100;
        c.max_handshakes_per_address = 64;
    });
    let addr = srv.addr;
    let guesses: Vec<_> = (0..20)
        .map(|i| {
            std::thread::spawn(move || {
                let mut p = plan(addr, spec(Transport::Tcp, Direction::Send));
                p.auth = Some(Credentials::new("alice", &format!("guess{i}")).unwrap());
                try_run(&p).unwrap_err().to_string()
            })
        })
        .collect();
    let answers: Vec<String> = guesses.into_iter().map(|g| g.join().unwrap()).collect();
    let checked = answers
        .iter()
        .filter(|e| e.contains("unknown user or wrong secret"))
        .count();
    let limited = answers
        .iter()
        .filter(|e| e.contains("too many failed authentications"))
        .count();
    assert_eq!(checked + limited, 20, "{answers:?}");
    // Three were checked at all, however many came at once.
    assert_eq!(checked, 3, "{answers:?}");
    // The right secret from this address now waits too, with a clear message.
    let mut p = plan(addr, spec(Transport::Tcp, Direction::Send));
    p.auth = Some(Credentials::new("alice", "s3cret").unwrap());
    let e = try_run(&p).unwrap_err().to_string();
    assert!(e.contains("retry in"), "{e}");
}

#[test]
fn guessing_one_users_secret_from_many_addresses_is_limited_per_user() {
    let users = Users::parse("alice:s3cret\n").unwrap();
    let srv = TestServer::with(|c| {
        c.users = Some(Arc::new(users));
        c.auth_failures_per_address = 100;
        c.auth_failures_per_user = 2;
    });
    let guess = |from: [u8; 4], secret: &str| {
        let mut a = FakeClient::connect_from(srv.addr, IpAddr::from(from));
        let w = a.hello(&all_features()).clone();
        let ch = w.auth.expect("a challenge");
        let nonce = linerate::session::protocol::auth::unhex(&ch.nonce).unwrap();
        let creds = Credentials::new("alice", secret).unwrap();
        let cn = [1u8; 32];
        a.peer
            .send(&Message::Auth(control::AuthResponse {
                user: "alice".into(),
                nonce: linerate::session::protocol::auth::hex(&cn),
                mac: creds.key.proof(
                    linerate::session::protocol::auth::Prover::Client,
                    &nonce,
                    &cn,
                    "alice",
                ),
            }))
            .unwrap();
        match a.peer.recv() {
            Some(Message::Error(e)) => e.message,
            Some(Message::AuthOk(_)) => "ok".into(),
            other => panic!("{other:?}"),
        }
    };
    assert!(guess([127, 0, 0, 2], "a").contains("wrong secret"));
    assert!(guess([127, 0, 0, 3], "b").contains("wrong secret"));
    let e = guess([127, 0, 0, 4], "c");
    assert!(
        e.contains("too many failed authentications for this user"),
        "{e}"
    );
}

// ---- item 13: a server-wide budget of streams and buffers ----

#[test]
fn tests_beyond_the_servers_budget_are_refused_clearly() {
    let srv = TestServer::with(|c| {
        c.budget.streams = 4;
        c.budget.buffer_bytes = 1 << 30;
    });
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.streams = 5;
    let e = try_run(&plan(srv.addr, s)).unwrap_err().to_string();
    assert!(e.contains("--max-total-streams"), "{e}");
    // Two tests of 3 streams: the second waits for the first.
    let addr = srv.addr;
    let first = std::thread::spawn(move || {
        let mut s = spec(Transport::Tcp, Direction::Send);
        s.streams = 3;
        s.duration_ms = Some(1500);
        try_run(&plan(addr, s))
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.streams = 3;
    let e = try_run(&plan(srv.addr, s.clone())).unwrap_err().to_string();
    assert!(
        e.contains("retry later") && e.contains("3 of its 4 streams"),
        "{e}"
    );
    first.join().unwrap().expect("the first test ran");
    // Its streams are given back.
    try_run(&plan(srv.addr, s)).expect("room again");
}

// ---- item 14: argument errors are one line ----

#[test]
fn argument_errors_are_one_line_with_the_prefix_and_exit_2() {
    for args in [
        &["tcp"][..],
        &["tcp", "h", "--frobnicate"],
        &["frobnicate"],
        &["tcp", "h", "-l", "12Q"],
        &["serve", "--max-streams", "40000"],
        &["tcp", "h", "-P", "40000", "--bidir"],
        &["tcp", "h", "--max-time", "3"],
    ] {
        let out = bin().args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("linerate: error: "), "{args:?}: {err}");
    }
}

// ---- issue 38, item 6: every file read under a cap ----

/// Runs `linerate ARGS` (killed after 60 s, which fails the test): exit code and stderr.
fn run_bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = bin()
        .args(args)
        .env("LINERATE_AUTH_SECRET", "s3cret")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("linerate {args:?} was still reading after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

/// `/dev/zero` as a result file, a campaign or an agents file is refused after its cap
/// (one line naming the file and the cap, exit 2) where it was read without bound, and a
/// FIFO nobody writes to ends the command at once (exit 2) where it waited forever.
#[test]
fn endless_files_and_writerless_fifos_end_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let fifo = fifo.to_str().unwrap();
    // The core's commands, and each tool's where its feature is built (the board build has
    // only `compare`).
    fn commands(f: &str) -> Vec<Vec<&str>> {
        #[allow(unused_mut)]
        let mut all = vec![vec!["compare", f, f]];
        #[cfg(feature = "report")]
        all.push(vec!["report", f]);
        #[cfg(feature = "store")]
        all.push(vec!["check", f, "--baseline", "1"]);
        #[cfg(feature = "sweep")]
        all.push(vec!["campaign", f]);
        #[cfg(feature = "fleet")]
        all.push(vec![
            "fleet",
            "run",
            "--auth-user",
            "u",
            "--agents-file",
            f,
            "--",
            "tcp",
        ]);
        all
    }
    for args in commands("/dev/zero") {
        let (code, err) = run_bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("/dev/zero is longer than the") && err.contains("MiB"),
            "{args:?}: {err}"
        );
    }
    for args in commands(fifo) {
        let (code, err) = run_bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
