//! `linerate serve`: a server that many clients can test against at once.

use std::process::ExitCode;
use std::sync::Arc;

use super::signal_flag;
use crate::cli::serve::{server_config, ServeArgs};
use crate::session::server::Server;

/// Runs `linerate serve`.
pub fn command(a: &ServeArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = server_config(a)?;
    if a.fleet_agent {
        let interrupt = Arc::new(std::sync::atomic::AtomicBool::new(false));
        crate::sys::process::on_interrupt(&interrupt, false)?;
        if let Some(missing) = a
            .fleet_coordinators
            .iter()
            .find(|u| cfg.users.as_ref().is_some_and(|f| f.key(u).is_none()))
        {
            return Err(crate::cli::UsageError(format!(
                "--fleet-coordinators: {} is not a user of the --auth-users file: name users of that file",
                linerate_wire::text::clip(missing, 64)
            ))
            .into());
        }
        let runner = super::order::Runner {
            limits: cfg.limits.clone(),
            interrupt,
            allow: a.fleet_allow.clone(),
        };
        cfg.fleet_agent = Some(Arc::new(crate::session::server::order::Agent::new(
            Arc::new(runner),
            a.fleet_coordinators.clone(),
        )));
    }
    let metrics = a
        .metrics
        .map(|_| Arc::new(crate::session::server::policy::metrics::ServerMetrics::default()));
    cfg.metrics = metrics.clone();
    let cfg_hooks = cfg.hooks.clone();
    let server = Server::bind(cfg)?;
    signal_flag(&server.shutdown_handle())?;
    eprintln!(
        "linerate serve: listening on {} (TCP and UDP){}{}",
        server.local_addr()?,
        if a.one_off { ", one test" } else { "" },
        match (a.auth_users.is_some(), a.fleet_agent) {
            (true, true) => ", authentication required, fleet orders taken",
            (true, false) => ", authentication required",
            _ => "",
        }
    );
    if let Some(note) = server.limits_note() {
        eprintln!("linerate serve: {note}");
    }
    // QUIC tests: the self-signed certificate is made now, once (rcgen), and its hash goes
    // to each QUIC test's client over the control connection.
    #[cfg(feature = "quic")]
    if let Err(e) = crate::engine::quic::prepare() {
        eprintln!("linerate serve: warning: QUIC tests cannot run: {e}");
    }
    if a.allow_iperf3_unauthenticated {
        eprintln!(
            "linerate serve: warning: iperf3 clients test without authentication (--allow-iperf3-unauthenticated)"
        );
    }
    if let Some(h) = &cfg_hooks {
        eprintln!(
            "linerate serve: hooks clients may run: {}",
            h.names().join(", ")
        );
        if a.auth_users.is_none() {
            eprintln!(
                "linerate serve: warning: --hooks without --auth-users: anyone who reaches this port may run these hooks (each run is logged)"
            );
        }
    }
    // The board's core aborts on panic: a parent keeps the server running (sys/supervise.rs).
    #[cfg(panic = "abort")]
    if let crate::sys::supervise::Role::Parent(code) =
        crate::sys::supervise::fork_restarting(&|l| eprintln!("linerate serve: {l}"))?
    {
        return Ok(ExitCode::from(code));
    }
    if let (Some(addr), Some(m)) = (a.metrics, metrics) {
        let bound = super::metrics::spawn(addr, m)?;
        eprintln!("linerate serve: metrics at http://{bound}/metrics");
    }
    server.run()?;
    Ok(ExitCode::SUCCESS)
}
