//! Measurement records one end sends the other in `results` and `interval` messages.
//!
//! Units live in field names: `_bytes`, `_ns`, `_us`, `_bps`, `_percent`. A value that could not
//! be measured is `None` (absent in JSON) and the reason is in `warnings`; it is never a fake 0.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which end produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The end that ran `linerate tcp|udp`.
    Client,
    /// The end that ran `linerate serve`.
    Server,
}

/// Facts about a host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// Host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Kernel release (uname -r).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Online CPUs. A linerate end always sends it (peers before it became optional require
    /// it); absent only for an end that does not say, an iperf3 server (`--iperf3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    /// "linerate x.y.z".
    #[serde(default)]
    pub software: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): two ends with the same boot
    /// id share `CLOCK_MONOTONIC`, so one-way delays between them are exact (protocol 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// Whether a stream sends or receives, seen from the end that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StreamRole {
    /// This end writes.
    Tx,
    /// This end reads.
    Rx,
}

/// One end's measurements of a whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SideReport {
    /// Client or server.
    pub role: Role,
    /// The host.
    pub host: HostInfo,
    /// Per stream, over the measured window.
    pub streams: Vec<StreamReport>,
    /// Interval samples, warm-up ones marked `omitted`.
    #[serde(default)]
    pub intervals: Vec<IntervalReport>,
    /// Totals over the measured window (warm-up excluded).
    pub totals: Totals,
    /// System-wide CPU over the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuReport>,
    /// CPU time of this test's own threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_cpu: Option<ProcessCpu>,
    /// Host counter deltas (interrupts, softirqs, softnet, SNMP, interface and driver
    /// statistics) over the measured window at this end; at an end with UDP receivers the
    /// window ends after their drain (since 1.3), so it covers every datagram they counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_counters: Option<crate::host::HostCounters>,
    /// The interface that carried the test at this end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<crate::host::InterfaceFacts>,
    /// The control connection's own TCP segments over the measured window (protocol 1.3):
    /// they cross the same interface as the test's data, so they are taken out of its packet
    /// counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_segments: Option<ControlSegments>,
    /// Where this end's CPUs spent the measured window (`--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileReport>,
    /// What could not be measured, and why.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One stream over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamReport {
    /// Index within the test.
    pub index: u16,
    /// Whether this end sent or received on it.
    pub role: StreamRole,
    /// Payload bytes written or read.
    pub bytes: u64,
    /// send/recv system calls (a sendmmsg/recvmmsg counts once). A linerate end always sends
    /// it (peers before it became optional require it); absent only for an end that does
    /// not count them, an iperf3 server (`--iperf3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_calls: Option<u64>,
    /// UDP datagrams (None for TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// Time from the window start to this stream's last byte, nanoseconds.
    pub duration_ns: u64,
    /// SO_SNDBUF as granted by the kernel (Linux reports twice the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_bytes: Option<u32>,
    /// SO_RCVBUF as granted by the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_bytes: Option<u32>,
    /// TCP_MAXSEG at the end of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss_bytes: Option<u32>,
    /// TCP congestion control in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TCP_INFO at the end of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfoReport>,
    /// UDP receiver accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_rx: Option<UdpRxReport>,
    /// UDP senders (protocol 1.3): the sequence number the next datagram would have carried,
    /// that is every datagram this stream sent since the test began, warm-up included. A
    /// receiver whose [`UdpRxReport::highest_seq`] + 1 is below it lost the rest: datagrams
    /// after the last one that arrived, which no sequence gap shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_seq_end: Option<u64>,
    /// Local socket address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_addr: Option<String>,
    /// Peer socket address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_addr: Option<String>,
    /// How a UDP sender put its datagrams on the wire (protocol 1.3); absent for receivers,
    /// TCP, and older peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_path: Option<TxPath>,
    /// Raw-frame senders ([`TxPath::RawFrames`]): the kernel path the frames went through;
    /// absent otherwise, and from older peers (their frames went through AF_PACKET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_tx: Option<RawTx>,
    /// How a TCP sender handed its data to the kernel (feature `copy_modes`); absent for
    /// receivers, UDP, and older peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_mode: Option<crate::control::modes::SendMode>,
    /// How a TCP receiver took its data (feature `copy_modes`); absent for senders, UDP,
    /// and older peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_mode: Option<crate::control::modes::RecvMode>,
    /// `MSG_ZEROCOPY` senders: the kernel's completion notifications for this stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<ZerocopyReport>,
    /// QUIC streams (feature `quic`): the figures of the connection this stream ran on, at
    /// the end of the test (every stream of a connection has the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicReport>,
}

