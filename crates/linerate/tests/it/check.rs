//! `linerate check` on loopback: a paced UDP test stored three times (the baseline, by tag),
//! the same test run now by check (exit 0), a result file whose throughput is halved (exit
//! 1, a JUnit failure, the test named), too few runs (not called), and bad input (exit 2
//! with one line). The router lab (tests/lab/check.rs) checks real rate changes.

use serde_json::Value;

use crate::common::{self, TestServer};

#[test]
fn check_passes_the_same_test_fails_a_halved_one_and_refuses_bad_input() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let test = [
        "udp",
        host.as_str(),
        "-p",
        port.as_str(),
        "-b",
        "20M",
        "-t",
        "0.3",
        "-i",
        "0.1",
    ];
    let mut last = String::new();
    for _ in 0..3 {
        let out = common::bin_with_db(&db)
            .args(test)
            .args(["--tag", "base", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        last = String::from_utf8(out.stdout).unwrap();
        // Distinct start times (seconds): a baseline is the runs before the new one.
        std::thread::sleep(std::time::Duration::from_millis(1000));
    }
    let check = |args: &[&str]| {
        common::bin_with_db(&db)
            .arg("check")
            .args(args)
            .output()
            .unwrap()
    };
    // The same paced test again passes. Its throughput threshold is 25 % (the only metric
    // checked, as by default), half the drop the halved file below must be caught at: on a
    // busy 2-CPU machine a 0.3 s run paced at 20 Mbit/s once came 6.7 % under its
    // baseline, past the default 5 %, because the sender fell behind its pacing, not
    // because the test changed.
    let mut argv = vec![
        "--baseline",
        "base",
        "--max-regress",
        "throughput_bps=25%",
        "--json",
        "--",
    ];
    argv.extend_from_slice(&test);
    let out = check(&argv);
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{rec:#}");
    assert_eq!(rec["baseline"]["runs"], 3);
    assert_eq!(rec["passed"], true);
    assert_eq!(rec["metrics"][0]["name"], "throughput_bps");

    // The last stored run's record with half the throughput, as a file.
    let mut halved: Value = serde_json::from_str(&last).unwrap();
    let bps = halved["summary"]["flows"][0]["receiver_bps"]
        .as_f64()
        .unwrap();
    halved["summary"]["flows"][0]["receiver_bps"] = (bps / 2.0).into();
    halved["started_at"] = "2099-01-01T00:00:00Z".into();
    let file = dir.path().join("halved.json");
    std::fs::write(&file, halved.to_string()).unwrap();
    let f = file.to_str().unwrap();
    let out = check(&["--baseline", "base", f, "--junit"]);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failed: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.parent()?.attribute("name"))
        .collect();
    assert_eq!(failed, ["throughput_bps"], "{xml}");
    assert!(xml.contains("prediction t-test"), "{xml}");
    // Against one stored run there is nothing to test with: not called, exit 0.
    let out = check(&["--baseline", "1", f]);
    let words = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{words}");
    assert!(words.contains("not enough repeats to call it"), "{words}");
    // --last 2: the two runs before the file's start by the same test and hosts: the third
    // tagged one and the one check ran (stored like any run).
    let out = check(&["--last", "2", f, "--json"]);
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["baseline"]["stored_ids"], serde_json::json!([3, 4]));

    // Bad input: exit 2, one line that says what to do.
    for (args, says) in [
        (vec![f], "no baseline"),
        (
            vec!["--baseline", "nosuchtag", f],
            "no stored run has the tag",
        ),
        (
            vec!["--baseline", "base", f, "--max-regress", "fast"],
            "--max-regress",
        ),
        (vec!["--baseline", "99", f], "no run 99"),
    ] {
        let out = check(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
