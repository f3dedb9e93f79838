//! `linerate compare`'s table: the inputs, then per comparison every metric with its
//! difference, ratio, interval, p-value and verdict, the sentence, and the warnings where
//! the two differ in plan or host.

use crate::model::compare::CompareReport;
use crate::model::units::format_metric;

fn signed(name: &str, v: f64) -> String {
    let s = if v < 0.0 { "-" } else { "+" };
    format!("{s}{}", format_metric(name, v.abs()))
}

/// The table of a report; `inputs` are (label, file, runs) of each file.
pub fn render(r: &CompareReport, inputs: &[(String, String, usize)]) -> String {
    let mut out = String::new();
    for (i, (label, file, runs)) in inputs.iter().enumerate() {
        // A tester-limited file's figures are bounds: say so where it is named.
        let limited = if i == 0 {
            r.comparisons.iter().any(|c| c.a_tester_limited)
        } else {
            r.comparisons
                .iter()
                .any(|c| &c.label == label && c.b_tester_limited)
        };
        out.push_str(&format!(
            "{label} = {file} ({runs} trial{}{})\n",
            if *runs == 1 { "" } else { "s" },
            if limited {
                "; the tester limited it: its figures are bounds, the system does at least as well"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!("Test: {}.\n", r.method));
    for c in &r.comparisons {
        let mut rows = vec![[
            "metric".to_string(),
            "A".into(),
            c.label.clone(),
            format!("{}-A", c.label),
            format!("{}/A", c.label),
            format!("95% CI of {}/A", c.label),
            "p".into(),
            "verdict".into(),
        ]
        .to_vec()];
        for m in &c.metrics {
            rows.push(vec![
                m.name.clone(),
                format_metric(&m.name, m.mean_a),
                format_metric(&m.name, m.mean_b),
                signed(&m.name, m.diff),
                m.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                m.ratio_ci
                    .map_or("-".into(), |(lo, hi)| format!("{lo:.3}..{hi:.3}")),
                m.p_value.map_or("-".into(), |p| {
                    if p < 0.001 {
                        "<0.001".into()
                    } else {
                        format!("{p:.3}")
                    }
                }),
                m.verdict.text().to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&super::align::align(&rows));
        out.push('\n');
        out.push_str(&c.sentence);
        out.push('\n');
        for w in &c.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::compare::compare;
    use crate::model::compare::tests::{input, runs};

    #[test]
    fn a_plan_mismatch_is_a_warning_under_the_sentence() {
        let a = runs(&[663.0, 660.0], &[63.0, 62.0]);
        let mut b = runs(&[588.0, 590.0], &[100.0, 99.0]);
        for r in &mut b {
            r.plan.write_size = 16384;
        }
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let text = render(
            &r,
            &[
                ("A".into(), "A.json".into(), 2),
                ("B".into(), "B.json".into(), 2),
            ],
        );
        // fixtures::tcp_send writes 65535 bytes.
        assert!(
            text.contains("warning: B differs from A in write size (65535 bytes → 16384 bytes)"),
            "{text}"
        );
    }

    /// Issue 29: B tester-limited and higher is "at least" that much higher, and the
    /// header says which file the tester limited.
    #[test]
    fn a_tester_limited_file_is_named_a_bound() {
        use crate::model::compare::tests::limited;
        let a = runs(&[1992.0], &[50.0]);
        let b = limited(runs(&[31560.0], &[100.0]));
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let text = render(
            &r,
            &[
                ("A".into(), "A.json".into(), 1),
                ("B".into(), "B.json".into(), 1),
            ],
        );
        assert!(text.contains("A = A.json (1 trial)\n"), "{text}");
        assert!(
            text.contains("B = B.json (1 trial; the tester limited it: its figures are bounds"),
            "{text}"
        );
        assert!(
            text.contains("\nB: at least 1484.3% higher throughput"),
            "{text}"
        );
        assert!(!text.contains("lower throughput"), "{text}");
    }

    #[test]
    fn single_runs_have_no_verdict() {
        let a = runs(&[663.0], &[63.0]);
        let b = runs(&[588.0], &[100.0]);
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let text = render(
            &r,
            &[
                ("A".into(), "A.json".into(), 1),
                ("B".into(), "B.json".into(), 1),
            ],
        );
        assert!(
            text.contains("too few trials: use --repeat 5 or more"),
            "{text}"
        );
    }
}
