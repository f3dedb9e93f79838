//! Repeated runs (`--repeat`, `--confidence`): every run's [`RunRecord`] plus, per metric,
//! mean, standard deviation, a Student-t confidence interval, the coefficient of variation
//! and outlying runs.
//!
//! The JSON keeps the names it was published with (schema `trials`, fields `trials`,
//! `min_trials`, `max_trials`, `outlier_trials`): "trial" now means only an RFC 2544 trial,
//! and a run of a repeated test is a run.
//!
//! * The metrics of one record are listed by [`metrics_of`]; the same list drives
//!   `linerate compare`.
//! * Confidence (netperf `-I LEVEL,WIDTH`): WIDTH is the full width of the interval as a
//!   percentage of the mean, so `99,5` asks for a 99 % interval within ±2.5 % of the mean.
//!   It is checked on the primary metric (receiver throughput, or transactions per second).
//! * Outliers: modified Z-score above 3.5 ([`linerate_stats::outlier`]).
//! * Unstable: coefficient of variation (stddev / mean) of the primary metric above
//!   [`UNSTABLE_CV_PERCENT`].

use linerate_stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FlowDirection, RunRecord};

/// Layout version of [`RunSetRecord`] (the published schema `trials`). The doc comments of
/// the serialized types below are that schema's descriptions, so they keep its word "trial"
/// for a run.
pub const TRIALS_SCHEMA_VERSION: u32 = 1;

/// Coefficient of variation of the primary metric above which a set is called unstable.
pub const UNSTABLE_CV_PERCENT: f64 = 5.0;

/// A figure of a run that repeated runs and comparisons summarise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// snake_case name with its unit, e.g. `throughput_bps`.
    pub name: &'static str,
    /// What an engineer calls it, e.g. "throughput".
    pub label: &'static str,
    /// True when more is better (throughput), false when less is (CPU, latency, loss).
    pub higher_is_better: bool,
}

const fn def(name: &'static str, label: &'static str, higher_is_better: bool) -> MetricDef {
    MetricDef {
        name,
        label,
        higher_is_better,
    }
}

/// Receiver throughput of the first (or only) flow.
pub const THROUGHPUT: MetricDef = def("throughput_bps", "throughput", true);
/// Receiver throughput of the server→client flow of a bidirectional test.
pub const THROUGHPUT_BACK: MetricDef = def("reverse_throughput_bps", "reverse throughput", true);
/// UDP datagrams received per second (the socket's count).
pub const PPS: MetricDef = def("receiver_pps", "datagram rate", true);
/// Packets per second the receiver's interface received: for UDP the flow's packets (fewer
/// than datagrams with GSO/GRO); for TCP every packet the receiving end's interface counted
/// over its window (its host counters).
pub const IFACE_PPS: MetricDef = def("receiver_interface_pps", "interface packet rate", true);
/// Hardware interrupts per second on the client host, all CPUs (its host counters).
pub const CLIENT_IRQS: MetricDef = def("client_interrupts_per_sec", "client interrupt rate", false);
/// Hardware interrupts per second on the server host, all CPUs.
pub const SERVER_IRQS: MetricDef = def("server_interrupts_per_sec", "server interrupt rate", false);
/// UDP loss.
pub const LOSS: MetricDef = def("loss_percent", "loss", false);
/// Transactions per second.
pub const TPS: MetricDef = def("transactions_per_sec", "transaction rate", true);
/// Median latency.
pub const P50: MetricDef = def("latency_p50_ns", "median latency", false);
/// 99th percentile latency.
pub const P99: MetricDef = def("latency_p99_ns", "p99 latency", false);
/// Lost UDP transactions.
pub const LOST_TRAN: MetricDef = def("lost_transactions_percent", "lost transactions", false);
/// Client CPU.
pub const CLIENT_CPU: MetricDef = def("client_cpu_percent", "client CPU", false);
/// Server CPU.
pub const SERVER_CPU: MetricDef = def("server_cpu_percent", "server CPU", false);
/// Client service demand per KB.
pub const CLIENT_SD_KB: MetricDef = def(
    "client_service_demand_us_per_kb",
    "client CPU per KB",
    false,
);
/// Server service demand per KB.
pub const SERVER_SD_KB: MetricDef = def(
    "server_service_demand_us_per_kb",
    "server CPU per KB",
    false,
);
/// Client service demand per transaction.
pub const CLIENT_SD_TR: MetricDef = def(
    "client_service_demand_us_per_tran",
    "client CPU per transaction",
    false,
);
/// Server service demand per transaction.
pub const SERVER_SD_TR: MetricDef = def(
    "server_service_demand_us_per_tran",
    "server CPU per transaction",
    false,
);

