//! Host counters and interface facts read from the real kernel: loopback in this
//! namespace, and a veth inside a lab namespace (needs root, like every lab test).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use linerate::sys::ethtool::Ethtool;
use linerate::sys::hostsnap::{interface_facts, HostSnapshot};
use linerate::sys::iface::route_interface;
use linerate_lab::{Lab, LabOptions};
use linerate_wire::host::{Duplex, QueueSource};

/// Sends `n` one-byte datagrams from `tx` to `to` and, when `rx` is given, reads them all.
fn udp_exchange(tx: &UdpSocket, to: SocketAddr, rx: Option<&UdpSocket>, n: usize) {
    for _ in 0..n {
        tx.send_to(b"x", to).unwrap();
        if let Some(rx) = rx {
            let mut buf = [0u8; 16];
            rx.recv_from(&mut buf).expect("datagram on loopback");
        }
    }
}

#[test]
fn host_counters_see_loopback_udp() {
    let peer: IpAddr = "127.0.0.1".parse().unwrap();
    let iface = route_interface(peer).unwrap();
    assert_eq!(iface, "lo");
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();

    let (before, w) = HostSnapshot::take(Some(&iface));
    assert!(w.is_empty(), "{w:?}");
    udp_exchange(&tx, rx.local_addr().unwrap(), Some(&rx), 500);
    let (after, w) = HostSnapshot::take(Some(&iface));
    assert!(w.is_empty(), "{w:?}");
    let d = &after - &before;

    // Other tests of this binary run at the same time, so counts are lower bounds.
    let snmp = d.snmp.as_ref().expect("snmp deltas");
    assert!(snmp["Udp.InDatagrams"] >= 500, "{snmp:?}");
    assert!(snmp["Udp.OutDatagrams"] >= 500, "{snmp:?}");
    assert!(snmp.contains_key("TcpExt.DelayedACKs"));
    let s = d.interface_stats.as_ref().expect("lo statistics");
    assert!(s.rx_packets >= 500 && s.tx_packets >= 500, "{s:?}");
    assert!(s.rx_bytes >= 500 * 29, "{s:?}"); // IPv4 + UDP headers + 1 byte
    assert!(d.rates.rx_packets_per_sec.unwrap() > 0.0);
    // Loopback has no IRQs and no driver counters: no ratios, and one warning saying why.
    let ints = d.interrupts.as_ref().expect("interrupts");
    assert!(ints.interface.is_none());
    assert!(!ints.cpus.is_empty());
    assert_eq!(d.interrupts_per_1000_packets, None);
    assert!(d.driver_stats.is_none());
    assert!(
        d.warnings.iter().any(|w| w.contains("ethtool -S")),
        "{:?}",
        d.warnings
    );
    assert!(d.softirqs.is_some() && d.softnet.is_some());
    // The record round-trips through JSON as the peer would receive it.
    let json = serde_json::to_string(&d).unwrap();
    let back: linerate_wire::host::HostCounters = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn interface_facts_of_loopback() {
    let (f, w) = interface_facts("lo");
    assert_eq!(f.name, "lo");
    assert_eq!(f.ifindex, Some(1));
    assert_eq!(f.mtu, Some(65536));
    assert_eq!(f.speed_mbps, None);
    assert_eq!(f.duplex, None);
    assert_eq!(f.driver, None);
    assert!(f.irqs.is_empty());
    let q = f.queues.expect("lo queues from sysfs");
    assert_eq!((q.rx, q.tx, q.source), (1, 1, QueueSource::Sysfs));
    let k = f.offloads.as_ref().expect("features are generic");
    assert!(k.contains_key("generic-segmentation-offload"), "{k:?}");
    // One line lists what loopback's "driver" does not implement.
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("driver info") && w[0].contains("link settings"),
        "{w:?}"
    );

    let (f, w) = interface_facts("nosuch0");
    assert_eq!(f.ifindex, None);
    assert!(w[0].contains("nosuch0"), "{w:?}");
}

fn lab_name() -> String {
    format!("ic{}", std::process::id() % 100_000)
}

