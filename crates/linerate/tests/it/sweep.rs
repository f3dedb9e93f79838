//! `linerate sweep` against a real server on 127.0.0.1: points that are the test's own
//! command lines, the best point by a metric, client commands without a shell, failed
//! points shown, the journal and `--resume` after a kill, and the points in the database.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, bin_with_db, TestServer};

fn sweep(c: Command, srv: &TestServer, opts: &[&str], test: &[&str]) -> Output {
    let mut c = c;
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    c.arg("sweep").args(opts).arg("--").arg(test[0]);
    c.args([host.as_str(), "-p", port.as_str()])
        .args(&test[1..]);
    c.output().unwrap()
}

#[track_caller]
fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A point whose runs completed. On loopback linerate itself is often the limit, and the
/// diagnosis says so: `tester_limited` is a completed point too.
fn completed(p: &serde_json::Value) -> bool {
    p["status"] == "ok" || p["status"] == "tester_limited"
}

/// Paced UDP at three rates: the best by throughput is the fastest pace, each point's runs
/// ran at its own rate (the plan and the measured rate say so), and each point's runs are
/// in the database under the sweep.
#[test]
fn a_sweep_runs_every_point_and_picks_the_best() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let o = sweep(
        bin_with_db(&db),
        &srv,
        &[
            "--vary",
            "rate=4M,16M,8M",
            "--repeat",
            "2",
            "--json",
            "--tag",
            "sw",
        ],
        &["udp", "-t", "0.4", "-l", "1000"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = json(&o);
    let points = rec["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (p, rate) in points.iter().zip([4e6, 16e6, 8e6]) {
        assert!(completed(p), "{p:#}");
        let runs = p["runs"]["trials"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        for r in runs {
            assert_eq!(r["plan"]["rate_bps"].as_f64(), Some(rate));
            let got = r["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap();
            // Paced on loopback: the receiver gets the pace (a wide band; the witness is
            // the pace the plan asked for, not a speed).
            assert!(got > rate * 0.5 && got < rate * 1.5, "{got} at {rate}");
        }
        assert!(p["stored_id"].as_i64().is_some());
    }
    let best = &rec["best"];
    assert_eq!(best["metric"], "throughput_bps");
    assert_eq!(best["point"], 2, "{best:#}");
    #[cfg(feature = "report")]
    summary_shows_the_best(&o.stdout, dir.path(), "sweep", |_| best);
    assert_eq!(best["baseline"], 1);
    assert!(
        best["sentence"]
            .as_str()
            .unwrap()
            .contains("point 2 (rate=16M)"),
        "{best:#}"
    );

    let h = bin_with_db(&db)
        .args(["history", "--json"])
        .output()
        .unwrap();
    let h = json(&h);
    let runs = h["runs"].as_array().unwrap();
    let sweep_row = runs.iter().find(|r| r["command"] == "sweep").unwrap();
    let id = sweep_row["id"].as_i64().unwrap();
    let points: Vec<&Value> = runs.iter().filter(|r| r["sweep_id"] == id).collect();
    assert_eq!(points.len(), 3);
    assert!(points
        .iter()
        .all(|r| r["command"] == "udp" && r["tags"][0] == "sw"));
    let o = bin_with_db(&db)
        .args(["history", "--json", "--sweep", &id.to_string()])
        .output()
        .unwrap();
    assert_eq!(json(&o)["runs"].as_array().unwrap().len(), 3);
}

/// `linerate report` of a sweep's or a campaign's JSON: its summary, on Chromium's first
/// screen, gives each best point's figure, its baseline's and the change as the record has
/// them (`best(row key)`: the record's `best` of that row).
#[cfg(feature = "report")]
fn summary_shows_the_best<'a>(
    json: &[u8],
    dir: &Path,
    name: &str,
    best: impl Fn(&str) -> &'a Value,
) {
    let (file, page) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.html")),
    );
    std::fs::write(&file, json).unwrap();
    let o = bin()
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sub = dir.join(format!("{name}-chromium"));
    std::fs::create_dir_all(&sub).unwrap();
    let shown = super::report::summary_on_first_screen(&page, &sub, |key, metric| {
        let b = best(key);
        let m = b["metric"].as_str().unwrap();
        match metric {
            "change_percent" => b["change_percent"].as_f64(),
            _ if metric == m => b["mean"].as_f64(),
            _ if metric.strip_prefix("baseline_") == Some(m) => b["baseline_mean"].as_f64(),
            _ => None,
        }
    });
    assert!(
        shown.iter().any(|f| f.metric == "throughput_bps"),
        "{name}: {shown:?}"
    );
}

/// Client commands are argv, templated, their output kept; a failing one fails its point,
/// which is shown (not dropped), and the exit code is 1.
#[test]
fn client_commands_run_without_a_shell_and_failures_are_shown() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().display().to_string();
    let o = sweep(
        bin(),
        &srv,
        &[
            "--vary",
            "len=1K,2K",
            "--vary",
            "what=a;b,x",
            "--client-cmd",
            &format!("mktemp {marks}/ran-{{len}}-{{what}}.XXXXXX"),
            "--client-cmd",
            "test {what} = x",
            "--json",
        ],
        &["tcp", "-t", "0.2"],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec = json(&o);
    let points = rec["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        let what = p["values"]["what"].as_str().unwrap();
        let made = p["commands"][0]["stdout"]
            .as_str()
            .unwrap()
            .trim()
            .to_string();
        // The ; reached mktemp as a character of the name: no shell saw it.
        assert!(made.contains(&format!("-{what}.")), "{made}");
        assert!(Path::new(&made).exists());
        if what == "x" {
            assert!(completed(p), "{p:#}");
            assert_eq!(
                p["runs"]["trials"][0]["plan"]["write_size"]
                    .as_u64()
                    .unwrap()
                    % 1024,
                0
            );
        } else {
            assert_eq!(p["status"], "failed", "{p:#}");
            assert_eq!(p["commands"][1]["exit_code"], 1);
            assert!(p["error"]
                .as_str()
                .unwrap()
                .contains("exited with status 1"));
            assert!(p.get("runs").is_none());
        }
    }
    // The table shows the failed points too.
    let o = sweep(
        bin(),
        &srv,
        &[
            "--vary",
            "len=1K",
            "--vary",
            "what=a",
            "--client-cmd",
            "test {what} = x",
        ],
        &["tcp", "-t", "0.2"],
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("FAILED") && table.contains("no best point"),
        "{table}"
    );
}

#[test]
fn bad_sweeps_are_one_line_usage_errors() {
    for args in [
        &["sweep", "--vary", "len=1K,0", "--", "tcp", "127.0.0.1"][..],
        &["sweep", "--vary", "frob=1", "--", "tcp", "127.0.0.1"],
        &[
            "sweep",
            "--vary",
            "len=1K",
            "--",
            "tcp",
            "127.0.0.1",
            "--json",
        ],
        &[
            "sweep",
            "--vary",
            "len=1K",
            "--resume",
            "--",
            "tcp",
            "127.0.0.1",
        ],
    ] {
        let o = bin().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.trim().is_empty(), "{args:?}");
    }
}

