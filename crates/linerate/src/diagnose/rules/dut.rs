//! `device_interrupt_bound`, `device_cpu_bound` and `device_drops`: what limited the device
//! under test, from its own counters (`--dut`). Seed 000 found its router "completely
//! interrupt bound": one CPU of the device saturated in interrupt and softirq work while
//! the tester had room.

use super::*;
use crate::model::dut::{DutCounters, DutCpu};

/// Each frame size's `device_verdicts` of an RFC 2544 run (`--dut`): [`device_verdicts`] over
/// the device's counters in the trial at the throughput rate, the device not judged where
/// the tester was the limit.
pub fn rfc2544_device_verdicts(sizes: &mut [crate::rfc2544::record::FrameSizeRecord]) {
    use crate::rfc2544::throughput::ThroughputStatus;
    for f in sizes {
        let tester_limited = f
            .throughput
            .as_ref()
            .and_then(|t| t.goals.first())
            .is_some_and(|g| g.status == ThroughputStatus::TesterLimited);
        if let Some(d) = f.device_at_throughput() {
            f.device_verdicts = device_verdicts(d, tester_limited).0;
        }
    }
}

/// The device's verdicts over one window; `tester_limited` when the tester was the limit
/// (then the device's CPUs are not judged: it was not pushed to its own limit). The second
/// list says what could not be judged.
pub fn device_verdicts(d: &DutCounters, tester_limited: bool) -> (Vec<Verdict>, Vec<String>) {
    let mut out = Vec::new();
    let mut nj = Vec::new();
    let name = &d.device;
    match (&d.cpu, tester_limited) {
        (None, _) => nj.push(format!("device {name}: no CPU times")),
        (Some(_), true) => nj.push(format!(
            "device {name}: its CPUs are not judged, the tester was the limit"
        )),
        (Some(c), false) if c.busiest_busy_percent >= CPU_ONE_BUSY_PERCENT => {
            out.push(cpu_verdict(d, c));
        }
        (Some(_), false) => {}
    }
    out.extend(drops_verdict(d));
    (out, nj)
}

/// `device_interrupt_bound` or `device_cpu_bound`: the device's busiest CPU `c` was
/// saturated, in interrupts and softirq or outside them.
fn cpu_verdict(d: &DutCounters, c: &DutCpu) -> Verdict {
    let name = &d.device;
    let irq_work = (c.busiest_softirq_percent + c.busiest_irq_percent).min(100.0);
    let interrupts = irq_work >= SOFTIRQ_DOMINANT_PERCENT;
    let shared = d.same_host == Some(true);
    let mut evidence = vec![
        ev(
            "device_busiest_cpu_util_percent",
            c.busiest_busy_percent.min(100.0),
            "percent",
            Some(">= 95"),
        ),
        ev(
            "device_busiest_cpu_irq_softirq_percent",
            irq_work,
            "percent",
            Some(if interrupts { ">= 50" } else { "< 50" }),
        ),
        ev(
            "device_cpu_util_percent",
            c.all_busy_percent.min(100.0),
            "percent",
            None,
        ),
    ];
    if let Some(s) = &d.net_rx_softirqs {
        if let Some(ns) = d.duration_ns.filter(|&n| n > 0) {
            evidence.push(ev(
                "device_net_rx_softirqs_per_sec",
                s.counts.total as f64 * 1e9 / ns as f64,
                "per_sec",
                None,
            ));
        }
    }
    let caveat = if shared {
        " The device is a network namespace on the tester's host: its CPU counters are the host's, the tester's work included."
    } else {
        ""
    };
    let (kind, what, suggestion) = if interrupts {
        (
            VerdictKind::DeviceInterruptBound,
            format!(
                "the device {name} is interrupt/softirq bound: its CPU {} was {} busy, {} of it in interrupts and softirq, while the tester had room.{caveat}",
                c.busiest_cpu,
                pct(c.busiest_busy_percent.min(100.0)),
                pct(irq_work)
            ),
            "spread the device's receive work over more CPUs (RSS queues, RPS, IRQ affinity) or coalesce interrupts (ethtool -C); larger frames need fewer interrupts per byte",
        )
    } else {
        (
            VerdictKind::DeviceCpuBound,
            format!(
                "the device {name} is CPU bound: its CPU {} was {} busy, mostly outside interrupts ({} in interrupts and softirq).{caveat}",
                c.busiest_cpu,
                pct(c.busiest_busy_percent.min(100.0)),
                pct(irq_work)
            ),
            "see what runs on the device's busy CPU (top, perf top): user-space forwarding, firewall rules or other work",
        )
    };
    Verdict {
        kind,
        side: None,
        flow: None,
        confidence: if shared {
            Confidence::Low
        } else {
            Confidence::Medium
        },
        evidence,
        message: what,
        suggestion: suggestion.into(),
    }
}