/// Every metric a run's record gives ([`metrics_of`]), in the order tables list them.
pub const ALL: [MetricDef; 17] = [
    THROUGHPUT,
    THROUGHPUT_BACK,
    PPS,
    IFACE_PPS,
    LOSS,
    TPS,
    P50,
    P99,
    LOST_TRAN,
    CLIENT_CPU,
    SERVER_CPU,
    CLIENT_IRQS,
    SERVER_IRQS,
    CLIENT_SD_KB,
    SERVER_SD_KB,
    CLIENT_SD_TR,
    SERVER_SD_TR,
];

/// The metric of [`ALL`] named `name` (e.g. `client_service_demand_us_per_kb`).
pub fn def_named(name: &str) -> Option<MetricDef> {
    ALL.into_iter().find(|d| d.name == name)
}

/// Every metric that can be read from `rec`, primary first; unmeasured ones are left out.
pub fn metrics_of(rec: &RunRecord) -> Vec<(MetricDef, f64)> {
    let mut out = Vec::new();
    let mut push = |d: MetricDef, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            out.push((d, v));
        }
    };
    if let Some(rr) = &rec.rr {
        push(TPS, rr.transactions_per_sec);
        push(P50, rr.latency.as_ref().map(|l| l.p50_ns as f64));
        push(P99, rr.latency.as_ref().map(|l| l.p99_ns as f64));
        push(LOST_TRAN, rr.lost_percent);
    } else {
        for f in &rec.summary.flows {
            let first =
                f.direction == FlowDirection::ClientToServer || rec.summary.flows.len() == 1;
            if first {
                push(THROUGHPUT, f.receiver_bps);
                push(PPS, f.receiver_pps);
                let receiver = match f.direction {
                    FlowDirection::ClientToServer => rec.server.as_ref(),
                    FlowDirection::ServerToClient => Some(&rec.client),
                };
                let host_rx_pps = receiver
                    .and_then(|r| r.host_counters.as_ref())
                    .and_then(|h| h.rates.rx_packets_per_sec);
                let iface_pps = match rec.plan.transport {
                    linerate_wire::control::Transport::Udp => f.receiver_interface_pps,
                    linerate_wire::control::Transport::Tcp
                    | linerate_wire::control::Transport::Quic => host_rx_pps,
                };
                push(IFACE_PPS, iface_pps);
                push(LOSS, f.loss_percent);
            } else {
                push(THROUGHPUT_BACK, f.receiver_bps);
            }
        }
    }
    let client = &rec.summary.client;
    let server = rec.summary.server.as_ref();
    push(CLIENT_CPU, client.cpu_util_percent);
    push(SERVER_CPU, server.and_then(|s| s.cpu_util_percent));
    let irqs = |side: Option<&linerate_wire::report::SideReport>| {
        side.and_then(|s| s.host_counters.as_ref())
            .and_then(|h| h.rates.interrupts_per_sec)
    };
    push(CLIENT_IRQS, irqs(Some(&rec.client)));
    push(SERVER_IRQS, irqs(rec.server.as_ref()));
    if let Some(rr) = &rec.rr {
        push(CLIENT_SD_TR, rr.client_service_demand_us_per_tran);
        push(SERVER_SD_TR, rr.server_service_demand_us_per_tran);
    } else {
        push(CLIENT_SD_KB, client.service_demand_us_per_kb);
        push(
            SERVER_SD_KB,
            server.and_then(|s| s.service_demand_us_per_kb),
        );
    }
    out
}

