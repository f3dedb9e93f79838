//! Headline figures derived from the two ends' reports.
//!
//! Definitions:
//! * throughput at an end = payload bytes × 8 / time from the window start to that end's last
//!   byte (so a receiver that drains late is not credited with idle time);
//! * service demand (netperf's definition) = CPU utilisation (fraction of all CPUs) × CPU count
//!   × window length in µs / KB moved by that end (1 KB = 1024 bytes): µs of CPU per KB;
//! * ttcp's figures: µs per I/O call and calls per second over that end's active time.

use linerate_wire::control::Direction;
use linerate_wire::report::{Role, SideReport, UdpRxReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which way a flow goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowDirection {
    /// Client sends.
    ClientToServer,
    /// Server sends.
    ServerToClient,
}

/// One direction of data, seen at both of its ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowSummary {
    /// Which way.
    pub direction: FlowDirection,
    /// Payload bytes the sender wrote.
    pub sender_bytes: u64,
    /// Payload bytes the receiver read; absent when the receiver's report is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_bytes: Option<u64>,
    /// Sender's active time, nanoseconds.
    pub sender_duration_ns: u64,
    /// Receiver's active time, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_duration_ns: Option<u64>,
    /// Sender throughput, payload bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_bps: Option<f64>,
    /// Receiver throughput, payload bits per second: the figure to quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_bps: Option<f64>,
    /// UDP datagrams per second sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_pps: Option<f64>,
    /// UDP datagrams per second received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_pps: Option<f64>,
    /// TCP retransmitted segments by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP receiver accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpRxReport>,
    /// UDP loss, percent of datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
}

/// One end's cost figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EndSummary {
    /// Client or server.
    pub role: Role,
    /// CPUs on that host.
    pub cpu_count: u32,
    /// System-wide CPU utilisation, percent of all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_util_percent: Option<f64>,
    /// Busiest single CPU, percent of that CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_cpu_util_percent: Option<f64>,
    /// µs of CPU per KB moved by this end (netperf's service demand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_demand_us_per_kb: Option<f64>,
    /// CPU used by linerate's own test threads, percent of one CPU over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_cpu_percent: Option<f64>,
    /// send and receive calls.
    pub io_calls: u64,
    /// µs per I/O call (ttcp's msec/call × 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_call: Option<f64>,
    /// I/O calls per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_sec: Option<f64>,
    /// SO_SNDBUF granted on the first sending stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_bytes: Option<u32>,
    /// SO_RCVBUF granted on the first receiving stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_bytes: Option<u32>,
    /// Length of the measured window, nanoseconds.
    pub duration_ns: u64,
}

/// Headline figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// One per direction that carried data.
    pub flows: Vec<FlowSummary>,
    /// The client's costs.
    pub client: EndSummary,
    /// The server's costs, when it reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<EndSummary>,
}

fn per_sec(count: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| count as f64 * 1e9 / ns as f64)
}

/// Builds the summary from the reports.
pub fn summarize(
    direction: Direction,
    client: &SideReport,
    server: Option<&SideReport>,
) -> RunSummary {
    let mut flows = Vec::new();
    if direction.client_sends() {
        flows.push(flow(FlowDirection::ClientToServer, client, server));
    }
    if direction.client_receives() {
        if let Some(s) = server {
            flows.push(flow(FlowDirection::ServerToClient, s, Some(client)));
        } else {
            // The server's sender report is missing: the receiver side still tells a lot.
            flows.push(receiver_only_flow(client));
        }
    }
    RunSummary {
        flows,
        client: end_summary(client),
        server: server.map(end_summary),
    }
}

fn flow(dir: FlowDirection, sender: &SideReport, receiver: Option<&SideReport>) -> FlowSummary {
    let st = &sender.totals;
    let rt = receiver.map(|r| &r.totals);
    let udp = rt.and_then(|t| t.udp_rx.clone());
    let loss_percent = udp.as_ref().and_then(|u| {
        let sent = u.packets.saturating_sub(u.duplicates) + u.lost;
        (sent > 0).then(|| u.lost as f64 * 100.0 / sent as f64)
    });
    FlowSummary {
        direction: dir,
        sender_bytes: st.tx_bytes,
        receiver_bytes: rt.map(|t| t.rx_bytes),
        sender_duration_ns: st.tx_duration_ns,
        receiver_duration_ns: rt.map(|t| t.rx_duration_ns),
        sender_bps: per_sec(st.tx_bytes * 8, st.tx_duration_ns),
        receiver_bps: rt.and_then(|t| per_sec(t.rx_bytes * 8, t.rx_duration_ns)),
        sender_pps: st.tx_packets.and_then(|p| per_sec(p, st.tx_duration_ns)),
        receiver_pps: rt.and_then(|t| t.rx_packets.and_then(|p| per_sec(p, t.rx_duration_ns))),
        retransmits: st.retransmits,
        udp,
        loss_percent,
    }
}

