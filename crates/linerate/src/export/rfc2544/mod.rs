//! Tables, CSV and charts ([`chart`]) of an [`Rfc2544Record`]: pure functions of the record.
//!
//! The throughput table follows the spirit of the SmartBits THROUGHPUT tab: one row per frame
//! size (and direction when both were tested, plus their total), with the frame rate, the
//! layer-2 bit rate, the share of the line, the theoretical maximum and how many trials the
//! search took. Missing figures print as "-".

#[cfg(feature = "chart")]
pub mod chart;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::units::{format_bps, format_duration_ns};
use crate::rfc2544::frame_sizes;
use crate::rfc2544::record::{FrameSizeRecord, Rfc2544Record};
use crate::rfc2544::throughput::{Confirmation, GoalResult, ThroughputStatus};
use crate::rfc2544::trial::TrialPurpose;

const DASH: &str = "-";

/// A frame rate with thousands separators and one decimal: "1,488,095.2".
pub fn format_fps(fps: f64) -> String {
    if !fps.is_finite() || fps < 0.0 {
        return DASH.to_string();
    }
    let text = format!("{fps:.1}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, "0"));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped}.{frac}")
}

fn mbit(bps: f64) -> String {
    format!("{:.2}", bps / 1e6)
}

/// The whole report: header, one table per benchmark and goal, deviations.
pub fn render_table(rec: &Rfc2544Record) -> String {
    let mut out = header(rec);
    let goals = rec.plan.loss_goals_percent.len();
    for g in 0..goals {
        if rec.frame_sizes.iter().any(|f| f.throughput.is_some()) {
            out.push('\n');
            out.push_str(&throughput_table(rec, g));
        }
    }
    if rec.frame_sizes.iter().any(|f| f.latency.is_some()) {
        out.push('\n');
        out.push_str(&latency_table(rec));
    }
    if rec.frame_sizes.iter().any(|f| f.frame_loss.is_some()) {
        out.push('\n');
        out.push_str(&frame_loss_table(rec));
    }
    if rec.frame_sizes.iter().any(|f| f.back_to_back.is_some()) {
        out.push('\n');
        out.push_str(&back_to_back_table(rec));
    }
    let device: Vec<String> = rec
        .frame_sizes
        .iter()
        .flat_map(|f| {
            f.device_verdicts.iter().map(move |v| {
                format!(
                    "  {} B: {} ({} confidence): {}",
                    f.frame_size,
                    v.kind.name(),
                    crate::model::diagnosis::confidence_name(v.confidence),
                    v.message
                )
            })
        })
        .collect();
    if !device.is_empty() {
        out.push_str("\nThe device (--dut) at the throughput rate:\n");
        for d in &device {
            out.push_str(d);
            out.push('\n');
        }
    }
    out.push_str(&profile_blocks(rec));
    if !rec.deviations.is_empty() {
        out.push_str("\nDeviations from RFC 2544:\n");
        for d in &rec.deviations {
            let _ = writeln!(out, "  - {d}");
        }
    }
    if rec.interrupted {
        out.push_str("\nThe run stopped early: frame sizes not reached are missing.\n");
    }
    out
}

/// `--profile`: per frame size, both ends' profiles of the trial kept for it.
fn profile_blocks(rec: &Rfc2544Record) -> String {
    let mut out = String::new();
    for f in &rec.frame_sizes {
        let Some(p) = &f.profile else { continue };
        let rate = p
            .offered_fps
            .map_or("unpaced".to_string(), |r| format!("{} fps", format_fps(r)));
        let which = if p.at_throughput {
            "the throughput rate"
        } else {
            "no throughput rate: the last trial profiled"
        };
        let trial = format!(
            "{} B frames, {} trial at {rate} ({which})",
            f.frame_size,
            purpose_name(p.purpose)
        );
        for (end, side) in [("client", &p.client), ("server", &p.server)] {
            match side {
                Some(s) => out.push_str(&super::profile::block(&format!("{end}, {trial}"), s)),
                None => {
                    let _ = write!(
                        out,
                        "\nno profile of the {end}, {trial}: see the warnings\n"
                    );
                }
            }
        }
    }
    out
}

fn purpose_name(p: TrialPurpose) -> &'static str {
    match p {
        TrialPurpose::Calibration => "calibration",
        TrialPurpose::Search => "search",
        TrialPurpose::Confirmation => "confirmation",
        TrialPurpose::Latency => "latency",
        TrialPurpose::FrameLoss => "frame loss",
        TrialPurpose::BackToBack => "back-to-back",
    }
}

