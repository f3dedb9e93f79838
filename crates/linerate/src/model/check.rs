//! `linerate check`: a new result against a baseline, metric by metric, as a pass/fail gate
//! (the command is `app::check`, the words and JUnit XML `export::check`).
//!
//! A metric **regresses** when it moved in its worse direction ([`MetricDef`]'s
//! `higher_is_better`: lower throughput, higher p99, loss or service demand) by more than
//! its threshold **and** the move is statistically significant with the repeats there are
//! (one-sided, toward worse, at [`ALPHA`]):
//!
//! * two or more runs on both sides: **Welch's t-test** (`linerate_stats::welch`, the test
//!   `compare` runs), one-sided;
//! * one new run against three or more baseline runs (`--last K`, a tag, a repeated
//!   baseline): the **one-sample prediction t-test** of the new value against the baseline's
//!   sample (`t = (x − mean)/(s·√(1 + 1/K))`, K − 1 degrees of freedom); likewise one
//!   baseline run against a repeated new result, the other way round;
//! * otherwise there is no variance to test against, and a move beyond the threshold is
//!   reported as "not enough repeats to call it" (not a regression: the gate does not guess).
//!
//! Thresholds are relative (percent of the baseline's mean), except for metrics that are
//! themselves percentages (loss, CPU utilisation), whose thresholds are percentage points:
//! 0 % loss growing to 0.1 % has no ratio. Plan and host differences between the two sides
//! are named as `compare` names them (`model::compare::mismatch`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::compare::{figures_of, mismatch};
use super::repeat::{metrics_of, primary_metric, MetricDef};
use super::RunRecord;

/// Significance level (one-sided) of a regression.
pub const ALPHA: f64 = 0.05;
/// The threshold when none is given: 5 % on the primary metric.
pub const DEFAULT_THRESHOLD: f64 = 5.0;
/// Version of the check record's schema.
pub const CHECK_SCHEMA_VERSION: u32 = 1;
/// Fewest runs on the side a single run is tested against.
pub const MIN_SAMPLE: usize = 3;

/// The words of the "too few runs" verdict.
pub const NOT_ENOUGH: &str = "not enough repeats to call it";

/// One `--max-regress` item: a metric (or every metric) and its threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// Metric names it applies to; empty for every metric.
    pub metrics: Vec<String>,
    /// Percent of the baseline (percentage points for percentage metrics).
    pub value: f64,
}

/// What a threshold is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdUnit {
    /// Percent of the baseline's mean.
    Percent,
    /// Percentage points (for metrics that are percentages: loss, CPU utilisation).
    Points,
}

/// The verdict on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckVerdict {
    /// Worse by more than the threshold, and significant.
    Regression,
    /// Worse by more than the threshold, but the test does not say it is more than noise.
    NotSignificant,
    /// Worse by more than the threshold, and too few runs to test it.
    NotEnoughRepeats,
    /// Better, or worse by no more than the threshold.
    Ok,
    /// One side did not measure it.
    NotMeasured,
}

/// One side of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckSide {
    /// Where it came from: a file, "run 42", "runs 3, 5, 7 (the last 3 like it)", "this run".
    pub source: String,
    /// Runs in it (the repeats of every record).
    pub runs: usize,
    /// Stored run ids it is made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored_ids: Vec<i64>,
    /// Start of its first run, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
}

/// One metric's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricCheck {
    /// snake_case name with its unit, e.g. `throughput_bps`.
    pub name: String,
    /// What an engineer calls it.
    pub label: String,
    /// Whether a higher value is better (the direction of "worse").
    pub higher_is_better: bool,
    /// The threshold.
    pub threshold: f64,
    /// Its unit.
    pub threshold_unit: ThresholdUnit,
    /// Baseline runs that measured it.
    pub baseline_n: usize,
    /// Their mean; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_mean: Option<f64>,
    /// New runs that measured it.
    pub new_n: usize,
    /// Their mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_mean: Option<f64>,
    /// `new / baseline − 1` in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    /// How much worse, in the threshold's unit (negative: better).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worse_by: Option<f64>,
    /// The test used, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// Its one-sided p-value toward worse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// The verdict.
    pub verdict: CheckVerdict,
    /// Why, in words.
    pub reason: String,
}