/// What a QUIC stack knows of one connection at the end of a test (quinn's
/// `ConnectionStats`), the counterpart of TCP_INFO. Counted over the connection's life,
/// handshake and warm-up included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuicReport {
    /// Which of the test's connections (0-based; stream `i` runs on `i % connections`).
    pub connection: u16,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u64,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// The path's current MTU (UDP payload), bytes.
    pub mtu_bytes: u16,
    /// QUIC packets sent.
    pub sent_packets: u64,
    /// QUIC packets declared lost.
    pub lost_packets: u64,
    /// Bytes of the packets declared lost (what had to be sent again).
    pub lost_bytes: u64,
    /// Congestion events (a loss or an ECN mark that shrank the window).
    pub congestion_events: u64,
    /// UDP datagrams sent.
    pub udp_tx_datagrams: u64,
    /// UDP send system calls (a GSO batch counts once).
    pub udp_tx_calls: u64,
    /// UDP datagrams received.
    pub udp_rx_datagrams: u64,
    /// UDP receive system calls (a GRO batch counts once).
    pub udp_rx_calls: u64,
    /// STREAM frames sent.
    pub stream_frames_tx: u64,
    /// STREAM frames received.
    pub stream_frames_rx: u64,
}

impl QuicReport {
    /// UDP datagrams per send system call: above 1 when GSO batched them.
    pub fn datagrams_per_send(&self) -> Option<f64> {
        (self.udp_tx_calls > 0).then(|| self.udp_tx_datagrams as f64 / self.udp_tx_calls as f64)
    }
}

/// What the kernel said about a `MSG_ZEROCOPY` stream's sends, from the notifications on
/// the socket's error queue (`SO_EE_ORIGIN_ZEROCOPY`). Counted over the whole stream, warm-up
/// included, like [`StreamReport::udp_seq_end`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ZerocopyReport {
    /// Send calls the kernel numbered: every call that took at least one byte.
    pub sends: u64,
    /// Sends whose completion arrived (the kernel released their pages).
    pub completed: u64,
    /// Completed sends in notification ranges flagged `SO_EE_CODE_ZEROCOPY_COPIED`: the
    /// kernel copied the data after all (always so when the receiver is a socket on this
    /// host, loopback or another namespace, and on devices without scatter-gather). A range
    /// is flagged when the kernel copied for it; the count is per range, as the kernel
    /// reports it.
    pub copied: u64,
    /// Error-queue messages read (each one completes a range of sends).
    pub notifications: u64,
    /// Sends still in flight when the stream ended and the wait for them ran out; their
    /// buffers were not reused.
    pub outstanding: u64,
    /// Sends refused with `ENOBUFS` (the socket's option memory, `net.core.optmem_max`,
    /// held too many notifications) and retried once the queue was read.
    pub enobufs: u64,
}

impl ZerocopyReport {
    /// Completed sends the kernel did not copy.
    pub fn zero_copied(&self) -> u64 {
        self.completed.saturating_sub(self.copied)
    }
}

/// How a UDP sender put its datagrams on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TxPath {
    /// Complete Ethernet frames through an AF_PACKET transmit ring: one frame per datagram
    /// on the wire, whatever the offloads.
    RawFrames,
    /// One datagram per `sendmmsg` message (no segmentation offload).
    Sendmmsg,
    /// UDP GSO: up to 64 datagrams per send, which may cross virtual links and forwarding
    /// paths as one super-packet.
    Gso,
}

impl TxPath {
    /// Words for reports.
    pub fn describe(self) -> &'static str {
        match self {
            TxPath::RawFrames => "raw frames (AF_PACKET)",
            TxPath::Sendmmsg => "sendmmsg, one datagram per message",
            TxPath::Gso => "UDP GSO super-packets",
        }
    }
}

/// The kernel path a raw-frame sender's frames went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawTx {
    /// An AF_XDP socket bound zero-copy: the driver sent straight from the UMEM.
    XdpZerocopy,
    /// An AF_XDP socket in copy mode: the kernel copied each frame into a socket buffer
    /// and handed it to the driver (past the qdisc).
    XdpCopy,
    /// The AF_PACKET transmit ring (`PACKET_TX_RING`).
    Afpacket,
}

impl RawTx {
    /// Words for reports.
    pub fn describe(self) -> &'static str {
        match self {
            RawTx::XdpZerocopy => "AF_XDP, zero-copy",
            RawTx::XdpCopy => "AF_XDP, copy mode",
            RawTx::Afpacket => "AF_PACKET ring",
        }
    }
}

