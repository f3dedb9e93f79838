//! Stream tests end to end on loopback.

use linerate::model::FlowDirection;
use linerate_wire::control::{Direction, Transport};
use linerate_wire::report::Role;

use crate::common::{plan, run, spec, TestServer};

#[test]
fn tcp_send_measures_both_ends() {
    let srv = TestServer::start();
    let rec = run(&plan(srv.addr, spec(Transport::Tcp, Direction::Send)));
    assert!(!rec.interrupted);
    let server = rec.server.as_ref().expect("server report");
    assert_eq!(server.role, Role::Server);
    assert!(rec.client.totals.tx_bytes > 0);
    // TCP delivers every byte the sender wrote once the receiver has drained.
    assert_eq!(server.totals.rx_bytes, rec.client.totals.tx_bytes);
    let f = &rec.summary.flows[0];
    assert_eq!(f.direction, FlowDirection::ClientToServer);
    assert!(f.receiver_bps.unwrap() > 1e6);
    // CPU and service demand on both ends.
    assert!(rec.summary.client.cpu_util_percent.is_some());
    let s = rec.summary.server.as_ref().unwrap();
    assert!(s.service_demand_us_per_kb.unwrap() > 0.0);
    // TCP_INFO read on the sender.
    let st = &rec.client.streams[0];
    assert!(st.tcp_info.as_ref().unwrap().snd_mss > 0);
    assert!(st.sndbuf_bytes.unwrap() > 0);
    assert!(!rec.client.intervals.is_empty());
}

#[test]
fn tcp_reverse_and_bidir() {
    let srv = TestServer::start();
    let rec = run(&plan(srv.addr, spec(Transport::Tcp, Direction::Receive)));
    assert_eq!(rec.summary.flows.len(), 1);
    assert_eq!(
        rec.summary.flows[0].direction,
        FlowDirection::ServerToClient
    );
    assert_eq!(
        rec.client.totals.rx_bytes,
        rec.server.as_ref().unwrap().totals.tx_bytes
    );
    assert!(rec.client.totals.rx_bytes > 0);

    let mut s = spec(Transport::Tcp, Direction::Both);
    s.streams = 2;
    let rec = run(&plan(srv.addr, s));
    assert_eq!(rec.summary.flows.len(), 2);
    assert_eq!(rec.client.streams.len(), 4);
    for f in &rec.summary.flows {
        assert!(f.receiver_bytes.unwrap() > 0);
        assert_eq!(Some(f.sender_bytes), f.receiver_bytes);
    }
}

#[test]
fn tcp_fixed_byte_count_like_ttcp() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.duration_ms = None;
    s.bytes = Some(8192 * 256);
    s.write_size = 8192;
    let rec = run(&plan(srv.addr, s.clone()));
    assert_eq!(rec.client.totals.tx_bytes, 8192 * 256);
    assert_eq!(rec.client.totals.tx_calls, Some(256));
    assert_eq!(rec.server.as_ref().unwrap().totals.rx_bytes, 8192 * 256);
    // A linerate server counts its calls and says its CPUs: they are in the JSON, each end's
    // CPU count the one /proc/stat lists (both ends are this host).
    let cpus = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u64;
    let v = serde_json::to_value(&rec).unwrap();
    for end in ["client", "server"] {
        assert_eq!(v[end]["host"]["cpu_count"].as_u64(), Some(cpus), "{end}");
        assert_eq!(v["summary"][end]["cpu_count"].as_u64(), Some(cpus), "{end}");
        assert!(
            v["summary"][end]["io_calls"]
                .as_u64()
                .is_some_and(|n| n > 0),
            "{end}"
        );
        assert!(v[end]["totals"]["tx_calls"].is_u64() && v[end]["totals"]["rx_calls"].is_u64());
        for st in v[end]["streams"].as_array().unwrap() {
            assert!(st["io_calls"].as_u64().is_some_and(|n| n > 0), "{st}");
        }
    }
    // Reverse: the server sends exactly the count, split over 3 streams.
    s.direction = Direction::Receive;
    s.streams = 3;
    s.bytes = Some(1_000_001);
    let rec = run(&plan(srv.addr, s));
    assert_eq!(rec.client.totals.rx_bytes, 1_000_001);
}

#[test]
fn many_parallel_streams() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.streams = 128;
    s.write_size = 16384;
    // A byte count, not a time: 256 busy threads on a 2-CPU machine can leave some unscheduled
    // for the whole of a short timed test, but every stream must deliver its share.
    s.duration_ms = None;
    s.bytes = Some(128 * 4 * 16384);
    let rec = run(&plan(srv.addr, s));
    assert_eq!(rec.client.streams.len(), 128);
    assert_eq!(rec.server.as_ref().unwrap().streams.len(), 128);
    // Every stream sends its share and it arrives on the matching server stream.
    let server = rec.server.as_ref().unwrap();
    for c in &rec.client.streams {
        assert_eq!(c.bytes, 4 * 16384, "stream {}", c.index);
        let s = server.streams.iter().find(|s| s.index == c.index).unwrap();
        assert_eq!(s.bytes, c.bytes, "stream {}", c.index);
    }
}

