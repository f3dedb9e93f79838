//! Request/response tests end to end: TCP_RR, TCP_CRR and UDP_RR on loopback, and
//! repetition. UDP_RR with real loss is in `tests/lab/rr.rs`.

use std::sync::atomic::AtomicBool;

use clap::Parser;
use linerate::cli::args::{Args, Command as Cmd};
use linerate::model::{RrKind, RunRecord, RunSetRecord};
use linerate::session::protocol::client;

use crate::common::{run_against, run_json, run_usage_error, TestServer};

/// Runs `linerate rr 127.0.0.1 -p PORT <args>` in-process.
fn rr(srv: &TestServer, args: &[&str]) -> RunRecord {
    let port = srv.addr.port().to_string();
    let mut argv = vec!["linerate", "rr", "127.0.0.1", "-p", &port, "-i", "200ms"];
    argv.extend_from_slice(args);
    let Cmd::Rr(a) = Args::try_parse_from(&argv).expect("args").command else {
        unreachable!()
    };
    let plan = linerate::cli::rr::rr_plan(&a).expect("plan");
    let never = AtomicBool::new(false);
    client::run(&plan, &mut client::Quiet, &never).expect("rr run")
}

#[track_caller]
fn check_common(rec: &RunRecord, kind: RrKind) {
    let rr = rec.rr.as_ref().expect("rr summary");
    assert_eq!(rr.kind, kind);
    assert!(!rec.interrupted);
    assert!(rr.transactions > 50, "{} transactions", rr.transactions);
    let tps = rr.transactions_per_sec.expect("tps");
    // tps is transactions over the client's window.
    let want = rr.transactions as f64 * 1e9 / rr.duration_ns as f64;
    assert!((tps - want).abs() < 1e-6 * want);
    let l = rr.latency.as_ref().expect("latency");
    // Every measured transaction is in the histogram (no warm-up here).
    assert_eq!(l.count, rr.transactions);
    assert_eq!(l.histogram.iter().map(|b| b.count).sum::<u64>(), l.count);
    assert!(l.min_ns > 0 && l.min_ns <= l.p50_ns && l.p50_ns <= l.p99_ns && l.p99_ns <= l.max_ns);
    // Both ends' CPU and service demand per transaction.
    assert!(rec.summary.client.cpu_util_percent.is_some());
    assert!(rr.client_service_demand_us_per_tran.unwrap() > 0.0);
    assert!(rr.server_service_demand_us_per_tran.unwrap() > 0.0);
    assert!(rec.summary.flows.is_empty(), "stream flows do not apply");
    let server = rec.server.as_ref().expect("server report");
    // The server answered at least every completed transaction.
    assert!(server.totals.tx_bytes >= rr.transactions * u64::from(rr.response_bytes));
}

/// Both ends counted the same: the client's stop waited for the responses of the requests
/// it had sent (RrEngine::stop's drain), so every byte one end sent the other read, and each
/// response the server sent is one of the client's transactions.
#[track_caller]
fn both_ends_agree(rec: &RunRecord) {
    let rr = rec.rr.as_ref().expect("rr summary");
    let (c, s) = (
        &rec.client.totals,
        &rec.server.as_ref().expect("server").totals,
    );
    assert_eq!((c.tx_bytes, c.rx_bytes), (s.rx_bytes, s.tx_bytes));
    assert_eq!(s.tx_bytes, rr.transactions * u64::from(rr.response_bytes));
    assert_eq!((c.tx_packets, c.rx_packets), (s.rx_packets, s.tx_packets));
}

#[test]
fn tcp_rr_counts_transactions_and_latency() {
    let srv = TestServer::start();
    let rec = rr(&srv, &["-t", "1"]);
    check_common(&rec, RrKind::TcpRr);
    let rr = rec.rr.as_ref().unwrap();
    // One byte each way and one in flight: the client read exactly one byte per transaction.
    assert_eq!(rec.client.totals.rx_bytes, rr.transactions);
    both_ends_agree(&rec);
    assert!(rec.client.streams[0].tcp_info.is_some());
    assert!(!rec.client.intervals.is_empty());
    assert!(rec
        .client
        .intervals
        .iter()
        .all(|iv| iv.transactions.is_some()));
}

