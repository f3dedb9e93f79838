//! The rules: one function per kind of limit, each with its thresholds as documented
//! constants.
//!
//! | kind | fires when | source |
//! |---|---|---|
//! | `sender_blocked` | a TCP sender blocked (sends that took no byte for 100 ms) ≥ [`BLOCKED_SHARE`] of its window | the sender's own count of its blocked sends, TCP_INFO time-outs and zero-window probes |
//! | `link_bound` | estimated wire rate ≥ [`LINK_BOUND_FRACTION`] of the link | `--link-rate`, interface speeds, the sender's tbf/htb rate |
//! | `receiver_drops` | lost datagrams overflowed the socket buffer; backlog, TCP queue or NIC drops | receiver's SNMP, softnet, interface counters |
//! | `conntrack_drops` | conntrack dropped ≥ [`MIN_CONNTRACK_DROPS`] packets or failed an insert (a full table drops new connections' SYNs) | each end's `/proc/net/stat/nf_conntrack`, `nf_conntrack_count` of `_max`, `TcpExt.TCPSynRetrans` |
//! | `datagram_loss` | ≥ [`UDP_LOSS_MIN_PERCENT`] of datagrams lost (gaps and after the last one received) and not explained by `receiver_drops` or `link_bound` | both ends' datagram counts |
//! | `window_limited` | a granted buffer under [`WINDOW_MIN_SEGMENTS`] × the path's MSS; or rwnd/sndbuf-limited ≥ [`WINDOW_LIMITED_SHARE`] of busy time and the buffer ≤ [`WINDOW_BDP_FACTOR`] × BDP (an autotuned buffer not over loopback nor at a saturated receiver) | granted buffers, sender's TCP_INFO, time-outs and zero-window counters |
//! | `window_oversized` | a requested buffer ≥ [`WINDOW_OVERSIZED_FACTOR`] × BDP | plan, TCP_INFO min RTT |
//! | `queueing_delay` | a `--latency` probe's loaded median ≥ [`QUEUE_DELAY_FACTOR`] × its idle one and ≥ [`QUEUE_DELAY_MIN_NS`] longer | the TCP_RR and UDP_RR probes, the loaded flows' TCP_INFO RTT |
//! | `retransmission_bound` | retransmitted ≥ [`RETRANS_SHARE`] of data segments and the rate ≥ [`MATHIS_EXPLAINS_FRACTION`] of the Mathis bound | TCP_INFO `total_retrans`, `data_segs_out` |
//! | `delayed_ack_stalls` | delayed-ACK timer fired for ≥ [`DELAYED_ACK_SHARE`] of segments; or a bounceback with TCP_QUICKACK off whose median exchange, less the hold, is ≥ 0.9 × 40 ms with ≥ 0.5 delayed ACKs per exchange (`bounceback.rs`) | receiver's `TcpExt.DelayedACKs`; the exchanges' latency histogram |
//! | `interrupt_bound` | ≥ [`IRQS_PER_1000_PACKETS`] interrupts per 1000 packets and ≥ [`IRQ_CPUS`] CPUs in irq+softirq | host counters, /proc/stat |
//! | `softirq_bound` | busiest CPU ≥ [`CPU_ONE_BUSY_PERCENT`], ≥ [`SOFTIRQ_DOMINANT_PERCENT`] of it softirq | /proc/stat |
//! | `tester_limited` | linerate's threads ≥ [`THREAD_SATURATED_PERCENT`] of a CPU each while CPUs were idle, or the pace was missed; never on a one-CPU host, where the CPU that ran linerate is the system under test (`cpu_bound`) | rusage |
//! | `cpu_bound` | all CPUs ≥ [`CPU_ALL_BUSY_PERCENT`], or one ≥ [`CPU_ONE_BUSY_PERCENT`] | /proc/stat |
//!
//! With `--profile`, `cpu_bound` and `softirq_bound` also name the category and function that
//! took the end's busy samples (`profile_*` evidence, advice by category, see `profile.rs`).
//! | `device_interrupt_bound` | a device CPU ≥ [`CPU_ONE_BUSY_PERCENT`], ≥ [`SOFTIRQ_DOMINANT_PERCENT`] of it irq + softirq, tester not limited | the device's /proc/stat (`--dut`) |
//! | `device_cpu_bound` | a device CPU ≥ [`CPU_ONE_BUSY_PERCENT`], mostly other work, tester not limited | the device's /proc/stat |
//! | `device_drops` | ≥ [`MIN_DROPS`] packets dropped, missed or overrun at the device's ingress | the device's interface counters |

