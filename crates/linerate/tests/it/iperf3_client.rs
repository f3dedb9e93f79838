//! `linerate tcp|udp --iperf3` against Debian's `iperf3 -s` (3.12 in bookworm), with a
//! control run of iperf3's own client against `iperf3 -s` in the same test: every case
//! completes, linerate's JSON and the iperf3 server's own `-J` output parse, the server's
//! end of linerate's record is what the iperf3 server printed itself, and linerate's totals
//! agree within 5% with the control's.
//!
//! As in `iperf3.rs` (the server role), the claims are about counting: TCP forward and
//! reverse use a fixed byte count (`-n`), bidirectional TCP and UDP a fixed, paced rate far
//! below what loopback carries, so that the count is decided by the test's parameters and
//! not by the shared machine's speed. linerate's `-b` is each direction's total and iperf3's
//! is per stream, so linerate is given P times the control's rate. Then fake iperf3 servers
//! that stall or send oversized or garbage messages: each ends linerate with exit code 2
//! and one error line, in bounded time. These tests need the `iperf3` program: they fail,
//! not skip, without it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, iperf3_bytes as bytes, within, Iperf3Server, TestServer};

/// Bytes of the fixed-byte TCP runs.
const N: u64 = 32 << 20;

/// Runs `linerate CMD 127.0.0.1 -p PORT --iperf3 --json ARGS` (at most 60 s); its exit
/// code, stdout and stderr.
fn linerate(cmd: &str, port: u16, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = bin()
        .args([cmd, "127.0.0.1", "-p", &port.to_string(), "--iperf3"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("linerate");
    let deadline = Instant::now() + Duration::from_secs(60);
    while c.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = c.kill();
            panic!("linerate {cmd} --iperf3 {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = c.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The control: iperf3's client against `iperf3 -s`; the client's `-J`.
fn control(args: &[&str]) -> Value {
    Iperf3Server::start().client(args)
}

/// One run of linerate against `iperf3 -s -1 -J`: linerate's record and the server's own
/// output, both parsed; the flows of the record by direction.
fn run(cmd: &str, args: &[&str]) -> (Value, Value) {
    let srv = Iperf3Server::one_test();
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let (code, out, err) = linerate(cmd, srv.port, &a);
    assert_eq!(code, Some(0), "linerate {cmd} --iperf3 {args:?}: {err}");
    let rec: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("linerate's JSON does not parse ({e}): {out}"));
    (rec, srv.output())
}

fn flow<'a>(rec: &'a Value, dir: &str) -> &'a Value {
    rec["summary"]["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["direction"] == dir)
        .unwrap_or_else(|| panic!("no {dir} flow in {}", rec["summary"]))
}

/// What holds for every run: the server's end says what is absent, and its CPU is the
/// iperf3 server's own figure; none of its absent figures is a 0.
#[track_caller]
fn server_end_is_honest(rec: &Value, srv: &Value) {
    let w = rec["warnings"].to_string();
    assert!(w.contains("an iperf3 server reports"), "{w}");
    assert!(w.contains("system calls, its number of CPUs"), "{w}");
    let s = &rec["summary"]["server"];
    assert!(s["cpu_util_percent"].is_null(), "{s}");
    assert!(s["service_demand_us_per_kb"].is_null(), "{s}");
    // Its CPUs and system calls: absent from the JSON, not 0.
    for key in ["cpu_count", "io_calls", "us_per_call", "calls_per_sec"] {
        assert!(s.get(key).is_none(), "{key}: {s}");
    }
    let end = &rec["server"];
    assert!(end["host"].get("cpu_count").is_none(), "{}", end["host"]);
    for key in ["tx_calls", "rx_calls"] {
        assert!(end["totals"].get(key).is_none(), "{key}: {}", end["totals"]);
    }
    assert!(end["host_counters"].is_null());
    for st in end["streams"].as_array().expect("server streams") {
        assert!(st["tcp_info"].is_null(), "{st}");
        assert!(st.get("io_calls").is_none(), "{st}");
    }
    // linerate's own end measured them.
    let c = &rec["summary"]["client"];
    assert!(c["cpu_count"].as_u64().is_some_and(|n| n >= 1), "{c}");
    assert!(c["io_calls"].as_u64().is_some_and(|n| n > 0), "{c}");
    // iperf3's CPU of its own process: the server prints it as host_total.
    let ours = s["tool_cpu_percent"].as_f64().expect("the server's CPU");
    let theirs = srv["end"]["cpu_utilization_percent"]["host_total"]
        .as_f64()
        .expect("host_total");
    assert!(
        (ours - theirs).abs() <= 0.01 * theirs.max(1.0),
        "linerate says the iperf3 server used {ours}% of a CPU, it says {theirs}%"
    );
}

/// Forward and reverse TCP of N bytes: each end's count is that end's program's own (the
/// witness is the other program), linerate's receiver counts every byte sent, and the
/// control sent N as well.
fn tcp_bytes(extra: &[&str]) {
    let n = N.to_string();
    let mut args = vec!["-n", n.as_str()];
    args.extend_from_slice(extra);
    let (rec, srv) = run("tcp", &args);
    let reverse = extra.contains(&"-R");
    let (dir, srv_key) = if reverse {
        ("server_to_client", "sum_sent")
    } else {
        ("client_to_server", "sum_received")
    };
    let f = flow(&rec, dir);
    let sent = f["sender_bytes"].as_u64().expect("sender_bytes");
    let received = f["receiver_bytes"].as_u64().expect("receiver_bytes");
    // The iperf3 server's own count, to the byte.
    let theirs = bytes(&srv, srv_key);
    if reverse {
        assert_eq!(sent, theirs, "the server's sent bytes are its own count");
    } else {
        assert_eq!(
            received, theirs,
            "the server's received bytes are its own count"
        );
    }
    if reverse {
        // linerate's client drains every stream: it received what was sent.
        assert_eq!(received, sent, "{f}");
    } else {
        // An iperf3 server stops reading at TEST_END (linerate sends it once every byte
        // is acknowledged): what it had not read yet is missing from its count, and the
        // record says how much.
        assert!(received <= sent, "{f}");
        let gap = format!("the iperf3 server counted {received} of the {sent} bytes");
        assert_eq!(
            rec["warnings"].to_string().contains(&gap),
            received < sent,
            "{}",
            rec["warnings"]
        );
    }
    assert!(sent >= N, "{f}");
    let p: Vec<&str> = extra.iter().copied().filter(|a| *a != "-R").collect();
    let mut c = vec!["-n", n.as_str()];
    c.extend_from_slice(&p);
    if reverse {
        c.push("-R");
    }
    let control = control(&c);
    within(sent, bytes(&control, "sum_sent"), 0.05, "sent");
    server_end_is_honest(&rec, &srv);
}

#[test]
fn iperf3_server_tcp_forward_p1() {
    tcp_bytes(&[]);
}

#[test]
fn iperf3_server_tcp_forward_p4() {
    tcp_bytes(&["-P", "4"]);
}

#[test]
fn iperf3_server_tcp_reverse_p1() {
    tcp_bytes(&["-R"]);
}

#[test]
fn iperf3_server_tcp_reverse_p4() {
    tcp_bytes(&["-R", "-P", "4"]);
}

/// Paced runs (`per_stream` bit/s per stream, P streams, 2 s): each direction's bytes in
/// linerate's record, the iperf3 server's own output, and the control's, within 5%.
fn paced(cmd: &str, per_stream: u64, p: u32, extra: &[&str]) {
    let total = (per_stream * u64::from(p)).to_string();
    let ps = p.to_string();
    let mut args = vec!["-t", "2", "-b", total.as_str(), "-P", ps.as_str()];
    args.extend_from_slice(extra);
    let (rec, srv) = run(cmd, &args);
    let rate = per_stream.to_string();
    let mut c = vec!["-t", "2", "-b", rate.as_str(), "-P", ps.as_str()];
    if cmd == "udp" {
        c.push("-u");
    }
    c.extend_from_slice(extra);
    let control = control(&c);
    let bidir = extra.contains(&"--bidir");
    let reverse = extra.contains(&"-R");
    // (linerate's flow, the iperf3 server's key for its end, the control client's key for
    // the receiver's count)
    let mut checks = Vec::new();
    if bidir || !reverse {
        checks.push(("client_to_server", "sum_received", "sum_received"));
    }
    if bidir {
        checks.push((
            "server_to_client",
            "sum_sent_bidir_reverse",
            "sum_received_bidir_reverse",
        ));
    } else if reverse {
        checks.push(("server_to_client", "sum_sent", "sum_received"));
    }
    for (dir, srv_key, ctl_key) in checks {
        let f = flow(&rec, dir);
        let (sent, received) = (
            f["sender_bytes"].as_u64().expect("sender"),
            f["receiver_bytes"].as_u64().expect("receiver"),
        );
        let server_side = if dir == "client_to_server" {
            received
        } else {
            sent
        };
        assert_eq!(
            server_side,
            bytes(&srv, srv_key),
            "{dir}: the server's own count"
        );
        within(received, bytes(&control, ctl_key), 0.05, dir);
        if cmd == "udp" {
            // Loss is known (never a made-up 0 where it is not) and at most what was sent.
            let lost = f["lost_datagrams"].as_u64().expect("lost datagrams");
            let sent_pkts = received / 1400 + lost;
            assert!(lost <= sent_pkts, "{f}");
        }
    }
    server_end_is_honest(&rec, &srv);
}

#[test]
fn iperf3_server_tcp_bidir_p1() {
    paced("tcp", 100_000_000, 1, &["--bidir"]);
}

#[test]
fn iperf3_server_tcp_bidir_p4() {
    paced("tcp", 50_000_000, 4, &["--bidir"]);
}

#[test]
fn iperf3_server_udp_forward() {
    paced("udp", 50_000_000, 1, &["-l", "1400"]);
}

#[test]
fn iperf3_server_udp_reverse() {
    paced("udp", 50_000_000, 1, &["-l", "1400", "-R"]);
}

#[test]
fn iperf3_server_udp_bidir() {
    paced("udp", 50_000_000, 1, &["-l", "1400", "--bidir"]);
}

/// The bytes of an iperf3 `-J` output's intervals (`sum`), those marked omitted and the
/// others.
fn interval_bytes(v: &Value) -> (u64, u64) {
    let mut omitted = 0;
    let mut kept = 0;
    for iv in v["intervals"].as_array().expect("intervals") {
        let b = iv["sum"]["bytes"].as_u64().expect("interval bytes");
        if iv["sum"]["omitted"].as_bool().expect("omitted flag") {
            omitted += b;
        } else {
            kept += b;
        }
    }
    (omitted, kept)
}

/// `-t 3 -O 1`, paced: iperf3 is sent `-t 2 -O 1` (linerate's -t includes the warm-up).
/// The warm-up second is in neither end's totals: the iperf3 server's own output marks its
/// first second omitted and leaves it out of its sum, the record's server end is that sum,
/// linerate's client counted the same two seconds (its own warm-up intervals marked
/// omitted), and both agree within 5% with iperf3's own client sent `-t 2 -O 1`. The record
/// says how long the warm-up was, as the server does.
#[test]
fn iperf3_server_tcp_omit() {
    let (rec, srv) = run("tcp", &["-t", "3", "-O", "1", "-b", "100M"]);
    assert_eq!(
        rec["plan"]["omit_ms"].as_u64(),
        Some(1000),
        "{}",
        rec["plan"]
    );
    assert_eq!(rec["plan"]["duration_ms"].as_u64(), Some(3000));
    let ts = &srv["start"]["test_start"];
    assert_eq!(
        (ts["omit"].as_u64(), ts["duration"].as_u64()),
        (Some(1), Some(2)),
        "{ts}"
    );

    // The iperf3 server: a second of omitted intervals, left out of its sum.
    let (omitted, kept) = interval_bytes(&srv);
    let received = bytes(&srv, "sum_received");
    assert!(omitted > 0, "no omitted interval at the iperf3 server");
    within(
        received,
        kept,
        0.05,
        "iperf3's sum against its measured intervals",
    );

    // The record: the server's end is that sum; the client's end its own count after its
    // warm-up, which its intervals mark.
    let f = flow(&rec, "client_to_server");
    assert_eq!(f["receiver_bytes"].as_u64(), Some(received), "{f}");
    let sent = f["sender_bytes"].as_u64().expect("sender_bytes");
    within(
        sent,
        received,
        0.05,
        "linerate's sent bytes against iperf3's received",
    );
    let ivs = rec["client"]["intervals"]
        .as_array()
        .expect("client intervals");
    let warm: Vec<&Value> = ivs.iter().filter(|i| i["omitted"] == true).collect();
    assert!(!warm.is_empty(), "no warm-up interval in the record");
    for i in &warm {
        assert!(
            i["end_ns"].as_u64().is_some_and(|e| e <= 1_100_000_000),
            "{i}"
        );
    }
    let kept_ours: u64 = ivs
        .iter()
        .filter(|i| i["omitted"] == false)
        .map(|i| i["tx_bytes"].as_u64().expect("tx_bytes"))
        .sum();
    within(
        kept_ours,
        sent,
        0.05,
        "linerate's measured intervals against its total",
    );
    // With the warm-up counted, both would be half as large again (2 s paced, plus 1).
    assert!(
        (sent as f64) < 0.85 * (omitted + kept) as f64,
        "sent {sent}, the server's whole test {} bytes",
        omitted + kept
    );

    let control = control(&["-t", "2", "-O", "1", "-b", "100M"]);
    within(sent, bytes(&control, "sum_sent"), 0.05, "sent");
    within(received, bytes(&control, "sum_received"), 0.05, "received");
    server_end_is_honest(&rec, &srv);
}

/// `udp -t 3 -O 1`: iperf3 3.12 counts its datagrams from the test's start and does not say
/// how many fell in the omitted second. The record's server end holds the window's alone
/// (its bytes there over the datagram size, with a warning), which is what the iperf3
/// server's own output counts: its datagrams expected in the window (received + lost) and
/// the lost ones; the datagrams linerate's client sent in its own window agree within 5%.
#[test]
fn iperf3_server_udp_omit() {
    let (rec, srv) = run("udp", &["-t", "3", "-O", "1", "-b", "50M", "-l", "1400"]);
    assert_eq!(
        rec["plan"]["omit_ms"].as_u64(),
        Some(1000),
        "{}",
        rec["plan"]
    );
    let sum = &srv["end"]["sum"];
    let expected = sum["packets"].as_u64().expect("packets");
    let lost = sum["lost_packets"].as_u64().expect("lost_packets");
    let u = &rec["server"]["totals"]["udp_rx"];
    let got = u["packets"].as_u64().expect("received");
    assert_eq!(u["lost"].as_u64(), Some(lost), "{u} against {sum}");
    // A datagram of the warm-up that arrives after the reset, late, is in iperf3's bytes
    // and taken off its lost count: on loopback, hardly ever more than one or two.
    assert!(
        (got + lost).abs_diff(expected) <= 2.max(expected / 1000),
        "{got} received + {lost} lost against iperf3's {expected} expected"
    );
    assert_eq!(rec["server"]["totals"]["rx_packets"].as_u64(), Some(got));
    let f = flow(&rec, "client_to_server");
    assert_eq!(f["receiver_bytes"].as_u64(), Some(got * 1400), "{f}");
    let sent = rec["client"]["totals"]["tx_packets"]
        .as_u64()
        .expect("sent");
    within(sent, expected, 0.05, "datagrams sent in the window");
    // The warm-up's datagrams are in neither count: the omitted second held half as many
    // as the two measured.
    let omitted: u64 = srv["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["sum"]["omitted"] == true)
        .map(|i| i["sum"]["packets"].as_u64().expect("interval packets"))
        .sum();
    assert!(
        omitted > expected / 4,
        "omitted {omitted}, window {expected}"
    );
    let w = rec["warnings"].to_string();
    assert!(w.contains("omitted seconds"), "{w}");
    server_end_is_honest(&rec, &srv);
}

/// `-n` with `--bidir`: as iperf3's own client, the test ends when either direction has
/// moved the count (iperf3 3.12: `bytes_sent >= bytes || bytes_received >= bytes`), so one
/// direction carries N and the other what it carried by then. The server's end is the
/// iperf3 server's own count in both directions, linerate's receivers drained what the
/// server sent, and the direction that ended the test carried N, as in a run of iperf3's
/// own client.
#[test]
fn iperf3_server_tcp_bidir_bytes() {
    let n = N.to_string();
    let (rec, srv) = run("tcp", &["-n", n.as_str(), "--bidir", "-P", "2"]);
    let fwd = flow(&rec, "client_to_server");
    let rev = flow(&rec, "server_to_client");
    let num = |f: &Value, k: &str| f[k].as_u64().unwrap_or_else(|| panic!("{k}: {f}"));
    let (fwd_sent, fwd_got) = (num(fwd, "sender_bytes"), num(fwd, "receiver_bytes"));
    let (rev_sent, rev_got) = (num(rev, "sender_bytes"), num(rev, "receiver_bytes"));
    // The iperf3 server's own counts, to the byte.
    assert_eq!(fwd_got, bytes(&srv, "sum_received"), "{fwd}");
    assert_eq!(rev_sent, bytes(&srv, "sum_sent_bidir_reverse"), "{rev}");
    // linerate's receivers read to the end; the server read at most what was sent.
    assert_eq!(rev_got, rev_sent, "{rev}");
    assert!(fwd_got <= fwd_sent, "{fwd}");
    // The direction that ended the test moved N (the client's senders stop at N exactly).
    let ours = fwd_sent.max(rev_got);
    assert!(ours >= N, "sent {fwd_sent}, received {rev_got}");
    assert!(fwd_sent <= N, "{fwd}");
    let control = control(&["-n", n.as_str(), "--bidir", "-P", "2"]);
    let theirs = bytes(&control, "sum_sent").max(bytes(&control, "sum_received_bidir_reverse"));
    within(ours, theirs, 0.05, "the direction that ended the test");
    server_end_is_honest(&rec, &srv);
}

/// A linerate client that meets an iperf3 server without `--iperf3` is told at once.
#[test]
fn an_iperf3_server_is_detected_without_the_flag() {
    let srv = Iperf3Server::one_test();
    let t = Instant::now();
    let out = bin()
        .args(["tcp", "127.0.0.1", "-p", &srv.port.to_string(), "-t", "1"])
        .output()
        .expect("linerate");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("iperf3 server") && err.contains("--iperf3"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// `linerate serve` speaks iperf3 too, so `--iperf3` works against it; without the flag a
/// linerate server is a linerate server (the other tests of this suite).
#[test]
fn the_iperf3_client_role_against_linerate_serve() {
    let srv = TestServer::start();
    let (code, out, err) = linerate("tcp", srv.addr.port(), &["--json", "-n", "8M"]);
    assert_eq!(code, Some(0), "{err}");
    let rec: Value = serde_json::from_str(&out).expect("JSON");
    let f = flow(&rec, "client_to_server");
    assert_eq!(f["sender_bytes"], f["receiver_bytes"], "{f}");
    assert_eq!(f["sender_bytes"].as_u64(), Some(8 << 20));
}

/// What a fake iperf3 server does after the cookie.
#[derive(Clone, Copy, Debug)]
enum Fake {
    /// Nothing: it never answers.
    Silent,
    /// Busy (ACCESS_DENIED).
    Busy,
    /// SERVER_ERROR with iperf3's "too long" code.
    Refuses,
    /// The whole handshake, then nothing after TEST_END.
    StallAfterEnd,
    /// Results with a length of 2^32 - 1.
    HugeResults,
    /// Results that are not JSON.
    GarbageResults,
    /// A state byte that is no iperf3 state instead of CREATE_STREAMS.
    BadState,
}

fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("read");
    b
}

/// Serves one client as `how` says, holding the connections until the client leaves.
fn fake_server(how: Fake) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let (mut c, _) = l.accept().expect("accept");
        c.set_read_timeout(Some(Duration::from_secs(40))).ok();
        let _ = read_n(&mut c, 37);
        let hold = |mut c: TcpStream| {
            let mut sink = Vec::new();
            let _ = c.read_to_end(&mut sink);
        };
        match how {
            Fake::Silent => return hold(c),
            Fake::Busy => {
                c.write_all(&[0xff]).expect("write");
                return hold(c);
            }
            Fake::Refuses => {
                let mut b = vec![0xfe];
                b.extend_from_slice(&37i32.to_be_bytes());
                b.extend_from_slice(&0i32.to_be_bytes());
                c.write_all(&b).expect("write");
                return hold(c);
            }
            _ => {}
        }
        c.write_all(&[9]).expect("PARAM_EXCHANGE");
        let len = u32::from_be_bytes(read_n(&mut c, 4).try_into().expect("4"));
        let _ = read_n(&mut c, len as usize);
        if let Fake::BadState = how {
            c.write_all(&[77]).expect("write");
            return hold(c);
        }
        c.write_all(&[10]).expect("CREATE_STREAMS");
        let (mut d, _) = l.accept().expect("data");
        let _ = read_n(&mut d, 37);
        std::thread::spawn(move || hold(d));
        c.write_all(&[1, 2]).expect("start, running");
        // Wait for TEST_END.
        loop {
            if read_n(&mut c, 1)[0] == 4 {
                break;
            }
        }
        if let Fake::StallAfterEnd = how {
            return hold(c);
        }
        c.write_all(&[13]).expect("EXCHANGE_RESULTS");
        let len = u32::from_be_bytes(read_n(&mut c, 4).try_into().expect("4"));
        let _ = read_n(&mut c, len as usize);
        match how {
            Fake::HugeResults => c.write_all(&[0xff; 4]).expect("length"),
            _ => {
                c.write_all(&12u32.to_be_bytes()).expect("length");
                c.write_all(b"{not json!!}").expect("body");
            }
        }
        hold(c)
    });
    port
}

/// Each fake ends linerate with exit code 2 and one error line that says what happened,
/// within its time-outs (10 s for a silent server), never hanging.
#[test]
fn hostile_iperf3_servers_end_the_test_cleanly() {
    let cases = [
        (Fake::Silent, "sent no ParamExchange"),
        (Fake::Busy, "busy"),
        (Fake::Refuses, "longer than the server's maximum duration"),
        (Fake::StallAfterEnd, "sent no ExchangeResults"),
        (Fake::HugeResults, "exceeds the limit"),
        (Fake::GarbageResults, "server's results"),
        (Fake::BadState, "no iperf3 state"),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&(how, want)| {
            let port = fake_server(how);
            std::thread::spawn(move || {
                let t = Instant::now();
                let (code, _, err) = linerate("tcp", port, &["-t", "1", "-b", "10M"]);
                (how, want, code, err, t.elapsed())
            })
        })
        .collect();
    for r in runs {
        let (how, want, code, err, took) = r.join().expect("run");
        assert_eq!(code, Some(2), "{how:?}: {err}");
        assert!(err.contains(want), "{how:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{how:?}: {err}");
        assert!(took < Duration::from_secs(25), "{how:?} took {took:?}");
    }
}

/// Options an iperf3 server cannot honour are refused before anything is sent.
#[test]
fn iperf3_refuses_what_it_cannot_do() {
    for args in [
        &["tcp", "127.0.0.1", "--iperf3", "-S", "64K"][..],
        &["tcp", "127.0.0.1", "--iperf3", "-t", "1.5"][..],
        &["udp", "127.0.0.1", "--iperf3", "--raw-frames"][..],
        &["tcp", "127.0.0.1", "--iperf3", "--latency"][..],
        &["tcp", "127.0.0.1", "--iperf3", "--sendfile"][..],
        &["tcp", "127.0.0.1", "--iperf3", "--profile"][..],
    ] {
        let err = crate::common::run_usage_error(args);
        assert!(err.contains("--iperf3"), "{args:?}: {err}");
    }
}
