//! The record of a fleet run (`fleet run --json`, schema `fleet-v1.json`): every ordered
//! pair with its round and its figures, the interference check, and per-host summaries.
//! Built from the pairs in the store ([`FleetRecord::from_runs`]), so a resumed run's record
//! holds the pairs of every attempt (the last of each pair counts).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::RunRecord;

/// The record's version.
pub const SCHEMA_VERSION: u32 = 1;
/// Probability of the interference check's prediction interval.
pub const INTERFERENCE_CONFIDENCE: f64 = 0.95;

/// A fleet run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetRecord {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// linerate's version (the coordinator's).
    pub tool_version: String,
    /// The fleet run's name (`--name`, `--resume`).
    pub name: String,
    /// The test each pair ran: its words after `--`.
    pub test: Vec<String>,
    /// The agents as addressed (HOST:PORT), in the order the plan numbers them.
    pub agents: Vec<String>,
    /// Rounds of the plan (2(N-1) for N even, 2N for N odd).
    pub rounds: usize,
    /// The pairs the plan has: N(N-1).
    pub planned_pairs: usize,
    /// Every pair run in the mesh (the last attempt of each), by round.
    pub pairs: Vec<PairResult>,
    /// The pairs re-run alone at the end, and whether their mesh result was disturbed.
    pub interference: Vec<InterferenceCheck>,
    /// Per agent: its pairs as source and destination.
    pub hosts: Vec<HostSummary>,
    /// When the first pair started and the last ended (RFC 3339), if any ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// See `started_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// Whether a pair ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairStatus {
    /// The test ran and both ends reported.
    Ok,
    /// It did not (the reason is in `error`).
    Failed,
}

/// One ordered pair's test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairResult {
    /// The agent that ran the test (the client end), HOST:PORT.
    pub source: String,
    /// The agent the test went to (the server end).
    pub destination: String,
    /// The round it ran in (from 1).
    pub round: usize,
    /// How many other pairs ran in the same round, beside it.
    pub beside: usize,
    /// `ok` or `failed`.
    pub status: PairStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stored run (`linerate report ID`, `linerate compare ID ...`).
    pub run_id: i64,
    /// When the test started (the record's), if it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Figures of the test.
    #[serde(flatten)]
    pub figures: PairFigures,
}

/// The figures of one test that the matrix shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairFigures {
    /// Throughput at the receiving end, bits/s (tcp, udp: the first flow's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
    /// Payload bytes the receiving end got (tcp, udp: the first flow's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// TCP retransmissions of the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP loss (rr --udp: lost transactions), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// rr: transactions per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_sec: Option<f64>,
    /// rr: 99th percentile latency, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr_p99_ns: Option<f64>,
    /// The per-interval samples of the primary figure (throughput in bits/s, rr:
    /// transactions per second) over the measured window (warm-up intervals left out):
    /// what the interference check's interval is computed from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interval_samples: Vec<f64>,
}

impl PairFigures {
    /// The figures of a test's record.
    pub fn of(rec: &RunRecord) -> PairFigures {
        let flow = rec.summary.flows.first();
        let rr = rec.rr.as_ref();
        let loss = flow
            .and_then(|f| f.loss_percent)
            .or_else(|| rr.and_then(|r| r.lost_percent));
        // rr: the client counts the transactions; a stream: the receiving end's bytes.
        let server = rec.server.iter().filter(|_| rr.is_none());
        let samples = rec
            .client
            .intervals
            .iter()
            .chain(server.flat_map(|s| s.intervals.iter()))
            .filter(|iv| !iv.omitted && iv.end_ns > iv.start_ns)
            .filter_map(|iv| {
                let secs = (iv.end_ns - iv.start_ns) as f64 / 1e9;
                match rr {
                    Some(_) => iv.transactions.map(|t| t as f64 / secs),
                    None => (iv.rx_bytes > 0).then(|| iv.rx_bytes as f64 * 8.0 / secs),
                }
            })
            .collect();
        PairFigures {
            throughput_bps: rr
                .is_none()
                .then(|| flow.and_then(|f| f.receiver_bps))
                .flatten(),
            received_bytes: rr
                .is_none()
                .then(|| flow.and_then(|f| f.receiver_bytes))
                .flatten(),
            retransmits: flow.and_then(|f| f.retransmits),
            loss_percent: loss,
            transactions_per_sec: rr.and_then(|r| r.transactions_per_sec),
            rr_p99_ns: rr.and_then(|r| r.latency.as_ref()).map(|l| l.p99_ns as f64),
            interval_samples: samples,
        }
    }

