//! Datagrams against packets: what linerate's sockets sent and what the interfaces carried,
//! checked against `ip -s -j link` read by the test itself around the run. With UDP GSO/GRO
//! one packet carries up to 64 datagrams through loopback and veth; without offload each
//! datagram is a packet.
//!
//! Loopback is tested inside a namespace of its own (a lab host's `lo`, which nothing else
//! uses), so the witness counts only this test; veth across a lab pair. Both need root, like
//! every lab test.

use linerate::model::{FlowSummary, RunRecord};
use linerate_lab::{Lab, LabOptions};
use linerate_wire::control::{Direction, Transport};

use crate::common::{self, plan, run, serve_in, TestServer};

/// (rx packets, tx packets) of `dev` in `host`'s namespace, from `ip -s -j link`.
fn ip_link_packets(lab: &Lab, host: &str, dev: &str) -> (u64, u64) {
    let out = lab
        .exec(host, &["ip", "-s", "-j", "link", "show", "dev", dev])
        .expect("ip -s -j link");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ip -j output");
    let s = &v[0]["stats64"];
    (
        s["rx"]["packets"].as_u64().expect("rx packets"),
        s["tx"]["packets"].as_u64().expect("tx packets"),
    )
}

/// Packets of the run outside linerate's window (control connection set-up, results,
/// close; UDP hellos) are few: at most this many, or 1% of the run's.
const OUTSIDE_WINDOW: u64 = 100;

#[track_caller]
fn close_to_witness(what: &str, linerate: u64, witness: u64) {
    assert!(
        linerate <= witness,
        "{what}: linerate counted {linerate} packets, the interface {witness} in the whole run"
    );
    let slack = OUTSIDE_WINDOW.max(witness / 100);
    assert!(
        witness - linerate <= slack,
        "{what}: linerate counted {linerate} packets, the interface {witness}"
    );
}

