//! Debian's iperf3 (3.12 in bookworm) against `linerate serve`, and a control run of the
//! same iperf3 client against `iperf3 -s` in the same test: every case completes, the
//! client's `-J` output parses with no error, and the totals agree with the control.
//!
//! The claims are about counting, so the TCP cases use fixed byte counts (`-n`), where
//! the iperf3 client's own count of what it sent is the witness of what linerate's server
//! received (exactly: it drains every stream to the end), and the UDP cases use a fixed
//! rate (`-b 50M -t 1`, far below what loopback carries, so the sender's pacing and not
//! the machine decides the count). These tests need the `iperf3` program: they fail, not
//! skip, without it (`apt-get install iperf3`; scripts/test.sh installs it).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{
    iperf3_bytes as bytes, iperf3_client as spawn_client, iperf3_json, wait_output, within,
    Iperf3Server, TestServer,
};

/// Bytes of the fixed-byte TCP runs.
const N: u64 = 32 << 20;

/// Runs an iperf3 client with `-J` (at most 30 s); its output parsed, with no `error`.
#[track_caller]
fn client(port: u16, args: &[&str]) -> Value {
    let out = wait_output(spawn_client(port, args), 30, "iperf3 -c");
    iperf3_json(&out, &format!("iperf3 {args:?}"))
}

/// The server's CPU figures in the client's output: present, finite, and no more than all
/// CPUs together (`remote_*` come from linerate's results message).
#[track_caller]
fn remote_cpu_is_real(v: &Value) {
    let c = &v["end"]["cpu_utilization_percent"];
    let total = c["remote_total"].as_f64().expect("remote_total");
    let user = c["remote_user"].as_f64().expect("remote_user");
    let system = c["remote_system"].as_f64().expect("remote_system");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert!(total > 0.0 && total <= 100.0 * cpus, "{c}");
    assert!((user + system - total).abs() < 1e-6 * total.max(1.0), "{c}");
}

fn tcp_fixed_bytes(extra: &[&str]) {
    let srv = TestServer::start();
    let n = N.to_string();
    let mut args = vec!["-n", n.as_str(), "--get-server-output"];
    args.extend_from_slice(extra);
    let ours = client(srv.addr.port(), &args);
    let control = Iperf3Server::start().client(&args);
    let reverse = extra.contains(&"-R");
    // The witness of what linerate counted: what the other end counted. Forward, the
    // iperf3 client's sent bytes are what linerate's server received, to the byte; reverse,
    // the client has received at least N and what linerate's server sent (the client stops
    // reading once it has N, so the two may differ by what was in flight, a few blocks).
    let sent = bytes(&ours, "sum_sent");
    let received = bytes(&ours, "sum_received");
    if reverse {
        assert!(
            received >= N && sent >= received,
            "sent {sent}, received {received}"
        );
    } else {
        assert_eq!(received, sent, "linerate serve received what iperf3 sent");
        assert!(sent >= N);
    }
    // Against the control: the side that decides the count (the sender) sent N plus at most
    // a block per stream, so both runs' sent bytes agree within 5%.
    within(sent, bytes(&control, "sum_sent"), 0.05, "sent");
    remote_cpu_is_real(&ours);
    let text = ours["server_output_text"].as_str().expect("server output");
    assert!(text.contains("iperf3 TCP"), "{text}");
}

#[test]
fn iperf3_tcp_forward_p1() {
    tcp_fixed_bytes(&[]);
}

#[test]
fn iperf3_tcp_forward_p4() {
    tcp_fixed_bytes(&["-P", "4"]);
}

#[test]
fn iperf3_tcp_reverse_p1() {
    tcp_fixed_bytes(&["-R"]);
}

#[test]
fn iperf3_tcp_reverse_p4() {
    tcp_fixed_bytes(&["-R", "-P", "4"]);
}

/// Bidirectional runs end on the client's timer, so they run at a fixed rate per stream
/// (`-b 100M`, far below loopback's capacity): each direction's bytes are decided by the
/// senders' pacing over one second. 5% allows for the start and stop of a 1 s run
/// (state bytes, thread start), which are a few ms of 1000.
fn tcp_bidir(p: &str) {
    let srv = TestServer::start();
    let args = ["--bidir", "-t", "1", "-b", "100M", "-P", p];
    let ours = client(srv.addr.port(), &args);
    let control = Iperf3Server::start().client(&args);
    for key in [
        "sum_sent",
        "sum_received",
        "sum_sent_bidir_reverse",
        "sum_received_bidir_reverse",
    ] {
        within(bytes(&ours, key), bytes(&control, key), 0.05, key);
    }
    remote_cpu_is_real(&ours);
}

