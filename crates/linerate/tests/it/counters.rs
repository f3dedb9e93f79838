//! Host counters and interface facts read from the real kernel on loopback in this
//! namespace. A veth inside a lab namespace is in `tests/lab/counters.rs`.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use linerate::sys::hostsnap::{interface_facts, HostSnapshot};
use linerate::sys::iface::route_interface;
use linerate_wire::host::QueueSource;

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
