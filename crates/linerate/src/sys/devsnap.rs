//! The device under test's counters at one moment ([`DeviceSnapshot`], feature
//! `device_counters`): what `linerate serve` sends a tester that was given `--dut`. The
//! same parsers as the local host counters read the files ([`super::cpu`],
//! [`super::interrupts`], [`super::softirqs`], [`super::netdev`]); the tester computes the
//! differences (`model::dut`).
//!
//! `/proc/stat`, `/proc/interrupts` and `/proc/softirqs` are host-wide (a network namespace
//! has no CPUs of its own); the interfaces are those of the reading thread's network
//! namespace (`/proc/thread-self/net/dev`).

use std::collections::BTreeMap;

use linerate_wire::host::InterfaceStats;

use linerate_wire::device::{
    CpuCounts, CpuTicks, DeviceSnapshot, IfaceSnapshot, MAX_DEVICE_CPUS, MAX_DEVICE_INTERFACES,
    MAX_IFNAME, MAX_SNAPSHOT_TEXT, MAX_SNAPSHOT_WARNINGS,
};

use super::cpu::{read_proc_stat, CpuTimes};
use super::interrupts::{read_proc_interrupts, ProcInterrupts};
use super::netdev::{read_proc_net_dev, stats_from_row, NetDevRow};
use super::softirqs::{read_proc_softirqs, ProcSoftirqs};

/// Reads every source now. What could not be read is absent, with a warning in the
/// snapshot.
pub fn take() -> DeviceSnapshot {
    let monotonic_ns = super::system::monotonic_ns().unwrap_or(0);
    let mut w = Vec::new();
    let stat = ok(read_proc_stat(), &mut w);
    let ints = ok(read_proc_interrupts(), &mut w);
    let soft = ok(read_proc_softirqs(), &mut w);
    let dev = ok(read_proc_net_dev(), &mut w);
    let missed = |name: &str| -> Option<u64> {
        let dir = super::iface::sysfs_net_dir(name)?;
        let text = std::fs::read_to_string(dir.join("statistics/rx_missed_errors")).ok()?;
        text.trim().parse().ok()
    };
    let ticks = super::system::ticks_per_s();
    let mut s = build(
        monotonic_ns,
        stat.as_ref(),
        ints.as_ref(),
        soft.as_ref(),
        dev.as_ref(),
        &missed,
        w,
    );
    s.boot_id = super::host::boot_id();
    s.ticks_per_sec = ticks;
    s
}

/// The snapshot of parsed sources (pure): per-CPU ticks, interrupts summed over every row
/// that has a count per CPU, NET_RX/NET_TX, every interface (with `missed(name)` for the
/// NIC's missed packets). Sizes are cut to the caps a peer checks, with a warning.
pub fn build(
    monotonic_ns: u64,
    stat: Option<&CpuTimes>,
    ints: Option<&ProcInterrupts>,
    soft: Option<&ProcSoftirqs>,
    dev: Option<&BTreeMap<String, NetDevRow>>,
    missed: &dyn Fn(&str) -> Option<u64>,
    mut warnings: Vec<String>,
) -> DeviceSnapshot {
    let cpu = stat.map(|s| {
        s.per_cpu
            .iter()
            .take(MAX_DEVICE_CPUS)
            .map(|(n, t)| CpuTicks { cpu: *n, ticks: *t })
            .collect()
    });
    let interrupts = ints.map(|p| {
        let mut counts = vec![0u64; p.cpus.len()];
        for line in p.lines.iter().filter(|l| p.is_per_cpu(l)) {
            for (c, v) in counts.iter_mut().zip(&line.counts) {
                *c = c.saturating_add(*v);
            }
        }
        cut(CpuCounts {
            cpus: p.cpus.clone(),
            counts,
        })
    });
    let softirq = |name: &str| {
        let s = soft?;
        s.get(name).map(|v| {
            cut(CpuCounts {
                cpus: s.cpus.clone(),
                counts: v.to_vec(),
            })
        })
    };
    let net_rx_softirqs = softirq("NET_RX");
    let net_tx_softirqs = softirq("NET_TX");
    if soft.is_some() && (net_rx_softirqs.is_none() || net_tx_softirqs.is_none()) {
        warnings.push("/proc/softirqs has no NET_RX or NET_TX row".into());
    }
    let interfaces = dev.map(|rows| {
        if rows.len() > MAX_DEVICE_INTERFACES {
            warnings.push(format!(
                "{} interfaces: only the first {MAX_DEVICE_INTERFACES} are reported",
                rows.len()
            ));
        }
        rows.iter()
            .filter(|(name, _)| name.len() <= MAX_IFNAME)
            .take(MAX_DEVICE_INTERFACES)
            .map(|(name, r)| {
                // The one reading of a `/proc/net/dev` row, with the NIC's missed packets
                // from sysfs where it shows them.
                let stats = InterfaceStats {
                    rx_missed_errors: missed(name),
                    ..stats_from_row(r)
                };
                IfaceSnapshot::from_stats(name.clone(), &stats)
            })
            .collect()
    });
    for w in &mut warnings {
        *w = linerate_wire::hooks::truncate(std::mem::take(w), MAX_SNAPSHOT_TEXT);
    }
    warnings.truncate(MAX_SNAPSHOT_WARNINGS);
    DeviceSnapshot {
        monotonic_ns,
        boot_id: None,
        ticks_per_sec: None,
        cpu,
        interrupts,
        net_rx_softirqs,
        net_tx_softirqs,
        interfaces,
        warnings,
    }
}

