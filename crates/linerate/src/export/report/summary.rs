//! The block every report page opens with, the answer before the evidence: per result its
//! headline figures (throughput or transactions per second and p99, loss, both ends' CPU
//! and service demand; for RFC 2544 the throughput per frame size; for a sweep its best
//! point; for a fleet its worst pairs), the diagnosis's verdicts one line each, and the
//! warnings that change how to read the figures. With two or more results the comparison's
//! verdicts come first. The charts and the tables follow it.
//!
//! Every figure cell carries the metric's name and the record's own value beside its text
//! (`data-metric`, `data-value`; a figure not measured is "-" with no value, never a 0), so
//! the page can be checked against the record. Rows, lines and sentences are capped so that
//! the block fits the first screen (1280x800); what is left out is counted and is in the
//! sections below.

use std::fmt::Write as _;

use super::{Page, RunInput};
use crate::export::chart::esc;
use crate::model::campaign::CampaignRecord;
use crate::model::compare::CompareReport;
use crate::model::repeat::metrics_of;
use crate::model::sweep::SweepRecord;
use crate::model::units::format_metric;
use crate::model::RunRecord;
use crate::rfc2544::record::Rfc2544Record;

/// Most result rows the block shows.
pub const MAX_ROWS: usize = 8;
/// Most verdict and warning lines the block shows.
pub const MAX_LINES: usize = 6;
/// Most comparison sentences the block shows.
pub const MAX_SENTENCES: usize = 3;
/// How many of a fleet run's worst pairs the block lists.
pub const WORST_PAIRS: usize = 5;

/// The block's styles, added to the page's: list items stay on one line (the whole text is
/// their tooltip and in the sections below).
pub const CSS: &str = "#summary{border:1px solid #ccc;padding:0 .75rem;margin:.5rem 0}\
#summary h2{margin:.4rem 0;border:0}#summary p{margin:.3rem 0}#summary table{margin:.3rem 0}\
#summary ul{margin:.3rem 0;padding-left:1.2rem}\
#summary li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}";

/// The headline metrics of stream and RR runs, in column order, with their headings
/// (`crate::model::repeat`'s names: a run's value is [`metrics_of`]'s, a repeated run's the
/// mean of its runs).
const RUN_COLUMNS: [(&str, &str); 12] = [
    ("throughput_bps", "throughput"),
    ("reverse_throughput_bps", "reverse throughput"),
    ("transactions_per_sec", "transactions/s"),
    ("latency_p99_ns", "p99 latency"),
    ("loss_percent", "loss"),
    ("lost_transactions_percent", "lost transactions"),
    ("client_cpu_percent", "client CPU"),
    ("client_service_demand_us_per_kb", "client µs/KB"),
    ("client_service_demand_us_per_tran", "client µs/transaction"),
    ("server_cpu_percent", "server CPU"),
    ("server_service_demand_us_per_kb", "server µs/KB"),
    ("server_service_demand_us_per_tran", "server µs/transaction"),
];

/// One figure: its metric name (the unit is its suffix), the record's value, or a text
/// that is not a figure (`metric` empty).
struct Cell {
    metric: String,
    value: Option<f64>,
    text: String,
}

impl Cell {
    fn figure(metric: &str, value: Option<f64>) -> Cell {
        let value = value.filter(|v| v.is_finite());
        Cell {
            metric: metric.to_string(),
            text: value.map_or_else(|| "-".to_string(), |v| format_metric(metric, v)),
            value,
        }
    }
    fn text(text: String) -> Cell {
        Cell {
            metric: String::new(),
            value: None,
            text,
        }
    }
}

/// A row: what it is (`key`: the input's label, or a fleet pair's run id) and its cells.
struct Row {
    key: String,
    label: String,
    cells: Vec<Cell>,
}

/// What the block holds before it is written.
#[derive(Default)]
struct Block {
    sentences: Vec<String>,
    head: Vec<String>,
    rows: Vec<Row>,
    verdicts: Vec<String>,
    warnings: Vec<String>,
}