#[test]
fn iperf3_tcp_bidir_p1() {
    tcp_bidir("1");
}

#[test]
fn iperf3_tcp_bidir_p4() {
    tcp_bidir("4");
}

/// UDP at 50 Mbit/s for 1 s in 1400-byte datagrams: the sender's pacing decides the count
/// (about 4500 datagrams), and the receiver counts what arrived. 5% as for
/// bidir TCP; the datagrams each run counted are compared, and loss is whatever loopback
/// lost in both (not asserted: the machine is shared).
fn udp(extra: &[&str]) {
    let srv = TestServer::start();
    let mut args = vec!["-u", "-b", "50M", "-t", "1", "-l", "1400"];
    args.extend_from_slice(extra);
    let ours = client(srv.addr.port(), &args);
    let control = Iperf3Server::start().client(&args);
    let keys: &[&str] = if extra.contains(&"--bidir") {
        &[
            "sum_sent",
            "sum_received",
            "sum_sent_bidir_reverse",
            "sum_received_bidir_reverse",
        ]
    } else {
        &["sum_sent", "sum_received"]
    };
    for key in keys {
        within(bytes(&ours, key), bytes(&control, key), 0.05, key);
    }
    // What the receiver counted is what the sender sent, less what was lost.
    let s = &ours["end"]["sum_received"];
    let (packets, lost) = (s["packets"].as_u64(), s["lost_packets"].as_u64());
    if let (Some(p), Some(l)) = (packets, lost) {
        assert!(l <= p, "{s}");
    }
}

/// `-O 1`: the omitted second is left out of the counts at both ends, as iperf3 does.
#[test]
fn iperf3_tcp_omit() {
    let srv = TestServer::start();
    let args = ["-t", "1", "-O", "1", "-b", "100M"];
    let ours = client(srv.addr.port(), &args);
    let control = Iperf3Server::start().client(&args);
    for key in ["sum_sent", "sum_received"] {
        within(bytes(&ours, key), bytes(&control, key), 0.05, key);
    }
}

#[test]
fn iperf3_udp_omit() {
    udp(&["-O", "1"]);
}

#[test]
fn iperf3_udp_forward() {
    udp(&[]);
}

#[test]
fn iperf3_udp_reverse() {
    udp(&["-R"]);
}

#[test]
fn iperf3_udp_bidir() {
    udp(&["--bidir"]);
}

#[test]
fn three_iperf3_clients_at_once() {
    let srv = TestServer::start();
    let port = srv.addr.port();
    let kids: Vec<Child> = [
        &["-n", "16M"][..],
        &["-n", "16M", "-R", "-P", "2"][..],
        &["-u", "-b", "20M", "-t", "1"][..],
    ]
    .iter()
    .map(|a| spawn_client(port, a))
    .collect();
    for k in kids {
        let v = iperf3_json(&wait_output(k, 30, "iperf3 -c"), "iperf3 -c");
        assert!(bytes(&v, "sum_received") > 0);
    }
}

/// Connects to `addr` and sends a cookie.
fn hostile(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"hostilehostilehostilehostilehostile2\0")
        .expect("cookie");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

/// Reads until the server closes; returns what it sent and how long it took.
fn until_closed(s: &mut TcpStream) -> (Vec<u8>, Duration) {
    let t = Instant::now();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    (got, t.elapsed())
}

