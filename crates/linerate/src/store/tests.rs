use std::path::PathBuf;

use super::entry::{self, Context};
use super::*;
use crate::model::fixtures;
use crate::model::RunRecord;

fn ctx(command: &str, tags: &[&str]) -> Context {
    Context {
        command: command.into(),
        argv: vec!["linerate".into(), command.into()],
        tags: tags.iter().map(|t| t.to_string()).collect(),
        exit_code: Some(0),
    }
}

fn all() -> Filter {
    Filter {
        limit: 1000,
        ..Filter::default()
    }
}

#[test]
fn default_path_follows_xdg() {
    let p = |x: Option<&str>, h: Option<&str>| data_dir(x.map(PathBuf::from), h.map(PathBuf::from));
    assert_eq!(p(Some("/x"), Some("/h")), Some(PathBuf::from("/x")));
    assert_eq!(
        p(Some("rel"), Some("/h")),
        Some(PathBuf::from("/h/.local/share"))
    );
    assert_eq!(p(None, Some("/h")), Some(PathBuf::from("/h/.local/share")));
    assert_eq!(p(None, None), None);
}

#[test]
fn a_stored_run_comes_back_whole_and_filters_match_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/results.db");
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), schema::LATEST);
    let tcp = fixtures::tcp_send();
    let rr = fixtures::tcp_rr();
    let a = s
        .insert(&entry::run(&tcp, &ctx("tcp", &["baseline", "mtu1500"])))
        .unwrap();
    let b = s.insert(&entry::run(&rr, &ctx("rr", &["jumbo"]))).unwrap();
    assert!(b > a);

    // The record is the JSON `--json` prints, whole.
    let (kind, v) = s.record(a).unwrap().unwrap();
    assert_eq!(kind, "run");
    let back: RunRecord = serde_json::from_value(v).unwrap();
    assert_eq!(back, tcp);
    assert!(s.record(b + 100).unwrap().is_none());

    let ids = |f: Filter| -> Vec<i64> { s.list(&f).unwrap().iter().map(|r| r.id).collect() };
    let mut every = ids(all());
    every.sort();
    assert_eq!(every, vec![a, b]);
    assert_eq!(
        ids(Filter {
            command: Some("tcp".into()),
            ..all()
        }),
        vec![a]
    );
    assert_eq!(
        ids(Filter {
            tags: vec!["jumbo".into()],
            ..all()
        }),
        vec![b]
    );
    assert_eq!(
        ids(Filter {
            tags: vec!["baseline".into(), "mtu1500".into()],
            ..all()
        }),
        vec![a]
    );
    let w = tcp.plan.write_size.to_string();
    assert_eq!(
        ids(Filter {
            command: Some("tcp".into()),
            params: vec![("write_size".into(), w)],
            ..all()
        }),
        vec![a]
    );
    assert!(ids(Filter {
        params: vec![("write_size".into(), "12345".into())],
        ..all()
    })
    .is_empty());
    let host = tcp.client.host.hostname.clone().unwrap();
    assert!(ids(Filter {
        host: Some(host),
        ..all()
    })
    .contains(&a));
    assert!(ids(Filter {
        since: Some("2999-01-01".into()),
        ..all()
    })
    .is_empty());
    assert_eq!(ids(Filter { limit: 1, ..all() }).len(), 1);

    let listed = s.list(&all()).unwrap();
    let first = listed.iter().find(|r| r.id == a).unwrap();
    assert_eq!(
        first.tags,
        vec!["baseline".to_string(), "mtu1500".to_string()]
    );
    assert_eq!(first.primary_metric.as_deref(), Some("throughput_bps"));
    assert!(first
        .headline
        .as_deref()
        .unwrap_or("")
        .starts_with("throughput "));
    assert_eq!(first.uuid.len(), 36);
}

#[test]
fn concurrent_writers_lose_nothing() {
    const WRITERS: usize = 6;
    const EACH: usize = 25;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let rec = fixtures::tcp_send();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = path.clone();
            let rec = rec.clone();
            std::thread::spawn(move || {
                // Each writer opens its own connection, as separate processes would; the
                // first ones race to create and migrate the file.
                let mut s = Store::open(&path).unwrap();
                for i in 0..EACH {
                    let tag = format!("w{w}-{i}");
                    s.insert(&entry::run(&rec, &ctx("tcp", &[&tag]))).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.count().unwrap(), (WRITERS * EACH) as i64);
    let runs = s.list(&all()).unwrap();
    let mut tags: Vec<String> = runs.iter().flat_map(|r| r.tags.clone()).collect();
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), WRITERS * EACH, "every writer's every run, once");
}