/// `linerate check --json` (schema `docs/json-schema/check-v1.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckRecord {
    /// Version of this schema.
    pub schema_version: u32,
    /// "linerate x.y.z" that checked.
    pub tool_version: String,
    /// The new result.
    pub new: CheckSide,
    /// The baseline.
    pub baseline: CheckSide,
    /// One-sided significance level of a regression.
    pub alpha: f64,
    /// Every metric checked, the primary first.
    pub metrics: Vec<MetricCheck>,
    /// Where the new result and the baseline differ in plan or host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Names of the metrics that regressed.
    pub regressions: Vec<String>,
    /// True when nothing regressed (exit code 0; 1 otherwise).
    pub passed: bool,
}

/// A metric's values over runs.
fn values(runs: &[RunRecord], name: &str) -> Vec<f64> {
    super::repeat::values(runs, name)
}

fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

fn is_points(name: &str) -> bool {
    name.ends_with("_percent")
}

/// The metrics to check and their thresholds: a threshold for a named metric wins over one
/// for every metric; with none given, the primary metric at [`DEFAULT_THRESHOLD`].
pub fn plan(
    baseline: &[RunRecord],
    new: &[RunRecord],
    thresholds: &[Threshold],
) -> Vec<(MetricDef, f64)> {
    let mut defs: Vec<MetricDef> = Vec::new();
    for r in baseline.iter().chain(new) {
        for (d, _) in metrics_of(r) {
            if !defs.contains(&d) {
                defs.push(d);
            }
        }
    }
    let all = thresholds.iter().rev().find(|t| t.metrics.is_empty());
    let primary = baseline.first().or(new.first()).map(primary_metric);
    defs.into_iter()
        .filter_map(|d| {
            let named = thresholds
                .iter()
                .rev()
                .find(|t| t.metrics.iter().any(|m| m == d.name));
            match (named, all) {
                (Some(t), _) | (None, Some(t)) => Some((d, t.value)),
                (None, None) if thresholds.is_empty() && Some(d) == primary => {
                    Some((d, DEFAULT_THRESHOLD))
                }
                _ => None,
            }
        })
        .collect()
}

/// Checks one metric.
pub fn check_metric(def: MetricDef, threshold: f64, base: &[f64], new: &[f64]) -> MetricCheck {
    let unit = if is_points(def.name) {
        ThresholdUnit::Points
    } else {
        ThresholdUnit::Percent
    };
    let (mb, mn) = (mean(base), mean(new));
    let mut out = MetricCheck {
        name: def.name.to_string(),
        label: def.label.to_string(),
        higher_is_better: def.higher_is_better,
        threshold,
        threshold_unit: unit,
        baseline_n: base.len(),
        baseline_mean: mb,
        new_n: new.len(),
        new_mean: mn,
        change_percent: None,
        worse_by: None,
        test: None,
        p_value: None,
        verdict: CheckVerdict::NotMeasured,
        reason: String::new(),
    };
    let (Some(mb), Some(mn)) = (mb, mn) else {
        out.reason = format!(
            "not measured by the {}",
            if base.is_empty() {
                "baseline"
            } else {
                "new result"
            }
        );
        return out;
    };
    out.change_percent = (mb != 0.0).then(|| (mn / mb - 1.0) * 100.0);
    let sign = if def.higher_is_better { -1.0 } else { 1.0 };
    let worse_by = match unit {
        ThresholdUnit::Points => Some(sign * (mn - mb)),
        ThresholdUnit::Percent => out.change_percent.map(|c| sign * c),
    };
    out.worse_by = worse_by;
    let unit_word = match unit {
        ThresholdUnit::Percent => "%",
        ThresholdUnit::Points => " percentage points",
    };
    let Some(w) = worse_by else {
        out.verdict = CheckVerdict::NotEnoughRepeats;
        out.reason = "the baseline's mean is 0: no relative change to judge".into();
        return out;
    };
    if w <= threshold {
        out.verdict = CheckVerdict::Ok;
        out.reason = if w <= 0.0 {
            format!("not worse ({})", moved(w, unit_word))
        } else {
            format!("worse by {w:.2}{unit_word}, within the threshold of {threshold}{unit_word}")
        };
        return out;
    }
    // Beyond the threshold: is it more than noise?
    let (test, p, flat) = significance(def.higher_is_better, base, new);
    out.test = test.clone();
    out.p_value = p;
    let beyond =
        format!("worse by {w:.2}{unit_word}, beyond the threshold of {threshold}{unit_word}");
    match (test, p) {
        (None, _) => {
            out.verdict = CheckVerdict::NotEnoughRepeats;
            out.reason = format!(
                "{beyond}, but {NOT_ENOUGH}: {} baseline and {} new runs (use --repeat 5, or --last 5 or more)",
                base.len(),
                new.len()
            );
        }
        (Some(t), Some(p)) if p < ALPHA => {
            out.verdict = CheckVerdict::Regression;
            out.reason = format!("{beyond}; {t}: p = {p:.3} < {ALPHA}");
        }
        (Some(t), Some(p)) => {
            out.verdict = CheckVerdict::NotSignificant;
            out.reason = format!("{beyond}, but not significant ({t}: p = {p:.3} ≥ {ALPHA})");
        }
        (Some(t), None) => {
            out.verdict = if flat {
                CheckVerdict::Regression
            } else {
                CheckVerdict::NotEnoughRepeats
            };
            out.reason =
                format!("{beyond}; {t}: the runs do not vary at all, so any change is real");
        }
    }
    out
}

