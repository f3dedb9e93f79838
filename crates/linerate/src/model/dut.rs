//! The device under test's own view (`--dut HOST`): the differences of two
//! [`DeviceSnapshot`]s the device's `linerate serve` sent, one before and one after a trial
//! or a stream test's measured window.
//!
//! CPU counters are system-wide on the device: when the device is a network namespace on
//! the tester's own host (a `linerate lab` router) they are the tester's CPUs too, and
//! [`DutCounters::same_host`] says so. Interface counters are those of the device's network
//! namespace.

use linerate_wire::device::{CpuCounts, CpuTicks, DeviceSnapshot, IfaceSnapshot};
use linerate_wire::host::PerCpu;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sys::counter::{align_cpus, delta_u64};

/// What the device counted over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DutCounters {
    /// The device as given to `--dut` (`HOST:PORT`).
    pub device: String,
    /// Time between the two snapshots on the device's clock, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// The device reported the tester's own kernel boot id: it is a network namespace (or
    /// the same machine), so its CPU counters include the tester's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_host: Option<bool>,
    /// CPU time per CPU (`/proc/stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<DutCpu>,
    /// Hardware interrupts, every row of `/proc/interrupts`, per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<DutPerCpu>,
    /// NET_RX softirqs per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_softirqs: Option<DutPerCpu>,
    /// NET_TX softirqs per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_tx_softirqs: Option<DutPerCpu>,
    /// Every interface of the device's network namespace present in both snapshots, by
    /// name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<DutInterface>,
    /// What could not be measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A per-CPU count over the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DutPerCpu {
    /// CPU numbers of `counts.per_cpu`.
    pub cpus: Vec<u32>,
    /// The counts.
    pub counts: PerCpu,
}

/// The device's CPU time over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DutCpu {
    /// Busy share of all CPUs together (everything but idle and iowait), percent.
    pub all_busy_percent: f64,
    /// The busiest CPU's number.
    pub busiest_cpu: u32,
    /// The busiest CPU's busy share, percent of that CPU.
    pub busiest_busy_percent: f64,
    /// The busiest CPU's softirq share, percent of that CPU.
    pub busiest_softirq_percent: f64,
    /// The busiest CPU's hardware-interrupt share, percent of that CPU.
    pub busiest_irq_percent: f64,
    /// Every CPU.
    pub per_cpu: Vec<DutCpuShare>,
}

/// One CPU's shares of its time over the window, percent of that CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DutCpuShare {
    /// The CPU's number.
    pub cpu: u32,
    /// Everything but idle and iowait.
    pub busy_percent: f64,
    /// User mode (nice included).
    pub user_percent: f64,
    /// Kernel mode.
    pub system_percent: f64,
    /// Hardware interrupts.
    pub irq_percent: f64,
    /// Software interrupts (packet processing: NET_RX, NET_TX).
    pub softirq_percent: f64,
    /// Ticks counted for this CPU over the window (USER_HZ, usually 100 a second): the
    /// resolution of its shares.
    pub ticks: u64,
}

/// One interface of the device over the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DutInterface {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent (for a router: forwarded out of this interface, its own traffic
    /// included).
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Received packets dropped, missed ones included.
    pub rx_dropped: u64,
    /// Packets dropped on transmit.
    pub tx_dropped: u64,
    /// Receive FIFO overruns.
    pub rx_fifo_errors: u64,
    /// Packets the NIC missed for lack of buffers; absent where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_missed_errors: Option<u64>,
}

impl DutInterface {
    /// Packets dropped or missed at ingress: `rx_dropped` (which includes the missed ones)
    /// plus FIFO overruns.
    pub fn ingress_drops(&self) -> u64 {
        self.rx_dropped.saturating_add(self.rx_fifo_errors)
    }
}

impl DutCounters {
    /// The interface the most packets left by (for a router: the egress of the test's
    /// traffic).
    pub fn busiest_tx(&self) -> Option<&DutInterface> {
        self.interfaces
            .iter()
            .filter(|i| i.name != "lo")
            .max_by_key(|i| i.tx_packets)
    }

    /// Ingress drops over all interfaces.
    pub fn ingress_drops(&self) -> u64 {
        self.interfaces
            .iter()
            .map(DutInterface::ingress_drops)
            .fold(0, u64::saturating_add)
    }

    /// Packets received over all interfaces but loopback.
    pub fn rx_packets(&self) -> u64 {
        self.interfaces
            .iter()
            .filter(|i| i.name != "lo")
            .map(|i| i.rx_packets)
            .fold(0, u64::saturating_add)
    }

