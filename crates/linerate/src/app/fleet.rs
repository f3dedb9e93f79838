//! `linerate fleet`: `run` (the coordinator, [`crate::fleet`]) and `manifests`.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{signal_flag, write_out};
use crate::cli::fleet::{check_name, listed_agents, parse_agent, FleetArgs, FleetCommand, RunArgs};
use crate::cli::order::{order_length, order_plan};
use crate::cli::UsageError;
use crate::fleet::coordinator::{self, AgentAddr, FleetConfig};
use crate::store::Store;

/// Runs `linerate fleet ...`.
pub fn command(a: &FleetArgs) -> anyhow::Result<ExitCode> {
    match &a.command {
        FleetCommand::Run(r) => run(r),
        FleetCommand::Manifests(m) => {
            crate::fleet::manifests::run(m)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The agents: listed, from a file, and from DNS; `--expect` checked or waited for.
fn agents(a: &RunArgs) -> anyhow::Result<Vec<AgentAddr>> {
    let mut agents: Vec<AgentAddr> = listed_agents(a)?
        .into_iter()
        .map(|(host, port)| AgentAddr { host, port })
        .collect();
    if let Some(d) = &a.agents_dns {
        let (name, port) = parse_agent(d)?;
        let need = a.expect.map(|n| n.saturating_sub(agents.len()));
        for x in coordinator::resolve_all(&name, port, need, a.wait)? {
            if !agents.contains(&x) {
                agents.push(x);
            }
        }
    }
    if agents.len() < 2 {
        return Err(UsageError(format!(
            "a fleet needs at least 2 agents, {} given: use --agents HOST,HOST,..., --agents-file FILE or --agents-dns NAME",
            agents.len()
        ))
        .into());
    }
    if let Some(n) = a.expect {
        if agents.len() < n {
            return Err(
                UsageError(format!("--expect {n}: only {} agents given", agents.len())).into(),
            );
        }
    }
    Ok(agents)
}

fn run(a: &RunArgs) -> anyhow::Result<ExitCode> {
    // Everything the command line can get wrong, before anything runs.
    let plan = order_plan(&a.test, "agent", crate::session::DEFAULT_PORT)?;
    let test_len = order_length(&plan)
        .ok_or_else(|| UsageError("the fleet test needs a duration (-t)".into()))?;
    let auth = a.auth.credentials()?.ok_or_else(|| {
        UsageError(
            "fleet run needs credentials (agents take orders only from their --auth-users): give --auth-user NAME and --auth-secret-file FILE or LINERATE_AUTH_SECRET".into(),
        )
    })?;
    let name = match (&a.resume, &a.name) {
        (Some(n), _) | (None, Some(n)) => n.clone(),
        (None, None) => format!(
            "fleet-{}",
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string()
                .replace(':', "")
        ),
    };
    check_name(&name)?;
    let db = match &a.db {
        Some(p) => p.clone(),
        None => match std::env::var_os("LINERATE_DB") {
            Some(p) => p.into(),
            None => crate::store::default_path()?,
        },
    };
    let mut store = Store::open(&db)?;
    let known = store.has_fleet_run(&name)?;
    match (&a.resume, known) {
        (Some(_), false) => {
            return Err(UsageError(format!(
                "--resume {name}: no fleet run of that name in {}: check the name (linerate history --tag fleet:NAME) and --db",
                db.display()
            ))
            .into())
        }
        (None, true) => {
            return Err(UsageError(format!(
                "a fleet run named {name} is already in {}: use --resume {name} to finish it, or another --name",
                db.display()
            ))
            .into())
        }
        _ => {}
    }
    let agents = agents(a)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let cfg = FleetConfig {
        name,
        agents,
        test: a.test.clone(),
        test_len,
        auth: Some(auth),
        interference: a.interference,
        argv: std::env::args().collect(),
        connect_timeout: Duration::from_secs(5),
    };
    let rec = coordinator::run(&cfg, &mut store, &interrupt)?;
    if a.json {
        write_out(&crate::export::json::pretty(&rec))?;
    } else if a.csv {
        write_out(&crate::export::fleet::csv(&rec))?;
    } else {
        write_out(&crate::export::fleet::table(&rec, a.worst))?;
    }
    if let Some(p) = &a.prom {
        crate::export::prom::write_atomic(p, &crate::export::fleet::prom(&rec, a.worst))?;
    }
    let incomplete = rec.failed().count() + rec.missing();
    if incomplete > 0 {
        eprintln!(
            "linerate fleet: {incomplete} of {} pairs did not run; finish them with --resume {}",
            rec.planned_pairs, rec.name
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
