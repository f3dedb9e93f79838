//! Output of repeated runs ([`RunSetRecord`]): every run, then mean, standard deviation
//! and the confidence interval per metric, then the warnings.
//!
//! * table: one line per run with the headline metrics, then the statistics rows;
//! * json: the whole set (schema `docs/json-schema/trials-v1.json`);
//! * json-stream: each run's `end` event, one line each;
//! * csv: the per-run CSV rows of every run under one header, with a leading `trial`
//!   column;
//! * netperf: one table of the means, as netperf `-i`/`-I` prints (every run's table first
//!   with `--each-run`); how wide the interval came out goes to stderr
//!   ([`confidence_lines`]), after the table;
//! * ttcp: each run's ttcp lines, then an average line per end.
//!
//! The printed words ("3 trials of tcp", the `trial` column) are the published output
//! format and stay as they are.

use super::align::align;
use super::{Classic, Format};
use crate::model::repeat::MetricSummary;
use crate::model::units::format_metric;
use crate::model::{RunSetRecord, StreamEvent};

/// Renders a set in `format`.
pub fn render(format: Format, set: &RunSetRecord, classic: Classic) -> String {
    match format {
        Format::Json => super::json::pretty(set),
        Format::JsonStream => set
            .runs
            .iter()
            .map(|t| {
                super::json::event_line(&StreamEvent::End {
                    record: Box::new(t.clone()),
                })
            })
            .collect(),
        Format::Csv => csv(set),
        Format::Netperf => netperf(set, classic.each_run),
        Format::Ttcp => {
            let mut out: String = set
                .runs
                .iter()
                .map(|r| super::ttcp::render_with_unit(r, classic.ttcp_unit))
                .collect();
            out.push_str(&super::ttcp::average_lines(&set.runs, classic.ttcp_unit));
            out
        }
        Format::Table => table(set),
    }
}

fn stat_row(
    label: &str,
    metrics: &[&MetricSummary],
    f: impl Fn(&MetricSummary) -> String,
) -> Vec<String> {
    std::iter::once(label.to_string())
        .chain(metrics.iter().map(|m| f(m)))
        .collect()
}

/// The human table.
pub fn table(set: &RunSetRecord) -> String {
    let first = set.runs.first();
    let what = first.map_or("test".to_string(), |t| match &t.rr {
        Some(rr) => rr.kind.netperf_name().to_string(),
        None => format!("{:?}", t.plan.transport).to_lowercase(),
    });
    let mut out = format!(
        "{} trials of {what} with {}{}\n\n",
        set.runs.len(),
        first.map_or("-", |t| t.plan.server.as_str()),
        match (
            set.repeat.confidence_level_percent,
            set.repeat.width_percent
        ) {
            (Some(l), Some(w)) => format!(
                ", until the {l}% interval is within ±{:.1}% ({} to {} trials)",
                w / 2.0,
                set.repeat.min_runs,
                set.repeat.max_runs
            ),
            _ => String::new(),
        }
    );
    let metrics: Vec<&MetricSummary> = set.metrics.iter().collect();
    let mut rows = vec![stat_row("trial", &metrics, |m| m.name.clone())];
    for (k, t) in set.runs.iter().enumerate() {
        let vals = crate::model::repeat::metrics_of(t);
        let mut row = vec![(k + 1).to_string()];
        for m in &metrics {
            let v = vals.iter().find(|(d, _)| d.name == m.name).map(|(_, v)| *v);
            let mark = if m.outlier_runs.contains(&(k as u32 + 1)) {
                " *"
            } else {
                ""
            };
            row.push(v.map_or("-".into(), |v| {
                format!("{}{mark}", format_metric(&m.name, v))
            }));
        }
        rows.push(row);
    }
    rows.push(stat_row("mean", &metrics, |m| {
        format_metric(&m.name, m.mean)
    }));
    rows.push(stat_row("stddev", &metrics, |m| {
        m.stddev.map_or("-".into(), |s| format_metric(&m.name, s))
    }));
    let level = metrics.first().map_or(95.0, |m| m.ci_level_percent);
    rows.push(stat_row(&format!("{level}% CI"), &metrics, |m| {
        match (m.ci_low, m.ci_high) {
            (Some(lo), Some(hi)) => format!(
                "{}..{}",
                format_metric(&m.name, lo),
                format_metric(&m.name, hi)
            ),
            _ => "-".into(),
        }
    }));
    rows.push(stat_row("± % of mean", &metrics, |m| {
        m.ci_half_width_percent
            .map_or("-".into(), |h| format!("±{h:.2}%"))
    }));
    out.push_str(&align(&rows));
    if let Some(c) = set.converged {
        out.push_str(&format!(
            "\n{}\n",
            if c {
                "converged: the interval is within the width asked for"
            } else {
                "not converged (see the warnings)"
            }
        ));
    }
    if set.metrics.iter().any(|m| !m.outlier_runs.is_empty()) {
        out.push_str("\n* outlier (modified Z-score above 3.5)\n");
    }
    if !set.warnings.is_empty() {
        out.push('\n');
        for w in &set.warnings {
            out.push_str("warning: ");
            out.push_str(w);
            out.push('\n');
        }
    }
    out
}

