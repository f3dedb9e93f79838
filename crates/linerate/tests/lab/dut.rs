//! `--dut`: the device under test's own counters, read from a `linerate serve` running in
//! the router namespace of a router lab, checked against witnesses the test reads itself in
//! that namespace (`ip -s -j link`, `/proc/stat`, `/proc/softirqs` through `ip netns exec`).
//!
//! Tolerance: a device window runs from before the tester announces its streams to after
//! both engines finished, so besides the test's frames the router's egress towards `b` also
//! forwards the few control packets of that window (`streams_ready`, the UDP stream hellos
//! repeated every 10 ms until `start`, `stop`, the client's `results` and the ACKs of the
//! server's intervals and results) and any neighbour traffic: a few dozen at most.
//! [`CONTROL_PACKETS`] bounds them.

use std::time::Duration;

use linerate_lab::{Lab, LabOptions};
use serde_json::Value;

use crate::common::{self, serve_in};

/// Packets other than the test's frames that a device window may see forwarded towards
/// `b` (see the module docs).
const CONTROL_PACKETS: u64 = 64;

fn lab_name(tag: &str) -> String {
    common::lab_name("du", tag)
}

/// `ip -s -j link` of `iface` in `host`: (rx packets, tx packets).
fn link_packets(lab: &Lab, host: &str, iface: &str) -> (u64, u64) {
    let out = lab
        .exec(host, &["ip", "-s", "-j", "link", "show", "dev", iface])
        .expect("ip -s link");
    let v: Value = serde_json::from_slice(&out.stdout).expect("ip -j output");
    let s = &v[0]["stats64"];
    (
        s["rx"]["packets"].as_u64().expect("rx packets"),
        s["tx"]["packets"].as_u64().expect("tx packets"),
    )
}

/// All CPU ticks (every column of the per-CPU lines but guest) and NET_RX softirqs, read in
/// the router's namespace with `cat` (host-wide counters: the namespace shares them).
fn cpu_and_net_rx(lab: &Lab) -> (u64, u64) {
    let stat = lab
        .exec("r", &["cat", "/proc/stat"])
        .expect("cat /proc/stat");
    let stat = String::from_utf8_lossy(&stat.stdout).to_string();
    let ticks: u64 = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .flat_map(|l| l.split_whitespace().skip(1).take(8))
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    let soft = lab
        .exec("r", &["cat", "/proc/softirqs"])
        .expect("cat /proc/softirqs");
    let soft = String::from_utf8_lossy(&soft.stdout).to_string();
    let net_rx: u64 = soft
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        })
        .expect("NET_RX row");
    (ticks, net_rx)
}

fn run_in_a(lab: &Lab, args: &[&str]) -> Value {
    let mut a = vec![env!("CARGO_BIN_EXE_linerate")];
    a.extend_from_slice(args);
    a.push("--json");
    let out = lab.exec("a", &a).expect("run in namespace a");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json record")
}

/// The device section's egress interface towards `b`, checked for shares and caps.
fn egress<'a>(dut: &'a Value, iface: &str) -> &'a Value {
    assert_eq!(dut["same_host"], true, "{dut}");
    let cpu = &dut["cpu"];
    for c in cpu["per_cpu"].as_array().expect("per-CPU shares") {
        for k in ["busy_percent", "softirq_percent", "irq_percent"] {
            let v = c[k].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&v), "{k} {v}: {dut}");
        }
    }
    assert!(cpu["busiest_busy_percent"].as_f64().unwrap() <= 100.0);
    dut["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == iface)
        .unwrap_or_else(|| panic!("no {iface} in {dut}"))
}

