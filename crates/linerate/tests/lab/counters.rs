//! Interface facts and driver counters of a veth inside a lab namespace (root), read from
//! the real kernel.

use std::net::{SocketAddr, UdpSocket};

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

fn lab_name() -> String {
    format!("ic{}", std::process::id() % 100_000)
}

#[test]
#[ignore = "needs root: network namespaces"]
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
