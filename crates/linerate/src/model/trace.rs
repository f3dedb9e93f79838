//! The result of a trace analysis (`linerate analyze --json`), the one source for every
//! output format. Its JSON Schema is generated from these types
//! (`docs/json-schema/analyze-v1.json`, `linerate schema analyze`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of this record's layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything `linerate analyze` found in one capture file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AnalysisRecord {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub software: String,
    /// The capture file as given.
    pub file: String,
    /// "pcap" or "pcapng".
    pub format: String,
    /// Records (packets) in the file.
    pub packets: u64,
    /// Packets that were TCP or UDP over IP and were analysed.
    pub packets_analysed: u64,
    /// Packets of other protocols (ARP, ICMP, non-first fragments ...), left out.
    pub packets_other: u64,
    /// Packets whose headers could not be decoded (cut short by the snap length, invalid).
    pub packets_undecodable: u64,
    /// Seconds from the first to the last packet.
    pub duration_s: Option<f64>,
    /// The bottleneck rate given with --link-rate, for RFC 6349's metrics.
    pub link_rate_bps: Option<u64>,
    /// TCP connections, in order of their first packet (with `--top N`, the N largest by
    /// payload bytes, then packets; the rest are summed in `others`).
    pub tcp: Vec<TcpConnection>,
    /// UDP flows (one per direction), in order of their first packet (with `--top N`, the
    /// N largest).
    pub udp: Vec<UdpFlow>,
    /// How many connections and flows each list shows at most (`--top`); absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<u32>,
    /// The connections and flows beyond the `top` largest, summed; absent when none was
    /// left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others: Option<OtherFlows>,
    /// Things the reader of the figures must know (offloads, gaps in the capture, caps).
    pub warnings: Vec<String>,
}

/// The connections and flows an analysis left out of its lists, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OtherFlows {
    /// TCP connections left out.
    pub tcp_connections: u64,
    /// Of those, with both SYNs seen.
    pub tcp_handshakes: u64,
    /// Of those, reset.
    pub tcp_reset: u64,
    /// Their packets, both directions.
    pub tcp_packets: u64,
    /// Their payload bytes, retransmissions included.
    pub tcp_bytes: u64,
    /// Their distinct payload bytes seen.
    pub tcp_unique_bytes: u64,
    /// Their retransmissions (Wireshark's flag).
    pub tcp_retransmissions: u64,
    /// Their out-of-order segments.
    pub tcp_out_of_order: u64,
    /// Their duplicate ACKs.
    pub tcp_duplicate_acks: u64,
    /// Their segments after data the capture never saw.
    pub tcp_lost_segments: u64,
    /// UDP flows left out.
    pub udp_flows: u64,
    /// Their datagrams.
    pub udp_packets: u64,
    /// Their payload bytes.
    pub udp_bytes: u64,
}

impl OtherFlows {
    /// Adds a connection.
    pub fn add_tcp(&mut self, c: &TcpConnection) {
        self.tcp_connections += 1;
        self.tcp_handshakes += u64::from(c.handshake_seen);
        self.tcp_reset += u64::from(c.reset);
        for d in [&c.a_to_b, &c.b_to_a] {
            self.tcp_packets += d.packets;
            self.tcp_bytes += d.bytes;
            self.tcp_unique_bytes += d.unique_bytes;
            self.tcp_retransmissions += d.retransmissions;
            self.tcp_out_of_order += d.out_of_order;
            self.tcp_duplicate_acks += d.duplicate_acks;
            self.tcp_lost_segments += d.lost_segments;
        }
    }

    /// Adds a UDP flow.
    pub fn add_udp(&mut self, f: &UdpFlow) {
        self.udp_flows += 1;
        self.udp_packets += f.packets;
        self.udp_bytes += f.bytes;
    }
}

/// One end of a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoint {
    /// IP address.
    pub addr: String,
    /// Port.
    pub port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.addr.contains(':') {
            write!(f, "[{}]:{}", self.addr, self.port)
        } else {
            write!(f, "{}:{}", self.addr, self.port)
        }
    }
}

/// One TCP connection: `a` opened it (sent the SYN), or sent its first captured packet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpConnection {
    /// 1-based number in the file (as in the table, the CSV and the graph file names).
    pub index: u32,
    /// The opener.
    pub a: Endpoint,
    /// The other end.
    pub b: Endpoint,
    /// Seconds from the start of the capture to the first packet.
    pub start_s: f64,
    /// Seconds from the first to the last packet.
    pub duration_s: f64,
    /// Both SYNs seen.
    pub handshake_seen: bool,
    /// A FIN seen in each direction, or a RST.
    pub closed: bool,
    /// A RST seen.
    pub reset: bool,
    /// SYN to the ACK of the SYN/ACK (Wireshark's initial RTT), milliseconds.
    pub handshake_rtt_ms: Option<f64>,
    /// Longest time without any packet of the connection, milliseconds (tcptrace's idletime).
    pub idle_max_ms: Option<f64>,
    /// From a to b.
    pub a_to_b: TcpDirection,
    /// From b to a.
    pub b_to_a: TcpDirection,
    /// What limited the connection, with the evidence behind each finding.
    pub findings: Vec<Finding>,
}