/// Address space the matrix tests give the binary: a sweep of the largest allowed matrix
/// plans within it, a matrix of a million points built before its size is checked does not.
const MATRIX_AS_KIB: u32 = 256 * 1024;

/// `linerate ARGS...` under `ulimit -v MATRIX_AS_KIB`: (exit code, stderr).
fn run_limited(args: &[&str]) -> (Option<i32>, String) {
    let script = format!("ulimit -v {MATRIX_AS_KIB} && exec \"$0\" \"$@\"");
    let o = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_linerate")])
        .args(args)
        .env("LINERATE_NO_STORE", "1")
        .env_remove("LINERATE_DB")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A matrix too large is refused from its counts, before it is built: exit 2 and one line
/// that names the counts and how to make fewer points, within 256 MiB of address space
/// (built first, the million points of two dimensions took 701 MB and three aborted on a
/// 24 GB allocation). A campaign file with such a sweep fails the same way under --dry-run,
/// and so do sweeps that pass the limit together.
#[test]
fn oversized_matrices_are_refused_before_they_are_built() {
    let two = ["--vary", "len=1..1000", "--vary", "window=1..1000"];
    let three = [&two[..], &["--vary", "mss=1..1000"]].concat();
    for vary in [&two[..], &three[..]] {
        let mut args = vec!["sweep"];
        args.extend_from_slice(vary);
        args.extend(["--", "tcp", "127.0.0.1"]);
        let (code, err) = run_limited(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("len 1000 × window 1000"), "{err}");
        assert!(err.contains("more than the 10000"), "{err}");
        assert!(err.contains(":+100"), "how to fix it: {err}");
    }
    let (_, err) = run_limited(&{
        let mut a = vec!["sweep"];
        a.extend_from_slice(&three);
        a.extend(["--", "tcp", "127.0.0.1"]);
        a
    });
    assert!(err.contains("make 1000000000 points"), "{err}");
    // The largest matrix allowed plans within the same limit (its baseline is out of
    // range, so it stops after planning, before any test).
    let (code, err) = run_limited(&[
        "sweep",
        "--vary",
        "len=1..100",
        "--vary",
        "window=1K..100K:+1K",
        "--baseline",
        "10001",
        "--",
        "tcp",
        "127.0.0.1",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("points 1 to 10000"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "name = \"big\"\nhost = \"127.0.0.1\"\nvary = [\"len=1..1000\", \"window=1..1000\", \"mss=1..1000\"]\n\n[[sweep]]\nname = \"tcp\"\ntest = [\"tcp\"]\n",
    )
    .unwrap();
    let (code, err) = run_limited(&["campaign", file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("sweep 'tcp': --vary: len 1000"), "{err}");
    let sweep = "[[sweep]]\nname = \"s\"\ntest = [\"tcp\"]\nvary = [\"len=1..4000\"]\n";
    std::fs::write(
        &file,
        format!("name = \"many\"\nhost = \"127.0.0.1\"\n{}", sweep.repeat(3)),
    )
    .unwrap();
    let (code, err) = run_limited(&["campaign", file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("12000 points"), "{err}");
}

fn journal_points(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter(|l| serde_json::from_str::<Value>(l).is_ok())
        .count()
}

/// A sweep killed in the middle loses the points it finished, and `--resume` runs only
/// the others: every point ends up with one result, and the finished ones ran once.
#[test]
fn resume_after_a_kill_runs_only_what_is_missing() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let args = |resume: bool| {
        let mut v: Vec<String> = [
            "sweep",
            "--vary",
            "len=1K,2K,4K,8K",
            "--client-cmd",
            &format!("mktemp {}/ran-{{len}}.XXXXXX", marks.display()),
            "--journal",
            journal.to_str().unwrap(),
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if resume {
            v.push("--resume".into());
        }
        v.extend(
            ["--", "tcp", &host, "-p", &port, "-t", "0.6"]
                .iter()
                .map(|s| s.to_string()),
        );
        v
    };
    let mut child = bin()
        .args(args(false))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while journal_points(&journal) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = journal_points(&journal);
    assert!((2..4).contains(&before), "killed after {before} points");

    // The same command again without --resume refuses to overwrite the journal.
    let o = bin().args(args(false)).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));

    let o = bin().args(args(true)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = json(&o);
    let points = rec["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    assert!(points.iter().all(completed), "{rec:#}");
    assert_eq!(journal_points(&journal), 4);
    // The first point finished before the kill: it ran once in all.
    let ran = |len: &str| {
        std::fs::read_dir(&marks)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("ran-{len}."))
            })
            .count()
    };
    assert_eq!(ran("1K"), 1);
    assert_eq!(ran("8K"), 1, "the last point ran only after the resume");

    // A journal of another sweep is refused.
    let mut other = args(true);
    if let Some(v) = other.iter_mut().find(|a| a.starts_with("len=")) {
        *v = "len=1K,2K".into();
    }
    let o = bin().args(&other).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another sweep"));
}

/// A campaign file: two sweeps (paced UDP, send and receive), each with its best point in
/// the best-case table, journals in the directory asked for.
#[test]
fn a_campaign_runs_its_sweeps_and_fills_the_best_case_table() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        r#"
name = "paced"
vary = ["rate=3M,9M"]

[table]
title = "Best case results"
rows = "payload"

[[sweep]]
name = "send"
row = "1000"
column = "UDP send"
test = ["udp", "-t", "0.3", "-l", "1000"]

[[sweep]]
name = "receive"
row = "1000"
column = "UDP receive"
test = ["udp", "-R", "-t", "0.3", "-l", "1000"]
"#,
    )
    .unwrap();
    let journals = dir.path().join("j");
    let o = bin()
        .args([
            "campaign",
            file.to_str().unwrap(),
            "--host",
            &srv.addr.ip().to_string(),
        ])
        .args([
            "-p",
            &srv.addr.port().to_string(),
            "--journal-dir",
            journals.to_str().unwrap(),
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = json(&o);
    let t = &rec["table"];
    assert_eq!(t["columns"], serde_json::json!(["UDP send", "UDP receive"]));
    assert_eq!(t["rows"], serde_json::json!(["1000"]));
    for (ci, s) in rec["sweeps"].as_array().unwrap().iter().enumerate() {
        let best = &s["record"]["best"];
        assert_eq!(best["point"], 2, "the 9M pace: {best:#}");
        assert_eq!(t["cells"][0][ci].as_f64(), best["mean"].as_f64());
    }
    #[cfg(feature = "report")]
    summary_shows_the_best(&o.stdout, dir.path(), "campaign", |key| {
        let i: usize = key.strip_prefix("sweep-").unwrap().parse().unwrap();
        &rec["sweeps"][i - 1]["record"]["best"]
    });
    assert_eq!(journal_points(&journals.join("01.jsonl")), 2);
    assert_eq!(journal_points(&journals.join("02.jsonl")), 2);
    // The table form: the seed's shape, Mbit/s.
    let o = bin()
        .args([
            "campaign",
            file.to_str().unwrap(),
            "--host",
            &srv.addr.ip().to_string(),
        ])
        .args([
            "-p",
            &srv.addr.port().to_string(),
            "--journal-dir",
            journals.to_str().unwrap(),
        ])
        .arg("--resume")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let header = text.lines().find(|l| l.starts_with("payload")).unwrap();
    assert!(
        header.contains("UDP send") && header.contains("UDP receive"),
        "{text}"
    );
    let row = text.lines().find(|l| l.starts_with("1000 ")).unwrap();
    assert_eq!(row.split_whitespace().count(), 3, "{text}");
}

/// Server hooks: the server runs only what its operator declared, with values checked
/// against the declaration; the restore command runs when the sweep's session ends; a hook
/// the server did not declare, or a value out of range, is refused with the server's words
/// and the sweep stops before any test (exit 2).
#[test]
fn server_hooks_run_as_declared_and_undeclared_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let hooks = linerate::session::server::policy::hooks::HookSet::parse(&format!(
        "[hooks.mark]\ncommand = [\"mktemp\", \"{d}/mark-{{n}}.XXXXXX\"]\nrestore = [\"mktemp\", \"{d}/restored.XXXXXX\"]\nparams.n = {{ type = \"int\", min = 1, max = 10 }}\n"
    ))
    .unwrap();
    let srv = TestServer::with(|c| c.hooks = Some(std::sync::Arc::new(hooks)));
    let files = |prefix: &str| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(prefix)
            })
            .count()
    };
    let o = sweep(
        bin(),
        &srv,
        // k is no option of tcp (n would be -n, the byte count): a variable for the hook.
        &["--vary", "k=1,2", "--hook", "mark n={k}", "--json"],
        &["tcp", "-t", "0.2"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = json(&o);
    for p in rec["points"].as_array().unwrap() {
        let n = p["values"]["k"].as_str().unwrap();
        let h = &p["server_hooks"][0];
        assert_eq!(h["exit_code"], 0, "{p:#}");
        assert!(
            h["stdout"]
                .as_str()
                .unwrap()
                .contains(&format!("mark-{n}.")),
            "{h:#}"
        );
    }
    assert_eq!(files("mark-1."), 1);
    assert_eq!(files("mark-2."), 1);
    // The server restores once the sweep's session closes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while files("restored.") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(files("restored."), 1, "one restore per hook that ran");

    for (hook, needle) in [
        ("rm n=1", "no hook named 'rm'"),
        ("mark n=11", "outside 1..=10"),
        ("mark n=1;reboot", "not a whole number"),
    ] {
        let o = sweep(
            bin(),
            &srv,
            &["--vary", "len=1K", "--hook", hook],
            &["tcp", "-t", "0.2"],
        );
        assert_eq!(o.status.code(), Some(2), "{hook}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("refused") && err.contains(needle),
            "{hook}: {err}"
        );
    }
    assert_eq!(files("mark-"), 2, "nothing ran for the refused hooks");
}
