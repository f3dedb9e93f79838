//! The record of `linerate doctor --json` (schema `docs/json-schema/doctor-v1.json`).

use linerate_wire::doctor::DoctorReport;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
