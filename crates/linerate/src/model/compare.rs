//! The statistics of `linerate compare A.json B.json [more]`: results side by side, with a
//! verdict per metric (the command is `app::compare`, the table `export::compare`).
//!
//! Each file is a single run (`--json` of `tcp`, `udp` or `rr`) or a repeated run
//! (`--repeat`/`--confidence`); the first is the baseline A and every other file is compared
//! with it, metric by metric ([`crate::model::repeat::metrics_of`]):
//!
//! * difference `B − A` of the means and ratio `B / A`;
//! * **Welch's two-sided t-test** (unequal variances, Welch–Satterthwaite degrees of
//!   freedom; [`linerate_stats::compare`]), significant when p < 0.05, with the 95 % interval
//!   of the difference and a delta-method interval of the ratio;
//! * with fewer than two runs on either side there is no variance, so no interval and no
//!   verdict: "too few trials: use --repeat 5 or more" (the words the table has always
//!   printed; the JSON's `too_few_trials` and `baseline_trials` keep their names too).
//!
//! Then one sentence per comparison in an engineer's words, after Bill Fink's GMAC and SUNGEM comparison's "11.3 % lower
//! network performance while using 58.7 % more CPU": the primary metric's change, p99 latency
//! for RR tests, and the largest change of CPU per unit of work (service demand).
//!
//! A comparison also warns when the two files differ in plan or host ([`facts_of`]: write
//! size, streams, direction, rate, buffers, MTU, interface, kernel, CPUs), so that a ratio is
//! not read as a like-for-like change when it is not. Any kind of result compares the same
//! way once it is a list of named figures and facts ([`RunFigures`]): RFC 2544 records give
//! theirs in the rfc2544 module.

use serde::Serialize;

use super::repeat::{self, metrics_of, primary_metric, MetricDef};
use super::RunRecord;
use linerate_wire::control::Transport;

/// Significance level of the verdicts.
pub const ALPHA: f64 = 0.05;
/// The method, as printed and recorded.
pub const METHOD: &str = "Welch's two-sided t-test (unequal variances), significant when p < 0.05";

/// One run as `compare` reads it: named figures and the facts a like-for-like comparison
/// needs to match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFigures {
    /// (snake_case name with its unit, value), the primary figure first.
    pub metrics: Vec<(String, f64)>,
    /// (what, value) of the plan and the hosts, e.g. ("write size", "131072 bytes").
    pub facts: Vec<(String, String)>,
}

/// One input file as figures.
#[derive(Debug, Clone)]
pub struct FigureInput {
    /// "A", "B", ...
    pub label: String,
    /// Where it came from.
    pub file: String,
    /// Its runs.
    pub runs: Vec<RunFigures>,
}

/// One input file.
#[derive(Debug, Clone)]
pub struct Input {
    /// "A", "B", ...
    pub label: String,
    /// Where it came from.
    pub file: String,
    /// Its runs (one for a single run).
    pub runs: Vec<RunRecord>,
}

/// What the test says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// p < 0.05.
    Significant,
    /// p >= 0.05.
    NotSignificant,
    /// A side has fewer than two runs.
    #[serde(rename = "too_few_trials")]
    TooFewRuns,
}

impl Verdict {
    /// The verdict in words, as the table prints it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Significant => "significant",
            Verdict::NotSignificant => "not significant",
            Verdict::TooFewRuns => "too few trials: use --repeat 5 or more",
        }
    }
}

/// One metric of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    /// Metric name with unit.
    pub name: String,
    /// Runs of A and B that measured it.
    pub n_a: usize,
    /// See `n_a`.
    pub n_b: usize,
    /// Mean of A.
    pub mean_a: f64,
    /// Mean of B.
    pub mean_b: f64,
    /// `mean_b − mean_a`.
    pub diff: f64,
    /// `mean_b / mean_a`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// 95 % interval of the difference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_ci: Option<(f64, f64)>,
    /// 95 % interval of the ratio (delta method).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_ci: Option<(f64, f64)>,
    /// Two-sided p-value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

