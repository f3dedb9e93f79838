//! The report page and its charts: golden SVGs (`LINERATE_BLESS=1 cargo test` rewrites
//! them under `tests/golden/report/`), reproducibility, size, self-containment.

use super::*;
use crate::export::fixtures;
use crate::model::repeat::{summarize_metrics, RepeatRecord, TRIALS_SCHEMA_VERSION};
use crate::model::sweep::{
    pick_best, PointRecord, PointStatus, SweepRecord, Vary, SWEEP_SCHEMA_VERSION,
};
use crate::model::RunSetRecord;
use linerate_wire::report::{IntervalReport, StreamReport};

fn golden_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/report")
}

/// Compares `text` with the golden file `name`, or writes it with `LINERATE_BLESS=1`.
fn golden(name: &str, text: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("LINERATE_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run LINERATE_BLESS=1 cargo test -p linerate --lib report",
            path.display()
        )
    });
    assert!(
        want == text,
        "{} differs from the output; if the change is meant, bless it: LINERATE_BLESS=1 cargo test -p linerate --lib report",
        path.display()
    );
}

fn single(rec: RunRecord) -> Input {
    Input::Runs(vec![RunInput {
        label: "A".into(),
        file: "run.json".into(),
        runs: vec![rec],
        metrics: Vec::new(),
    }])
}

fn set(bps: &[f64]) -> RunSetRecord {
    let runs: Vec<RunRecord> = bps
        .iter()
        .map(|b| {
            let mut r = fixtures::tcp_send();
            r.summary.flows[0].receiver_bps = Some(*b);
            r
        })
        .collect();
    RunSetRecord {
        schema_version: TRIALS_SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        repeat: RepeatRecord {
            min_runs: 3,
            max_runs: 3,
            confidence_level_percent: Some(95.0),
            width_percent: None,
        },
        primary_metric: "throughput_bps".into(),
        converged: None,
        metrics: summarize_metrics(&runs, 0.95),
        runs,
        warnings: vec![],
    }
}

pub(crate) fn sweep_fixture() -> SweepRecord {
    let point = |index: u32, len: &str, status: PointStatus, bps: &[f64]| PointRecord {
        index,
        values: [("len".to_string(), len.to_string())].into(),
        argv: vec!["tcp".into(), "198.51.100.2".into(), "-l".into(), len.into()],
        server_hooks: vec![],
        commands: vec![],
        status,
        error: (status == PointStatus::Failed).then(|| "`ip link` exited with 1".to_string()),
        runs: (!bps.is_empty()).then(|| set(bps)),
        stored_id: None,
    };
    let points = vec![
        point(1, "1K", PointStatus::Ok, &[100e6, 104e6, 98e6]),
        point(2, "8K", PointStatus::Ok, &[300e6, 310e6, 295e6]),
        point(3, "64K", PointStatus::TesterLimited, &[280e6, 290e6, 285e6]),
        point(4, "128K", PointStatus::Failed, &[]),
    ];
    SweepRecord {
        schema_version: SWEEP_SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        started_at: "2024-05-01T12:00:00Z".into(),
        test: vec!["tcp".into(), "198.51.100.2".into()],
        vary: vec![Vary {
            name: "len".into(),
            values: vec!["1K".into(), "8K".into(), "64K".into(), "128K".into()],
            option: true,
        }],
        runs_per_point: (3, 3),
        best_by: "throughput_bps".into(),
        best: pick_best(&points, "throughput_bps", 1),
        points,
        restore: vec![],
        warnings: vec!["point 4 failed".into()],
    }
}

