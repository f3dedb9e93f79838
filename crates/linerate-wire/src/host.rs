//! Host counters and interface facts that each end measures around a test and exchanges.
//!
//! The seeds of these records are engineers finding by hand why a link was slow: a CPU that
//! was "completely interrupt bound", one driver raising "an abnormally large number of
//! interrupts", delayed ACKs stalling a sender, a receive buffer overflowing. Each end
//! samples the kernel's own counters before and after the measured window and reports
//! the differences here, so both ends' evidence is in the result.
//!
//! * [`HostCounters`]: deltas over the measured window (`/proc/interrupts`,
//!   `/proc/softirqs`, `/proc/net/softnet_stat`, the interface's statistics, its driver's
//!   `ethtool -S` counters, `/proc/net/snmp`, `/proc/net/netstat`, `/proc/net/snmp6`),
//!   with a few rates and per-packet ratios derived from them.
//! * [`InterfaceFacts`]: what the interface that carried the test is (driver, MTU, speed,
//!   offloads, interrupt coalescing, rings, queues, IRQs).
//! * [`IntervalHostCounters`]: the few counters cheap enough to sample every interval.
//!
//! Conventions as in [`crate::report`]: a section or field that could not be read is `None`
//! (absent in JSON) and the reason is a warning; a counter that was read and did not move
//! is `0`. Per-CPU vectors are aligned with a `cpus` vector of the CPU numbers they belong
//! to (CPU numbers can have gaps when CPUs are offline). Sizes are capped ([`MAX_IRQ_ROWS`],
//! [`MAX_INTERFACE_IRQ_ROWS`], [`MAX_DRIVER_STATS`]) so a peer's report stays small.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// At most this many IRQ rows that do not belong to the test's interface are reported in
/// [`InterruptCounters::rows`]: those with the largest deltas (ties: file order).
pub const MAX_IRQ_ROWS: usize = 32;

/// At most this many IRQ rows of the test's interface are reported (a NIC with more queue
/// interrupts than this has its largest ones kept).
pub const MAX_INTERFACE_IRQ_ROWS: usize = 256;

/// At most this many driver counters (`ethtool -S`) are reported: the nonzero deltas,
/// largest first when there are more.
pub const MAX_DRIVER_STATS: usize = 256;

/// The `/proc/net/snmp`, `/proc/net/netstat` and `/proc/net/snmp6` counters reported in
/// [`HostCounters::snmp`], as `Group.Name`.
///
/// Chosen for what they say about a slow transfer: IP input/forwarding and its drops; TCP
/// segments, retransmissions, resets and checksum errors; UDP datagrams and the socket
/// buffer overflows that are nearly always where UDP loss happens on one host; TCP's
/// extended counters for delayed ACKs, loss recovery, timeouts, receive-queue and backlog
/// drops, listen queue overflows, zero windows and zero-window probes, coalescing and out-of-order queueing; and
/// the IPv6/UDPv6 equivalents. A counter the running kernel does not have is absent.
pub const INTERESTING_SNMP_COUNTERS: &[&str] = &[
    "Ip.InReceives",
    "Ip.InHdrErrors",
    "Ip.InAddrErrors",
    "Ip.InDiscards",
    "Ip.ForwDatagrams",
    "Ip.OutRequests",
    "Ip.OutDiscards",
    "Ip.OutNoRoutes",
    "Ip.ReasmFails",
    "Ip.FragFails",
    "Tcp.ActiveOpens",
    "Tcp.AttemptFails",
    "Tcp.EstabResets",
    "Tcp.InSegs",
    "Tcp.OutSegs",
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "Tcp.OutRsts",
    "Tcp.InCsumErrors",
    "Icmp.InMsgs",
    "Icmp.OutMsgs",
    "Udp.InDatagrams",
    "Udp.NoPorts",
    "Udp.InErrors",
    "Udp.OutDatagrams",
    "Udp.RcvbufErrors",
    "Udp.SndbufErrors",
    "Udp.InCsumErrors",
    "Udp.MemErrors",
    "TcpExt.PruneCalled",
    "TcpExt.RcvPruned",
    "TcpExt.OfoPruned",
    "TcpExt.DelayedACKs",
    "TcpExt.DelayedACKLocked",
    "TcpExt.DelayedACKLost",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPLostRetransmit",
    "TcpExt.TCPFastRetrans",
    "TcpExt.TCPSlowStartRetrans",
    "TcpExt.TCPTimeouts",
    "TcpExt.TCPSynRetrans",
    "TcpExt.TCPSpuriousRTOs",
    "TcpExt.TCPRetransFail",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPRcvQDrop",
    "TcpExt.TCPOFOQueue",
    "TcpExt.TCPOFODrop",
    "TcpExt.TCPRcvCoalesce",
    "TcpExt.TCPZeroWindowDrop",
    "TcpExt.TCPToZeroWindowAdv",
    "TcpExt.TCPFromZeroWindowAdv",
    "TcpExt.TCPWantZeroWindowAdv",
    "TcpExt.TCPWinProbe",
    "TcpExt.TCPAbortOnData",
    "TcpExt.TCPAbortOnMemory",
    "Ip6.InReceives",
    "Ip6.InDiscards",
    "Ip6.OutRequests",
    "Ip6.OutDiscards",
    "Icmp6.InMsgs",
    "Icmp6.OutMsgs",
    "Udp6.InDatagrams",
    "Udp6.NoPorts",
    "Udp6.InErrors",
    "Udp6.OutDatagrams",
    "Udp6.RcvbufErrors",
    "Udp6.SndbufErrors",
    "Udp6.InCsumErrors",
    "Udp6.MemErrors",
];

