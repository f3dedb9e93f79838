//! Doctor checks on fixture values. Defaults below are Debian 12's (Linux 6.1): rmem_max
//! 212992, tcp_rmem "4096 131072 6291456", cubic, backlog 1000.

use std::collections::BTreeMap;

use linerate_wire::doctor::{Finding, Severity};
use linerate_wire::host::{InterfaceFacts, RingSizes};

use super::checks::*;

fn debian() -> Sysctls {
    Sysctls {
        rmem_max: Some(212_992),
        wmem_max: Some(212_992),
        rmem_default: Some(212_992),
        wmem_default: Some(212_992),
        netdev_max_backlog: Some(1000),
        tcp_rmem: Some(vec![4096, 131_072, 6_291_456]),
        tcp_wmem: Some(vec![4096, 16_384, 4_194_304]),
        congestion_control: Some("cubic".into()),
        available_congestion_control: Some(vec!["reno".into(), "cubic".into()]),
        window_scaling: Some(1),
        timestamps: Some(1),
        sack: Some(1),
    }
}

pub(crate) fn inputs() -> HostInputs {
    HostInputs {
        sysctls: debian(),
        governors: None,
        cpu_count: 8,
        interface: None,
        irq_affinity: Vec::new(),
        path_mtu: None,
        conntrack: None,
    }
}

pub(crate) const FOUR_MIB: Target = Target {
    buffer_bytes: 4 << 20,
    rtt_us: None,
    crr_tps: None,
};

fn find<'a>(f: &'a [Finding], check: &str) -> &'a Finding {
    f.iter()
        .find(|f| f.check == check)
        .unwrap_or_else(|| panic!("no {check} in {f:#?}"))
}

#[test]
fn rmem_max_below_the_requested_buffer_warns_with_the_sysctl() {
    let f = checks(&inputs(), &FOUR_MIB);
    let r = find(&f, "net.core.rmem_max");
    assert_eq!(r.severity, Severity::Warn);
    assert_eq!(r.value.as_deref(), Some("212992"));
    assert_eq!(
        r.fix.as_deref(),
        Some("sysctl -w net.core.rmem_max=4194304")
    );
    // 2 × 212992 = 416 KiB granted instead of 8 MiB.
    assert!(
        r.what
            .contains("a request of 4.00 MiB gets 416.00 KiB instead of 8.00 MiB"),
        "{}",
        r.what
    );
    let mut i = inputs();
    i.sysctls.wmem_max = Some(16 << 20);
    let f = checks(&i, &FOUR_MIB);
    assert_eq!(find(&f, "net.core.wmem_max").severity, Severity::Ok);
    assert_eq!(find(&f, "net.core.wmem_max").fix, None);
}

#[test]
fn tcp_rmem_against_the_bdp_of_the_link_and_rtt() {
    let mut i = inputs();
    i.interface = Some(InterfaceFacts {
        name: "eth0".into(),
        speed_mbps: Some(10_000),
        ..InterfaceFacts::default()
    });
    // 10 Gbit/s × 10 ms = 12.5 MB; twice that (25,000,000 B) rounded up to 24 MiB.
    let t = Target {
        buffer_bytes: 4 << 20,
        rtt_us: Some(10_000),
        crr_tps: None,
    };
    let r = find(&checks(&i, &t), "net.ipv4.tcp_rmem").clone();
    assert_eq!(r.severity, Severity::Warn);
    assert_eq!(
        r.fix.as_deref(),
        Some("sysctl -w net.ipv4.tcp_rmem=\"4096 131072 25165824\"")
    );
    assert_eq!(r.value.as_deref(), Some("4096 131072 6291456"));
    // 100 µs: BDP 125 kB, 6 MiB is plenty.
    let t = Target {
        rtt_us: Some(100),
        ..t
    };
    assert_eq!(
        find(&checks(&i, &t), "net.ipv4.tcp_rmem").severity,
        Severity::Ok
    );
    // Unknown RTT: what the maximum allows. A 3 MiB window carries 1 Gbit/s up to
    // 3,145,728 × 8 / 1e9 = 25.2 ms and 10 Gbit/s up to 2.52 ms.
    let r = find(&checks(&inputs(), &FOUR_MIB), "net.ipv4.tcp_rmem").clone();
    assert_eq!(r.severity, Severity::Info);
    assert!(
        r.what
            .contains("1 Gbit/s up to 25.2 ms RTT, 10 Gbit/s up to 2.52 ms"),
        "{}",
        r.what
    );
}