fn moved(w: f64, unit: &str) -> String {
    if w == 0.0 {
        "unchanged".into()
    } else {
        format!("better by {:.2}{unit}", -w)
    }
}

/// The test that fits the runs there are, its one-sided p-value toward worse, and whether
/// the samples do not vary at all.
fn significance(
    higher_is_better: bool,
    base: &[f64],
    new: &[f64],
) -> (Option<String>, Option<f64>, bool) {
    let pick = |below: f64, above: f64| if higher_is_better { below } else { above };
    if base.len() >= 2 && new.len() >= 2 {
        let t = format!(
            "Welch's t-test, one-sided, over {} baseline and {} new repeats",
            base.len(),
            new.len()
        );
        let Some(w) = linerate_stats::welch(base, new, 0.95) else {
            return (None, None, false);
        };
        return match linerate_stats::welch_one_sided(&w) {
            Some((below, above)) => (Some(t), Some(pick(below, above)), false),
            None => (Some(t), None, true),
        };
    }
    if new.len() == 1 && base.len() >= MIN_SAMPLE {
        let t = format!(
            "one-sample prediction t-test of the new run against {} baseline runs",
            base.len()
        );
        let Some(r) = linerate_stats::new_value_test(base, new[0]) else {
            return (None, None, false);
        };
        return match (r.p_below, r.p_above) {
            (Some(b), Some(a)) => (Some(t), Some(pick(b, a)), false),
            _ => (Some(t), None, true),
        };
    }
    if base.len() == 1 && new.len() >= MIN_SAMPLE {
        let t = format!(
            "one-sample prediction t-test of the baseline run against {} new runs",
            new.len()
        );
        let Some(r) = linerate_stats::new_value_test(new, base[0]) else {
            return (None, None, false);
        };
        // The baseline above the new runs means the new ones are lower.
        return match (r.p_below, r.p_above) {
            (Some(b), Some(a)) => (Some(t), Some(pick(a, b)), false),
            _ => (Some(t), None, true),
        };
    }
    (None, None, false)
}

