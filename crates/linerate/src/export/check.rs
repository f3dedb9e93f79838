//! `linerate check`'s outputs: the verdict in words and as JUnit XML (one testcase per
//! metric, a `<failure>` for a regression, `<skipped>` where there were not enough repeats
//! to call it or the metric was not measured), both pure functions of the record. The JSON
//! is the record itself (`export::json::pretty`).

use crate::model::check::{CheckRecord, CheckVerdict, MetricCheck};
use crate::model::units::format_metric;

fn value(m: &MetricCheck, v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format_metric(&m.name, v))
}

fn verdict_word(v: CheckVerdict) -> &'static str {
    match v {
        CheckVerdict::Regression => "REGRESSION",
        CheckVerdict::NotSignificant => "not significant",
        CheckVerdict::NotEnoughRepeats => "not enough repeats",
        CheckVerdict::Ok => "ok",
        CheckVerdict::NotMeasured => "not measured",
    }
}

/// The check in words, with a trailing newline.
pub fn render(rec: &CheckRecord) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "new:      {} ({} run{})\nbaseline: {} ({} run{})\n",
        rec.new.source,
        rec.new.runs,
        if rec.new.runs == 1 { "" } else { "s" },
        rec.baseline.source,
        rec.baseline.runs,
        if rec.baseline.runs == 1 { "" } else { "s" },
    ));
    for m in &rec.metrics {
        let change = m
            .change_percent
            .map_or(String::new(), |c| format!(" ({c:+.1}%)"));
        out.push_str(&format!(
            "  {:<20} {:>14} -> {:<14}{}  {}: {}\n",
            m.label,
            value(m, m.baseline_mean),
            value(m, m.new_mean),
            change,
            verdict_word(m.verdict),
            m.reason
        ));
    }
    for d in &rec.differences {
        out.push_str(&format!("warning: {d}\n"));
    }
    if rec.passed {
        out.push_str("PASS: no metric regressed\n");
    } else {
        let labels: Vec<&str> = rec
            .metrics
            .iter()
            .filter(|m| m.verdict == CheckVerdict::Regression)
            .map(|m| m.label.as_str())
            .collect();
        out.push_str(&format!("FAIL: {} regressed\n", labels.join(", ")));
    }
    out
}

fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Characters XML 1.0 cannot hold.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// The check as JUnit XML (the schema Jenkins, GitLab and GitHub's test reporters read):
/// one `<testsuite>` with one `<testcase>` per metric.
pub fn junit(rec: &CheckRecord) -> String {
    let count = |v: CheckVerdict| rec.metrics.iter().filter(|m| m.verdict == v).count();
    let failures = count(CheckVerdict::Regression);
    let skipped = count(CheckVerdict::NotEnoughRepeats) + count(CheckVerdict::NotMeasured);
    let tests = rec.metrics.len();
    let suite = format!(
        "linerate check: {} against {}",
        rec.new.source, rec.baseline.source
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"linerate check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
        xml(&suite)
    ));
    if !rec.differences.is_empty() {
        out.push_str("    <properties>\n");
        for (i, d) in rec.differences.iter().enumerate() {
            out.push_str(&format!(
                "      <property name=\"difference.{}\" value=\"{}\"/>\n",
                i + 1,
                xml(d)
            ));
        }
        out.push_str("    </properties>\n");
    }
    for m in &rec.metrics {
        let details = format!(
            "baseline {} over {} runs, new {} over {} runs: {}",
            value(m, m.baseline_mean),
            m.baseline_n,
            value(m, m.new_mean),
            m.new_n,
            m.reason
        );
        out.push_str(&format!(
            "    <testcase classname=\"linerate.check\" name=\"{}\">\n",
            xml(&m.name)
        ));
        match m.verdict {
            CheckVerdict::Regression => out.push_str(&format!(
                "      <failure type=\"regression\" message=\"{}\">{}</failure>\n",
                xml(&format!("{} regressed", m.label)),
                xml(&details)
            )),
            CheckVerdict::NotEnoughRepeats | CheckVerdict::NotMeasured => {
                out.push_str(&format!("      <skipped message=\"{}\"/>\n", xml(&details)))
            }
            CheckVerdict::Ok | CheckVerdict::NotSignificant => out.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                xml(&details)
            )),
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check::{check, CheckSide};
    use crate::model::fixtures;
    use crate::model::RunRecord;

    fn with_bps(bps: f64) -> RunRecord {
        let mut r = fixtures::tcp_send();
        r.summary.flows[0].receiver_bps = Some(bps);
        r
    }

    fn side(source: &str, n: usize) -> CheckSide {
        CheckSide {
            source: source.into(),
            runs: n,
            stored_ids: vec![],
            started_at: None,
        }
    }

    fn sample(new_bps: f64, new_write: u32) -> CheckRecord {
        let base: Vec<RunRecord> = [50.0e6, 50.2e6, 49.9e6, 50.1e6]
            .iter()
            .map(|&b| with_bps(b))
            .collect();
        let mut new = with_bps(new_bps);
        new.plan.write_size = new_write;
        let t = [crate::model::check::Threshold {
            metrics: vec![],
            value: 5.0,
        }];
        check(
            side("run <9> & \"x\"", 1),
            &[new],
            side("runs 1-4", 4),
            &base,
            &t,
        )
    }

    /// The JUnit XML's shape, read with a real XML parser: one testsuite, one testcase per
    /// metric with the metric's name, a failure element exactly for each regression, the
    /// counts in the attributes, and escaped text.
    #[test]
    fn junit_has_one_testcase_per_metric_and_a_failure_per_regression() {
        for (bps, write) in [(40e6, 1024), (50.05e6, 131_072)] {
            let rec = sample(bps, write);
            let text = junit(&rec);
            let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
            let root = doc.root_element();
            assert_eq!(root.tag_name().name(), "testsuites");
            let suites: Vec<_> = root
                .children()
                .filter(|n| n.has_tag_name("testsuite"))
                .collect();
            assert_eq!(suites.len(), 1);
            let suite = suites[0];
            assert!(suite.attribute("name").unwrap().contains("run <9> & \"x\""));
            let cases: Vec<_> = suite
                .children()
                .filter(|n| n.has_tag_name("testcase"))
                .collect();
            assert_eq!(cases.len(), rec.metrics.len());
            assert!(cases.len() > 1);
            for (c, m) in cases.iter().zip(&rec.metrics) {
                assert_eq!(c.attribute("name"), Some(m.name.as_str()));
                let failed = c.children().any(|n| n.has_tag_name("failure"));
                assert_eq!(failed, m.verdict == CheckVerdict::Regression, "{}", m.name);
            }
            let failures = cases
                .iter()
                .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
                .count();
            assert_eq!(
                suite.attribute("tests"),
                Some(cases.len().to_string().as_str())
            );
            assert_eq!(
                suite.attribute("failures"),
                Some(failures.to_string().as_str())
            );
            assert_eq!(failures == 0, rec.passed);
            let props = suite.children().any(|n| n.has_tag_name("properties"));
            assert_eq!(props, !rec.differences.is_empty());
        }
        assert!(!sample(40e6, 1024).passed);
    }

    /// The JSON validates against the published schema (docs/json-schema/check-v1.json).
    #[test]
    fn json_validates_against_the_check_schema() {
        let schema_text = crate::export::json::SchemaName::Check.schema();
        let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
        let compiled = jsonschema::JSONSchema::compile(&schema).expect("a valid schema");
        for rec in [sample(40e6, 1024), sample(50.05e6, 131_072)] {
            let v: serde_json::Value =
                serde_json::from_str(&crate::export::json::pretty(&rec)).unwrap();
            let ok = compiled.validate(&v).is_ok();
            assert!(ok, "{v:#}");
            let back: CheckRecord = serde_json::from_value(v).unwrap();
            assert_eq!(back, rec);
        }
    }

    #[test]
    fn words_say_pass_or_fail_and_why() {
        let fail = render(&sample(40e6, 1024));
        assert!(fail.contains("FAIL: throughput regressed"), "{fail}");
        assert!(fail.contains("prediction t-test"), "{fail}");
        assert!(
            fail.contains("warning: the new result differs from the baseline in write size"),
            "{fail}"
        );
        let pass = render(&sample(50.05e6, 131_072));
        assert!(pass.contains("PASS"), "{pass}");
    }
}