#[test]
fn tcp_switches_and_congestion_control() {
    let mut i = inputs();
    i.sysctls.window_scaling = Some(0);
    i.sysctls.sack = Some(0);
    i.sysctls.timestamps = Some(0);
    i.sysctls.congestion_control = Some("reno".into());
    let f = checks(&i, &FOUR_MIB);
    let ws = find(&f, "net.ipv4.tcp_window_scaling");
    assert_eq!(
        (ws.severity, ws.fix.as_deref()),
        (
            Severity::Warn,
            Some("sysctl -w net.ipv4.tcp_window_scaling=1")
        )
    );
    assert_eq!(find(&f, "net.ipv4.tcp_sack").severity, Severity::Warn);
    assert_eq!(find(&f, "net.ipv4.tcp_timestamps").severity, Severity::Info);
    let cc = find(&f, "net.ipv4.tcp_congestion_control");
    assert_eq!(
        cc.fix.as_deref(),
        Some("sysctl -w net.ipv4.tcp_congestion_control=cubic")
    );
    let f = checks(&inputs(), &FOUR_MIB);
    for c in [
        "net.ipv4.tcp_window_scaling",
        "net.ipv4.tcp_sack",
        "net.ipv4.tcp_timestamps",
        "net.ipv4.tcp_congestion_control",
    ] {
        assert_eq!(find(&f, c).severity, Severity::Ok, "{c}");
    }
    assert!(find(&f, "net.ipv4.tcp_congestion_control")
        .what
        .contains("available: reno cubic"));
}

#[test]
fn backlog_and_unreadable_values() {
    let mut i = inputs();
    i.sysctls.netdev_max_backlog = Some(300);
    let f = checks(&i, &FOUR_MIB);
    assert_eq!(
        find(&f, "net.core.netdev_max_backlog").fix.as_deref(),
        Some("sysctl -w net.core.netdev_max_backlog=1000")
    );
    i.sysctls.netdev_max_backlog = Some(1000);
    i.interface = Some(InterfaceFacts {
        name: "eth0".into(),
        speed_mbps: Some(25_000),
        ..InterfaceFacts::default()
    });
    let f = checks(&i, &FOUR_MIB);
    let b = find(&f, "net.core.netdev_max_backlog");
    assert_eq!(
        (b.severity, b.fix.as_deref()),
        (
            Severity::Info,
            Some("sysctl -w net.core.netdev_max_backlog=10000")
        )
    );
    i.sysctls = Sysctls::default();
    let f = checks(&i, &FOUR_MIB);
    let r = find(&f, "net.core.rmem_max");
    assert_eq!((r.severity, r.value.as_deref()), (Severity::Info, None));
    assert_eq!(r.what, "could not be read");
}

#[test]
fn governors() {
    let gov = |g: &[&str]| {
        let mut i = inputs();
        i.governors = Some(
            g.iter()
                .enumerate()
                .map(|(n, g)| (n as u32, g.to_string()))
                .collect(),
        );
        find(&checks(&i, &FOUR_MIB), "cpu.governor").clone()
    };
    let none = find(&checks(&inputs(), &FOUR_MIB), "cpu.governor").clone();
    assert_eq!(
        (none.severity, none.what.as_str()),
        (Severity::Info, "no cpufreq: governor not applicable (VM?)")
    );
    assert_eq!(gov(&["performance", "performance"]).severity, Severity::Ok);
    let p = gov(&["powersave", "performance", "powersave"]);
    assert_eq!(p.severity, Severity::Warn);
    assert_eq!(
        p.value.as_deref(),
        Some("powersave on 2 of 3 CPUs, performance on 1 of 3 CPUs")
    );
    assert!(p.fix.as_deref().unwrap().contains("echo performance > $g"));
    assert_eq!(gov(&["schedutil"]).severity, Severity::Info);
}