impl MetricComparison {
    /// Compares the values of one metric.
    pub fn new(name: &str, a: &[f64], b: &[f64]) -> Option<MetricComparison> {
        let mean = |x: &[f64]| (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64);
        let (ma, mb) = (mean(a)?, mean(b)?);
        let w = linerate_stats::welch(a, b, 1.0 - ALPHA);
        let verdict = match &w {
            None => Verdict::TooFewRuns,
            Some(w) if w.significant(ALPHA) => Verdict::Significant,
            Some(_) => Verdict::NotSignificant,
        };
        Some(MetricComparison {
            name: name.to_string(),
            n_a: a.len(),
            n_b: b.len(),
            mean_a: ma,
            mean_b: mb,
            diff: mb - ma,
            ratio: (ma != 0.0).then(|| mb / ma),
            diff_ci: w.as_ref().and_then(|w| w.diff_ci),
            ratio_ci: w.as_ref().and_then(|w| w.ratio_ci),
            p_value: w.as_ref().and_then(|w| w.p_value),
            df: w.as_ref().and_then(|w| w.df),
            verdict,
        })
    }

    /// Change in percent of A.
    pub fn change_percent(&self) -> Option<f64> {
        self.ratio.map(|r| (r - 1.0) * 100.0)
    }
}

/// B (or C, ...) against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// "B", "C", ...
    pub label: String,
    /// Its file.
    pub file: String,
    /// Every metric both have.
    pub metrics: Vec<MetricComparison>,
    /// The summary in words.
    pub sentence: String,
    /// Where the two differ in plan or host: the ratios are then not a like-for-like change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The tester limited the baseline A (diagnosis `tester_limited` in a run): its figures
    /// are bounds, the system does at least as well.
    #[serde(skip_serializing_if = "is_false")]
    pub a_tester_limited: bool,
    /// The tester limited this file likewise.
    #[serde(skip_serializing_if = "is_false")]
    pub b_tester_limited: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Whether the tester limited a run: its diagnosis has a `tester_limited` verdict (as a
/// sweep marks its points).
pub fn tester_limited(rec: &RunRecord) -> bool {
    rec.diagnosis.as_ref().is_some_and(|d| {
        d.verdicts
            .iter()
            .any(|v| v.kind == super::diagnosis::VerdictKind::TesterLimited)
    })
}

/// Which sides of a comparison the tester limited, for the words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits<'a> {
    /// The baseline's label, when the tester limited it.
    pub a: Option<&'a str>,
    /// The tester limited the other side.
    pub b: bool,
}

/// The whole comparison (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// The test used.
    pub method: &'static str,
    /// The baseline's file.
    pub baseline_file: String,
    /// Runs in the baseline.
    #[serde(rename = "baseline_trials")]
    pub baseline_runs: usize,
    /// One per other file.
    pub comparisons: Vec<Comparison>,
}

/// Compares every input after the first with the first.
pub fn compare(inputs: &[Input]) -> Option<CompareReport> {
    let first = inputs.first()?.runs.first()?;
    let primary = primary_metric(first);
    let figs: Vec<FigureInput> = inputs
        .iter()
        .map(|i| FigureInput {
            label: i.label.clone(),
            file: i.file.clone(),
            runs: i.runs.iter().map(figures_of).collect(),
        })
        .collect();
    let limited: Vec<(&str, bool)> = inputs
        .iter()
        .map(|i| (i.label.as_str(), i.runs.iter().any(tester_limited)))
        .collect();
    let is_limited = |label: &str| limited.iter().any(|(l, t)| *l == label && *t);
    let a_label = inputs.first().map_or("A", |i| i.label.as_str());
    let a = is_limited(a_label).then_some(a_label);
    let mut report = compare_figures(&figs, |label, metrics| {
        sentence(
            label,
            primary,
            metrics,
            Limits {
                a,
                b: is_limited(label),
            },
        )
    })?;
    for c in &mut report.comparisons {
        c.a_tester_limited = a.is_some();
        c.b_tester_limited = is_limited(&c.label);
    }
    Some(report)
}

/// A run's figures ([`metrics_of`]) and facts ([`facts_of`]).
pub fn figures_of(rec: &RunRecord) -> RunFigures {
    RunFigures {
        metrics: metrics_of(rec)
            .into_iter()
            .map(|(d, v)| (d.name.to_string(), v))
            .collect(),
        facts: facts_of(rec),
    }
}