    /// The differences from `before` to `after`; `tester_boot_id` tells a device on the
    /// tester's own host. Pure.
    pub fn between(
        device: &str,
        before: &DeviceSnapshot,
        after: &DeviceSnapshot,
        tester_boot_id: Option<&str>,
    ) -> DutCounters {
        let mut w: Vec<String> = after
            .warnings
            .iter()
            .map(|x| format!("device {device}: {x}"))
            .collect();
        let duration_ns = after.monotonic_ns.checked_sub(before.monotonic_ns);
        if duration_ns.is_none() {
            w.push(format!(
                "device {device}: its clock went backwards between two snapshots (restarted?): no duration"
            ));
        }
        let same_host = match (after.boot_id.as_deref(), tester_boot_id) {
            (Some(a), Some(b)) => Some(a == b),
            _ => None,
        };
        let cpu = match (&before.cpu, &after.cpu) {
            (Some(b), Some(a)) => cpu_delta(b, a),
            _ => None,
        };
        let mut counts = |b: &Option<CpuCounts>, a: &Option<CpuCounts>, what: &str| {
            let (b, a) = (b.as_ref()?, a.as_ref()?);
            let (align, warn) = align_cpus(what, &b.cpus, &a.cpus);
            if let Some(x) = warn {
                w.push(format!("device {device}: {x}"));
            }
            let counts = align.delta_u32(&b.counts, &a.counts);
            Some(DutPerCpu {
                cpus: align.cpus,
                counts,
            })
        };
        let interrupts = counts(&before.interrupts, &after.interrupts, "/proc/interrupts");
        let net_rx_softirqs = counts(&before.net_rx_softirqs, &after.net_rx_softirqs, "NET_RX");
        let net_tx_softirqs = counts(&before.net_tx_softirqs, &after.net_tx_softirqs, "NET_TX");
        let mut interfaces = Vec::new();
        if let (Some(b), Some(a)) = (&before.interfaces, &after.interfaces) {
            for later in a {
                let Some(earlier) = b.iter().find(|i| i.name == later.name) else {
                    continue;
                };
                match iface_delta(earlier, later) {
                    Some(d) => interfaces.push(d),
                    None => w.push(format!(
                        "device {device}: the counters of {} went down (interface reset or re-created): left out",
                        later.name
                    )),
                }
            }
        } else {
            w.push(format!(
                "device {device}: no interface counters (see its warnings)"
            ));
        }
        if cpu.is_none() {
            w.push(format!("device {device}: no CPU times over the window"));
        }
        DutCounters {
            device: device.to_string(),
            duration_ns,
            same_host,
            cpu,
            interrupts,
            net_rx_softirqs,
            net_tx_softirqs,
            interfaces,
            warnings: w,
        }
    }
}

fn iface_delta(e: &IfaceSnapshot, l: &IfaceSnapshot) -> Option<DutInterface> {
    Some(DutInterface {
        name: l.name.clone(),
        rx_packets: delta_u64(e.rx_packets, l.rx_packets)?,
        tx_packets: delta_u64(e.tx_packets, l.tx_packets)?,
        rx_bytes: delta_u64(e.rx_bytes, l.rx_bytes)?,
        tx_bytes: delta_u64(e.tx_bytes, l.tx_bytes)?,
        rx_errors: delta_u64(e.rx_errors, l.rx_errors)?,
        tx_errors: delta_u64(e.tx_errors, l.tx_errors)?,
        rx_dropped: delta_u64(e.rx_dropped, l.rx_dropped)?,
        tx_dropped: delta_u64(e.tx_dropped, l.tx_dropped)?,
        rx_fifo_errors: delta_u64(e.rx_fifo_errors, l.rx_fifo_errors)?,
        rx_missed_errors: match (e.rx_missed_errors, l.rx_missed_errors) {
            (Some(a), Some(b)) => Some(delta_u64(a, b)?),
            _ => None,
        },
    })
}

