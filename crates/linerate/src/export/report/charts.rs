//! The report's charts, each built from a record's own numbers with the shared toolkit
//! (`export::chart`): per-interval time series of both ends, RR latency histogram and CDF,
//! a sweep's metrics against its points, and several inputs as a series with its change
//! points.

use linerate_wire::report::{IntervalReport, SideReport};

use crate::export::chart::{color, thin, Chart, Point, Series, XAxis};
use crate::model::repeat::primary_metric;
use crate::model::rr::HistogramBucket;
use crate::model::sweep::{PointStatus, SweepRecord};
use crate::model::units::format_metric;
use crate::model::RunRecord;

/// Most points a line of a time series keeps; longer ones are thinned (means of runs of
/// consecutive intervals) and the chart says so.
pub const MAX_POINTS: usize = 400;

/// A run to chart, with the label its series carry ("" for a report of one run).
pub struct Labelled<'a> {
    /// "A", "B", ... or "run 2"; empty for one run.
    pub label: String,
    /// The record.
    pub rec: &'a RunRecord,
}

fn prefix(label: &str, name: &str) -> String {
    if label.is_empty() {
        name.to_string()
    } else {
        format!("{label}: {name}")
    }
}

fn ends(rec: &RunRecord) -> Vec<(&'static str, &SideReport)> {
    let mut out = vec![("client", &rec.client)];
    if let Some(s) = &rec.server {
        out.push(("server", s));
    }
    out
}

/// One figure per interval, measured intervals only; `None` where it was not measured.
type Pick = fn(&IntervalReport) -> Option<f64>;

fn secs(iv: &IntervalReport) -> f64 {
    iv.end_ns as f64 / 1e9
}

fn rate(bytes: u64, iv: &IntervalReport) -> Option<f64> {
    let dt = iv.end_ns.checked_sub(iv.start_ns).filter(|d| *d > 0)?;
    Some(bytes as f64 * 8e9 / dt as f64)
}