impl Block {
    fn write(mut self, page: &mut Page) {
        let h = &mut page.html;
        h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
        let more = self.sentences.len().saturating_sub(MAX_SENTENCES);
        for s in self.sentences.iter().take(MAX_SENTENCES) {
            let _ = writeln!(h, "<p class=\"verdict\">{}</p>", esc(s));
        }
        if more > 0 {
            let _ = writeln!(h, "<p>{more} more comparisons under Comparison below.</p>");
        }
        let cut = self.rows.len().saturating_sub(MAX_ROWS);
        self.rows.truncate(MAX_ROWS);
        self.table(h);
        if cut > 0 {
            let _ = writeln!(h, "<p>{cut} more results in the sections below.</p>");
        }
        let mut lines: Vec<(&str, &String)> =
            self.verdicts.iter().map(|v| ("verdict", v)).collect();
        lines.extend(self.warnings.iter().map(|w| ("warn", w)));
        if !lines.is_empty() {
            h.push_str("<ul class=\"lines\">\n");
            let shown = if lines.len() > MAX_LINES {
                MAX_LINES - 1
            } else {
                lines.len()
            };
            for (class, text) in &lines[..shown] {
                let _ = writeln!(h, "<li class=\"{class}\" title=\"{0}\">{0}</li>", esc(text));
            }
            if shown < lines.len() {
                let _ = writeln!(
                    h,
                    "<li>{} more verdicts and warnings in the sections below</li>",
                    lines.len() - shown
                );
            }
            h.push_str("</ul>\n");
        }
        h.push_str("</section>\n");
    }

