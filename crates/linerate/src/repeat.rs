//! Running tests more than once (`--repeat N`, `--confidence LEVEL,WIDTH` with
//! `--iterations MIN,MAX`) and the `linerate rr` command.
//!
//! The stopping rule is netperf's `-I`: after at least MIN trials, stop as soon as the
//! LEVEL % Student-t interval of the primary metric's mean is no wider than WIDTH % of the
//! mean (±WIDTH/2 %), or after MAX trials. Trials run one after another against the same
//! server, each a complete test with its own warm-up. A progress bar on stderr counts the
//! trials; it is hidden when stderr is not a terminal or the output is JSON.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use linerate_wire::control::Transport;

use crate::app::{live, signal_flag, write_out};
use crate::cli::args::StreamArgs;
use crate::cli::plan::{self, UsageError};
use crate::cli::rr_args::RrArgs;
use crate::cli::rr_plan::{self, RepeatPlan};
use crate::export::{self, Format};
use crate::model::trials::{
    ci_half_width_percent, primary_metric, summarize_metrics, trial_warnings, values, RepeatRecord,
    TrialSetRecord, TRIALS_SCHEMA_VERSION,
};
use crate::model::RunRecord;
use crate::session::client::{self, StreamPlan};

/// Pause between trials, so the server has closed the previous test's sockets.
const BETWEEN_TRIALS: Duration = Duration::from_millis(200);

/// `linerate rr HOST ...`.
pub fn rr_command(a: &RrArgs) -> anyhow::Result<ExitCode> {
    let plan = rr_plan::rr_plan(a)?;
    let format = plan::output_format(&a.output)?;
    let rp = rr_plan::repeat_plan(&a.repeat)?;
    if rp == RepeatPlan::ONCE {
        return live::run_once(&plan, format, None, &a.capture);
    }
    if a.capture.capture.is_some() {
        return Err(crate::cli::plan::UsageError(
            "--capture records one test: leave out --repeat/--confidence".into(),
        )
        .into());
    }
    run_command(&plan, format, rp, None)
}

/// `linerate tcp|udp` with `--repeat` or `--confidence`.
pub fn stream_command(a: &StreamArgs, transport: Transport) -> anyhow::Result<ExitCode> {
    let plan = plan::stream_plan(a, transport)?;
    let format = plan::output_format(&a.output)?;
    let rp = rr_plan::repeat_plan(&a.repeat)?;
    run_command(&plan, format, rp, a.link_rate)
}

/// One test with live output, or trials by `rp`; every record gets the `--link-rate` hint.
fn run_command(
    plan: &StreamPlan,
    format: Format,
    rp: RepeatPlan,
    link_rate_bps: Option<u64>,
) -> anyhow::Result<ExitCode> {
    if rp == RepeatPlan::ONCE {
        return live::run_once(plan, format, link_rate_bps, &Default::default());
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let json = matches!(format, Format::Json | Format::JsonStream);
    let show = std::io::stderr().is_terminal() && !json;
    let set = run_trials(rp, show, &interrupt, |_| {
        let mut rec = client::run(plan, &mut client::Quiet, &interrupt)?;
        crate::diagnose::apply_link_rate(&mut rec, link_rate_bps);
        Ok(rec)
    })?;
    if !matches!(format, Format::Table | Format::Json) {
        for w in &set.warnings {
            eprintln!("warning: {w}");
        }
    }
    write_out(&export::trials::render(format, &set))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs trials by `rp` with `one(trial_number)` and summarises them. Stops early on Ctrl-C
/// (the trials so far are kept) and propagates a trial's error.
pub fn run_trials(
    rp: RepeatPlan,
    show_progress: bool,
    interrupt: &AtomicBool,
    mut one: impl FnMut(u32) -> anyhow::Result<RunRecord>,
) -> anyhow::Result<TrialSetRecord> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let bar = ProgressBar::with_draw_target(
        Some(u64::from(rp.max)),
        if show_progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("trial {pos}/{len} [{bar:30}] {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    let level = rp.confidence.map_or(0.95, |c| c.0 / 100.0);
    let mut trials: Vec<RunRecord> = Vec::new();
    let mut converged = rp.confidence.map(|_| false);
    let mut last_half = None;
    for i in 1..=rp.max {
        if i > 1 {
            std::thread::sleep(BETWEEN_TRIALS);
        }
        let rec = one(i)?;
        let primary = primary_metric(&rec);
        let cut = rec.interrupted;
        trials.push(rec);
        let vals = values(&trials, primary.name);
        if let Some(v) = vals.last() {
            bar.set_message(format!(
                "{} {}",
                primary.label,
                export::trials::format_metric(primary.name, *v)
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
    let Some(first) = trials.first() else {
        return Err(UsageError("no trial ran".into()).into());
    };
    let primary = primary_metric(first);
    let metrics = summarize_metrics(&trials, level);
    let mut warnings = trial_warnings(&metrics, primary.name);
    if let (Some((lvl, width)), Some(false)) = (rp.confidence, converged) {
        let got = last_half.map_or("not computable".to_string(), |h| format!("±{h:.1}%"));
        warnings.push(format!(
            "not converged: the {lvl}% confidence interval of {} is {got} of the mean after {} trials, wider than the ±{:.1}% asked for (--confidence {lvl},{width}); allow more trials with --iterations, run longer with -t, pin CPUs with -A, or add a warm-up with -O",
            primary.name,
            trials.len(),
            width / 2.0
        ));
    }
    if trials.len() < rp.min as usize {
        warnings.push(format!(
            "only {} of at least {} trials ran (interrupted)",
            trials.len(),
            rp.min
        ));
    }
    for (k, t) in trials.iter().enumerate() {
        for w in &t.warnings {
            warnings.push(format!("trial {}: {w}", k + 1));
        }
    }
    Ok(TrialSetRecord {
        schema_version: TRIALS_SCHEMA_VERSION,
        tool_version: crate::software(),
        repeat: RepeatRecord {
            min_trials: rp.min,
            max_trials: rp.max,
            confidence_level_percent: rp.confidence.map(|c| c.0),
            width_percent: rp.confidence.map(|c| c.1),
        },
        primary_metric: primary.name.to_string(),
        converged,
        metrics,
        trials,
        warnings,
    })
}
