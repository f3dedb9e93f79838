//! Running a test more than once (`--repeat N`, `--confidence LEVEL,WIDTH` with
//! `--iterations MIN,MAX`): the runner behind `linerate tcp|udp|rr`'s repetition flags, over
//! any function that runs the test once.
//!
//! The stopping rule is netperf's `-I`: after at least MIN runs, stop as soon as the
//! LEVEL % Student-t interval of the primary metric's mean is no wider than WIDTH % of the
//! mean (±WIDTH/2 %), or after MAX runs. Runs go one after another against the same
//! server, each a complete test with its own warm-up. A progress bar on stderr counts the
//! runs; it is hidden when stderr is not a terminal or the output is JSON. The printed
//! words ("trial 2/5", the warnings) are the published output and stay as they are.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use crate::model::repeat::{
    ci_half_width_percent, primary_metric, run_warnings, summarize_metrics, values, RepeatRecord,
    RunSetRecord, TRIALS_SCHEMA_VERSION,
};
use crate::model::units::format_metric;
use crate::model::RunRecord;

pub mod progress;

/// How often to run a test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatPlan {
    /// Fewest runs.
    pub min: u32,
    /// Most runs.
    pub max: u32,
    /// `(level, width)` in percent with `--confidence`.
    pub confidence: Option<(f64, f64)>,
}

impl RepeatPlan {
    /// One run, no repetition.
    pub const ONCE: RepeatPlan = RepeatPlan {
        min: 1,
        max: 1,
        confidence: None,
    };
}

/// Pause between runs, so the server has closed the previous test's sockets.
const BETWEEN_RUNS: Duration = Duration::from_millis(200);

/// Runs the test by `rp` with `one(run_number)` and summarises the runs. Stops early on
/// Ctrl-C (the runs so far are kept) and propagates a run's error.
pub fn run_repetitions(
    rp: RepeatPlan,
    show_progress: bool,
    interrupt: &AtomicBool,
    mut one: impl FnMut(u32) -> anyhow::Result<RunRecord>,
) -> anyhow::Result<RunSetRecord> {
    let bar = progress::Bar::counter(
        u64::from(rp.max),
        "trial {pos}/{len} [{bar:30}] {msg}",
        show_progress,
    );
    let level = rp.confidence.map_or(0.95, |c| c.0 / 100.0);
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut converged = rp.confidence.map(|_| false);
    let mut last_half = None;
    for i in 1..=rp.max {
        if i > 1 {
            std::thread::sleep(BETWEEN_RUNS);
        }
        let rec = one(i)?;
        let primary = primary_metric(&rec);
        let cut = rec.interrupted;
        runs.push(rec);
        let vals = values(&runs, primary.name);
        if let Some(v) = vals.last() {
            bar.set_message(format!(
                "{} {}",
                primary.label,
                format_metric(primary.name, *v)
            ));
        }
        bar.inc(1);
        if cut || interrupt.load(SeqCst) {
            break;
        }
        if let Some((lvl, width)) = rp.confidence {
            last_half = ci_half_width_percent(&vals, lvl / 100.0);
            if i >= rp.min && last_half.is_some_and(|h| h <= width / 2.0) {
                converged = Some(true);
                break;
            }
        }
    }
    bar.finish_and_clear();
    let Some(first) = runs.first() else {
        anyhow::bail!("no test ran");
    };
    let primary = primary_metric(first);
    let metrics = summarize_metrics(&runs, level);
    let mut warnings = run_warnings(&metrics, primary.name);
    if let (Some((lvl, width)), Some(false)) = (rp.confidence, converged) {
        let got = last_half.map_or("not computable".to_string(), |h| format!("±{h:.1}%"));
        warnings.push(format!(
            "not converged: the {lvl}% confidence interval of {} is {got} of the mean after {} trials, wider than the ±{:.1}% asked for (--confidence {lvl},{width}); allow more trials with --iterations, run longer with -t, pin CPUs with -A, or add a warm-up with -O",
            primary.name,
            runs.len(),
            width / 2.0
        ));
    }
    if runs.len() < rp.min as usize {
        warnings.push(format!(
            "only {} of at least {} trials ran (interrupted)",
            runs.len(),
            rp.min
        ));
    }
    for (k, t) in runs.iter().enumerate() {
        for w in &t.warnings {
            warnings.push(format!("trial {}: {w}", k + 1));
        }
    }
    Ok(RunSetRecord {
        schema_version: TRIALS_SCHEMA_VERSION,
        tool_version: crate::software(),
        repeat: RepeatRecord {
            min_runs: rp.min,
            max_runs: rp.max,
            confidence_level_percent: rp.confidence.map(|c| c.0),
            width_percent: rp.confidence.map(|c| c.1),
        },
        primary_metric: primary.name.to_string(),
        converged,
        metrics,
        runs,
        warnings,
    })
}