/// Host counter deltas over one end's measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostCounters {
    /// Time between the two snapshots, nanoseconds (the base of every `_per_sec` rate).
    pub duration_ns: u64,
    /// The interface the test used, whose IRQs, statistics and driver counters are reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Hardware interrupts (`/proc/interrupts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<InterruptCounters>,
    /// NET_RX and NET_TX software interrupts (`/proc/softirqs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirqs: Option<SoftirqCounters>,
    /// Packet processing in NET_RX (`/proc/net/softnet_stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softnet: Option<SoftnetCounters>,
    /// The interface's statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_stats: Option<InterfaceStats>,
    /// The interface driver's own counters (`ethtool -S`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_stats: Option<DriverStats>,
    /// Protocol counters, `Group.Name` → delta, for [`INTERESTING_SNMP_COUNTERS`] (zeros
    /// included: `0` means read and unchanged; a name the kernel lacks is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snmp: Option<BTreeMap<String, u64>>,
    /// Interrupts of the interface's IRQs per 1000 of its packets (received + sent).
    /// Absent when no IRQ of the interface was found or no packet passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts_per_1000_packets: Option<f64>,
    /// Packets (received + sent) per interrupt of the interface's IRQs: the batching the
    /// driver achieved (NAPI, coalescing). Absent when there was no such interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_per_interrupt: Option<f64>,
    /// Connection tracking (netfilter conntrack): the table's fill and its drops. Absent
    /// when the host does not track connections (no `nf_conntrack` module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conntrack: Option<ConntrackCounters>,
    /// Rates over [`HostCounters::duration_ns`].
    #[serde(default)]
    pub rates: HostRates,
    /// Why a section or counter is missing from these deltas (a counter that went
    /// backwards, a CPU that went offline, a section missing from one snapshot).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Connection tracking over one end's window, in the end's network namespace: the table's
/// fill at the end (`/proc/sys/net/netfilter/nf_conntrack_count` of
/// `nf_conntrack_max`) and the changes of `/proc/net/stat/nf_conntrack`'s counters (summed
/// over its per-CPU rows). A full table drops the first packet of every new connection
/// (a SYN), which the peer never sees: the connect is retried and may time out while the
/// server is fine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConntrackCounters {
    /// Entries in the table at the end of the window (`nf_conntrack_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// The table's size (`nf_conntrack_max`; one value for every namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<u64>,
    /// Packets dropped because no entry could be made for them (`drop`: a full table,
    /// "nf_conntrack: table full, dropping packet").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<u64>,
    /// Entries that could not be inserted (`insert_failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_failed: Option<u64>,
    /// Unconfirmed entries evicted to make room in a full table (`early_drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_drops: Option<u64>,
}

/// Rates derived from [`HostCounters`], per second of its `duration_ns`. Absent when the
/// counter is absent or the duration is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostRates {
    /// All hardware interrupts, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts_per_sec: Option<f64>,
    /// Interrupts of the interface's IRQs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_interrupts_per_sec: Option<f64>,
    /// NET_RX softirqs, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_softirqs_per_sec: Option<f64>,
    /// Packets received by the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets_per_sec: Option<f64>,
    /// Packets sent by the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets_per_sec: Option<f64>,
}

/// A counter per CPU and its sum.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PerCpu {
    /// Sum over all CPUs.
    pub total: u64,
    /// One value per CPU, aligned with the enclosing record's `cpus`.
    pub per_cpu: Vec<u64>,
}

