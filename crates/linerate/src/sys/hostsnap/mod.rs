//! Host counters around a test: [`HostSnapshot::take`] before and after, the difference as
//! a [`HostCounters`] record; [`interface_facts`] for the interface the test used; and
//! [`IntervalSampler`] for the few counters cheap enough to read every interval.
//!
//! # Warnings
//!
//! * [`HostSnapshot::take`] returns the sources it could not *read* (a missing file, a
//!   failed ioctl); the matching section of the deltas is then absent.
//! * [`HostSnapshot::delta`] puts into [`HostCounters::warnings`] why a section that was
//!   read is still absent or partial: a driver without statistics, a counter that went
//!   down (reset), CPUs that came or went.
//!
//! So a caller adds the warnings of both `take` calls and of the record, and nothing is
//! said twice.
//!
//! # Cost
//!
//! A snapshot reads `/proc/interrupts` (the largest file: one row per IRQ, one column per
//! CPU), `/proc/softirqs`, `softnet_stat`, `snmp`, `netstat`, `snmp6`, the interface's
//! statistics and its driver's counters (three ioctls), and conntrack's fill and
//! statistics (`/proc/net/stat/nf_conntrack`, see [`super::conntrack`]). That is a few hundred
//! microseconds: fine before and after a test, not in a data path. [`IntervalSampler`]
//! reads only `/proc/net/dev`, `/proc/softirqs` and `softnet_stat`.
//!
//! Everything is read in the calling thread's network namespace (`/proc/thread-self/net`,
//! ioctls on a socket it opens); `/proc/interrupts` and `/proc/softirqs` are host-wide.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Sub;
use std::time::Instant;

use linerate_wire::host::{
    DriverStats, HostCounters, HostRates, InterfaceFacts, IntervalHostCounters, QueueCounts,
    QueueSource, INTERESTING_SNMP_COUNTERS, MAX_DRIVER_STATS,
};

use super::counter::{align_cpus, delta_u64};
use super::ethtool::{Ethtool, EthtoolResult};
use super::iface::{read_sysfs_queues, sysfs_net_dir, validate_ifname, virtio_device};
use super::interrupts::{interrupt_delta, read_proc_interrupts, IrqMatcher, ProcInterrupts};
use super::netdev::{iface_delta, read_iface_counters, read_proc_net_dev, IfaceCounters};
use super::snmp::{read_snmp, snmp_delta, SnmpCounters};
use super::softirqs::{read_proc_softirqs, softirq_delta, ProcSoftirqs};
use super::softnet::{read_softnet_stat, softnet_delta, SoftnetRow};

/// Everything [`HostCounters`] is computed from, at one moment.
#[derive(Debug, Clone)]
pub struct HostSnapshot {
    /// When the snapshot was taken (start of the reads).
    pub at: Instant,
    /// The interface whose IRQs, statistics and driver counters were read.
    pub interface: Option<String>,
    /// The interface's IRQs as recognised in this snapshot's `/proc/interrupts`.
    pub interface_irqs: BTreeSet<String>,
    /// `/proc/interrupts`.
    pub interrupts: Option<ProcInterrupts>,
    /// `/proc/softirqs`.
    pub softirqs: Option<ProcSoftirqs>,
    /// `/proc/net/softnet_stat`.
    pub softnet: Option<Vec<SoftnetRow>>,
    /// `snmp` + `netstat` + `snmp6`, all counters.
    pub snmp: Option<SnmpCounters>,
    /// The interface's statistics.
    pub iface_stats: Option<IfaceCounters>,
    /// The driver's `ethtool -S` counters, in its order.
    pub driver_stats: Option<Vec<(String, u64)>>,
    /// Connection tracking's fill and statistics; `None` without conntrack.
    pub conntrack: Option<super::conntrack::Snapshot>,
    /// Why a section that is not an error is absent (e.g. a driver without statistics);
    /// carried into [`HostCounters::warnings`].
    pub notes: Vec<String>,
}

