//! `linerate check`: a new result (a test run now, a result file or a stored run) against
//! a baseline (a stored run, a tag, or the last K stored runs like it), metric by metric
//! (`model::check`), printed in words, JSON or JUnit XML (`export::check`). Exit 1 when a
//! metric regressed, 0 when none did, 2 on an error.

use std::path::Path;
use std::process::ExitCode;

use super::compare::stored_id;
use super::write_out;
use crate::cli::check::{thresholds, validate, CheckArgs};
use crate::cli::UsageError;
use crate::export;
use crate::model::changes::{host_facts, runs_of};
use crate::model::check::{check, CheckSide};
use crate::model::{RunRecord, RunSetRecord};
use crate::store::entry::flatten;
use crate::store::series::RunRow;
use crate::store::{default_path, Store};

/// Most stored runs a baseline is looked for among.
const SCAN: u32 = 10_000;

/// The new result.
struct New {
    side: CheckSide,
    runs: Vec<RunRecord>,
    /// Its stored id, when it is a stored run.
    id: Option<i64>,
}

/// `linerate check`.
pub fn command(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    validate(a)?;
    let limits = thresholds(&a.max_regress)?;
    let path = match &a.db {
        Some(p) => p.clone(),
        None => default_path()?,
    };
    let new = match &a.new {
        None => run_now(a, &path)?,
        Some(p) => match stored_id(p) {
            Some(id) => {
                let store = Store::open_existing(&path)?;
                let Some(row) = store.row(id)? else {
                    return Err(no_run(id, &store).into());
                };
                let runs = runs_of(&row.kind, &row.record).ok_or_else(|| {
                    UsageError(format!(
                        "run {id} is a {} record: check takes tcp, udp and rr runs (single or repeated)",
                        row.kind
                    ))
                })?;
                New {
                    side: CheckSide {
                        source: format!("run {id}"),
                        runs: runs.len(),
                        stored_ids: vec![id],
                        started_at: Some(row.started_at.clone()),
                    },
                    runs,
                    id: Some(id),
                }
            }
            None => from_file(p)?,
        },
    };
    let Some(first) = new.runs.first() else {
        return Err(UsageError(format!("{} holds no runs", new.side.source)).into());
    };
    let store = Store::open_existing(&path)?;
    let rows = baseline_rows(a, &store, &new, first)?;
    let mut base_runs = Vec::new();
    for r in &rows {
        base_runs.extend(runs_of(&r.kind, &r.record).unwrap_or_default());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let source = match (&a.baseline, a.last) {
        (Some(b), _) if stored_id(Path::new(b)).is_some() => format!("run {b}"),
        (Some(tag), _) => format!("tag {tag}: {}", ids_text(&ids)),
        (None, Some(k)) if ids.len() < k as usize => format!(
            "{} (the last {k} like it asked, {} stored)",
            ids_text(&ids),
            ids.len()
        ),
        (None, Some(k)) => format!("{} (the last {k} like it)", ids_text(&ids)),
        (None, None) => ids_text(&ids),
    };
    let base_side = CheckSide {
        source,
        runs: base_runs.len(),
        started_at: rows.first().map(|r| r.started_at.clone()),
        stored_ids: ids,
    };
    let rec = check(new.side, &new.runs, base_side, &base_runs, &limits);
    let text = if a.json {
        export::json::pretty(&rec)
    } else if a.junit {
        export::check::junit(&rec)
    } else {
        export::check::render(&rec)
    };
    write_out(&text)?;
    Ok(if rec.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn no_run(id: i64, store: &Store) -> UsageError {
    UsageError(format!(
        "no run {id} in {}: `linerate history` lists the stored runs",
        store.path()
    ))
}

fn ids_text(ids: &[i64]) -> String {
    match ids {
        [] => "no runs".into(),
        [one] => format!("run {one}"),
        _ if ids.len() > 6 => format!(
            "runs {}, {}, ... {} ({} runs)",
            ids[0],
            ids[1],
            ids[ids.len() - 1],
            ids.len()
        ),
        _ => format!(
            "runs {}",
            ids.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The command a record is of: rr, or the stream test's transport.
fn command_of(rec: &RunRecord) -> &'static str {
    match (&rec.rr, rec.plan.transport) {
        (Some(_), _) => "rr",
        (None, linerate_wire::control::Transport::Tcp) => "tcp",
        (None, linerate_wire::control::Transport::Udp) => "udp",
        (None, linerate_wire::control::Transport::Quic) => "quic",
    }
}

/// The baseline's stored runs.
fn baseline_rows(
    a: &CheckArgs,
    store: &Store,
    new: &New,
    first: &RunRecord,
) -> anyhow::Result<Vec<RunRow>> {
    let started = first.started_at.as_str();
    // Not the new result itself (stored, or the same run from a file).
    let not_new = |r: &RunRow| Some(r.id) != new.id && r.started_at != started;
    let command = command_of(first);
    let params = flatten(&linerate_wire::json::to_value(&first.plan)?);
    if let Some(b) = &a.baseline {
        if let Some(id) = stored_id(Path::new(b)) {
            let row = store.row(id)?.ok_or_else(|| no_run(id, store))?;
            if runs_of(&row.kind, &row.record).is_none() {
                return Err(UsageError(format!(
                    "--baseline {id} is a {} record: the baseline is a tcp, udp or rr run",
                    row.kind
                ))
                .into());
            }
            return Ok(vec![row]);
        }
        let rows: Vec<RunRow> = store
            .rows_like(command, &params, None, Some(b), SCAN)?
            .into_iter()
            .filter(not_new)
            .collect();
        if rows.is_empty() {
            let any = store.rows_tagged(b, 1)?;
            return Err(UsageError(if any.is_empty() {
                format!("--baseline {b}: no stored run has the tag {b} (`linerate history --tag {b}`)")
            } else {
                format!(
                    "--baseline {b}: no run tagged {b} is a {command} test with the new result's parameters: compare like with like"
                )
            })
            .into());
        }
        return Ok(rows);
    }
    let k = a.last.unwrap_or(1) as usize;
    let facts = host_facts(&new.runs);
    let mut rows: Vec<RunRow> = store
        .rows_like(command, &params, Some(started), None, SCAN)?
        .into_iter()
        .filter(|r| not_new(r) && r.started_at.as_str() < started)
        .filter(|r| runs_of(&r.kind, &r.record).is_some_and(|runs| host_facts(&runs) == facts))
        .collect();
    if rows.is_empty() {
        return Err(UsageError(format!(
            "--last {k}: no stored {command} run before {started} has the new result's parameters (the same command line) and host facts ({}); run it a few times first, or give --baseline ID|TAG",
            facts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    let skip = rows.len().saturating_sub(k);
    Ok(rows.split_off(skip))
}

/// A result file: a repeated or single run.
fn from_file(p: &Path) -> Result<New, UsageError> {
    let file = p.display().to_string();
    let text = crate::sys::files::read_text(p, crate::model::MAX_RESULT_FILE, &file)
        .map_err(UsageError)?;
    let runs = parse_runs(&text).map_err(|e| {
        UsageError(format!(
            "{file} is not a linerate result ({e}): give the --json output of tcp, udp or rr (single or repeated), or a stored run id"
        ))
    })?;
    Ok(New {
        side: CheckSide {
            source: file,
            runs: runs.len(),
            stored_ids: vec![],
            started_at: runs.first().map(|r| r.started_at.clone()),
        },
        runs,
        id: None,
    })
}

fn parse_runs(text: &str) -> Result<Vec<RunRecord>, serde_json::Error> {
    if let Ok(set) = serde_json::from_str::<RunSetRecord>(text) {
        return Ok(set.runs);
    }
    serde_json::from_str::<RunRecord>(text).map(|r| vec![r])
}

/// Runs the test after `--` now (this binary, `--json`; it stores its run as every test
/// does) and reads its record.
fn run_now(a: &CheckArgs, db: &Path) -> anyhow::Result<New> {
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&a.test)
        .arg("--json")
        .env("LINERATE_DB", db)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit());
    let out = cmd.output()?;
    let shown = a.test.join(" ");
    // Exit 1 is a completed run that failed its own criterion (--max-loss): still a result.
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(UsageError(format!(
            "the test `{shown}` failed ({}): nothing to check",
            out.status
        ))
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let runs = parse_runs(&text)
        .map_err(|e| UsageError(format!("the test `{shown}` printed no result ({e})")))?;
    Ok(New {
        side: CheckSide {
            source: format!("this run ({shown})"),
            runs: runs.len(),
            stored_ids: vec![],
            started_at: runs.first().map(|r| r.started_at.clone()),
        },
        runs,
        id: None,
    })
}