/// Hardware interrupt deltas from `/proc/interrupts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterruptCounters {
    /// CPU numbers of the per-CPU columns (present in both snapshots).
    pub cpus: Vec<u32>,
    /// All interrupts (every row, including those left out of `rows`), per CPU and total.
    pub all: PerCpu,
    /// Interrupts of the interface's IRQs, per CPU and total; absent when no IRQ line was
    /// recognised as the interface's (loopback and veth have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<PerCpu>,
    /// Rows that changed: every changed row of the interface (up to
    /// [`MAX_INTERFACE_IRQ_ROWS`]) and the [`MAX_IRQ_ROWS`] other rows with the largest
    /// deltas, in `/proc/interrupts` order.
    pub rows: Vec<IrqRow>,
    /// Rows that changed but were left out of `rows` by the caps.
    #[serde(default)]
    pub rows_omitted: u32,
}

/// One `/proc/interrupts` row's delta.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IrqRow {
    /// The IRQ: a number ("38") or an architecture name ("LOC", "NMI", "RES", "IPI0").
    pub irq: String,
    /// The text after the counts (chip, hardware IRQ, trigger, handler names), with runs of
    /// spaces collapsed, e.g. "PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0".
    pub description: String,
    /// Delta per CPU, aligned with [`InterruptCounters::cpus`]; empty for rows the kernel
    /// prints as one total (ERR, MIS).
    pub per_cpu: Vec<u64>,
    /// Delta summed over CPUs.
    pub total: u64,
    /// Whether the row was recognised as one of the interface's interrupts.
    #[serde(default)]
    pub matched_interface: bool,
}

/// NET_RX and NET_TX softirq deltas from `/proc/softirqs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SoftirqCounters {
    /// CPU numbers of the per-CPU values.
    pub cpus: Vec<u32>,
    /// NET_RX softirqs raised (receive processing, NAPI polls).
    pub net_rx: PerCpu,
    /// NET_TX softirqs raised (transmit completion and qdisc runs deferred to softirq).
    pub net_tx: PerCpu,
}

/// `/proc/net/softnet_stat` deltas: the kernel's per-CPU packet backlog processing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SoftnetCounters {
    /// CPU numbers of the per-CPU values (from the file's CPU column since Linux 5.10,
    /// otherwise the row position).
    pub cpus: Vec<u32>,
    /// Packets processed by NET_RX on each CPU.
    pub processed: PerCpu,
    /// Packets dropped because the CPU's input backlog was full (`netdev_max_backlog`).
    pub dropped: PerCpu,
    /// Times NET_RX ran out of budget or time with work left (`netdev_budget`,
    /// `netdev_budget_usecs`): the CPU could not keep up with the packet rate.
    pub time_squeeze: PerCpu,
    /// Times this CPU was woken to process packets steered to it by RPS (column 10; absent
    /// on kernels without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_rps: Option<PerCpu>,
    /// Packets dropped by the RPS flow limit (column 11, Linux 3.11 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_limit_count: Option<PerCpu>,
}

/// Interface statistics deltas.
///
/// Read from `/sys/class/net/IF/statistics/` when sysfs shows the caller's network
/// namespace, else from `/proc/net/dev`; fields only sysfs has are then absent. Both
/// sources report the same kernel counters (`struct rtnl_link_stats64`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterfaceStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive errors (all kinds).
    pub rx_errors: u64,
    /// Transmit errors (all kinds).
    pub tx_errors: u64,
    /// Received packets dropped, including those the NIC missed for lack of buffers
    /// (`rx_dropped + rx_missed_errors`, the `/proc/net/dev` "drop" column).
    pub rx_dropped: u64,
    /// Packets dropped on transmit.
    pub tx_dropped: u64,
    /// Receive FIFO overruns.
    pub rx_fifo_errors: u64,
    /// Transmit FIFO errors.
    pub tx_fifo_errors: u64,
    /// Packets the NIC missed for lack of receive buffers (sysfs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_missed_errors: Option<u64>,
    /// Receive ring overflows (sysfs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_over_errors: Option<u64>,
    /// Frames with bad CRC (sysfs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_crc_errors: Option<u64>,
}

/// The driver's own counters (`ethtool -S`) that changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DriverStats {
    /// Counter name → delta, nonzero deltas only, at most [`MAX_DRIVER_STATS`] (the
    /// largest). A name the driver repeats gets `#2`, `#3`, ... appended in order.
    pub counters: BTreeMap<String, u64>,
    /// Counters the driver reports (changed or not).
    pub available: u32,
    /// Nonzero deltas left out by the cap.
    #[serde(default)]
    pub omitted: u32,
}

/// Counters cheap enough to read every interval: changes since the previous sample.
/// Each is absent when its source could not be read at either end of the interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IntervalHostCounters {
    /// Packets received by the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets: Option<u64>,
    /// Packets sent by the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    /// Received packets the interface dropped (incl. missed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_dropped: Option<u64>,
    /// NET_RX softirqs, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_softirqs: Option<u64>,
    /// NET_TX softirqs, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_tx_softirqs: Option<u64>,
    /// softnet backlog drops, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softnet_dropped: Option<u64>,
    /// softnet time squeezes, all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softnet_time_squeeze: Option<u64>,
}

