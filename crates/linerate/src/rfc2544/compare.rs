//! An RFC 2544 record as `linerate compare` reads it: the throughput per frame size and loss
//! goal (frames per second per direction) as figures, and the plan's facts that a
//! like-for-like comparison keeps equal.

use super::record::{Benchmark, Rfc2544Record};
use crate::model::compare::{MetricComparison, RunFigures, Verdict};

/// The name of a throughput figure: `throughput_64b_fps`, or `throughput_64b_loss0.1_fps`
/// for a loss goal above zero.
pub fn metric_name(frame_size: u32, max_loss_percent: f64) -> String {
    if max_loss_percent > 0.0 {
        format!("throughput_{frame_size}b_loss{max_loss_percent}_fps")
    } else {
        format!("throughput_{frame_size}b_fps")
    }
}

/// The figures and facts of one record. A goal without a throughput (nothing passed, or the
/// confirmation failed) has no figure.
pub fn figures(rec: &Rfc2544Record) -> RunFigures {
    let mut metrics = Vec::new();
    for fs in &rec.frame_sizes {
        let Some(tp) = &fs.throughput else { continue };
        for g in &tp.goals {
            if let Some(fps) = g.throughput_fps.filter(|v| v.is_finite()) {
                metrics.push((metric_name(fs.frame_size, g.max_loss_percent), fps));
            }
        }
    }
    let p = &rec.plan;
    let benchmarks: Vec<&str> = p.benchmarks.iter().map(|b: &Benchmark| b.name()).collect();
    let facts = vec![
        ("test".to_string(), "rfc2544".to_string()),
        (
            "directions".to_string(),
            if p.bidirectional {
                "both".to_string()
            } else {
                "one".to_string()
            },
        ),
        ("IP version".to_string(), p.ip_version.clone()),
        (
            "line rate".to_string(),
            format!("{} bit/s", p.line_rate_bps),
        ),
        ("benchmarks".to_string(), benchmarks.join(",")),
        ("trial length".to_string(), format!("{} ms", p.trial_ms)),
        (
            "confirmation length".to_string(),
            p.confirm_ms
                .map_or("none".to_string(), |c| format!("{c} ms")),
        ),
        (
            "resolution".to_string(),
            format!("{}% of line", p.resolution_percent),
        ),
        (
            "UDP offload".to_string(),
            if p.udp_offload { "on" } else { "off" }.to_string(),
        ),
    ];
    RunFigures { metrics, facts }
}

/// "B: throughput 64 B 20.0% higher, 1518 B no significant change (+0.4%, p = 0.61)."
pub fn sentence(label: &str, metrics: &[MetricComparison]) -> String {
    let parts: Vec<String> = metrics
        .iter()
        .filter_map(|m| {
            let pct = m.change_percent()?;
            let what = m
                .name
                .strip_prefix("throughput_")
                .and_then(|n| n.strip_suffix("_fps"))
                .map_or(m.name.clone(), |n| {
                    n.replacen('b', " B", 1).replace('_', " ")
                });
            Some(match m.verdict {
                Verdict::NotSignificant => format!(
                    "{what} no significant change ({pct:+.1}%, p = {:.2})",
                    m.p_value.unwrap_or(1.0)
                ),
                _ => format!(
                    "{what} {:.1}% {}",
                    pct.abs(),
                    if pct >= 0.0 { "higher" } else { "lower" }
                ),
            })
        })
        .collect();
    let mut out = if parts.is_empty() {
        format!("{label}: no frame size with a throughput in both")
    } else {
        format!("{label}: throughput {}", parts.join(", "))
    };
    if metrics.iter().any(|m| m.verdict == Verdict::TooFewRuns) {
        out.push_str(" (one run on each side: the difference is not tested for significance)");
    }
    out.push('.');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::compare::{compare_figures, FigureInput};

    #[test]
    fn names_carry_size_goal_and_unit() {
        assert_eq!(metric_name(64, 0.0), "throughput_64b_fps");
        assert_eq!(metric_name(1518, 0.1), "throughput_1518b_loss0.1_fps");
    }

    #[test]
    fn compares_sizes_and_words_them() {
        let run = |a: f64, b: f64, bidir: &str| RunFigures {
            metrics: vec![
                ("throughput_64b_fps".into(), a),
                ("throughput_1518b_fps".into(), b),
            ],
            facts: vec![("directions".into(), bidir.into())],
        };
        let input = |l: &str, runs| FigureInput {
            label: l.into(),
            file: format!("{l}.json"),
            runs,
        };
        let r = compare_figures(
            &[
                input("A", vec![run(10_000.0, 8_000.0, "one")]),
                input("B", vec![run(12_000.0, 8_000.0, "both")]),
            ],
            sentence,
        )
        .unwrap();
        let c = &r.comparisons[0];
        // 12,000 / 10,000 = 1.2: 20.0 % higher; 8,000 / 8,000: +0.0 %.
        assert_eq!(
            c.sentence,
            "B: throughput 64 B 20.0% higher, 1518 B 0.0% higher (one run on each side: the \
             difference is not tested for significance)."
        );
        assert_eq!(c.metrics[0].ratio, Some(1.2));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(
            c.warnings[0].contains("directions (one → both)"),
            "{:?}",
            c.warnings
        );
    }
}
