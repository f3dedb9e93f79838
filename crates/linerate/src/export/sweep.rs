//! A sweep's table and CSV: one line per point (failed and tester-limited points too, with
//! why), the best-by metric's mean and its confidence interval, then the best point in
//! words.

use crate::model::repeat::MetricSummary;
use crate::model::sweep::{PointRecord, SweepRecord};
use crate::model::units::format_metric;

/// Confidence level of the intervals printed per point.
const LEVEL: f64 = 0.95;

fn summary(p: &PointRecord, metric: &str) -> Option<MetricSummary> {
    MetricSummary::new(metric, &p.values_of(metric), LEVEL)
}

fn runs(p: &PointRecord) -> usize {
    p.runs.as_ref().map_or(0, |s| s.runs.len())
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
        let mean = s
            .as_ref()
            .map_or("-".to_string(), |s| format_metric(&rec.best_by, s.mean));
        let ci = s
            .as_ref()
            .and_then(|s| s.ci_half_width_percent)
            .map_or("-".to_string(), |h| format!("±{h:.1}%"));
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
