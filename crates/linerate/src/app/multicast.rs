//! `linerate udp GROUP --receivers A,B,C`: a multicast test (session::side::multicast),
//! printed as a table, JSON or CSV; exit code 1 when a receiver's loss passes
//! `--max-loss`, or a receiver has no figures to check against it.

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{signal_flag, write_out};
use crate::cli::multicast::multicast_plan;
use crate::cli::output::output;
use crate::cli::stream::StreamArgs;
use crate::cli::UsageError;
use crate::export::{multicast as render, Format};
use crate::session::side::multicast;

/// Runs the multicast test of `udp` to `group`.
pub fn command(a: &StreamArgs, group: IpAddr) -> anyhow::Result<ExitCode> {
    let plan = multicast_plan(a, group)?;
    let out = output(&a.output)?;
    if !matches!(out.format, Format::Table | Format::Json | Format::Csv) || a.output.prom.is_some()
    {
        return Err(UsageError(
            "a multicast test prints a table, --json or --csv (no --format netperf|ttcp, --json-stream or --prom)".into(),
        )
        .into());
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let rec = multicast::run(&plan, &interrupt)?;
    let text = match out.format {
        Format::Json => render::json(&rec),
        Format::Csv => render::csv(&rec),
        _ => render::render(&rec),
    };
    write_out(&text)?;
    if out.format != Format::Table && !out.quiet {
        for w in &rec.warnings {
            eprintln!("warning: {w}");
        }
    }
    let Some(max) = a.max_loss else {
        return Ok(ExitCode::SUCCESS);
    };
    let missing = rec.receivers.iter().any(|r| r.loss_percent.is_none());
    let worst = rec.worst_loss_percent();
    if missing || worst.is_some_and(|w| w > max) {
        if !out.quiet {
            eprintln!(
                "--max-loss {max}%: failed (worst receiver's loss {}{})",
                worst.map_or("-".into(), |w| format!("{w:.3}%")),
                if missing {
                    ", and a receiver without figures"
                } else {
                    ""
                }
            );
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
