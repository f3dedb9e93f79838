//! The doctor's checks of the settings of this host, and with HOST of the server, that
//! matter for throughput, each with the command that would change it. It changes nothing.
//! The command is `app::doctor`, its record `model::doctor::DoctorRecord`, its rendering
//! `export::doctor`.
//!
//! * [`checks`] holds the rules (pure: values in, [`Finding`]s out), [`read`] the reading
//!   of sysctls, cpufreq, interface facts, IRQ affinity and the path MTU.
//! * With HOST, the client opens a control session, measures the RTT on it (TCP_INFO of
//!   the control connection after hello/welcome), and — when the server lists the `doctor`
//!   feature — sends `doctor_request` instead of a test; the server answers `doctor_report`
//!   with its own findings (checked toward the client) and `done`. A server without the
//!   feature is reported in a warning; this host's findings are still printed.
//! * The RTT and each end's link speed give the bandwidth-delay product that `tcp_rmem`
//!   and `tcp_wmem` are checked against.

pub mod checks;
pub mod read;
#[cfg(test)]
pub(crate) mod tests;

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::Duration;

use anyhow::{anyhow, bail};
use linerate_wire::control::{self, Done, Hello, Message, ProtocolVersion};
use linerate_wire::doctor::{DoctorReport, DoctorRequest, Finding, Severity, MAX_FINDINGS};

use crate::session::conn::{self, ControlWriter, Debug};
use crate::session::sockets::{self, SockOpts};

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

/// Server side: answers a `doctor_request` from `peer` with this host's findings and
/// `done`. Returns the log line, or why it failed.
pub fn answer(w: &mut ControlWriter, peer: IpAddr, req: &DoctorRequest) -> Result<String, String> {
    let target = checks::Target {
        buffer_bytes: req.buffer_bytes.unwrap_or(sockets::UDP_DEFAULT_RCVBUF),
        rtt_us: req.rtt_us,
    };
    let (mut report, warnings) = local_report(Some(sockets::canonical(peer)), &target);
    // What the server could not read travels as findings: the client prints findings only.
    report
        .findings
        .extend(warnings.into_iter().map(|w| Finding {
            severity: Severity::Info,
            check: "doctor.unreadable".into(),
            what: w,
            value: None,
            fix: None,
        }));
    report.findings.truncate(MAX_FINDINGS);
    let n = report.findings.len();
    w.send(&Message::DoctorReport(report))
        .map_err(|e| format!("write failed: {e}"))?;
    let _ = w.send(&Message::Done(Done {}));
    Ok(format!("doctor: {n} findings sent"))
}

fn next_message(stream: &mut TcpStream, what: &str) -> anyhow::Result<Message> {
    match conn::read_frame(stream, control::MAX_CONTROL_FRAME) {
        Ok(Some(Message::Error(e))) => bail!("the server refused: {}", e.message),
        Ok(Some(m)) => Ok(m),
        Ok(None) => bail!("the server closed the connection before sending {what}"),
        Err(e) => bail!("no {what} from the server: {e}"),
    }
}

/// Client side: the server's findings (`None` with a warning when it does not offer them)
/// and the control connection's RTT.
pub fn remote(
    addr: SocketAddr,
    buffer_bytes: Option<u32>,
    timeout: Duration,
    auth: Option<&crate::session::auth::Credentials>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Option<DoctorReport>, Option<u32>)> {
    let mut stream = sockets::connect_tcp(addr, &SockOpts::default(), timeout).map_err(|e| {
        anyhow!("cannot reach a linerate server at {addr} ({e}): check that `linerate serve` runs there and that port {}/tcp is open", addr.port())
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut w = ControlWriter::new(stream.try_clone()?, "client", Debug(false))?;
    w.send(&Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: crate::software(),
        features: control::FEATURES.iter().map(|f| f.to_string()).collect(),
    }))?;
    let welcome = match next_message(&mut stream, "welcome")? {
        Message::Welcome(wl) => wl,
        Message::Reject(r) => bail!("the server refused the session: {}", r.message),
        other => bail!("protocol error: expected welcome, got {}", other.name()),
    };
    crate::session::auth::client_handshake(
        auth,
        &welcome,
        &addr.to_string(),
        &mut |m| w.send(m).map_err(Into::into),
        &mut |what| next_message(&mut stream, what),
        warnings,
    )?;
    let rtt_us = crate::sys::tcp_info::read_tcp_info(stream.as_fd())
        .ok()
        .map(|i| i.rtt_us)
        .filter(|&r| r > 0);
    if !welcome.features.iter().any(|f| f == "doctor") {
        warnings.push(format!(
            "the server at {addr} ({}) does not offer doctor: only this host was checked (upgrade linerate there)",
            welcome.software
        ));
        w.close();
        return Ok((None, rtt_us));
    }
    w.send(&Message::DoctorRequest(DoctorRequest {
        buffer_bytes,
        rtt_us,
    }))?;
    let mut report = match next_message(&mut stream, "doctor_report")? {
        Message::DoctorReport(r) => r,
        other => bail!(
            "protocol error: expected doctor_report, got {}",
            other.name()
        ),
    };
    report.findings.truncate(MAX_FINDINGS);
    w.close();
    Ok((Some(report), rtt_us))
}
