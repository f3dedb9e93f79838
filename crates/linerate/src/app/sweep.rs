//! `linerate sweep`: runs a test at every point of a matrix of its options (and free
//! variables), with the point's client commands before it and `--repeat`/`--confidence`
//! runs per point, then picks the best point by a metric and says how it compares with a
//! baseline point (`model::sweep`). Each point is written to the journal (`--journal`) and
//! the results database as soon as it finishes, so an interrupted sweep loses nothing and
//! `--resume` continues it. A progress bar with ETA counts the points on a terminal.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::keep::{warn_not_stored, Keeper};
use super::{signal_flag, write_out};
use crate::cli::sweep::{sweep_plan, PointPlan, SweepArgs, SweepFormat, SweepPlan};
use crate::cli::UsageError;
use crate::export;
use crate::model::sweep::{
    bound_word, metric_def, pick_best, status_of, CommandRecord, PointRecord, PointStatus,
    SweepRecord, Vary, SWEEP_SCHEMA_VERSION, TESTER_ADVICE,
};
use crate::repeat::run_repetitions;
use crate::session::protocol::client;
use crate::store::{entry, Store};
use linerate_wire::control::Feature;
use linerate_wire::hooks::HookRequest;

/// Pause between points, so the server has closed the previous test's sockets.
const BETWEEN_POINTS: Duration = Duration::from_millis(200);

/// The first line of a journal: which sweep it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct JournalHead {
    /// Always "linerate sweep journal".
    journal: String,
    /// The test command line.
    test: Vec<String>,
    /// The matrix.
    vary: Vec<Vary>,
    /// Runs per point.
    runs_per_point: (u32, u32),
}

const JOURNAL_MAGIC: &str = "linerate sweep journal";

fn head_of(plan: &SweepPlan) -> JournalHead {
    JournalHead {
        journal: JOURNAL_MAGIC.into(),
        test: plan.test.clone(),
        vary: plan.vary.clone(),
        runs_per_point: (plan.rp.min, plan.rp.max),
    }
}

/// The most a journal may hold: a sweep's points with their records, as a results file.
const JOURNAL_CAP: u64 = crate::model::MAX_RESULT_FILE;

/// A journal's head and its whole points, read under `cap` bytes (a longer file, or one
/// that never ends, is one usage error naming the cap); a line that does not parse (torn
/// by a kill in the middle of a write) is a warning and its point runs again.
fn read_journal(
    path: &Path,
    cap: u64,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Option<JournalHead>, BTreeMap<u32, PointRecord>)> {
    let shown = path.display();
    let bytes = crate::sys::files::read_bytes(path, cap)
        .map_err(|e| UsageError(format!("--journal {shown}: {e}")))?;
    let mut lines = bytes.split(|&b| b == b'\n');
    let head = lines
        .next()
        .and_then(|l| serde_json::from_slice::<JournalHead>(l).ok());
    let mut done = BTreeMap::new();
    for (n, line) in lines.enumerate() {
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<PointRecord>(line) {
            Ok(p) => {
                done.insert(p.index, p);
            }
            Err(_) => warnings.push(format!(
                "journal line {} is incomplete (the sweep was stopped while writing it): that point runs again",
                n + 2
            )),
        }
    }
    Ok((head, done))
}