    /// The primary figure: throughput, or for rr transactions per second (higher is better).
    pub fn primary(&self) -> Option<f64> {
        self.throughput_bps.or(self.transactions_per_sec)
    }

    /// Why these figures of a test that ran at most `seen` cannot be true (a rate or a
    /// count beyond what any link moves in that time, a negative or not finite figure, a
    /// loss above 100 %, a latency longer than the test), or `None`.
    pub fn implausible(&self, seen: std::time::Duration) -> Option<String> {
        use crate::session::protocol::plausible::MAX_RATE_BPS;
        let secs = seen.as_secs_f64();
        let rate = |v: f64| v.is_finite() && (0.0..=MAX_RATE_BPS).contains(&v);
        let checks: [(&str, bool); 6] = [
            ("throughput", self.throughput_bps.is_none_or(rate)),
            (
                "received bytes",
                self.received_bytes
                    .is_none_or(|b| b as f64 * 8.0 <= MAX_RATE_BPS * secs),
            ),
            (
                "loss",
                self.loss_percent
                    .is_none_or(|l| l.is_finite() && (0.0..=100.0).contains(&l)),
            ),
            // A transaction is at least a packet each way: no more of them than bits.
            (
                "transactions per second",
                self.transactions_per_sec.is_none_or(rate),
            ),
            (
                "rr p99 latency",
                self.rr_p99_ns
                    .is_none_or(|l| l.is_finite() && l >= 0.0 && l <= secs * 1e9),
            ),
            (
                "per-interval samples",
                self.interval_samples.iter().all(|&v| rate(v)),
            ),
        ];
        let (what, _) = checks.iter().find(|c| !c.1)?;
        Some(format!(
            "its {what} cannot be true of a test of {secs:.0} s (rates 0 to {} Tbit/s, loss 0 to 100 %, finite figures)",
            MAX_RATE_BPS / 1e12
        ))
    }
}

/// What the fleet's record and report keep of a pair's stored run: its figures, its start
/// and both ends' host names; the run itself stays in the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairRun {
    /// The figures the matrices show.
    pub figures: PairFigures,
    /// When the test started (the record's).
    pub started_at: String,
    /// The source's host name, as its own report gave it.
    pub source_host: Option<String>,
    /// The destination's.
    pub destination_host: Option<String>,
}

impl PairRun {
    /// What a stored pair keeps of its record.
    pub fn of(rec: &RunRecord) -> PairRun {
        PairRun {
            figures: PairFigures::of(rec),
            started_at: rec.started_at.clone(),
            source_host: rec.client.host.hostname.clone(),
            destination_host: rec.server.as_ref().and_then(|s| s.host.hostname.clone()),
        }
    }
}

/// One pair of the interference check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterferenceCheck {
    /// The pair's source.
    pub source: String,
    /// Its destination.
    pub destination: String,
    /// The round its mesh test ran in.
    pub round: usize,
    /// How many pairs ran beside it then.
    pub beside: usize,
    /// The mean of the mesh test's per-interval samples (bits/s; rr: transactions/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh_mean: Option<f64>,
    /// The alone test's mean of the same samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_mean: Option<f64>,
    /// The 95 % prediction interval of the alone test's per-interval samples (Student's
    /// t: mean ± t · s · sqrt(1 + 1/n), [`prediction_interval`]), low end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_ci_low: Option<f64>,
    /// High end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_ci_high: Option<f64>,
    /// Samples of the alone test.
    pub alone_samples: usize,
    /// The mesh test's mean lies outside the alone interval: the pairs beside it disturbed
    /// it.
    pub flagged: bool,
    /// The alone run, stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_run_id: Option<i64>,
    /// Why the check could not decide (the alone test failed, too few samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl InterferenceCheck {
    /// Judges a mesh result against its alone re-run.
    pub fn judge(mesh: &PairResult, alone: &PairFigures, alone_run_id: Option<i64>) -> Self {
        let mesh_mean = mean(&mesh.figures.interval_samples);
        let ci = prediction_interval(&alone.interval_samples, INTERFERENCE_CONFIDENCE);
        let flagged = match (mesh_mean, ci) {
            (Some(m), Some((lo, hi))) => m < lo || m > hi,
            _ => false,
        };
        let note = match (mesh_mean, ci) {
            (Some(_), Some(_)) => None,
            _ => Some(format!(
                "no interval to judge by: the mesh test has {} samples and the alone test {} (at least 2 each; a shorter -i gives more)",
                mesh.figures.interval_samples.len(),
                alone.interval_samples.len()
            )),
        };
        InterferenceCheck {
            source: mesh.source.clone(),
            destination: mesh.destination.clone(),
            round: mesh.round,
            beside: mesh.beside,
            mesh_mean,
            alone_mean: mean(&alone.interval_samples),
            alone_ci_low: ci.map(|c| c.0),
            alone_ci_high: ci.map(|c| c.1),
            alone_samples: alone.interval_samples.len(),
            flagged,
            alone_run_id,
            note,
        }
    }
}

