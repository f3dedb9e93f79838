//! Headline figures derived from the two ends' reports.
//!
//! Definitions:
//! * throughput at an end = payload bytes × 8 / time from the window start to that end's last
//!   byte (so a receiver that drains late is not credited with idle time);
//! * service demand (netperf's definition) = CPU utilisation (fraction of all CPUs) × CPU count
//!   × window length in µs / KB moved by that end (1 KB = 1024 bytes): µs of CPU per KB;
//! * ttcp's figures: µs per I/O call and calls per second over that end's active time;
//! * UDP loss = datagrams the sender sent that the receiver never got: the gaps in the
//!   sequence numbers the receiver saw, plus those sent after the last one that arrived
//!   (the sender's count against the receiver's highest sequence number), over the distinct
//!   datagrams received plus those lost;
//! * datagrams are what linerate's sockets sent and received; packets are what the
//!   interfaces at the two ends counted. With UDP GSO/GRO (loopback, veth, and NICs that
//!   segment in hardware) one packet can carry up to 64 datagrams, so both are reported, with
//!   the control connection's own packets taken out of the interface counts.

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
    /// UDP datagrams per second sent (the socket's count, not interface packets: see
    /// `sender_interface_pps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_pps: Option<f64>,
    /// UDP datagrams per second received (the socket's count, not interface packets: see
    /// `receiver_interface_pps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_pps: Option<f64>,
    /// UDP: packets per second the sender's interface sent over the sender's window, the
    /// control connection's own taken out. Below `sender_pps` when segmentation offload (UDP
    /// GSO) put several datagrams in one packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_interface_pps: Option<f64>,
    /// UDP: packets per second the receiver's interface received over the receiver's
    /// window, the control connection's own taken out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_interface_pps: Option<f64>,
    /// UDP: datagrams sent per packet the sender's interface sent (1 without offload; up to
    /// 64 with UDP GSO through loopback or veth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_datagrams_per_packet: Option<f64>,
    /// UDP: datagrams received per packet the receiver's interface received (up to 64 with
    /// UDP GRO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_datagrams_per_packet: Option<f64>,
    /// UDP: the interface counts behind the `_interface_pps` figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_packets: Option<InterfacePackets>,
    /// TCP retransmitted segments by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP receiver accounting, as the receiver counted it (`lost` there is the sequence
    /// gaps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpRxReport>,
    /// UDP: datagrams sent after the last one that arrived and never received, from the
    /// sender's count of datagrams sent against the receiver's highest sequence number; no
    /// sequence gap shows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_end: Option<u64>,
    /// UDP: all datagrams lost, the sequence gaps (`udp.lost`) plus `lost_at_end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_datagrams: Option<u64>,
    /// UDP loss, percent of datagrams sent: `lost_datagrams` over the distinct datagrams
    /// received plus `lost_datagrams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
}

/// The interface counts of one UDP flow over each end's measured window: packets as the
/// interfaces counted them (all their traffic: this flow, the control connection, and
/// anything else on that interface at the time), and the control connection's own TCP
/// segments, which the `_interface_pps` figures leave out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterfacePackets {
    /// The sender's interface toward the receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_interface: Option<String>,
    /// Packets it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_tx_packets: Option<u64>,
    /// Of those, the control connection's segments (on loopback, both of its directions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_control_packets: Option<u64>,
    /// The receiver's interface toward the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_interface: Option<String>,
    /// Packets it received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_rx_packets: Option<u64>,
    /// Of those, the control connection's segments (on loopback, both of its directions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_control_packets: Option<u64>,
}