fn header(rec: &Rfc2544Record) -> String {
    let p = &rec.plan;
    let dir = if p.bidirectional {
        "both directions (rates per direction)"
    } else {
        "one direction"
    };
    let confirm = p.confirm_ms.map_or("no confirmation".to_string(), |c| {
        format!("confirmation {}", format_duration_ns(c * 1_000_000))
    });
    format!(
        "RFC 2544 towards {}: UDP over {}, line rate {} ({}), {dir}\nsearch trials {}, {confirm}, resolution {}% of line, {} between trials\n",
        p.server,
        if p.ip_version == "ipv6" { "IPv6" } else { "IPv4" },
        format_bps(p.line_rate_bps),
        p.line_rate_source,
        format_duration_ns(p.trial_ms * 1_000_000),
        p.resolution_percent,
        format_duration_ns(p.settle_ms * 1_000_000),
    )
}

fn goal_title(loss_percent: f64) -> String {
    if loss_percent == 0.0 {
        "Throughput (NDR: no frame lost)".to_string()
    } else {
        format!("Throughput (PDR: at most {loss_percent}% of frames lost)")
    }
}

/// Status words of a goal: what bounds it and whether a full-length trial confirmed it.
pub fn status_text(g: &GoalResult, tester_cpu: Option<f64>) -> String {
    let mut s = g.status.describe().to_string();
    if g.status == ThroughputStatus::TesterLimited {
        if let Some(cpu) = tester_cpu.filter(|c| *c < 80.0) {
            let _ = write!(s, " (sender CPU {cpu:.0}%: pushed back by the path)");
        }
    }
    match g.confirmation {
        Confirmation::Passed => {}
        Confirmation::Skipped => s.push_str(", unconfirmed"),
        Confirmation::Failed => s.push_str(", confirmation failed"),
        Confirmation::NotRun => {}
    }
    if !g.resolution_reached
        && !matches!(
            g.status,
            ThroughputStatus::NoPass | ThroughputStatus::Invalid
        )
    {
        s.push_str(", max trials");
    }
    s
}

/// The sender CPU of the last tester-limited search trial, for the status note.
fn tester_cpu(f: &FrameSizeRecord) -> Option<f64> {
    f.throughput
        .as_ref()?
        .trials
        .iter()
        .rev()
        .find(|t| t.tester_limited && t.purpose == TrialPurpose::Search)?
        .ways
        .iter()
        .filter_map(|w| w.sender_cpu_percent)
        .reduce(f64::max)
}