/// Builds the IRQ matcher of `iface`: its virtio device from sysfs (when sysfs shows this
/// namespace) and its PCI address from the driver.
fn irq_matcher(iface: &str, ethtool: Option<&Ethtool>) -> IrqMatcher {
    IrqMatcher {
        iface: iface.to_string(),
        virtio: sysfs_net_dir(iface).and_then(|d| virtio_device(&d)),
        bus_info: ethtool
            .and_then(|e| e.drvinfo(iface).ok().flatten())
            .and_then(|d| d.bus_info),
    }
}

fn ok_or_warn<T, E: std::fmt::Display>(r: Result<T, E>, warnings: &mut Vec<String>) -> Option<T> {
    r.map_err(|e| warnings.push(e.to_string())).ok()
}

impl HostSnapshot {
    /// Reads every source; `iface` is the interface the test uses (see
    /// [`super::iface::route_interface`]). The warnings name what could not be read.
    pub fn take(iface: Option<&str>) -> (HostSnapshot, Vec<String>) {
        let at = Instant::now();
        let mut w = Vec::new();
        let iface = iface.and_then(|name| match validate_ifname(name) {
            Ok(()) => Some(name.to_string()),
            Err(e) => {
                w.push(format!("host counters: {e}"));
                None
            }
        });
        let interrupts = ok_or_warn(read_proc_interrupts(), &mut w);
        let softirqs = ok_or_warn(read_proc_softirqs(), &mut w);
        let softnet = ok_or_warn(read_softnet_stat(), &mut w);
        let snmp = ok_or_warn(read_snmp(), &mut w).map(|(m, more)| {
            w.extend(more);
            m
        });
        let mut snap = HostSnapshot {
            at,
            interface: iface.clone(),
            interface_irqs: BTreeSet::new(),
            interrupts,
            softirqs,
            softnet,
            snmp,
            iface_stats: None,
            driver_stats: None,
            conntrack: super::conntrack::Snapshot::read(),
            notes: Vec::new(),
        };
        if let Some(name) = iface.as_deref() {
            snap.take_interface(name, &mut w);
        }
        (snap, w)
    }

    fn take_interface(&mut self, name: &str, w: &mut Vec<String>) {
        // Loopback has index 1 in every namespace, so sysfs cannot prove it shows ours.
        let sysfs = sysfs_net_dir(name).filter(|_| name != "lo");
        self.iface_stats = ok_or_warn(read_iface_counters(name, sysfs.as_deref()), w);
        let ethtool = ok_or_warn(
            Ethtool::open().map_err(|e| format!("ethtool socket: {e}")),
            w,
        );
        if let Some(e) = &ethtool {
            match e.stats(name) {
                Ok(Some(s)) => self.driver_stats = Some(s),
                Ok(None) => self.notes.push(format!(
                    "interface {name}: the driver has no statistics (ethtool -S)"
                )),
                Err(err) => w.push(err.to_string()),
            }
        }
        if let Some(ints) = &self.interrupts {
            let m = irq_matcher(name, ethtool.as_ref());
            self.interface_irqs = m.matching_irqs(ints).into_iter().collect();
        }
    }

    /// Deltas from `self` (earlier) to `later`. A section is present when both snapshots
    /// have it; see [`HostCounters`] for the caps and derived values.
    pub fn delta(&self, later: &HostSnapshot) -> HostCounters {
        let mut w: Vec<String> = later.notes.clone();
        let duration_ns = u64::try_from(later.at.saturating_duration_since(self.at).as_nanos())
            .unwrap_or(u64::MAX);
        let interface = later
            .interface
            .clone()
            .filter(|_| self.interface == later.interface);
        let mut out = HostCounters {
            duration_ns,
            interface: interface.clone(),
            ..HostCounters::default()
        };
        if let (Some(e), Some(l)) = (&self.interrupts, &later.interrupts) {
            let matched: BTreeSet<String> = self
                .interface_irqs
                .union(&later.interface_irqs)
                .cloned()
                .collect();
            let (d, more) = interrupt_delta(e, l, interface.as_ref().map(|_| &matched));
            w.extend(more);
            out.interrupts = Some(d);
        }
        if let (Some(e), Some(l)) = (&self.softirqs, &later.softirqs) {
            let (d, more) = softirq_delta(e, l);
            w.extend(more);
            out.softirqs = d;
        }
        if let (Some(e), Some(l)) = (&self.softnet, &later.softnet) {
            let (d, more) = softnet_delta(e, l);
            w.extend(more);
            out.softnet = Some(d);
        }
        if let (Some(e), Some(l)) = (&self.snmp, &later.snmp) {
            let (d, more) = snmp_delta(e, l, INTERESTING_SNMP_COUNTERS);
            w.extend(more);
            out.snmp = Some(d);
        }
        if let (Some(name), Some(e), Some(l)) = (&interface, &self.iface_stats, &later.iface_stats)
        {
            out.interface_stats = iface_delta(name, e, l).map_err(|m| w.push(m)).ok();
        }
        if let (Some(name), Some(e), Some(l)) =
            (&interface, &self.driver_stats, &later.driver_stats)
        {
            out.driver_stats = driver_delta(name, e, l, &mut w);
        }
        if let (Some(e), Some(l)) = (&self.conntrack, &later.conntrack) {
            out.conntrack = Some(l.delta(e));
        }
        derive(&mut out);
        out.warnings = w;
        out
    }
}