/// Full or half duplex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Duplex {
    /// Half duplex.
    Half,
    /// Full duplex.
    Full,
}

/// Ring (descriptor queue) sizes, `ethtool -g`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RingSizes {
    /// Receive descriptors in use.
    pub rx: u32,
    /// Largest receive ring the hardware allows.
    pub rx_max: u32,
    /// Transmit descriptors in use.
    pub tx: u32,
    /// Largest transmit ring the hardware allows.
    pub tx_max: u32,
}

/// Queue counts of an interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueCounts {
    /// Receive queues.
    pub rx: u32,
    /// Transmit queues.
    pub tx: u32,
    /// Where the counts come from: `sysfs` (the `rx-N`/`tx-N` entries of
    /// `/sys/class/net/IF/queues`) or `channels` (`ethtool -l`: rx or tx + combined).
    pub source: QueueSource,
}

/// Source of [`QueueCounts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueSource {
    /// `/sys/class/net/IF/queues`: the kernel's real queue counts.
    #[default]
    Sysfs,
    /// `ETHTOOL_GCHANNELS`: the driver's channel counts (used when sysfs shows another
    /// network namespace).
    Channels,
}

/// What the interface that carried a test is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterfaceFacts {
    /// Interface name.
    pub name: String,
    /// Interface index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifindex: Option<u32>,
    /// Driver (`ethtool -i`: "virtio_net", "veth", "mlx5_core").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Firmware version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Bus address ("0000:00:03.0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_info: Option<String>,
    /// MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Link speed, Mbit/s; absent when the driver does not know it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u32>,
    /// Duplex; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex: Option<Duplex>,
    /// Auto-negotiation on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoneg: Option<bool>,
    /// Offload features as `ethtool -k` lists them → on/off: the classic names
    /// ("rx-checksumming", "tx-checksumming", "scatter-gather", "tcp-segmentation-offload",
    /// "generic-segmentation-offload", "generic-receive-offload", "large-receive-offload",
    /// "rx-vlan-offload", "tx-vlan-offload", "ntuple-filters", "receive-hashing"; on when
    /// any of their kernel features is on) and every other kernel feature by its own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloads: Option<BTreeMap<String, bool>>,
    /// Interrupt coalescing (`ethtool -c` names: "rx-usecs", "rx-frames", "tx-usecs",
    /// "tx-frames", "adaptive-rx", "adaptive-tx", ...). The ioctl cannot tell an unsupported
    /// parameter from 0, so parameters reading 0 are left out except these six.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalescing: Option<BTreeMap<String, u32>>,
    /// Ring sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rings: Option<RingSizes>,
    /// Queue counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<QueueCounts>,
    /// IRQs recognised as the interface's in `/proc/interrupts` (their numbers).
    #[serde(default)]
    pub irqs: Vec<String>,
    /// The kind of the interface's root egress qdisc as `tc` names it ("noqueue",
    /// "fq_codel", "mq", "tbf", "htb", ...); absent when `tc` could not be run or read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_qdisc: Option<String>,
    /// The rate, bits per second, that a shaping root egress qdisc holds the interface's
    /// traffic to: a `tbf`'s rate, or for `htb` the smallest ceiling on the way from the
    /// default class up to the root. Absent when the root qdisc does not shape, when an htb
    /// has no default class (unclassified traffic is not shaped), or when it could not be
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaped_rate_bps: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interesting_counters_are_group_dot_name_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for name in INTERESTING_SNMP_COUNTERS {
            let (group, counter) = name.split_once('.').unwrap();
            assert!(!group.is_empty() && !counter.is_empty(), "{name}");
            assert!(seen.insert(*name), "duplicate {name}");
        }
    }

    #[test]
    fn absent_fields_are_left_out_and_defaults_read_back() {
        let c = HostCounters {
            duration_ns: 1_000_000_000,
            ..HostCounters::default()
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"duration_ns":1000000000,"rates":{}}"#);
        let back: HostCounters = serde_json::from_str(r#"{"duration_ns":5}"#).unwrap();
        assert_eq!(back.duration_ns, 5);
        assert_eq!(back.rates, HostRates::default());
        let f: InterfaceFacts = serde_json::from_str(r#"{"name":"lo","mtu":65536}"#).unwrap();
        assert_eq!(f.mtu, Some(65536));
        assert!(f.irqs.is_empty() && f.speed_mbps.is_none());
        assert_eq!(
            serde_json::to_string(&Some(Duplex::Full)).unwrap(),
            r#""full""#
        );
    }
}
