//! Series of stored results and their change points (`linerate history --changes`,
//! `linerate report`'s series chart, `linerate check --last K`'s baseline).
//!
//! A **series** is the stored runs of one command with the same flat parameters and the
//! same host facts (both ends' host names, kernels, CPUs, interfaces and MTUs, the facts
//! `compare` names: [`host_facts`]), oldest first; each stored record (a single run, or a
//! repeated run by its mean) is one point. Its change points are
//! `linerate_stats::changepoint::e_divisive` of the points' values of one metric.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::compare::facts_of;
use super::repeat::values;
use super::{RunRecord, RunSetRecord};
use linerate_stats::changepoint::{self, Config, Outcome};

/// Version of the changes record's schema.
pub const CHANGES_SCHEMA_VERSION: u32 = 1;

/// The runs of a stored record of kind `run` or `trials`; `None` for other kinds or a
/// record that does not parse.
pub fn runs_of(kind: &str, record: &serde_json::Value) -> Option<Vec<RunRecord>> {
    match kind {
        "run" => linerate_wire::json::from_value::<RunRecord>(record)
            .ok()
            .map(|r| vec![r]),
        "trials" => linerate_wire::json::from_value::<RunSetRecord>(record)
            .ok()
            .map(|s| s.runs),
        _ => None,
    }
}

/// The host facts a series keeps equal: both ends' host names and `compare`'s per-end facts
/// (kernel, CPUs, interface, MTU) of the first run.
pub fn host_facts(runs: &[RunRecord]) -> Vec<(String, String)> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(h) = &first.client.host.hostname {
        out.push(("client host".to_string(), h.clone()));
    }
    if let Some(h) = first.server.as_ref().and_then(|s| s.host.hostname.clone()) {
        out.push(("server host".to_string(), h));
    }
    out.extend(facts_of(first).into_iter().filter(|(k, _)| {
        (k.starts_with("client ") || k.starts_with("server ")) && !k.ends_with(" buffer")
    }));
    out
}

/// The mean of metric `name` over `runs`; `None` when no run measured it.
pub fn value_of(runs: &[RunRecord], name: &str) -> Option<f64> {
    let v = values(runs, name);
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One point of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeriesPoint {
    /// Stored run id.
    pub id: i64,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// The metric's value (the mean of a repeated run's runs).
    pub value: f64,
}

/// One change point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// Position in the series of the first point after the change (1 = the oldest).
    pub run: usize,
    /// Its stored run id.
    pub id: i64,
    /// Its start.
    pub started_at: String,
    /// Permutation p-value.
    pub p_value: f64,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
    /// `mean_after / mean_before − 1` in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
}

/// One series and what was found in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeriesChanges {
    /// The command.
    pub command: String,
    /// The parameters and hosts, in words.
    pub description: String,
    /// The metric, snake_case with its unit.
    pub metric: String,
    /// The points, oldest first.
    pub points: Vec<SeriesPoint>,
    /// Set when the series is too short to look for changes: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_few: Option<String>,
    /// Set when the series is longer than the method looks at: which of its points were
    /// left out (the oldest), so that its time and memory do not grow with the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
    /// The change points, oldest first.
    pub changes: Vec<Change>,
}

/// `linerate history --changes --json` (schema `docs/json-schema/changes-v1.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChangesRecord {
    /// Version of this schema.
    pub schema_version: u32,
    /// The database.
    pub database: String,
    /// The method and its settings, in words.
    pub method: String,
    /// Each series the filters matched, the one with the newest run first.
    pub series: Vec<SeriesChanges>,
}

/// The method in words.
pub fn method() -> String {
    changepoint::method(&Config::default())
}

/// What the change points of `points` points leave out: `None` when they look at all.
pub fn left_out(points: usize) -> Option<String> {
    let cfg = Config::default();
    let from = changepoint::window(points, &cfg);
    (from > 0).then(|| {
        format!(
            "the oldest {from} of {points} points left out: changes are looked for in the newest {} (narrow with --since/--until)",
            points - from
        )
    })
}

/// The change points of a series' points.
pub fn find(points: &[SeriesPoint]) -> (Option<String>, Vec<Change>) {
    let v: Vec<f64> = points.iter().map(|p| p.value).collect();
    match changepoint::e_divisive(&v, &Config::default()) {
        Outcome::TooFewPoints { points, needed } => (
            Some(format!(
                "{points} points: too few to call a change (the test needs {needed} or more)"
            )),
            Vec::new(),
        ),
        Outcome::Changes(cs) => (
            None,
            cs.into_iter()
                .filter_map(|c| {
                    let p = points.get(c.index)?;
                    Some(Change {
                        run: c.index + 1,
                        id: p.id,
                        started_at: p.started_at.clone(),
                        p_value: c.p_value,
                        mean_before: c.mean_before,
                        mean_after: c.mean_after,
                        change_percent: c.change_percent(),
                    })
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[f64]) -> Vec<SeriesPoint> {
        v.iter()
            .enumerate()
            .map(|(i, &value)| SeriesPoint {
                id: 100 + i as i64,
                started_at: format!("2026-11-{:02}T00:00:00Z", i + 1),
                value,
            })
            .collect()
    }

    #[test]
    fn a_step_is_named_by_its_run_and_id() {
        let v: Vec<f64> = (0..24)
            .map(|i| if i < 12 { 50.0 } else { 40.0 } + (i % 3) as f64 * 0.1)
            .collect();
        let (few, c) = find(&pts(&v));
        assert_eq!(few, None);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].run, c[0].id), (13, 112));
        assert!((c[0].change_percent.unwrap() + 20.0).abs() < 1.0);
        let (few, c) = find(&pts(&v[..5]));
        assert!(few.unwrap().contains("too few"));
        assert!(c.is_empty());
        assert_eq!(left_out(24), None);
        let why = left_out(100_000).unwrap();
        assert!(why.contains("oldest 99800 of 100000 points"), "{why}");
    }

    #[test]
    fn host_facts_name_hosts_and_leave_the_plan_out() {
        let r = crate::model::fixtures::tcp_send();
        let f = host_facts(std::slice::from_ref(&r));
        assert!(f.iter().any(|(k, _)| k == "client host"), "{f:?}");
        assert!(f.iter().all(|(k, _)| k != "write size"), "{f:?}");
    }
}