impl Sub<&HostSnapshot> for &HostSnapshot {
    type Output = HostCounters;

    /// `after - before` = [`HostSnapshot::delta`] of `before` to `after`.
    fn sub(self, before: &HostSnapshot) -> HostCounters {
        before.delta(self)
    }
}

/// Gives repeated names `#2`, `#3`, ... in order, so every counter keeps its own key.
pub fn unique_names(stats: &[(String, u64)]) -> Vec<(String, u64)> {
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    stats
        .iter()
        .map(|(n, v)| {
            let k = seen.entry(n.as_str()).or_insert(0);
            *k += 1;
            let name = if *k == 1 {
                n.clone()
            } else {
                format!("{n}#{k}")
            };
            (name, *v)
        })
        .collect()
}

/// Nonzero driver-counter deltas, capped at [`MAX_DRIVER_STATS`] (largest kept). Counters
/// are matched by (deduplicated) name; one that went down is left out with a warning.
pub fn driver_delta(
    iface: &str,
    earlier: &[(String, u64)],
    later: &[(String, u64)],
    warnings: &mut Vec<String>,
) -> Option<DriverStats> {
    let before: BTreeMap<String, u64> = unique_names(earlier).into_iter().collect();
    let mut changed: Vec<(String, u64)> = Vec::new();
    let mut reset = Vec::new();
    for (name, l) in unique_names(later) {
        match delta_u64(before.get(&name).copied().unwrap_or(0), l) {
            Some(0) => {}
            Some(d) => changed.push((name, d)),
            None => reset.push(name),
        }
    }
    if !reset.is_empty() {
        warnings.push(format!(
            "interface {iface}: driver counters went down during the test (reset?), left out: {}",
            reset.join(", ")
        ));
    }
    changed.sort_by_key(|c| std::cmp::Reverse(c.1));
    let omitted = changed.len().saturating_sub(MAX_DRIVER_STATS);
    changed.truncate(MAX_DRIVER_STATS);
    Some(DriverStats {
        counters: changed.into_iter().collect(),
        available: u32::try_from(later.len()).unwrap_or(u32::MAX),
        omitted: u32::try_from(omitted).unwrap_or(u32::MAX),
    })
}

/// Fills the per-packet ratios and rates from the deltas.
fn derive(out: &mut HostCounters) {
    let secs = out.duration_ns as f64 / 1e9;
    let rate = |n: Option<u64>| n.filter(|_| out.duration_ns > 0).map(|n| n as f64 / secs);
    let iface_irqs = out
        .interrupts
        .as_ref()
        .and_then(|i| i.interface.as_ref())
        .map(|p| p.total);
    let packets = out
        .interface_stats
        .as_ref()
        .map(|s| s.rx_packets.saturating_add(s.tx_packets));
    if let (Some(irqs), Some(pkts)) = (iface_irqs, packets) {
        out.interrupts_per_1000_packets = (pkts > 0).then(|| irqs as f64 * 1000.0 / pkts as f64);
        out.packets_per_interrupt = (irqs > 0).then(|| pkts as f64 / irqs as f64);
    }
    out.rates = HostRates {
        interrupts_per_sec: rate(out.interrupts.as_ref().map(|i| i.all.total)),
        interface_interrupts_per_sec: rate(iface_irqs),
        net_rx_softirqs_per_sec: rate(out.softirqs.as_ref().map(|s| s.net_rx.total)),
        rx_packets_per_sec: rate(out.interface_stats.as_ref().map(|s| s.rx_packets)),
        tx_packets_per_sec: rate(out.interface_stats.as_ref().map(|s| s.tx_packets)),
    };
}

