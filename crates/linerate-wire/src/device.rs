//! The `device_counters` exchange (feature `device_counters`): the device under test runs
//! `linerate serve`, and a tester (`linerate rfc2544|tcp|udp --dut HOST`) asks it for a
//! snapshot of its counters before and after every trial or measured window, and computes
//! the differences itself.
//!
//! `C: hello  S: welcome  [C: auth  S: auth_ok]  (C: counters_request  S: counters_snapshot)*
//! C: closes` — a counters-only session: it starts no test, and the server keeps it open
//! between requests within its limits.
//!
//! A snapshot holds cumulative values as the kernel prints them: per-CPU `/proc/stat` ticks,
//! per-CPU interrupt totals (`/proc/interrupts`, every row summed), NET_RX/NET_TX per CPU
//! (`/proc/softirqs`) and every interface's packet, byte, error and drop counters in the
//! serving thread's network namespace. CPU counters are system-wide: a device that is a
//! network namespace on the tester's host shares them with the tester.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::host::InterfaceStats;

/// Most CPUs a snapshot may list (in each per-CPU section).
pub const MAX_DEVICE_CPUS: usize = 4096;
/// Most interfaces a snapshot may list.
pub const MAX_DEVICE_INTERFACES: usize = 1024;
/// Longest interface name accepted (the kernel's IFNAMSIZ less the terminating NUL is 15).
pub const MAX_IFNAME: usize = 64;
/// Most warnings a snapshot may carry, and the longest one.
pub const MAX_SNAPSHOT_WARNINGS: usize = 16;
/// Longest warning or identifying text in a snapshot.
pub const MAX_SNAPSHOT_TEXT: usize = 256;

/// Client → server: send a snapshot of your counters now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CountersRequest {}

/// One CPU's `/proc/stat` ticks (USER_HZ), cumulative. The fields are
/// [`CpuTick`]'s, written inline (`{"cpu":0,"user":..,"nice":..}`), as before the two
/// types became one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuTicks {
    /// The CPU's number (`cpuN`).
    pub cpu: u32,
    /// Its ticks.
    #[serde(flatten)]
    pub ticks: CpuTick,
}

/// Tick counters of one `/proc/stat` CPU line (or of their difference), in USER_HZ clock
/// ticks: the one home of CPU times, read by `linerate::sys::cpu` for the local host and
/// sent in a [`DeviceSnapshot`] for the device under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuTick {
    /// User mode (guest time included).
    pub user: u64,
    /// Niced user mode (guest_nice time included).
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Hardware interrupts.
    pub irq: u64,
    /// Software interrupts.
    pub softirq: u64,
    /// Stolen by a hypervisor.
    pub steal: u64,
}