/// Opens the journal: with `resume`, reads the points it holds (a torn last line, from a
/// kill in the middle of a write, is dropped with a warning); without, it must be new or
/// empty.
fn open_journal(
    path: &Path,
    plan: &SweepPlan,
    resume: bool,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(std::fs::File, BTreeMap<u32, PointRecord>)> {
    let shown = path.display();
    let mut done = BTreeMap::new();
    let exists = path.metadata().is_ok_and(|m| m.len() > 0);
    if exists && !resume {
        return Err(UsageError(format!(
            "--journal {shown} already holds a sweep: add --resume to continue it, or name a new file"
        ))
        .into());
    }
    if resume && !exists {
        return Err(UsageError(format!(
            "--resume: {shown} holds no sweep to continue (drop --resume to start one)"
        ))
        .into());
    }
    if exists {
        let (head, points) = read_journal(path, JOURNAL_CAP, warnings)?;
        match head {
            Some(h) if h == head_of(plan) => {}
            Some(_) => {
                return Err(UsageError(format!(
                    "--resume: {shown} is the journal of another sweep (its test, --vary or runs per point differ): give the same arguments, or start a new journal"
                ))
                .into())
            }
            None => {
                return Err(UsageError(format!(
                    "--resume: {shown} is not a linerate sweep journal"
                ))
                .into())
            }
        }
        done = points;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| UsageError(format!("--journal {shown}: {e}")))?;
    if !exists {
        let mut line = serde_json::to_string(&head_of(plan))?;
        line.push('\n');
        f.write_all(line.as_bytes())
            .and_then(|()| f.sync_data())
            .map_err(|e| UsageError(format!("--journal {shown}: {e}")))?;
    } else if !warnings.is_empty() {
        // Whatever follows a torn line must start on a line of its own.
        let _ = f.write_all(b"\n");
    }
    Ok((f, done))
}

fn command_record(argv: &[String], o: crate::sys::command::Outcome) -> CommandRecord {
    CommandRecord {
        argv: argv.to_vec(),
        exit_code: o.exit_code,
        timed_out: o.timed_out,
        stdout: o.stdout,
        stderr: o.stderr,
        duration_ms: u64::try_from(o.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}

/// Opens the control session the server hooks run in, when the sweep has any: one session
/// for the whole sweep, so that the server restores what they changed when it ends.
fn hook_session(plan: &SweepPlan) -> anyhow::Result<Option<client::Connection>> {
    let Some(first) = plan.points.iter().find(|p| !p.hooks.is_empty()) else {
        return Ok(None);
    };
    let target = client::Target::of(&first.plan)?;
    let c = client::connect(&target)?;
    if !c.features().has(Feature::Hooks) {
        let software = c.welcome().map_or("", |w| w.software.as_str());
        return Err(UsageError(format!(
            "--hook: the server at {} ({software}) does not offer hooks: upgrade linerate there",
            target.server
        ))
        .into());
    }
    Ok(Some(c))
}

/// Runs the point's server hooks; a refused hook (not declared by the server, a value out of
/// its range) ends the sweep with the server's words.
fn run_hooks(
    conn: &mut client::Connection,
    p: &PointPlan,
    rec: &mut PointRecord,
) -> anyhow::Result<()> {
    for (name, params) in &p.hooks {
        let req = HookRequest {
            name: name.clone(),
            params: params.clone(),
        };
        let r = conn
            .hook(req)
            .map_err(|e| match e.downcast_ref::<client::ClientError>() {
                Some(client::ClientError::Server { message, .. }) => anyhow::Error::from(
                    UsageError(format!("--hook {name}: the server refused it: {message}")),
                ),
                _ => e.context(format!("--hook {name}")),
            })?;
        let c = CommandRecord {
            argv: r.argv,
            exit_code: r.exit_code,
            timed_out: r.timed_out,
            stdout: r.stdout,
            stderr: r.stderr,
            duration_ms: r.duration_ms,
        };
        let failure = c.failure();
        rec.server_hooks.push(c);
        if let Some(f) = failure {
            rec.status = PointStatus::Failed;
            rec.error = Some(format!("server hook {name}: {f}"));
            return Ok(());
        }
    }
    Ok(())
}

/// Runs one point: its server hooks and client commands (the first failure fails the
/// point), then the test by the repetition plan.
fn run_point(
    plan: &SweepPlan,
    p: &PointPlan,
    hooks: Option<&mut client::Connection>,
    interrupt: &AtomicBool,
) -> anyhow::Result<PointRecord> {
    let mut rec = PointRecord {
        index: p.index,
        values: p.values.clone(),
        argv: p.argv.clone(),
        server_hooks: Vec::new(),
        commands: Vec::new(),
        status: PointStatus::Ok,
        error: None,
        runs: None,
        stored_id: None,
    };
    if let Some(conn) = hooks {
        run_hooks(conn, p, &mut rec)?;
        if rec.status == PointStatus::Failed {
            return Ok(rec);
        }
    }
    for argv in &p.commands {
        let c = command_record(argv, crate::sys::command::run(argv, plan.cmd_timeout));
        let failure = c.failure();
        rec.commands.push(c);
        if let Some(f) = failure {
            rec.status = PointStatus::Failed;
            rec.error = Some(format!("client command {f}"));
            return Ok(rec);
        }
    }
    let result = run_repetitions(plan.rp, false, interrupt, |_| {
        let mut r = client::run(&p.plan, &mut client::Quiet, interrupt)?;
        crate::diagnose::apply_link_rate(&mut r, p.link_rate_bps);
        Ok(r)
    });
    match result {
        Ok(set) => {
            rec.status = status_of(&set);
            let failures: Vec<String> = set
                .runs
                .iter()
                .flat_map(|r| p.criteria.failures(r))
                .collect();
            if let Some(f) = failures.first() {
                rec.error = Some(format!("criterion failed: {f}"));
            }
            rec.runs = Some(set);
        }
        Err(e) => {
            rec.status = if interrupt.load(SeqCst) {
                PointStatus::Interrupted
            } else {
                PointStatus::Failed
            };
            rec.error = Some(format!("{e:#}"));
        }
    }
    Ok(rec)
}

fn progress(plan: &SweepPlan) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    // Hidden when the output is JSON or CSV, or goes to a file or pipe.
    let show = std::io::stderr().is_terminal()
        && std::io::stdout().is_terminal()
        && plan.format == SweepFormat::Table;
    let bar = ProgressBar::with_draw_target(
        Some(plan.points.len() as u64),
        if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("point {pos}/{len} [{bar:30}] ETA {eta} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Runs `linerate sweep`.
pub fn command(a: &SweepArgs) -> anyhow::Result<ExitCode> {
    let plan = sweep_plan(a)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let (record, failed) = run(a, &plan, &interrupt)?;
    let text = match plan.format {
        SweepFormat::Json => export::json::pretty(&record),
        SweepFormat::Csv => export::sweep::render_csv(&record),
        SweepFormat::Table => export::sweep::render_table(&record),
    };
    if plan.format != SweepFormat::Table {
        for w in &record.warnings {
            eprintln!("warning: {w}");
        }
    }
    write_out(&text)?;
    Ok(ExitCode::from(u8::from(failed)))
}

/// The store (when the run is kept) with the sweep's own row in it, first, so that its
/// points can name it as they are stored; no store when that row could not be written.
fn open_sweep_row(keeper: &Keeper, record: &SweepRecord) -> (Option<Store>, Option<i64>) {
    let mut store: Option<Store> = None;
    if keeper.enabled() {
        match keeper.open() {
            Ok(s) => store = Some(s),
            Err(e) => warn_not_stored(&e),
        }
    }
    // The sweep's own row first, so that its points can name it as they are stored.
    let sweep_id = store.as_mut().and_then(|s| {
        let run = entry::sweep(record, &keeper.context(0));
        match s.insert(&run) {
            Ok(id) => Some(id),
            Err(e) => {
                warn_not_stored(&e);
                None
            }
        }
    });
    if sweep_id.is_none() {
        store = None;
    }
    (store, sweep_id)
}

/// Writes the finished sweep (exit code `code`) over its row `id`.
fn store_sweep(s: &mut Store, id: i64, keeper: &Keeper, record: &SweepRecord, code: i32) {
    let run = entry::sweep(record, &keeper.context(code));
    if let Err(e) = s.update_record(id, &run.record, run.headline.as_deref(), Some(code)) {
        warn_not_stored(&e);
    } else if std::io::stderr().is_terminal() {
        eprintln!(
            "linerate: stored as run {id} in {} (its points: linerate history --sweep {id})",
            s.path()
        );
    }
}

/// Runs a planned sweep (`linerate sweep`, or one of a campaign's): every point, the
/// restore commands, the best pick; stores it as it goes. Returns the record and whether a
/// point failed. Nothing is printed but the progress bar and store warnings.
pub fn run(
    a: &SweepArgs,
    plan: &SweepPlan,
    interrupt: &AtomicBool,
) -> anyhow::Result<(SweepRecord, bool)> {
    let mut warnings = Vec::new();
    let mut journal = match &a.journal {
        Some(p) => Some(open_journal(p, plan, a.resume, &mut warnings)?),
        None => None,
    };
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let keeper = Keeper::new(&a.store, "sweep");
    let mut record = new_record(plan, started_at);
    let (mut store, sweep_id) = open_sweep_row(&keeper, &record);
    // A refused hook or an unreachable server stops the sweep; the restore commands still
    // run and the stored sweep says it stopped.
    let mut fatal: Option<anyhow::Error> = None;
    let all_done = plan.points.iter().all(|p| {
        journal
            .as_ref()
            .is_some_and(|(_, done)| done.contains_key(&p.index))
    });
    let mut hook_conn = if all_done {
        None
    } else {
        match hook_session(plan) {
            Ok(c) => c,
            Err(e) => {
                fatal = Some(e);
                None
            }
        }
    };
    let bar = progress(plan);
    for (k, p) in plan.points.iter().enumerate() {
        if fatal.is_some() {
            break;
        }
        if let Some(old) = journal.as_ref().and_then(|(_, done)| done.get(&p.index)) {
            record.points.push(old.clone());
            bar.inc(1);
            continue;
        }
        if interrupt.load(SeqCst) {
            break;
        }
        if k > 0 {
            std::thread::sleep(BETWEEN_POINTS);
        }
        bar.set_message(
            p.values
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        let mut point = match run_point(plan, p, hook_conn.as_mut(), interrupt) {
            Ok(point) => point,
            Err(e) => {
                fatal = Some(e);
                break;
            }
        };
        if let (Some(s), Some(id)) = (store.as_mut(), sweep_id) {
            store_point(s, id, &keeper, plan, p, &mut point, &mut warnings);
        }
        if let Some((f, _)) = journal.as_mut() {
            journal_point(f, p, &point, &mut warnings)?;
        }
        record.points.push(point);
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Closing the hooks' session makes the server restore what they changed.
    drop(hook_conn);
    restore(plan, &mut record, &mut warnings);
    if let Some(e) = fatal {
        if let (Some(s), Some(id)) = (store.as_mut(), sweep_id) {
            record.warnings = vec![format!("the sweep stopped: {e:#}")];
            let run = entry::sweep(&record, &keeper.context(2));
            let _ = s.update_record(id, &run.record, Some("stopped"), Some(2));
        }
        return Err(e);
    }
    sum_up(a, plan, &mut record, &mut warnings);
    record.warnings = warnings;
    let failed = record
        .points
        .iter()
        .any(|p| p.status == PointStatus::Failed || p.error.is_some());
    if let (Some(s), Some(id)) = (store.as_mut(), sweep_id) {
        store_sweep(s, id, &keeper, &record, i32::from(failed));
    }
    Ok((record, failed))
}

/// The sweep's record before its points: what it varies and how it picks the best.
fn new_record(plan: &SweepPlan, started_at: String) -> SweepRecord {
    SweepRecord {
        schema_version: SWEEP_SCHEMA_VERSION,
        tool_version: crate::software(),
        started_at,
        test: plan.test.clone(),
        vary: plan.vary.clone(),
        runs_per_point: (plan.rp.min, plan.rp.max),
        best_by: plan.best_by.clone(),
        points: Vec::new(),
        best: None,
        restore: Vec::new(),
        warnings: Vec::new(),
    }
}

/// Stores a point's runs under the sweep's row `id`; a failure is a warning.
fn store_point(
    s: &mut Store,
    id: i64,
    keeper: &Keeper,
    plan: &SweepPlan,
    p: &PointPlan,
    point: &mut PointRecord,
    warnings: &mut Vec<String>,
) {
    let Some(set) = point.runs.as_ref() else {
        return;
    };
    let mut run = entry::run_set(set, &keeper_ctx(keeper, plan, p));
    run.sweep_id = Some(id);
    run.point = linerate_wire::json::to_value(&p.values).ok();
    match s.insert(&run) {
        Ok(pid) => point.stored_id = Some(pid),
        Err(e) => warnings.push(format!("point {} was not stored: {e}", p.index)),
    }
}

/// Appends a finished point to the journal (`--journal`), synced; a failed write is a
/// warning.
fn journal_point(
    f: &mut std::fs::File,
    p: &PointPlan,
    point: &PointRecord,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    let mut line = serde_json::to_string(point)?;
    line.push('\n');
    if let Err(e) = f.write_all(line.as_bytes()).and_then(|()| f.sync_data()) {
        warnings.push(format!(
            "point {} could not be written to the journal: {e}",
            p.index
        ));
    }
    Ok(())
}

/// Runs the restore commands (`--restore`), each on the record; a failed one is a warning.
fn restore(plan: &SweepPlan, record: &mut SweepRecord, warnings: &mut Vec<String>) {
    for argv in &plan.restore {
        let c = command_record(argv, crate::sys::command::run(argv, plan.cmd_timeout));
        if let Some(f) = c.failure() {
            warnings.push(format!("restore command {f}"));
        }
        record.restore.push(c);
    }
}

/// The sweep's end: points it did not reach, each failed, interrupted or tester-limited
/// point, and the best pick (or why there is none), each said in `warnings`.
fn sum_up(a: &SweepArgs, plan: &SweepPlan, record: &mut SweepRecord, warnings: &mut Vec<String>) {
    let missing = plan.points.len() - record.points.len();
    if missing > 0 {
        warnings.push(format!(
            "the sweep stopped before {missing} of {} points (interrupted){}",
            plan.points.len(),
            if a.journal.is_some() {
                ": run the same command with --resume to continue"
            } else {
                ""
            }
        ));
    }
    for p in &record.points {
        match p.status {
            PointStatus::Failed | PointStatus::Interrupted => warnings.push(format!(
                "point {} ({}) {}: {}",
                p.index,
                p.label(),
                p.status.word(),
                p.error.as_deref().unwrap_or("no result")
            )),
            PointStatus::TesterLimited => warnings.push(format!(
                "point {} ({}): the tester limited it (linerate's own threads or pace set the \
                 figure), so the system does {} that well there; to measure it use {}",
                p.index,
                p.label(),
                bound_word(
                    metric_def(&record.points, &plan.best_by).is_none_or(|d| d.higher_is_better)
                ),
                TESTER_ADVICE
            )),
            PointStatus::Ok => {
                if let Some(e) = &p.error {
                    warnings.push(format!("point {} ({}): {e}", p.index, p.label()));
                }
            }
        }
    }
    record.best = pick_best(&record.points, &plan.best_by, plan.baseline);
    if record.best.is_none() {
        warnings.push(format!(
            "no best point: no completed or tester-limited point measured {}{}",
            plan.best_by,
            if record
                .points
                .iter()
                .any(|p| p.index == plan.baseline && p.values_of(&plan.best_by).is_empty())
            {
                format!(
                    " or the baseline point {} did not measure it",
                    plan.baseline
                )
            } else {
                String::new()
            }
        ));
    }
}

/// The context a point's runs are stored with: the test's command and command line, the
/// sweep's tags.
fn keeper_ctx(keeper: &Keeper, plan: &SweepPlan, p: &PointPlan) -> entry::Context {
    let mut ctx = keeper.context(0);
    ctx.command = plan.test_command.clone();
    ctx.argv = p.argv.clone();
    ctx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_over_its_cap_is_one_usage_error_and_a_torn_line_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        // A head, then a line a kill tore in the middle of a character.
        let mut text = br#"{"journal":"linerate sweep journal","test":["tcp"],"vary":[],"runs_per_point":[1,1]}"#.to_vec();
        text.extend_from_slice(b"\n{\"index\":3,\"x\":\"\xc3");
        std::fs::write(&p, &text).unwrap();
        let mut warnings = Vec::new();
        let (head, done) = read_journal(&p, 4096, &mut warnings).unwrap();
        assert_eq!(head.unwrap().journal, JOURNAL_MAGIC);
        assert!(done.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("line 2"), "{warnings:?}");

        let e = read_journal(&p, 64, &mut warnings).unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some(), "{e}");
        let e = e.to_string();
        assert!(e.contains("j.jsonl") && e.contains("64 bytes"), "{e}");
        // A device that never ends is read up to the cap, never to the end.
        let e = read_journal(Path::new("/dev/zero"), 1 << 20, &mut warnings).unwrap_err();
        assert!(e.to_string().contains("1 MiB"), "{e}");
    }
}
