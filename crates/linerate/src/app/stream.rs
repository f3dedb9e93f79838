//! `linerate tcp` and `linerate udp`: a stream test, once with live output or repeated;
//! exit code 1 when it fails `--max-loss`.

use std::process::ExitCode;

use linerate_wire::control::Transport;

use super::keep::Keeper;
use super::run;
use crate::cli::output::output;
use crate::cli::repeat::repeat_plan;
use crate::cli::stream::{criteria, stream_plan, StreamArgs};
use crate::cli::UsageError;

/// Runs `linerate tcp` or `linerate udp`.
pub fn command(a: &StreamArgs, transport: Transport) -> anyhow::Result<ExitCode> {
    if a.repeat.is_set() && a.capture.capture.is_some() {
        return Err(UsageError(
            "--capture records one test: leave out --repeat/--confidence".into(),
        )
        .into());
    }
    if a.latency && a.repeat.is_set() {
        return Err(UsageError(
            "--latency measures one test: leave out --repeat/--confidence".into(),
        )
        .into());
    }
    let plan = stream_plan(a, transport)?;
    let out = output(&a.output)?;
    let rp = repeat_plan(&a.repeat)?;
    let criteria = criteria(a, transport)?;
    a.store.validate()?;
    let keeper = Keeper::new(
        &a.store,
        match transport {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        },
    );
    if !a.repeat.is_set() {
        let how = run::Once {
            link_rate_bps: a.link_rate,
            capture: &a.capture,
            latency: a.latency,
            prom: a.output.prom.as_deref(),
        };
        return run::run_once(&plan, out, &how, &criteria, &keeper);
    }
    run::run_repeated(
        &plan,
        out,
        rp,
        a.link_rate,
        &criteria,
        &keeper,
        a.output.prom.as_deref(),
    )
}
