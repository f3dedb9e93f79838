//! `cpu_bound`, `softirq_bound`, `interrupt_bound` and `tester_limited`: where the CPUs went.

use super::*;
use linerate_wire::report::CpuReport;

/// `cpu_bound`, `softirq_bound` and the thread half of `tester_limited`, per end (once when
/// both ends are one host).
pub(super) fn cpu(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    let ends: Vec<&End<'_>> = if ctx.same_host {
        ctx.ends.iter().take(1).collect()
    } else {
        ctx.ends.iter().collect()
    };
    for e in ends {
        match e.cpu() {
            Some(c) => cpu_end(ctx, e, c, out),
            None => nj.push(format!(
                "CPU: the {} did not measure /proc/stat",
                role_name(e.role)
            )),
        }
    }
}

/// The words and figures every CPU verdict of one end shares.
struct CpuText {
    /// linerate's threads used under [`OWN_CPU_MIN_PERCENT`] of one CPU: the load was other
    /// processes' (the verdict is then low confidence).
    others: bool,
    side: Option<Role>,
    who: String,
    evidence: Vec<Evidence>,
    own_text: String,
    one_host: &'static str,
    /// What `--profile` says about the time (sentence, advice), empty without a profile.
    profile: (String, String),
}

/// Which CPU condition held: each verdict states the thresholds of its own branch.
#[derive(Clone, Copy, PartialEq)]
enum Branch {
    /// All CPUs ≥ [`CPU_ALL_BUSY_PERCENT`].
    AllBusy,
    /// All CPUs below that, the busiest ≥ [`CPU_ONE_BUSY_PERCENT`], ≥
    /// [`SOFTIRQ_DOMINANT_PERCENT`] of it softirq.
    Softirq,
    /// All CPUs below that, the busiest ≥ [`CPU_ONE_BUSY_PERCENT`], mostly not softirq.
    OneCpu,
}

impl CpuText {
    fn new(ctx: &Ctx<'_>, e: &End<'_>, c: &CpuReport, branch: Branch) -> CpuText {
        let all = branch == Branch::AllBusy;
        let mut evidence = vec![
            ev(
                "cpu_util_percent",
                c.util_percent,
                "percent",
                Some(if all { ">= 90" } else { "< 90" }),
            ),
            ev(
                "busiest_cpu_util_percent",
                c.busiest_cpu_util_percent,
                "percent",
                (!all).then_some(">= 95"),
            ),
            ev(
                "busiest_cpu_softirq_percent",
                c.busiest_cpu_softirq_percent,
                "percent",
                match branch {
                    Branch::AllBusy => None,
                    Branch::Softirq => Some(">= 50"),
                    Branch::OneCpu => Some("< 50"),
                },
            ),
        ];
        // linerate's own share, so a reader can tell its load from other processes'.
        let own: Option<f64> = if ctx.same_host {
            ctx.ends.iter().map(|e| e.summary.tool_cpu_percent).sum()
        } else {
            e.summary.tool_cpu_percent
        };
        let others = own.is_some_and(|o| o < OWN_CPU_MIN_PERCENT) && branch != Branch::Softirq;
        let busiest = (branch == Branch::Softirq).then_some(c.busiest_cpu);
        let profile = match super::profile::profile_text(e, busiest) {
            Some(p) => {
                evidence.extend(p.evidence);
                (p.sentence, p.advice)
            }
            None => (String::new(), String::new()),
        };
        // linerate's share of the whole host, in the unit of `cpu_util_percent` (all CPUs),
        // so the two can be read side by side.
        let cpus = f64::from(c.cpu_count.max(1));
        let own_host = own.map(|o| (o / cpus).min(100.0));
        if let Some(o) = own {
            let th = others.then_some("< 10");
            evidence.push(ev("tool_cpu_percent", o, "percent_of_one_cpu", th));
        }
        if let Some(h) = own_host {
            evidence.push(ev("tool_share_of_all_cpus_percent", h, "percent", None));
        }
        CpuText {
            others,
            side: (!ctx.same_host).then_some(e.role),
            who: if ctx.same_host {
                "client and server (one host)".to_string()
            } else {
                format!("the {}", role_name(e.role))
            },
            evidence,
            own_text: match (own, own_host) {
                (Some(o), Some(h)) if others => format!(
                    " The host was busy with other work: {} CPU, linerate {} (its threads used \
                     {} of one CPU); other processes kept the CPUs busy, which delays the \
                     test's threads but may not be what set its rate.",
                    pct(c.util_percent),
                    pct(h),
                    pct(o)
                ),
                (Some(o), Some(h)) => format!(
                    " linerate's own threads used {} of one CPU ({} of all CPUs); the rest is \
                     the kernel's work for them and other processes'.",
                    pct(o),
                    pct(h)
                ),
                _ => String::new(),
            },
            one_host: if ctx.same_host {
                " Client and server share this host: run them on two hosts to measure either alone."
            } else {
                ""
            },
            profile,
        }
    }