/// The interval in which one more per-interval sample of the alone run falls with
/// probability `level`: Student's t prediction interval, mean ± t(1-(1-level)/2, n-1) · s ·
/// sqrt(1 + 1/n), from at least 2 samples. A mesh mean outside it is a whole test's worth
/// of intervals beyond what the alone run's own intervals vary by; the narrower interval of
/// the alone run's mean would also flag the few per cent that a busy host's CPU costs the
/// tests beside each other, which no link caused.
pub fn prediction_interval(samples: &[f64], level: f64) -> Option<(f64, f64)> {
    let s = linerate_stats::Summary::from_samples(samples)?;
    let sd = s.stddev?;
    let n = s.n as f64;
    if s.n < 2 {
        return None;
    }
    let t = linerate_stats::tdist::student_t_quantile(1.0 - (1.0 - level) / 2.0, n - 1.0)?;
    let half = t * sd * (1.0 + 1.0 / n).sqrt();
    Some((s.mean - half, s.mean + half))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One agent's pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostSummary {
    /// The agent, HOST:PORT.
    pub agent: String,
    /// Its host name, as its own report gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Pairs it was in that ran.
    pub pairs_ok: usize,
    /// Pairs it was in that failed.
    pub pairs_failed: usize,
    /// Lowest primary figure of its pairs as source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_out: Option<f64>,
    /// Lowest primary figure of its pairs as destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_in: Option<f64>,
}

/// The fleet facts a pair is stored with (the run's `point`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPoint {
    /// The fleet run's name.
    pub fleet: String,
    /// `mesh` or `alone` (the interference check's re-run).
    pub phase: String,
    /// The test's words.
    pub test: Vec<String>,
    /// The agents of the run.
    pub agents: Vec<String>,
    /// Source, HOST:PORT.
    pub source: String,
    /// Destination.
    pub destination: String,
    /// Round, from 1.
    pub round: usize,
    /// Pairs beside it.
    pub beside: usize,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A stored pair: its id, its facts and what its record gave, if it ran.
#[derive(Debug, Clone)]
pub struct StoredPair {
    /// The run's id.
    pub id: i64,
    /// Its facts.
    pub point: PairPoint,
    /// What its record gave, if the test ran.
    pub run: Option<PairRun>,
}

/// Each agent's summary: its host name (from the records), its pairs that ran and failed,
/// and its lowest primary figure as source and as destination.
fn host_summaries(
    agents: &[String],
    pairs: &[PairResult],
    stored: &[StoredPair],
) -> Vec<HostSummary> {
    let hostnames: BTreeMap<&str, String> = stored
        .iter()
        .filter_map(|s| {
            let r = s.run.as_ref()?;
            Some([
                (s.point.source.as_str(), r.source_host.clone()),
                (s.point.destination.as_str(), r.destination_host.clone()),
            ])
        })
        .flatten()
        .filter_map(|(a, h)| Some((a, h?)))
        .collect();
    agents
        .iter()
        .map(|a| {
            let mine = pairs
                .iter()
                .filter(|p| &p.source == a || &p.destination == a);
            let min = |f: &dyn Fn(&PairResult) -> bool| {
                pairs
                    .iter()
                    .filter(|p| f(p))
                    .filter_map(|p| p.figures.primary())
                    .min_by(f64::total_cmp)
            };
            HostSummary {
                agent: a.clone(),
                hostname: hostnames.get(a.as_str()).cloned(),
                pairs_ok: mine.clone().filter(|p| p.status == PairStatus::Ok).count(),
                pairs_failed: mine.filter(|p| p.status == PairStatus::Failed).count(),
                min_out: min(&|p| &p.source == a),
                min_in: min(&|p| &p.destination == a),
            }
        })
        .collect()
}

