//! A lossy, flapping path (root): back-to-back short tests through a router namespace with
//! nftables random loss both ways while a thread sets the router's link toward `b` down and
//! up, and a sender whose path goes down for the last second of its test. Witnesses: the
//! router's own interface counters and nftables counter, the server's /proc entries, and
//! the protocol's documented time-outs for how long a run may take.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

use linerate::session::protocol::machine::{CLIENT_DONE, CLIENT_HANDSHAKE, CLIENT_RESULTS};
use linerate_lab::{Lab, LabOptions, ShapedWays, Shaping};
use serde_json::Value;

use crate::common::{self, serve_in};

/// A blocked send waits this long (the engine's `POLL`, its send time-out) before it counts.
const POLL_NS: f64 = 100e6;

/// After its time-out a blocked sender's thread must run again to see the stop, and
/// `stop_senders` looks every 2 ms: on a host as loaded as CI's (load 13 on 2 CPUs, seen
/// here) that took 4 ms; 50 ms allows for worse.
const SCHEDULING_NS: f64 = 50e6;

/// The router's (received bytes, sent packets) counters of `iface` (`ip -s -j link show`).
fn link_counters(lab: &Lab, iface: &str) -> (u64, u64) {
    let out = lab
        .exec("r", &["ip", "-s", "-j", "link", "show", "dev", iface])
        .expect("ip -s link");
    let v: Value = serde_json::from_slice(&out.stdout).expect("ip -j output");
    let s = &v[0]["stats64"];
    let n = |k: &str, f: &str| {
        s[k][f]
            .as_u64()
            .unwrap_or_else(|| panic!("no {k}.{f}: {v}"))
    };
    (n("rx", "bytes"), n("tx", "packets"))
}

fn set_link(lab: &Lab, iface: &str, state: &str) {
    let out = lab
        .exec("r", &["ip", "link", "set", "dev", iface, state])
        .expect("ip link set");
    assert!(out.status.success(), "ip link set {iface} {state}: {out:?}");
}

/// The router's interface toward `a` (the one that is not its path interface toward `b`).
fn router_iface_toward_a(lab: &Lab) -> String {
    let to_b = lab.iface("r").unwrap();
    lab.interfaces("r")
        .unwrap()
        .iter()
        .find(|i| i.name != to_b)
        .map(|i| i.name.clone())
        .expect("r has two interfaces")
}