#[test]
fn tcp_rr_with_burst_parallel_streams_and_sizes() {
    let srv = TestServer::start();
    let rec = rr(
        &srv,
        &[
            "-t", "1", "-P", "2", "--burst", "4", "-r", "100,3000", "--rate", "20k",
        ],
    );
    check_common(&rec, RrKind::TcpRr);
    let rr = rec.rr.as_ref().unwrap();
    assert_eq!(
        (rr.request_bytes, rr.response_bytes, rr.burst),
        (100, 3000, 4)
    );
    assert_eq!(rec.client.streams.len(), 2);
    // The responses still in flight at the stop were read before the server stopped.
    assert_eq!(rec.client.totals.rx_bytes, rr.transactions * 3000);
    both_ends_agree(&rec);
}

#[test]
fn tcp_crr_opens_a_connection_per_transaction() {
    let srv = TestServer::start();
    let rec = rr(&srv, &["-t", "1", "--connect"]);
    check_common(&rec, RrKind::TcpCrr);
    let rr = rec.rr.as_ref().unwrap();
    let conns = rr.connections.expect("connections");
    // One connection per transaction; the last one finished before the server stopped.
    assert_eq!(conns, rr.transactions);
    both_ends_agree(&rec);
}

/// The port the client's TCP_CRR connections went to (its streams' remote address).
fn crr_port(rec: &RunRecord) -> u16 {
    let remote = rec.client.streams[0]
        .remote_addr
        .as_deref()
        .expect("remote address");
    remote
        .parse::<std::net::SocketAddr>()
        .expect("an address")
        .port()
}

#[test]
fn tcp_crr_takes_a_port_of_its_own_unless_the_server_keeps_to_one() {
    for one_port in [false, true] {
        let srv = TestServer::with(|c| c.one_port = one_port);
        let rec = rr(&srv, &["-t", "1", "--connect"]);
        check_common(&rec, RrKind::TcpCrr);
        assert!(
            rec.warnings.is_empty(),
            "one_port {one_port}: {:?}",
            rec.warnings
        );
        let port = crr_port(&rec);
        assert_eq!(port == srv.addr.port(), one_port, "{port} vs {}", srv.addr);
        // Served either way: the client's connections all reached a responder.
        let rr = rec.rr.as_ref().unwrap();
        assert!(rr.connections.unwrap() >= rr.transactions);
    }
}