/// One end's cost figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EndSummary {
    /// Client or server.
    pub role: Role,
    /// CPUs on that host; absent when the end did not say (an iperf3 server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
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
    /// send and receive calls; absent when the end did not count them (an iperf3 server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_calls: Option<u64>,
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
    let both = direction == Direction::Both;
    if direction.client_sends() {
        flows.push(flow(FlowDirection::ClientToServer, client, server, both));
    }
    if direction.client_receives() {
        if let Some(s) = server {
            flows.push(flow(FlowDirection::ServerToClient, s, Some(client), both));
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

fn flow(
    dir: FlowDirection,
    sender: &SideReport,
    receiver: Option<&SideReport>,
    both_ways: bool,
) -> FlowSummary {
    let st = &sender.totals;
    let rt = receiver.map(|r| &r.totals);
    let udp = rt.and_then(|t| t.udp_rx.clone());
    let lost_at_end = match (&udp, receiver) {
        (Some(u), Some(r)) => lost_after_last(sender, r, u),
        _ => None,
    };
    let lost_datagrams = udp
        .as_ref()
        .map(|u| u.lost.saturating_add(lost_at_end.unwrap_or(0)));
    let loss_percent = udp.as_ref().zip(lost_datagrams).and_then(|(u, lost)| {
        let sent = u.packets.saturating_sub(u.duplicates).saturating_add(lost);
        (sent > 0).then(|| lost as f64 * 100.0 / sent as f64)
    });
    let wire = match (&udp, receiver) {
        (Some(_), Some(r)) => Some(interface_packets(sender, r, both_ways)),
        _ => None,
    };
    let ends = wire.as_ref().map(|w| &w.1);
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
        sender_interface_pps: ends.and_then(|e| e.sender_pps),
        receiver_interface_pps: ends.and_then(|e| e.receiver_pps),
        sender_datagrams_per_packet: ends.and_then(|e| ratio(st.tx_packets, e.sender_packets)),
        receiver_datagrams_per_packet: ends
            .and_then(|e| ratio(rt.and_then(|t| t.rx_packets), e.receiver_packets)),
        interface_packets: wire.map(|w| w.0),
        retransmits: st.retransmits,
        udp,
        lost_at_end,
        lost_datagrams,
        loss_percent,
    }
}

fn ratio(datagrams: Option<u64>, packets: Option<u64>) -> Option<f64> {
    let p = packets.filter(|&p| p > 0)?;
    Some(datagrams? as f64 / p as f64)
}

/// Datagrams sent after the last one the receiver got, over all streams of a flow.
///
/// Per stream, from the sender's `udp_seq_end` (datagrams sent since the test began) and the
/// receiver's `highest_seq`: `seq_end − (highest + 1)`, at most what the sender sent in the
/// window (a receiver that got nothing lost the whole window, not the warm-up too). From a
/// peer older than protocol 1.3, without these, the estimate is the sender's count of the
/// window less the receiver's distinct datagrams and sequence gaps (exact without a warm-up;
/// with one, off by the datagrams in flight when the two ends took their baselines).
fn lost_after_last(sender: &SideReport, receiver: &SideReport, total: &UdpRxReport) -> Option<u64> {
    use linerate_wire::report::StreamRole;
    let rx_streams: Vec<_> = receiver
        .streams
        .iter()
        .filter(|s| s.role == StreamRole::Rx && s.udp_rx.is_some())
        .collect();
    let tx_streams: Vec<_> = sender
        .streams
        .iter()
        .filter(|s| s.role == StreamRole::Tx)
        .collect();
    // Per stream when both ends speak 1.3: every sender knows its count, and every receiver
    // that got anything knows its highest sequence number (an older one reports none).
    let per_stream = !rx_streams.is_empty()
        && tx_streams.iter().all(|t| t.udp_seq_end.is_some())
        && rx_streams.iter().all(|r| {
            r.udp_rx
                .as_ref()
                .is_some_and(|u| u.highest_seq.is_some() || u.packets == 0)
        })
        && tx_streams.len() == rx_streams.len();
    if per_stream {
        let mut tail = 0u64;
        for t in &tx_streams {
            let (Some(end), Some(r)) = (
                t.udp_seq_end,
                rx_streams.iter().find(|r| r.index == t.index),
            ) else {
                return None;
            };
            let got_to = r
                .udp_rx
                .as_ref()
                .and_then(|u| u.highest_seq)
                .map_or(0, |h| h.saturating_add(1));
            let window = t.packets.unwrap_or(0);
            tail = tail.saturating_add(end.saturating_sub(got_to).min(window));
        }
        return Some(tail);
    }
    let sent = sender.totals.tx_packets?;
    let accounted = total
        .packets
        .saturating_sub(total.duplicates)
        .saturating_add(total.lost);
    Some(sent.saturating_sub(accounted))
}

/// What [`interface_packets`] derives for the flow's figures: packets without the control
/// connection's, and their rates over each end's host-counter window.
#[derive(Debug, Default)]
struct WireFigures {
    sender_packets: Option<u64>,
    sender_pps: Option<f64>,
    receiver_packets: Option<u64>,
    receiver_pps: Option<f64>,
}

/// Whether `name` is a loopback interface (it counts each packet once sent and once
/// received, and carries both directions of every connection).
fn is_loopback(name: &str) -> bool {
    name == "lo"
}

/// The interface counts of a UDP flow at both ends. On loopback both directions of a test
/// cross the one interface, so with data both ways the packets cannot be split per flow and
/// the per-flow figures are left out.
fn interface_packets(
    sender: &SideReport,
    receiver: &SideReport,
    both_ways: bool,
) -> (InterfacePackets, WireFigures) {
    // (interface, packets, control packets, window) at one end, tx or rx side.
    let end = |r: &SideReport, tx: bool| {
        let hc = r.host_counters.as_ref()?;
        let name = hc.interface.clone()?;
        let st = hc.interface_stats.as_ref()?;
        let packets = if tx { st.tx_packets } else { st.rx_packets };
        let lo = is_loopback(&name);
        let control = r.control_segments.map(|c| match (lo, tx) {
            (true, _) => c.sent + c.received,
            (false, true) => c.sent,
            (false, false) => c.received,
        });
        Some((name, packets, control, hc.duration_ns, lo))
    };
    let s = end(sender, true);
    let r = end(receiver, false);
    let mut detail = InterfacePackets::default();
    let mut fig = WireFigures::default();
    if let Some((name, packets, control, ns, lo)) = s {
        detail.sender_interface = Some(name);
        detail.sender_tx_packets = Some(packets);
        detail.sender_control_packets = control;
        if !(lo && both_ways) {
            let p = packets.saturating_sub(control.unwrap_or(0));
            fig.sender_packets = Some(p);
            fig.sender_pps = per_sec(p, ns);
        }
    }
    if let Some((name, packets, control, ns, lo)) = r {
        detail.receiver_interface = Some(name);
        detail.receiver_rx_packets = Some(packets);
        detail.receiver_control_packets = control;
        if !(lo && both_ways) {
            let p = packets.saturating_sub(control.unwrap_or(0));
            fig.receiver_packets = Some(p);
            fig.receiver_pps = per_sec(p, ns);
        }
    }
    (detail, fig)
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
        sender_interface_pps: None,
        receiver_interface_pps: None,
        sender_datagrams_per_packet: None,
        receiver_datagrams_per_packet: None,
        interface_packets: None,
        retransmits: None,
        udp: t.udp_rx.clone(),
        lost_at_end: None,
        lost_datagrams: None,
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
    let cpu_count = r.cpu.as_ref().map(|c| c.cpu_count).or(r.host.cpu_count);
    // Both directions' counts, or none: a half-known count is not the end's count.
    let io_calls = t.tx_calls.zip(t.rx_calls).map(|(tx, rx)| tx + rx);
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
        us_per_call: io_calls
            .filter(|n| *n > 0 && active_ns > 0)
            .map(|n| active_ns as f64 / 1000.0 / n as f64),
        calls_per_sec: io_calls.and_then(|n| per_sec(n, active_ns)),
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

    use crate::model::fixtures;
    use linerate_wire::report::{StreamReport, StreamRole, Totals};

    /// An end that did not count its calls or say how many CPUs it has (an iperf3 server):
    /// the figures made of them are absent, not 0.
    #[test]
    fn uncounted_calls_and_cpus_are_absent() {
        let sec = 1_000_000_000;
        let t = Totals {
            duration_ns: sec,
            rx_bytes: 1000,
            rx_duration_ns: sec,
            ..Totals::default()
        };
        let mut s = fixtures::side(Role::Server, "b", 1, t);
        s.host.cpu_count = None;
        let e = end_summary(&s);
        assert_eq!((e.io_calls, e.cpu_count), (None, None));
        assert_eq!((e.us_per_call, e.calls_per_sec), (None, None));
        // One direction's count without the other's is not the end's count.
        s.totals.rx_calls = Some(10);
        assert_eq!(end_summary(&s).io_calls, None);
        s.totals.tx_calls = Some(0);
        let e = end_summary(&s);
        assert_eq!(e.io_calls, Some(10));
        assert_eq!(e.calls_per_sec, Some(10.0));
        assert_eq!(e.us_per_call, Some(100_000.0));
        // /proc/stat's count when the end measured its CPU.
        s.cpu = Some(fixtures::cpu(4, 10.0, 20.0));
        assert_eq!(end_summary(&s).cpu_count, Some(4));
    }

    /// A UDP sender of stream `index` that sent `window` datagrams in the window and
    /// `seq_end` since the test began.
    fn tx(index: u16, window: u64, seq_end: Option<u64>) -> StreamReport {
        let t = Totals {
            tx_packets: Some(window),
            ..Totals::default()
        };
        let mut s = fixtures::stream(StreamRole::Tx, &t, None, None);
        s.index = index;
        s.udp_seq_end = seq_end;
        s
    }

    /// A UDP receiver of stream `index` with `packets` datagrams, `gaps` lost in sequence
    /// gaps, and the highest sequence number seen.
    fn rx(index: u16, packets: u64, gaps: u64, highest: Option<u64>) -> StreamReport {
        let t = Totals {
            rx_packets: Some(packets),
            udp_rx: Some(UdpRxReport {
                packets,
                lost: gaps,
                highest_seq: highest,
                ..UdpRxReport::default()
            }),
            ..Totals::default()
        };
        let mut s = fixtures::stream(StreamRole::Rx, &t, None, None);
        s.index = index;
        s
    }

    fn ends(txs: Vec<StreamReport>, rxs: Vec<StreamReport>) -> (SideReport, SideReport) {
        let sum = |v: &[StreamReport], f: &dyn Fn(&StreamReport) -> u64| v.iter().map(f).sum();
        let sent: u64 = sum(&txs, &|s| s.packets.unwrap_or(0));
        let mut total = UdpRxReport::default();
        for r in &rxs {
            let u = r.udp_rx.as_ref().unwrap();
            total.packets += u.packets;
            total.lost += u.lost;
        }
        let mut sender = fixtures::side(
            Role::Client,
            "a",
            1,
            Totals {
                tx_packets: Some(sent),
                ..Totals::default()
            },
        );
        sender.streams = txs;
        let mut receiver = fixtures::side(
            Role::Server,
            "b",
            1,
            Totals {
                rx_packets: Some(total.packets),
                udp_rx: Some(total),
                ..Totals::default()
            },
        );
        receiver.streams = rxs;
        (sender, receiver)
    }

    fn lost_at_end(txs: Vec<StreamReport>, rxs: Vec<StreamReport>) -> Option<u64> {
        let (s, r) = ends(txs, rxs);
        let f = flow(FlowDirection::ClientToServer, &s, Some(&r), false);
        f.lost_at_end
    }

    #[test]
    fn loss_after_the_last_datagram_is_counted_per_stream() {
        // Stream 0 got everything; stream 1 stopped at 299 of 1000 (a gap of 5 below it).
        let got = lost_at_end(
            vec![tx(0, 1000, Some(1000)), tx(1, 1000, Some(1000))],
            vec![rx(0, 1000, 0, Some(999)), rx(1, 295, 5, Some(299))],
        );
        assert_eq!(got, Some(700));
        let (s, r) = ends(
            vec![tx(0, 1000, Some(1000)), tx(1, 1000, Some(1000))],
            vec![rx(0, 1000, 0, Some(999)), rx(1, 295, 5, Some(299))],
        );
        let f = flow(FlowDirection::ClientToServer, &s, Some(&r), false);
        assert_eq!(f.lost_datagrams, Some(705));
        assert!((f.loss_percent.unwrap() - 705.0 * 100.0 / 2000.0).abs() < 1e-9);
        // A stream that received nothing lost its whole window, not its warm-up: 1200 sent
        // since the start, 1000 of them in the window.
        assert_eq!(
            lost_at_end(vec![tx(0, 1000, Some(1200))], vec![rx(0, 0, 0, None)]),
            Some(1000)
        );
        // A receiver older than 1.3 (datagrams but no highest sequence number): the window's
        // count against the distinct datagrams and gaps.
        assert_eq!(
            lost_at_end(vec![tx(0, 1000, Some(1000))], vec![rx(0, 600, 10, None)]),
            Some(390)
        );
        // A sender older than 1.3: the same estimate.
        assert_eq!(
            lost_at_end(vec![tx(0, 1000, None)], vec![rx(0, 600, 10, Some(609))]),
            Some(390)
        );
        // Nothing lost: 0, never negative (duplicates and late ones do not count).
        assert_eq!(
            lost_at_end(
                vec![tx(0, 1000, Some(1000))],
                vec![rx(0, 1003, 0, Some(999))]
            ),
            Some(0)
        );
    }

    #[test]
    fn per_sec_never_divides_by_zero() {
        assert_eq!(per_sec(10, 0), None);
        assert_eq!(per_sec(10, 1_000_000_000), Some(10.0));
    }
}
