//! Output formats. Every exporter is a pure function of a [`RunRecord`]: no clock, no I/O, fixed
//! float formatting, so the same record always renders to the same bytes.
//!
//! * [`table`]: the default human output, plus live per-interval lines;
//! * [`json`]: the record as JSON (`--json`), one event per line (`--json-stream`), and the
//!   JSON Schemas committed under `docs/json-schema/`;
//! * [`csv`]: one row per flow, header first;
//! * [`netperf`]: netperf's classic TCP_STREAM / TCP_MAERTS / UDP_STREAM tables;
//! * [`ttcp`]: ttcp's `ttcp-t:` / `ttcp-r:` lines;
//! * [`analyze`] and [`tsg`]: `linerate analyze`'s table and CSV, and its time-sequence graphs
//!   (SVG), pure functions of an `AnalysisRecord`;
//! * [`profile`] and [`flamegraph`]: `--profile`'s table blocks, and the flame-graph SVG of a
//!   profile's folded stacks.
//!
//! Warnings are part of the record; only the table prints them. For the emulated formats the
//! caller writes them to stderr, after the classic block, as `# linerate:` lines
//! ([`classic_stderr_lines`]), so that scripts parsing stdout (or stdout and stderr merged,
//! as rsh does) see the tool's exact shape first.

pub mod align;
pub mod analyze;
pub mod campaign;
#[cfg(feature = "chart")]
pub mod chart;
#[cfg(feature = "store")]
pub mod check;
pub mod compare;
pub mod csv;
pub mod diagnosis;
pub mod doctor;
#[cfg(feature = "chart")]
pub mod flamegraph;
#[cfg(feature = "fleet")]
pub mod fleet;
#[cfg(feature = "store")]
pub mod history;
pub mod json;
pub mod multicast;
pub mod netperf;
pub mod profile;
pub mod prom;
pub mod repeat;
#[cfg(feature = "report")]
pub mod report;
pub mod rfc2544;
pub mod rr;
pub mod sweep;
pub mod table;
#[cfg(feature = "analyze")]
pub mod tsg;
pub mod ttcp;

#[cfg(all(test, feature = "analyze"))]
mod analyze_tests;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use crate::model::{EndSummary, FlowDirection, FlowSummary, RunRecord, StreamEvent};
use linerate_wire::report::SideReport;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Human-readable table (default).
    Table,
    /// The whole record as pretty JSON.
    Json,
    /// JSON lines: the caller streams interval events live; the final `end` event comes from here.
    JsonStream,
    /// One CSV row per flow.
    Csv,
    /// netperf's classic output.
    Netperf,
    /// ttcp's output.
    Ttcp,
}

impl Format {
    /// Every format, in the order they are documented.
    pub const ALL: [Format; 6] = [
        Format::Table,
        Format::Json,
        Format::JsonStream,
        Format::Csv,
        Format::Netperf,
        Format::Ttcp,
    ];

    /// The name accepted on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::JsonStream => "json-stream",
            Format::Csv => "csv",
            Format::Netperf => "netperf",
            Format::Ttcp => "ttcp",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat {
    /// What was given.
    pub given: String,
}

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown output format '{}': valid formats are ",
            self.given
        )?;
        for (i, format) in Format::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(format.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for Format {
    type Err = UnknownFormat;

    /// Case-insensitive; `json_stream` is accepted for `json-stream`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        Format::ALL
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| UnknownFormat {
                given: s.to_string(),
            })
    }
}

/// What the classic formats take besides the format: ttcp's `-f` unit, and whether repeated
/// runs print every run's netperf table before the table of means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Classic {
    /// ttcp's throughput unit (`-f`).
    pub ttcp_unit: ttcp::TtcpUnit,
    /// `--each-run`: with `--format netperf`, every run's table before the means.
    pub each_run: bool,
}

/// Renders `rec` in `format`. For [`Format::JsonStream`] this is only the final `end` event;
/// interval lines are emitted live by the caller with [`json::event_line`].
pub fn render(format: Format, rec: &RunRecord) -> String {
    render_with(format, rec, Classic::default())
}

/// [`render`] with the classic formats' choices.
pub fn render_with(format: Format, rec: &RunRecord, classic: Classic) -> String {
    match format {
        Format::Table => table::render(rec),
        Format::Json => json::render(rec),
        Format::JsonStream => json::event_line(&StreamEvent::End {
            record: Box::new(rec.clone()),
        }),
        Format::Csv => self::csv::render(rec),
        Format::Netperf => netperf::render(rec),
        Format::Ttcp => ttcp::render_with_unit(rec, classic.ttcp_unit),
    }
}

/// What the classic formats (netperf, ttcp) print on stderr after their block, each line
/// starting `# linerate: `: the warnings, ttcp's note on what its "I/O calls" count, and the
/// diagnosis.
pub fn classic_stderr_lines(format: Format, rec: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = rec
        .warnings
        .iter()
        .map(|w| format!("# linerate: warning: {w}"))
        .collect();
    if format == Format::Ttcp {
        out.extend(
            ttcp::call_notes(rec)
                .into_iter()
                .map(|n| format!("# linerate: note: {n}")),
        );
    }
    if let Some(d) = &rec.diagnosis {
        out.extend(diagnosis::comment_lines(d));
    }
    out
}

/// The end that wrote a flow's data, if its report arrived.
pub(crate) fn sender_report(rec: &RunRecord, dir: FlowDirection) -> Option<&SideReport> {
    match dir {
        FlowDirection::ClientToServer => Some(&rec.client),
        FlowDirection::ServerToClient => rec.server.as_ref(),
    }
}

/// The end that read a flow's data, if its report arrived.
pub(crate) fn receiver_report(rec: &RunRecord, dir: FlowDirection) -> Option<&SideReport> {
    match dir {
        FlowDirection::ClientToServer => rec.server.as_ref(),
        FlowDirection::ServerToClient => Some(&rec.client),
    }
}

/// Cost figures of the end that wrote a flow's data.
pub(crate) fn sender_end(rec: &RunRecord, dir: FlowDirection) -> Option<&EndSummary> {
    match dir {
        FlowDirection::ClientToServer => Some(&rec.summary.client),
        FlowDirection::ServerToClient => rec.summary.server.as_ref(),
    }
}

/// Cost figures of the end that read a flow's data.
pub(crate) fn receiver_end(rec: &RunRecord, dir: FlowDirection) -> Option<&EndSummary> {
    match dir {
        FlowDirection::ClientToServer => rec.summary.server.as_ref(),
        FlowDirection::ServerToClient => Some(&rec.summary.client),
    }
}

/// Bytes the sender wrote, or `None` when the sender's report is missing (the model then
/// carries a placeholder 0 in `sender_bytes`, which must not be shown as a measurement).
pub(crate) fn sender_bytes(rec: &RunRecord, flow: &FlowSummary) -> Option<u64> {
    sender_report(rec, flow.direction).map(|_| flow.sender_bytes)
}