fn sum_ticks(dut: &Value) -> u64 {
    dut["cpu"]["per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["ticks"].as_u64().unwrap())
        .sum()
}

/// RFC 2544 through a router whose namespace runs `linerate serve`: every trial carries the
/// router's counters; the frames the tester counted as received in a trial are the packets
/// the router's egress towards b transmitted in it (within [`CONTROL_PACKETS`]); the
/// windows' packets, CPU ticks and NET_RX softirqs add up to no more than `ip -s link`,
/// `/proc/stat` and `/proc/softirqs` read by this test around the whole run. Then a UDP
/// stream test (no GSO: one datagram per packet) gets the same check.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_dut_counters_match_the_routers_own() {
    let lab = Lab::router(&lab_name("r"), &LabOptions::default()).expect("lab up (needs root)");
    let _srv = serve_in(&lab, "b");
    let _dut = serve_in(&lab, "r");
    let (r, egress_if) = lab.shaped_link();
    assert_eq!(r, "r");
    let egress_if = egress_if.to_string();
    let b = lab.addr("b").unwrap().to_string();
    let dut = lab.addr("r").unwrap().to_string();

    let before = link_packets(&lab, "r", &egress_if);
    let (ticks0, net_rx0) = cpu_and_net_rx(&lab);
    let rec = run_in_a(
        &lab,
        &[
            "rfc2544",
            &b,
            "--dut",
            &dut,
            "--line-rate",
            "50M",
            "--frame-sizes",
            "512",
            "--trial-time",
            "0.5",
            "--confirm-time",
            "1",
            "--settle",
            "0.1",
            "--resolution",
            "5",
            "--max-trials",
            "4",
            "--calibrate-time",
            "0.2",
        ],
    );
    let after = link_packets(&lab, "r", &egress_if);
    let (ticks1, net_rx1) = cpu_and_net_rx(&lab);

    let size = &rec["frame_sizes"][0];
    let mut trials: Vec<&Value> = size["throughput"]["trials"]
        .as_array()
        .expect("throughput trials")
        .iter()
        .collect();
    trials.extend(
        size["calibration"]
            .as_object()
            .map(|_| &size["calibration"]),
    );
    assert!(!trials.is_empty());
    let (mut tx_sum, mut ticks_sum, mut net_rx_sum) = (0u64, 0u64, 0u64);
    for t in &trials {
        let d = &t["dut"];
        assert!(d.is_object(), "no device section: {t}");
        let e = egress(d, &egress_if);
        let tx = e["tx_packets"].as_u64().unwrap();
        let received = t["ways"][0]["received"].as_u64().unwrap();
        assert!(
            received <= tx && tx <= received + CONTROL_PACKETS,
            "the tester received {received} frames, the router's {egress_if} transmitted {tx}: {t}"
        );
        // The window holds the whole trial, on the device's clock.
        if let Some(ms) = t["duration_ms"].as_u64() {
            let ns = d["duration_ns"].as_u64().unwrap();
            assert!(ns >= ms * 1_000_000, "window {ns} ns, trial {ms} ms");
        }
        tx_sum += tx;
        ticks_sum += sum_ticks(d);
        net_rx_sum += d["net_rx_softirqs"]["counts"]["total"].as_u64().unwrap();
    }
    let routed = after.1 - before.1;
    assert!(
        tx_sum <= routed,
        "the windows' egress packets ({tx_sum}) exceed ip -s link's {routed} over the run"
    );
    // The learning trial and the frames between windows are outside them, but most
    // frames of the run are inside.
    assert!(tx_sum * 2 > routed, "windows {tx_sum}, run {routed}");
    assert!(
        ticks_sum > 0 && ticks_sum <= ticks1 - ticks0,
        "{ticks_sum} {ticks0} {ticks1}"
    );
    assert!(
        net_rx_sum <= net_rx1 - net_rx0,
        "{net_rx_sum} {net_rx0} {net_rx1}"
    );

    // A UDP stream test, one datagram per packet.
    let before = link_packets(&lab, "r", &egress_if);
    let rec = run_in_a(
        &lab,
        &[
            "udp",
            &b,
            "--dut",
            &dut,
            "-b",
            "20M",
            "-l",
            "512",
            "-t",
            "1",
            "--no-offload",
        ],
    );
    let after = link_packets(&lab, "r", &egress_if);
    let d = &rec["dut"];
    let e = egress(d, &egress_if);
    let tx = e["tx_packets"].as_u64().unwrap();
    let received = rec["summary"]["flows"][0]["udp"]["packets"]
        .as_u64()
        .unwrap();
    assert!(received > 1000, "{rec}");
    assert!(
        received <= tx && tx <= received + CONTROL_PACKETS,
        "the server received {received} datagrams, the router's {egress_if} transmitted {tx}"
    );
    assert!(tx <= after.1 - before.1);
    assert_eq!(e["rx_dropped"], 0);
    assert!(rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| !w.as_str().unwrap_or("").contains("--dut")));
    std::thread::sleep(Duration::from_millis(10));
}

/// A device that is not a linerate server with device counters is refused up front in one
/// line with exit code 2; here the "device" is `b`'s server on a port nothing listens on.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_dut_unreachable_is_one_line_exit_2() {
    let lab = Lab::router(&lab_name("x"), &LabOptions::default()).expect("lab up (needs root)");
    let _srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let dut = format!("{}:5399", lab.addr("r").unwrap());
    let out = lab
        .exec(
            "a",
            &[
                env!("CARGO_BIN_EXE_linerate"),
                "udp",
                &b,
                "--dut",
                &dut,
                "-t",
                "0.5",
            ],
        )
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dut") && err.contains("5399"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