/// Compares every input after the first with the first, figure by figure (the names of
/// the baseline's first run, in its order), with `sentence(label, metrics)` for the words.
pub fn compare_figures(
    inputs: &[FigureInput],
    sentence: impl Fn(&str, &[MetricComparison]) -> String,
) -> Option<CompareReport> {
    let (a, rest) = inputs.split_first()?;
    let names: Vec<&str> = a
        .runs
        .first()?
        .metrics
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    let values = |runs: &[RunFigures], name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.metrics.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
            .collect()
    };
    let comparisons = rest
        .iter()
        .map(|b| {
            let metrics: Vec<MetricComparison> = names
                .iter()
                .filter_map(|&n| MetricComparison::new(n, &values(&a.runs, n), &values(&b.runs, n)))
                .collect();
            Comparison {
                label: b.label.clone(),
                file: b.file.clone(),
                sentence: sentence(&b.label, &metrics),
                warnings: mismatch(&a.label, &a.runs, &b.label, &b.runs),
                metrics,
                a_tester_limited: false,
                b_tester_limited: false,
            }
        })
        .collect();
    Some(CompareReport {
        method: METHOD,
        baseline_file: a.file.clone(),
        baseline_runs: a.runs.len(),
        comparisons,
    })
}

/// The plan and host facts of a run that a like-for-like comparison keeps equal. A fact
/// that was not recorded is left out (it cannot be said to differ).
pub fn facts_of(rec: &RunRecord) -> Vec<(String, String)> {
    let p = &rec.plan;
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_string(), v));
        }
    };
    let test = match &rec.rr {
        Some(rr) => rr.kind.netperf_name().to_string(),
        None => format!("{:?}", p.transport).to_lowercase(),
    };
    push("test", Some(test));
    push(
        "direction",
        Some(format!("{:?}", p.direction).to_lowercase()),
    );
    push("streams", Some(p.streams.to_string()));
    if rec.rr.is_none() {
        push("write size", Some(format!("{} bytes", p.write_size)));
    }
    let size = |v: Option<u32>| Some(v.map_or("autotuned".to_string(), |b| format!("{b} bytes")));
    push("client send buffer", size(p.local_sndbuf));
    push("client receive buffer", size(p.local_rcvbuf));
    push("server send buffer", size(p.remote_sndbuf));
    push("server receive buffer", size(p.remote_rcvbuf));
    push(
        "paced rate",
        Some(
            p.rate_bps
                .map_or("unpaced".to_string(), |r| format!("{r} bit/s")),
        ),
    );
    push("congestion control", p.congestion.clone());
    if rec.rr.is_none() && p.transport == Transport::Tcp {
        push(PATH_FACTS[0], Some(p.send_mode.describe().to_string()));
        push(PATH_FACTS[1], Some(p.recv_mode.describe().to_string()));
    }
    for (end, side) in [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ] {
        let Some(side) = side else { continue };
        push(&format!("{end} kernel"), side.host.kernel.clone());
        push(
            &format!("{end} CPUs"),
            side.host.cpu_count.map(|n| n.to_string()),
        );
        if let Some(i) = &side.interface {
            push(&format!("{end} interface"), Some(i.name.clone()));
            push(&format!("{end} MTU"), i.mtu.map(|m| m.to_string()));
        }
    }
    out
}

/// The facts that name a data path (`--zerocopy`, `--sendfile`, `--no-rx-copy`): comparing
/// two runs that differ only there is the point of those options, so the difference is
/// named as what the ratios measure, not warned about.
const PATH_FACTS: [&str; 2] = ["send path", "receive path"];

/// "B differs from A in write size (131072 bytes → 65536 bytes), ...": the facts of the
/// first run of each side that both recorded and that differ; and within a side, facts that
/// change from run to run.
pub fn mismatch(la: &str, a: &[RunFigures], lb: &str, b: &[RunFigures]) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(fa), Some(fb)) = (a.first(), b.first()) else {
        return out;
    };
    let (paths, diffs): (Vec<_>, Vec<_>) = fa
        .facts
        .iter()
        .filter_map(|(k, va)| {
            let (_, vb) = fb.facts.iter().find(|(kb, _)| kb == k)?;
            (va != vb).then(|| (k.as_str(), format!("{k} ({va} → {vb})")))
        })
        .partition(|(k, _)| PATH_FACTS.contains(k));
    let paths: Vec<String> = paths.into_iter().map(|(_, d)| d).collect();
    let diffs: Vec<String> = diffs.into_iter().map(|(_, d)| d).collect();
    if !paths.is_empty() {
        out.push(format!(
            "{lb} uses another data path than {la}: {}; its CPU and service-demand ratios are \
             that change's effect{}",
            paths.join(", "),
            if diffs.is_empty() {
                ""
            } else {
                " together with the differences below"
            }
        ));
    }
    if !diffs.is_empty() {
        out.push(format!(
            "{lb} differs from {la} in {}: its ratios measure these changes together, not a \
             like-for-like change",
            diffs.join(", ")
        ));
    }
    for (label, runs) in [(la, a), (lb, b)] {
        let Some(first) = runs.first() else { continue };
        let varying: Vec<&str> = first
            .facts
            .iter()
            .filter(|(k, v)| {
                runs.iter().any(|r| {
                    r.facts
                        .iter()
                        .find(|(kr, _)| kr == k)
                        .is_some_and(|(_, vr)| vr != v)
                })
            })
            .map(|(k, _)| k.as_str())
            .collect();
        if !varying.is_empty() {
            out.push(format!(
                "the runs of {label} differ among themselves in {}",
                varying.join(", ")
            ));
        }
    }
    out
}