fn params(extra: &str) -> Vec<u8> {
    let body = format!(r#"{{"tcp":true,"omit":0,"time":1,"parallel":1,"len":131072{extra}}}"#);
    let mut b = (body.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(body.as_bytes());
    b
}

/// A bad message gets PARAM_EXCHANGE, then SERVER_ERROR with iperf3's code, then a close.
#[track_caller]
fn refused_with(got: &[u8], i_errno: i32) {
    assert_eq!(got.first(), Some(&9), "PARAM_EXCHANGE first: {got:?}");
    let e = got.iter().position(|b| *b == 0xFE).expect("SERVER_ERROR");
    assert_eq!(got[e + 1..e + 5], i_errno.to_be_bytes(), "{got:?}");
}

/// Published iperf3 server CVEs' inputs and other hostile peers: each ends its own session
/// (with iperf3's error where one applies), and an iperf3 client running at the same time
/// is unaffected.
#[test]
fn hostile_iperf3_peers_harm_nothing_else() {
    let srv = TestServer::with(|c| c.log = true);
    let addr = srv.addr;
    let bystander = spawn_client(addr.port(), &["-t", "2", "-b", "100M"]);

    // CVE-2023-38403: a JSON length of 0xFFFFFFFF (iperf3 < 3.14 added 1 and allocated 0).
    let mut s = hostile(addr);
    s.write_all(&[0xff; 4]).expect("length");
    refused_with(&until_closed(&mut s).0, 114);
    // A length over the 8 KiB cap, and a length of 0.
    for len in [8193u32, 0] {
        let mut s = hostile(addr);
        s.write_all(&len.to_be_bytes()).expect("length");
        refused_with(&until_closed(&mut s).0, 114);
    }
    // CVE-2024-53580 (a crafted parameters message crashed iperf_exchange_parameters):
    // wrong types, out-of-range and absurd values, JSON that is not an object.
    for extra in [
        r#","parallel":"x""#,
        r#","parallel":1e300"#,
        r#","len":-1"#,
        r#","udp":true"#,
    ] {
        let mut s = hostile(addr);
        s.write_all(&params(extra)).expect("params");
        refused_with(&until_closed(&mut s).0, 114);
    }
    let mut s = hostile(addr);
    s.write_all(&[0, 0, 0, 5]).expect("len");
    s.write_all(b"[1,2]").expect("body");
    refused_with(&until_closed(&mut s).0, 114);
    // CVE-2025-54349 / CVE-2025-54350 (a malformed authentication token overran a buffer
    // and failed an assertion): linerate takes no iperf3 token at all.
    let mut s = hostile(addr);
    s.write_all(&params(r#","authtoken":"=====AAAA""#))
        .expect("params");
    refused_with(&until_closed(&mut s).0, 114);
    // A state byte out of order: RESULT_REQUEST (3, never sent) instead of TEST_END.
    let mut s = hostile(addr);
    s.write_all(&params("")).expect("params");
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("state");
    assert_eq!(b[0], 9);
    // CREATE_STREAMS: open the one stream with the same cookie, then misbehave.
    s.read_exact(&mut b).expect("state");
    assert_eq!(b[0], 10);
    let mut data = TcpStream::connect(addr).expect("data");
    data.write_all(b"hostilehostilehostilehostilehostile2\0")
        .expect("cookie");
    let mut two = [0u8; 2];
    s.read_exact(&mut two).expect("start, running");
    assert_eq!(two, [1, 2]);
    s.write_all(&[3]).expect("bad state");
    let (got, _) = until_closed(&mut s);
    assert_eq!(got[0], 0xFE, "{got:?}");
    assert_eq!(got[1..5], 100i32.to_be_bytes());
    // CVE-2023-7250 (a peer that stops sending held iperf3's server forever): a cookie and
    // nothing more is told so (iperf3's "unable to receive parameters") and closed at the
    // handshake time-out (2 s in these tests).
    let mut s = hostile(addr);
    let (got, took) = until_closed(&mut s);
    refused_with(&got, 114);
    assert!(took < Duration::from_secs(5), "closed after {took:?}");
    // A cookie that is not one.
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"abcdefghijklmnopqrstuvwxyz2345678901\0")
        .expect("bad cookie");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    assert!(until_closed(&mut s).0.is_empty());

    // The bystander's test ran through all of it.
    let v = iperf3_json(
        &wait_output(bystander, 30, "iperf3 -c (bystander)"),
        "the bystander",
    );
    assert!(bytes(&v, "sum_received") > 0);
    // And the server still serves.
    let v = client(addr.port(), &["-n", "1M"]);
    assert_eq!(bytes(&v, "sum_received"), bytes(&v, "sum_sent"));
}

/// More iperf3 clients than `--max-tests` allows: the one over the limit is told the
/// server is busy (iperf3's own message), the other completes.
#[test]
fn iperf3_clients_over_max_tests_are_told_busy() {
    let srv = TestServer::with(|c| c.max_tests = 1);
    let port = srv.addr.port();
    let first = spawn_client(port, &["-t", "2", "-b", "50M"]);
    std::thread::sleep(Duration::from_millis(500));
    let out = wait_output(spawn_client(port, &["-t", "1"]), 30, "second client");
    let v: Value = serde_json::from_str(&out).expect("-J output");
    let e = v["error"].as_str().expect("an error for the second client");
    assert!(e.contains("busy"), "{e}");
    iperf3_json(&wait_output(first, 30, "first client"), "the first client");
}
