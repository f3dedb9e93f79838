//! A fleet run's record (`fleet run`) as a table (the mesh as a source x destination
//! matrix per figure, the failures, the worst pairs, the interference check), CSV (one row
//! per ordered pair) and Prometheus text of bounded size (totals, one series set per host,
//! the K worst pairs: O(N + K) series, never N²).

use std::fmt::Write as _;

use super::prom::Prom;
use crate::fleet::record::{FleetRecord, PairResult, PairStatus};
use crate::model::units::format_bps;

/// A matrix of one figure: rows are sources, columns destinations.
fn matrix(
    out: &mut String,
    rec: &FleetRecord,
    title: &str,
    cell: &dyn Fn(&PairResult) -> Option<String>,
) {
    let n = rec.agents.len();
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(n + 1);
    let mut head = vec!["src \\ dst".to_string()];
    head.extend((1..=n).map(|i| format!("#{i}")));
    rows.push(head);
    let mut any = false;
    for (i, s) in rec.agents.iter().enumerate() {
        let mut row = vec![format!("#{} {s}", i + 1)];
        for d in &rec.agents {
            let p = rec
                .pairs
                .iter()
                .find(|p| &p.source == s && &p.destination == d);
            row.push(match p {
                _ if s == d => "".into(),
                None => "?".into(),
                Some(p) if p.status == PairStatus::Failed => "FAIL".into(),
                Some(p) => match cell(p) {
                    Some(v) => {
                        any = true;
                        v
                    }
                    None => "-".into(),
                },
            });
        }
        rows.push(row);
    }
    if !any {
        return;
    }
    let _ = writeln!(out, "{title}");
    let widths: Vec<usize> = (0..=n)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (c, v) in r.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{v:<w$}", w = widths[0]);
            } else {
                let _ = write!(line, "  {v:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out);
}

/// The figure the worst pairs are ranked by, in words.
fn primary_text(p: &PairResult) -> String {
    match (p.figures.throughput_bps, p.figures.transactions_per_sec) {
        (Some(b), _) => format_bps(b),
        (None, Some(t)) => format!("{t:.0} trans/s"),
        _ => "-".into(),
    }
}

/// The table: a header, the matrices, failures, the worst pairs, the interference check.
pub fn table(rec: &FleetRecord, worst: usize) -> String {
    let mut out = String::new();
    let ok = rec
        .pairs
        .iter()
        .filter(|p| p.status == PairStatus::Ok)
        .count();
    let failed = rec.failed().count();
    let _ = writeln!(
        out,
        "fleet {}: {} agents, {} rounds, {} of {} pairs ran, {} failed, {} missing ({})",
        rec.name,
        rec.agents.len(),
        rec.rounds,
        ok,
        rec.planned_pairs,
        failed,
        rec.missing(),
        rec.test.join(" ")
    );
    let _ = writeln!(out);
    matrix(&mut out, rec, "Throughput (receiver)", &|p| {
        p.figures.throughput_bps.map(format_bps)
    });
    matrix(&mut out, rec, "Retransmits", &|p| {
        p.figures.retransmits.map(|r| r.to_string())
    });
    matrix(&mut out, rec, "Loss %", &|p| {
        p.figures.loss_percent.map(|l| format!("{l:.3}"))
    });
    matrix(&mut out, rec, "Transactions/s", &|p| {
        p.figures.transactions_per_sec.map(|t| format!("{t:.0}"))
    });
    matrix(&mut out, rec, "rr p99 latency (us)", &|p| {
        p.figures.rr_p99_ns.map(|l| format!("{:.1}", l / 1e3))
    });
    if failed > 0 {
        let _ = writeln!(out, "Failed pairs");
        for p in rec.failed() {
            let _ = writeln!(
                out,
                "  {} -> {} (round {}, run {}): {}",
                p.source,
                p.destination,
                p.round,
                p.run_id,
                linerate_wire::text::escape(p.error.as_deref().unwrap_or("failed"))
            );
        }
        let _ = writeln!(out);
    }
    let w = rec.worst(worst);
    if !w.is_empty() {
        let _ = writeln!(out, "Worst pairs");
        for p in w {
            let _ = writeln!(
                out,
                "  {} -> {}: {} (round {}, {} beside, run {})",
                p.source,
                p.destination,
                primary_text(p),
                p.round,
                p.beside,
                p.run_id
            );
        }
        let _ = writeln!(out);
    }
    interference(&mut out, rec);
    out
}

/// The interference check's lines: each pair re-run alone against its result in the mesh.
fn interference(out: &mut String, rec: &FleetRecord) {
    if rec.interference.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Interference check (each pair re-run alone; the 95 % Student-t prediction interval of the alone run's per-interval samples)"
    );
    for c in &rec.interference {
        let f = |v: Option<f64>| match (
            v,
            rec.pairs.iter().any(|p| p.figures.throughput_bps.is_some()),
        ) {
            (Some(v), true) => format_bps(v),
            (Some(v), false) => format!("{v:.0}/s"),
            (None, _) => "-".into(),
        };
        let verdict = if c.flagged {
            format!(
                "DISTURBED in round {} ({} pairs beside it)",
                c.round, c.beside
            )
        } else if let Some(n) = &c.note {
            format!("undecided: {n}")
        } else {
            "not disturbed".to_string()
        };
        let _ = writeln!(
            out,
            "  {} -> {}: in round {} {}, alone {} [{} .. {}] over {} samples: {verdict}",
            c.source,
            c.destination,
            c.round,
            f(c.mesh_mean),
            f(c.alone_mean),
            f(c.alone_ci_low),
            f(c.alone_ci_high),
            c.alone_samples
        );
    }
}

/// CSV: one row per ordered pair.
pub fn csv(rec: &FleetRecord) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "fleet",
        "source",
        "destination",
        "round",
        "beside",
        "status",
        "run_id",
        "throughput_bps",
        "retransmits",
        "loss_percent",
        "transactions_per_sec",
        "rr_p99_ns",
        "interference_flagged",
        "error",
    ]);
    let opt = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
    for p in &rec.pairs {
        let flagged = rec
            .interference
            .iter()
            .find(|c| c.source == p.source && c.destination == p.destination)
            .map(|c| c.flagged.to_string())
            .unwrap_or_default();
        let _ = w.write_record([
            rec.name.clone(),
            p.source.clone(),
            p.destination.clone(),
            p.round.to_string(),
            p.beside.to_string(),
            match p.status {
                PairStatus::Ok => "ok".into(),
                PairStatus::Failed => "failed".into(),
            },
            p.run_id.to_string(),
            opt(p.figures.throughput_bps),
            p.figures
                .retransmits
                .map(|r| r.to_string())
                .unwrap_or_default(),
            opt(p.figures.loss_percent),
            opt(p.figures.transactions_per_sec),
            opt(p.figures.rr_p99_ns),
            flagged,
            p.error.clone().unwrap_or_default(),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Prometheus text: the run's totals, per host its pairs and lowest figures, the `k` worst
/// pairs, and when the run's tests started and ended (not the scrape's time).
pub fn prom(rec: &FleetRecord, k: usize) -> String {
    let mut p = Prom::default();
    let fleet = || ("fleet", rec.name.clone());
    let ok = rec
        .pairs
        .iter()
        .filter(|p| p.status == PairStatus::Ok)
        .count();
    p.family(
        "linerate_fleet_pairs",
        "gauge",
        "Ordered pairs of the fleet run by status (planned: N(N-1)).",
        &[
            (
                vec![fleet(), ("status", "planned".into())],
                rec.planned_pairs as f64,
            ),
            (vec![fleet(), ("status", "ok".into())], ok as f64),
            (
                vec![fleet(), ("status", "failed".into())],
                rec.failed().count() as f64,
            ),
            (
                vec![fleet(), ("status", "missing".into())],
                rec.missing() as f64,
            ),
        ],
    );
    p.family(
        "linerate_fleet_interference_flagged",
        "gauge",
        "Pairs of the interference check whose mesh result lies outside their alone run's 95 % prediction interval.",
        &[(
            vec![fleet()],
            rec.interference.iter().filter(|c| c.flagged).count() as f64,
        )],
    );
    run_times(&mut p, rec);
    let host = |h: &str| vec![fleet(), ("agent", h.to_string())];
    let per_host = |f: &dyn Fn(&crate::fleet::record::HostSummary) -> Option<f64>| {
        rec.hosts
            .iter()
            .map(|h| (host(&h.agent), f(h).unwrap_or(f64::NAN)))
            .collect::<Vec<_>>()
    };
    p.family(
        "linerate_fleet_host_pairs_failed",
        "gauge",
        "Pairs of this agent (as source or destination) that failed.",
        &per_host(&|h| Some(h.pairs_failed as f64)),
    );
    let unit = if rec.pairs.iter().any(|p| p.figures.throughput_bps.is_some()) {
        "bits_per_second"
    } else {
        "transactions_per_second"
    };
    p.family(
        &format!("linerate_fleet_host_min_out_{unit}"),
        "gauge",
        "Lowest result of this agent's pairs as source.",
        &per_host(&|h| h.min_out),
    );
    p.family(
        &format!("linerate_fleet_host_min_in_{unit}"),
        "gauge",
        "Lowest result of this agent's pairs as destination.",
        &per_host(&|h| h.min_in),
    );
    let worst: Vec<_> = rec
        .worst(k)
        .into_iter()
        .enumerate()
        .map(|(i, pr)| {
            (
                vec![
                    fleet(),
                    ("rank", (i + 1).to_string()),
                    ("source", pr.source.clone()),
                    ("destination", pr.destination.clone()),
                ],
                pr.figures.primary().unwrap_or(f64::NAN),
            )
        })
        .collect();
    p.family(
        &format!("linerate_fleet_worst_pair_{unit}"),
        "gauge",
        "The worst pairs of the run (lowest result first), at most K of them.",
        &worst,
    );
    p.out
}

/// When the run's first and last tests started (Unix time; NaN when unknown).
fn run_times(p: &mut Prom, rec: &FleetRecord) {
    let fleet = || ("fleet", rec.name.clone());
    let time = |t: &Option<String>| {
        t.as_deref()
            .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(f64::NAN, |d| d.as_secs_f64())
    };
    p.family(
        "linerate_fleet_started_timestamp_seconds",
        "gauge",
        "When the fleet run's first test started (Unix time).",
        &[(vec![fleet()], time(&rec.started_at))],
    );
    p.family(
        "linerate_fleet_ended_timestamp_seconds",
        "gauge",
        "When the fleet run's last test started (Unix time).",
        &[(vec![fleet()], time(&rec.ended_at))],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::record::{PairFigures, SCHEMA_VERSION};

    fn rec(n: usize) -> FleetRecord {
        let agents: Vec<String> = (0..n).map(|i| format!("198.18.0.{}:5301", i + 1)).collect();
        let mut pairs = Vec::new();
        for (r, round) in crate::fleet::plan::rounds(n).iter().enumerate() {
            for p in round {
                pairs.push(PairResult {
                    source: agents[p.source].clone(),
                    destination: agents[p.destination].clone(),
                    round: r + 1,
                    beside: round.len() - 1,
                    status: PairStatus::Ok,
                    error: None,
                    run_id: pairs.len() as i64 + 1,
                    started_at: None,
                    figures: PairFigures {
                        throughput_bps: Some(1e9 - (p.source * n + p.destination) as f64),
                        retransmits: Some(0),
                        ..PairFigures::default()
                    },
                });
            }
        }
        pairs[0].status = PairStatus::Failed;
        pairs[0].error = Some("cannot reach".into());
        FleetRecord {
            schema_version: SCHEMA_VERSION,
            tool_version: "linerate 0".into(),
            name: "rack7".into(),
            test: vec!["tcp".into()],
            agents: agents.clone(),
            rounds: 2 * (n - 1),
            planned_pairs: n * (n - 1),
            pairs,
            interference: vec![],
            hosts: agents
                .iter()
                .map(|a| crate::fleet::record::HostSummary {
                    agent: a.clone(),
                    hostname: None,
                    pairs_ok: 0,
                    pairs_failed: 0,
                    min_out: Some(1e9),
                    min_in: None,
                })
                .collect(),
            started_at: Some("2026-11-26T12:00:00Z".into()),
            ended_at: Some("2026-11-26T12:01:00Z".into()),
        }
    }

    #[test]
    fn prometheus_series_grow_with_hosts_not_pairs() {
        let k = 5;
        let series = |n: usize| {
            prom(&rec(n), k)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count()
        };
        // 4 pair counts, flagged, 2 times; per host: failed, min_out (min_in absent here).
        assert_eq!(series(6), 7 + 2 * 6 + k);
        assert_eq!(series(20), 7 + 2 * 20 + k);
        let text = prom(&rec(6), k);
        assert!(
            text.contains("linerate_fleet_started_timestamp_seconds{fleet=\"rack7\"} 1795694400"),
            "{text}"
        );
        assert!(text.contains("linerate_fleet_pairs{fleet=\"rack7\",status=\"failed\"} 1"));
    }

    #[test]
    fn table_and_csv_hold_every_pair() {
        let r = rec(4);
        let t = table(&r, 3);
        assert!(t.contains("FAIL"), "{t}");
        assert!(t.contains("cannot reach"), "{t}");
        assert!(t.contains("#4 198.18.0.4:5301"), "{t}");
        let c = csv(&r);
        assert_eq!(c.lines().count(), 1 + 12);
        assert!(c.lines().nth(1).unwrap().contains(",failed,"), "{c}");
    }
}
