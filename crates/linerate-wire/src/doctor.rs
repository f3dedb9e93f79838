//! Findings of `linerate doctor`: the settings of a host that matter for throughput, each
//! with the value measured and the command that would change it.
//!
//! A server that lists the `doctor` feature (protocol 1.1) answers a `doctor_request` with a
//! `doctor_report` holding its own findings, so `linerate doctor HOST` shows both ends.
//! Doctor never changes a setting: `fix` is a command for a person to run (as root).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::report::HostInfo;

/// At most this many findings are accepted from a peer (a host has a few dozen at most).
pub const MAX_FINDINGS: usize = 512;

/// How much a finding matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The setting is fine for what linerate measures.
    Ok,
    /// Worth knowing; not wrong in itself.
    Info,
    /// Likely to limit or distort a measurement.
    Warn,
    /// A severity this build does not know (from a newer peer).
    #[serde(other)]
    Unknown,
}

/// One checked setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// Stable identifier of the check, e.g. `net.core.rmem_max`, `cpu.governor`,
    /// `interface.offloads`.
    pub check: String,
    /// What was found and why it matters, one or two sentences.
    pub what: String,
    /// The measured value as text (e.g. "212992", "4096 131072 6291456", "powersave on 2 of
    /// 8 CPUs"); absent when the setting could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The exact command that would change it (run as root); absent when nothing needs
    /// changing or no single command fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Client → server (protocol 1.1, feature `doctor`), instead of `test_request`: report your
/// settings. The server answers [`DoctorReport`] and ends the session with `done`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DoctorRequest {
    /// The socket buffer size, bytes, the client means to request on the server (`-w`,
    /// `-S`), checked against the server's `rmem_max`/`wmem_max`; absent: linerate's UDP
    /// receive default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u32>,
    /// Smoothed RTT the client measured on the control connection, microseconds; used for
    /// the bandwidth-delay product in the server's `tcp_rmem`/`tcp_wmem` checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
}

/// Server → client (protocol 1.1, feature `doctor`): the server's findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DoctorReport {
    /// The server host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// The interface the server reaches the client through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Its findings, at most [`MAX_FINDINGS`].
    #[serde(default)]
    pub findings: Vec<Finding>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_json_shape_and_defaults() {
        let f = Finding {
            severity: Severity::Warn,
            check: "net.core.rmem_max".into(),
            what: "w".into(),
            value: Some("212992".into()),
            fix: None,
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["severity"], "warn");
        assert!(v.get("fix").is_none());
        let back: Finding =
            serde_json::from_str(r#"{"severity":"critical","check":"x","what":"y","extra":1}"#)
                .unwrap();
        assert_eq!(back.severity, Severity::Unknown);
        assert_eq!(back.value, None);
        let r: DoctorReport = serde_json::from_str("{}").unwrap();
        assert!(r.findings.is_empty() && r.host.is_none());
        let q: DoctorRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(q, DoctorRequest::default());
    }
}
