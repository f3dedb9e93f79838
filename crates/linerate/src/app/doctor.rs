//! `linerate doctor [HOST]`: this host's settings (and with HOST the server's) that matter for
//! throughput, each with the command that would change it; changes nothing.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use linerate_wire::control::Feature;
use linerate_wire::doctor::{DoctorReport, DoctorRequest};

use super::write_out;
use crate::cli::doctor::DoctorArgs;
use crate::doctor::{checks, local_report};
use crate::export;
use crate::model::doctor::DoctorRecord;
use crate::model::plan::{Debug, UDP_DEFAULT_RCVBUF};
use crate::session::protocol::client;
use crate::sys::sockets;

/// Runs `linerate doctor`.
pub fn command(a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    a.store.validate()?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut warnings = Vec::new();
    let mut server = None;
    let mut rtt_us = None;
    let mut peer = None;
    let mut server_address = None;
    if let Some(host) = &a.host {
        let addr = client::resolve(host, a.port)?;
        peer = Some(sockets::canonical(addr.ip()));
        server_address = Some(format!("{host}:{}", a.port));
        let creds = a.auth.credentials()?;
        let (r, rtt) = remote(
            addr,
            a.window,
            a.connect_timeout,
            creds.as_ref(),
            &mut warnings,
        )?;
        server = r;
        rtt_us = rtt;
    }
    let target = checks::Target {
        buffer_bytes: a.window.unwrap_or(UDP_DEFAULT_RCVBUF),
        rtt_us,
        crr_tps: a.crr_rate,
    };
    let (local, w) = local_report(peer, &target);
    warnings.extend(w);
    let rec = DoctorRecord {
        tool_version: crate::software(),
        server_address,
        rtt_us,
        local,
        server,
        warnings,
    };
    let text = if a.json {
        let mut s = linerate_wire::json::to_string_pretty(&rec)?;
        s.push('\n');
        s
    } else {
        export::doctor::render(&rec)
    };
    write_out(&text)?;
    super::keep::Keeper::new(&a.store, "doctor").keep_doctor(&rec, &started_at);
    Ok(ExitCode::SUCCESS)
}

/// Client side: the server's findings (`None` with a warning when it does not offer them)
/// and the control connection's RTT, over the connect path every test uses.
pub fn remote(
    addr: SocketAddr,
    buffer_bytes: Option<u32>,
    timeout: Duration,
    auth: Option<&crate::model::plan::Credentials>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Option<DoctorReport>, Option<u32>)> {
    let target = client::Target {
        addr,
        server: addr.to_string(),
        connect_timeout: timeout,
        debug: Debug(false),
        auth: auth.cloned(),
    };
    let c = client::connect(&target).map_err(refused)?;
    warnings.extend(c.warnings().iter().cloned());
    let rtt_us = c.rtt_us();
    if !c.features().has(Feature::Doctor) {
        let software = c.welcome().map_or("", |w| w.software.as_str());
        warnings.push(format!(
            "the server at {addr} ({software}) does not offer doctor: only this host was checked (upgrade linerate there)"
        ));
        return Ok((None, rtt_us));
    }
    let req = DoctorRequest {
        buffer_bytes,
        rtt_us,
    };
    let report = c.doctor(req).map_err(refused)?;
    Ok((Some(report), rtt_us))
}

/// The server's `error` as doctor words it: it refused the session, not a test.
fn refused(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<client::ClientError>() {
        Some(client::ClientError::Server { message, .. }) => {
            anyhow!("the server refused: {message}")
        }
        _ => e,
    }
}
