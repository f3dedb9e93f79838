//! `linerate doctor [HOST]`: the settings of this host, and with HOST of the server, that
//! matter for throughput, each with the command that would change it. It changes nothing.
//!
//! * [`checks`] holds the rules (pure: values in, [`Finding`]s out), [`read`] the reading
//!   of sysctls, cpufreq, interface facts, IRQ affinity and the path MTU.
//! * With HOST, the client opens a control session by the connect path every test uses
//!   (`session::client::connect`), measures the RTT on it (TCP_INFO of the control
//!   connection after hello/welcome), and — when the server lists the `doctor` feature —
//!   sends `doctor_request` instead of a test; the server answers `doctor_report` with its
//!   own findings (checked toward the client, `session::server`) and `done`. A server
//!   without the feature is reported in a warning; this host's findings are still printed.
//! * The RTT and each end's link speed give the bandwidth-delay product that `tcp_rmem`
//!   and `tcp_wmem` are checked against.

pub mod checks;
pub mod read;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use linerate_wire::control::Feature;
use linerate_wire::doctor::{DoctorReport, DoctorRequest, Severity};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cli::units;
use crate::model::plan::{Debug, UDP_DEFAULT_RCVBUF};
use crate::session::client;
use crate::sys::sockets;

/// `linerate doctor` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// A host running `linerate serve`: check its settings too, and the path to it.
    pub host: Option<String>,
    /// The server's port.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// The socket buffer size you mean to request (-w), checked against rmem_max and
    /// wmem_max on both ends; default: linerate's 4 MiB UDP receive buffer.
    #[arg(short = 'w', long, value_parser = units::parse_size32)]
    pub window: Option<u32>,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
    /// Time to wait for the server.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: Duration,
    #[command(flatten)]
    pub auth: crate::cli::args::AuthArgs,
}

/// The output of `linerate doctor --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DoctorRecord {
    /// "linerate x.y.z".
    pub tool_version: String,
    /// The server as given (host:port), with HOST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_address: Option<String>,
    /// Smoothed RTT of the control connection to the server, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    /// This host's findings.
    pub local: DoctorReport,
    /// The server's findings, when it offers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<DoctorReport>,
    /// What could not be checked, and why.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// This host's report, checked toward `peer`.
pub fn local_report(peer: Option<IpAddr>, target: &checks::Target) -> (DoctorReport, Vec<String>) {
    let (inputs, warnings) = read::host_inputs(peer);
    let report = DoctorReport {
        host: Some(crate::sys::host::host_info(&crate::software())),
        interface: inputs.interface.as_ref().map(|i| i.name.clone()),
        findings: checks::checks(&inputs, target),
    };
    (report, warnings)
}

/// Client side: the server's findings (`None` with a warning when it does not offer them)
/// and the control connection's RTT, over the connect path every test uses.
pub fn remote(
    addr: SocketAddr,
    buffer_bytes: Option<u32>,
    timeout: Duration,
    auth: Option<&crate::session::auth::Credentials>,
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

/// Runs `linerate doctor`.
pub fn command(a: &DoctorArgs) -> anyhow::Result<ExitCode> {
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
        render(&rec)
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Info => "info",
        Severity::Warn => "warn",
        Severity::Unknown => "?",
    }
}

fn section(title: &str, r: &DoctorReport, out: &mut String) {
    let host = r.host.as_ref();
    let name = host
        .and_then(|h| h.hostname.clone())
        .unwrap_or_else(|| "-".into());
    let kernel = host
        .and_then(|h| h.kernel.clone())
        .map_or(String::new(), |k| format!(", kernel {k}"));
    let iface = r
        .interface
        .as_ref()
        .map_or(String::new(), |i| format!(", interface {i}"));
    out.push_str(&format!("{title}: {name}{kernel}{iface}\n"));
    for f in &r.findings {
        let value = f
            .value
            .as_ref()
            .map_or(String::new(), |v| format!(" = {v}"));
        out.push_str(&format!(
            "  [{:<4}] {}{value}: {}\n",
            severity_name(f.severity),
            f.check,
            f.what
        ));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("         fix: {fix}\n"));
        }
    }
}

/// The human-readable report: this host, then the server, then warnings.
pub fn render(rec: &DoctorRecord) -> String {
    let mut out = String::new();
    section("this host", &rec.local, &mut out);
    if let Some(s) = &rec.server {
        out.push('\n');
        let title = format!("server {}", rec.server_address.as_deref().unwrap_or(""));
        section(title.trim_end(), s, &mut out);
    }
    if let Some(rtt) = rec.rtt_us {
        out.push_str(&format!(
            "\nRTT to the server: {rtt} us (control connection)\n"
        ));
    }
    let warns = std::iter::once(&rec.local)
        .chain(rec.server.as_ref())
        .flat_map(|r| &r.findings)
        .filter(|f| f.severity == Severity::Warn)
        .count();
    out.push_str(&format!(
        "\n{warns} warning(s). doctor changes nothing: run a fix as root on the host it is listed under.\n"
    ));
    for w in &rec.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