mod blocked;
mod bounceback;
mod conntrack;
mod cpu;
mod drops;
pub mod dut;
mod link;
mod loss;
mod profile;
mod queue;
mod tcp;
mod trace;
mod window;

use linerate_wire::report::Role;

use super::facts::{
    self, median, rx_interval_bps, snmp, snmp_sum, tcp_sums, wire_bps, Ctx, End, Flow,
};
use super::{Confidence, Evidence, Verdict, VerdictKind};
use crate::model::units::{format_bps, format_bytes};
use blocked::sender_blocked;
use bounceback::bounceback_stalls;
use conntrack::conntrack_drops;
use cpu::{cpu, interrupts, missed_pace, threads_saturated};
use drops::receiver_drops;
use link::link_bound;
use loss::datagram_loss;
use queue::queueing_delay;
use tcp::{delayed_acks, retransmissions};
use trace::trace_findings;
use window::window;

/// System-wide CPU utilisation (percent of all CPUs) at which an end is CPU bound. Not 100:
/// /proc/stat is sampled in ticks and the meter and control threads leave a little idle
/// time even on a saturated host.
pub const CPU_ALL_BUSY_PERCENT: f64 = 90.0;

/// Utilisation of the busiest single CPU at which it is saturated. Higher than the
/// all-CPU threshold: one CPU's tick sampling is less noisy in relative terms only when it
/// is nearly always busy, and 90 % on one CPU still leaves it room.
pub const CPU_ONE_BUSY_PERCENT: f64 = 95.0;

/// A `--latency` probe's loaded median over its idle median at which the load's queue is
/// what the probes waited for: a busy host's scheduling adds a little (seen on loopback at
/// 20 Gbit/s: 1.1×); a queue that matters adds many round trips.
pub const QUEUE_DELAY_FACTOR: f64 = 5.0;

/// The least delay a queue must add to a probe's median to be named, ns: the draft's
/// "excellent" band ends at 10 ms round trips (6000 RPM), and less added delay is not what
/// users of a path notice.
pub const QUEUE_DELAY_MIN_NS: i64 = 10_000_000;

/// Share of the busiest CPU spent in softirq (percent of that CPU) at which softirq is what
/// saturates it: more than all other kinds of work together.
pub const SOFTIRQ_DOMINANT_PERCENT: f64 = 50.0;

/// CPU of each linerate data thread (percent of one CPU) at which the thread is saturated.
pub const THREAD_SATURATED_PERCENT: f64 = 90.0;

/// Share of the sender's window spent blocked at which the stall is named: a fifth of the
/// test moved nothing, more than any congestion-control dip or a single retransmission
/// time-out of a short test costs (the first is 200 ms at least; a blocked send counts
/// only whole 100 ms waits).
pub const BLOCKED_SHARE: f64 = 0.2;

/// Share from which the verdict has high confidence: half the window.
pub const BLOCKED_HIGH_SHARE: f64 = 0.5;

/// A paced sender that reached less than this fraction of its rate missed the pace.
pub const PACE_ACHIEVED_FRACTION: f64 = 0.90;

/// Interrupts of the interface per 1000 of its packets at which interrupts are "many": an
/// interrupt every second packet. NAPI with default coalescing batches tens of packets per
/// interrupt under load (Bill Fink's GMAC and SUNGEM comparison: "an abnormally large number of interrupts").
pub const IRQS_PER_1000_PACKETS: f64 = 500.0;

