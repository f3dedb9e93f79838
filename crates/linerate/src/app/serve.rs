//! `linerate serve`: a server that many clients can test against at once.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use super::signal_flag;
use crate::cli::serve::ServeArgs;
use crate::cli::UsageError;
use crate::model::plan::Debug;
use crate::session::protocol::auth;
use crate::session::server::policy::hooks::HookSet;
use crate::session::server::{Server, ServerConfig};

/// Runs `linerate serve`.
pub fn command(a: &ServeArgs) -> anyhow::Result<ExitCode> {
    let ip: std::net::IpAddr = a.bind.parse().map_err(|_| {
        UsageError(format!(
            "--bind {}: not an IP address (use :: or 0.0.0.0 or 127.0.0.1)",
            a.bind
        ))
    })?;
    if a.max_streams == 0 || a.max_tests == 0 {
        return Err(UsageError("--max-streams and --max-tests must be at least 1".into()).into());
    }
    let mut cfg = ServerConfig {
        listen: SocketAddr::new(ip, a.port),
        max_tests: a.max_tests,
        handshake_timeout: a.handshake_timeout,
        idle_timeout: a.idle_timeout,
        one_off: a.one_off,
        allow_capture: a.allow_capture,
        allow_profile: a.allow_profile,
        one_port: a.one_port,
        debug: Debug(a.debug_protocol),
        log: !a.quiet,
        users: match &a.auth_users {
            Some(p) => Some(Arc::new(auth::Users::load(p).map_err(UsageError)?)),
            None => None,
        },
        allow_iperf3_unauthenticated: a.allow_iperf3_unauthenticated,
        hooks: match &a.hooks {
            Some(_) if !cfg!(feature = "hooks") => {
                return Err(crate::cli::not_in_this_build("--hooks", "hooks").into());
            }
            Some(p) => Some(Arc::new(HookSet::load(p).map_err(UsageError)?)),
            None => None,
        },
        ..ServerConfig::default()
    };
    cfg.limits.max_duration_ms = u64::try_from(a.max_duration.as_millis()).unwrap_or(u64::MAX);
    cfg.limits.max_streams = a.max_streams;
    cfg.limits.max_rate_bps = a.max_rate;
    cfg.limits.max_write_size = a.max_write_size;
    cfg.limits.max_socket_buffer = a.max_socket_buffer;
    cfg.max_connections_per_address = a.max_connections_per_address;
    cfg.max_handshakes_per_address = a.max_handshakes_per_address;
    cfg.budget.streams = a.max_total_streams;
    if let Some(b) = a.max_total_buffer {
        if b == 0 {
            return Err(UsageError("--max-total-buffer must be above zero".into()).into());
        }
        cfg.budget.buffer_bytes = b;
    }
    if a.fleet_agent {
        let interrupt = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, interrupt.clone())?;
        }
        let runner = super::order::Runner {
            limits: cfg.limits.clone(),
            interrupt,
        };
        cfg.fleet_agent = Some(Arc::new(crate::session::server::order::Agent::new(
            Arc::new(runner),
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
    if let (Some(addr), Some(m)) = (a.metrics, metrics) {
        let bound = super::metrics::spawn(addr, m)?;
        eprintln!("linerate serve: metrics at http://{bound}/metrics");
    }
    server.run()?;
    Ok(ExitCode::SUCCESS)
}
