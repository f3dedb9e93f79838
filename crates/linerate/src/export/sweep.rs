//! A sweep's table and CSV: one line per point (failed and tester-limited points too, with
//! why), the best-by metric's mean (a tester-limited one marked as the bound it is: ≥ when
//! more is better) and its confidence interval, then the best point in words.

use crate::model::repeat::MetricSummary;
use crate::model::sweep::{metric_def, PointRecord, PointStatus, SweepRecord};
use crate::model::units::format_metric;

/// Confidence level of the intervals printed per point.
const LEVEL: f64 = 0.95;

fn summary(p: &PointRecord, metric: &str) -> Option<MetricSummary> {
    MetricSummary::new(metric, &p.values_of(metric), LEVEL)
}

fn runs(p: &PointRecord) -> usize {
    p.runs.as_ref().map_or(0, |s| s.runs.len())
}

/// A point's note in the table: its error, and whether it is the best or the baseline.
fn point_note(rec: &SweepRecord, p: &PointRecord) -> String {
    let mut note = p.error.clone().unwrap_or_default();
    if rec.best.as_ref().is_some_and(|b| b.point == p.index) {
        note = if note.is_empty() {
            "best".into()
        } else {
            format!("best; {note}")
        };
    }
    if rec
        .best
        .as_ref()
        .is_some_and(|b| b.baseline == p.index && b.point != p.index)
    {
        note = if note.is_empty() {
            "baseline".into()
        } else {
            format!("baseline; {note}")
        };
    }
    note
}

