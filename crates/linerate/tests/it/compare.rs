//! `linerate compare` on files: single runs, repeated runs, and bad input.

use crate::common::{bin, run_against, run_ok, run_usage_error, TestServer};

#[test]
fn compare_files_of_single_and_repeated_runs() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let base = ["-t", "0.3", "--rate", "1k", "--json"];
    std::fs::write(&a, run_against(&srv, "rr", &base)).unwrap();
    let mut rep = base.to_vec();
    rep.extend(["--repeat", "2", "-r", "64,64"]);
    std::fs::write(&b, run_against(&srv, "rr", &rep)).unwrap();
    let text = run_ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(
        text.contains("(1 trial)") && text.contains("(2 trials)"),
        "{text}"
    );
    assert!(text.contains("Welch's two-sided t-test"), "{text}");
    assert!(text.contains("transactions_per_sec"), "{text}");
    // A has one trial: no verdict.
    assert!(
        text.contains("too few trials: use --repeat 5 or more"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("B: ")), "{text}");

    let out = bin()
        .args([
            "compare",
            "--json",
            b.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["comparisons"][0]["metrics"][0];
    // The same two trials against themselves: no difference, p = 1.
    assert_eq!(m["verdict"], "not_significant");
    assert_eq!(m["diff"].as_f64(), Some(0.0));
}

#[test]
fn compare_refuses_bad_files_and_mixed_kinds() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let tcp = dir.path().join("tcp.json");
    std::fs::write(&tcp, run_against(&srv, "tcp", &["-t", "0.3", "--json"])).unwrap();
    let rr = dir.path().join("rr.json");
    let rr_args = ["-t", "0.3", "--rate", "1k", "--json"];
    std::fs::write(&rr, run_against(&srv, "rr", &rr_args)).unwrap();
    for (x, y, needle) in [
        (&junk, &tcp, "is not a linerate result"),
        (&tcp, &rr, "different kinds of test"),
    ] {
        let err = run_usage_error(&["compare", x.to_str().unwrap(), y.to_str().unwrap()]);
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