fn receiver_only_flow(receiver: &SideReport) -> FlowSummary {
    let t = &receiver.totals;
    FlowSummary {
        direction: FlowDirection::ServerToClient,
        sender_bytes: 0,
        receiver_bytes: Some(t.rx_bytes),
        sender_duration_ns: 0,
        receiver_duration_ns: Some(t.rx_duration_ns),
        sender_bps: None,
        receiver_bps: per_sec(t.rx_bytes * 8, t.rx_duration_ns),
        sender_pps: None,
        receiver_pps: t.rx_packets.and_then(|p| per_sec(p, t.rx_duration_ns)),
        retransmits: None,
        udp: t.udp_rx.clone(),
        loss_percent: None,
    }
}

/// Service demand in µs of CPU per KB: netperf's `calc_service_demand`.
pub fn service_demand_us_per_kb(
    util_percent: f64,
    cpu_count: u32,
    duration_ns: u64,
    bytes: u64,
) -> Option<f64> {
    if bytes == 0 || duration_ns == 0 {
        return None;
    }
    let cpu_us = util_percent / 100.0 * f64::from(cpu_count) * duration_ns as f64 / 1000.0;
    Some(cpu_us / (bytes as f64 / 1024.0))
}

fn end_summary(r: &SideReport) -> EndSummary {
    let t = &r.totals;
    let bytes = t.tx_bytes + t.rx_bytes;
    let cpu_count = r.cpu.as_ref().map_or(r.host.cpu_count, |c| c.cpu_count);
    let io_calls = t.tx_calls + t.rx_calls;
    let active_ns = t.tx_duration_ns.max(t.rx_duration_ns);
    EndSummary {
        role: r.role,
        cpu_count,
        cpu_util_percent: r.cpu.as_ref().map(|c| c.util_percent),
        busiest_cpu_util_percent: r.cpu.as_ref().map(|c| c.busiest_cpu_util_percent),
        service_demand_us_per_kb: r.cpu.as_ref().and_then(|c| {
            service_demand_us_per_kb(c.util_percent, c.cpu_count, t.duration_ns, bytes)
        }),
        tool_cpu_percent: r.process_cpu.as_ref().and_then(|p| {
            (t.duration_ns > 0)
                .then(|| (p.user_ns + p.system_ns) as f64 * 100.0 / t.duration_ns as f64)
        }),
        io_calls,
        us_per_call: (io_calls > 0 && active_ns > 0)
            .then(|| active_ns as f64 / 1000.0 / io_calls as f64),
        calls_per_sec: per_sec(io_calls, active_ns),
        sndbuf_bytes: r
            .streams
            .iter()
            .find(|s| s.role == linerate_wire::report::StreamRole::Tx)
            .and_then(|s| s.sndbuf_bytes),
        rcvbuf_bytes: r
            .streams
            .iter()
            .find(|s| s.role == linerate_wire::report::StreamRole::Rx)
            .and_then(|s| s.rcvbuf_bytes),
        duration_ns: t.duration_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_demand_matches_netperf_definition() {
        // 50% of 2 CPUs for 10 s = 10 CPU-seconds = 1e7 µs; 1 GiB = 1,048,576 KB.
        // 1e7 / 1,048,576 = 9.5367 µs/KB.
        let sd = service_demand_us_per_kb(50.0, 2, 10_000_000_000, 1 << 30).unwrap();
        assert!((sd - 9.536_743).abs() < 1e-5, "{sd}");
        assert_eq!(service_demand_us_per_kb(50.0, 2, 0, 1), None);
        assert_eq!(service_demand_us_per_kb(50.0, 2, 1, 0), None);
    }

    #[test]
    fn per_sec_never_divides_by_zero() {
        assert_eq!(per_sec(10, 0), None);
        assert_eq!(per_sec(10, 1_000_000_000), Some(10.0));
    }
}