/// A time-series chart: one line per run, end and figure that has any value.
fn time_chart(
    id: &str,
    title: &str,
    y_label: &str,
    runs: &[Labelled<'_>],
    figures: &[(&str, Pick)],
) -> Option<Chart> {
    let mut series = Vec::new();
    let mut thinned = 1;
    let mut warmup = false;
    for r in runs {
        for (end, side) in ends(r.rec) {
            warmup |= side.intervals.iter().any(|iv| iv.omitted);
            for (what, pick) in figures {
                let points: Vec<Point> = side
                    .intervals
                    .iter()
                    .filter(|iv| !iv.omitted)
                    .filter_map(|iv| pick(iv).map(|v| Point::new(secs(iv), v)))
                    .filter(|p| p.y.is_finite())
                    .collect();
                if points.is_empty() {
                    continue;
                }
                let (points, k) = thin(points, MAX_POINTS);
                thinned = thinned.max(k);
                let name = if what.is_empty() {
                    end.to_string()
                } else {
                    format!("{end} {what}")
                };
                series.push(Series {
                    name: prefix(&r.label, &name),
                    color: color(series.len()),
                    dashed: end == "server",
                    markers: false,
                    joined: true,
                    points,
                });
            }
        }
    }
    if series.is_empty() {
        return None;
    }
    let mut notes = Vec::new();
    if thinned > 1 {
        notes.push(format!(
            "thinned: each point is the mean of {thinned} intervals (at most {MAX_POINTS} points a line)"
        ));
    }
    if warmup {
        notes.push("warm-up intervals (-O) left out".to_string());
    }
    Some(Chart {
        id: id.to_string(),
        title: title.to_string(),
        x_label: "time since the test started (s)".into(),
        y_label: y_label.to_string(),
        x_axis: XAxis::Linear,
        y_max: None,
        series,
        best: None,
        notes,
    })
}

/// The per-interval charts of runs: throughput (or transactions), retransmits, RTT, cwnd,
/// CPU; each chart only where some interval measured it.
pub fn time_series(runs: &[Labelled<'_>]) -> Vec<Chart> {
    let rr = runs.iter().any(|r| r.rec.rr.is_some());
    let mut out = Vec::new();
    if rr {
        out.extend(time_chart(
            "transactions",
            "Transactions per second, per interval",
            "transactions per second",
            runs,
            &[("", |iv| {
                let dt = iv.end_ns.checked_sub(iv.start_ns).filter(|d| *d > 0)?;
                iv.transactions.map(|t| t as f64 * 1e9 / dt as f64)
            })],
        ));
    } else {
        out.extend(time_chart(
            "throughput",
            "Throughput per interval (payload)",
            "bits per second",
            runs,
            &[
                ("sent", |iv| {
                    (iv.tx_bytes > 0).then(|| rate(iv.tx_bytes, iv)).flatten()
                }),
                ("received", |iv| {
                    (iv.rx_bytes > 0).then(|| rate(iv.rx_bytes, iv)).flatten()
                }),
            ],
        ));
    }
    out.extend(time_chart(
        "retransmits",
        "TCP retransmitted segments per interval",
        "segments",
        runs,
        &[("", |iv| iv.retransmits.map(|v| v as f64))],
    ));
    out.extend(time_chart(
        "rtt",
        "Smoothed RTT at the end of each interval (mean of the sending streams)",
        "microseconds",
        runs,
        &[("", |iv| iv.rtt_us.map(f64::from))],
    ));
    out.extend(time_chart(
        "cwnd",
        "Congestion window at the end of each interval (sum of the sending streams)",
        "bytes",
        runs,
        &[("", |iv| iv.cwnd_bytes.map(|v| v as f64))],
    ));
    out.extend(time_chart(
        "cpu",
        "CPU utilisation per interval, all CPUs of each host",
        "% of all CPUs",
        runs,
        &[("", |iv| iv.cpu_percent)],
    ));
    out
}

/// Histogram buckets merged into 10 bins per decade: (bin centre µs, count).
fn log_bins(h: &[HistogramBucket]) -> Vec<(f64, u64)> {
    let mut bins: Vec<(i64, u64)> = Vec::new();
    for b in h.iter().filter(|b| b.value_ns > 0 && b.count > 0) {
        let us = b.value_ns as f64 / 1e3;
        let k = (us.log10() * 10.0).floor() as i64;
        match bins.last_mut() {
            Some((last, c)) if *last == k => *c += b.count,
            _ => bins.push((k, b.count)),
        }
    }
    bins.into_iter()
        .map(|(k, c)| (10f64.powf((k as f64 + 0.5) / 10.0), c))
        .collect()
}

/// The RR latency histogram and CDF, log scale, one line per run.
pub fn latency(runs: &[Labelled<'_>]) -> Vec<Chart> {
    let mut hist = Vec::new();
    let mut cdf = Vec::new();
    let mut thinned = 1;
    for r in runs {
        let Some(lat) = r.rec.rr.as_ref().and_then(|rr| rr.latency.as_ref()) else {
            continue;
        };
        let total: u64 = lat.histogram.iter().map(|b| b.count).sum();
        if total == 0 {
            continue;
        }
        let name = prefix(&r.label, "latency");
        let c = color(hist.len());
        hist.push(Series {
            name: name.clone(),
            color: c,
            dashed: false,
            markers: true,
            joined: true,
            points: log_bins(&lat.histogram)
                .into_iter()
                .map(|(x, n)| Point::new(x, n as f64))
                .collect(),
        });
        let mut acc = 0u64;
        let points: Vec<Point> = lat
            .histogram
            .iter()
            .map(|b| {
                acc += b.count;
                Point::new(b.value_ns as f64 / 1e3, acc as f64 / total as f64)
            })
            .collect();
        let (points, k) = thin(points, MAX_POINTS);
        thinned = thinned.max(k);
        cdf.push(Series {
            name,
            color: c,
            dashed: false,
            markers: false,
            joined: true,
            points,
        });
    }
    if hist.is_empty() {
        return Vec::new();
    }
    let mut cdf_notes = Vec::new();
    if thinned > 1 {
        cdf_notes.push(format!(
            "thinned: each point is the mean of {thinned} histogram buckets"
        ));
    }
    vec![
        Chart {
            id: "latency-histogram".into(),
            title: "Request/response latency histogram (10 bins a decade)".into(),
            x_label: "latency (µs, log scale)".into(),
            y_label: "transactions".into(),
            x_axis: XAxis::Log,
            y_max: None,
            series: hist,
            best: None,
            notes: Vec::new(),
        },
        Chart {
            id: "latency-cdf".into(),
            title: "Request/response latency CDF".into(),
            x_label: "latency (µs, log scale)".into(),
            y_label: "share of transactions at or below".into(),
            x_axis: XAxis::Log,
            y_max: Some(1.0),
            series: cdf,
            best: None,
            notes: cdf_notes,
        },
    ]
}

/// What a sweep metric is called on a chart, and its unit.
fn metric_words(name: &str) -> (String, &'static str) {
    let unit = if name.ends_with("_bps") {
        "bits per second"
    } else if name.ends_with("_ns") {
        "nanoseconds"
    } else if name.ends_with("_us_per_kb") {
        "µs of CPU per KB"
    } else if name.ends_with("_us_per_tran") {
        "µs of CPU per transaction"
    } else if name.ends_with("_percent") {
        "percent"
    } else {
        ""
    };
    (name.replace('_', " "), unit)
}

/// A sweep's metric against its points: mean with its confidence interval, the best point
/// ringed when the metric is the one the best was picked by.
pub fn sweep_metric(id_prefix: &str, rec: &SweepRecord, metric: &str) -> Option<Chart> {
    // One varied name: its values alone label the points.
    let labels: Vec<String> = rec
        .points
        .iter()
        .map(|p| match rec.vary.as_slice() {
            [v] => p.values.get(&v.name).cloned().unwrap_or_else(|| p.label()),
            _ => p.label(),
        })
        .collect();
    let mut points = Vec::new();
    let mut limited = false;
    for (i, p) in rec.points.iter().enumerate() {
        let Some(m) = p
            .runs
            .as_ref()
            .and_then(|s| s.metrics.iter().find(|m| m.name == metric))
        else {
            continue;
        };
        if matches!(p.status, PointStatus::Failed | PointStatus::Interrupted) {
            continue;
        }
        let hollow = p.status == PointStatus::TesterLimited;
        limited |= hollow;
        points.push(Point {
            x: i as f64,
            y: m.mean,
            lo: m.ci_low,
            hi: m.ci_high,
            hollow,
        });
    }
    if points.is_empty() {
        return None;
    }
    let best = rec
        .best
        .as_ref()
        .filter(|b| b.metric == metric)
        .and_then(|b| {
            let i = rec.points.iter().position(|p| p.index == b.point)?;
            let p = points.iter().find(|p| p.x == i as f64)?;
            Some((*p, "best".to_string()))
        });
    let (words, unit) = metric_words(metric);
    let level = rec
        .points
        .iter()
        .find_map(|p| p.runs.as_ref()?.metrics.first().map(|m| m.ci_level_percent));
    let mut notes = Vec::new();
    if let Some(level) = level {
        notes.push(format!(
            "bars: {level:.0} % confidence interval of the mean (points with two or more runs)"
        ));
    }
    if limited {
        notes.push(
            "hollow marker: tester-limited (the tester set it: the system does at least as well)"
                .into(),
        );
    }
    let vary: Vec<&str> = rec.vary.iter().map(|v| v.name.as_str()).collect();
    Some(Chart {
        id: format!("{id_prefix}{}", metric.replace('_', "-")),
        title: format!("{words} against {}", vary.join(", ")),
        x_label: format!("sweep point ({})", vary.join(", ")),
        y_label: if unit.is_empty() {
            words.clone()
        } else {
            unit.to_string()
        },
        x_axis: XAxis::Categories(labels),
        y_max: None,
        series: vec![Series {
            name: words,
            color: color(0),
            dashed: false,
            markers: true,
            joined: true,
            points,
        }],
        best,
        notes,
    })
}

/// The sweep's charts: the metric it picks by, then service demand and p99 latency where
/// the points measured them.
pub fn sweep(id_prefix: &str, rec: &SweepRecord) -> Vec<Chart> {
    let mut names: Vec<String> = Vec::new();
    if let Some(b) = &rec.best {
        names.push(b.metric.clone());
    }
    let primary = rec
        .points
        .iter()
        .find_map(|p| p.runs.as_ref().map(|s| s.primary_metric.clone()));
    names.extend(primary);
    for n in [
        "client_service_demand_us_per_kb",
        "server_service_demand_us_per_kb",
        "client_service_demand_us_per_tran",
        "server_service_demand_us_per_tran",
        "latency_p99_ns",
    ] {
        names.push(n.to_string());
    }
    let mut seen = Vec::new();
    names
        .into_iter()
        .filter(|n| {
            let new = !seen.contains(n);
            seen.push(n.clone());
            new
        })
        .filter_map(|n| sweep_metric(id_prefix, rec, &n))
        .collect()
}

/// Fewest inputs for the series chart.
pub const MIN_SERIES: usize = 3;

/// One dashed level per segment between the change points: its mean.
fn levels(
    metric: &str,
    points: &[crate::model::changes::SeriesPoint],
    changes: &[crate::model::changes::Change],
    xs: &[f64],
) -> Vec<Series> {
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(changes.iter().map(|c| c.run - 1));
    bounds.push(points.len());
    bounds
        .windows(2)
        .enumerate()
        .map(|(k, w)| {
            let level =
                points[w[0]..w[1]].iter().map(|p| p.value).sum::<f64>() / (w[1] - w[0]) as f64;
            Series {
                name: format!("level {}: {}", k + 1, format_metric(metric, level)),
                color: color(k + 1),
                dashed: true,
                markers: false,
                joined: true,
                points: vec![Point::new(xs[w[0]], level), Point::new(xs[w[1] - 1], level)],
            }
        })
        .collect()
}

/// Inputs taken as a series in the order given (stored runs by id, oldest first, as
/// `history --changes` numbers them): the primary metric of each (a repeated run's mean)
/// by position, with its change points (`model::changes::find`) marked by the level of
/// each segment, a dashed line per segment at its mean, and a note per change. `None` with
/// fewer than [`MIN_SERIES`] inputs or none that measured the metric; the text of the
/// change points comes second.
pub fn series(inputs: &[super::RunInput]) -> Option<(Chart, Vec<String>)> {
    use crate::model::changes::{find, value_of, SeriesPoint};
    if inputs.len() < MIN_SERIES {
        return None;
    }
    let metric = primary_metric(inputs.first()?.runs.first()?).name;
    let mut points = Vec::new();
    let mut files = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if let Some(v) = value_of(&input.runs, metric) {
            points.push(SeriesPoint {
                id: i as i64,
                started_at: input
                    .runs
                    .first()
                    .map(|r| r.started_at.clone())
                    .unwrap_or_default(),
                value: v,
            });
            files.push(input.file.clone());
        }
    }
    if points.len() < MIN_SERIES {
        return None;
    }
    let (too_few, changes) = find(&points);
    let left_out = crate::model::changes::left_out(points.len());
    let (words, unit) = metric_words(metric);
    let mut notes = Vec::new();
    let mut lines = Vec::new();
    if let (None, Some(why)) = (&too_few, left_out) {
        notes.push(format!("change points: {why}"));
    }
    match &too_few {
        Some(why) => notes.push(format!("change points: {why}")),
        None if changes.is_empty() => {
            notes.push("change points: none (one level within its noise)".into())
        }
        None => {}
    }
    for c in &changes {
        let text = format!(
            "change point at {} ({}): {} -> {}{}, p = {:.3}",
            c.run,
            files.get(c.run - 1).map_or("", String::as_str),
            format_metric(metric, c.mean_before),
            format_metric(metric, c.mean_after),
            c.change_percent
                .map_or(String::new(), |p| format!(" ({p:+.1}%)")),
            c.p_value
        );
        notes.push(text.clone());
        lines.push(text);
    }
    let xs: Vec<f64> = (0..points.len()).map(|i| i as f64).collect();
    let mut series = vec![Series {
        name: words.clone(),
        color: color(0),
        dashed: false,
        markers: true,
        joined: true,
        points: points
            .iter()
            .zip(&xs)
            .map(|(p, &x)| Point::new(x, p.value))
            .collect(),
    }];
    if !changes.is_empty() {
        series.extend(levels(metric, &points, &changes, &xs));
    }
    let labels: Vec<String> = (1..=points.len()).map(|i| i.to_string()).collect();
    Some((
        Chart {
            id: format!("series-{}", metric.replace('_', "-")),
            title: format!("{words} by run, with its change points"),
            x_label: "run, in the order given".into(),
            y_label: if unit.is_empty() {
                words.clone()
            } else {
                unit.to_string()
            },
            x_axis: XAxis::Categories(labels),
            y_max: None,
            series,
            best: None,
            notes,
        },
        lines,
    ))
}