/// One direction of a TCP connection: the data it sent and the ACKs it received for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpDirection {
    /// Packets sent in this direction.
    pub packets: u64,
    /// Packets with payload.
    pub data_packets: u64,
    /// Packets with no payload and no SYN/FIN/RST.
    pub pure_acks: u64,
    /// Payload bytes, retransmissions included.
    pub bytes: u64,
    /// Distinct payload bytes seen: the sequence numbers the captured segments covered, each
    /// counted once (a gap the capture missed counts nothing).
    pub unique_bytes: u64,
    /// Highest sequence number reached minus the first: what the sender moved on by, gaps
    /// in the capture included (more than `unique_bytes` when the capture missed data).
    #[serde(default)]
    pub sequence_span_bytes: u64,
    /// Retransmitted segments, as Wireshark flags `tcp.analysis.retransmission` (fast and
    /// spurious retransmissions included).
    pub retransmissions: u64,
    /// Of those, fast retransmissions (after two or more duplicate ACKs).
    pub fast_retransmissions: u64,
    /// Of those, spurious ones: data the receiver had already acknowledged.
    pub spurious_retransmissions: u64,
    /// Payload bytes in retransmitted segments.
    pub retransmitted_bytes: u64,
    /// Segments that arrived out of order (Wireshark's `tcp.analysis.out_of_order`).
    pub out_of_order: u64,
    /// Segments after a gap the capture did not see (`tcp.analysis.lost_segment`).
    pub lost_segments: u64,
    /// Duplicate ACKs this direction sent (`tcp.analysis.duplicate_ack`).
    pub duplicate_acks: u64,
    /// Packets carrying SACK blocks, and the blocks they carried.
    pub sack_packets: u64,
    /// SACK blocks sent.
    pub sack_blocks: u64,
    /// Zero-window advertisements sent (`tcp.analysis.zero_window`).
    pub zero_windows: u64,
    /// Zero-window probes sent (`tcp.analysis.zero_window_probe`).
    pub window_probes: u64,
    /// MSS option of this direction's SYN.
    pub mss: Option<u16>,
    /// Window scale shift in use for this direction's advertisements.
    pub window_scale: Option<u8>,
    /// Advertised receive window (scaled), bytes: smallest, largest, time-weighted mean.
    pub window: Option<WindowStats>,
    /// The advertised window over time: up to 256 (seconds, bytes) points.
    pub window_series: Vec<(f64, u64)>,
    /// Largest amount of data in flight (sent, not yet acknowledged), bytes.
    pub max_in_flight_bytes: u64,
    /// RTT of this direction's data from the ACKs that came back (tcptrace's samples: an
    /// ACK that ends exactly at a segment never retransmitted, Karn's rule).
    pub rtt: Option<RttStats>,
    /// The ACK delay distribution: for every pure ACK of a lone segment (at most one MSS,
    /// nothing else in flight), the time from that segment to its ACK less the minimum RTT.
    pub ack_delay: Option<AckDelayStats>,
    /// First to last payload byte, seconds.
    pub data_duration_s: Option<f64>,
    /// `unique_bytes` (the bytes seen, not the sequence span) over the connection's
    /// duration (tcptrace's throughput), bits/s.
    pub throughput_bps: Option<f64>,
    /// Where the time of this direction's transfer went (from its first data segment until
    /// its data was acknowledged).
    pub time: Option<TimeShares>,
    /// RFC 6349 metrics (with --link-rate).
    pub rfc6349: Option<Rfc6349>,
}

/// Advertised window figures, bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WindowStats {
    /// Smallest.
    pub min_bytes: u64,
    /// Largest.
    pub max_bytes: u64,
    /// Mean over time.
    pub mean_bytes: f64,
}

/// RTT samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RttStats {
    /// Samples.
    pub samples: u64,
    /// Smallest, ms.
    pub min_ms: f64,
    /// Mean, ms.
    pub avg_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Standard deviation (population, as tcptrace), ms.
    pub stddev_ms: f64,
    /// ACKs of retransmitted segments, which give no sample (Karn's rule).
    pub ambiguous_acks: u64,
}

