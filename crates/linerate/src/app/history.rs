//! `linerate history`: the stored runs that match the filters, newest first, as a table or
//! JSON (`export::history`); with `--changes`, the change points of each series they make
//! (`model::changes`).

use std::process::ExitCode;

use super::write_out;
use crate::cli::history::{filter, HistoryArgs};
use crate::cli::UsageError;
use crate::export;
use crate::model::changes::{self, host_facts, runs_of, ChangesRecord, SeriesChanges, SeriesPoint};
use crate::model::repeat::primary_metric;
use crate::store::{default_path, Filter, HistoryRecord, Store};

/// Runs `linerate history`.
pub fn command(a: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let f = filter(a)?;
    let path = match &a.db {
        Some(p) => p.clone(),
        None => default_path()?,
    };
    let store = Store::open_existing(&path)?;
    if a.changes {
        let rec = series_changes(&store, &f, a.metric.as_deref())?;
        let text = if a.json {
            export::json::pretty(&rec)
        } else {
            export::history::render_changes(&rec)
        };
        write_out(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rec = HistoryRecord {
        database: store.path().to_string(),
        schema_version: store.version()?,
        runs: store.list(&f)?,
    };
    let text = if a.json {
        export::json::pretty(&rec)
    } else {
        export::history::render(&rec)
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The series the filtered runs make (tcp, udp and rr runs, single or repeated), each with
/// its change points; the series with the newest run first.
pub fn series_changes(
    store: &Store,
    f: &Filter,
    metric: Option<&str>,
) -> anyhow::Result<ChangesRecord> {
    // (command, parameters, host facts) -> points, newest run first as listed.
    type Key = (String, String, Vec<(String, String)>);
    let mut groups: Vec<(Key, String, Vec<SeriesPoint>)> = Vec::new();
    let mut metric_name: Option<String> = metric.map(str::to_string);
    for run in store.list(f)? {
        if run.sweep_id.is_some() {
            continue;
        }
        let Some(row) = store.row(run.id)? else {
            continue;
        };
        let Some(runs) = runs_of(&row.kind, &row.record) else {
            continue;
        };
        let Some(first) = runs.first() else { continue };
        let name = metric_name
            .get_or_insert_with(|| primary_metric(first).name.to_string())
            .clone();
        let Some(value) = changes::value_of(&runs, &name) else {
            continue;
        };
        let key: Key = (
            row.command.clone(),
            row.params.to_string(),
            host_facts(&runs),
        );
        let point = SeriesPoint {
            id: row.id,
            started_at: row.started_at.clone(),
            value,
        };
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, pts)) => pts.push(point),
            None => {
                let words = describe(first, &key.2);
                groups.push((key, words, vec![point]));
            }
        }
    }
    if let (Some(m), true) = (metric, groups.is_empty()) {
        if !store.list(f)?.is_empty() {
            return Err(UsageError(format!(
                "--metric {m}: no matching run measured it (names as in `compare`: throughput_bps, latency_p99_ns, ...)"
            ))
            .into());
        }
    }
    let series = groups
        .into_iter()
        .map(|((command, _, _), description, mut points)| {
            points.reverse();
            let (too_few, changes) = changes::find(&points);
            SeriesChanges {
                left_out: changes::left_out(points.len()),
                command,
                description,
                metric: metric_name.clone().unwrap_or_default(),
                points,
                too_few,
                changes,
            }
        })
        .collect();
    Ok(ChangesRecord {
        schema_version: changes::CHANGES_SCHEMA_VERSION,
        database: store.path().to_string(),
        method: changes::method(),
        series,
    })
}

/// "to 198.18.0.2:5301, 1 stream, write size 131072 bytes, client host a": what a series
/// holds equal, in words.
fn describe(first: &crate::model::RunRecord, hosts: &[(String, String)]) -> String {
    let mut parts = vec![format!("to {}", first.plan.server)];
    for (k, v) in crate::model::compare::facts_of(first) {
        if ["direction", "streams", "write size", "paced rate"].contains(&k.as_str()) {
            parts.push(format!("{k} {v}"));
        }
    }
    for (k, v) in hosts {
        if k.ends_with(" host") {
            parts.push(format!("{k} {v}"));
        }
    }
    parts.join(", ")
}