#[test]
fn tcp_crr_connections_carry_the_tests_socket_options_at_the_server() {
    // The witness is ss(8), reading the loopback sockets while the test runs; afterwards the
    // record says which port the test's connections went to (its own, or with --one-port the
    // server's). -S 32K asks the server for 32 KiB buffers, which the kernel doubles
    // (rb65536, tb65536); a socket left with the defaults shows rb131072 and tb16384 or more.
    // The server closes first, right after its response, so a 1-byte response leaves ss
    // almost no time to see its socket. 1 MiB responses through 64 KiB buffers at both ends
    // keep each connection open for milliseconds even on an idle machine (on a loaded one,
    // 128 KiB ones were over too fast for ss to see one in 30 polls).
    for one_port in [false, true] {
        let srv = TestServer::with(|c| c.one_port = one_port);
        let (rec, skmem) = std::thread::scope(|s| {
            let t = s.spawn(|| rr(&srv, &["-t", "2", "--connect", "-S", "32K", "-r", "1,1M"]));
            std::thread::sleep(std::time::Duration::from_millis(300));
            let mut skmem = Vec::new();
            for _ in 0..40 {
                let out = std::process::Command::new("ss")
                    .args(["-tmnaH", "src", "127.0.0.1"])
                    .output()
                    .expect("ss (iproute2; scripts/test.sh installs it)");
                // Each socket's line, then its skmem on a line of its own.
                let text = String::from_utf8_lossy(&out.stdout);
                let mut socket = "";
                for l in text.lines() {
                    if l.contains("skmem:") {
                        skmem.push(format!("{socket} {l}"));
                    } else {
                        socket = l;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            (t.join().unwrap(), skmem)
        });
        let rr = rec.rr.as_ref().expect("rr summary");
        assert!(
            rr.transactions > 0 && rec.warnings.is_empty(),
            "{:?}",
            rec.warnings
        );
        // The server's end of a connection: its local address is the test's port, and it is
        // not the listener (the test's own listener carries the options too).
        // ss's columns: state, Recv-Q, Send-Q, local address, peer address.
        let local = format!("127.0.0.1:{}", crr_port(&rec));
        let server_side: Vec<&String> = skmem
            .iter()
            .filter(|l| {
                let mut cols = l.split_whitespace();
                cols.next() != Some("LISTEN") && cols.nth(2) == Some(local.as_str())
            })
            .collect();
        let with_opts = server_side
            .iter()
            .filter(|l| l.contains("rb65536,") && l.contains("tb65536,"))
            .count();
        assert!(
            with_opts > 0,
            "one_port {one_port}: no server-side TCP_CRR socket with the test's buffers among {} seen: {:?}",
            server_side.len(),
            server_side.iter().take(5).collect::<Vec<_>>()
        );
    }
}

#[test]
fn udp_rr_on_loopback_loses_nothing() {
    let srv = TestServer::start();
    let rec = rr(
        &srv,
        &[
            "-t", "1", "--udp", "-r", "32,64", "--burst", "2", "--rate", "5k",
        ],
    );
    check_common(&rec, RrKind::UdpRr);
    let rr = rec.rr.as_ref().unwrap();
    assert_eq!(rr.lost_transactions, Some(0), "{:?}", rec.warnings);
    assert_eq!(rr.lost_percent, Some(0.0));
    both_ends_agree(&rec);
    assert_eq!(rr.timeout_ms, Some(200));
}

#[test]
fn target_rate_is_kept_and_both_latencies_are_recorded() {
    let srv = TestServer::start();
    let rec = rr(&srv, &["-t", "1", "--rate", "500"]);
    let rr = rec.rr.as_ref().unwrap();
    let tps = rr.transactions_per_sec.unwrap();
    // The schedule never runs ahead of the target (one request in flight, 1 s window).
    assert!(tps <= 510.0, "{tps}");
    // On a loaded machine it may fall behind; then the record must say so.
    if tps < 475.0 {
        assert!(
            rec.warnings.iter().any(|w| w.contains("was not reached")),
            "{tps}: {:?}",
            rec.warnings
        );
    }
    assert_eq!(rr.target_tps, Some(500));
    let intended = rr.latency.as_ref().unwrap();
    let actual = rr
        .latency_from_actual_send
        .as_ref()
        .expect("both latencies with a rate");
    // Every request's intended send time is at or before its actual write, so the latency
    // from the intended time dominates sample by sample, hence percentile by percentile.
    assert_eq!(intended.count, actual.count);
    assert!(intended.p50_ns >= actual.p50_ns, "{intended:?} {actual:?}");
    assert!(intended.p99_ns >= actual.p99_ns, "{intended:?} {actual:?}");
    assert!(intended.max_ns >= actual.max_ns);
}

#[test]
fn warm_up_is_left_out() {
    let srv = TestServer::start();
    let rec = rr(&srv, &["-t", "1", "-O", "0.4", "--rate", "2k"]);
    let rr = rec.rr.as_ref().unwrap();
    // The window starts when the 0.4 s warm-up ends (later on a loaded machine), so it is
    // at most the 0.6 s after it, plus scheduling slack.
    assert!(
        rr.duration_ns > 0 && rr.duration_ns < 700_000_000,
        "{}",
        rr.duration_ns
    );
    assert!(rec.client.intervals.iter().any(|iv| iv.omitted));
    let l = rr.latency.as_ref().unwrap();
    // Latencies recorded after the baseline only: about the transactions counted.
    assert!(l.count <= rr.transactions + 2 && l.count + 50 >= rr.transactions);
}

#[test]
fn every_output_format_renders_and_ttcp_is_refused() {
    let srv = TestServer::start();
    for (fmt, needle) in [
        ("netperf", "MIGRATED TCP REQUEST/RESPONSE TEST"),
        ("csv", "started_at,test,streams,request_bytes"),
        ("json", "\"transactions_per_sec\""),
        ("json-stream", "\"event\":\"end\""),
        ("table", "per second"),
    ] {
        let text = run_against(&srv, "rr", &["-t", "0.3", "--rate", "1k", "--format", fmt]);
        assert!(text.contains(needle), "{fmt}: {text}");
    }
    let port = srv.addr.port().to_string();
    let err = run_usage_error(&["rr", "127.0.0.1", "-p", &port, "--format", "ttcp"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("ttcp has no request/response test"), "{err}");
}

#[test]
fn repeat_and_confidence_report_every_trial() {
    let srv = TestServer::start();
    let out = run_against(
        &srv,
        "rr",
        &["-t", "0.3", "--rate", "2k", "--repeat", "3", "--json"],
    );
    let set: RunSetRecord = serde_json::from_str(&out).expect("trial set");
    assert_eq!(set.runs.len(), 3);
    assert_eq!(set.primary_metric, "transactions_per_sec");
    let m = &set.metrics[0];
    assert_eq!((m.name.as_str(), m.n), ("transactions_per_sec", 3));
    let vals: Vec<f64> = set
        .runs
        .iter()
        .map(|t| t.rr.as_ref().unwrap().transactions_per_sec.unwrap())
        .collect();
    assert!((m.mean - vals.iter().sum::<f64>() / 3.0).abs() < 1e-6 * m.mean);
    assert!(m.ci_low.unwrap() <= m.mean && m.mean <= m.ci_high.unwrap());
    // The JSON validates against the committed schema.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/json-schema/trials-v1.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(compiled.is_valid(&value));

    // A stream test with --confidence and a wide target stops between MIN and MAX and says
    // whether it converged; the table shows every trial and the statistics.
    let text = run_against(
        &srv,
        "tcp",
        &[
            "-t",
            "0.3",
            "-b",
            "200M",
            "--confidence",
            "95,60",
            "--iterations",
            "2,4",
        ],
    );
    assert!(text.contains("trials of tcp"), "{text}");
    for row in ["mean", "stddev", "95% CI", "± % of mean"] {
        assert!(text.lines().any(|l| l.starts_with(row)), "{row}: {text}");
    }
    assert!(text.contains("converged"), "{text}");
}

/// `--link-rate` with `--repeat` (and `--confidence`): every trial's record carries the hint
/// and a diagnosis made with it. (Loopback is never link bound, so the verdicts do not
/// change here; `diagnose::tests` covers what the hint does to them.)
#[test]
fn link_rate_reaches_every_trial() {
    let srv = TestServer::start();
    let set = run_json(
        &srv,
        "tcp",
        &[
            "-t",
            "0.3",
            "-b",
            "50M",
            "--repeat",
            "2",
            "--link-rate",
            "100M",
            "--json",
        ],
    );
    let trials = set["trials"].as_array().expect("trials");
    assert_eq!(trials.len(), 2);
    for t in trials {
        assert_eq!(t["plan"]["link_rate_bps"], 100_000_000, "{t:#}");
        assert!(t["diagnosis"]["verdicts"].is_array(), "{t:#}");
    }
    let text = run_against(
        &srv,
        "udp",
        &[
            "-t",
            "0.3",
            "-b",
            "20M",
            "--confidence",
            "95,90",
            "--iterations",
            "2,2",
            "--link-rate",
            "1G",
        ],
    );
    assert!(text.contains("trials of udp"), "{text}");
}

/// Bounceback: bursts of 5 exchanges every 200 ms, each response held 1 ms at the server.
/// The test ends 100 ms after the last burst's start, in the gap between bursts, so the two
/// ends agree exactly: every request the client wrote the server read (TCP's bytes at both
/// ends), answered and the client read back, and each exchange is one transaction at each
/// end. Every exchange took at least the hold.
#[test]
fn bounceback_exchanges_agree_at_both_ends() {
    let srv = TestServer::start();
    let rec = rr(
        &srv,
        &[
            "-t",
            "1.1",
            "--bounceback",
            "5",
            "--bounceback-period",
            "200ms",
            "--bounceback-hold",
            "1ms",
            "-r",
            "100,3000",
        ],
    );
    let rr = rec.rr.as_ref().expect("rr summary");
    assert_eq!(rr.kind, RrKind::TcpBounceback);
    let bb = rr.bounceback.expect("bounceback shape");
    assert_eq!(
        (bb.burst, bb.period_ns, bb.hold_ns, bb.quickack),
        (5, 200_000_000, 1_000_000, true)
    );
    let n = rr.transactions;
    assert!(
        (25..=30).contains(&n),
        "{n} exchanges in 6 bursts of 5 (the last may be late)"
    );
    let server = rec.server.as_ref().expect("server report");
    assert_eq!(rec.client.totals.tx_bytes, n * 100, "requests written");
    assert_eq!(server.totals.rx_bytes, n * 100, "requests the server read");
    assert_eq!(
        server.totals.tx_bytes,
        n * 3000,
        "responses the server wrote"
    );
    assert_eq!(rec.client.totals.rx_bytes, n * 3000, "responses read back");
    let l = rr.latency.as_ref().expect("latency");
    assert_eq!(l.count, n);
    assert!(
        l.min_ns >= 1_000_000,
        "an exchange shorter than the hold: {l:?}"
    );
    assert!(
        l.p50_ns <= l.p90_ns
            && l.p90_ns <= l.p99_ns
            && l.p99_ns <= l.p99_9_ns
            && l.p99_9_ns <= l.max_ns
    );
    assert!(l.stddev_ns.is_some());
    let out = run_usage_error(&[
        "rr",
        "127.0.0.1",
        "--bounceback",
        "10",
        "--bounceback-hold",
        "10ms",
        "--bounceback-period",
        "50ms",
    ]);
    assert!(out.contains("shorter than a burst"), "{out}");
}
