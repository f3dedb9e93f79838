//! A TCP_CRR test that overflows the conntrack table (root): the client's namespace tracks
//! its connections (an nftables `ct state` rule), `nf_conntrack_max` is lowered for the
//! test (it is one value for every namespace and writable only from the initial one) and
//! restored on drop. The record, its diagnosis and the next connect's error must name
//! conntrack's drops, with figures that agree with `/proc/net/stat/nf_conntrack` read by
//! the test itself in that namespace.

use linerate::model::RunRecord;
use linerate::sys::conntrack::{parse_stat, MAX_PATH};
use linerate_lab::{Lab, LabOptions};

use crate::common::{lab_name, serve_in};

/// Restores `nf_conntrack_max` when dropped (a failed assertion included).
struct MaxGuard {
    old: String,
}

impl MaxGuard {
    fn set(max: u64) -> MaxGuard {
        let old = std::fs::read_to_string(MAX_PATH).expect("nf_conntrack_max");
        std::fs::write(MAX_PATH, max.to_string()).expect("write nf_conntrack_max (needs root)");
        MaxGuard { old }
    }
}

impl Drop for MaxGuard {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(MAX_PATH, self.old.trim()) {
            eprintln!(
                "could not restore nf_conntrack_max to {}: {e}",
                self.old.trim()
            );
        }
    }
}