/// The metric the stopping rule and the headline use: transactions per second for RR
/// tests, otherwise receiver throughput.
pub fn primary_metric(rec: &RunRecord) -> MetricDef {
    if rec.rr.is_some() {
        TPS
    } else {
        THROUGHPUT
    }
}

/// The values of metric `name` over `runs`, one per run that measured it.
pub fn values(runs: &[RunRecord], name: &str) -> Vec<f64> {
    runs.iter()
        .filter_map(|t| {
            metrics_of(t)
                .into_iter()
                .find(|(d, _)| d.name == name)
                .map(|(_, v)| v)
        })
        .collect()
}

/// One metric over all trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricSummary {
    /// snake_case name with unit, e.g. `throughput_bps`.
    pub name: String,
    /// Trials that measured it.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); absent with one trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// Smallest trial.
    pub min: f64,
    /// Largest trial.
    pub max: f64,
    /// Confidence level of the interval, percent.
    pub ci_level_percent: f64,
    /// Student-t interval of the mean, low end; absent with one trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    /// High end of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    /// Half the interval's width as a percentage of the mean (±).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_half_width_percent: Option<f64>,
    /// Coefficient of variation, stddev / mean, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_percent: Option<f64>,
    /// Trial numbers (from 1) whose value is an outlier by the modified Z-score.
    #[serde(default, rename = "outlier_trials")]
    pub outlier_runs: Vec<u32>,
}

impl MetricSummary {
    /// Summarises `values` at confidence `level` (e.g. 0.95); `None` when empty.
    pub fn new(name: &str, values: &[f64], level: f64) -> Option<MetricSummary> {
        let s = Summary::from_samples(values)?;
        let ci = s.mean_ci(level);
        let half =
            ci.and_then(|(lo, hi)| (s.mean != 0.0).then(|| (hi - lo) / 2.0 / s.mean.abs() * 100.0));
        Some(MetricSummary {
            name: name.to_string(),
            n: s.n,
            mean: s.mean,
            stddev: s.stddev,
            min: s.min,
            max: s.max,
            ci_level_percent: level * 100.0,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            ci_half_width_percent: half,
            cv_percent: s
                .stddev
                .and_then(|sd| (s.mean != 0.0).then(|| sd / s.mean.abs() * 100.0)),
            outlier_runs: linerate_stats::outliers(values)
                .into_iter()
                .map(|i| u32::try_from(i + 1).unwrap_or(u32::MAX))
                .collect(),
        })
    }
}

/// How the trials were asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatRecord {
    /// Fewest trials.
    #[serde(rename = "min_trials")]
    pub min_runs: u32,
    /// Most trials.
    #[serde(rename = "max_trials")]
    pub max_runs: u32,
    /// `--confidence LEVEL`, percent (e.g. 99); absent with a plain `--repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_level_percent: Option<f64>,
    /// `--confidence ...,WIDTH`: full interval width asked for, percent of the mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_percent: Option<f64>,
}

/// The result of a repeated test (`--repeat`, `--confidence`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "TrialSetRecord")]
pub struct RunSetRecord {
    /// Layout version ([`TRIALS_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// What was asked for.
    pub repeat: RepeatRecord,
    /// The metric the stopping rule used, e.g. `throughput_bps`.
    pub primary_metric: String,
    /// With `--confidence`: whether the interval got within the width before the last
    /// allowed trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converged: Option<bool>,
    /// Per metric over all trials, primary first.
    pub metrics: Vec<MetricSummary>,
    /// Every trial, in order.
    #[serde(rename = "trials")]
    pub runs: Vec<RunRecord>,
    /// Outliers, unstable runs and what to change, one sentence each.
    pub warnings: Vec<String>,
}

