//! `linerate doctor [HOST]`: this host's settings (and with HOST the server's) that matter for
//! throughput, each with the command that would change it; changes nothing.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;

use anyhow::{anyhow, Context};

use super::write_out;
use crate::cli::doctor::DoctorArgs;
use crate::doctor::{checks, local_report, remote};
use crate::export;
use crate::model::doctor::DoctorRecord;
use crate::session::sockets;

/// Runs `linerate doctor`.
pub fn command(a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut warnings = Vec::new();
    let mut server = None;
    let mut rtt_us = None;
    let mut peer = None;
    let mut server_address = None;
    if let Some(host) = &a.host {
        let addr = resolve(host, a.port)?;
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
        buffer_bytes: a.window.unwrap_or(sockets::UDP_DEFAULT_RCVBUF),
        rtt_us,
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
        let mut s = serde_json::to_string_pretty(&rec)?;
        s.push('\n');
        s
    } else {
        export::doctor::render(&rec)
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve '{host}': check the host name"))?
        .next()
        .ok_or_else(|| anyhow!("'{host}' resolves to no address: check the host name"))
}
