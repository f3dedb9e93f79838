//! `linerate rfc2544` end to end on loopback against an in-process server: every benchmark,
//! the record against its schema, the charts, and bad input. Through shaped and lossy labs
//! (root) the answers are checked in `tests/lab/rfc2544.rs`.

use serde_json::Value;

use crate::common::{run_json, run_usage_error, TestServer};

/// The rate-sensitive tests of this module run one at a time: on a 2-CPU machine two of them
/// side by side starve each other's router namespace of CPU, and a starved router drops
/// frames below its shaped rate.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn ndr(size: &Value) -> &Value {
    &size["throughput"]["goals"][0]
}

/// All four benchmarks on loopback (no device: everything passes at a 100 Mbit/s "line"),
/// with the JSON record, the CSV and both chart formats.
#[test]
fn rfc2544_all_benchmarks_on_loopback() {
    let _serial = serial();
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("t.svg");
    let png = dir.path().join("t.png");
    let mut args = vec![
        "--line-rate",
        "100M",
        "--frame-sizes",
        "64,1518",
        "--test",
        "all",
        "--trial-time",
        "0.3",
        "--confirm-time",
        "0.5",
        "--settle",
        "0",
        "--calibrate-time",
        "0.2",
        "--latency-time",
        "0.3",
        "--latency-repeat",
        "2",
        "--frame-loss-time",
        "0.3",
        "--frame-loss-step",
        "50",
        "--b2b-max",
        "10ms",
        "--b2b-repeat",
        "1",
        "--json",
    ];
    if cfg!(feature = "chart") {
        args.extend([
            "--chart",
            svg.to_str().unwrap(),
            "--chart",
            png.to_str().unwrap(),
        ]);
    }
    let rec = run_json(&srv, "rfc2544", &args);
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/json-schema/rfc2544-v1.json")).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    assert!(compiled.is_valid(&rec), "record does not match its schema");
    for s in rec["frame_sizes"].as_array().unwrap() {
        let frame = s["frame_size"].as_u64().unwrap();
        let g = ndr(s);
        // 148,810 fps of 64-byte frames may be more than a busy 2-CPU machine sends.
        let status = g["status"].as_str().unwrap();
        assert!(
            status == "line_rate" || status == "tester_limited",
            "{frame} B: {g}"
        );
        // Latency: both ends share the clock on loopback, so the tagged frame's delay is known.
        let lat = &s["latency"]["ways"][0];
        let tagged = lat["tagged_mean_ns"].as_f64().unwrap();
        assert!(
            tagged > 0.0 && tagged < 50e6,
            "{frame} B: tagged delay {tagged} ns"
        );
        // Frame loss: 100% and 50% both clean, so it stops after two trials.
        assert_eq!(s["frame_loss"]["end"], "two_without_loss");
        assert_eq!(s["frame_loss"]["points"].as_array().unwrap().len(), 2);
        // Back-to-back: 10 ms at 100 Mbit/s (1,489 frames of 64 B, 82 of 1518 B) pass.
        let b = &s["back_to_back"]["bursts"][0];
        assert_eq!(b["at_max"], true, "{frame} B: {b}");
    }
    if cfg!(feature = "chart") {
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(svg_text.starts_with("<svg") && svg_text.contains(">1518<"));
        assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    }
    compare_rfc2544_files(&rec, dir.path());
    #[cfg(feature = "report")]
    summary_is_the_records(&rec, dir.path());
}