impl FleetRecord {
    /// The record of the fleet run `name` from its stored pairs; the last attempt of each
    /// pair counts. `agents` and `rounds` are the plan's.
    pub fn from_runs(
        name: &str,
        test: &[String],
        agents: &[String],
        rounds: usize,
        stored: &[StoredPair],
    ) -> FleetRecord {
        let mut mesh: BTreeMap<(String, String), PairResult> = BTreeMap::new();
        let mut alone: BTreeMap<(String, String), (i64, PairFigures)> = BTreeMap::new();
        for s in stored {
            let p = &s.point;
            let key = (p.source.clone(), p.destination.clone());
            let figures = s
                .run
                .as_ref()
                .map(|r| r.figures.clone())
                .unwrap_or_default();
            if p.phase == "alone" {
                if s.run.is_some() && p.error.is_none() {
                    alone.insert(key, (s.id, figures));
                }
                continue;
            }
            let ok = s.run.is_some() && p.error.is_none();
            mesh.insert(
                key,
                PairResult {
                    source: p.source.clone(),
                    destination: p.destination.clone(),
                    round: p.round,
                    beside: p.beside,
                    status: if ok {
                        PairStatus::Ok
                    } else {
                        PairStatus::Failed
                    },
                    error: p.error.clone(),
                    run_id: s.id,
                    started_at: s.run.as_ref().map(|r| r.started_at.clone()),
                    figures,
                },
            );
        }
        let mut pairs: Vec<PairResult> = mesh.into_values().collect();
        pairs.sort_by(|a, b| {
            (a.round, &a.source, &a.destination).cmp(&(b.round, &b.source, &b.destination))
        });
        let interference = pairs
            .iter()
            .filter_map(|p| {
                let (id, f) = alone.get(&(p.source.clone(), p.destination.clone()))?;
                Some(InterferenceCheck::judge(p, f, Some(*id)))
            })
            .collect();
        let hosts = host_summaries(agents, &pairs, stored);
        let times: Vec<&str> = stored
            .iter()
            .filter_map(|s| s.run.as_ref().map(|r| r.started_at.as_str()))
            .collect();
        FleetRecord {
            schema_version: SCHEMA_VERSION,
            tool_version: crate::software(),
            name: name.to_string(),
            test: test.to_vec(),
            agents: agents.to_vec(),
            rounds,
            planned_pairs: agents.len() * agents.len().saturating_sub(1),
            pairs,
            interference,
            hosts,
            started_at: times.iter().min().map(|s| s.to_string()),
            ended_at: times.iter().max().map(|s| s.to_string()),
        }
    }

    /// The pairs that failed.
    pub fn failed(&self) -> impl Iterator<Item = &PairResult> {
        self.pairs.iter().filter(|p| p.status == PairStatus::Failed)
    }

    /// The pairs of the plan that have no result at all (an interrupted run).
    pub fn missing(&self) -> usize {
        self.planned_pairs.saturating_sub(self.pairs.len())
    }

    /// The `k` worst pairs that ran: lowest primary figure first.
    pub fn worst(&self, k: usize) -> Vec<&PairResult> {
        let mut v: Vec<&PairResult> = self
            .pairs
            .iter()
            .filter(|p| p.figures.primary().is_some())
            .collect();
        v.sort_by(|a, b| {
            let (x, y) = (a.figures.primary(), b.figures.primary());
            x.unwrap_or(0.0).total_cmp(&y.unwrap_or(0.0))
        });
        v.truncate(k);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prediction_interval_of_samples() {
        // n = 4, mean 10, s = sqrt(20/3); t(0.975, 3) = 3.182.
        let (lo, hi) = prediction_interval(&[7.0, 9.0, 11.0, 13.0], 0.95).unwrap();
        let half = 3.182_446 * (20.0_f64 / 3.0).sqrt() * 1.25_f64.sqrt();
        assert!((lo - (10.0 - half)).abs() < 1e-3 && (hi - (10.0 + half)).abs() < 1e-3);
        assert!(prediction_interval(&[5.0], 0.95).is_none());
        // A mesh test at half the alone run's rate is flagged; one within its spread is not.
        let alone = PairFigures {
            interval_samples: vec![47.9e6, 48.1e6, 47.6e6, 48.3e6, 47.8e6, 48.0e6],
            ..PairFigures::default()
        };
        let mut mesh = PairResult {
            source: "a".into(),
            destination: "b".into(),
            round: 3,
            beside: 2,
            status: PairStatus::Ok,
            error: None,
            run_id: 7,
            started_at: None,
            figures: PairFigures {
                interval_samples: vec![24.0e6, 23.8e6, 24.1e6],
                ..PairFigures::default()
            },
        };
        let c = InterferenceCheck::judge(&mesh, &alone, Some(9));
        assert!(c.flagged && c.round == 3 && c.note.is_none(), "{c:?}");
        mesh.figures.interval_samples = vec![47.5e6, 47.7e6, 47.4e6];
        assert!(!InterferenceCheck::judge(&mesh, &alone, None).flagged);
        mesh.figures.interval_samples.clear();
        let c = InterferenceCheck::judge(&mesh, &alone, None);
        assert!(!c.flagged && c.note.is_some());
    }
}
