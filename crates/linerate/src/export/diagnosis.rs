//! The diagnosis in text: the table's "diagnosis:" block and the `# linerate:` comment
//! lines that `--format netperf|ttcp` print on stderr (stdout keeps the classic layout
//! for old scripts). JSON carries the [`Diagnosis`] itself; CSV has `verdict` and
//! `verdict_message` columns.

use crate::model::diagnosis::{confidence_name, place, Diagnosis, Evidence, Verdict};
use crate::model::units::{format_bps, format_bytes};

/// One evidence figure: "cpu_util_percent 95.2% (>= 90)".
pub fn evidence_text(e: &Evidence) -> String {
    let v = e.value;
    let value = match e.unit.as_str() {
        "percent" => format!("{v:.1}%"),
        "percent_of_one_cpu" => format!("{v:.1}% of one CPU"),
        "factor" => format!("{v:.2}x"),
        "bps" => format_bps(v),
        "bytes" if v >= 0.0 => format_bytes(v.round() as u64),
        "us" => format!("{v:.0} us"),
        "ratio" => format!("{v:.3}"),
        "count" => format!("{v:.0}"),
        other => format!("{v:.2} {other}"),
    };
    match &e.threshold {
        Some(t) => format!("{} {value} ({t})", e.metric),
        None => format!("{} {value}", e.metric),
    }
}

fn head(v: &Verdict) -> String {
    format!(
        "{} ({}, {}): {}",
        v.kind.name(),
        place(v),
        confidence_name(v.confidence),
        v.message
    )
}

/// The table's block: each verdict with its evidence and suggestion, then what could not be
/// judged. Starts with a blank line.
pub fn table_block(d: &Diagnosis) -> String {
    let mut out = String::from("\ndiagnosis:\n");
    for v in &d.verdicts {
        out.push_str(&format!("  {}\n", head(v)));
        if !v.evidence.is_empty() {
            let ev: Vec<String> = v.evidence.iter().map(evidence_text).collect();
            out.push_str(&format!("    evidence: {}\n", ev.join(", ")));
        }
        out.push_str(&format!("    suggestion: {}\n", v.suggestion));
    }
    for n in &d.not_judged {
        out.push_str(&format!("  not judged: {n}\n"));
    }
    for n in &d.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// Lines for stderr with the emulated formats: `# linerate: diagnosis: ...`, one per
/// verdict, then its suggestion.
pub fn comment_lines(d: &Diagnosis) -> Vec<String> {
    let mut out = Vec::new();
    for v in &d.verdicts {
        out.push(format!("# linerate: diagnosis: {}", head(v)));
        out.push(format!("# linerate: suggestion: {}", v.suggestion));
    }
    for n in &d.notes {
        out.push(format!("# linerate: note: {n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnosis::{Confidence, VerdictKind};

    fn verdict() -> Verdict {
        Verdict {
            kind: VerdictKind::CpuBound,
            side: Some(linerate_wire::report::Role::Server),
            flow: None,
            confidence: Confidence::High,
            evidence: vec![
                Evidence {
                    metric: "cpu_util_percent".into(),
                    value: 95.25,
                    unit: "percent".into(),
                    threshold: Some(">= 90".into()),
                },
                Evidence {
                    metric: "buffer_bytes".into(),
                    value: 8192.0,
                    unit: "bytes".into(),
                    threshold: None,
                },
            ],
            message: "All CPUs busy.".into(),
            suggestion: "Faster host.".into(),
        }
    }

    #[test]
    fn block_and_comment_lines() {
        let d = Diagnosis {
            verdicts: vec![verdict()],
            summary: "s".into(),
            not_judged: vec!["link bound: no speed".into()],
            notes: vec!["64.0 datagrams per packet".into()],
        };
        assert_eq!(
            table_block(&d),
            "\ndiagnosis:\n  cpu_bound (server, high): All CPUs busy.\n    evidence: \
             cpu_util_percent 95.2% (>= 90), buffer_bytes 8.00 KiB\n    suggestion: Faster \
             host.\n  not judged: link bound: no speed\n  note: 64.0 datagrams per packet\n"
        );
        assert_eq!(
            comment_lines(&d),
            [
                "# linerate: diagnosis: cpu_bound (server, high): All CPUs busy.",
                "# linerate: suggestion: Faster host.",
                "# linerate: note: 64.0 datagrams per packet"
            ]
        );
    }
}