/// CPUs' worth of time in irq + softirq (system-wide share × CPU count) at which interrupt
/// handling is a large cost: half a CPU.
pub const IRQ_CPUS: f64 = 0.5;

/// Fewer packets than this through the interface say nothing about interrupt batching.
pub const MIN_PACKETS_FOR_IRQ_RULE: u64 = 10_000;

/// Share of TCP's busy time spent limited by the receive window or the send buffer
/// (TCP_INFO `rwnd_limited + sndbuf_limited` ÷ `busy_time`) at which the window limits.
pub const WINDOW_LIMITED_SHARE: f64 = 0.5;

/// A lower share still counts when the peer's advertised window was at least half full
/// ([`WINDOW_FILL`]): TCP_INFO's chrono times also count time the sender waited for other
/// reasons (small-queue limits, pacing), which on one busy host dilutes the rwnd share.
pub const WINDOW_SOME_SHARE: f64 = 0.25;

/// Bytes in flight (achieved rate × RTT per stream) over the peer's advertised window at
/// which the window was full enough to bind.
pub const WINDOW_FILL: f64 = 0.5;

/// A window binds only if the buffer behind it is about the bandwidth-delay product at the
/// achieved rate (throughput = window ÷ RTT). The kernel doubles SO_SNDBUF/SO_RCVBUF
/// requests and uses only part of the receive buffer as window (`tcp_adv_win_scale`,
/// `scaling_ratio`), so "about" is up to 4× the BDP. A larger buffer that is still "full"
/// means a slow reader, not a small window.
pub const WINDOW_BDP_FACTOR: f64 = 4.0;

/// A socket buffer that holds fewer than this many segments of the path's MSS is tiny: the
/// window, not the bandwidth-delay product, sets the pace. With fewer than four segments in
/// flight a loss can never raise three duplicate ACKs (fast retransmit), so every loss waits
/// for the retransmission timer (200 ms at least on Linux); a receive window below one MSS
/// leaves the sender waiting for window updates or its persist timer. Throughput then
/// follows the timers, not window ÷ RTT (seen: `-w 4K` on loopback, MSS 64 KiB, a few
/// hundred kbit/s).
pub const WINDOW_MIN_SEGMENTS: f64 = 4.0;

/// The smallest SO_SNDBUF Linux grants (`SOCK_MIN_SNDBUF`: twice 2048 bytes plus an
/// sk_buff, about 4.5 KiB on x86-64); smaller requests are raised to it. Approximate: the
/// size of an sk_buff depends on the build.
pub const KERNEL_MIN_SNDBUF_BYTES: u64 = 4608;

/// The smallest SO_RCVBUF Linux grants (`SOCK_MIN_RCVBUF`: 2048 bytes plus an sk_buff).
pub const KERNEL_MIN_RCVBUF_BYTES: u64 = 2304;

/// A requested buffer this many times the bandwidth-delay product is absurdly large
/// (Bill Fink's GMAC and SUNGEM comparison: 768 KB on a GigE LAN with a 0.12 ms RTT, ~50× its 15 KB BDP).
pub const WINDOW_OVERSIZED_FACTOR: f64 = 50.0;

/// Buffers below this are never called oversized: they cost little memory and hold little
/// queue, and at microsecond RTTs (one host, veth) the minimum RTT makes any BDP tiny.
pub const WINDOW_OVERSIZED_MIN_BYTES: u64 = 256 * 1024;

/// Estimated on-the-wire rate as a fraction of the link (or shaped) rate at which the link
/// is full. The estimate adds headers and Ethernet framing, so a full link reads 0.95-1.0.
pub const LINK_BOUND_FRACTION: f64 = 0.90;

/// UDP loss (percent of datagrams) below which loss is not judged.
pub const UDP_LOSS_MIN_PERCENT: f64 = 0.1;

/// UDP loss (percent of datagrams) from which unexplained loss is a medium-confidence
/// `datagram_loss`: one datagram in a hundred is more than a healthy path or host drops.
pub const DATAGRAM_LOSS_PERCENT: f64 = 1.0;