/// Totals over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    /// Length of the measured window at this end, nanoseconds.
    pub duration_ns: u64,
    /// Payload bytes sent.
    pub tx_bytes: u64,
    /// Payload bytes received.
    pub rx_bytes: u64,
    /// Send calls (a sendmmsg counts once). A linerate end always sends it, as `rx_calls`
    /// (peers before they became optional require them); both are absent only for an end
    /// that does not count them, an iperf3 server (`--iperf3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_calls: Option<u64>,
    /// Receive calls (a recvmmsg counts once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_calls: Option<u64>,
    /// Time from window start to the end of sending, nanoseconds (0 when nothing was sent):
    /// for a sender the end of the test stopped, the moment it was told to stop (the window
    /// it was asked to send, time blocked at the end included); for one that ended by itself
    /// (a byte count sent, an error), its last sent byte. The longest of the streams.
    #[serde(default)]
    pub tx_duration_ns: u64,
    /// Time from window start to the last received byte, nanoseconds (0 when nothing arrived).
    #[serde(default)]
    pub rx_duration_ns: u64,
    /// TCP senders: time in the window a sending stream spent blocked, nanoseconds: in
    /// sends that waited a whole 100 ms and took no byte because the socket buffer stayed
    /// full (the path or the peer took no data: a link down, a stalled receiver). The
    /// longest of the streams. Absent for UDP, for an end without TCP senders, and from a
    /// peer that does not measure it (an older linerate, iperf3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_blocked_ns: Option<u64>,
    /// UDP datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    /// UDP datagrams received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets: Option<u64>,
    /// TCP segments retransmitted by this end's senders (TCP_INFO total_retrans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP receiver accounting, all streams together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_rx: Option<UdpRxReport>,
}

/// UDP receiver accounting (iperf semantics: a late packet counts as out of order and is
/// removed from the lost count).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UdpRxReport {
    /// Datagrams received, duplicates included.
    pub packets: u64,
    /// Datagrams missing below the highest sequence number seen (highest + 1 − distinct
    /// received), within the measured window. Datagrams lost after the last one that arrived
    /// are not in it: the summary adds them from the sender's count ([`StreamReport::udp_seq_end`]).
    pub lost: u64,
    /// Datagrams that arrived more than once.
    pub duplicates: u64,
    /// Datagrams that arrived after a higher sequence number.
    pub reordered: u64,
    /// Highest sequence number received since the test began (protocol 1.3); per stream
    /// only, absent in totals and before any datagram arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_seq: Option<u64>,
    /// RFC 3550 interarrival jitter, nanoseconds; absent with fewer than two datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ns: Option<u64>,
    /// One-way delay of the datagrams, when the test asked for it (protocol 1.1, feature
    /// `one_way_delay`; both ends on one clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way_delay: Option<DelayReport>,
}

/// One-way delay of the datagrams of a stream: receive time minus the probe's send time, both
/// on `CLOCK_MONOTONIC` (protocol 1.1). Datagrams that seem to arrive before they were sent
/// (the clocks are not shared) are not counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DelayReport {
    /// Datagrams whose delay was measured.
    pub samples: u64,
    /// Smallest delay, nanoseconds.
    pub min_ns: u64,
    /// Mean delay, nanoseconds.
    pub mean_ns: f64,
    /// Median (within 1%), nanoseconds; absent when several streams were merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<u64>,
    /// 99th percentile (within 1%), nanoseconds; absent when several streams were merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
    /// Largest delay, nanoseconds.
    pub max_ns: u64,
    /// Delay of the tagged datagram (`DelaySpec::tag_seq`), nanoseconds; absent if it was not
    /// asked for or never arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagged_ns: Option<u64>,
}