/// "12.3% lower throughput", "no significant change in throughput (+0.4%)".
fn phrase(m: &MetricComparison, label: &str, up: &str, down: &str) -> Option<String> {
    let pct = m.change_percent()?;
    let dir = if pct >= 0.0 { up } else { down };
    Some(match m.verdict {
        Verdict::NotSignificant => {
            format!(
                "no significant change in {label} ({pct:+.1}%, p = {:.2})",
                m.p_value.unwrap_or(1.0)
            )
        }
        _ => format!("{:.1}% {dir} {label}", pct.abs()),
    })
}

/// The primary metric's phrase when the tester limited a side. A tester-limited figure is a
/// bound (the system does at least as well), so: when the limited side measured better, the
/// gap is at least the measured one; when it measured worse, at most, and it may not be
/// worse at all. Never "A is better" of a B that measured more.
fn bounded_phrase(
    m: &MetricComparison,
    primary: MetricDef,
    label: &str,
    limits: Limits<'_>,
) -> Option<String> {
    let p = phrase(m, primary.label, "higher", "lower")?;
    let pct = m.change_percent()?;
    let b_better = if primary.higher_is_better {
        pct > 0.0
    } else {
        pct < 0.0
    };
    let b_worse = pct != 0.0 && !b_better;
    Some(match (limits.a, limits.b) {
        (None, false) => p,
        (Some(a), true) => format!(
            "{p} as measured, but the tester limited both {a} and {label}: neither figure is \
             the system's (use -P)"
        ),
        _ if m.verdict == Verdict::NotSignificant => {
            let who = limits.a.unwrap_or(label);
            format!("{p}; the tester limited {who}, which does at least as well as measured")
        }
        (Some(a), false) if b_better => {
            format!("at most {p} (the tester limited {a}, which does at least as well as measured)")
        }
        (Some(a), false) if b_worse => format!(
            "at least {p} (the tester limited {a}, which does at least as well as measured)"
        ),
        (None, true) if b_better => format!(
            "at least {p} (the tester limited {label}, which does at least as well as \
             measured: use -P)"
        ),
        (None, true) if b_worse => format!(
            "{p} as measured, but the tester limited {label}, which does at least as well: \
             it may not be worse (use -P)"
        ),
        (Some(who), false) => {
            format!("{p}; the tester limited {who}, which does at least as well as measured")
        }
        (None, true) => {
            format!("{p}; the tester limited {label}, which does at least as well as measured")
        }
    })
}