/// Per-CPU shares over the window; CPUs present in only one snapshot, or without a tick
/// counted, are left out. `None` when no CPU counted a tick.
fn cpu_delta(before: &[CpuTicks], after: &[CpuTicks]) -> Option<DutCpu> {
    let mut per_cpu = Vec::new();
    let (mut busy_all, mut total_all) = (0u64, 0u64);
    for a in after {
        let Some(b) = before.iter().find(|b| b.cpu == a.cpu) else {
            continue;
        };
        let d = a.ticks.saturating_sub(&b.ticks);
        let user = d.user.saturating_add(d.nice);
        let system = d.system;
        let idle = d.idle.saturating_add(d.iowait);
        let (irq, softirq, steal) = (d.irq, d.softirq, d.steal);
        let total = [user, system, idle, irq, softirq, steal]
            .iter()
            .fold(0u64, |s, &v| s.saturating_add(v));
        if total == 0 {
            continue;
        }
        let busy = total - idle;
        busy_all = busy_all.saturating_add(busy);
        total_all = total_all.saturating_add(total);
        let pct = |v: u64| v as f64 * 100.0 / total as f64;
        per_cpu.push(DutCpuShare {
            cpu: a.cpu,
            busy_percent: pct(busy),
            user_percent: pct(user),
            system_percent: pct(system),
            irq_percent: pct(irq),
            softirq_percent: pct(softirq),
            ticks: total,
        });
    }
    let busiest = per_cpu
        .iter()
        .max_by(|a, b| a.busy_percent.total_cmp(&b.busy_percent))?
        .clone();
    Some(DutCpu {
        all_busy_percent: busy_all as f64 * 100.0 / total_all.max(1) as f64,
        busiest_cpu: busiest.cpu,
        busiest_busy_percent: busiest.busy_percent,
        busiest_softirq_percent: busiest.softirq_percent,
        busiest_irq_percent: busiest.irq_percent,
        per_cpu,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use linerate_wire::device::CpuTick;

    /// A snapshot with two CPUs and one interface, `k` windows in: CPU 1 is busy, most of
    /// it in softirq; `eth1` forwards 1000 packets a window, `eth0` drops `drops` each.
    pub(crate) fn snap(k: u64, drops: u64) -> DeviceSnapshot {
        DeviceSnapshot {
            monotonic_ns: 1_000_000_000 * k,
            boot_id: Some("dev".into()),
            ticks_per_sec: Some(100),
            cpu: Some(vec![
                CpuTicks {
                    cpu: 0,
                    ticks: CpuTick {
                        user: 10 * k,
                        idle: 90 * k,
                        ..CpuTick::default()
                    },
                },
                CpuTicks {
                    cpu: 1,
                    ticks: CpuTick {
                        system: 10 * k,
                        softirq: 80 * k,
                        irq: 7 * k,
                        idle: 3 * k,
                        ..CpuTick::default()
                    },
                },
            ]),
            interrupts: Some(CpuCounts {
                cpus: vec![0, 1],
                counts: vec![5 * k, 500 * k],
            }),
            net_rx_softirqs: Some(CpuCounts {
                cpus: vec![0, 1],
                counts: vec![0, 300 * k],
            }),
            net_tx_softirqs: None,
            interfaces: Some(vec![
                IfaceSnapshot {
                    name: "eth0".into(),
                    rx_packets: 1010 * k,
                    rx_dropped: drops * k,
                    ..IfaceSnapshot::default()
                },
                IfaceSnapshot {
                    name: "eth1".into(),
                    tx_packets: 1000 * k,
                    ..IfaceSnapshot::default()
                },
            ]),
            warnings: vec![],
        }
    }

    #[test]
    fn deltas_and_shares() {
        let d = DutCounters::between("r:5301", &snap(1, 0), &snap(3, 0), Some("tester"));
        assert_eq!(d.duration_ns, Some(2_000_000_000));
        assert_eq!(d.same_host, Some(false));
        let cpu = d.cpu.as_ref().unwrap();
        assert_eq!(cpu.busiest_cpu, 1);
        assert!((cpu.busiest_busy_percent - 97.0).abs() < 1e-9);
        assert!((cpu.busiest_softirq_percent - 80.0).abs() < 1e-9);
        assert!((cpu.busiest_irq_percent - 7.0).abs() < 1e-9);
        assert!((cpu.all_busy_percent - 53.5).abs() < 1e-9);
        assert!(cpu.per_cpu.iter().all(|c| c.busy_percent <= 100.0));
        assert_eq!(d.interrupts.as_ref().unwrap().counts.total, 1010);
        assert_eq!(d.net_rx_softirqs.as_ref().unwrap().counts.per_cpu, [0, 600]);
        assert!(d.net_tx_softirqs.is_none());
        assert_eq!(d.busiest_tx().unwrap().name, "eth1");
        assert_eq!(d.busiest_tx().unwrap().tx_packets, 2000);
        assert_eq!(d.rx_packets(), 2020);
        assert_eq!(d.ingress_drops(), 0);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        let same = DutCounters::between("r", &snap(1, 4), &snap(2, 4), Some("dev"));
        assert_eq!(same.same_host, Some(true));
        assert_eq!(same.ingress_drops(), 4);
    }

    #[test]
    fn resets_and_gaps_are_absent_with_a_warning() {
        // The later snapshot is older: every counter went down.
        let d = DutCounters::between("r", &snap(3, 1), &snap(1, 1), None);
        assert_eq!(d.duration_ns, None);
        assert!(d.interfaces.is_empty());
        assert!(d.warnings.iter().any(|w| w.contains("went down")));
        assert!(d
            .warnings
            .iter()
            .any(|w| w.contains("clock went backwards")));
        assert_eq!(d.same_host, None);
        // No CPU section: absent, said.
        let mut a = snap(2, 0);
        a.cpu = None;
        let d = DutCounters::between("r", &snap(1, 0), &a, None);
        assert!(d.cpu.is_none());
        assert!(d.warnings.iter().any(|w| w.contains("no CPU times")));
    }
}