    fn verdict(
        self,
        kind: VerdictKind,
        confidence: Confidence,
        message: String,
        suggestion: String,
    ) -> Verdict {
        let (message, suggestion) = if self.profile.1.is_empty() {
            (message + &self.profile.0, suggestion)
        } else {
            (
                message + &self.profile.0,
                format!("{} {suggestion}", self.profile.1),
            )
        };
        Verdict {
            kind,
            side: self.side,
            flow: None,
            confidence: if self.others {
                Confidence::Low
            } else {
                confidence
            },
            evidence: self.evidence,
            message,
            suggestion,
        }
    }
}

/// The CPU verdicts of one end: all CPUs busy; else the busiest CPU saturated, by softirq,
/// by linerate's own threads (tester limited) or by other work.
fn cpu_end(ctx: &Ctx<'_>, e: &End<'_>, c: &CpuReport, out: &mut Vec<Verdict>) {
    if c.util_percent >= CPU_ALL_BUSY_PERCENT {
        let t = CpuText::new(ctx, e, c, Branch::AllBusy);
        let message = if c.cpu_count <= 1 {
            format!(
                "The only CPU of {} was busy: {}.{}{ONE_CPU}",
                t.who,
                pct(c.util_percent),
                t.own_text
            )
        } else {
            format!(
                "All CPUs of {} were busy: {} of {} CPUs (busiest CPU {} at {}).{}",
                t.who,
                pct(c.util_percent),
                c.cpu_count,
                c.busiest_cpu,
                pct(c.busiest_cpu_util_percent),
                t.own_text
            )
        };
        let suggestion = format!(
            "The CPUs are the limit: fewer cycles per byte help (larger writes -l, offloads \
             on: `ethtool -K IF tso on gso on gro on`, jumbo frames), or a faster host.{}",
            t.one_host
        );
        out.push(t.verdict(VerdictKind::CpuBound, Confidence::High, message, suggestion));
        return;
    }
    if c.busiest_cpu_util_percent < CPU_ONE_BUSY_PERCENT {
        return;
    }
    if c.busiest_cpu_softirq_percent >= SOFTIRQ_DOMINANT_PERCENT {
        let t = CpuText::new(ctx, e, c, Branch::Softirq);
        let message = format!(
            "CPU {} of {} was {} busy, {} of it in softirq (packet processing), while all \
             CPUs together were {} busy.",
            c.busiest_cpu,
            t.who,
            pct(c.busiest_cpu_util_percent),
            pct(c.busiest_cpu_softirq_percent),
            pct(c.util_percent)
        );
        let suggestion = "Spread packet processing over more CPUs: more queues (`ethtool -L \
            IF combined N`), RSS or RPS (`echo MASK > /sys/class/net/IF/queues/rx-0/rps_cpus`), \
            irqbalance; several streams (-P) hash to different queues."
            .to_string();
        out.push(t.verdict(
            VerdictKind::SoftirqBound,
            Confidence::High,
            message,
            suggestion,
        ));
        return;
    }
    let candidates: Vec<&End<'_>> = if ctx.same_host {
        ctx.ends.iter().collect()
    } else {
        vec![e]
    };
    let saturated: Vec<&End<'_>> = candidates
        .into_iter()
        .filter(|e| threads_saturated(e).is_some())
        .collect();
    if !saturated.is_empty() {
        out.extend(saturated.into_iter().map(|s| tester_threads(s, c)));
        return;
    }
    // (A one-CPU host whose only CPU is saturated took the all-busy branch above, unless
    // its figures disagree; `tester_threads` judges that case too.)
    let t = CpuText::new(ctx, e, c, Branch::OneCpu);
    let message = format!(
        "One CPU of {} was saturated: CPU {} at {} while all CPUs together were {} busy.{}",
        t.who,
        c.busiest_cpu,
        pct(c.busiest_cpu_util_percent),
        pct(c.util_percent),
        t.own_text
    );
    let suggestion = format!(
        "One CPU does the work: spread it (more streams -P pinned apart with -A, RSS/RPS for \
         receive processing, irqbalance).{}",
        t.one_host
    );
    out.push(t.verdict(
        VerdictKind::CpuBound,
        Confidence::Medium,
        message,
        suggestion,
    ));
}