#[test]
fn lab_veth_facts_and_driver_counters() {
    let lab = Lab::pair(&lab_name(), &LabOptions::default()).expect("lab up (needs root)");
    let a_if = lab.iface("a").unwrap().to_string();
    let b_if = lab.iface("b").unwrap().to_string();
    let b_addr = lab.addr("b").unwrap();
    let a_addr = lab.addr("a").unwrap();
    let b_index = lab
        .run_in("b", || nix::net::if_::if_nametoindex(b_if.as_str()))
        .unwrap()
        .unwrap();
    // A receiver in b: a socket keeps the namespace it was created in.
    let rx = lab
        .run_in("b", || UdpSocket::bind(SocketAddr::new(b_addr, 0)))
        .unwrap()
        .unwrap();
    let to = rx.local_addr().unwrap();

    let (facts, stats, counters, routed) = lab
        .run_in("a", || {
            let routed = route_interface(b_addr).unwrap();
            // Why the counters are read from /proc/thread-self/net: /proc/net is
            // /proc/self/net, the namespace of the process's main thread, not this one's.
            let own = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
            let main = std::fs::read_to_string("/proc/net/dev").unwrap();
            assert!(own.contains(&format!("{a_if}:")) && !main.contains(&format!("{a_if}:")));
            let (facts, w) = interface_facts(&a_if);
            // veth implements neither coalescing nor rings (`ethtool -c/-g`: not supported).
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].contains("coalescing, ring sizes"), "{w:?}");
            let stats = Ethtool::open().unwrap().stats(&a_if).unwrap();
            let (before, w) = HostSnapshot::take(Some(&a_if));
            assert!(w.is_empty(), "{w:?}");
            let tx = UdpSocket::bind(SocketAddr::new(a_addr, 0)).unwrap();
            udp_exchange(&tx, to, None, 200);
            let (after, _) = HostSnapshot::take(Some(&a_if));
            (facts, stats, &after - &before, routed)
        })
        .unwrap();

    assert_eq!(routed, a_if);
    assert_eq!(facts.driver.as_deref(), Some("veth"));
    assert_eq!(facts.mtu, Some(1500));
    assert_eq!(facts.speed_mbps, Some(10_000));
    assert_eq!(facts.duplex, Some(Duplex::Full));
    let q = facts.queues.expect("veth queues");
    assert!(q.rx >= 1 && q.tx >= 1, "{q:?}");
    // This thread joined the namespace without remounting sysfs, so the counts come
    // from the driver's channels.
    assert_eq!(q.source, QueueSource::Channels);
    assert!(facts.offloads.is_some());
    assert_eq!((facts.coalescing, facts.rings), (None, None));
    assert_eq!(facts.bus_info, None);

    // `ethtool -S` on veth: the peer's ifindex and per-queue counters.
    let stats = stats.expect("veth has driver statistics");
    let peer = stats.iter().find(|(n, _)| n == "peer_ifindex").unwrap();
    assert_eq!(peer.1, u64::from(b_index));
    assert!(
        stats.iter().any(|(n, _)| n.starts_with("rx_queue_0_")),
        "{stats:?}"
    );

    // Counters of namespace a only: exactly our 200 datagrams left through UDP.
    let snmp = counters.snmp.as_ref().unwrap();
    assert_eq!(snmp["Udp.OutDatagrams"], 200, "{snmp:?}");
    let s = counters.interface_stats.as_ref().unwrap();
    assert!(s.tx_packets >= 200, "{s:?}");
    assert!(counters.driver_stats.is_some());
    assert_eq!(counters.interface.as_deref(), Some(a_if.as_str()));
    drop(rx);
    lab.down().unwrap();
}

#[test]
fn every_interval_carries_the_cheap_host_counters_of_both_ends() {
    use linerate_wire::control::{Direction, Transport};
    let server = crate::common::TestServer::start();
    let mut s = crate::common::spec(Transport::Tcp, Direction::Send);
    s.duration_ms = Some(1000);
    s.interval_ms = 250;
    let rec = crate::common::run(&crate::common::plan(server.addr, s));
    let server_side = rec.server.as_ref().expect("server report");
    for side in [&rec.client, server_side] {
        assert!(side.intervals.len() >= 3, "{:?}", side.role);
        for iv in &side.intervals {
            let h = iv.host.as_ref().expect("host counters in every interval");
            // All sources are readable here; the TCP data crossed lo in every interval.
            assert!(
                h.rx_packets.is_some_and(|p| p > 0),
                "{:?}: {h:?}",
                side.role
            );
            assert!(h.tx_packets.is_some_and(|p| p > 0), "{h:?}");
            assert!(
                h.rx_dropped.is_some() && h.net_tx_softirqs.is_some(),
                "{h:?}"
            );
            assert!(h.net_rx_softirqs.is_some_and(|n| n > 0), "{h:?}");
            assert!(h.softnet_dropped.is_some() && h.softnet_time_squeeze.is_some());
        }
    }
}