/// `linerate report` of the record: its summary, on Chromium's first screen, gives the
/// throughput of every frame size and loss goal and the NDR's share of the line, as the
/// record has them.
#[cfg(feature = "report")]
fn summary_is_the_records(rec: &Value, dir: &std::path::Path) {
    let (file, page) = (dir.join("rfc.json"), dir.join("rfc.html"));
    std::fs::write(&file, rec.to_string()).unwrap();
    crate::common::run_ok(&[
        "report",
        file.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let sizes = rec["frame_sizes"].as_array().unwrap();
    let shown = super::report::summary_on_first_screen(&page, dir, |_, metric| {
        sizes.iter().find_map(|s| {
            let n = s["frame_size"].as_u64().unwrap();
            if metric == format!("line_{n}b_percent") {
                return ndr(s)["figures"]["percent_of_line"].as_f64();
            }
            s["throughput"]["goals"].as_array()?.iter().find_map(|g| {
                let loss = g["max_loss_percent"].as_f64().unwrap();
                let name = if loss > 0.0 {
                    format!("throughput_{n}b_loss{loss}_fps")
                } else {
                    format!("throughput_{n}b_fps")
                };
                (name == metric)
                    .then(|| g["throughput_fps"].as_f64())
                    .flatten()
            })
        })
    });
    for s in sizes {
        let n = s["frame_size"].as_u64().unwrap();
        if ndr(s)["throughput_fps"].is_f64() {
            let name = format!("throughput_{n}b_fps");
            assert!(
                shown.iter().any(|f| f.metric == name),
                "no {name}: {shown:?}"
            );
        }
    }
}

/// `linerate compare` on RFC 2544 records: the record as A, a copy with 10 % more frames per
/// second at one size and both directions as B. The ratio is the files' own, and the plan's
/// difference is a warning.
fn compare_rfc2544_files(rec: &Value, dir: &std::path::Path) {
    let sizes = rec["frame_sizes"].as_array().unwrap();
    let (k, fps) = sizes
        .iter()
        .enumerate()
        .find_map(|(k, s)| ndr(s)["throughput_fps"].as_f64().map(|f| (k, f)))
        .expect("a size with a throughput");
    let frame = sizes[k]["frame_size"].as_u64().unwrap();
    let mut b = rec.clone();
    b["frame_sizes"][k]["throughput"]["goals"][0]["throughput_fps"] = (fps * 1.1).into();
    b["plan"]["bidirectional"] = true.into();
    let (pa, pb) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&pa, rec.to_string()).unwrap();
    std::fs::write(&pb, b.to_string()).unwrap();
    let out = crate::common::run_ok(&[
        "compare",
        "--json",
        pa.to_str().unwrap(),
        pb.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let c = &v["comparisons"][0];
    let name = format!("throughput_{frame}b_fps");
    let m = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no {name}: {c:#}"));
    assert_eq!(m["mean_a"].as_f64(), Some(fps));
    assert!((m["ratio"].as_f64().unwrap() - 1.1).abs() < 1e-9, "{m}");
    assert!(
        c["sentence"]
            .as_str()
            .unwrap()
            .contains(&format!("{frame} B 10.0% higher")),
        "{c:#}"
    );
    assert!(
        c["warnings"][0]
            .as_str()
            .unwrap()
            .contains("directions (one → both)"),
        "{c:#}"
    );
    let text = crate::common::run_ok(&["compare", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    assert!(
        text.contains(&name) && text.contains("warning: B differs from A"),
        "{text}"
    );
}

#[test]
fn rfc2544_bad_input_exits_2_with_one_line() {
    let mut cases: Vec<(&[&str], &str)> = vec![
        (
            &[
                "rfc2544",
                "127.0.0.1",
                "--line-rate",
                "1G",
                "--frame-sizes",
                "32",
            ][..],
            "64",
        ),
        (&["rfc2544", "::1", "--line-rate", "1G"], "IPv6"),
        (&["rfc2544", "127.0.0.1"], "--line-rate"),
        (
            &[
                "rfc2544",
                "127.0.0.1",
                "--line-rate",
                "1G",
                "--test",
                "speed",
            ],
            "--test",
        ),
    ];
    if cfg!(feature = "chart") {
        cases.push((
            &[
                "rfc2544",
                "127.0.0.1",
                "--line-rate",
                "1G",
                "--chart",
                "x.gif",
            ],
            ".svg",
        ));
    }
    if cfg!(feature = "lab") {
        cases.push((&["lab", "up", "Bad_Name"], "[a-z0-9-]"));
        cases.push((
            &["lab", "exec", "nosuchlab", "a", "--", "true"],
            "linerate lab up nosuchlab",
        ));
    }
    for (args, needle) in cases {
        let err = run_usage_error(args);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