/// CPU per data thread of an end (percent of one CPU) when ≥ [`THREAD_SATURATED_PERCENT`].
/// At most 100: a thread runs on one CPU at a time, and a figure above (a thread's time
/// counted a little past the measured window) means the thread was saturated.
pub(super) fn threads_saturated(e: &End<'_>) -> Option<f64> {
    let tool = e.summary.tool_cpu_percent?;
    let threads = e.report.streams.len().max(1) as f64;
    Some((tool / threads).min(100.0)).filter(|t| *t >= THREAD_SATURATED_PERCENT)
}

/// Said of a host with one CPU: there is no other CPU for the tester, so its load is part of
/// what was measured.
const ONE_CPU: &str = " This host has one CPU: the CPU that ran linerate is the system under \
    test, so the figure is this host's with the test's own work counted in it, not a tester \
    limit.";

/// The end's host has one CPU.
fn one_cpu(e: &End<'_>) -> bool {
    e.cpu().is_some_and(|c| c.cpu_count <= 1)
}

fn tester_threads(e: &End<'_>, c: &linerate_wire::report::CpuReport) -> Verdict {
    let per = threads_saturated(e).unwrap_or(0.0);
    let n = e.report.streams.len().max(1);
    if one_cpu(e) {
        // No other CPU had idle time: the one CPU that ran linerate is the system.
        return Verdict {
            kind: VerdictKind::CpuBound,
            side: Some(e.role),
            flow: None,
            confidence: Confidence::Medium,
            evidence: vec![
                ev(
                    "tool_cpu_percent_per_thread",
                    per,
                    "percent_of_one_cpu",
                    Some(">= 90"),
                ),
                ev("data_threads", n as f64, "count", None),
                ev("cpu_count", 1.0, "count", Some("<= 1")),
                ev(
                    "busiest_cpu_util_percent",
                    c.busiest_cpu_util_percent,
                    "percent",
                    Some(">= 95"),
                ),
            ],
            message: format!(
                "linerate's {n} data thread(s) on the {} used {} of its only CPU (system \
                 calls included).{ONE_CPU}",
                role_name(e.role),
                pct(per)
            ),
            suggestion: "Fewer cycles per byte help (larger writes -l, offloads on); to \
                measure the network path without this host's CPU in it, run linerate on a \
                host with more CPUs."
                .to_string(),
        };
    }
    Verdict {
        kind: VerdictKind::TesterLimited,
        side: Some(e.role),
        flow: None,
        confidence: Confidence::Medium,
        evidence: vec![
            ev(
                "tool_cpu_percent_per_thread",
                per,
                "percent_of_one_cpu",
                Some(">= 90"),
            ),
            ev("data_threads", n as f64, "count", None),
            ev(
                "busiest_cpu_util_percent",
                c.busiest_cpu_util_percent,
                "percent",
                Some(">= 95"),
            ),
            ev("cpu_util_percent", c.util_percent, "percent", Some("< 90")),
        ],
        message: format!(
            "linerate's {n} data thread(s) on the {} used {} of a CPU each (system calls \
             included) while other CPUs had idle time: one thread per stream set the rate.",
            role_name(e.role),
            pct(per)
        ),
        suggestion: "Use more streams (-P) so more CPUs work, larger writes (-l) for fewer \
            calls; for UDP keep GSO/GRO on (no --no-offload)."
            .to_string(),
    }
}