fn throughput_table(rec: &Rfc2544Record, goal: usize) -> String {
    let loss = rec
        .plan
        .loss_goals_percent
        .get(goal)
        .copied()
        .unwrap_or(0.0);
    let mut out = goal_title(loss);
    out.push('\n');
    let _ = writeln!(
        out,
        "{:>6}  {:<5} {:>14} {:>11} {:>7} {:>14} {:>14} {:>6}  status",
        "frame", "dir", "frames/s", "Mbit/s L2", "% line", "max frames/s", "tester max", "trials"
    );
    for f in &rec.frame_sizes {
        let Some(t) = &f.throughput else { continue };
        let g = t
            .goals
            .iter()
            .find(|g| (g.max_loss_percent - loss).abs() < 1e-12);
        let dirs: &[&str] = if rec.plan.bidirectional {
            &["fwd", "rev", "total"]
        } else {
            &["fwd"]
        };
        let status = g.map_or(DASH.to_string(), |g| status_text(g, tester_cpu(f)));
        for (i, d) in dirs.iter().enumerate() {
            let total = *d == "total";
            let n = if total { 2.0 } else { 1.0 };
            let fig = g.and_then(|g| g.figures.as_ref());
            let fps = fig.map_or(DASH.to_string(), |x| format_fps(x.fps_per_direction * n));
            let l2 = fig.map_or(DASH.to_string(), |x| mbit(x.l2_bps_per_direction * n));
            let pct = fig.map_or(DASH.to_string(), |x| format!("{:.1}", x.percent_of_line));
            let first = i == 0;
            let _ = writeln!(
                out,
                "{:>6}  {:<5} {:>14} {:>11} {:>7} {:>14} {:>14} {:>6}  {}",
                if first {
                    f.frame_size.to_string()
                } else {
                    String::new()
                },
                d,
                fps,
                l2,
                pct,
                format_fps(f.theoretical_max_fps * n),
                f.tester_max_fps
                    .map_or(DASH.to_string(), |x| format_fps(x * n)),
                if first {
                    t.trials.len().to_string()
                } else {
                    String::new()
                },
                if first { status.as_str() } else { "" },
            );
        }
    }
    out
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn latency_table(rec: &Rfc2544Record) -> String {
    let mut out = String::from(
        "Latency at the throughput rate (one-way, send call to receive call; tagged = RFC 2544 figure)\n",
    );
    let _ = writeln!(
        out,
        "{:>6}  {:<5} {:>14} {:>7} {:>11} {:>9} {:>9} {:>9} {:>9}",
        "frame", "dir", "frames/s", "trials", "tagged us", "min us", "mean us", "p99 us", "max us"
    );
    for f in &rec.frame_sizes {
        let Some(l) = &f.latency else { continue };
        if l.ways.is_empty() {
            let _ = writeln!(
                out,
                "{:>6}  {:<5} {:>14} {:>7}  not measured (see warnings)",
                f.frame_size,
                DASH,
                format_fps(l.rate_fps),
                l.trials.len()
            );
        }
        for w in &l.ways {
            let _ = writeln!(
                out,
                "{:>6}  {:<5} {:>14} {:>7} {:>11} {:>9} {:>9} {:>9} {:>9}",
                f.frame_size,
                w.way.label(),
                format_fps(l.rate_fps),
                w.tagged_count,
                w.tagged_mean_ns.map_or(DASH.to_string(), us),
                us(w.min_ns as f64),
                us(w.mean_ns),
                w.p99_max_ns.map_or(DASH.to_string(), |v| us(v as f64)),
                us(w.max_ns as f64),
            );
        }
    }
    out
}

fn frame_loss_table(rec: &Rfc2544Record) -> String {
    let mut out = String::from("Frame loss rate\n");
    let _ = writeln!(
        out,
        "{:>6}  {:>9} {:>14} {:>14} {:>8}  note",
        "frame", "offered %", "offered fps", "sent fps", "loss %"
    );
    for f in &rec.frame_sizes {
        let Some(l) = &f.frame_loss else { continue };
        for (i, p) in l.points.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>6}  {:>9.1} {:>14} {:>14} {:>8.3}  {}",
                if i == 0 {
                    f.frame_size.to_string()
                } else {
                    String::new()
                },
                p.offered_percent,
                format_fps(p.offered_fps),
                format_fps(p.achieved_fps),
                p.loss_percent,
                if p.tester_limited {
                    "tester-limited"
                } else {
                    ""
                },
            );
        }
    }
    out
}

fn back_to_back_table(rec: &Rfc2544Record) -> String {
    let mut out = String::from("Back-to-back frames (longest burst without loss)\n");
    let _ = writeln!(
        out,
        "{:>6}  {:>7} {:>12} {:>10} {:>12}  note",
        "frame", "bursts", "mean frames", "stddev", "longest tried"
    );
    for f in &rec.frame_sizes {
        let Some(b) = &f.back_to_back else { continue };
        let max = b
            .trials
            .iter()
            .filter_map(|t| t.burst_frames)
            .max()
            .map_or(DASH.to_string(), |m| m.to_string());
        let mut note = Vec::new();
        if b.bursts.iter().any(|x| x.tester_limited) {
            note.push("tester-limited: bursts slower than line rate");
        }
        if b.bursts.iter().any(|x| x.at_max) {
            note.push("longest burst passed: the limit is higher");
        }
        let _ = writeln!(
            out,
            "{:>6}  {:>7} {:>12} {:>10} {:>12}  {}",
            f.frame_size,
            b.bursts.len(),
            b.mean_frames
                .map_or(DASH.to_string(), |m| format!("{m:.1}")),
            b.stddev_frames
                .map_or(DASH.to_string(), |s| format!("{s:.1}")),
            max,
            note.join("; "),
        );
    }
    out
}