/// TCP_INFO fields linerate reports. Fields the running kernel does not fill are absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpInfoReport {
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// RTT variance, microseconds (absent where the system gives none: Windows's
    /// SIO_TCP_INFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u32>,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Retransmitted segments over the connection's life (absent where the system counts
    /// none: Windows's SIO_TCP_INFO counts retransmitted bytes, `bytes_retrans`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_retrans: Option<u32>,
    /// Peer's advertised receive window scale-adjusted, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd_bytes: Option<u32>,
    /// Minimum RTT seen, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
    /// Delivery rate estimate, bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bytes_per_sec: Option<u64>,
    /// Pacing rate, bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bytes_per_sec: Option<u64>,
    /// Time busy sending data, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// Time limited by the receiver's window, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// Bytes acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_acked: Option<u64>,
    /// Bytes retransmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Segments sent over the connection's life, pure ACKs and retransmissions included
    /// (`tcpi_segs_out`, Linux 4.2+; a GSO/TSO packet counts as its segments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segs_out: Option<u32>,
    /// Segments carrying data sent over the connection's life, retransmissions included
    /// (`tcpi_data_segs_out`, Linux 4.6+): the denominator of the retransmitted share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_segs_out: Option<u32>,
    /// The MSS this end advertises, bytes (`tcpi_advmss`: from the route's MTU). The
    /// sender's `snd_mss` can be lower: Linux caps it at half the largest window the peer
    /// ever offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss_bytes: Option<u32>,
    /// The retransmission time-out now, microseconds (`tcpi_rto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_us: Option<u32>,
    /// Zero-window (persist) or keepalive probes sent and not answered, now (`tcpi_probes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<u8>,
    /// Exponential backoff of the retransmission or persist timer, now (`tcpi_backoff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<u8>,
    /// Retransmission time-outs over the connection's life, SYN and repeated ones included
    /// (`tcpi_total_rto`, Linux 6.7+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_rto: Option<u16>,
    /// Recoveries that began with a retransmission time-out (`tcpi_total_rto_recoveries`,
    /// Linux 6.7+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_rto_recoveries: Option<u16>,
    /// Time spent in those recoveries, milliseconds (`tcpi_total_rto_time`, Linux 6.7+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_rto_time_ms: Option<u32>,
}

/// One interval at one end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntervalReport {
    /// Start, nanoseconds after the test start.
    pub start_ns: u64,
    /// End, nanoseconds after the test start.
    pub end_ns: u64,
    /// Part of the warm-up, left out of totals.
    #[serde(default)]
    pub omitted: bool,
    /// Payload bytes sent in the interval.
    pub tx_bytes: u64,
    /// Payload bytes received in the interval.
    pub rx_bytes: u64,
    /// TCP senders: time in the interval a sending stream spent blocked, nanoseconds (as
    /// the totals' `tx_blocked_ns`, counted when each blocked send ended; the longest of
    /// the streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_blocked_ns: Option<u64>,
    /// UDP datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    /// UDP datagrams received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets: Option<u64>,
    /// UDP datagrams lost in the interval, as far as known at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_lost: Option<u64>,
    /// TCP retransmits during the interval, all sending streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Mean smoothed RTT over sending streams at the interval's end, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    /// Sum of congestion windows at the interval's end, bytes (cwnd × MSS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// System-wide CPU utilisation in the interval, percent of all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// Request/response tests: transactions completed in the interval (protocol 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Stream tests: the host counters cheap enough to read every interval (the test
    /// interface's packets and drops, NET_RX/NET_TX softirqs, softnet drops and squeezes),
    /// changes over the interval (protocol 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Box<crate::host::IntervalHostCounters>>,
}

/// System-wide CPU utilisation from /proc/stat over the measured window.
///
/// Percentages are of all CPUs together (100 = every CPU busy), as netperf's `-c/-C`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuReport {
    /// CPUs counted.
    pub cpu_count: u32,
    /// Busy share: everything but idle and iowait.
    pub util_percent: f64,
    /// user + nice.
    pub user_percent: f64,
    /// system.
    pub system_percent: f64,
    /// hardware interrupts.
    pub irq_percent: f64,
    /// software interrupts (NET_RX/NET_TX processing lands here).
    pub softirq_percent: f64,
    /// stolen by the hypervisor.
    pub steal_percent: f64,
    /// The busiest single CPU.
    pub busiest_cpu: u32,
    /// Its utilisation, percent of that one CPU.
    pub busiest_cpu_util_percent: f64,
    /// Softirq share of the busiest CPU, percent of that one CPU.
    #[serde(default)]
    pub busiest_cpu_softirq_percent: f64,
}

/// TCP segments of the control connection over one end's measured window, from its
/// `TCP_INFO` (`tcpi_segs_out`, `tcpi_segs_in`; Linux 4.2 and later). Each is one packet on
/// the interface toward the peer (control messages are far smaller than an MSS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ControlSegments {
    /// Segments this end sent on the control connection.
    pub sent: u64,
    /// Segments this end received on the control connection.
    pub received: u64,
}

/// CPU time used by the test's own threads (getrusage RUSAGE_THREAD), nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessCpu {
    /// User time.
    pub user_ns: u64,
    /// System time.
    pub system_ns: u64,
}
