//! The results exchange: UDP loss counted from the sender's datagrams against the
//! receiver's (so datagrams lost after the last one that arrived count too), and results
//! that never depend on a long test's intervals fitting one control frame.

use std::net::UdpSocket;
use std::time::Duration;

use linerate::diagnose::VerdictKind;
use linerate_wire::control::{self, Direction, Message, Transport};
use linerate_wire::report::{StreamReport, StreamRole, Totals, UdpRxReport};

use crate::common::{plan, run, spec, TestServer};
use crate::fake::{accept_and_start, finish, interval, server_report, FakeClient, FakeServer};

/// A fake server that says its socket got only the first `got` datagrams of the client's
/// one UDP stream (sequence numbers 0..got), as when the datagrams stopped reaching it; with
/// `new_fields` it reports its highest sequence number as a 1.3 server does.
fn receiver_that_stopped_early(got: u64, new_fields: bool) -> linerate::model::RunRecord {
    let srv = FakeServer::start(&["udp_stream", "interval_events"], move |p| {
        let spec = accept_and_start(p);
        let udp = UdpRxReport {
            packets: got,
            highest_seq: new_fields.then(|| got - 1),
            ..UdpRxReport::default()
        };
        let totals = Totals {
            duration_ns: 1_000_000_000,
            rx_bytes: got * u64::from(spec.write_size),
            tx_calls: Some(0),
            rx_calls: Some(got),
            rx_duration_ns: 300_000_000,
            rx_packets: Some(got),
            udp_rx: Some(UdpRxReport {
                highest_seq: None,
                ..udp.clone()
            }),
            ..Totals::default()
        };
        let mut report = server_report(totals);
        if new_fields {
            report.streams.push(StreamReport {
                index: 0,
                role: StreamRole::Rx,
                bytes: got * u64::from(spec.write_size),
                io_calls: Some(got),
                packets: Some(got),
                duration_ns: 300_000_000,
                sndbuf_bytes: None,
                rcvbuf_bytes: None,
                mss_bytes: None,
                congestion: None,
                tcp_info: None,
                udp_rx: Some(udp),
                udp_seq_end: None,
                tx_path: None,
                raw_tx: None,
                send_mode: None,
                recv_mode: None,
                zerocopy: None,
                quic: None,
                local_addr: None,
                remote_addr: None,
            });
        }
        finish(p, report, true);
    });
    let mut s = spec(Transport::Udp, Direction::Send);
    s.duration_ms = Some(1000);
    s.write_size = 1000;
    s.rate_bps = Some(8_000_000);
    let rec = run(&plan(srv.addr, s));
    srv.join();
    rec
}

#[track_caller]
fn check_lost_at_the_end(rec: &linerate::model::RunRecord, got: u64) {
    let sent = rec.client.totals.tx_packets.unwrap();
    assert!(sent > 2 * got, "sent {sent}");
    let f = &rec.summary.flows[0];
    assert_eq!(
        f.udp.as_ref().unwrap().lost,
        0,
        "no sequence gap at the receiver"
    );
    assert_eq!(f.lost_at_end, Some(sent - got), "{f:?}");
    assert_eq!(f.lost_datagrams, Some(sent - got));
    let want = (sent - got) as f64 * 100.0 / sent as f64;
    let loss = f.loss_percent.unwrap();
    assert!((loss - want).abs() < 1e-9, "loss {loss}% against {want}%");
    // The diagnosis names the loss; it never says that nothing stands out.
    let d = rec.diagnosis.as_ref().unwrap();
    let v = d.primary().unwrap();
    assert_eq!(v.kind, VerdictKind::DatagramLoss, "{}", d.summary);
    assert!(
        v.message.contains("after the last datagram that arrived"),
        "{}",
        v.message
    );
    assert!(!d.summary.contains("No single limit"), "{}", d.summary);
}

#[test]
fn datagrams_lost_after_the_last_one_received_are_loss() {
    // A 1.3 receiver: the sender's count against its highest sequence number, per stream.
    let rec = receiver_that_stopped_early(200, true);
    check_lost_at_the_end(&rec, 200);
    // An older receiver without the sequence number: the sender's count of the window
    // against the distinct datagrams received.
    let rec = receiver_that_stopped_early(200, false);
    check_lost_at_the_end(&rec, 200);
}