/// `device_drops`: the device dropped at least [`MIN_DROPS`] packets at ingress.
fn drops_verdict(d: &DutCounters) -> Option<Verdict> {
    let name = &d.device;
    let drops = d.ingress_drops();
    if drops < MIN_DROPS {
        return None;
    }
    let rx = d.rx_packets();
    let share = drops as f64 * 100.0 / (rx.saturating_add(drops)).max(1) as f64;
    let worst = d
        .interfaces
        .iter()
        .max_by_key(|i| i.ingress_drops())
        .map_or_else(String::new, |i| i.name.clone());
    Some(Verdict {
        kind: VerdictKind::DeviceDrops,
        side: None,
        flow: None,
        confidence: Confidence::High,
        evidence: vec![
            ev(
                "device_ingress_drops",
                drops as f64,
                "count",
                Some(&format!(">= {MIN_DROPS}")),
            ),
            ev(
                "device_ingress_drop_percent",
                share.min(100.0),
                "percent",
                None,
            ),
        ],
        message: format!(
            "the device {name} dropped {drops} packets at ingress ({} of what arrived; most at {worst}): rx_dropped, missed and FIFO overruns",
            pct(share.min(100.0))
        ),
        suggestion: "larger receive rings on the device (ethtool -G), more CPU for its receive processing, or a lower offered rate".into(),
    })
}

/// The device's verdicts for a run record (after the other rules, which say whether the
/// tester was the limit).
pub(super) fn device(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    let Some(d) = &ctx.rec.dut else {
        return;
    };
    let tester_limited = out.iter().any(|v| v.kind == VerdictKind::TesterLimited);
    let (v, n) = device_verdicts(d, tester_limited);
    out.extend(v);
    nj.extend(n);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnosis::place;
    use crate::model::dut::tests::snap;

    #[test]
    fn an_interrupt_bound_device_and_its_drops() {
        let d = DutCounters::between("r:5301", &snap(1, 5), &snap(2, 5), Some("tester"));
        let (v, nj) = device_verdicts(&d, false);
        assert!(nj.is_empty());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, VerdictKind::DeviceInterruptBound);
        assert!(
            v[0].message.contains("CPU 1 was 97.0% busy, 87.0% of it"),
            "{}",
            v[0].message
        );
        assert!(v[0]
            .evidence
            .iter()
            .all(|e| e.unit != "percent" || e.value <= 100.0));
        assert_eq!(place(&v[0]), "device");
        // Drops over the threshold: named with their share.
        let d = DutCounters::between("r", &snap(1, 20), &snap(2, 20), None);
        let (v, _) = device_verdicts(&d, false);
        let drops = v
            .iter()
            .find(|v| v.kind == VerdictKind::DeviceDrops)
            .unwrap();
        assert!(
            drops.message.contains("dropped 20 packets"),
            "{}",
            drops.message
        );
        assert!(drops.message.contains("most at eth0"));
        // The tester was the limit: the CPUs are not judged, drops still are.
        let (v, nj) = device_verdicts(&d, true);
        assert!(v.iter().all(|v| v.kind == VerdictKind::DeviceDrops));
        assert!(nj[0].contains("tester was the limit"));
        // One host: said, and low confidence.
        let d = DutCounters::between("r", &snap(1, 0), &snap(2, 0), Some("dev"));
        let (v, _) = device_verdicts(&d, false);
        assert_eq!(v[0].confidence, Confidence::Low);
        assert!(v[0]
            .message
            .contains("network namespace on the tester's host"));
    }

    #[test]
    fn an_idle_device_gets_no_verdict() {
        let mut a = snap(1, 0);
        let mut b = snap(2, 0);
        for s in [&mut a, &mut b] {
            for c in s.cpu.iter_mut().flatten().map(|c| &mut c.ticks) {
                c.idle += c.softirq;
                c.softirq = 0;
                c.system = 0;
                c.irq = 0;
            }
        }
        let d = DutCounters::between("r", &a, &b, None);
        let (v, nj) = device_verdicts(&d, false);
        assert!(v.is_empty() && nj.is_empty(), "{v:?} {nj:?}");
    }
}