#[test]
fn golden_charts_of_every_kind() {
    let runs = build(&single(fixtures::tcp_send()));
    let rr = build(&single(fixtures::tcp_rr()));
    let rfc = build(&Input::Rfc2544(vec![(
        "A".into(),
        "rfc.json".into(),
        crate::rfc2544::tests::fixture(true, vec![crate::rfc2544::record::Benchmark::Throughput]),
    )]));
    let sweep = build(&Input::Sweep("s.json".into(), sweep_fixture()));
    let mut names = Vec::new();
    for (kind, r) in [
        ("tcp", &runs),
        ("rr", &rr),
        ("rfc2544", &rfc),
        ("sweep", &sweep),
    ] {
        assert!(!r.charts.is_empty(), "{kind}: no charts");
        for c in &r.charts {
            let name = format!("{kind}-{}.svg", c.id);
            golden(&name, &chart::render_svg(c));
            names.push(name);
        }
    }
    // Each kind draws what its data has.
    for want in [
        "tcp-throughput.svg",
        "tcp-retransmits.svg",
        "tcp-rtt.svg",
        "tcp-cwnd.svg",
        "tcp-cpu.svg",
        "tcp-cpu-ends.svg",
        "rr-latency-histogram.svg",
        "rr-latency-cdf.svg",
        "rfc2544-rfc2544-frame-rate.svg",
        "rfc2544-rfc2544-line-rate.svg",
        "sweep-throughput-bps.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    golden("tcp-report.html", &runs.html);
}

#[test]
fn the_sweep_chart_marks_the_best_point_with_interval_bars() {
    let rec = sweep_fixture();
    let c = charts::sweep_metric("", &rec, "throughput_bps").unwrap();
    // Three points measured (the failed one has none), each with an interval.
    assert_eq!(c.series[0].points.len(), 3);
    assert!(c.series[0]
        .points
        .iter()
        .all(|p| p.lo.is_some() && p.hi.is_some()));
    let best = c.best.as_ref().unwrap();
    // 8K is best: the tester-limited 64K point measured less (its bound is below).
    assert_eq!(best.0.x, 1.0);
    assert!(c.series[0].points[2].hollow);
    let svg = chart::render_svg(&c);
    assert!(svg.contains(">best<") && svg.contains(">8K<"), "{svg}");
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let rec = fixtures::tcp_send();
    let a = build(&single(rec.clone())).html;
    // Through JSON and back, as a file or the database gives it.
    let json = serde_json::to_string(&rec).unwrap();
    let back: RunRecord = serde_json::from_str(&json).unwrap();
    let b = build(&single(back)).html;
    assert_eq!(a, b);
    assert!(
        !a.contains(&chrono_like_year()),
        "a generation time crept in"
    );
}

/// The current year as text: a page made today must not contain it (the fixtures are of
/// 2024 and earlier).
fn chrono_like_year() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{}-", 1970 + secs / 31_556_952)
}

