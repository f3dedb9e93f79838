//! The doctor's checks of the settings of this host, and with HOST of the server, that
//! matter for throughput, each with the command that would change it. It changes nothing.
//! The command is `app::doctor`, its record `model::doctor::DoctorRecord`, its rendering
//! `export::doctor`.
//!
//! * [`checks`] holds the rules (pure: values in, [`Finding`]s out), [`read`] the reading
//!   of sysctls, cpufreq, interface facts, IRQ affinity and the path MTU.
//! * With HOST, the client opens a control session by the connect path every test uses
//!   (`session::protocol::client::connect`), measures the RTT on it (TCP_INFO of the control
//!   connection after hello/welcome), and — when the server lists the `doctor` feature —
//!   sends `doctor_request` instead of a test; the server answers `doctor_report` with its
//!   own findings (checked toward the client, `session::server`) and `done`. A server
//!   without the feature is reported in a warning; this host's findings are still printed.
//! * The RTT and each end's link speed give the bandwidth-delay product that `tcp_rmem`
//!   and `tcp_wmem` are checked against.

pub mod checks;
pub mod read;
#[cfg(test)]
pub(crate) mod tests;

use std::net::IpAddr;

use linerate_wire::doctor::DoctorReport;

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