    fn table(&self, h: &mut String) {
        if self.rows.is_empty() {
            return;
        }
        h.push_str("<table class=\"headline\"><thead><tr><th>result</th>");
        for c in &self.head {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr></thead><tbody>\n");
        for r in &self.rows {
            let _ = write!(
                h,
                "<tr data-key=\"{}\"><th>{}</th>",
                esc(&r.key),
                esc(&r.label)
            );
            for c in &r.cells {
                match c.value {
                    Some(v) => {
                        let _ = write!(
                            h,
                            "<td data-metric=\"{}\" data-value=\"{v:?}\">{}</td>",
                            esc(&c.metric),
                            esc(&c.text)
                        );
                    }
                    None => {
                        let _ = write!(h, "<td>{}</td>", esc(&c.text));
                    }
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table>\n");
    }
}

/// The values of [`RUN_COLUMNS`] for one row: a single run's own, or the means of a
/// repeated run.
fn run_values(input: &RunInput, run: Option<&RunRecord>) -> Vec<(String, f64)> {
    match run {
        Some(r) => metrics_of(r)
            .into_iter()
            .map(|(d, v)| (d.name.to_string(), v))
            .collect(),
        None => input
            .metrics
            .iter()
            .map(|m| (m.name.clone(), m.mean))
            .collect(),
    }
}

/// The rows of stream and RR inputs: one per input (a repeated run's means), or one per run
/// of an input of several runs without statistics.
/// A row of runs before its cells: (key, label, the measured metrics by name).
type RunRow = (String, String, Vec<(String, f64)>);

fn run_rows(inputs: &[RunInput]) -> Vec<RunRow> {
    let mut rows = Vec::new();
    for i in inputs {
        if !i.metrics.is_empty() {
            let label = format!("{} (mean of {} runs)", i.label, i.runs.len());
            rows.push((i.label.clone(), label, run_values(i, None)));
        } else if let [run] = i.runs.as_slice() {
            rows.push((i.label.clone(), i.label.clone(), run_values(i, Some(run))));
        } else {
            for (n, r) in i.runs.iter().enumerate() {
                let label = format!("{} run {}", i.label, n + 1);
                rows.push((i.label.clone(), label, run_values(i, Some(r))));
            }
        }
    }
    rows
}

/// One line per verdict kind over `runs` ("cpu_bound: ..."; "(in 2 of 3 runs)" when not
/// all), and the runs' warnings once each.
fn run_lines(prefix: &str, runs: &[RunRecord], block: &mut Block) {
    let mut kinds: Vec<(&'static str, String, usize)> = Vec::new();
    for d in runs.iter().filter_map(|r| r.diagnosis.as_ref()) {
        for v in &d.verdicts {
            let name = v.kind.name();
            match kinds.iter_mut().find(|(k, _, _)| *k == name) {
                Some(k) => k.2 += 1,
                None => kinds.push((name, v.message.clone(), 1)),
            }
        }
    }
    for (name, message, n) in kinds {
        let times = if runs.len() > 1 && n < runs.len() {
            format!(" (in {n} of {} runs)", runs.len())
        } else {
            String::new()
        };
        block
            .verdicts
            .push(format!("{prefix}{name}{times}: {message}"));
    }
    let cut = runs.iter().filter(|r| r.interrupted).count();
    if cut > 0 {
        block.warnings.push(format!(
            "{prefix}cut short ({cut} of {} runs): the totals cover what ran",
            runs.len()
        ));
    }
    for w in runs.iter().flat_map(|r| &r.warnings) {
        let line = format!("{prefix}{w}");
        if !block.warnings.contains(&line) {
            block.warnings.push(line);
        }
    }
}

/// The summary of stream and RR inputs, with the comparison's verdicts first.
pub(super) fn runs(page: &mut Page, inputs: &[RunInput], cmp: Option<&CompareReport>) {
    let mut block = Block::default();
    for c in cmp.map_or(&[][..], |r| r.comparisons.as_slice()) {
        block.sentences.push(c.sentence.clone());
        block.warnings.extend(c.warnings.iter().cloned());
    }
    let rows = run_rows(inputs);
    let columns: Vec<(&str, &str)> = RUN_COLUMNS
        .into_iter()
        .filter(|(m, _)| rows.iter().any(|r| r.2.iter().any(|(n, _)| n == m)))
        .collect();
    block.head = columns.iter().map(|(_, h)| h.to_string()).collect();
    for (key, label, values) in rows {
        let cells = columns
            .iter()
            .map(|(m, _)| {
                let v = values.iter().find(|(n, _)| n == m).map(|(_, v)| *v);
                Cell::figure(m, v)
            })
            .collect();
        block.rows.push(Row { key, label, cells });
    }
    for i in inputs {
        let prefix = if inputs.len() > 1 {
            format!("{}: ", i.label)
        } else {
            String::new()
        };
        run_lines(&prefix, &i.runs, &mut block);
    }
    block.write(page);
}

/// The summary of RFC 2544 records: a row per record and frame size with the throughput of
/// each loss goal and the NDR's share of the line, the device's verdicts, the deviations
/// and warnings.
pub(super) fn rfc2544(
    page: &mut Page,
    recs: &[(String, String, Rfc2544Record)],
    cmp: Option<&CompareReport>,
) {
    use crate::rfc2544::compare::metric_name;
    let mut block = Block::default();
    for c in cmp.map_or(&[][..], |r| r.comparisons.as_slice()) {
        block.sentences.push(c.sentence.clone());
        block.warnings.extend(c.warnings.iter().cloned());
    }
    let goals: Vec<f64> = recs
        .iter()
        .flat_map(|(_, _, r)| r.plan.loss_goals_percent.iter().copied())
        .fold(Vec::new(), |mut v, g| {
            if !v.contains(&g) {
                v.push(g);
            }
            v
        });
    block.head = goals
        .iter()
        .map(|g| format!("throughput, loss <= {g}%"))
        .chain(["NDR share of line".to_string(), "status".to_string()])
        .collect();
    for (label, _, rec) in recs {
        let prefix = if recs.len() > 1 {
            format!("{label}: ")
        } else {
            String::new()
        };
        for f in &rec.frame_sizes {
            let found = |g: f64| {
                f.throughput
                    .as_ref()
                    .and_then(|t| t.goals.iter().find(|x| x.max_loss_percent == g))
            };
            let mut cells: Vec<Cell> = goals
                .iter()
                .map(|g| {
                    let fps = found(*g).and_then(|x| x.throughput_fps);
                    Cell::figure(&metric_name(f.frame_size, *g), fps)
                })
                .collect();
            let ndr = f.throughput.as_ref().and_then(|t| t.goals.first());
            let share = ndr
                .and_then(|x| x.figures.as_ref())
                .map(|x| x.percent_of_line);
            cells.push(Cell::figure(
                &format!("line_{}b_percent", f.frame_size),
                share,
            ));
            cells.push(Cell::text(
                ndr.map_or("-", |x| x.status.describe()).to_string(),
            ));
            block.rows.push(Row {
                key: label.clone(),
                label: format!("{prefix}{} B frames", f.frame_size),
                cells,
            });
            for v in &f.device_verdicts {
                block.verdicts.push(format!(
                    "{prefix}{} B: {}: {}",
                    f.frame_size,
                    v.kind.name(),
                    v.message
                ));
            }
        }
        let notes = rec.deviations.iter().chain(&rec.warnings);
        block.warnings.extend(notes.map(|w| format!("{prefix}{w}")));
    }
    block.write(page);
}

/// The best point of a sweep as a row: its figure, the baseline's, the change.
fn best_row(key: &str, label: &str, rec: &SweepRecord, block: &mut Block) {
    let Some(b) = &rec.best else {
        block
            .warnings
            .push(format!("{label}no point measured {}", rec.best_by));
        return;
    };
    let point = rec
        .points
        .iter()
        .find(|p| p.index == b.point)
        .map_or(format!("point {}", b.point), |p| {
            format!("point {} ({})", p.index, p.label())
        });
    block.rows.push(Row {
        key: key.to_string(),
        label: format!("{label}{point}"),
        cells: vec![
            Cell::text(b.metric.clone()),
            Cell::figure(&b.metric, Some(b.mean)),
            Cell::figure(&format!("baseline_{}", b.metric), Some(b.baseline_mean)),
            Cell::figure("change_percent", b.change_percent),
        ],
    });
    block.sentences.push(format!("{label}{}", b.sentence));
}

const BEST_HEAD: [&str; 4] = ["best by", "best point", "baseline", "change"];

/// The summary of a sweep: its best point, failed points and warnings.
pub(super) fn sweep(page: &mut Page, rec: &SweepRecord) {
    let mut block = Block {
        head: BEST_HEAD.map(String::from).to_vec(),
        ..Block::default()
    };
    best_row("best", "", rec, &mut block);
    sweep_lines("", rec, &mut block);
    block.write(page);
}

fn sweep_lines(prefix: &str, rec: &SweepRecord, block: &mut Block) {
    let failed = rec.points.iter().filter(|p| p.error.is_some()).count();
    if failed > 0 {
        block.warnings.push(format!(
            "{prefix}{failed} of {} points failed",
            rec.points.len()
        ));
    }
    block
        .warnings
        .extend(rec.warnings.iter().map(|w| format!("{prefix}{w}")));
}

/// The summary of a campaign: each sweep's best point.
pub(super) fn campaign(page: &mut Page, rec: &CampaignRecord) {
    let mut block = Block {
        head: BEST_HEAD.map(String::from).to_vec(),
        ..Block::default()
    };
    for (i, s) in rec.sweeps.iter().enumerate() {
        let prefix = format!("{}: ", s.name);
        best_row(&format!("sweep-{}", i + 1), &prefix, &s.record, &mut block);
        sweep_lines(&prefix, &s.record, &mut block);
    }
    block.write(page);
}

/// The summary of a fleet run: its worst pairs with their figures, and how many failed or
/// were disturbed.
#[cfg(feature = "fleet")]
pub(super) fn fleet(page: &mut Page, rec: &crate::fleet::record::FleetRecord) {
    let rr = rec
        .pairs
        .iter()
        .any(|p| p.figures.transactions_per_sec.is_some());
    let (metrics, head) = if rr {
        (
            ["transactions_per_sec", "rr_p99_ns", "loss_percent"],
            ["transactions/s", "p99 latency", "loss"],
        )
    } else {
        (
            ["throughput_bps", "retransmits", "loss_percent"],
            ["throughput", "retransmits", "loss"],
        )
    };
    let mut block = Block {
        head: head.map(String::from).to_vec(),
        ..Block::default()
    };
    for p in rec.worst(WORST_PAIRS) {
        let f = &p.figures;
        let cells = metrics
            .iter()
            .map(|m| match *m {
                "transactions_per_sec" => Cell::figure(m, f.transactions_per_sec),
                "rr_p99_ns" => Cell::figure(m, f.rr_p99_ns),
                "throughput_bps" => Cell::figure(m, f.throughput_bps),
                "retransmits" => {
                    let v = f.retransmits.map(|r| r as f64);
                    let mut c = Cell::figure(m, v);
                    c.text = f.retransmits.map_or("-".into(), |r| r.to_string());
                    c
                }
                _ => Cell::figure(m, f.loss_percent),
            })
            .collect();
        block.rows.push(Row {
            key: p.run_id.to_string(),
            label: format!(
                "worst: {} -> {} (round {}, run {})",
                p.source, p.destination, p.round, p.run_id
            ),
            cells,
        });
    }
    let failed: Vec<_> = rec.failed().collect();
    if let Some(first) = failed.first() {
        block.warnings.push(format!(
            "{} of {} pairs failed; the first, {} -> {}: {}",
            failed.len(),
            rec.pairs.len(),
            first.source,
            first.destination,
            first.error.as_deref().unwrap_or("failed")
        ));
    }
    let disturbed = rec.interference.iter().filter(|c| c.flagged).count();
    if disturbed > 0 {
        block.warnings.push(format!(
            "{disturbed} of {} pairs checked were disturbed: their mesh figure lies outside their interval alone (Interference check)",
            rec.interference.len()
        ));
    }
    block.write(page);
}

#[cfg(test)]
mod tests;