/// What the interface `name` is: driver, MTU, link, offloads, coalescing, rings, queues,
/// IRQs and its root egress qdisc with a shaped rate, each `None` when it could not be read.
/// The warnings say what is missing and why, with everything the driver does not implement
/// on one line (a missing `tc` is not warned about: see `sys::qdisc`).
pub fn interface_facts(name: &str) -> (InterfaceFacts, Vec<String>) {
    let mut facts = InterfaceFacts {
        name: name.to_string(),
        ..InterfaceFacts::default()
    };
    let mut w = Vec::new();
    if let Err(e) = validate_ifname(name) {
        w.push(format!("interface facts: {e}"));
        return (facts, w);
    }
    match super::iface::if_index(name) {
        Ok(i) => facts.ifindex = Some(i),
        Err(e) => {
            w.push(format!(
                "interface facts: no interface {name} in this network namespace ({e})"
            ));
            return (facts, w);
        }
    }
    let ethtool = ok_or_warn(
        Ethtool::open().map_err(|e| format!("interface {name}: ethtool socket: {e}")),
        &mut w,
    );
    let mut unsupported = Vec::new();
    if let Some(e) = &ethtool {
        ethtool_facts(e, &mut facts, &mut unsupported, &mut w);
    }
    let sysfs = sysfs_net_dir(name);
    facts.queues = queue_counts(name, sysfs.as_deref(), ethtool.as_ref(), &mut w);
    if let Some(ints) = ok_or_warn(read_proc_interrupts(), &mut w) {
        let m = IrqMatcher {
            iface: name.to_string(),
            virtio: sysfs.as_deref().and_then(virtio_device),
            bus_info: facts.bus_info.clone(),
        };
        facts.irqs = m.matching_irqs(&ints);
    }
    // Absent without a warning when tc is missing or fails (see `sys::qdisc`).
    if let Some(q) = super::qdisc::read_root_qdisc(name) {
        facts.root_qdisc = Some(q.kind);
        facts.shaped_rate_bps = q.shaped_rate_bps;
    }
    if !unsupported.is_empty() {
        w.push(format!(
            "interface {name}: the driver does not report {}",
            unsupported.join(", ")
        ));
    }
    (facts, w)
}

/// The value of an ethtool answer; "not supported" goes into `unsupported`, errors into `w`.
fn got<T>(
    what: &'static str,
    r: EthtoolResult<T>,
    unsupported: &mut Vec<&'static str>,
    w: &mut Vec<String>,
) -> Option<T> {
    match r {
        Ok(Some(v)) => Some(v),
        Ok(None) => {
            unsupported.push(what);
            None
        }
        Err(e) => {
            w.push(e.to_string());
            None
        }
    }
}

/// Fills the ioctl-based facts.
fn ethtool_facts(
    e: &Ethtool,
    f: &mut InterfaceFacts,
    unsupported: &mut Vec<&'static str>,
    w: &mut Vec<String>,
) {
    let name = f.name.clone();
    match e.mtu(&name) {
        Ok(m) => f.mtu = Some(m),
        Err(err) => w.push(format!("interface {name}: MTU: {err}")),
    }
    if let Some(d) = got("driver info", e.drvinfo(&name), unsupported, w) {
        f.driver = d.driver;
        f.driver_version = d.version;
        f.firmware = d.firmware;
        f.bus_info = d.bus_info;
    }
    if let Some(l) = got("link settings", e.link(&name), unsupported, w) {
        f.speed_mbps = l.speed_mbps;
        f.duplex = l.duplex;
        f.autoneg = l.autoneg;
    }
    f.offloads = got("offloads", e.offloads(&name), unsupported, w);
    f.coalescing = got("coalescing", e.coalesce(&name), unsupported, w);
    f.rings = got("ring sizes", e.rings(&name), unsupported, w);
}