/// A TCP test of 3 s through a 50 Mbit/s router whose link toward the server goes down when
/// the client's own interval reports (`--json-stream`, every 0.1 s) say 2 s of the window have
/// passed, and up again after 2.9 s (TCP's backed-off retransmission timer, 200 ms doubled
/// from the last acknowledged segment, sends again only after the test's end, so the
/// sender stays blocked to its end). The sender's rate covers its whole 3 s window, its
/// blocked time is the time from the link's fall to the window's end (within the two 100 ms
/// waits the count is made of), the diagnosis names it, and the router's counters show the
/// path carried nothing: no packet out toward the server, and from the client only TCP's few
/// retransmissions while it was down. Interval reports and the ttcp format agree.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_a_link_down_for_the_last_second_blocks_the_sender_over_its_window() {
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(50_000_000)),
        rate_ways: ShapedWays::TowardB,
        ..LabOptions::default()
    };
    let lab = Lab::router(&common::lab_name("sk", "d"), &opts).expect("lab up (needs root)");
    let srv = serve_in(&lab, "b");
    let to_b = lab.iface("r").unwrap().to_string();
    let to_a = router_iface_toward_a(&lab);
    let b = lab.addr("b").unwrap().to_string();
    let mut cmd = lab.command("a", env!("CARGO_BIN_EXE_linerate")).unwrap();
    cmd.args(["tcp", &b, "-t", "3", "-i", "0.1", "--json-stream"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("client");
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // (window time of the fall, the `ip` command's lag, the router's counters then).
    let mut down: Option<(u64, Duration, (u64, u64))> = None;
    // The router's counters when the link came back up.
    let mut up: Option<(u64, u64)> = None;
    let mut record = None;
    for line in lines {
        let ev: Value = serde_json::from_str(&line.expect("client stdout")).expect("event");
        match ev["event"].as_str() {
            Some("interval") if ev["side"] == "client" => {
                let end_ns = ev["interval"]["end_ns"].as_u64().unwrap();
                if down.is_none() && end_ns >= 2_000_000_000 {
                    let t = Instant::now();
                    set_link(&lab, &to_b, "down");
                    let lag = t.elapsed();
                    let at = (link_counters(&lab, &to_a).0, link_counters(&lab, &to_b).1);
                    down = Some((end_ns, lag, at));
                } else if down.is_some() && up.is_none() && end_ns >= 2_900_000_000 {
                    up = Some((link_counters(&lab, &to_a).0, link_counters(&lab, &to_b).1));
                    set_link(&lab, &to_b, "up");
                }
            }
            Some("end") => record = Some(ev["record"].clone()),
            _ => {}
        }
    }
    if up.is_none() {
        set_link(&lab, &to_b, "up");
    }
    let out = child.wait_with_output().expect("client exit");
    drop(srv);
    assert!(out.status.success(), "client failed: {out:?}");
    let rec = record.expect("an end event with the record");
    let (down_at_ns, lag, (rx_a0, tx_b0)) = down.expect("the link went down");
    let (rx_a1, tx_b1) = up.unwrap_or_else(|| panic!("the test ended before 2.9 s: {rec:#}"));
    assert_eq!(
        tx_b1, tx_b0,
        "the router sent toward b while its link was down"
    );
    check_blocked(&rec, down_at_ns as f64, lag, rx_a1 - rx_a0);
}

/// The figures of [`lab_a_link_down_for_the_last_second_blocks_the_sender_over_its_window`]
/// against the moment the link went down (window time) and the bytes the router got from
/// the client while it was down.
fn check_blocked(rec: &Value, down_at_ns: f64, lag: Duration, rx_while_down: u64) {
    let f = &rec["summary"]["flows"][0];
    let c = &rec["client"];
    let window = c["totals"]["duration_ns"].as_f64().unwrap();
    let tx_dur = f["sender_duration_ns"].as_f64().unwrap();
    // The sender's window runs to the stop (its last write was at about 2 s); the end's
    // window, once its blocked send has noticed the stop (see [`SCHEDULING_NS`]).
    assert!(
        tx_dur >= window - POLL_NS - SCHEDULING_NS && tx_dur <= window,
        "window {window}: {f:#}"
    );
    let tx_bytes = f["sender_bytes"].as_f64().unwrap();
    let bps = f["sender_bps"].as_f64().unwrap();
    assert!((bps - tx_bytes * 8e9 / tx_dur).abs() < 1.0, "{f:#}");
    // Blocked from the fall (at `down_at_ns`, give or take the `ip` command's lag) to the
    // end; a blocked send counts whole 100 ms waits, and the first after the fall begins
    // once the socket buffer is full.
    let blocked = c["totals"]["tx_blocked_ns"]
        .as_f64()
        .expect("tx_blocked_ns");
    let expect = tx_dur - down_at_ns;
    let lag = lag.as_nanos() as f64;
    assert!(
        blocked >= expect - 2.0 * POLL_NS - lag && blocked <= expect + POLL_NS,
        "blocked {blocked} ns, the link down {expect} ns of the window: {c:#}"
    );
    // The router: TCP's retransmission timer sends one segment per time-out (200 ms, then
    // doubled: at most 3 in 0.9 s), the control connection has nothing to send, and `a`
    // may ask for the router's address (ARP, neighbour discovery): a few frames of at most
    // 1514 bytes, 20 of them 30 KB, where the 0.9 s before the fall brought 5.6 MB.
    assert!(
        rx_while_down <= 20 * 1514,
        "{rx_while_down} bytes from a while down"
    );
    // The diagnosis names it, with the record's figures.
    let d = &rec["diagnosis"];
    let v = d["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["kind"] == "sender_blocked")
        .unwrap_or_else(|| panic!("no sender_blocked: {d:#}"));
    let msg = v["message"].as_str().unwrap();
    let said = format!(
        "the sender (client) was blocked {:.1} s of {:.1} s",
        blocked / 1e9,
        tx_dur / 1e9
    );
    assert!(msg.starts_with(&said), "{msg}");
    // Interval reports: their bytes are the totals' (but for the first write, which may go
    // before the meter's first reading, as it did before this change), their blocked time
    // the total's (the last blocked send ends after the stop, and is capped there).
    let ivs = c["intervals"].as_array().unwrap();
    let sum = |k: &str| ivs.iter().map(|i| i[k].as_u64().unwrap_or(0)).sum::<u64>();
    let write = rec["plan"]["write_size"].as_f64().unwrap();
    let iv_bytes = sum("tx_bytes") as f64;
    assert!(
        iv_bytes <= tx_bytes && iv_bytes >= tx_bytes - write,
        "intervals {iv_bytes} B, totals {tx_bytes} B"
    );
    let iv_blocked = sum("tx_blocked_ns") as f64;
    assert!(
        iv_blocked >= blocked - 1e6 && iv_blocked <= blocked + POLL_NS,
        "intervals {iv_blocked}, totals {blocked}"
    );
    // ttcp's sender line: the same seconds and rate.
    let r: linerate::model::RunRecord = serde_json::from_value(rec.clone()).unwrap();
    let ttcp = linerate::export::ttcp::render(&r);
    let line = ttcp
        .lines()
        .find(|l| l.starts_with("ttcp-t: ") && l.contains("real seconds"));
    let line = line.unwrap_or_else(|| panic!("{ttcp}"));
    let secs = format!("{} bytes in {:.2} real seconds", tx_bytes, tx_dur / 1e9);
    assert!(line.contains(&secs), "{line} (want {secs})");
}

/// The soak's kinds of test, each 1 s: TCP both ways, parallel, bidirectional, paced UDP,
/// TCP_RR and TCP_CRR.
const KINDS: [&[&str]; 7] = [
    &["tcp"],
    &["tcp", "-R"],
    &["tcp", "-P", "4"],
    &["tcp", "--bidir"],
    &["udp", "-b", "20M"],
    &["rr"],
    &["rr", "--connect"],
];

/// Rounds of [`KINDS`]: 9 × 7 = 63 runs.
const ROUNDS: usize = 9;

/// Connect time-out given to each run.
const CONNECT_TIMEOUT_S: u64 = 2;

/// How long the link stays up, then down, in the flapping cycle: 2.3 s + 0.4 s, a period no
/// multiple of a run's length, so the falls land in every phase of a run (connect,
/// handshake, data, results).
const FLAP_UP: Duration = Duration::from_millis(2300);
const FLAP_DOWN: Duration = Duration::from_millis(400);

/// The loss each way: 2 % of the packets the router forwards.
const LOSS: f64 = 0.02;

/// Server resources: RSS (bytes), open fds, threads.
fn server_resources(pid: u32) -> (u64, usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("server alive");
    let field = |k: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {status}"))
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (field("VmRSS:") * 1024, fds, field("Threads:"))
}

/// Random loss of `LOSS` on everything the router forwards, both ways (its own table beside
/// linerate-lab's); the drops counter goes with it.
fn set_loss_both_ways(lab: &Lab, on: bool) {
    let k = linerate_lab::shape::loss_threshold(LOSS);
    let mut script = "table inet soak {\n}\ndelete table inet soak\n".to_string();
    if on {
        script.push_str(&format!(
            "table inet soak {{\n chain loss {{\n  type filter hook forward priority 0; policy accept;\n  numgen random mod {} < {k} counter drop\n }}\n}}\n",
            linerate_lab::shape::LOSS_MODULUS
        ));
    }
    let ns = lab.ns_name("r").unwrap();
    let out =
        linerate_lab::cmd::run_with_stdin("ip", &["netns", "exec", ns, "nft", "-f", "-"], &script);
    out.expect("nft");
}

fn loss_drops(lab: &Lab) -> u64 {
    let out = lab
        .exec("r", &["nft", "-j", "list", "table", "inet", "soak"])
        .expect("nft list");
    linerate_lab::shape::parse_nft_counter(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// The longest a run may take: its duration, the connect time-out, and the protocol's
/// documented waits after a silence (one handshake answer, the results, `done`), plus a
/// second for process start and exit. Any longer is a hang.
fn run_bound(duration_s: u64) -> Duration {
    Duration::from_secs(duration_s + CONNECT_TIMEOUT_S + 1)
        + CLIENT_HANDSHAKE
        + CLIENT_RESULTS
        + CLIENT_DONE
}

/// Runs `args` in `a` against the server in `b`, killed past `bound`; returns its output and
/// how long it took.
fn timed_run(lab: &Lab, args: &[&str], bound: Duration) -> (Output, Duration) {
    let mut cmd = lab.command("a", env!("CARGO_BIN_EXE_linerate")).unwrap();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let child: Child = cmd.spawn().expect("client");
    let id = child.id();
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Relaxed) {
                if t0.elapsed() > bound {
                    // Our own child, by its pid (unreaped, so not reused): SIGTERM.
                    let _ = Command::new("kill").arg(id.to_string()).status();
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let out = child.wait_with_output().expect("client exit");
        done.store(true, Relaxed);
        out
    });
    (out, t0.elapsed())
}

/// The stream figures of one good run: per flow, the sender's window is the run's (it was
/// told to stop, whatever the path did: within the 100 ms a blocked send takes to notice),
/// and its rate over that window is within what its receiver got and what the buffers
/// between them can hold: every byte written is either read by the receiver, or still in
/// the sender's send buffer (unsent or unacknowledged) or the receiver's receive buffer, so
/// `sent - received <= Σ SO_SNDBUF + Σ SO_RCVBUF` as the two ends granted them (for UDP,
/// plus the datagrams lost). A UDP sender paced at 20 Mbit/s stays under it (payload: 1.01
/// for the pacer's rounding).
fn check_flows(rec: &Value, what: &str) {
    let flows = rec["summary"]["flows"].as_array().unwrap();
    assert!(!flows.is_empty(), "{what}: no flows");
    for f in flows {
        let (sender, receiver) = if f["direction"] == "client_to_server" {
            ("client", "server")
        } else {
            ("server", "client")
        };
        let sent = f["sender_bytes"].as_f64().unwrap();
        let got = f["receiver_bytes"]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: {f:#}"));
        let tx_dur = f["sender_duration_ns"].as_f64().unwrap();
        let window = rec[sender]["totals"]["duration_ns"].as_f64().unwrap();
        // The window ends once every sender has left its loop: a blocked send notices the
        // stop at its 100 ms time-out, then its thread must be scheduled.
        assert!(
            tx_dur >= window - POLL_NS - SCHEDULING_NS && tx_dur <= window,
            "{what}: the sender's {tx_dur} ns against its window {window} ns: {f:#}"
        );
        assert!(got <= sent, "{what}: received more than sent: {f:#}");
        let bufs = |end: &str, role: &str, key: &str| -> f64 {
            rec[end]["streams"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["role"] == role)
                .filter_map(|s| s[key].as_f64())
                .sum()
        };
        // Datagrams lost on the way are neither read nor held anywhere.
        let lost = f["lost_datagrams"].as_f64().unwrap_or(0.0);
        let lost_bytes = lost * rec["plan"]["write_size"].as_f64().unwrap();
        let held =
            bufs(sender, "tx", "sndbuf_bytes") + bufs(receiver, "rx", "rcvbuf_bytes") + lost_bytes;
        let bps = f["sender_bps"].as_f64().unwrap();
        let bound = (got + held) * 8e9 / tx_dur;
        assert!(
            bps <= bound * (1.0 + 1e-9),
            "{what}: sender {bps} bit/s over {tx_dur} ns, receiver got {got} B, buffers {held} B: {f:#}"
        );
        if rec["plan"]["transport"] == "udp" {
            assert!(
                bps <= 20e6 * 1.01,
                "{what}: paced at 20M, sent {bps}: {f:#}"
            );
        }
    }
}

/// What one run came to: `Ok(())` for a good record (checked), `Err(line)` for a failure
/// (checked to be one clear line).
fn check_run(args: &[&str], out: &Output, took: Duration, bound: Duration) -> Result<(), String> {
    let what = args.join(" ");
    assert!(
        took <= bound,
        "{what}: ran {took:?}, over the bound {bound:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let rec: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: exit 0 without a record ({e}): {stderr}"));
        if args[0] == "rr" {
            let rr = &rec["rr"];
            assert!(rr["duration_ns"].as_u64().unwrap() > 0, "{what}: {rr:#}");
        } else {
            check_flows(&rec, &what);
        }
        return Ok(());
    }
    // A failure: exit code 1 or 2 (not a signal: the bound killed nothing) and one line.
    assert!(out.status.code().is_some(), "{what}: killed: {out:?}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("linerate: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{what}: not one error line: {stderr}");
    let line = errors[0];
    let cause = line.trim_start_matches("linerate: error: ");
    assert!(cause.len() > 20, "{what}: says nothing: {line}");
    // The connect advice fits the errno: a missing route is not a refused connection.
    if cause.contains("unreachable") && cause.contains("cannot reach") {
        assert!(cause.contains("no route to it"), "{what}: {line}");
        assert!(!cause.contains("runs there"), "{what}: {line}");
    }
    Err(line.to_string())
}

/// 63 back-to-back 1 s tests (tcp, -R, -P 4, --bidir, paced UDP, TCP_RR, TCP_CRR) through
/// a 50 Mbit/s router that drops 2 % of what it forwards both ways while a thread sets its
/// link toward the server down for 0.4 s in every 2.7 s. No run outlives [`run_bound`];
/// every failure is one `linerate: error:` line that names its cause; every good run's
/// flows pass [`check_flows`]; a clean test at the end succeeds; and the server's RSS,
/// open fds and threads at the end are no higher than after the first round of 7 runs,
/// within a margin: 2 fds and 2 threads (a session of a failed run may still be in its
/// last documented wait when the clean test ends: so the end is read again until that
/// wait has passed), and RSS 10 % + 4 MiB, where leaking one test's buffers per run (128 KiB
/// × 8 streams at most) would add 56 MiB over the rounds after the first.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_soak_through_a_lossy_flapping_router() {
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(50_000_000)),
        rate_ways: ShapedWays::Both,
        ..LabOptions::default()
    };
    let lab = Lab::router(&common::lab_name("sk", "s"), &opts).expect("lab up (needs root)");
    let b = lab.addr("b").unwrap().to_string();
    let mut cmd = lab.command("b", env!("CARGO_BIN_EXE_linerate")).unwrap();
    cmd.args(["serve", "--bind", &b, "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let server = common::LabServer::spawn(cmd);
    let pid = server.pid();
    set_loss_both_ways(&lab, true);
    let to_b = lab.iface("r").unwrap().to_string();
    let stop = AtomicBool::new(false);
    let falls = AtomicU32::new(0);
    let t0 = Instant::now();
    let (errors, first) = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Relaxed) {
                std::thread::sleep(FLAP_UP);
                set_link(&lab, &to_b, "down");
                falls.fetch_add(1, Relaxed);
                std::thread::sleep(FLAP_DOWN);
                set_link(&lab, &to_b, "up");
            }
        });
        // Stops the flapping however the runs end (a failed assertion too).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Relaxed);
            }
        }
        let _stop = Stop(&stop);
        soak_runs(&lab, &b, pid)
    });
    let soak_time = t0.elapsed();
    let dropped = loss_drops(&lab);
    set_loss_both_ways(&lab, false);
    let runs = ROUNDS * KINDS.len();
    eprintln!(
        "soak: {runs} runs in {soak_time:?}, {} failed, {} link falls, {dropped} packets dropped by the loss rule",
        errors.len(),
        falls.load(Relaxed)
    );
    for e in &errors {
        eprintln!("  {e}");
    }
    assert!(
        falls.load(Relaxed) >= 10,
        "the link fell too rarely to test anything"
    );
    assert!(dropped > 0, "the loss rule dropped nothing");
    assert!(errors.len() * 2 < runs, "most runs failed: {errors:#?}");
    // A clean test at the end, then the server's resources against the first round's.
    let (out, took) = timed_run(&lab, &["tcp", &b, "-t", "1", "--json"], run_bound(1));
    assert_eq!(check_run(&["tcp"], &out, took, run_bound(1)), Ok(()));
    let settle = Instant::now() + CLIENT_RESULTS + CLIENT_HANDSHAKE;
    let (rss0, fds0, thr0) = first;
    loop {
        let (rss, fds, thr) = server_resources(pid);
        let ok = rss <= rss0 + rss0 / 10 + (4 << 20) && fds <= fds0 + 2 && thr <= thr0 + 2;
        if ok {
            eprintln!(
                "soak: server RSS {rss0} -> {rss} B, fds {fds0} -> {fds}, threads {thr0} -> {thr}"
            );
            break;
        }
        assert!(
            Instant::now() < settle,
            "server grew: RSS {rss0} -> {rss} B, fds {fds0} -> {fds}, threads {thr0} -> {thr}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
}

/// The soak's runs, back to back; the failures' lines and the server's resources after the
/// first round.
fn soak_runs(lab: &Lab, b: &str, pid: u32) -> (Vec<String>, (u64, usize, u64)) {
    let mut longest = Duration::ZERO;
    let mut errors = Vec::new();
    let mut first = None;
    let timeout = CONNECT_TIMEOUT_S.to_string();
    let bound = run_bound(1);
    for round in 0..ROUNDS {
        for kind in KINDS {
            let mut args = vec![
                kind[0],
                b,
                "-t",
                "1",
                "--connect-timeout",
                &timeout,
                "--json",
            ];
            args.extend_from_slice(&kind[1..]);
            let (out, took) = timed_run(lab, &args, bound);
            longest = longest.max(took);
            if let Err(line) = check_run(kind, &out, took, bound) {
                errors.push(format!("{}: {line}", kind.join(" ")));
            }
        }
        if round == 0 {
            first = Some(server_resources(pid));
        }
    }
    eprintln!("soak: the longest run took {longest:?} (bound {bound:?})");
    (errors, first.expect("a first round"))
}
