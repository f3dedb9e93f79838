//! What limited a test: verdicts derived from the record, with the numbers behind them.
//!
//! [`diagnose`] is a pure function of a [`RunRecord`] (no I/O, no clock): the client calls
//! it when it builds the record, and `linerate report`-style tools can call it again on a
//! stored record. Each rule in [`rules`] looks at one kind of limit, names the end (or the
//! path) where it is, lists the measurements it used as [`Evidence`] with the threshold it
//! compared them with, and says what would change it.
//!
//! # Principles
//!
//! * **Evidence or silence.** A rule that lacks its inputs (no TCP_INFO busy times, no host
//!   counters from the server, no link speed) does not guess: it stays silent and the gap is
//!   listed in [`Diagnosis::not_judged`]. When no rule fires the one verdict is
//!   [`VerdictKind::None`], "no single limit stands out", with the key numbers.
//! * **Conservative thresholds.** Each threshold is a named constant below with the reason
//!   for its value; a finding close to a threshold gets a lower [`Confidence`].
//! * **Loopback has no link.** A test over `lo` (or between loopback addresses) never gets
//!   [`VerdictKind::LinkBound`]: loopback has no line rate.
//! * **One host, one CPU verdict.** When client and server share a kernel (same boot id:
//!   loopback, network namespaces) both ends measured the same CPUs; the CPU verdict is given
//!   once, without a side.
//!
//! The seeds of these rules are engineers' diagnoses by hand: a router "completely
//! interrupt bound", a driver raising "an abnormally large number of interrupts" at 100 %
//! CPU, delayed ACKs of ~10 ms stalling a sender, a 768 KB window on a LAN whose
//! bandwidth-delay product was 50× smaller.

mod facts;
#[cfg(test)]
mod props;
pub mod rules;
#[cfg(test)]
mod tests;

pub use crate::model::diagnosis::{
    confidence_name, place, Confidence, Diagnosis, Evidence, Verdict, VerdictKind,
};
use crate::model::RunRecord;

/// Diagnoses a test from its record. Pure: the same record gives the same diagnosis.
pub fn diagnose(rec: &RunRecord) -> Diagnosis {
    let ctx = facts::Ctx::new(rec);
    let mut verdicts = Vec::new();
    let mut not_judged = Vec::new();
    rules::run_all(&ctx, &mut verdicts, &mut not_judged);
    // Limits before advice, specific limits before generic ones (the order of
    // `VerdictKind`: a small window keeps the CPUs busy with small calls, not the other way
    // round), low confidence last.
    verdicts.sort_by_key(|v| {
        (
            !v.kind.is_limit(),
            v.confidence == Confidence::Low,
            v.kind,
            std::cmp::Reverse(v.confidence),
        )
    });
    if !verdicts.iter().any(|v| v.kind.is_limit()) {
        verdicts.insert(0, rules::nothing_stands_out(&ctx));
    }
    let summary = summary_line(&verdicts);
    let mut seen = std::collections::BTreeSet::new();
    not_judged.retain(|n| seen.insert(n.clone()));
    Diagnosis {
        verdicts,
        summary,
        not_judged,
        notes: rules::notes(&ctx),
    }
}

/// Records a known link (or shaped) rate on the record and diagnoses it again: the
/// `--link-rate` hint of `linerate tcp|udp`, for a path whose bottleneck linerate cannot
/// see (a shaper or a slower link beyond the first hop).
pub fn apply_link_rate(rec: &mut RunRecord, link_rate_bps: Option<u64>) {
    if link_rate_bps.is_none() {
        return;
    }
    rec.plan.link_rate_bps = link_rate_bps;
    rec.diagnosis = Some(diagnose(rec));
}

fn summary_line(verdicts: &[Verdict]) -> String {
    let Some(first) = verdicts.first() else {
        return "no single limit stands out".to_string();
    };
    let mut s = if first.kind == VerdictKind::None {
        first.message.clone()
    } else {
        format!(
            "{} ({}, {} confidence): {}",
            first.kind.name(),
            place(first),
            confidence_name(first.confidence),
            first.message
        )
    };
    let others: Vec<String> = verdicts[1..]
        .iter()
        .map(|v| format!("{} ({})", v.kind.name(), place(v)))
        .collect();
    if !others.is_empty() {
        s.push_str(" Also: ");
        s.push_str(&others.join(", "));
        s.push('.');
    }
    s
}
