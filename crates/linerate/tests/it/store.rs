//! The results database through the binary: every run stored and listed, `compare` by id,
//! several processes writing at once, and a database that cannot be written never costing
//! the output.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{bin, bin_with_db, TestServer};

fn against(srv: &TestServer, db: &Path, cmd: &str, args: &[&str]) -> Output {
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    bin_with_db(db)
        .args([cmd, host.as_str(), "-p", port.as_str()])
        .args(args)
        .output()
        .unwrap()
}

#[track_caller]
fn ok_json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

fn history(db: &Path, args: &[&str]) -> Value {
    let o = bin_with_db(db)
        .args(["history", "--json"])
        .args(args)
        .output()
        .unwrap();
    ok_json(&o)
}

#[test]
fn every_test_command_stores_its_run_and_history_finds_it() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let tcp = ok_json(&against(
        &srv,
        &db,
        "tcp",
        &["-t", "0.3", "-l", "32K", "--json", "--tag", "base"],
    ));
    let udp = ok_json(&against(
        &srv,
        &db,
        "udp",
        &[
            "-t", "0.3", "-b", "10M", "--json", "--tag", "base", "--tag", "u",
        ],
    ));
    let rr = ok_json(&against(
        &srv,
        &db,
        "rr",
        &["-t", "0.3", "--rate", "1k", "--repeat", "2", "--json"],
    ));
    assert_eq!(rr["trials"].as_array().map(Vec::len), Some(2));

    let all = history(&db, &[]);
    let runs = all["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{all:#}");
    assert_eq!(all["schema_version"], 2);
    let by = |cmd: &str| runs.iter().find(|r| r["command"] == cmd).unwrap().clone();
    assert_eq!(by("tcp")["kind"], "run");
    assert_eq!(by("rr")["kind"], "trials");
    assert_eq!(by("udp")["tags"], serde_json::json!(["base", "u"]));
    assert_eq!(
        by("udp")["primary_value"].as_f64(),
        udp["summary"]["flows"][0]["receiver_bps"].as_f64()
    );
    // The stored headline figure is the printed one (the witness is stdout).
    let printed = tcp["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap();
    assert_eq!(by("tcp")["primary_value"].as_f64(), Some(printed));
    assert_eq!(
        by("tcp")["server"].as_str(),
        Some(format!("{}:{}", srv.addr.ip(), srv.addr.port()).as_str())
    );

    let ids = |v: Value| -> Vec<String> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["command"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(history(&db, &["--tag", "base"])).len(), 2);
    assert_eq!(ids(history(&db, &["--tag", "u"])), vec!["udp"]);
    assert_eq!(ids(history(&db, &["--command", "rr"])), vec!["rr"]);
    assert_eq!(
        ids(history(&db, &["--param", "write_size=32768"])),
        vec!["tcp"]
    );
    assert!(ids(history(&db, &["--since", "2999-01-01"])).is_empty());
    assert_eq!(
        ids(history(&db, &["--host", &srv.addr.ip().to_string()])).len(),
        3
    );

    // The table names the ids that compare takes.
    let o = bin_with_db(&db).args(["history"]).output().unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("linerate compare ID ID"), "{table}");
    assert!(table.contains("base,u"), "{table}");

    // compare by stored id, a stored repeated run against a stored one, and a file.
    let rr_id = by("rr")["id"].as_i64().unwrap().to_string();
    let rr2 = ok_json(&against(
        &srv,
        &db,
        "rr",
        &["-t", "0.3", "--rate", "1k", "--json"],
    ));
    let file = dir.path().join("rr.json");
    std::fs::write(&file, serde_json::to_string(&rr2).unwrap()).unwrap();
    let o = bin_with_db(&db)
        .args(["compare", "--json", &rr_id, file.to_str().unwrap()])
        .output()
        .unwrap();
    let cmp = ok_json(&o);
    assert_eq!(cmp["baseline_file"], format!("run {rr_id}"));
    assert_eq!(cmp["baseline_trials"], 2);
    let o = bin_with_db(&db)
        .args(["compare", "9999", &rr_id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no run 9999") && err.contains("linerate history"),
        "{err}"
    );
    let tcp_id = by("tcp")["id"].as_i64().unwrap().to_string();
    let o = bin_with_db(&db)
        .args(["compare", &tcp_id, &rr_id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a stream run against an RR run");
}

#[test]
fn no_store_keeps_nothing_and_history_without_a_database_says_so() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    let o = bin_with_db(&db)
        .args([
            "tcp",
            &srv.addr.ip().to_string(),
            "-p",
            &srv.addr.port().to_string(),
        ])
        .args(["-t", "0.2", "--no-store"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!db.exists());
    let o = bin_with_db(&db).args(["history"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no results database"), "{err}");
    assert!(!db.exists(), "history never creates a database");
    // The test helpers keep the store off (LINERATE_NO_STORE), even with --db.
    let o = bin()
        .args([
            "tcp",
            &srv.addr.ip().to_string(),
            "-p",
            &srv.addr.port().to_string(),
        ])
        .args(["-t", "0.2", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!db.exists());
}

/// A database that cannot be opened or written (a directory that cannot be made under
/// /proc, a file that is not a database) leaves the output whole and the exit code as the
/// run's; stderr says what happened.
#[test]
fn an_unwritable_database_never_costs_the_output() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    for db in [
        Path::new("/proc/linerate-test/r.db").to_path_buf(),
        junk.clone(),
        not_a_dir.join("r.db"),
    ] {
        let o = against(&srv, &db, "udp", &["-t", "0.2", "-b", "5M", "--json"]);
        let rec = ok_json(&o);
        assert!(rec["summary"]["flows"][0]["receiver_bps"]
            .as_f64()
            .is_some());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("was not stored") && err.contains("the output is complete"),
            "{}: {err}",
            db.display()
        );
    }
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        vec![b'x'; 8192],
        "left alone"
    );
}

/// A board's read-only root file system: the default database's directories
/// ($XDG_DATA_HOME, else $HOME) cannot be made. The run's output is whole, the exit code the
/// run's, and stderr says in one line that the run was not stored. (/proc stands for a
/// read-only directory: these tests run as root, which file modes do not stop.)
#[test]
fn a_read_only_home_never_costs_the_output() {
    let srv = TestServer::start();
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    for (xdg, home) in [
        (Some("/proc/linerate-ro/share"), "/proc/linerate-ro"),
        (None, "/proc/linerate-ro"),
    ] {
        let mut c = bin();
        c.env_remove("LINERATE_NO_STORE").env("HOME", home);
        match xdg {
            Some(x) => c.env("XDG_DATA_HOME", x),
            None => c.env_remove("XDG_DATA_HOME"),
        };
        let o = c
            .args(["udp", &host, "-p", &port, "-t", "0.2", "-b", "5M", "--json"])
            .output()
            .unwrap();
        let rec = ok_json(&o);
        assert!(rec["summary"]["flows"][0]["receiver_bps"]
            .as_f64()
            .is_some());
        let err = String::from_utf8_lossy(&o.stderr);
        let line: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("was not stored"))
            .collect();
        assert_eq!(line.len(), 1, "{xdg:?} {home}: {err}");
        assert!(line[0].contains("the output is complete"), "{err}");
    }
}

/// Several processes storing into one database at once: WAL and the busy time-out make
/// every one of them wait its turn, and nothing is lost.
#[test]
fn concurrent_runs_writing_one_database_lose_nothing() {
    const N: usize = 4;
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let children: Vec<_> = (0..N)
        .map(|i| {
            bin_with_db(&db)
                .args(["udp", &host, "-p", &port, "-t", "0.3", "-b", "2M", "--json"])
                .args(["--tag", &format!("writer{i}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("not stored"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let h = history(&db, &[]);
    let mut tags: Vec<String> = h["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["tags"].as_array().unwrap().clone())
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    tags.sort();
    assert_eq!(
        tags,
        (0..N).map(|i| format!("writer{i}")).collect::<Vec<_>>()
    );
}