/// `interrupt_bound` per end: ≥ [`IRQS_PER_1000_PACKETS`] interface interrupts per 1000
/// packets over ≥ [`MIN_PACKETS_FOR_IRQ_RULE`] packets, and irq + softirq time ≥
/// [`IRQ_CPUS`] CPUs or the busiest CPU ≥ [`SOFTIRQ_DOMINANT_PERCENT`] in softirq.
/// Interfaces without IRQs of their own (loopback, veth) are not judged.
pub(super) fn interrupts(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    for e in &ctx.ends {
        let Some(hc) = e.report.host_counters.as_ref() else {
            continue;
        };
        let (Some(ipk), Some(st), Some(c)) = (
            hc.interrupts_per_1000_packets,
            hc.interface_stats.as_ref(),
            e.cpu(),
        ) else {
            continue;
        };
        let packets = st.rx_packets + st.tx_packets;
        if packets < MIN_PACKETS_FOR_IRQ_RULE || ipk < IRQS_PER_1000_PACKETS {
            continue;
        }
        let irq_cpus = (c.irq_percent + c.softirq_percent) / 100.0 * f64::from(c.cpu_count);
        let by_time = irq_cpus >= IRQ_CPUS;
        let by_softirq = c.busiest_cpu_softirq_percent >= SOFTIRQ_DOMINANT_PERCENT;
        if !by_time && !by_softirq {
            continue;
        }
        let iface = hc.interface.as_deref().unwrap_or("IF");
        let mut evidence = vec![
            ev(
                "interrupts_per_1000_packets",
                ipk,
                "per_1000_packets",
                Some(">= 500"),
            ),
            ev(
                "interface_packets",
                packets as f64,
                "count",
                Some(">= 10000"),
            ),
            ev(
                "irq_softirq_cpus",
                irq_cpus,
                "cpus",
                by_time.then_some(">= 0.5"),
            ),
            ev(
                "busiest_cpu_softirq_percent",
                c.busiest_cpu_softirq_percent,
                "percent",
                by_softirq.then_some(">= 50"),
            ),
        ];
        if let Some(r) = hc.rates.interface_interrupts_per_sec {
            evidence.push(ev("interface_interrupts_per_sec", r, "per_sec", None));
        }
        let coalescing = e
            .report
            .interface
            .as_ref()
            .and_then(|i| i.coalescing.as_ref())
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| matches!(k.as_str(), "rx-usecs" | "rx-frames" | "adaptive-rx"))
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|s| !s.is_empty());
        out.push(Verdict {
            kind: VerdictKind::InterruptBound,
            side: Some(e.role),
            flow: None,
            confidence: if c.busiest_cpu_util_percent >= CPU_ONE_BUSY_PERCENT { Confidence::High } else { Confidence::Medium },
            evidence,
            message: format!(
                "{iface} on the {} raised {ipk:.0} interrupts per 1000 packets ({:.1} packets per \
                 interrupt) and interrupt handling took {irq_cpus:.2} CPUs ({} irq + {} softirq of all CPUs).",
                role_name(e.role),
                1000.0 / ipk,
                pct(c.irq_percent),
                pct(c.softirq_percent)
            ),
            suggestion: format!(
                "Coalesce interrupts: `ethtool -C {iface} adaptive-rx on` or `ethtool -C {iface} \
                 rx-usecs 50 rx-frames 64`{}; keep GRO on (`ethtool -K {iface} gro on`).",
                coalescing.map_or(String::new(), |c| format!(" (now: {c})"))
            ),
        });
    }
}