fn csv(set: &RunSetRecord) -> String {
    let mut out = String::new();
    for (k, t) in set.runs.iter().enumerate() {
        let text = super::csv::render(t);
        for (i, line) in text.lines().enumerate() {
            if i == 0 {
                if k == 0 {
                    out.push_str("trial,");
                    out.push_str(line);
                    out.push('\n');
                }
                continue;
            }
            out.push_str(&format!("{},{line}\n", k + 1));
        }
    }
    out
}

fn netperf(set: &RunSetRecord, each_run: bool) -> String {
    let mut out = String::new();
    if each_run {
        for t in &set.runs {
            out.push_str(&super::netperf::render(t));
        }
    }
    if let Some(avg) = super::netperf::render_average(&set.runs) {
        out.push_str(&avg);
    }
    out
}

/// The interval of the primary metric in words, for stderr after a netperf or ttcp block:
/// `# linerate: 5 runs: throughput_bps mean 292.0 Mbit/s, 95% confidence interval ±1.702% of
/// the mean`, and whether `--confidence` was met.
pub fn confidence_lines(set: &RunSetRecord) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(m) = set.metrics.first() {
        let interval = m.ci_half_width_percent.map_or(String::new(), |h| {
            format!(
                ", {}% confidence interval ±{h:.3}% of the mean",
                m.ci_level_percent
            )
        });
        out.push(format!(
            "# linerate: {} runs: {} mean {}{interval}",
            m.n,
            m.name,
            format_metric(&m.name, m.mean),
        ));
    }
    match set.converged {
        Some(true) => out.push("# linerate: the confidence asked for was achieved".to_string()),
        Some(false) => out.push(
            "# linerate: the confidence asked for was not achieved within the runs allowed: \
             the results varied; find out why before trusting the mean"
                .to_string(),
        ),
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use crate::model::repeat::{summarize_metrics, RepeatRecord, TRIALS_SCHEMA_VERSION};

    pub(crate) fn set() -> RunSetRecord {
        let mut runs = Vec::new();
        for bps in [290e6, 292e6, 294e6] {
            let mut t = fixtures::tcp_send();
            t.summary.flows[0].receiver_bps = Some(bps);
            runs.push(t);
        }
        RunSetRecord {
            schema_version: TRIALS_SCHEMA_VERSION,
            tool_version: "linerate 0.1.0".into(),
            repeat: RepeatRecord {
                min_runs: 3,
                max_runs: 3,
                confidence_level_percent: None,
                width_percent: None,
            },
            primary_metric: "throughput_bps".into(),
            converged: None,
            metrics: summarize_metrics(&runs, 0.95),
            runs,
            warnings: vec![],
        }
    }

    #[test]
    fn table_lists_runs_then_statistics() {
        // 290, 292, 294 Mbit/s: mean 292, s = 2; t(0.975, 2) = 4.302653 → half 4.9683 Mbit/s
        // = ±1.70 % of the mean.
        let out = table(&set());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("3 trials of tcp"), "{out}");
        assert!(
            lines[3].starts_with("1 ") && lines[3].contains("290.0 Mbit/s"),
            "{out}"
        );
        let mean = lines.iter().find(|l| l.starts_with("mean")).unwrap();
        assert!(mean.contains("292.0 Mbit/s"), "{out}");
        let pm = lines.iter().find(|l| l.starts_with("± % of mean")).unwrap();
        assert!(pm.contains("±1.70%"), "{out}");
    }

    #[test]
    fn csv_has_a_trial_column_and_one_header() {
        let out = render(Format::Csv, &set(), Classic::default());
        assert_eq!(out.lines().count(), 4);
        assert!(out.starts_with("trial,started_at,"));
        assert!(out.lines().nth(3).unwrap().starts_with("3,"));
    }
}
