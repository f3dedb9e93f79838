//! QUIC stream tests (`linerate quic`, quinn) end to end on loopback: bytes at both ends,
//! the connections' figures, N connections by M streams, the pinned certificate, and the
//! refusals.

use std::sync::Arc;
use std::time::Duration;

use linerate::engine::quic;
use linerate::model::RunRecord;
use linerate_wire::control::{Direction, Transport};
use linerate_wire::report::{SideReport, StreamRole};

use crate::common::{plan, run, run_json, run_usage_error, spec, TestServer};

/// Every stream of `side` carries its connection's QUIC figures, and what they say agrees
/// with the bytes the stream moved: a sender's datagrams, each at most one path MTU of
/// payload, carried at least its bytes.
fn check_quic_figures(side: &SideReport, connections: u16) {
    for st in &side.streams {
        let q = st.quic.as_ref().expect("QUIC figures on every stream");
        assert!(q.connection < connections, "{q:?}");
        assert!(
            q.rtt_us > 0 && q.cwnd_bytes > 0 && q.mtu_bytes >= 1200,
            "{q:?}"
        );
        assert!(
            q.udp_tx_calls > 0 && q.udp_tx_datagrams >= q.udp_tx_calls,
            "{q:?}"
        );
        assert!(q.udp_rx_calls > 0 && q.udp_rx_datagrams > 0, "{q:?}");
        assert!(q.lost_packets <= q.sent_packets, "{q:?}");
        if st.role == StreamRole::Tx {
            assert!(st.bytes > 0, "stream {} sent nothing", st.index);
            let carried = q.udp_tx_datagrams * u64::from(q.mtu_bytes);
            assert!(carried >= st.bytes, "{} bytes in {q:?}", st.bytes);
            assert!(q.stream_frames_tx > 0, "{q:?}");
        }
        assert!(st.tcp_info.is_none() && st.send_mode.is_none());
    }
}

/// Both ends' totals agree exactly (QUIC is reliable: a receiver reads to the end of each
/// stream), and each end measured its CPU.
fn check_both_ends(rec: &RunRecord) {
    let server = rec.server.as_ref().expect("server report");
    assert!(!rec.interrupted);
    assert_eq!(server.totals.rx_bytes, rec.client.totals.tx_bytes);
    assert_eq!(server.totals.tx_bytes, rec.client.totals.rx_bytes);
    assert!(rec.client.totals.tx_bytes + rec.client.totals.rx_bytes > 0);
    for f in &rec.summary.flows {
        assert_eq!(Some(f.sender_bytes), f.receiver_bytes, "{f:?}");
    }
    assert!(rec.summary.client.cpu_util_percent.is_some());
    let s = rec.summary.server.as_ref().expect("server summary");
    assert!(s.service_demand_us_per_kb.is_some_and(|d| d > 0.0), "{s:?}");
}

#[test]
fn quic_each_way_and_both_ways_bytes_agree() {
    let srv = TestServer::start();
    for dir in [Direction::Send, Direction::Receive, Direction::Both] {
        let rec = run(&plan(srv.addr, spec(Transport::Quic, dir)));
        check_both_ends(&rec);
        let flows = if dir == Direction::Both { 2 } else { 1 };
        assert_eq!(rec.summary.flows.len(), flows, "{dir:?}");
        assert_eq!(rec.client.streams.len(), flows, "{dir:?}");
        check_quic_figures(&rec.client, 1);
        check_quic_figures(rec.server.as_ref().unwrap(), 1);
    }
}