/// The pace half of `tester_limited`: a paced sender reached < [`PACE_ACHIEVED_FRACTION`]
/// of its rate while its threads were saturated. (A paced sender below its rate with idle
/// threads was held back by something else, which the other rules judge.)
pub(super) fn missed_pace(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    let Some(rate) = ctx.rec.plan.rate_bps.filter(|r| *r > 0) else {
        return;
    };
    for f in &ctx.flows {
        let (Some(sent), Some(end)) = (f.summary.sender_bps, ctx.end(f.sender_role)) else {
            continue;
        };
        let reached = sent / rate as f64;
        if reached >= PACE_ACHIEVED_FRACTION {
            continue;
        }
        let Some(per) = threads_saturated(end) else {
            continue;
        };
        out.retain(|v| !(v.kind == VerdictKind::TesterLimited && v.side == Some(end.role)));
        if one_cpu(end) {
            // The sender's only CPU is the system under test: the pace it missed is the
            // host's limit. Said with the CPU verdict of that end, or as one.
            let pace = format!(
                " Paced at {}, the {} sent only {} ({:.0}%) with its thread(s) at {} of its \
                 only CPU.",
                format_bps(rate as f64),
                role_name(end.role),
                format_bps(sent),
                reached * 100.0,
                pct(per)
            );
            let evidence = [
                ev("paced_rate_bps", rate as f64, "bps", None),
                ev("sender_bps", sent, "bps", None),
                ev("pace_reached", reached, "ratio", Some("< 0.9")),
                ev(
                    "tool_cpu_percent_per_thread",
                    per,
                    "percent_of_one_cpu",
                    Some(">= 90"),
                ),
                ev("cpu_count", 1.0, "count", Some("<= 1")),
            ];
            match out
                .iter_mut()
                .find(|v| v.kind == VerdictKind::CpuBound && v.side.is_none_or(|s| s == end.role))
            {
                Some(v) => {
                    v.message.push_str(&pace);
                    v.evidence.extend(evidence);
                }
                None => out.push(Verdict {
                    kind: VerdictKind::CpuBound,
                    side: Some(end.role),
                    flow: Some(f.direction()),
                    confidence: Confidence::High,
                    evidence: evidence.into_iter().collect(),
                    message: format!("{}{ONE_CPU}", pace.trim_start()),
                    suggestion: "Fewer cycles per byte help (larger writes or datagrams -l, \
                        GSO on for UDP), or a lower rate (-b)."
                        .to_string(),
                }),
            }
            continue;
        }
        out.push(Verdict {
            kind: VerdictKind::TesterLimited,
            side: Some(end.role),
            flow: Some(f.direction()),
            confidence: Confidence::High,
            evidence: vec![
                ev("paced_rate_bps", rate as f64, "bps", None),
                ev("sender_bps", sent, "bps", None),
                ev("pace_reached", reached, "ratio", Some("< 0.9")),
                ev(
                    "tool_cpu_percent_per_thread",
                    per,
                    "percent_of_one_cpu",
                    Some(">= 90"),
                ),
            ],
            message: format!(
                "Paced at {}, the {} sent only {} ({:.0}%) with its thread(s) at {} of a CPU each.",
                format_bps(rate as f64),
                role_name(end.role),
                format_bps(sent),
                reached * 100.0,
                pct(per)
            ),
            suggestion: "The sender cannot keep the pace: more streams (-P), larger writes or \
                datagrams (-l), GSO on for UDP, or a lower rate (-b)."
                .to_string(),
        });
    }
}