/// The ACK delay distribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AckDelayStats {
    /// ACKs measured.
    pub samples: u64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Histogram: (upper bound in ms, count); bounds 1, 2, 5, 10, 20, 50, 100, 200, 500, inf.
    pub histogram: Vec<(f64, u64)>,
}

/// Shares of a direction's transfer time, percent of `total_s`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeShares {
    /// Seconds accounted: first data segment to the acknowledgement of the last.
    pub total_s: f64,
    /// Data in flight reached the advertised window (no room for another full segment).
    pub receive_window_limited_percent: f64,
    /// Nothing in flight and nothing sent: the application (or its send buffer) had
    /// nothing for TCP.
    pub application_limited_percent: f64,
    /// From a retransmission until everything sent before it was acknowledged.
    pub loss_recovery_percent: f64,
    /// The sender waited for a delayed ACK it needed to go on (part of the above shares
    /// as well, counted on its own).
    pub delayed_ack_stall_percent: f64,
    /// The rest: the sender had room in the window and data in flight (congestion window,
    /// path or pacing).
    pub sending_percent: f64,
}

/// RFC 6349 TCP throughput metrics for one direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rfc6349 {
    /// The bottleneck bandwidth given, bits/s.
    pub bottleneck_bps: u64,
    /// The path MTU assumed (the MSS seen plus the IP and TCP headers, or 1500), bytes.
    pub mtu: u32,
    /// Maximum achievable TCP throughput at layer 4: BB / ((MTU + 38) * 8) * (MTU - 40) * 8.
    pub ideal_bps: f64,
    /// Actual transfer time / ideal transfer time of the unique bytes.
    pub transfer_time_ratio: Option<f64>,
    /// (Transmitted bytes - retransmitted bytes) / transmitted bytes * 100.
    pub tcp_efficiency_percent: Option<f64>,
    /// (Mean RTT during the transfer - baseline RTT) / baseline RTT * 100; the mean is
    /// the mean of the per-second means, the baseline the minimum (data segments' samples
    /// only: not the handshake's).
    pub buffer_delay_percent: Option<f64>,
    /// BDP at the baseline RTT: bottleneck * RTT / 8, bytes.
    pub bdp_bytes: Option<f64>,
}

/// What a detector found, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// "delayed_ack_stall", "receive_window_limited", "application_limited",
    /// "loss_recovery" or "zero_window".
    pub kind: String,
    /// "a_to_b" or "b_to_a": the direction whose data was held up.
    pub direction: String,
    /// One sentence with the numbers.
    pub message: String,
    /// How many times (stalls, periods, retransmissions).
    pub count: u64,
    /// Time lost, ms.
    pub time_ms: f64,
    /// Share of the direction's transfer time, percent.
    pub share_percent: f64,
    /// The numbers behind it.
    pub evidence: Vec<Evidence>,
}

/// One number behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// What was measured.
    pub metric: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// One direction of a UDP flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UdpFlow {
    /// 1-based number in the file.
    pub index: u32,
    /// Sender.
    pub src: Endpoint,
    /// Receiver.
    pub dst: Endpoint,
    /// Seconds from the start of the capture to the first datagram.
    pub start_s: f64,
    /// Seconds from the first to the last datagram.
    pub duration_s: f64,
    /// Datagrams.
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Payload bits over the duration, bits/s.
    pub throughput_bps: Option<f64>,
    /// Datagrams per second over the duration.
    pub packets_per_s: Option<f64>,
    /// Longest time between two datagrams, ms.
    pub max_gap_ms: Option<f64>,
    /// Times the flow paused for more than 10 ms.
    pub gaps_over_10ms: u64,
}

/// What the packet capture of a test (`--capture`) showed: the analysis of the test's data
/// connections and flows (the control connection left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceRecord {
    /// The pcap file written.
    pub file: String,
    /// The interface captured on (the route toward the server).
    pub interface: String,
    /// Bytes kept of each packet.
    pub snaplen: u32,
    /// Packets captured.
    pub packets: u64,
    /// Packets the kernel dropped because the capture did not keep up (absent: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_drops: Option<u64>,
    /// Packets left out because the file reached its size cap.
    #[serde(default)]
    pub over_cap: u64,
    /// The test's TCP connections.
    #[serde(default)]
    pub tcp: Vec<TcpConnection>,
    /// The test's UDP flows.
    #[serde(default)]
    pub udp: Vec<UdpFlow>,
    /// The analysis's warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The same at the server, from the capture it returned (`serve --allow-capture`,
    /// protocol 1.3); its file is the client's FILE.server.pcap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<TraceRecord>>,
}