/// Queue counts from sysfs when it shows this namespace, else from the driver's channels.
fn queue_counts(
    name: &str,
    sysfs: Option<&std::path::Path>,
    ethtool: Option<&Ethtool>,
    w: &mut Vec<String>,
) -> Option<QueueCounts> {
    if let Some(dir) = sysfs {
        match read_sysfs_queues(dir) {
            Ok((rx, tx)) => {
                return Some(QueueCounts {
                    rx,
                    tx,
                    source: QueueSource::Sysfs,
                })
            }
            Err(e) => w.push(format!("interface {name}: queues: {e}")),
        }
    }
    let channels = ethtool.and_then(|e| {
        e.channels(name)
            .map_err(|e| w.push(e.to_string()))
            .ok()
            .flatten()
    });
    match channels {
        Some(c) if c.rx + c.combined > 0 || c.tx + c.combined > 0 => Some(QueueCounts {
            rx: c.rx.saturating_add(c.combined),
            tx: c.tx.saturating_add(c.combined),
            source: QueueSource::Channels,
        }),
        _ => {
            w.push(format!(
                "interface {name}: queue counts unknown (sysfs shows another network namespace \
                 and the driver reports no channels)"
            ));
            None
        }
    }
}

/// Counters cheap enough to read every interval (see [`IntervalHostCounters`]):
/// `/proc/net/dev` for the interface, `/proc/softirqs` NET_RX/NET_TX and
/// `softnet_stat` drops and squeezes, each a single small read.
///
/// `sample` returns the changes since the previous sample (the first since `new`).
#[derive(Debug, Clone)]
pub struct IntervalSampler {
    iface: Option<String>,
    prev: CheapSample,
}

#[derive(Debug, Clone, Default)]
struct CheapSample {
    /// rx_packets, tx_packets, rx_dropped of the interface.
    dev: Option<(u64, u64, u64)>,
    softirqs: Option<ProcSoftirqs>,
    softnet: Option<Vec<SoftnetRow>>,
}

impl CheapSample {
    fn take(iface: Option<&str>) -> CheapSample {
        let dev = iface.and_then(|name| {
            let rows = read_proc_net_dev().ok()?;
            let r = rows.get(name)?;
            Some((r[1], r[9], r[3]))
        });
        CheapSample {
            dev,
            softirqs: read_proc_softirqs().ok(),
            softnet: read_softnet_stat().ok(),
        }
    }
}

impl IntervalSampler {
    /// Starts sampling; `iface` as for [`HostSnapshot::take`].
    pub fn new(iface: Option<&str>) -> IntervalSampler {
        let iface = iface
            .filter(|n| validate_ifname(n).is_ok())
            .map(str::to_string);
        let prev = CheapSample::take(iface.as_deref());
        IntervalSampler { iface, prev }
    }

    /// Changes since the previous sample.
    pub fn sample(&mut self) -> IntervalHostCounters {
        let now = CheapSample::take(self.iface.as_deref());
        let out = cheap_delta(&self.prev, &now);
        self.prev = now;
        out
    }
}

fn cheap_delta(e: &CheapSample, l: &CheapSample) -> IntervalHostCounters {
    let mut out = IntervalHostCounters::default();
    if let (Some(a), Some(b)) = (e.dev, l.dev) {
        out.rx_packets = delta_u64(a.0, b.0);
        out.tx_packets = delta_u64(a.1, b.1);
        out.rx_dropped = delta_u64(a.2, b.2);
    }
    if let (Some(a), Some(b)) = (&e.softirqs, &l.softirqs) {
        let (align, _) = align_cpus("/proc/softirqs", &a.cpus, &b.cpus);
        let pick = |n: &str| Some(align.delta_u32(a.get(n)?, b.get(n)?).total);
        out.net_rx_softirqs = pick("NET_RX");
        out.net_tx_softirqs = pick("NET_TX");
    }
    if let (Some(a), Some(b)) = (&e.softnet, &l.softnet) {
        let (d, _) = softnet_delta(a, b);
        out.softnet_dropped = Some(d.dropped.total);
        out.softnet_time_squeeze = Some(d.time_squeeze.total);
    }
    out
}

#[cfg(test)]
mod tests;