/// UDP loss (percent) from which `datagram_loss` has high confidence.
pub const DATAGRAM_LOSS_HIGH_PERCENT: f64 = 10.0;

/// Receive-side drops (backlog, TCP queue, NIC) below this count are noise.
pub const MIN_DROPS: u64 = 10;

/// Packets conntrack dropped for want of an entry at which it is named: one. Unlike the
/// other drops these are never routine: each is a new connection's SYN (or another first
/// packet) thrown away before TCP saw it, which costs that connection a retransmission
/// time-out (1 s at first).
pub const MIN_CONNTRACK_DROPS: u64 = 1;

/// Share of data segments retransmitted (TCP_INFO `total_retrans ÷ data_segs_out`) at
/// which loss sets TCP's rate: at 1 % loss Reno's throughput is bounded near
/// 12.2 × MSS/RTT (Mathis et al. 1997).
pub const RETRANS_SHARE: f64 = 0.01;

/// The achieved rate over the Mathis bound at that loss, below which the loss does not
/// explain the rate: the loss would allow three times more, so something else held the
/// flow back and `retransmission_bound` is not claimed.
pub const MATHIS_EXPLAINS_FRACTION: f64 = 1.0 / 3.0;

/// linerate's own threads (percent of one CPU, both ends on one host) below which busy CPUs
/// were busy with other processes' work: the CPU verdict is then low confidence.
pub const OWN_CPU_MIN_PERCENT: f64 = 10.0;

/// Delayed-ACK timer firings per received segment at which delayed ACKs stall the sender.
/// In a bulk transfer the receiver ACKs every second segment at once; the timer fires only
/// when a lone segment waits (a PowerBook's ttcp receiver, linuxppc 1999: ~10 ms stalls).
pub const DELAYED_ACK_SHARE: f64 = 0.01;

/// Fewer delayed ACKs than this are noise (connection set-up and tear-down).
pub const MIN_DELAYED_ACKS: u64 = 20;

/// An interval below this fraction of the median interval is a throughput gap.
pub const GAP_FRACTION: f64 = 0.5;

/// One evidence figure. `threshold` is the rule's condition on this value, `OP NUMBER`
/// (`>=`, `>`, `<=`, `<`), and is given only when the value meets it: the property tests
/// check every verdict's evidence against its thresholds.
fn ev(metric: impl Into<String>, value: f64, unit: &str, threshold: Option<&str>) -> Evidence {
    Evidence {
        metric: metric.into(),
        value,
        unit: unit.to_string(),
        threshold: threshold.map(str::to_string),
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Client => "client",
        Role::Server => "server",
    }
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else {
        format!("{v:.0} us")
    }
}

/// Runs every rule; verdicts into `out`, gaps in the evidence into `not_judged`.
pub(crate) fn run_all(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, not_judged: &mut Vec<String>) {
    sender_blocked(ctx, out);
    link_bound(ctx, out, not_judged);
    receiver_drops(ctx, out, not_judged);
    conntrack_drops(ctx, out);
    datagram_loss(ctx, out);
    window(ctx, out, not_judged);
    retransmissions(ctx, out, not_judged);
    delayed_acks(ctx, out, not_judged);
    bounceback_stalls(ctx, out);
    trace_findings(ctx, out);
    // A paced test that met its pace was limited by the pace: busy CPUs (other processes
    // included) did not hold it back, so no CPU verdict is claimed.
    if !pace_met(ctx) {
        cpu(ctx, out, not_judged);
        interrupts(ctx, out);
    }
    missed_pace(ctx, out);
    queueing_delay(ctx, out);
    dut::device(ctx, out, not_judged);
}

/// What figures count, where it matters for reading them ([`loss::packet_notes`]), and
/// an MTU that differs between the two ends ([`mtu_note`]).
pub(crate) fn notes(ctx: &Ctx<'_>) -> Vec<String> {
    let mut out = loss::packet_notes(ctx);
    out.extend(mtu_note(ctx));
    out
}