/// The file under tests/data was made by schema version 1 (before sweeps); this build
/// must open it, migrate it, and find its runs intact.
#[test]
fn opens_and_migrates_a_database_made_by_schema_1() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/results-v1.db");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    std::fs::copy(&fixture, &path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(
            schema::version(&conn).unwrap(),
            1,
            "the fixture is a version-1 file"
        );
    }
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), schema::LATEST);
    let runs = s.list(&all()).unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let tcp = runs.iter().find(|r| r.command == "tcp").unwrap();
    assert_eq!(tcp.tags, vec!["v1".to_string()]);
    assert_eq!(tcp.sweep_id, None);
    let (kind, v) = s.record(tcp.id).unwrap().unwrap();
    assert_eq!(kind, "run");
    let rec: RunRecord = serde_json::from_value(v).unwrap();
    assert!(rec
        .summary
        .flows
        .first()
        .is_some_and(|f| f.receiver_bps.is_some()));
    // New rows go in beside the old ones.
    let id = s
        .insert(&entry::run(&fixtures::tcp_send(), &ctx("tcp", &[])))
        .unwrap();
    assert!(id > tcp.id);

    // The migrated file has exactly the schema of a new one.
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).unwrap());
    let ddl = |p: &std::path::Path| -> Vec<String> {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st = c
            .prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap();
        let names = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        names.map(|n| n.unwrap()).collect()
    };
    assert_eq!(ddl(&path), ddl(&fresh));
    let cols = |p: &std::path::Path| -> Vec<String> {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st = c
            .prepare("SELECT name FROM pragma_table_info('runs')")
            .unwrap();
        let names = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        names.map(|n| n.unwrap()).collect()
    };
    assert_eq!(cols(&path), cols(&fresh));
}

#[test]
fn a_newer_or_foreign_file_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.db");
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let e = Store::open(&newer).err().unwrap().to_string();
    assert!(
        e.contains("schema version 99") && e.contains("upgrade linerate"),
        "{e}"
    );

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let e = Store::open(&junk).err().unwrap().to_string();
    assert!(e.contains("junk.db"), "{e}");

    let missing = dir.path().join("missing.db");
    let e = Store::open_existing(&missing).err().unwrap().to_string();
    assert!(e.contains("no results database"), "{e}");
    assert!(!missing.exists());
}

#[test]
fn uuids_are_version_4() {
    let a = new_uuid();
    let b = new_uuid();
    assert_ne!(a, b);
    assert_eq!(a.as_bytes()[14], b'4');
    assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
}

/// A run against an iperf3 server: what that end did not measure (its CPUs, its system
/// calls) is stored as nothing, so SQL sees NULL, not 0; the client's end keeps its counts.
#[test]
fn what_an_end_did_not_measure_is_stored_as_null() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("results.db")).unwrap();
    let mut rec = fixtures::tcp_send();
    if let Some(srv) = rec.server.as_mut() {
        srv.host.cpu_count = None;
        srv.totals.tx_calls = None;
        srv.totals.rx_calls = None;
        for st in &mut srv.streams {
            st.io_calls = None;
        }
    }
    if let Some(e) = rec.summary.server.as_mut() {
        e.cpu_count = None;
        e.io_calls = None;
        e.us_per_call = None;
        e.calls_per_sec = None;
    }
    let id = s.insert(&entry::run(&rec, &ctx("tcp", &[]))).unwrap();
    let q = |sql: &str| -> Option<i64> {
        s.conn
            .query_row(sql, rusqlite::params![id], |r| r.get(0))
            .unwrap()
    };
    for path in [
        "$.server.host.cpu_count",
        "$.server.totals.rx_calls",
        "$.server.totals.tx_calls",
        "$.server.streams[0].io_calls",
        "$.summary.server.io_calls",
        "$.summary.server.cpu_count",
    ] {
        let sql = format!("SELECT json_extract(record, '{path}') FROM runs WHERE id = ?1");
        assert_eq!(q(&sql), None, "{path}");
    }
    assert_eq!(
        q("SELECT json_extract(hosts, '$.server.host.cpu_count') FROM runs WHERE id = ?1"),
        None
    );
    // The measured end's counts are there.
    assert_eq!(
        q("SELECT json_extract(hosts, '$.client.host.cpu_count') FROM runs WHERE id = ?1"),
        Some(4)
    );
    assert_eq!(
        q("SELECT json_extract(record, '$.client.totals.tx_calls') FROM runs WHERE id = ?1"),
        Some(5708)
    );
    let back: RunRecord = serde_json::from_value(s.record(id).unwrap().unwrap().1).unwrap();
    assert_eq!(back, rec);
}