/// A fake server that streams `N` intervals during a one-second UDP test, then sends its
/// results without them (`intervals_streamed`), as a 1.3 server does: the client puts them
/// back. (A thousand is what a client allows at 10 ms intervals before the test's time
/// accounts for them; that no result depends on the frame cap is shown with a lowered
/// cap below.)
#[test]
fn the_servers_streamed_intervals_make_its_results_however_many() {
    const N: u64 = 1000;
    let (tx, rx) = std::sync::mpsc::channel();
    let srv = FakeServer::start(&["udp_stream", "interval_events"], move |p| {
        accept_and_start(p);
        for i in 0..N {
            p.send(&Message::Interval(control::IntervalMsg {
                interval: interval(i, 10),
            }))
            .unwrap();
        }
        let theirs = finish(p, server_report(Totals::default()), true);
        tx.send(theirs).unwrap();
    });
    let mut s = spec(Transport::Udp, Direction::Send);
    s.duration_ms = Some(1000);
    s.interval_ms = 10;
    s.rate_bps = Some(1_000_000);
    let rec = run(&plan(srv.addr, s));
    srv.join();
    assert!(rec.failure.is_none(), "{:?}", rec.failure);
    let server = rec.server.as_ref().expect("server results");
    assert_eq!(server.intervals.len() as u64, N);
    assert_eq!(server.intervals[0], interval(0, 10));
    assert_eq!(server.intervals[N as usize - 1], interval(N - 1, 10));
    assert!(
        rec.warnings.iter().all(|w| !w.contains("missing")),
        "{:?}",
        rec.warnings
    );
    // The client's own results travel without its intervals; its record keeps them.
    let client_sent = rx.recv().unwrap();
    assert!(client_sent.intervals.is_empty());
    assert!(!rec.client.intervals.is_empty());
}

#[test]
fn a_long_run_gets_the_servers_results_whatever_the_frame_cap() {
    // A 32 KiB cap stands in for the 4 MiB one: 2 s of 10 ms intervals (about 200, some
    // 260 bytes each with their host counters) no longer fit one frame, as an hour's would
    // not fit 4 MiB; the rest of the results (about 7 KiB) does.
    const CAP: u32 = 32 * 1024;
    let srv = TestServer::with(|c| c.max_frame = CAP);
    for transport in [Transport::Tcp, Transport::Udp] {
        let mut s = spec(transport, Direction::Send);
        s.duration_ms = Some(2000);
        s.interval_ms = 10;
        if transport == Transport::Udp {
            s.rate_bps = Some(10_000_000);
        }
        let rec = run(&plan(srv.addr, s));
        let server = rec.server.as_ref().expect("server results despite the cap");
        let size = serde_json::to_vec(&server.intervals).unwrap().len();
        assert!(
            size > CAP as usize,
            "{transport:?}: {size} bytes of intervals"
        );
        assert!(server.intervals.len() >= 150, "{}", server.intervals.len());
        assert!(
            rec.warnings.iter().all(|w| !w.contains("missing")),
            "{:?}",
            rec.warnings
        );
        // They are the whole run's: they add up to the server's total but for the last
        // part-interval, which the meter does not report.
        if transport == Transport::Tcp {
            let sum = server.intervals.iter().map(|i| i.rx_bytes).sum::<u64>() as f64;
            let total = server.totals.rx_bytes as f64;
            assert!(sum <= total && sum >= 0.95 * total, "{sum} of {total}");
        }
    }
}

#[test]
fn a_client_without_interval_events_gets_intervals_in_its_results_or_a_warning() {
    for (cap, fits) in [(control::MAX_CONTROL_FRAME, true), (16 * 1024, false)] {
        let srv = TestServer::with(|c| c.max_frame = cap);
        let mut a = FakeClient::connect(srv.addr);
        a.hello(&["udp_stream"]);
        let mut s = spec(Transport::Udp, Direction::Send);
        s.interval_ms = 10;
        s.rate_bps = Some(1_000_000);
        a.request(s);
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let answer = a.streams_ready(vec![u.local_addr().unwrap().port()]);
        assert!(matches!(answer, Some(Message::Start(_))), "{answer:?}");
        std::thread::sleep(Duration::from_millis(1500));
        a.peer.send(&Message::Stop(Default::default())).unwrap();
        let Message::Results(r) = a.peer.expect("results") else {
            unreachable!()
        };
        assert!(!r.intervals_streamed);
        if fits {
            assert!(
                r.report.intervals.len() >= 100,
                "{}",
                r.report.intervals.len()
            );
        } else {
            assert!(r.report.intervals.is_empty());
            assert!(
                r.report
                    .warnings
                    .iter()
                    .any(|w| w.contains("intervals are left out")),
                "{:?}",
                r.report.warnings
            );
        }
    }
}