fn nic() -> InterfaceFacts {
    InterfaceFacts {
        name: "eth0".into(),
        driver: Some("ixgbe".into()),
        mtu: Some(1500),
        speed_mbps: Some(10_000),
        offloads: Some(BTreeMap::from([
            ("tcp-segmentation-offload".into(), true),
            ("generic-segmentation-offload".into(), true),
            ("generic-receive-offload".into(), false),
            ("rx-checksumming".into(), true),
            ("tx-checksumming".into(), true),
            ("scatter-gather".into(), true),
        ])),
        coalescing: Some(BTreeMap::from([
            ("rx-usecs".into(), 0),
            ("rx-frames".into(), 1),
            ("adaptive-rx".into(), 0),
        ])),
        rings: Some(RingSizes {
            rx: 256,
            rx_max: 4096,
            tx: 256,
            tx_max: 4096,
        }),
        irqs: vec!["40".into(), "41".into(), "42".into(), "43".into()],
        ..InterfaceFacts::default()
    }
}

#[test]
fn interface_offloads_coalescing_rings_affinity_and_path_mtu() {
    let mut i = inputs();
    i.interface = Some(nic());
    i.irq_affinity = ["40", "41", "42", "43"]
        .iter()
        .map(|n| (n.to_string(), Some(vec![0])))
        .collect();
    i.path_mtu = Some(1400);
    let f = checks(&i, &FOUR_MIB);
    let o = find(&f, "interface.offloads");
    assert_eq!(
        (o.severity, o.fix.as_deref()),
        (Severity::Warn, Some("ethtool -K eth0 gro on"))
    );
    let c = find(&f, "interface.coalescing");
    assert_eq!(c.severity, Severity::Warn);
    assert_eq!(
        c.value.as_deref(),
        Some("rx-usecs 0, rx-frames 1, adaptive-rx 0")
    );
    assert!(c
        .fix
        .as_deref()
        .unwrap()
        .starts_with("ethtool -C eth0 adaptive-rx on"));
    assert_eq!(
        find(&f, "interface.rings").fix.as_deref(),
        Some("ethtool -G eth0 rx 4096")
    );
    let a = find(&f, "interface.irq_affinity");
    assert_eq!(a.severity, Severity::Warn);
    assert_eq!(a.value.as_deref(), Some("40:0 41:0 42:0 43:0"));
    assert!(a.what.contains("all 4 IRQs of eth0 go to CPU 0"));
    assert!(find(&f, "path.mtu")
        .what
        .contains("path MTU 1400 is below eth0's MTU 1500"));
    assert_eq!(
        find(&f, "interface").what,
        "driver ixgbe, MTU 1500, 10000 Mbit/s"
    );
    // Spread IRQs, adaptive coalescing, all offloads on.
    let mut n = nic();
    n.offloads
        .as_mut()
        .unwrap()
        .insert("generic-receive-offload".into(), true);
    n.coalescing
        .as_mut()
        .unwrap()
        .insert("adaptive-rx".into(), 1);
    i.interface = Some(n);
    i.irq_affinity = (0..4)
        .map(|k| ((40 + k).to_string(), Some(vec![k])))
        .collect();
    let f = checks(&i, &FOUR_MIB);
    for c in [
        "interface.offloads",
        "interface.coalescing",
        "interface.irq_affinity",
    ] {
        assert_eq!(find(&f, c).severity, Severity::Ok, "{c}");
    }
}

