//! Tests of snapshot deltas on fixtures (expected values worked out in comments) and of
//! live snapshots and facts on loopback.

use std::time::Duration;

use linerate_wire::host::InterfaceStats;

use super::*;
use crate::sys::interrupts::parse_proc_interrupts;
use crate::sys::netdev::StatsSource;
use crate::sys::snmp::parse_snmp_pairs;
use crate::sys::softirqs::parse_proc_softirqs;
use crate::sys::softnet::parse_softnet_stat;

fn stats(rx_packets: u64, tx_packets: u64) -> IfaceCounters {
    IfaceCounters {
        source: StatsSource::ProcNetDev,
        stats: InterfaceStats {
            rx_packets,
            tx_packets,
            ..InterfaceStats::default()
        },
    }
}

fn snapshot(later: bool, at: Instant) -> HostSnapshot {
    let pick = |a: &'static str, b: &'static str| if later { b } else { a };
    let snmp = pick(
        "Udp: InDatagrams RcvbufErrors\nUdp: 100 5\nTcpExt: DelayedACKs\nTcpExt: 7\n",
        "Udp: InDatagrams RcvbufErrors\nUdp: 1100 9\nTcpExt: DelayedACKs\nTcpExt: 7\n",
    );
    HostSnapshot {
        at,
        interface: Some("eth0".into()),
        interface_irqs: ["38", "39"].iter().map(|s| s.to_string()).collect(),
        interrupts: Some(
            parse_proc_interrupts(pick(
                include_str!("../../../tests/fixtures/proc/interrupts-2cpu.txt"),
                include_str!("../../../tests/fixtures/proc/interrupts-2cpu-later.txt"),
            ))
            .unwrap(),
        ),
        softirqs: Some(
            parse_proc_softirqs(pick(
                include_str!("../../../tests/fixtures/proc/softirqs-2cpu.txt"),
                include_str!("../../../tests/fixtures/proc/softirqs-2cpu-later.txt"),
            ))
            .unwrap(),
        ),
        softnet: Some(
            parse_softnet_stat(pick(
                include_str!("../../../tests/fixtures/proc/softnet_stat-15col.txt"),
                include_str!("../../../tests/fixtures/proc/softnet_stat-15col-later.txt"),
            ))
            .unwrap(),
        ),
        snmp: Some(parse_snmp_pairs("snmp", snmp).unwrap()),
        iface_stats: Some(if later {
            stats(12_000, 6_000)
        } else {
            stats(10_000, 5_000)
        }),
        conntrack: None,
        driver_stats: Some(if later {
            vec![("rx_kicks".into(), 900), ("tx_kicks".into(), 50)]
        } else {
            vec![("rx_kicks".into(), 800), ("tx_kicks".into(), 50)]
        }),
        notes: Vec::new(),
    }
}

#[test]
fn fixture_delta_is_exact() {
    let t0 = Instant::now();
    let a = snapshot(false, t0);
    let b = snapshot(true, t0 + Duration::from_secs(2));
    let d = &b - &a;
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.duration_ns, 2_000_000_000);
    assert_eq!(d.interface.as_deref(), Some("eth0"));
    // Interrupts as in interrupts::tests::two_cpu_delta_is_exact.
    let i = d.interrupts.as_ref().unwrap();
    assert_eq!(i.all.total, 4602);
    assert_eq!(i.interface.as_ref().unwrap().total, 1500);
    assert_eq!(d.softirqs.as_ref().unwrap().net_rx.total, 10_000);
    assert_eq!(d.softnet.as_ref().unwrap().time_squeeze.total, 6);
    // Udp.InDatagrams 100 -> 1100, Udp.RcvbufErrors 5 -> 9, TcpExt.DelayedACKs unchanged
    // (reported as 0); the other interesting counters are not in these snapshots.
    let snmp = d.snmp.as_ref().unwrap();
    assert_eq!(snmp.len(), 3);
    assert_eq!(snmp["Udp.InDatagrams"], 1000);
    assert_eq!(snmp["Udp.RcvbufErrors"], 4);
    assert_eq!(snmp["TcpExt.DelayedACKs"], 0);
    let s = d.interface_stats.as_ref().unwrap();
    assert_eq!((s.rx_packets, s.tx_packets), (2000, 1000));
    // Only rx_kicks changed (+100).
    let ds = d.driver_stats.as_ref().unwrap();
    assert_eq!(ds.counters, BTreeMap::from([("rx_kicks".to_string(), 100)]));
    assert_eq!((ds.available, ds.omitted), (2, 0));
    // 1500 interface interrupts for 3000 packets: 500 per 1000 packets, 2 packets each.
    assert_eq!(d.interrupts_per_1000_packets, Some(500.0));
    assert_eq!(d.packets_per_interrupt, Some(2.0));
    // Over 2 s: 4602 / 2, 1500 / 2, 10000 / 2, 2000 / 2, 1000 / 2.
    assert_eq!(d.rates.interrupts_per_sec, Some(2301.0));
    assert_eq!(d.rates.interface_interrupts_per_sec, Some(750.0));
    assert_eq!(d.rates.net_rx_softirqs_per_sec, Some(5000.0));
    assert_eq!(d.rates.rx_packets_per_sec, Some(1000.0));
    assert_eq!(d.rates.tx_packets_per_sec, Some(500.0));
}