/// The checks common to both paths, given the witness's packet counts over the whole run
/// at the sender's interface (sent) and the receiver's (received).
#[track_caller]
fn check_flow(rec: &RunRecord, witness_tx: u64, witness_rx: u64, offload: bool) -> f64 {
    let f: &FlowSummary = &rec.summary.flows[0];
    let ip = f.interface_packets.as_ref().expect("interface packets");
    let (tx, rx) = (
        ip.sender_tx_packets.unwrap(),
        ip.receiver_rx_packets.unwrap(),
    );
    close_to_witness("sender's interface", tx, witness_tx);
    close_to_witness("receiver's interface", rx, witness_rx);
    // The figures are those counts without the control connection's, per second.
    let ctl = ip
        .sender_control_packets
        .expect("control connection counted");
    assert!(ctl > 0 && ctl < 100, "{ctl}");
    let datagrams = rec.client.totals.tx_packets.unwrap();
    let ratio = f.sender_datagrams_per_packet.unwrap();
    assert!(
        (ratio - datagrams as f64 / (tx - ctl) as f64).abs() < 1e-9,
        "{ratio}"
    );
    // Against the witness alone: the run's datagrams over the run's packets.
    let witness_ratio = datagrams as f64 / witness_tx as f64;
    assert!(
        ratio >= witness_ratio && ratio <= witness_ratio * 1.02,
        "linerate {ratio} datagrams per packet, witness {witness_ratio}"
    );
    let pps = f.sender_interface_pps.unwrap();
    let window_s = rec.client.host_counters.as_ref().unwrap().duration_ns as f64 / 1e9;
    assert!(((pps * window_s) - (tx - ctl) as f64).abs() < 1.0, "{pps}");
    eprintln!(
        "offload {offload}: {datagrams} datagrams; interface sent {tx} (witness {witness_tx}), \
         received {rx} (witness {witness_rx}), control {ctl}; {ratio:.2} datagrams per packet \
         (witness {witness_ratio:.2}), {pps:.0} packets/s"
    );
    let notes = &rec.diagnosis.as_ref().unwrap().notes;
    if offload {
        // GSO/GRO put many datagrams in a packet, and the record says so.
        assert!(ratio > 10.0, "{ratio} datagrams per packet with offload");
        assert!(f.sender_pps.unwrap() > 10.0 * pps);
        assert!(
            notes.iter().any(|n| n.contains("datagrams per packet")),
            "{notes:?}"
        );
    } else {
        assert!((0.98..=1.0001).contains(&ratio), "{ratio} without offload");
        assert!(notes.is_empty(), "{notes:?}");
    }
    ratio
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_loopback_datagrams_and_packets_match_ip_link() {
    let lab = Lab::pair(&common::lab_name("lrb", "lo"), &LabOptions::default())
        .expect("lab up (needs root)");
    for offload in [true, false] {
        let (w0, rec, w1) = lab
            .run_in("a", || {
                let srv = TestServer::start();
                let mut s = common::spec(Transport::Udp, Direction::Send);
                s.write_size = 64;
                s.duration_ms = Some(1500);
                s.udp_offload = offload;
                // Unpaced: as many datagrams as the host can, as `linerate udp -l 64` does.
                s.rate_bps = None;
                let w0 = ip_link_packets(&lab, "a", "lo");
                let rec = run(&plan(srv.addr, s));
                let w1 = ip_link_packets(&lab, "a", "lo");
                drop(srv);
                (w0, rec, w1)
            })
            .unwrap();
        // Loopback counts each packet once sent and once received.
        let (rx, tx) = (w1.0 - w0.0, w1.1 - w0.1);
        assert_eq!(rx, tx);
        let ip = rec.summary.flows[0].interface_packets.clone().unwrap();
        assert_eq!(ip.sender_interface.as_deref(), Some("lo"));
        // On loopback the control connection's both directions cross the one interface.
        let (c, s) = (
            rec.client.control_segments.unwrap(),
            rec.server.as_ref().unwrap().control_segments.unwrap(),
        );
        assert_eq!(ip.sender_control_packets, Some(c.sent + c.received));
        assert_eq!(ip.receiver_control_packets, Some(s.sent + s.received));
        check_flow(&rec, tx, rx, offload);
    }
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_veth_datagrams_and_packets_match_ip_link() {
    let lab = Lab::pair(&common::lab_name("lrb", "vp"), &LabOptions::default())
        .expect("lab up (needs root)");
    let srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let (a_if, b_if) = (
        lab.iface("a").unwrap().to_string(),
        lab.iface("b").unwrap().to_string(),
    );
    for offload in [true, false] {
        let wa0 = ip_link_packets(&lab, "a", &a_if);
        let wb0 = ip_link_packets(&lab, "b", &b_if);
        let mut args = vec![
            env!("CARGO_BIN_EXE_linerate"),
            "udp",
            &b,
            "-l",
            "64",
            "-t",
            "1.5",
            "--json",
        ];
        if !offload {
            args.push("--no-offload");
        }
        let out = lab.exec("a", &args).expect("client in namespace");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rec: RunRecord = serde_json::from_slice(&out.stdout).expect("json record");
        let wa1 = ip_link_packets(&lab, "a", &a_if);
        let wb1 = ip_link_packets(&lab, "b", &b_if);
        let ratio = check_flow(&rec, wa1.1 - wa0.1, wb1.0 - wb0.0, offload);
        // Over veth only the sender's control segments leave its interface.
        let ip = rec.summary.flows[0].interface_packets.clone().unwrap();
        assert_eq!(
            ip.sender_control_packets,
            Some(rec.client.control_segments.unwrap().sent)
        );
        assert_eq!(ip.sender_interface.as_deref(), Some(a_if.as_str()));
        eprintln!("veth, offload {offload}: {ratio:.2} datagrams per packet");
    }
    drop(srv);
}
