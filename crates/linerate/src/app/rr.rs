//! `linerate rr`: a request/response test (TCP_RR, TCP_CRR, UDP_RR), once with live output
//! or repeated; exit code 1 when it fails `--max-loss`.

use std::process::ExitCode;

use super::keep::Keeper;
use super::run;
use crate::cli::output::output;
use crate::cli::repeat::repeat_plan;
use crate::cli::rr::{criteria, cross_flag_checks, rr_plan, RrArgs};
use crate::repeat::RepeatPlan;

/// Runs `linerate rr HOST ...`.
pub fn command(a: &RrArgs) -> anyhow::Result<ExitCode> {
    let plan = rr_plan(a)?;
    let out = output(&a.output)?;
    let rp = repeat_plan(&a.repeat)?;
    cross_flag_checks(a, rp)?;
    let criteria = criteria(a)?;
    a.store.validate()?;
    let keeper = Keeper::new(&a.store, "rr");
    let how = run::Once {
        link_rate_bps: None,
        capture: &a.capture,
        latency: false,
        prom: a.output.prom.as_deref(),
        profile_out: a.profile.profile_out.as_deref(),
        iperf3: false,
    };
    if rp == RepeatPlan::ONCE {
        return run::run_once(&plan, out, &how, &criteria, &keeper, None);
    }
    run::run_repeated(&plan, out, rp, &how, &criteria, &keeper, None)
}
