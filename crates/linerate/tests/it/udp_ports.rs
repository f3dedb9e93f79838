//! A UDP stream's socket belongs to exactly one test: a second test that lists another
//! test's client port is refused (it would split the victim's datagrams, or send its own to
//! the victim), and since protocol 1.3 a port counts only once a datagram from it proved
//! the test's token.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use linerate_wire::control::{Direction, Message, Transport};

use crate::common::{plan, run, spec, TestServer};
use crate::fake::{all_features, client_udp_ports, FakeClient};

/// Features of a client older than protocol 1.3: no UDP hello, so only the port registry
/// protects the victim.
const OLD_CLIENT: &[&str] = &["udp_stream", "interval_events", "bidir", "udp_gso"];

/// Runs a paced 2 s UDP test (`direction`) in a thread, lets an attacker with the same
/// address list the victim's client port in its own UDP test, and returns what the attacker
/// got for it and the victim's record.
fn attack(direction: Direction) -> (Option<Message>, linerate::model::RunRecord) {
    let srv = TestServer::start();
    let addr = srv.addr;
    let victim = std::thread::spawn(move || {
        let mut s = spec(Transport::Udp, direction);
        s.duration_ms = Some(2000);
        s.rate_bps = Some(20_000_000);
        run(&plan(addr, s))
    });
    // Find the victim's port as anyone on the client host can, and give its test a moment
    // to start.
    let deadline = Instant::now() + Duration::from_secs(5);
    let port = loop {
        if let Some(p) = client_udp_ports(srv.addr.port()).first() {
            break *p;
        }
        assert!(
            Instant::now() < deadline,
            "the victim's UDP socket never appeared"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut a = FakeClient::connect(srv.addr);
    a.hello(OLD_CLIENT);
    let mut s = spec(Transport::Udp, direction);
    s.rate_bps = Some(20_000_000);
    a.request(s);
    let answer = a.streams_ready(vec![port]);
    if matches!(answer, Some(Message::Start(_))) {
        // Without the fix the test runs: let it take its share, then end it.
        std::thread::sleep(Duration::from_millis(800));
        let _ = a.peer.send(&Message::Stop(Default::default()));
    }
    let rec = victim.join().unwrap();
    drop(a);
    (answer, rec)
}

#[track_caller]
fn assert_refused(answer: &Option<Message>) {
    match answer {
        Some(Message::Error(e)) => assert!(
            e.message.contains("belongs to another test"),
            "{}",
            e.message
        ),
        other => panic!("the attacker's test was not refused: {other:?}"),
    }
}

#[test]
fn another_tests_udp_port_is_refused_and_the_victim_keeps_its_datagrams() {
    let (answer, rec) = attack(Direction::Send);
    assert_refused(&answer);
    let f = &rec.summary.flows[0];
    let sent = rec.client.totals.tx_packets.unwrap();
    let u = f.udp.as_ref().unwrap();
    assert!(sent > 1000, "{sent}");
    // Paced at 20 Mbit/s on loopback: every datagram reaches the victim's server socket.
    assert_eq!(u.packets - u.duplicates, sent, "{f:?}");
    assert_eq!(f.lost_datagrams, Some(0), "{f:?}");
}

#[test]
fn another_tests_udp_port_is_refused_in_reverse_too() {
    // With -R the attacker's server would send its own datagrams to the victim's socket,
    // which counted them as duplicates.
    let (answer, rec) = attack(Direction::Receive);
    assert_refused(&answer);
    let f = &rec.summary.flows[0];
    let u = f.udp.as_ref().unwrap();
    let sent = rec.server.as_ref().unwrap().totals.tx_packets.unwrap();
    assert_eq!(u.duplicates, 0, "{f:?}");
    assert_eq!(u.packets, sent, "{f:?}");
}

#[test]
fn a_port_is_listed_once() {
    let srv = TestServer::start();
    let mut a = FakeClient::connect(srv.addr);
    a.hello(OLD_CLIENT);
    let mut s = spec(Transport::Udp, Direction::Send);
    s.streams = 2;
    s.rate_bps = Some(1_000_000);
    a.request(s);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    let p = u.local_addr().unwrap().port();
    match a.streams_ready(vec![p, p]) {
        Some(Message::Error(e)) => assert!(e.message.contains("twice"), "{}", e.message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_udp_port_must_prove_the_tests_token() {
    let srv = TestServer::with(|c| c.handshake_timeout = Duration::from_millis(800));
    // A socket of some other program on the client's host: never a linerate client.
    let bystander = UdpSocket::bind("127.0.0.1:0").unwrap();
    bystander
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut a = FakeClient::connect(srv.addr);
    a.hello(&all_features());
    let mut s = spec(Transport::Udp, Direction::Receive);
    s.rate_bps = Some(10_000_000);
    a.request(s);
    let answer = a.streams_ready(vec![bystander.local_addr().unwrap().port()]);
    match &answer {
        Some(Message::Error(e)) => assert!(e.message.contains("no UDP hello"), "{}", e.message),
        other => panic!("a port that never proved the token was accepted: {other:?}"),
    }
    // And the server sent nothing to it.
    let mut buf = [0u8; 2048];
    assert!(
        bystander.recv(&mut buf).is_err(),
        "the server sent to the bystander"
    );
}

#[test]
fn a_hello_with_another_token_is_refused() {
    let srv = TestServer::start();
    let mut a = FakeClient::connect(srv.addr);
    a.hello(&all_features());
    let mut s = spec(Transport::Udp, Direction::Send);
    s.rate_bps = Some(1_000_000);
    a.request(s);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.connect(srv.addr).unwrap();
    let mut wrong = a.udp_hello(0);
    wrong[4] ^= 0xff;
    // The hello goes out until the server answers, as a real client's does.
    a.peer
        .send(&Message::StreamsReady(
            linerate_wire::control::StreamsReady {
                udp_ports: vec![u.local_addr().unwrap().port()],
            },
        ))
        .unwrap();
    let mut answer = None;
    for _ in 0..100 {
        let _ = u.send(&wrong);
        answer = a.peer.recv_within(Duration::from_millis(20));
        if answer.is_some() {
            break;
        }
    }
    match &answer {
        Some(Message::Error(e)) => {
            assert!(e.message.contains("another test's token"), "{}", e.message)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_proven_port_runs_and_a_client_without_the_hello_still_does() {
    let srv = TestServer::start();
    for features in [all_features(), OLD_CLIENT.to_vec()] {
        let proves = features.contains(&"udp_stream_hello");
        let mut a = FakeClient::connect(srv.addr);
        a.hello(&features);
        let mut s = spec(Transport::Udp, Direction::Send);
        s.rate_bps = Some(1_000_000);
        a.request(s);
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.connect(srv.addr).unwrap();
        let hello = a.udp_hello(0);
        a.peer
            .send(&Message::StreamsReady(
                linerate_wire::control::StreamsReady {
                    udp_ports: vec![u.local_addr().unwrap().port()],
                },
            ))
            .unwrap();
        let mut answer = None;
        for _ in 0..100 {
            if proves {
                let _ = u.send(&hello);
            }
            answer = a.peer.recv_within(Duration::from_millis(20));
            if answer.is_some() {
                break;
            }
        }
        assert!(matches!(answer, Some(Message::Start(_))), "{answer:?}");
        // Ten datagrams with probes 0..9, and one more late hello that must not count.
        for seq in 0..10u64 {
            let mut d = [0u8; 1200];
            linerate_wire::probe::Probe { seq, tx_ns: 1 }.emit(&mut d);
            u.send(&d).unwrap();
        }
        if proves {
            u.send(&hello).unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
        a.peer.send(&Message::Stop(Default::default())).unwrap();
        let Message::Results(r) = a.peer.expect("results") else {
            unreachable!()
        };
        let got = r.report.totals.udp_rx.expect("udp accounting");
        assert_eq!(
            (got.packets, got.lost, got.duplicates),
            (10, 0, 0),
            "{got:?}"
        );
        assert_eq!(
            r.report.streams[0].udp_rx.as_ref().unwrap().highest_seq,
            Some(9)
        );
    }
}