#[test]
fn the_page_needs_no_network() {
    let r = build(&single(fixtures::tcp_send()));
    let h = &r.html;
    assert!(!h.contains("<script"), "no scripts");
    assert!(!h.contains("<link"), "no linked styles");
    assert!(!h.contains("<img"), "no images");
    assert!(!h.contains("url("), "no CSS fetches");
    for attr in ["src=", "href="] {
        assert!(!h.contains(attr), "{attr} in the page");
    }
    assert!(h.contains("default-src 'none'"));
    assert_eq!(
        h.matches(r#"<figure class="chart""#).count(),
        r.charts.len()
    );
}

#[test]
fn two_runs_are_compared_in_words_on_shared_axes() {
    let a = fixtures::tcp_send();
    let mut b = fixtures::tcp_send();
    b.summary.flows[0].receiver_bps = b.summary.flows[0].receiver_bps.map(|v| v * 0.8);
    let input = Input::Runs(vec![
        RunInput {
            label: "A".into(),
            file: "a.json".into(),
            runs: vec![a],
            metrics: vec![],
        },
        RunInput {
            label: "B".into(),
            file: "b.json".into(),
            runs: vec![b],
            metrics: vec![],
        },
    ]);
    let r = build(&input);
    assert!(r.html.contains("Comparison"));
    assert!(r.html.contains(r#"<p class="verdict">B: "#), "{}", r.html);
    assert!(r.html.contains("20.0% lower throughput"), "{}", r.html);
    let t = r.charts.iter().find(|c| c.id == "throughput").unwrap();
    let names: Vec<&str> = t.series.iter().map(|s| s.name.as_str()).collect();
    // The fixture's server sent no intervals: the client's lines alone.
    assert_eq!(names, ["A: client sent", "B: client sent"]);
}

/// Stored runs given as a series: the primary metric by run, its change point marked by
/// a level per segment and named (run, size, p) on the chart and the page; a short series
/// says it is too short.
#[test]
fn a_series_of_runs_shows_its_change_point() {
    let inputs: Vec<RunInput> = (0..24)
        .map(|i| {
            let mut r = fixtures::tcp_send();
            let level = if i < 12 { 50e6 } else { 40e6 };
            r.summary.flows[0].receiver_bps = Some(level + (i % 3) as f64 * 1e5);
            RunInput {
                label: "A".into(),
                file: format!("run {}", 40 + i),
                runs: vec![r],
                metrics: vec![],
            }
        })
        .collect();
    let r = build(&Input::Runs(inputs.clone()));
    let c = r
        .charts
        .iter()
        .find(|c| c.id == "series-throughput-bps")
        .expect("a series chart");
    assert_eq!(c.series[0].points.len(), 24);
    let levels: Vec<&str> = c.series[1..].iter().map(|s| s.name.as_str()).collect();
    assert_eq!(levels.len(), 2, "{levels:?}");
    assert!(
        levels[0].starts_with("level 1: 50.") && levels[1].starts_with("level 2: 40."),
        "{levels:?}"
    );
    // The second level starts at run 13 (x = 12).
    assert_eq!(c.series[2].points[0].x, 12.0);
    let note = c
        .notes
        .iter()
        .find(|n| n.contains("change point at 13 (run 52)"))
        .expect("named");
    assert!(note.contains("-20.") && note.contains("p = 0.00"), "{note}");
    assert!(r.html.contains("change point at 13 (run 52)"));
    let svg = crate::export::chart::render_svg(c);
    assert!(svg.contains("level 2: 40."), "the SVG draws the levels");
    // Five runs: a chart that says it is too short to call a change.
    let r = build(&Input::Runs(inputs[..5].to_vec()));
    let c = r
        .charts
        .iter()
        .find(|c| c.id == "series-throughput-bps")
        .unwrap();
    assert_eq!(c.series.len(), 1);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("too few to call a change")),
        "{:?}",
        c.notes
    );
}

/// A 60 s test with 4 streams and 0.1 s intervals at both ends.
fn long_run() -> RunRecord {
    let mut rec = fixtures::tcp_send();
    let iv = |i: u64, tx: u64, rx: u64| IntervalReport {
        start_ns: i * 100_000_000,
        end_ns: (i + 1) * 100_000_000,
        tx_bytes: tx,
        rx_bytes: rx,
        retransmits: (tx > 0).then_some(i % 3),
        rtt_us: (tx > 0).then_some(50 + (i % 17) as u32),
        cwnd_bytes: (tx > 0).then_some(1_000_000 + i * 1000),
        cpu_percent: Some(20.0 + (i % 10) as f64 * 1.234_567),
        ..IntervalReport::default()
    };
    rec.client.intervals = (0..600).map(|i| iv(i, 12_345_678 + i, 0)).collect();
    if let Some(s) = rec.server.as_mut() {
        s.intervals = (0..600).map(|i| iv(i, 0, 12_345_000 + i)).collect();
        let one: StreamReport = s.streams[0].clone();
        s.streams = (0..4)
            .map(|k| StreamReport {
                index: k,
                ..one.clone()
            })
            .collect();
    }
    let one = rec.client.streams[0].clone();
    rec.client.streams = (0..4)
        .map(|k| StreamReport {
            index: k,
            ..one.clone()
        })
        .collect();
    rec.plan.streams = 4;
    rec.plan.duration_ms = Some(60_000);
    rec.plan.interval_ms = 100;
    rec
}

#[test]
fn a_long_run_stays_under_a_megabyte_and_says_it_was_thinned() {
    let r = build(&single(long_run()));
    assert!(r.html.len() < 1_000_000, "{} bytes", r.html.len());
    let t = r.charts.iter().find(|c| c.id == "throughput").unwrap();
    assert!(t
        .series
        .iter()
        .all(|s| s.points.len() <= charts::MAX_POINTS));
    assert!(
        t.notes.iter().any(|n| n.contains("mean of 2 intervals")),
        "{:?}",
        t.notes
    );
    assert!(r
        .html
        .contains("thinned: each point is the mean of 2 intervals"));
    // The mean of each pair is what is plotted: the first two client intervals.
    let first = t.series[0].points[0];
    let want = (12_345_678.0 + 12_345_679.0) / 2.0 * 8.0 / 0.1;
    assert!((first.y - want).abs() < 1e-3, "{} vs {want}", first.y);
}

#[test]
fn chart_figures_are_the_records_own_numbers() {
    let rec = fixtures::tcp_send();
    let r = build(&single(rec.clone()));
    let t = r.charts.iter().find(|c| c.id == "throughput").unwrap();
    // The fixture's measured interval (the warm-up one is left out, and the chart says so):
    // 2,072,321,720 bytes in 1 s.
    assert_eq!(t.series[0].points.len(), 1);
    assert_eq!(t.series[0].points[0].y, 2_072_321_720.0 * 8.0);
    assert!(t.notes.iter().any(|n| n.contains("warm-up")));
    let cpu = r.charts.iter().find(|c| c.id == "cpu-ends").unwrap();
    let c = rec.client.cpu.as_ref().unwrap();
    assert_eq!(cpu.series[0].points[0].y, c.util_percent);
    assert_eq!(cpu.series[0].points[1].y, c.busiest_cpu_util_percent);
}

#[test]
fn latency_of_several_runs_is_overlaid() {
    let a = fixtures::tcp_rr();
    let mut b = fixtures::tcp_rr();
    if let Some(l) = b.rr.as_mut().and_then(|rr| rr.latency.as_mut()) {
        for h in &mut l.histogram {
            h.value_ns *= 2;
        }
    }
    let input = Input::Runs(vec![
        RunInput {
            label: "A".into(),
            file: "a".into(),
            runs: vec![a],
            metrics: vec![],
        },
        RunInput {
            label: "B".into(),
            file: "b".into(),
            runs: vec![b],
            metrics: vec![],
        },
    ]);
    let r = build(&input);
    let cdf = r.charts.iter().find(|c| c.id == "latency-cdf").unwrap();
    assert_eq!(cdf.series.len(), 2);
    for s in &cdf.series {
        let last = s.points.last().unwrap();
        assert!((last.y - 1.0).abs() < 1e-12, "a CDF ends at 1");
        assert!(
            s.points.windows(2).all(|w| w[0].y <= w[1].y),
            "a CDF never falls"
        );
    }
}

#[test]
fn a_png_of_a_report_chart_has_its_labels() {
    let r = build(&single(fixtures::tcp_send()));
    let c = &r.charts[0];
    let (png, warnings) = chart::png(c).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // scripts/test.sh installs fonts-dejavu-core: the labels are drawn as glyph outlines.
    assert!(
        chart::system_font().is_some(),
        "no system font: install fonts-dejavu-core"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let bare = chart::rasterize(&chart::render_svg(c)).unwrap();
    assert!(png.len() > bare.len(), "labels missing");
}

#[test]
fn a_campaign_has_each_sweeps_charts_under_its_own_names() {
    use crate::model::campaign::{CampaignRecord, CampaignSweep, CAMPAIGN_SCHEMA_VERSION};
    let sweep = |name: &str| CampaignSweep {
        name: name.into(),
        row: None,
        column: None,
        record: sweep_fixture(),
    };
    let rec = CampaignRecord {
        schema_version: CAMPAIGN_SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        name: "c".into(),
        file: "c.toml".into(),
        sweeps: vec![sweep("tcp"), sweep("udp")],
        table: None,
    };
    let r = build(&Input::Campaign("c.json".into(), rec));
    let ids: Vec<&str> = r.charts.iter().map(|c| c.id.as_str()).collect();
    assert!(
        ids.contains(&"s1-throughput-bps") && ids.contains(&"s2-throughput-bps"),
        "{ids:?}"
    );
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "chart ids repeat: {ids:?}");
    assert!(r.html.contains("<h2>Sweep 2: udp</h2>"));
}

#[test]
fn profiles_with_call_chains_get_their_flame_graphs_on_the_page() {
    let mut rec = fixtures::tcp_send();
    rec.client.profile = Some(crate::rfc2544::tests::fake_profile(1));
    let h = build(&single(rec.clone())).html;
    assert_eq!(h.matches(r#"<figure class="flamegraph">"#).count(), 1);
    assert!(h.contains("<h3>Flame graph of the client</h3>"));
    assert!(h.contains("<title>_copy_from_iter (data copy): 60 samples, 60.00%</title>"));
    assert!(!h.contains("<script"));
    // No call chains, no flame graph.
    if let Some(p) = rec.client.profile.as_mut() {
        p.folded.clear();
    }
    assert!(!build(&single(rec)).html.contains("flamegraph"));
    // RFC 2544: both ends of every size's kept trial.
    let rfc = crate::rfc2544::tests::profiled_fixture(vec![
        crate::rfc2544::record::Benchmark::Throughput,
    ]);
    let n = rfc.frame_sizes.len();
    let h = build(&Input::Rfc2544(vec![("A".into(), "rfc.json".into(), rfc)])).html;
    assert_eq!(h.matches(r#"<figure class="flamegraph">"#).count(), 2 * n);
    assert!(h.contains("<h3>Flame graph of the server (64 B frames)</h3>"));
}