/// Loads nf_conntrack when its files are missing; fails the test when it cannot.
fn ensure_conntrack() {
    if std::path::Path::new(MAX_PATH).exists() {
        return;
    }
    let out = std::process::Command::new("modprobe")
        .arg("nf_conntrack")
        .output()
        .expect("run modprobe");
    assert!(
        std::path::Path::new(MAX_PATH).exists(),
        "nf_conntrack is not loaded and `modprobe nf_conntrack` did not load it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `drop`, summed over the CPUs, of `/proc/net/stat/nf_conntrack` in lab host `host`.
fn drops_in(lab: &Lab, host: &str) -> u64 {
    let out = lab
        .exec(host, &["cat", "/proc/net/stat/nf_conntrack"])
        .expect("read the statistics");
    assert!(out.status.success());
    let stat = parse_stat(&String::from_utf8_lossy(&out.stdout)).expect("the hex table");
    stat.sum("drop").expect("a drop column")
}

fn read_in(lab: &Lab, host: &str, path: &str) -> u64 {
    let out = lab.exec(host, &["cat", path]).expect("cat");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a number")
}

#[test]
#[ignore = "needs root: network namespaces, nftables, nf_conntrack_max"]
fn lab_tcp_crr_names_conntrack_drops_of_a_full_table() {
    ensure_conntrack();
    let lab = Lab::pair(&lab_name("ct", "c"), &LabOptions::default()).expect("lab up (needs root)");
    // Track the client's connections: a rule with a `ct` expression in its namespace.
    for cmd in [
        &["nft", "add", "table", "inet", "lrct"][..],
        &[
            "nft",
            "add chain inet lrct out { type filter hook output priority 0; policy accept; }",
        ],
        &[
            "nft", "add", "rule", "inet", "lrct", "out", "ct", "state", "new", "counter",
        ],
    ] {
        let out = lab.exec("a", cmd).expect("nft (apt-get install nftables)");
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // nf_conntrack_max is read-only outside the initial namespace: the test sets it here.
    let w = lab
        .exec("a", &["sh", "-c", &format!("echo 1000 > {MAX_PATH}")])
        .expect("sh");
    assert!(
        !w.status.success(),
        "nf_conntrack_max was writable in a namespace"
    );
    // Room for what the initial namespace tracks now, so the host keeps working; the
    // client's namespace starts empty and fills it in a fraction of a second.
    let host_count: u64 = std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_count")
        .expect("nf_conntrack_count")
        .trim()
        .parse()
        .expect("a count");
    let max = host_count + 400;
    let _guard = MaxGuard::set(max);
    let b = lab.addr("b").unwrap().to_string();
    let srv = serve_in(&lab, "b");
    let bin = env!("CARGO_BIN_EXE_linerate");
    let before = drops_in(&lab, "a");
    let out = lab
        .exec(
            "a",
            &[
                bin,
                "rr",
                &b,
                "--connect",
                "-P",
                "4",
                "-t",
                "3",
                "--connect-timeout",
                "1500ms",
                "--json",
            ],
        )
        .expect("client in a");
    let after = drops_in(&lab, "a");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let rec: RunRecord = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("record ({e}); stderr: {stderr}"));
    let ct = rec
        .client
        .host_counters
        .as_ref()
        .and_then(|h| h.conntrack.clone())
        .expect("the client's conntrack counters");
    let drops = ct.drops.expect("drops");
    eprintln!(
        "max {max}; record: {ct:?}; statistics around the run: {before} -> {after}; warnings: {:?}",
        rec.warnings
    );
    // The witness: the namespace's own statistics around the whole client run, which
    // holds the record's window.
    assert!(
        after > before,
        "conntrack dropped nothing: {before} -> {after}"
    );
    assert!(
        drops >= 1 && drops <= after - before,
        "record {drops} drops, the statistics {} around the run",
        after - before
    );
    assert_eq!(ct.max_entries, Some(max));
    let entries = ct.entries.expect("entries");
    assert!(
        entries * 10 >= max * 9,
        "{entries} of {max} entries at the end"
    );
    // The namespace's count read by the test: still full (the entries wait 120 s).
    let count_now = read_in(&lab, "a", "/proc/sys/net/netfilter/nf_conntrack_count");
    assert!(
        count_now * 10 >= max * 9,
        "{count_now} of {max} entries after the run"
    );
    // The diagnosis names it with the record's figures.
    let d = rec.diagnosis.as_ref().expect("diagnosis");
    let v = d
        .verdicts
        .iter()
        .find(|v| v.kind.name() == "conntrack_drops")
        .unwrap_or_else(|| panic!("no conntrack_drops verdict: {}", d.summary));
    let ev = |m: &str| v.evidence.iter().find(|e| e.metric == m).map(|e| e.value);
    assert_eq!(ev("conntrack_drops"), Some(drops as f64));
    assert_eq!(ev("conntrack_max_entries"), Some(max as f64));
    assert!(
        v.message.contains(&format!("dropped {drops} packets")),
        "{}",
        v.message
    );
    // The warnings: SYNs sent again with conntrack's figures, and the first connect that
    // timed out names them too.
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("SYNs again") && w.contains(&format!("of {max} entries"))),
        "{:?}",
        rec.warnings
    );
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("timed out") && w.contains("conntrack:") && w.contains("dropped")),
        "{:?}",
        rec.warnings
    );
    // The table stays full for conntrack's TIME_WAIT (120 s): a new test's control
    // connection now times out, and the error says why.
    let before = drops_in(&lab, "a");
    let out = lab
        .exec(
            "a",
            &[
                bin,
                "rr",
                &b,
                "--connect",
                "-t",
                "1",
                "--connect-timeout",
                "2",
            ],
        )
        .expect("second client in a");
    let after = drops_in(&lab, "a");
    drop(srv);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    eprintln!("second client: {err}; statistics {before} -> {after}");
    assert!(!out.status.success(), "the second test ran: {err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(after > before, "no drop during the failed connect");
    // "N packets dropped ... meanwhile": N is the statistics' change over the connect, at
    // most what the test saw around the whole command.
    let n: u64 = err
        .split("entries in use")
        .nth(1)
        .and_then(|t| t.split("packets dropped").next())
        .and_then(|t| t.rsplit(' ').find(|w| !w.is_empty()))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no drop count in: {err}"));
    assert!(
        n >= 1 && n <= after - before,
        "{n} drops named, {} seen: {err}",
        after - before
    );
    assert!(err.contains(&format!("of {max} entries in use")), "{err}");
}
