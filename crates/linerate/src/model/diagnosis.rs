//! The diagnosis of a test, as records carry it: verdicts naming what limited the test, with
//! the evidence behind each (`crate::diagnose` derives it from a [`RunRecord`]).
//!
//! [`RunRecord`]: super::RunRecord

use linerate_wire::report::Role;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::labels::flow_label;
use super::FlowDirection;

/// What limited a test (or `none`). The order of the variants is the order verdicts are
/// listed in: the most specific limits first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// A TCP sender was blocked a large share of its window: its socket buffer stayed full
    /// because the path or the receiver took no data (a link down, a zero window).
    SenderBlocked,
    /// The receiver's link (or a shaped rate on the path) was nearly full.
    LinkBound,
    /// Datagrams or segments were dropped at the receiving host (socket buffer, backlog,
    /// NIC ring).
    ReceiverDrops,
    /// The host's connection tracking (netfilter conntrack) dropped packets for want of an
    /// entry: a full table drops the SYNs of new connections (TCP_CRR).
    ConntrackDrops,
    /// UDP datagrams were lost (sequence gaps, or sent after the last one that arrived)
    /// and no counter at the receiver accounts for them: the path, or the stream's
    /// datagrams went elsewhere.
    DatagramLoss,
    /// The TCP window (a socket buffer about the size of the bandwidth-delay product) held
    /// the sender back.
    WindowLimited,
    /// TCP retransmitted a large share of its segments: loss on the path set the rate.
    RetransmissionBound,
    /// The receiver's delayed ACKs stalled the sender.
    DelayedAckStalls,
    /// Interrupts per packet were high and interrupt handling took a large share of CPU.
    InterruptBound,
    /// One CPU was saturated, mostly by softirq (receive/transmit processing).
    SoftirqBound,
    /// linerate's own threads could not go faster (each used a whole CPU, or the paced
    /// rate was not reached).
    TesterLimited,
    /// All CPUs, or one CPU, were saturated.
    CpuBound,
    /// The device under test (`--dut`): one of its CPUs was saturated, mostly by
    /// interrupts and softirq (packet processing).
    DeviceInterruptBound,
    /// The device under test (`--dut`): one of its CPUs was saturated by other work.
    DeviceCpuBound,
    /// The device under test (`--dut`) dropped or missed packets at ingress.
    DeviceDrops,
    /// Socket buffers far larger than the bandwidth-delay product (advice: not a limit).
    WindowOversized,
    /// Light probes beside the load (`--latency`) waited many times their idle round trip:
    /// the load filled a queue on the path (bufferbloat). Advice about latency, not a limit
    /// of the throughput.
    QueueingDelay,
    /// No single limit stands out.
    None,
}

impl VerdictKind {
    /// The snake_case name used in JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::SenderBlocked => "sender_blocked",
            VerdictKind::LinkBound => "link_bound",
            VerdictKind::ReceiverDrops => "receiver_drops",
            VerdictKind::ConntrackDrops => "conntrack_drops",
            VerdictKind::DatagramLoss => "datagram_loss",
            VerdictKind::WindowLimited => "window_limited",
            VerdictKind::RetransmissionBound => "retransmission_bound",
            VerdictKind::DelayedAckStalls => "delayed_ack_stalls",
            VerdictKind::InterruptBound => "interrupt_bound",
            VerdictKind::SoftirqBound => "softirq_bound",
            VerdictKind::TesterLimited => "tester_limited",
            VerdictKind::CpuBound => "cpu_bound",
            VerdictKind::DeviceInterruptBound => "device_interrupt_bound",
            VerdictKind::DeviceCpuBound => "device_cpu_bound",
            VerdictKind::DeviceDrops => "device_drops",
            VerdictKind::WindowOversized => "window_oversized",
            VerdictKind::QueueingDelay => "queueing_delay",
            VerdictKind::None => "none",
        }
    }

    /// Whether the verdict is about the device under test (`--dut`).
    pub fn is_device(self) -> bool {
        matches!(
            self,
            VerdictKind::DeviceInterruptBound
                | VerdictKind::DeviceCpuBound
                | VerdictKind::DeviceDrops
        )
    }

    /// Whether the verdict names a limit (everything but `window_oversized` and
    /// `queueing_delay`, which are advice, and `none`).
    pub fn is_limit(self) -> bool {
        !matches!(
            self,
            VerdictKind::WindowOversized | VerdictKind::QueueingDelay | VerdictKind::None
        )
    }
}