#[test]
fn quic_connections_by_streams_by_bytes_and_paced() {
    let srv = TestServer::start();
    let mut s = spec(Transport::Quic, Direction::Send);
    // 2 connections of 3 streams: stream i on connection i % 2.
    s.streams = 6;
    s.quic_connections = Some(2);
    s.duration_ms = None;
    s.bytes = Some(3_000_001);
    s.write_size = 10_000;
    let rec = run(&plan(srv.addr, s));
    check_both_ends(&rec);
    assert_eq!(rec.client.totals.tx_bytes, 3_000_001);
    assert_eq!(rec.client.streams.len(), 6);
    for st in &rec.client.streams {
        assert_eq!(st.quic.as_ref().unwrap().connection, st.index % 2);
    }
    check_quic_figures(&rec.client, 2);

    // Paced: the receiver's bytes over the sender's window are at most the rate's, plus
    // one write (the pacer's first may go at once).
    let mut s = spec(Transport::Quic, Direction::Receive);
    let rate_bps = 20_000_000;
    s.rate_bps = Some(rate_bps);
    let rec = run(&plan(srv.addr, s.clone()));
    check_both_ends(&rec);
    let server = rec.server.as_ref().unwrap();
    let window_ns = server.totals.tx_duration_ns;
    let allowed =
        rate_bps as u128 * window_ns as u128 / 8 / 1_000_000_000 + u128::from(s.write_size);
    assert!(
        u128::from(server.totals.tx_bytes) <= allowed,
        "{} bytes in {window_ns} ns at {rate_bps} bit/s",
        server.totals.tx_bytes
    );
}

#[test]
fn quic_command_line_json_and_refusals() {
    let srv = TestServer::with(|c| c.limits.max_streams = 4);
    let v = run_json(
        &srv,
        "quic",
        &["-t", "500ms", "-P", "2", "--streams", "2", "--json"],
    );
    assert_eq!(v["plan"]["transport"], "quic");
    let client_tx = v["client"]["totals"]["tx_bytes"].as_u64().unwrap();
    assert!(client_tx > 0);
    assert_eq!(v["server"]["totals"]["rx_bytes"].as_u64(), Some(client_tx));
    assert!(v["client"]["streams"][0]["quic"]["rtt_us"]
        .as_u64()
        .is_some());

    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let base = ["quic", host.as_str(), "-p", port.as_str()];
    let refused = |extra: &[&str], words: &str| {
        let argv: Vec<&str> = base.iter().chain(extra).copied().collect();
        let e = run_usage_error(&argv);
        assert!(e.contains(words), "{argv:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    };
    // Over the server's --max-streams (4): 3 x 2 streams per direction.
    refused(&["-t", "1", "-P", "3", "--streams", "2"], "at most 4");
    refused(&["--streams", "0"], "--streams must be at least 1");
    refused(&["-P", "200", "--streams", "200"], "at most 32767");
    refused(&["-N"], "do not apply to QUIC");
}

#[test]
fn quic_client_trusts_only_the_pinned_certificate() {
    let adm = quic::Admission {
        token: [7; 16],
        connections: 1,
        streams: 1,
    };
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = got.clone();
    let deliver: quic::Deliver = Arc::new(move |i, _q| g.lock().unwrap().push(i));
    let ip = "127.0.0.1".parse().unwrap();
    let (_server, offer) = quic::QuicServer::open(ip, adm, deliver).unwrap();
    let mut t = quic::Target {
        addr: std::net::SocketAddr::new(ip, offer.port),
        local_ip: ip,
        cert_sha256: "00".repeat(32),
        timeout: Duration::from_secs(3),
    };
    let e = quic::connect(&t, [7; 16], 1, &[0]).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    assert!(got.lock().unwrap().is_empty());
    // With the right hash: the stream arrives with its index.
    t.cert_sha256 = offer.cert_sha256.clone();
    let streams = quic::connect(&t, [7; 16], 1, &[0]).unwrap();
    assert_eq!(streams.len(), 1);
    let t0 = std::time::Instant::now();
    while got.lock().unwrap().is_empty() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*got.lock().unwrap(), vec![0]);
}

#[test]
fn quic_client_gives_up_on_a_peer_that_stalls_the_handshake() {
    // A UDP port that reads nothing and answers nothing: the handshake never completes.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let ip = "127.0.0.1".parse().unwrap();
    let t = quic::Target {
        addr: silent.local_addr().unwrap(),
        local_ip: ip,
        cert_sha256: "00".repeat(32),
        timeout: Duration::from_millis(300),
    };
    let t0 = std::time::Instant::now();
    let e = quic::connect(&t, [1; 16], 1, &[0]).unwrap_err();
    assert!(e.contains("no answer within 300ms"), "{e}");
    // Bounded by its time-out (ten times it: room for a loaded machine's scheduling, far
    // from the 10 s idle time-out a wait without it would end at).
    assert!(t0.elapsed() < t.timeout * 10, "{:?}", t0.elapsed());
}