/// The two ends' interfaces have different MTUs: TCP settles on the smaller one (its MSS
/// comes from the path), but a UDP datagram that fits only the larger is fragmented or
/// dropped on the way, so the two ends do not describe the same path.
fn mtu_note(ctx: &Ctx<'_>) -> Option<String> {
    let facts = |r: Option<&linerate_wire::report::SideReport>| {
        let i = r?.interface.as_ref()?;
        Some((i.name.clone(), i.mtu?))
    };
    let (cn, cm) = facts(Some(&ctx.rec.client))?;
    let (sn, sm) = facts(ctx.rec.server.as_ref())?;
    if cm == sm {
        return None;
    }
    let small = cm.min(sm);
    let mut text = format!(
        "MTU mismatch: the client's {cn} has MTU {cm} and the server's {sn} MTU {sm}; packets \
         larger than {small} bytes cannot cross the smaller end unfragmented"
    );
    if ctx.tcp {
        text.push_str(", and TCP keeps its segments to the smaller MTU");
    } else {
        // IPv4 + UDP headers: 28 bytes.
        let payload = small.saturating_sub(28);
        if ctx.rec.plan.write_size > payload {
            text.push_str(&format!(
                "; this test's {}-byte datagrams do not fit (at most {payload} bytes over IPv4), \
                 so they are fragmented or dropped: set one MTU on both ends, or -l {payload}",
                ctx.rec.plan.write_size
            ));
        }
    }
    Some(text)
}

/// Every flow's sender reached at least [`PACE_ACHIEVED_FRACTION`] of the paced rate.
fn pace_met(ctx: &Ctx<'_>) -> bool {
    let Some(r) = ctx.rec.plan.rate_bps.filter(|r| *r > 0) else {
        return false;
    };
    !ctx.flows.is_empty()
        && ctx.flows.iter().all(|f| {
            f.summary
                .sender_bps
                .is_some_and(|s| s >= PACE_ACHIEVED_FRACTION * r as f64)
        })
}

/// Drivers whose reported speed is nominal, not a line rate (veth always says 10 Gbit/s,
/// yet moves what the CPUs can copy): their speed is never taken as a link's capacity.
pub const NOMINAL_SPEED_DRIVERS: &[&str] = &[
    "veth",
    "tun",
    "dummy",
    "bridge",
    "macvlan",
    "ipvlan",
    "vxlan",
    "geneve",
    "wireguard",
];

/// The link's rate and where it comes from: the smallest of the `--link-rate` hint, the two
/// ends' interface speeds (drivers in [`NOMINAL_SPEED_DRIVERS`] left out) and a rate a root
/// qdisc (tbf, htb) shapes the sender's interface to. Only the sender's shaper counts: a
/// shaper is on egress, and the receiver's egress carries the flow's ACKs, not its data.
fn capacity(ctx: &Ctx<'_>, f: &Flow<'_>) -> Option<(f64, String)> {
    let hint = ctx
        .rec
        .plan
        .link_rate_bps
        .filter(|&r| r > 0)
        .map(|r| (r as f64, "the --link-rate given".to_string()));
    let speeds = [(f.sender, f.sender_role), (f.receiver, f.receiver_role)]
        .into_iter()
        .filter_map(|(s, role)| {
            let i = s?.interface.as_ref()?;
            if i.driver
                .as_deref()
                .is_some_and(|d| NOMINAL_SPEED_DRIVERS.contains(&d))
            {
                return None;
            }
            let mbps = i.speed_mbps.filter(|&m| m > 0)?;
            Some((
                f64::from(mbps) * 1e6,
                format!("the speed of {} at the {}", i.name, role_name(role)),
            ))
        });
    let shaper = f.sender.and_then(|s| s.interface.as_ref()).and_then(|i| {
        let rate = i.shaped_rate_bps.filter(|&r| r > 0)?;
        Some((
            rate as f64,
            format!(
                "{} on {} at the {}",
                i.root_qdisc.as_deref().unwrap_or("a shaper"),
                i.name,
                role_name(f.sender_role)
            ),
        ))
    });
    hint.into_iter()
        .chain(speeds)
        .chain(shaper)
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

fn flow_mss(f: &Flow<'_>) -> Option<f64> {
    tcp_sums(&f.tx_streams()).map(|s| s.mss).or_else(|| {
        f.tx_streams()
            .iter()
            .filter_map(|s| s.mss_bytes)
            .map(f64::from)
            .next()
    })
}

/// Datagrams one `Udp.RcvbufErrors` can stand for: with UDP GRO the kernel drops (and
/// counts) a whole aggregate of up to 64 datagrams (`UDP_GRO_CNT_MAX`) at once.
pub const UDP_GRO_MAX_SEGMENTS: u64 = 64;

fn rcvbuf_flag(receiver: Role) -> &'static str {
    match receiver {
        Role::Server => "--remote-rcvbuf SIZE, or -S / -w",
        Role::Client => "--local-rcvbuf SIZE, or -s / -w",
    }
}