/// How strongly the evidence supports a verdict.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Consistent with the evidence, but other explanations fit too.
    Low,
    /// The evidence crosses the rule's threshold.
    Medium,
    /// The evidence crosses the threshold by a wide margin, or two sources agree.
    High,
}

/// One measurement a verdict rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// What was measured, snake_case with the end or source when it matters, e.g.
    /// `server_busiest_cpu_util`, `udp_rcvbuf_errors`.
    pub metric: String,
    /// The value.
    pub value: f64,
    /// Its unit: `percent` (a share, at most 100), `ratio` (a share, at most 1), `factor`
    /// (one figure over another, unbounded), `percent_of_one_cpu` (CPU time of threads, may
    /// exceed 100 with several), `bps`, `bytes`, `us`, `count`, `cpus`, `per_sec`,
    /// `per_1000_packets`.
    pub unit: String,
    /// The rule's condition on this value, `OP NUMBER` (`>=`, `>`, `<=`, `<`), e.g.
    /// ">= 90"; given only when the value meets it, absent for context figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<String>,
}

/// One finding about what limited the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// The kind of limit.
    pub kind: VerdictKind,
    /// The end where the limit is; absent for the path (link, loss) or when both ends are
    /// one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Role>,
    /// The direction of data it limits; absent when it concerns the whole test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowDirection>,
    /// How strongly the evidence supports it.
    pub confidence: Confidence,
    /// The measurements behind it.
    pub evidence: Vec<Evidence>,
    /// What was found, with the key numbers, one or two sentences.
    pub message: String,
    /// What would change it.
    pub suggestion: String,
}

/// The verdicts of one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnosis {
    /// Limits found, most specific first (the order of [`VerdictKind`]; low-confidence ones
    /// last); never empty: a single `none` when nothing stands out (a `window_oversized`
    /// advice may accompany it).
    pub verdicts: Vec<Verdict>,
    /// One line: the main finding, and the other kinds found.
    pub summary: String,
    /// What could not be judged for lack of evidence, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
    /// What a figure counts where that matters for reading it, e.g. "client->server: 64.0
    /// datagrams per packet at lo: UDP GSO/GRO super-packets on loopback; ...". Facts, not
    /// limits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// The strongest verdict (the first).
    pub fn primary(&self) -> Option<&Verdict> {
        self.verdicts.first()
    }

    /// The strongest verdict that concerns `flow` (or the whole test).
    pub fn primary_for(&self, flow: FlowDirection) -> Option<&Verdict> {
        self.verdicts
            .iter()
            .find(|v| v.flow.is_none_or(|f| f == flow))
    }
}

/// Where a verdict is: "server", "client->server", "path client->server", "host",
/// "device".
pub fn place(v: &Verdict) -> String {
    if v.kind.is_device() {
        return "device".to_string();
    }
    let side = v.side.map(|s| match s {
        Role::Client => "client",
        Role::Server => "server",
    });
    let flow = v.flow.map(flow_label);
    match (side, flow) {
        (Some(s), Some(f)) => format!("{s}, {f}"),
        (Some(s), None) => s.to_string(),
        (None, Some(f)) => f.to_string(),
        (None, None) => "whole test".to_string(),
    }
}

/// "low", "medium" or "high".
pub fn confidence_name(c: Confidence) -> &'static str {
    match c {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    }
}