/// One CSV row: a result of one benchmark for one frame size and direction.
#[derive(Debug, Default, Serialize)]
pub struct CsvRow {
    /// throughput, latency, frame_loss, back_to_back.
    pub benchmark: &'static str,
    /// Frame size, bytes.
    pub frame_size: u32,
    /// fwd, rev or total.
    pub direction: &'static str,
    /// Throughput goal: allowed loss, percent.
    pub goal_loss_percent: Option<f64>,
    /// Frame loss: offered load, percent of line.
    pub offered_percent: Option<f64>,
    /// Frames per second.
    pub fps: Option<f64>,
    /// Layer-2 Mbit/s.
    pub l2_mbps: Option<f64>,
    /// Percent of the theoretical maximum.
    pub percent_of_line: Option<f64>,
    /// Theoretical maximum, frames per second.
    pub theoretical_max_fps: f64,
    /// Device loss, percent.
    pub loss_percent: Option<f64>,
    /// Latency: mean tagged delay, microseconds.
    pub latency_tagged_us: Option<f64>,
    /// Latency: mean delay, microseconds.
    pub latency_mean_us: Option<f64>,
    /// Back-to-back: mean burst, frames.
    pub burst_frames: Option<f64>,
    /// Trials.
    pub trials: usize,
    /// Status words.
    pub status: String,
}

/// The CSV: a header and one row per result.
pub fn render_csv(rec: &Rfc2544Record) -> String {
    let rows = csv_rows(rec);
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(true)
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for row in &rows {
        if let Err(e) = w.serialize(row) {
            return format!(
                "error\n\"cannot write CSV: {}\"\n",
                e.to_string().replace('"', "'")
            );
        }
    }
    match w.into_inner() {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("error\n\"cannot write CSV: {}\"\n", e.error()),
    }
}

fn csv_rows(rec: &Rfc2544Record) -> Vec<CsvRow> {
    let bidir = rec.plan.bidirectional;
    let all = if bidir { "total" } else { "fwd" };
    let mut rows = Vec::new();
    for f in &rec.frame_sizes {
        let base = || CsvRow {
            frame_size: f.frame_size,
            theoretical_max_fps: f.theoretical_max_fps,
            ..CsvRow::default()
        };
        throughput_rows(f, bidir, &mut rows);
        if let Some(l) = &f.latency {
            for w in &l.ways {
                rows.push(CsvRow {
                    benchmark: "latency",
                    direction: w.way.label(),
                    fps: Some(l.rate_fps),
                    l2_mbps: Some(frame_sizes::l2_bps(l.rate_fps, f.frame_size) / 1e6),
                    latency_tagged_us: w.tagged_mean_ns.map(|v| v / 1000.0),
                    latency_mean_us: Some(w.mean_ns / 1000.0),
                    trials: l.trials.len(),
                    ..base()
                });
            }
        }
        for p in f.frame_loss.iter().flat_map(|l| &l.points) {
            rows.push(CsvRow {
                benchmark: "frame_loss",
                direction: all,
                offered_percent: Some(p.offered_percent),
                fps: Some(p.achieved_fps),
                loss_percent: Some(p.loss_percent),
                trials: 1,
                status: if p.tester_limited {
                    "tester-limited"
                } else {
                    ""
                }
                .into(),
                ..base()
            });
        }
        if let Some(b) = &f.back_to_back {
            rows.push(CsvRow {
                benchmark: "back_to_back",
                direction: all,
                burst_frames: b.mean_frames,
                trials: b.trials.len(),
                ..base()
            });
        }
    }
    rows
}

/// One row per goal and direction (and their total when both were tested).
fn throughput_rows(f: &FrameSizeRecord, bidir: bool, rows: &mut Vec<CsvRow>) {
    let Some(t) = &f.throughput else { return };
    let dirs: &[&'static str] = if bidir {
        &["fwd", "rev", "total"]
    } else {
        &["fwd"]
    };
    for g in &t.goals {
        for d in dirs {
            let n = if *d == "total" { 2.0 } else { 1.0 };
            let fig = g.figures.as_ref();
            rows.push(CsvRow {
                benchmark: "throughput",
                frame_size: f.frame_size,
                direction: d,
                goal_loss_percent: Some(g.max_loss_percent),
                fps: fig.map(|x| x.fps_per_direction * n),
                l2_mbps: fig.map(|x| x.l2_bps_per_direction * n / 1e6),
                percent_of_line: fig.map(|x| x.percent_of_line),
                theoretical_max_fps: f.theoretical_max_fps * n,
                trials: t.trials.len(),
                status: status_text(g, tester_cpu(f)),
                ..CsvRow::default()
            });
        }
    }
}