#[test]
fn a_shaped_veth_shows_its_rate_and_needs_no_link_rate_hint() {
    let mut i = inputs();
    i.interface = Some(InterfaceFacts {
        name: "veth0".into(),
        driver: Some("veth".into()),
        mtu: Some(1500),
        root_qdisc: Some("tbf".into()),
        shaped_rate_bps: Some(50_000_000),
        ..InterfaceFacts::default()
    });
    let f = checks(&i, &FOUR_MIB);
    assert_eq!(
        find(&f, "interface").what,
        "driver veth, MTU 1500, egress shaped by tbf to 50.00 Mbit/s"
    );
    // The shaper gives the diagnosis a rate: no advice to pass --link-rate.
    assert!(!f.iter().any(|f| f.check == "interface.speed"), "{f:#?}");
    i.interface.as_mut().unwrap().shaped_rate_bps = None;
    assert!(checks(&i, &FOUR_MIB)
        .iter()
        .any(|f| f.check == "interface.speed"));
}

#[test]
fn loopback_has_no_hardware_to_check() {
    let mut i = inputs();
    i.interface = Some(InterfaceFacts {
        name: "lo".into(),
        mtu: Some(65_536),
        ..InterfaceFacts::default()
    });
    i.path_mtu = Some(65_535);
    let f = checks(&i, &FOUR_MIB);
    assert!(f.iter().any(|f| f.check == "interface.hardware"));
    assert!(!f
        .iter()
        .any(|f| f.check == "interface.coalescing" || f.check == "interface.irq_affinity"));
    assert_eq!(find(&f, "path.mtu").severity, Severity::Ok);
}

#[test]
fn cpu_lists() {
    assert_eq!(
        parse_cpu_list("0-3,8,10-11\n"),
        Some(vec![0, 1, 2, 3, 8, 10, 11])
    );
    assert_eq!(parse_cpu_list(""), Some(vec![]));
    assert_eq!(parse_cpu_list("3-1"), None);
    assert_eq!(parse_cpu_list("x"), None);
    assert_eq!(cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
}

fn ct(count: u64, max: u64) -> crate::sys::conntrack::Facts {
    crate::sys::conntrack::Facts {
        count: Some(count),
        max,
        time_wait_s: 120,
    }
}

#[test]
fn conntrack_against_a_tcp_crr_rate() {
    // Docker's table (262,144) at 10,000 connections/s: 10,000 × 120 s = 1.2 M entries,
    // full after (262,144 - 144) / 10,000 = 26.2 s.
    let f = conntrack(Some(&ct(144, 262_144)), Some(10_000)).unwrap();
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(f.check, "net.netfilter.nf_conntrack_max");
    assert!(f.what.contains("keeps 1200000 entries"), "{}", f.what);
    assert!(f.what.contains("it fills in 26.2 s"), "{}", f.what);
    assert_eq!(
        f.fix.as_deref(),
        Some("sysctl -w net.netfilter.nf_conntrack_max=1200144")
    );
    // 2,000/s needs 240,000: fits beside 144 in use.
    let f = conntrack(Some(&ct(144, 262_144)), Some(2_000)).unwrap();
    assert_eq!(f.severity, Severity::Ok);
    assert_eq!(f.fix, None);
    // Without a rate: the rate the table holds for good, 262,144 / 120 = 2,184/s.
    let f = conntrack(Some(&ct(144, 262_144)), None).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.what.contains("up to 2184 connections/s"), "{}", f.what);
    // Nearly full already.
    let f = conntrack(Some(&ct(260_000, 262_144)), None).unwrap();
    assert_eq!(f.severity, Severity::Warn);
    // No conntrack: nothing to say, unless a rate was asked about.
    assert_eq!(conntrack(None, None), None);
    assert_eq!(
        conntrack(None, Some(10_000)).unwrap().severity,
        Severity::Ok
    );
    // And checks() carries it.
    let mut i = inputs();
    i.conntrack = Some(ct(0, 1000));
    let t = Target {
        crr_tps: Some(100),
        ..FOUR_MIB
    };
    assert_eq!(
        find(&checks(&i, &t), "net.netfilter.nf_conntrack_max").severity,
        Severity::Warn
    );
}