fn sndbuf_flag(sender: Role) -> &'static str {
    match sender {
        Role::Client => "--local-sndbuf SIZE, or -s / -w",
        Role::Server => "--remote-sndbuf SIZE, or -S / -w",
    }
}

/// The buffer a plan asked for on an end: (sender's SO_SNDBUF, receiver's SO_RCVBUF).
fn requested(ctx: &Ctx<'_>, f: &Flow<'_>) -> (Option<u32>, Option<u32>) {
    let p = &ctx.rec.plan;
    let snd = match f.sender_role {
        Role::Client => p.local_sndbuf,
        Role::Server => p.remote_sndbuf,
    };
    let rcv = match f.receiver_role {
        Role::Client => p.local_rcvbuf,
        Role::Server => p.remote_rcvbuf,
    };
    (snd, rcv)
}

/// The `none` verdict: no single limit stands out, with the key numbers.
pub(crate) fn nothing_stands_out(ctx: &Ctx<'_>) -> Verdict {
    let mut evidence = Vec::new();
    let mut parts = Vec::new();
    for f in &ctx.flows {
        if let Some(b) = f.payload_bps() {
            let label = crate::model::labels::flow_label(f.direction());
            parts.push(format!("{label} {}", format_bps(b)));
            evidence.push(ev(
                format!("{}_bps", label.replace("->", "_to_")),
                b,
                "bps",
                None,
            ));
        }
        if let Some(s) = tcp_sums(&f.tx_streams()) {
            parts.push(format!("RTT {}", us(s.srtt_us)));
            evidence.push(ev("srtt_us", s.srtt_us, "us", None));
        }
        if let Some(r) = f.summary.retransmits {
            parts.push(format!("{r} retransmits"));
        }
        if let Some(l) = f.summary.loss_percent {
            parts.push(format!("loss {l:.2}%"));
            evidence.push(ev("udp_loss_percent", l, "percent", None));
        }
    }
    for e in &ctx.ends {
        if let Some(c) = e.cpu() {
            parts.push(format!(
                "{} CPU {} (busiest {})",
                role_name(e.role),
                pct(c.util_percent),
                pct(c.busiest_cpu_util_percent)
            ));
            evidence.push(ev(
                format!("{}_cpu_util_percent", role_name(e.role)),
                c.util_percent,
                "percent",
                None,
            ));
        }
    }
    let paced = ctx.rec.plan.rate_bps.filter(|r| {
        ctx.flows.iter().any(|f| {
            f.summary
                .sender_bps
                .is_some_and(|s| s >= PACE_ACHIEVED_FRACTION * *r as f64)
        })
    });
    let lead = match paced {
        Some(r) => format!(
            "The pace set the rate (-b {}); no other limit stands out",
            format_bps(r as f64)
        ),
        None => "No single limit stands out".to_string(),
    };
    let numbers = if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(", "))
    };
    Verdict {
        kind: VerdictKind::None,
        side: None,
        flow: None,
        confidence: Confidence::Medium,
        evidence,
        message: format!("{lead}{numbers}."),
        suggestion: "Nothing measured points to one limit. A longer test (-t), more streams (-P) \
            or `linerate doctor HOST` may show more."
            .to_string(),
    }
}
