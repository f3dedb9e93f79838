//! Request/response tests in a lab namespace pair (root): UDP_RR with real loss, and where
//! TCP_CRR leaves its TIME_WAIT.

use linerate::model::RunRecord;
use linerate_lab::{Lab, LabOptions};

use crate::common::{lab_name, serve_in};

/// UDP_RR through a veth pair that drops 10 % of the packets entering each host (nftables):
/// a transaction is lost when its request or its response is, so the expected loss is
/// 1 − (1 − 0.1)² = 19 %.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_udp_rr_counts_real_loss() {
    let lab = Lab::pair(&lab_name("rr", "u"), &LabOptions::default()).expect("lab up (needs root)");
    let p = 0.10;
    lab.set_loss("a", p).expect("loss on a");
    lab.set_loss("b", p).expect("loss on b");
    let b = lab.addr("b").unwrap().to_string();
    let srv = serve_in(&lab, "b");
    let out = lab
        .exec(
            "a",
            &[
                env!("CARGO_BIN_EXE_linerate"),
                "rr",
                &b,
                "--udp",
                "-t",
                "3",
                "--burst",
                "16",
                "--timeout",
                "20ms",
                "--json",
            ],
        )
        .expect("client in a");
    drop(srv);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: RunRecord = serde_json::from_slice(&out.stdout).expect("record");
    let rr = rec.rr.as_ref().unwrap();
    let lost = rr.lost_transactions.unwrap();
    let total = lost + rr.transactions;
    let frac = lost as f64 / total as f64;
    let want = 1.0 - (1.0 - p) * (1.0 - p);
    // Binomial standard error at n ≥ 1000 is at most 1.3 points; allow ±5 points.
    assert!(total >= 1000, "only {total} transactions");
    assert!(
        (frac - want).abs() < 0.05,
        "lost {frac:.3} of {total}, expected {want:.3}"
    );
    assert!((rr.lost_percent.unwrap() - frac * 100.0).abs() < 1e-9);
    assert!(lab.loss_dropped("b").unwrap() > 0);
}

/// Sockets in TIME_WAIT in a lab host's namespace with `end` (ADDRESS:PORT) at either end,
/// from ss(8).
fn time_wait(lab: &Lab, host: &str, end: &str) -> usize {
    let out = lab
        .exec(host, &["ss", "-tanH", "state", "time-wait"])
        .expect("ss in the lab");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split_whitespace().any(|f| f == end))
        .count()
}

/// TCP_CRR across a veth pair, where the client's ports are not reused from TIME_WAIT as on
/// loopback (`tcp_tw_reuse` 2): the server closes each connection first, so TIME_WAIT is on
/// the server (ss in each namespace is the witness), the client's ports stay free, and every
/// connection is one transaction at both ends.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_tcp_crr_leaves_time_wait_on_the_server() {
    let lab = Lab::pair(&lab_name("rr", "c"), &LabOptions::default()).expect("lab up (needs root)");
    let b = lab.addr("b").unwrap().to_string();
    let srv = serve_in(&lab, "b");
    let bin = env!("CARGO_BIN_EXE_linerate");
    let out = lab
        .exec("a", &[bin, "rr", &b, "--connect", "-t", "2", "--json"])
        .expect("client in a");
    drop(srv);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: RunRecord = serde_json::from_slice(&out.stdout).expect("record");
    // The test's connections went to its own port on b (not the control connection's).
    let end = rec.client.streams[0].remote_addr.clone().expect("remote");
    let (tw_a, tw_b) = (time_wait(&lab, "a", &end), time_wait(&lab, "b", &end));
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let rr = rec.rr.as_ref().unwrap();
    assert!(
        rr.transactions >= 500,
        "only {} transactions",
        rr.transactions
    );
    let conns = rr.connections.unwrap();
    assert!(conns >= rr.transactions && conns <= rr.transactions + 1);
    // The transaction the end of the test cut may have closed at the client first.
    assert!(tw_a <= 1, "{tw_a} TIME_WAIT sockets on the client");
    // One per connection, except that the client's ports (even ones for connect, ~14,000)
    // come round again and a new SYN takes over its 4-tuple's TIME_WAIT at the server.
    let want = rr.transactions.min(14_000) as usize;
    assert!(
        tw_b >= want / 2,
        "{tw_b} TIME_WAIT sockets on the server for {} transactions",
        rr.transactions
    );
}