/// The table, with a trailing newline.
pub fn render_table(rec: &SweepRecord) -> String {
    let mut out = format!(
        "sweep: linerate {} ({} points, best by {})\n\n",
        rec.test.join(" "),
        rec.points.len(),
        rec.best_by
    );
    let names: Vec<&str> = rec.vary.iter().map(|v| v.name.as_str()).collect();
    let width = |n: &str| {
        rec.points
            .iter()
            .filter_map(|p| p.values.get(n).map(String::len))
            .chain([n.len()])
            .max()
            .unwrap_or(4)
    };
    let higher = rec.best.as_ref().map_or_else(
        || metric_def(&rec.points, &rec.best_by).is_none_or(|d| d.higher_is_better),
        |b| b.higher_is_better,
    );
    let mut header = format!("{:>5}", "point");
    for n in &names {
        header.push_str(&format!("  {:<w$}", n, w = width(n)));
    }
    header.push_str(&format!(
        "  {:<14}  {:>4}  {:>16}  {:>10}  {}",
        "status", "runs", "mean", "95% CI", "note"
    ));
    out.push_str(header.trim_end());
    out.push('\n');
    for p in &rec.points {
        let mut line = format!("{:>5}", p.index);
        for n in &names {
            line.push_str(&format!(
                "  {:<w$}",
                p.values.get(*n).map_or("-", String::as_str),
                w = width(n)
            ));
        }
        let s = summary(p, &rec.best_by);
        // A tester-limited figure is a bound: the system does at least that well.
        let bound = if p.status != PointStatus::TesterLimited {
            ""
        } else if higher {
            "≥"
        } else {
            "≤"
        };
        let mean = s.as_ref().map_or("-".to_string(), |s| {
            format!("{bound}{}", format_metric(&rec.best_by, s.mean))
        });
        let ci = s
            .as_ref()
            .and_then(|s| s.ci_half_width_percent)
            .map_or("-".to_string(), |h| format!("±{h:.1}%"));
        let note = point_note(rec, p);
        line.push_str(&format!(
            "  {:<14}  {:>4}  {:>16}  {:>10}  {}",
            p.status.word(),
            runs(p),
            mean,
            ci,
            note
        ));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    match &rec.best {
        Some(b) => {
            out.push_str(&b.sentence);
            out.push('\n');
        }
        None => out.push_str("no best point: see the warnings\n"),
    }
    for c in &rec.restore {
        if let Some(f) = c.failure() {
            out.push_str(&format!("restore: {f}\n"));
        }
    }
    if !rec.warnings.is_empty() {
        out.push('\n');
        for w in &rec.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    out
}

/// CSV: a header, then one row per point with the best-by metric's statistics.
pub fn render_csv(rec: &SweepRecord) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(rec.vary.iter().map(|v| v.name.clone()));
    header.extend(
        [
            "status",
            "runs",
            "metric",
            "mean",
            "ci_low",
            "ci_high",
            "best",
            "stored_id",
            "error",
        ]
        .map(String::from),
    );
    let _ = w.write_record(&header);
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for p in &rec.points {
        let s = summary(p, &rec.best_by);
        let mut row = vec![p.index.to_string()];
        row.extend(
            rec.vary
                .iter()
                .map(|v| p.values.get(&v.name).cloned().unwrap_or_default()),
        );
        row.push(p.status.word().to_string());
        row.push(runs(p).to_string());
        row.push(rec.best_by.clone());
        row.push(opt(s.as_ref().map(|s| s.mean)));
        row.push(opt(s.as_ref().and_then(|s| s.ci_low)));
        row.push(opt(s.as_ref().and_then(|s| s.ci_high)));
        row.push(
            rec.best
                .as_ref()
                .is_some_and(|b| b.point == p.index)
                .to_string(),
        );
        row.push(p.stored_id.map_or(String::new(), |i| i.to_string()));
        row.push(p.error.clone().unwrap_or_default());
        let _ = w.write_record(&row);
    }
    w.into_inner()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sweep::tests::labelled;
    use crate::model::sweep::{pick_best, Vary, SWEEP_SCHEMA_VERSION};

    fn record(name: &str, points: Vec<PointRecord>) -> SweepRecord {
        SweepRecord {
            schema_version: SWEEP_SCHEMA_VERSION,
            tool_version: "linerate 0.1.0".into(),
            started_at: "2026-11-26T08:00:00Z".into(),
            test: vec!["tcp".into(), "127.0.0.1".into(), "-t".into(), "2".into()],
            vary: vec![Vary {
                name: name.into(),
                values: points.iter().map(|p| p.values[name].clone()).collect(),
                option: true,
            }],
            runs_per_point: (1, 1),
            best_by: "throughput_bps".into(),
            best: pick_best(&points, "throughput_bps", 1),
            points,
            restore: vec![],
            warnings: vec![],
        }
    }

    /// Issue 29's first case: rate=2G measured 1.992 Gbit/s, rate=100G 31.56 Gbit/s with
    /// the tester the limit. The table and the JSON name the second, as a lower bound.
    #[test]
    fn the_table_and_json_name_a_tester_limited_faster_point_as_a_bound() {
        let rec = record(
            "rate",
            vec![
                labelled(1, "rate", "2G", PointStatus::Ok, &[1.992e9]),
                labelled(2, "rate", "100G", PointStatus::TesterLimited, &[31.56e9]),
            ],
        );
        let t = render_table(&rec);
        let line = |i: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(i))
                .unwrap_or_default()
                .to_string()
        };
        let two = line("2  100G");
        assert!(two.contains("tester-limited"), "{t}");
        assert!(two.contains("≥31.56 Gbit/s"), "{t}");
        assert!(two.trim_end().ends_with("best"), "{t}");
        let one = line("1  2G");
        assert!(
            one.contains(" 1.992 Gbit/s") && one.trim_end().ends_with("baseline"),
            "{t}"
        );
        assert!(
            t.contains("Best by throughput: point 2 (rate=100G) at least 31.56 Gbit/s; the tester limited this point: use -P."),
            "{t}"
        );
        assert!(t.contains("Picked by the higher measured figure"), "{t}");
        assert!(!t.contains("The baseline, point 1"), "{t}");

        let j: serde_json::Value =
            serde_json::from_str(&crate::export::json::pretty(&rec)).unwrap();
        let b = &j["best"];
        assert_eq!(b["point"], 2, "{b:#}");
        assert_eq!(b["rule"], "higher_figure", "{b:#}");
        assert_eq!(b["tester_limited"], true, "{b:#}");
        assert_eq!(b["all_tester_limited"], false, "{b:#}");
        assert_eq!(b["mean"].as_f64(), Some(31.56e9));
        let csv = render_csv(&rec);
        assert!(
            csv.lines()
                .nth(2)
                .unwrap()
                .contains(",tester-limited,1,throughput_bps,31560000000,,,true,"),
            "{csv}"
        );
    }

    /// The second case: len=16K, 64K, 256K at 20.9, 23.2, 36.4 Gbit/s, the last two
    /// tester-limited; and the same sweep with every point limited.
    #[test]
    fn the_table_says_when_every_point_was_tester_limited() {
        let pts = |first: PointStatus| {
            vec![
                labelled(1, "len", "16K", first, &[20.9e9]),
                labelled(2, "len", "64K", PointStatus::TesterLimited, &[23.2e9]),
                labelled(3, "len", "256K", PointStatus::TesterLimited, &[36.4e9]),
            ]
        };
        let t = render_table(&record("len", pts(PointStatus::Ok)));
        assert!(
            t.contains("point 3 (len=256K) at least 36.40 Gbit/s"),
            "{t}"
        );
        assert!(!t.contains("every point"), "{t}");
        let t = render_table(&record("len", pts(PointStatus::TesterLimited)));
        assert!(
            t.contains("point 3 (len=256K) at least 36.40 Gbit/s"),
            "{t}"
        );
        assert!(
            t.contains(
                "The tester limited every point: the sweep measured linerate more than the system"
            ),
            "{t}"
        );
        assert!(t.contains("≥20.90 Gbit/s"), "{t}");
    }
}
