//! The result model: one [`RunRecord`] per test is the source of truth for every output.
//!
//! Exporters, the JSON schema (`docs/json-schema/run-v1.json`) and future stores are all built
//! from it. Units live in field names. A value that could not be measured is absent and the
//! reason is in `warnings`; nothing is ever a fake zero.

pub mod campaign;
pub mod changes;
pub mod check;
pub mod compare;
pub mod criteria;
pub mod diagnosis;
pub mod doctor;
pub mod dut;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod labels;
pub mod latency;
pub mod multicast;
pub mod plan;
pub mod profile;
pub mod repeat;
pub mod rr;
mod summary;
pub mod sweep;
pub mod trace;
pub mod units;

pub use repeat::{MetricSummary, RunSetRecord};
pub use rr::{HistogramBucket, LatencySummary, RrKind, RrSummary};
pub use summary::{
    summarize, EndSummary, FlowDirection, FlowSummary, InterfacePackets, RunSummary,
};

use linerate_wire::control::{Direction, ProtocolVersion, RecvMode, SendMode, Transport};
use linerate_wire::report::SideReport;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the [`RunRecord`] JSON layout. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Longest result file `report`, `compare` and `check` read, bytes (256 MiB): a record of
/// an hour-long test with intervals of 10 ms and its server's report is tens of MiB; more
/// is not a result of linerate's (`/dev/zero`, a wrong file), refused rather than read on.
pub const MAX_RESULT_FILE: u64 = 256 << 20;

/// The whole result of one stream test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// Layout version of this record ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// Start of the test, RFC 3339 UTC.
    pub started_at: String,
    /// The test as run (validated plan).
    pub plan: PlanRecord,
    /// Protocol version the session ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProtocolVersion>,
    /// True when the test was cut short (Ctrl-C, server limit); totals cover what ran.
    pub interrupted: bool,
    /// The headline figures, derived from both ends' reports.
    pub summary: RunSummary,
    /// The client's own measurements.
    pub client: SideReport,
    /// The server's measurements; absent if the server never sent them (see warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<SideReport>,
    /// Everything that could not be measured or looks wrong, one sentence each.
    pub warnings: Vec<String>,
    /// Request/response tests: transactions, latency and cost per transaction. When present
    /// the record is an RR test and `summary.flows` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrSummary>,
    /// What limited the test, with the numbers behind each verdict (`crate::diagnose`).
    /// Absent in records written before diagnoses existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<diagnosis::Diagnosis>,
    /// What the test's own packet capture showed (`--capture`); the diagnosis uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceRecord>,
    /// What the load did to light request/response probes beside it (`--latency`), with
    /// the responsiveness in round trips per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_under_load: Option<latency::LatencyUnderLoad>,
    /// The device under test's counters over the measured window (`--dut HOST`); absent
    /// when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<dut::DutCounters>,
    /// The server's capture as it came back with its results (`--capture`); kept only until
    /// it is written and analysed, never serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub server_capture: Option<linerate_wire::control::ReturnedCapture>,
    /// Why the test failed after it started (the server ended it or vanished, sent no
    /// results, flooded intervals; a byte count not reached in time). The record still
    /// holds what was measured, its warnings say the same, and the command exits 2 after
    /// printing it. Not serialized: `interrupted` and the warnings carry it in JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub failure: Option<String>,
}

/// Most of the server's warnings a record quotes.
pub const MAX_SERVER_WARNINGS: usize = 32;

impl RunRecord {
    /// The record of a test from both ends' reports: the summary derived from them
    /// ([`summarize`]) and each end's warnings added to `warnings` with its name (at most
    /// [`MAX_SERVER_WARNINGS`] of the server's, each cut to the quoting limit). The
    /// diagnosis is left to `crate::diagnose`.
    pub fn from_reports(
        plan: PlanRecord,
        started_at: String,
        protocol: Option<ProtocolVersion>,
        interrupted: bool,
        client: SideReport,
        server: Option<SideReport>,
        mut warnings: Vec<String>,
    ) -> RunRecord {
        for w in &client.warnings {
            warnings.push(format!("client: {w}"));
        }
        if let Some(s) = &server {
            for w in s.warnings.iter().take(MAX_SERVER_WARNINGS) {
                let w = linerate_wire::text::clip(w, linerate_wire::text::MAX_PEER_TEXT);
                warnings.push(format!("server: {w}"));
            }
            if s.warnings.len() > MAX_SERVER_WARNINGS {
                warnings.push(format!(
                    "server: {} more warnings left out",
                    s.warnings.len() - MAX_SERVER_WARNINGS
                ));
            }
        }
        let summary = summarize(plan.direction, &client, server.as_ref());
        RunRecord {
            schema_version: SCHEMA_VERSION,
            tool_version: crate::software(),
            started_at,
            plan,
            protocol,
            interrupted,
            summary,
            client,
            server,
            warnings,
            rr: None,
            diagnosis: None,
            trace: None,
            latency_under_load: None,
            dut: None,
            server_capture: None,
            failure: None,
        }
    }
}

/// Echo of the validated test plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanRecord {
    /// Server as given, host:port.
    pub server: String,
    /// TCP or UDP.
    pub transport: Transport,
    /// Data direction seen from the client.
    pub direction: Direction,
    /// Parallel streams per direction.
    pub streams: u16,
    /// Fixed test time, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Fixed byte count per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Write (TCP) or datagram payload (UDP) size, bytes.
    pub write_size: u32,
    /// Requested SO_SNDBUF on the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_sndbuf: Option<u32>,
    /// Requested SO_RCVBUF on the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rcvbuf: Option<u32>,
    /// Requested SO_SNDBUF on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_sndbuf: Option<u32>,
    /// Requested SO_RCVBUF on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_rcvbuf: Option<u32>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// TCP_MAXSEG requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Congestion control requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TOS byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// Paced rate per direction, bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// Interval length, milliseconds.
    pub interval_ms: u64,
    /// Warm-up left out of totals, milliseconds.
    pub omit_ms: u64,
    /// CPU the client's data threads were pinned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu: Option<u32>,
    /// CPU the server's data threads were pinned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<u32>,
    /// UDP GSO/GRO allowed.
    pub udp_offload: bool,
    /// The path's link or shaped rate as given with `--link-rate`, bits per second: a hint
    /// for the diagnosis where no interface shows the bottleneck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_rate_bps: Option<u64>,
    /// How the TCP senders handed data to the kernel (`--zerocopy`, `--sendfile`); absent:
    /// a copying send.
    #[serde(default, skip_serializing_if = "SendMode::is_copy")]
    pub send_mode: SendMode,
    /// How the TCP receivers took data (`--no-rx-copy`); absent: a copying receive.
    #[serde(default, skip_serializing_if = "RecvMode::is_copy")]
    pub recv_mode: RecvMode,
}

/// One line of `--json-stream` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The test started.
    Start {
        /// The plan.
        plan: PlanRecord,
        /// RFC 3339 start time.
        started_at: String,
    },
    /// One interval at one end.
    Interval {
        /// "client" or "server".
        side: linerate_wire::report::Role,
        /// The interval.
        interval: linerate_wire::report::IntervalReport,
    },
    /// A warning.
    Warning {
        /// The text.
        message: String,
    },
    /// The final record.
    End {
        /// The record.
        record: Box<RunRecord>,
    },
}