/// The whole check.
pub fn check(
    new_side: CheckSide,
    new: &[RunRecord],
    base_side: CheckSide,
    baseline: &[RunRecord],
    thresholds: &[Threshold],
) -> CheckRecord {
    let metrics: Vec<MetricCheck> = plan(baseline, new, thresholds)
        .into_iter()
        .map(|(d, t)| check_metric(d, t, &values(baseline, d.name), &values(new, d.name)))
        .collect();
    let regressions: Vec<String> = metrics
        .iter()
        .filter(|m| m.verdict == CheckVerdict::Regression)
        .map(|m| m.name.clone())
        .collect();
    let figs = |runs: &[RunRecord]| runs.iter().map(figures_of).collect::<Vec<_>>();
    CheckRecord {
        schema_version: CHECK_SCHEMA_VERSION,
        tool_version: crate::software(),
        new: new_side,
        baseline: base_side,
        alpha: ALPHA,
        differences: mismatch(
            "the baseline",
            &figs(baseline),
            "the new result",
            &figs(new),
        ),
        passed: regressions.is_empty(),
        regressions,
        metrics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures;
    use crate::model::repeat::{LOSS, P99, THROUGHPUT};

    fn with_bps(bps: f64) -> RunRecord {
        let mut r = fixtures::tcp_send();
        r.summary.flows[0].receiver_bps = Some(bps);
        r
    }

    fn side(n: usize) -> CheckSide {
        CheckSide {
            source: "test".into(),
            runs: n,
            stored_ids: vec![],
            started_at: None,
        }
    }

    #[test]
    fn a_significant_drop_beyond_the_threshold_is_a_regression() {
        let base: Vec<f64> = vec![50.0, 50.3, 49.8, 50.1, 49.9, 50.2];
        let c = check_metric(THROUGHPUT, 5.0, &base, &[40.1]);
        assert_eq!(c.verdict, CheckVerdict::Regression, "{c:?}");
        assert!(c.test.as_deref().unwrap().contains("prediction"), "{c:?}");
        assert!(c.p_value.unwrap() < 0.001);
        assert!((c.worse_by.unwrap() - 19.8).abs() < 0.1);
        // The same value, better: throughput going up is not a regression.
        let c = check_metric(THROUGHPUT, 5.0, &base, &[60.0]);
        assert_eq!(c.verdict, CheckVerdict::Ok, "{c:?}");
        // For p99, up is worse.
        let c = check_metric(P99, 5.0, &base, &[60.0]);
        assert_eq!(c.verdict, CheckVerdict::Regression, "{c:?}");
    }

    #[test]
    fn within_the_threshold_or_in_the_noise_is_not_a_regression() {
        let base = [50.0, 50.3, 49.8, 50.1, 49.9, 50.2];
        assert_eq!(
            check_metric(THROUGHPUT, 5.0, &base, &[48.5]).verdict,
            CheckVerdict::Ok
        );
        // 10 % lower, but the baseline swings by more than that.
        let noisy = [50.0, 60.0, 40.0, 55.0, 45.0];
        let c = check_metric(THROUGHPUT, 5.0, &noisy, &[45.0]);
        assert_eq!(c.verdict, CheckVerdict::NotSignificant, "{c:?}");
    }

    #[test]
    fn too_few_runs_are_not_called() {
        let c = check_metric(THROUGHPUT, 5.0, &[50.0], &[40.0]);
        assert_eq!(c.verdict, CheckVerdict::NotEnoughRepeats);
        assert!(c.reason.contains(NOT_ENOUGH), "{}", c.reason);
        let c = check_metric(THROUGHPUT, 5.0, &[50.0, 50.2], &[40.0]);
        assert_eq!(c.verdict, CheckVerdict::NotEnoughRepeats);
        // Repeats on both sides: Welch.
        let c = check_metric(THROUGHPUT, 5.0, &[50.0, 50.2], &[40.0, 40.3]);
        assert_eq!(c.verdict, CheckVerdict::Regression, "{c:?}");
        assert!(c.test.as_deref().unwrap().starts_with("Welch"), "{c:?}");
    }

    #[test]
    fn percentage_metrics_use_points() {
        let c = check_metric(LOSS, 0.5, &[0.0, 0.0, 0.01, 0.0], &[2.0]);
        assert_eq!(c.threshold_unit, ThresholdUnit::Points);
        assert_eq!(c.verdict, CheckVerdict::Regression, "{c:?}");
        let c = check_metric(LOSS, 0.5, &[0.0, 0.0, 0.01, 0.0], &[0.2]);
        assert_eq!(c.verdict, CheckVerdict::Ok, "{c:?}");
    }

    #[test]
    fn the_plan_picks_named_thresholds_over_the_general_one() {
        let runs = vec![with_bps(50e6)];
        let none = plan(&runs, &runs, &[]);
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].0, THROUGHPUT);
        let t = [
            Threshold {
                metrics: vec![],
                value: 5.0,
            },
            Threshold {
                metrics: vec!["throughput_bps".into()],
                value: 2.0,
            },
        ];
        let p = plan(&runs, &runs, &t);
        assert!(p.len() > 1);
        assert_eq!(p.iter().find(|(d, _)| *d == THROUGHPUT).unwrap().1, 2.0);
        assert!(p
            .iter()
            .filter(|(d, _)| *d != THROUGHPUT)
            .all(|(_, v)| *v == 5.0));
    }

    #[test]
    fn a_whole_check_fails_on_a_regression_and_names_differences() {
        let base: Vec<RunRecord> = [50.0e6, 50.2e6, 49.9e6, 50.1e6]
            .iter()
            .map(|&b| with_bps(b))
            .collect();
        let mut worse = with_bps(40e6);
        worse.plan.write_size = 1024;
        let rec = check(side(1), &[worse], side(4), &base, &[]);
        assert!(!rec.passed);
        assert_eq!(rec.regressions, vec!["throughput_bps".to_string()]);
        assert!(
            rec.differences.iter().any(|d| d.contains("write size")),
            "{:?}",
            rec.differences
        );
        let rec = check(side(1), &[with_bps(50.05e6)], side(4), &base, &[]);
        assert!(rec.passed, "{rec:?}");
        assert!(rec.differences.is_empty());
    }
}