#[test]
fn udp_send_counts_packets_and_loss() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Udp, Direction::Send);
    s.rate_bps = Some(50_000_000);
    let rec = run(&plan(srv.addr, s));
    let f = &rec.summary.flows[0];
    let udp = f.udp.as_ref().expect("udp accounting");
    let sent = rec.client.totals.tx_packets.unwrap();
    assert!(sent > 1000, "sent {sent}");
    // Paced at 50 Mbit/s on loopback nothing should be lost or duplicated.
    assert_eq!(udp.packets + udp.lost, sent, "{udp:?}");
    assert_eq!(udp.duplicates, 0);
    assert!(udp.jitter_ns.is_some());
    // Pacing held the rate within 10%.
    let bps = f.sender_bps.unwrap();
    assert!((bps - 50e6).abs() / 50e6 < 0.10, "sender rate {bps}");
}

#[test]
fn udp_reverse_small_datagrams() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Udp, Direction::Receive);
    s.write_size = 64;
    s.rate_bps = Some(20_000_000);
    let rec = run(&plan(srv.addr, s));
    let sent = rec.server.as_ref().unwrap().totals.tx_packets.unwrap();
    let got = rec.client.totals.udp_rx.as_ref().unwrap();
    assert!(sent > 1000);
    assert_eq!(got.packets + got.lost, sent);
    assert!(rec.summary.flows[0].receiver_pps.unwrap() > 1000.0);
}

#[test]
fn warm_up_is_left_out_of_totals() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.duration_ms = Some(1000);
    s.omit_ms = 400;
    let rec = run(&plan(srv.addr, s));
    let omitted: u64 = rec
        .client
        .intervals
        .iter()
        .filter(|i| i.omitted)
        .map(|i| i.tx_bytes)
        .sum();
    let counted: u64 = rec
        .client
        .intervals
        .iter()
        .filter(|i| !i.omitted)
        .map(|i| i.tx_bytes)
        .sum();
    assert!(omitted > 0, "warm-up intervals are marked");
    // Totals cover only the measured window: about 600 of the 1000 ms.
    assert!(
        rec.client.totals.duration_ns < 750_000_000,
        "{}",
        rec.client.totals.duration_ns
    );
    assert!(rec.client.totals.tx_bytes <= counted + omitted);
    assert!(rec.client.totals.tx_bytes < counted + omitted);
}

#[test]
fn concurrent_clients_are_isolated() {
    let srv = TestServer::start();
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let addr = srv.addr;
            std::thread::spawn(move || {
                let t = if i % 2 == 0 {
                    Transport::Tcp
                } else {
                    Transport::Udp
                };
                let mut s = spec(
                    t,
                    if i % 3 == 0 {
                        Direction::Receive
                    } else {
                        Direction::Send
                    },
                );
                if t == Transport::Udp {
                    s.rate_bps = Some(10_000_000);
                }
                run(&plan(addr, s))
            })
        })
        .collect();
    for h in handles {
        let rec = h.join().unwrap();
        let server = rec
            .server
            .as_ref()
            .expect("every client got its server report");
        // Each test's server report only holds its own streams and bytes.
        assert_eq!(server.streams.len(), 1);
        let f = &rec.summary.flows[0];
        if rec.plan.transport == Transport::Tcp {
            assert_eq!(f.receiver_bytes, Some(f.sender_bytes));
        } else {
            let u = f.udp.as_ref().unwrap();
            assert_eq!(u.packets + u.lost, f.sender_bytes / 1200);
        }
    }
}

#[test]
fn socket_buffers_are_reported_as_granted() {
    let srv = TestServer::start();
    let mut p = plan(srv.addr, spec(Transport::Tcp, Direction::Send));
    p.local.sndbuf = Some(65536);
    p.spec.server_rcvbuf = Some(131072);
    let rec = run(&p);
    // Linux doubles the requested value to account for bookkeeping overhead.
    assert_eq!(rec.summary.client.sndbuf_bytes, Some(131072));
    assert_eq!(
        rec.summary.server.as_ref().unwrap().rcvbuf_bytes,
        Some(262144)
    );
}

#[test]
fn ipv6_loopback_and_cpu_pinning_on_both_ends() {
    let srv = TestServer::with(|c| c.listen = "[::1]:0".parse().unwrap());
    let mut p = plan(srv.addr, spec(Transport::Tcp, Direction::Send));
    p.client_cpu = Some(0);
    p.spec.server_cpu = Some(0);
    let rec = run(&p);
    assert!(rec.summary.flows[0].receiver_bps.unwrap() > 1e6);
    let remote = rec.client.streams[0].remote_addr.as_deref().unwrap();
    assert!(remote.starts_with("[::1]"), "{remote}");
    assert!(
        rec.warnings.iter().all(|w| !w.contains("pin")),
        "{:?}",
        rec.warnings
    );
    // UDP over IPv6 too.
    let mut s = spec(Transport::Udp, Direction::Send);
    s.rate_bps = Some(10_000_000);
    let rec = run(&plan(srv.addr, s));
    assert!(rec.summary.flows[0].receiver_pps.unwrap() > 100.0);
}