#[test]
fn missing_sections_and_no_interface_irqs() {
    let t0 = Instant::now();
    let mut a = snapshot(false, t0);
    let mut b = snapshot(true, t0);
    a.softnet = None;
    a.interface_irqs.clear();
    b.interface_irqs.clear();
    b.notes
        .push("interface eth0: the driver has no statistics (ethtool -S)".into());
    let d = a.delta(&b);
    assert!(d.softnet.is_none());
    assert!(d.interrupts.as_ref().unwrap().interface.is_none());
    assert_eq!(d.interrupts_per_1000_packets, None);
    assert_eq!(d.packets_per_interrupt, None);
    // Zero duration: no rates.
    assert_eq!(d.rates, HostRates::default());
    assert_eq!(d.warnings, b.notes);
    // A different interface in the two snapshots: no interface sections.
    b.interface = Some("eth1".into());
    let d = a.delta(&b);
    assert!(d.interface.is_none() && d.interface_stats.is_none() && d.driver_stats.is_none());
}

#[test]
fn driver_counters_dedup_reset_and_cap() {
    let names = unique_names(&[("q".into(), 1), ("x".into(), 2), ("q".into(), 3)]);
    assert_eq!(names[2], ("q#2".to_string(), 3));
    let mut w = Vec::new();
    let e: Vec<(String, u64)> = (0..300).map(|i| (format!("c{i:03}"), 10)).collect();
    let mut l: Vec<(String, u64)> = (0..300).map(|i| (format!("c{i:03}"), 10 + i)).collect();
    l[5].1 = 1; // went down
    let d = driver_delta("eth0", &e, &l, &mut w).unwrap();
    // Nonzero deltas: c001..c299 except c005 = 298; the 256 largest are c044..c299.
    assert_eq!(d.counters.len(), 256);
    assert_eq!(d.omitted, 298 - 256);
    assert_eq!(d.available, 300);
    assert_eq!(d.counters.keys().next().map(String::as_str), Some("c044"));
    assert_eq!(d.counters["c299"], 299);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("c005"), "{w:?}");
}

#[test]
fn live_loopback_snapshot() {
    let (a, w) = HostSnapshot::take(Some("lo"));
    assert!(w.is_empty(), "{w:?}");
    assert!(a.interrupts.is_some() && a.softirqs.is_some() && a.softnet.is_some());
    assert!(a.interface_irqs.is_empty());
    assert_eq!(a.driver_stats, None);
    assert_eq!(a.notes.len(), 1, "{:?}", a.notes);
    let (b, _) = HostSnapshot::take(Some("lo"));
    let d = a.delta(&b);
    assert!(d.snmp.as_ref().unwrap().contains_key("Udp.InDatagrams"));
    assert!(d.interface_stats.is_some());
    let (_, w) = HostSnapshot::take(Some("bad/name"));
    assert!(w[0].contains("bad/name"), "{w:?}");
}

#[test]
fn interval_sampler_counts_loopback_packets() {
    let mut s = IntervalSampler::new(Some("lo"));
    let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..20 {
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
    }
    let d = s.sample();
    // Every datagram crosses lo once; other processes may add more.
    assert!(d.rx_packets.unwrap() >= 20, "{d:?}");
    assert!(d.tx_packets.unwrap() >= 20, "{d:?}");
    assert!(d.net_rx_softirqs.is_some() && d.softnet_dropped.is_some());
    let none = IntervalSampler::new(None).sample();
    assert_eq!(none.rx_packets, None);
}