impl CpuTick {
    /// All ticks (guest excluded, as it is inside `user`/`nice`), saturating.
    pub fn total(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// Busy ticks: everything but `idle` and `iowait`.
    pub fn busy(&self) -> u64 {
        self.total()
            .saturating_sub(self.idle)
            .saturating_sub(self.iowait)
    }

    /// Field-wise `self − earlier`, clamped at 0 for counters that went backwards.
    pub fn saturating_sub(&self, earlier: &CpuTick) -> CpuTick {
        CpuTick {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// A counter per CPU, cumulative, aligned with the section's `cpus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuCounts {
    /// CPU numbers.
    pub cpus: Vec<u32>,
    /// One value per CPU.
    pub counts: Vec<u64>,
}

/// One interface's counters, cumulative (`struct rtnl_link_stats64`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IfaceSnapshot {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Received packets dropped, the NIC's missed ones included (`/proc/net/dev` "drop").
    pub rx_dropped: u64,
    /// Packets dropped on transmit.
    pub tx_dropped: u64,
    /// Receive FIFO overruns.
    pub rx_fifo_errors: u64,
    /// Packets the NIC missed for lack of receive buffers; absent where sysfs does not show
    /// the server's network namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_missed_errors: Option<u64>,
}

impl IfaceSnapshot {
    /// The snapshot of interface `name` from its [`InterfaceStats`], the one home of the
    /// interface counters and of their reading (`linerate::sys::netdev`): the same values,
    /// without the fields the device exchange does not carry (`tx_fifo_errors`,
    /// `rx_over_errors`, `rx_crc_errors`), so the snapshot's JSON stays as it was.
    pub fn from_stats(name: String, s: &InterfaceStats) -> IfaceSnapshot {
        IfaceSnapshot {
            name,
            rx_packets: s.rx_packets,
            tx_packets: s.tx_packets,
            rx_bytes: s.rx_bytes,
            tx_bytes: s.tx_bytes,
            rx_errors: s.rx_errors,
            tx_errors: s.tx_errors,
            rx_dropped: s.rx_dropped,
            tx_dropped: s.tx_dropped,
            rx_fifo_errors: s.rx_fifo_errors,
            rx_missed_errors: s.rx_missed_errors,
        }
    }
}

/// The device's counters at one moment; a section that could not be read is absent and
/// the reason is in `warnings`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceSnapshot {
    /// The device's `CLOCK_MONOTONIC` when the reads began, nanoseconds.
    pub monotonic_ns: u64,
    /// The device's kernel boot id (tells a device that is the tester's own host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// Ticks per second of the `/proc/stat` counters (USER_HZ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks_per_sec: Option<u64>,
    /// `/proc/stat`, one entry per online CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Vec<CpuTicks>>,
    /// `/proc/interrupts`: every row summed, per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<CpuCounts>,
    /// `/proc/softirqs` NET_RX per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_softirqs: Option<CpuCounts>,
    /// `/proc/softirqs` NET_TX per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_tx_softirqs: Option<CpuCounts>,
    /// Every interface of the server's network namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interfaces: Option<Vec<IfaceSnapshot>>,
    /// What could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl DeviceSnapshot {
    /// Checks the sizes a peer could abuse; the error says which.
    pub fn check_sizes(&self) -> Result<(), String> {
        let counts = [
            &self.interrupts,
            &self.net_rx_softirqs,
            &self.net_tx_softirqs,
        ];
        let cpu_lists = self.cpu.as_ref().map_or(0, Vec::len);
        let too_many_cpus = cpu_lists > MAX_DEVICE_CPUS
            || counts.iter().filter_map(|c| c.as_ref()).any(|c| {
                c.cpus.len() > MAX_DEVICE_CPUS
                    || c.counts.len() > MAX_DEVICE_CPUS
                    || c.cpus.len() != c.counts.len()
            });
        if too_many_cpus {
            return Err(format!(
                "a per-CPU section with more than {MAX_DEVICE_CPUS} CPUs, or CPUs and counts that do not pair up"
            ));
        }
        if let Some(ifs) = &self.interfaces {
            if ifs.len() > MAX_DEVICE_INTERFACES {
                return Err(format!("more than {MAX_DEVICE_INTERFACES} interfaces"));
            }
            if ifs.iter().any(|i| i.name.len() > MAX_IFNAME) {
                return Err(format!("an interface name longer than {MAX_IFNAME} bytes"));
            }
        }
        if self.warnings.len() > MAX_SNAPSHOT_WARNINGS
            || self
                .warnings
                .iter()
                .chain(self.boot_id.iter())
                .any(|w| w.len() > MAX_SNAPSHOT_TEXT)
        {
            return Err(format!(
                "more than {MAX_SNAPSHOT_WARNINGS} warnings, or a text longer than {MAX_SNAPSHOT_TEXT} bytes"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request and the snapshot in their control messages: control/envelopes.rs.
    #[test]
    fn golden_and_caps() {
        let s = DeviceSnapshot {
            monotonic_ns: 5,
            interfaces: Some(vec![IfaceSnapshot {
                name: "eth0".into(),
                rx_packets: 3,
                ..IfaceSnapshot::default()
            }]),
            ..DeviceSnapshot::default()
        };
        assert_eq!(s.check_sizes(), Ok(()));
        // An older or newer peer's fields: absent ones default, unknown ones are ignored.
        let back: DeviceSnapshot =
            serde_json::from_str(r#"{"monotonic_ns":1,"future":true}"#).unwrap();
        assert!(back.cpu.is_none() && back.interfaces.is_none());

        let mut big = s.clone();
        big.interfaces = Some(vec![IfaceSnapshot::default(); MAX_DEVICE_INTERFACES + 1]);
        assert!(big.check_sizes().unwrap_err().contains("interfaces"));
        let mut long = s.clone();
        long.interfaces = Some(vec![IfaceSnapshot {
            name: "x".repeat(MAX_IFNAME + 1),
            ..IfaceSnapshot::default()
        }]);
        assert!(long.check_sizes().is_err());
        let mut odd = s.clone();
        odd.interrupts = Some(CpuCounts {
            cpus: vec![0, 1],
            counts: vec![1],
        });
        assert!(odd.check_sizes().is_err());
        let mut cpus = s.clone();
        cpus.cpu = Some(vec![CpuTicks::default(); MAX_DEVICE_CPUS + 1]);
        assert!(cpus.check_sizes().is_err());
        let mut chatty = s;
        chatty.warnings = vec!["w".into(); MAX_SNAPSHOT_WARNINGS + 1];
        assert!(chatty.check_sizes().is_err());
    }

    /// The JSON of a snapshot as linerate sent it before CPU times had one home
    /// ([`CpuTick`], inline in [`CpuTicks`]) and interface counters one reader
    /// ([`IfaceSnapshot::from_stats`]): it reads into the new types, and they write it back
    /// byte for byte.
    #[test]
    fn the_snapshot_json_is_what_it_was() {
        let old = concat!(
            r#"{"monotonic_ns":7,"boot_id":"b","ticks_per_sec":100,"#,
            r#""cpu":[{"cpu":0,"user":1,"nice":2,"system":3,"idle":4,"iowait":5,"irq":6,"softirq":7,"steal":8},"#,
            r#"{"cpu":3,"user":10,"nice":0,"system":0,"idle":90,"iowait":0,"irq":0,"softirq":0,"steal":0}],"#,
            r#""interfaces":[{"name":"eth0","rx_packets":1,"tx_packets":2,"rx_bytes":3,"tx_bytes":4,"#,
            r#""rx_errors":5,"tx_errors":6,"rx_dropped":7,"tx_dropped":8,"rx_fifo_errors":9,"rx_missed_errors":10},"#,
            r#"{"name":"lo","rx_packets":0,"tx_packets":0,"rx_bytes":0,"tx_bytes":0,"#,
            r#""rx_errors":0,"tx_errors":0,"rx_dropped":0,"tx_dropped":0,"rx_fifo_errors":0}]}"#
        );
        let s: DeviceSnapshot = serde_json::from_str(old).unwrap();
        let cpu = s.cpu.as_ref().unwrap();
        assert_eq!(cpu[0].cpu, 0);
        assert_eq!(
            cpu[0].ticks,
            CpuTick {
                user: 1,
                nice: 2,
                system: 3,
                idle: 4,
                iowait: 5,
                irq: 6,
                softirq: 7,
                steal: 8
            }
        );
        assert_eq!((cpu[1].cpu, cpu[1].ticks.busy()), (3, 10));
        assert_eq!(serde_json::to_string(&s).unwrap(), old);
        // An interface snapshot is its InterfaceStats less the fields the exchange lacks.
        let stats = InterfaceStats {
            rx_packets: 1,
            tx_packets: 2,
            rx_bytes: 3,
            tx_bytes: 4,
            rx_errors: 5,
            tx_errors: 6,
            rx_dropped: 7,
            tx_dropped: 8,
            rx_fifo_errors: 9,
            tx_fifo_errors: 11,
            rx_missed_errors: Some(10),
            rx_over_errors: Some(12),
            rx_crc_errors: None,
        };
        let eth0 = IfaceSnapshot::from_stats("eth0".into(), &stats);
        assert_eq!(&eth0, &s.interfaces.as_ref().unwrap()[0]);
    }
}