/// The sentence an engineer would write, e.g. "B: 11.3% lower throughput while using 58.7%
/// more CPU per KB on the client."; with the bounds a tester-limited side's figures are
/// ([`Limits`]).
pub fn sentence(
    label: &str,
    primary: MetricDef,
    metrics: &[MetricComparison],
    limits: Limits<'_>,
) -> String {
    let find = |n: &str| metrics.iter().find(|m| m.name == n);
    let mut parts = Vec::new();
    if let Some(p) = find(primary.name).and_then(|m| bounded_phrase(m, primary, label, limits)) {
        parts.push(p);
    }
    if primary.name == repeat::TPS.name {
        if let Some(p) =
            find(repeat::P99.name).and_then(|m| phrase(m, "p99 latency", "higher", "lower"))
        {
            parts.push(p);
        }
    }
    let mut out = format!(
        "{label}: {}",
        if parts.is_empty() {
            "no common figures".to_string()
        } else {
            parts.join(", ")
        }
    );
    // The cost: the service demand that changed most (significant ones first).
    let cost = metrics
        .iter()
        .filter(|m| m.name.contains("service_demand"))
        .filter(|m| m.verdict != Verdict::NotSignificant)
        .filter_map(|m| m.change_percent().map(|c| (m, c)))
        .max_by(|x, y| x.1.abs().total_cmp(&y.1.abs()));
    if let Some((m, pct)) = cost {
        let label = repeat::def_named(&m.name).map_or(m.name.as_str(), |d| d.label);
        let (what, end) = label.split_once(' ').map_or((label, ""), |(e, w)| (w, e));
        out.push_str(&format!(
            " while using {:.1}% {} {what} on the {end}",
            pct.abs(),
            if pct >= 0.0 { "more" } else { "less" }
        ));
    }
    if metrics.iter().any(|m| m.verdict == Verdict::TooFewRuns) {
        out.push_str(" (single runs: no verdict; use --repeat 5 or more)");
    }
    out.push('.');
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::fixtures;

    /// Seed 001 as records: A (GMAC) 663 Mbit/s at 63 % CPU, B (SUNGEM) 588 Mbit/s at
    /// 100 % CPU, on the client, five runs each with small spread.
    pub(crate) fn runs(bps: &[f64], cpu: &[f64]) -> Vec<RunRecord> {
        bps.iter()
            .zip(cpu)
            .map(|(b, c)| {
                let mut r = fixtures::tcp_send();
                r.summary.flows[0].receiver_bps = Some(b * 1e6);
                r.summary.client.cpu_util_percent = Some(*c);
                // Service demand scales with CPU / throughput (same window and CPU count).
                r.summary.client.service_demand_us_per_kb = Some(c / b);
                r
            })
            .collect()
    }

    pub(crate) fn input(label: &str, runs: Vec<RunRecord>) -> Input {
        Input {
            label: label.into(),
            file: format!("{label}.json"),
            runs,
        }
    }

    #[test]
    fn clear_difference_is_significant_and_worded_like_seed_001() {
        let a = runs(
            &[663.0, 658.0, 667.0, 661.0, 665.0],
            &[63.0, 62.5, 63.5, 63.0, 63.0],
        );
        let b = runs(
            &[588.0, 592.0, 585.0, 590.0, 586.0],
            &[100.0, 99.5, 100.0, 99.8, 100.0],
        );
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let c = &r.comparisons[0];
        let t = c
            .metrics
            .iter()
            .find(|m| m.name == "throughput_bps")
            .unwrap();
        // Welch on the Mbit/s values (see linerate-stats compare tests, SciPy): p 5.98e-10.
        assert_eq!(t.verdict, Verdict::Significant);
        assert!((t.p_value.unwrap() - 5.978e-10).abs() < 1e-12);
        // 588.2 / 662.8 = 0.88745 → 11.3 % lower.
        assert!(
            c.sentence
                .starts_with("B: 11.3% lower throughput while using"),
            "{}",
            c.sentence
        );
        // Client CPU per KB: mean(c/b) B ≈ 0.16993, A ≈ 0.09506 → +78.8 % (more than the
        // 58.7 % CPU rise, because B also moved less data).
        assert!(
            c.sentence.contains("% more CPU per KB on the client."),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn no_difference_is_not_significant() {
        let a = runs(&[10.0, 10.2, 9.9, 10.1, 9.8, 10.0], &[50.0; 6]);
        let b = runs(&[10.1, 9.9, 10.0, 10.2, 9.8], &[50.0; 5]);
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let c = &r.comparisons[0];
        let t = c
            .metrics
            .iter()
            .find(|m| m.name == "throughput_bps")
            .unwrap();
        // SciPy: p = 1.0 (equal means).
        assert_eq!(t.verdict, Verdict::NotSignificant);
        assert!(
            c.sentence
                .starts_with("B: no significant change in throughput (+0.0%, p = 1.00)"),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn single_runs_have_no_verdict() {
        let a = runs(&[663.0], &[63.0]);
        let b = runs(&[588.0], &[100.0]);
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let c = &r.comparisons[0];
        assert!(c.metrics.iter().all(|m| m.verdict == Verdict::TooFewRuns));
        assert!(c
            .metrics
            .iter()
            .all(|m| m.diff_ci.is_none() && m.p_value.is_none()));
        assert!(
            c.sentence.contains("use --repeat 5 or more"),
            "{}",
            c.sentence
        );
    }

    /// Marks every run the tester limited, as the diagnosis does.
    pub(crate) fn limited(mut runs: Vec<RunRecord>) -> Vec<RunRecord> {
        use crate::model::diagnosis::{Confidence, Diagnosis, Verdict as V, VerdictKind};
        for r in &mut runs {
            r.diagnosis = Some(Diagnosis {
                verdicts: vec![V {
                    kind: VerdictKind::TesterLimited,
                    side: None,
                    flow: None,
                    confidence: Confidence::Medium,
                    evidence: vec![],
                    message: String::new(),
                    suggestion: String::new(),
                }],
                summary: String::new(),
                not_judged: vec![],
                notes: vec![],
            });
        }
        runs
    }

    /// Issue 29's sweep as a comparison: A 1.992 Gbit/s, B (tester-limited) 31.56 Gbit/s.
    #[test]
    fn a_tester_limited_b_that_measured_more_is_at_least_that_much_higher() {
        let a = runs(&[1992.0], &[50.0]);
        let b = limited(runs(&[31560.0], &[100.0]));
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let c = &r.comparisons[0];
        assert!((c.b_tester_limited, c.a_tester_limited) == (true, false));
        // 31560 / 1992 = 15.843 → +1484.3 %.
        assert!(
            c.sentence.starts_with(
                "B: at least 1484.3% higher throughput (the tester limited B, which does at least as well as measured: use -P)"
            ),
            "{}",
            c.sentence
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["comparisons"][0]["b_tester_limited"], true);
        assert!(j["comparisons"][0].get("a_tester_limited").is_none());
    }

    #[test]
    fn a_tester_limited_side_never_makes_the_other_better_than_it_measured() {
        // B limited and lower: B may not be worse.
        let a = runs(&[36400.0], &[50.0]);
        let b = limited(runs(&[20900.0], &[100.0]));
        let r = compare(&[input("A", a.clone()), input("B", b)]).unwrap();
        let s = &r.comparisons[0].sentence;
        assert!(
            s.starts_with("B: 42.6% lower throughput as measured, but the tester limited B, which does at least as well: it may not be worse (use -P)"),
            "{s}"
        );
        // A limited and B higher: at most that much higher.
        let a = limited(runs(&[20900.0], &[50.0]));
        let b = runs(&[36400.0], &[100.0]);
        let r = compare(&[input("A", a.clone()), input("B", b)]).unwrap();
        let c = &r.comparisons[0];
        assert!(c.a_tester_limited && !c.b_tester_limited);
        assert!(
            c.sentence
                .starts_with("B: at most 74.2% higher throughput (the tester limited A"),
            "{}",
            c.sentence
        );
        // A limited and B lower: at least that much lower.
        let b = runs(&[10000.0], &[100.0]);
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let s = &r.comparisons[0].sentence;
        assert!(s.starts_with("B: at least 52.2% lower throughput"), "{s}");
        // Both limited: neither is the system's.
        let a = limited(runs(&[20900.0, 21000.0], &[50.0, 50.0]));
        let b = limited(runs(&[36400.0, 36300.0], &[100.0, 100.0]));
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let s = &r.comparisons[0].sentence;
        assert!(s.contains("the tester limited both A and B"), "{s}");
        // Within noise: no direction claimed, the bound named.
        let a = runs(&[10.0, 10.2, 9.9, 10.1, 9.8], &[50.0; 5]);
        let b = limited(runs(&[10.1, 9.9, 10.0, 10.2, 9.8], &[50.0; 5]));
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let s = &r.comparisons[0].sentence;
        assert!(
            s.starts_with(
                "B: no significant change in throughput (+0.0%, p = 1.00); the tester limited B"
            ),
            "{s}"
        );
    }

    #[test]
    fn rr_records_compare_rate_and_p99() {
        let mk = |tps: f64, p99: u64| {
            let mut r = fixtures::tcp_rr();
            if let Some(rr) = r.rr.as_mut() {
                rr.transactions_per_sec = Some(tps);
                if let Some(l) = rr.latency.as_mut() {
                    l.p99_ns = p99;
                }
            }
            r
        };
        let a = vec![
            mk(50_000.0, 30_000),
            mk(50_500.0, 31_000),
            mk(49_800.0, 29_000),
        ];
        let b = vec![
            mk(40_000.0, 45_000),
            mk(40_300.0, 46_000),
            mk(39_900.0, 44_000),
        ];
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let s = &r.comparisons[0].sentence;
        // 40,066.7 / 50,100 = 0.79973 → 20.0 % lower; p99 45,000 / 30,000 → 50.0 % higher.
        assert!(
            s.starts_with("B: 20.0% lower transaction rate, 50.0% higher p99 latency"),
            "{s}"
        );
    }
}
