//! `linerate campaign FILE`: runs the sweeps a TOML file describes (`cli::campaign`), one
//! after another, each through `linerate sweep`'s runner with its own journal, so an
//! interrupted campaign loses nothing and `--resume` continues it; then prints every
//! sweep's best point and the best-case table.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use super::{signal_flag, sweep, write_out};
use crate::cli::campaign::{campaign_plan, CampaignArgs};
use crate::cli::UsageError;
use crate::export;
use crate::model::campaign::{best_case, CampaignRecord, CampaignSweep, CAMPAIGN_SCHEMA_VERSION};

/// Runs `linerate campaign`.
pub fn command(a: &CampaignArgs) -> anyhow::Result<ExitCode> {
    let plan = campaign_plan(a)?;
    if a.dry_run {
        let mut out = String::new();
        for (s, (_, p)) in plan.file.sweep.iter().zip(&plan.sweeps) {
            out.push_str(&format!(
                "{}: {} points: linerate {}\n",
                s.name,
                p.points.len(),
                p.test.join(" ")
            ));
        }
        write_out(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (args, _) in &plan.sweeps {
        if let Some(dir) = args.journal.as_ref().and_then(|j| j.parent()) {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    UsageError(format!(
                        "cannot create the journal directory {}: {e}",
                        dir.display()
                    ))
                })?;
            }
        }
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let mut sweeps = Vec::new();
    let mut failed = false;
    for (entry, (args, p)) in plan.file.sweep.iter().zip(&plan.sweeps) {
        if interrupt.load(SeqCst) {
            break;
        }
        eprintln!(
            "linerate campaign: sweep {} ({} points)",
            entry.name,
            p.points.len()
        );
        let (record, f) = sweep::run(args, p, &interrupt)?;
        failed |= f;
        sweeps.push(CampaignSweep {
            name: entry.name.clone(),
            row: entry.row.clone(),
            column: entry.column.clone(),
            record,
        });
    }
    let table = plan
        .file
        .table
        .as_ref()
        .map(|t| best_case(&t.title, t.rows.as_deref().unwrap_or(""), &sweeps));
    let rec = CampaignRecord {
        schema_version: CAMPAIGN_SCHEMA_VERSION,
        tool_version: crate::software(),
        name: plan.file.name.clone(),
        file: plan.path.clone(),
        sweeps,
        table,
    };
    let text = if a.json {
        export::json::pretty(&rec)
    } else {
        export::campaign::render(&rec)
    };
    write_out(&text)?;
    if rec.sweeps.len() < plan.sweeps.len() {
        eprintln!(
            "warning: the campaign stopped after {} of {} sweeps: run it again with --resume to continue",
            rec.sweeps.len(),
            plan.sweeps.len()
        );
    }
    Ok(ExitCode::from(u8::from(failed)))
}
