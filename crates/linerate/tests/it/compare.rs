//! `linerate compare` on files: single runs, repeated runs, and bad input.

use crate::common::{bin, TestServer};

fn json_of(args: &[&str]) -> Vec<u8> {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn compare_files_of_single_and_repeated_runs() {
    let srv = TestServer::start();
    let port = srv.addr.port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let base = [
        "rr",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.3",
        "--rate",
        "1k",
        "--json",
    ];
    std::fs::write(&a, json_of(&base)).unwrap();
    let mut rep = base.to_vec();
    rep.extend(["--repeat", "2", "-r", "64,64"]);
    std::fs::write(&b, json_of(&rep)).unwrap();
    let out = bin()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
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
    let port = srv.addr.port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let tcp = dir.path().join("tcp.json");
    std::fs::write(
        &tcp,
        json_of(&["tcp", "127.0.0.1", "-p", &port, "-t", "0.3", "--json"]),
    )
    .unwrap();
    let rr = dir.path().join("rr.json");
    std::fs::write(
        &rr,
        json_of(&[
            "rr",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "0.3",
            "--rate",
            "1k",
            "--json",
        ]),
    )
    .unwrap();
    for (x, y, needle) in [
        (&junk, &tcp, "is not a linerate result"),
        (&tcp, &rr, "different kinds of test"),
    ] {
        let out = bin()
            .args(["compare", x.to_str().unwrap(), y.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
