//! `linerate compare`'s table: the inputs, then per comparison every metric with its
//! difference, ratio, interval, p-value and verdict, and the sentence.

use crate::model::compare::{CompareReport, Input};
use crate::model::units::format_metric;

fn signed(name: &str, v: f64) -> String {
    let s = if v < 0.0 { "-" } else { "+" };
    format!("{s}{}", format_metric(name, v.abs()))
}

/// The table of a report.
pub fn render(r: &CompareReport, inputs: &[Input]) -> String {
    let mut out = String::new();
    for i in inputs {
        out.push_str(&format!(
            "{} = {} ({} trial{})\n",
            i.label,
            i.file,
            i.runs.len(),
            if i.runs.len() == 1 { "" } else { "s" }
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
        out.push_str(&super::table::align_rows(&rows));
        out.push('\n');
        out.push_str(&c.sentence);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::compare::compare;
    use crate::model::compare::tests::{input, runs};

    #[test]
    fn single_runs_have_no_verdict() {
        let a = runs(&[663.0], &[63.0]);
        let b = runs(&[588.0], &[100.0]);
        let r = compare(&[input("A", a), input("B", b)]).unwrap();
        let text = render(&r, &[input("A", vec![]), input("B", vec![])]);
        assert!(
            text.contains("too few trials: use --repeat 5 or more"),
            "{text}"
        );
    }
}