fn ok<T>(r: Result<T, super::SysError>, w: &mut Vec<String>) -> Option<T> {
    r.map_err(|e| w.push(e.to_string())).ok()
}

fn cut(mut c: CpuCounts) -> CpuCounts {
    c.cpus.truncate(MAX_DEVICE_CPUS);
    c.counts.truncate(c.cpus.len());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cpu::parse_proc_stat;
    use crate::sys::interrupts::parse_proc_interrupts;
    use crate::sys::netdev::parse_proc_net_dev;
    use crate::sys::softirqs::parse_proc_softirqs;

    const STAT: &str = "cpu  10 0 20 100 0 1 5 0 0 0\ncpu0 4 0 10 50 0 1 3 0 0 0\ncpu2 6 0 10 50 0 0 2 0 0 0\nintr 1\n";
    const INTS: &str = "           CPU0       CPU2\n  1:         10          5   IO-APIC   1-edge  i8042\nLOC:        100        200   Local timer interrupts\nERR:          3\n";
    const SOFT: &str = "                    CPU0       CPU2\n          HI:          0          0\n      NET_TX:          7          8\n      NET_RX:         70         80\n";
    const DEV: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 100 2 0 0 0 0 0 0 100 2 0 0 0 0 0 0\n  eth0: 1000 10 1 3 4 0 0 0 2000 20 5 6 7 0 0 0\n";

    #[test]
    fn snapshot_of_fixtures() {
        let stat = parse_proc_stat(STAT).unwrap();
        let ints = parse_proc_interrupts(INTS).unwrap();
        let soft = parse_proc_softirqs(SOFT).unwrap();
        let dev = parse_proc_net_dev(DEV).unwrap();
        let missed = |n: &str| (n == "eth0").then_some(2);
        let s = build(
            9,
            Some(&stat),
            Some(&ints),
            Some(&soft),
            Some(&dev),
            &missed,
            vec![],
        );
        let cpu = s.cpu.as_ref().unwrap();
        assert_eq!(cpu.len(), 2);
        assert_eq!(
            (cpu[1].cpu, cpu[1].ticks.softirq, cpu[1].ticks.idle),
            (2, 2, 50)
        );
        // ERR has one total, not a count per CPU: left out of the per-CPU sums.
        assert_eq!(
            s.interrupts,
            Some(CpuCounts {
                cpus: vec![0, 2],
                counts: vec![110, 205]
            })
        );
        assert_eq!(s.net_rx_softirqs.as_ref().unwrap().counts, vec![70, 80]);
        assert_eq!(s.net_tx_softirqs.as_ref().unwrap().counts, vec![7, 8]);
        let ifs = s.interfaces.as_ref().unwrap();
        let eth = ifs.iter().find(|i| i.name == "eth0").unwrap();
        assert_eq!(
            (
                eth.rx_packets,
                eth.tx_packets,
                eth.rx_dropped,
                eth.tx_dropped
            ),
            (10, 20, 3, 6)
        );
        assert_eq!((eth.rx_fifo_errors, eth.rx_missed_errors), (4, Some(2)));
        assert_eq!(s.check_sizes(), Ok(()));
        // Nothing read: every section absent, the warnings carried (and cut).
        let none = build(0, None, None, None, None, &missed, vec!["x".repeat(1000)]);
        assert!(none.cpu.is_none() && none.interfaces.is_none());
        assert_eq!(none.warnings[0].len(), MAX_SNAPSHOT_TEXT);
    }

    #[test]
    fn this_host_reads() {
        let s = take();
        assert!(s.monotonic_ns > 0);
        assert!(s.cpu.as_ref().is_some_and(|c| !c.is_empty()), "{s:?}");
        assert!(s
            .interfaces
            .as_ref()
            .is_some_and(|i| i.iter().any(|i| i.name == "lo")));
        assert_eq!(s.check_sizes(), Ok(()));
    }
}