/// Summaries of every metric the first run has, at `level`.
pub fn summarize_metrics(runs: &[RunRecord], level: f64) -> Vec<MetricSummary> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    metrics_of(first)
        .iter()
        .filter_map(|(d, _)| MetricSummary::new(d.name, &values(runs, d.name), level))
        .collect()
}

/// Half-width of the `level` interval of `values` as a percentage of their mean.
pub fn ci_half_width_percent(values: &[f64], level: f64) -> Option<f64> {
    MetricSummary::new("x", values, level).and_then(|m| m.ci_half_width_percent)
}

/// Warnings about outlying runs and unstable sets, with what to change.
pub fn run_warnings(metrics: &[MetricSummary], primary: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in metrics {
        for t in &m.outlier_runs {
            out.push(format!(
                "trial {t} is an outlier in {} (modified Z-score above 3.5): something disturbed that run; rerun it, pin CPUs with -A, or add a warm-up with -O",
                m.name
            ));
        }
    }
    if let Some(p) = metrics.iter().find(|m| m.name == primary) {
        if let Some(cv) = p.cv_percent.filter(|cv| *cv > UNSTABLE_CV_PERCENT) {
            out.push(format!(
                "unstable: {} varies by {cv:.1}% (coefficient of variation) across {} trials: run longer with -t, pin CPUs with -A, add a warm-up with -O, or stop other load on both hosts",
                p.name, p.n
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn def_named_finds_every_metric_of_all() {
        for d in ALL {
            assert_eq!(def_named(d.name), Some(d));
        }
        assert_eq!(def_named("receiver_interface_pps"), Some(IFACE_PPS));
        assert_eq!(def_named("no_such_metric"), None);
    }

    #[test]
    fn metric_summary_matches_hand_computation() {
        // 100 102 98 101 99: mean 100, squared deviations 0 4 4 1 1 = 10, s² = 2.5,
        // s = 1.5811388; t(0.975, 4) = 2.776445 (table 2.776); half = 2.776445 × 1.5811388
        // / √5 = 1.9632432 → ±1.963 % of the mean; CV = 1.581 %.
        let m = MetricSummary::new("throughput_bps", &[100.0, 102.0, 98.0, 101.0, 99.0], 0.95)
            .expect("five values");
        assert_eq!(m.mean, 100.0);
        assert!((m.stddev.unwrap_or(0.0) - 1.581_138_8).abs() < 1e-6);
        assert!((m.ci_half_width_percent.unwrap_or(0.0) - 1.963_243_2).abs() < 1e-5);
        assert!((m.cv_percent.unwrap_or(0.0) - 1.581_138_8).abs() < 1e-6);
        assert!(m.outlier_runs.is_empty());
    }

    #[test]
    fn outliers_and_instability_give_advice() {
        // 100 101 99 100 160: median 100, MAD 1 → M(160) = 0.6745 × 60 = 40.5 > 3.5;
        // mean 112, stddev 26.84 → CV 24 % > 5 %.
        let m = MetricSummary::new("throughput_bps", &[100.0, 101.0, 99.0, 100.0, 160.0], 0.95)
            .expect("values");
        assert_eq!(m.outlier_runs, vec![5]);
        let w = run_warnings(&[m], "throughput_bps");
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("trial 5 is an outlier"), "{w:?}");
        assert!(w[1].contains("run longer with -t"), "{w:?}");
        assert!(w[1].contains("-A") && w[1].contains("-O"), "{w:?}");
    }

    #[test]
    fn one_run_has_no_interval() {
        let m = MetricSummary::new("x", &[5.0], 0.99).expect("one value");
        assert_eq!(
            (m.stddev, m.ci_low, m.ci_half_width_percent),
            (None, None, None)
        );
    }
}
