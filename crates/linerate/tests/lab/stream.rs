//! Stream tests with a real client and server in network namespaces built by linerate-lab:
//! across a veth pair, and through a shaped router.

use linerate_lab::{Lab, LabOptions, Shaping};

use crate::common::{self, serve_in};

fn lab_name(tag: &str) -> String {
    common::lab_name("it", tag)
}

fn client_json(lab: &Lab, host: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec![env!("CARGO_BIN_EXE_linerate")];
    a.extend_from_slice(args);
    a.push("--json");
    let out = lab.exec(host, &a).expect("run client in namespace");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json record")
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_tcp_across_a_veth_pair() {
    let lab = Lab::pair(&lab_name("p"), &LabOptions::default()).expect("lab up (needs root)");
    let srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let rec = client_json(&lab, "a", &["tcp", &b, "-t", "1", "-P", "2"]);
    drop(srv);
    let f = &rec["summary"]["flows"][0];
    assert!(f["receiver_bps"].as_f64().unwrap() > 1e8, "{f}");
    assert_eq!(f["receiver_bytes"].as_u64(), f["sender_bytes"].as_u64());
    let remote = rec["client"]["streams"][0]["remote_addr"].as_str().unwrap();
    assert!(
        remote.starts_with(&b),
        "traffic went to {remote}, not the lab host {b}"
    );
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_shaped_router_limits_tcp_and_drops_excess_udp() {
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(20_000_000)),
        ..LabOptions::default()
    };
    let lab = Lab::router(&lab_name("r"), &opts).expect("lab up (needs root)");
    let srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let tcp = client_json(&lab, "a", &["tcp", &b, "-t", "2", "-O", "0.5"]);
    let bps = tcp["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap();
    assert!(
        bps < 21e6 && bps > 14e6,
        "TCP through a 20 Mbit/s tbf got {bps}"
    );
    // UDP offered at 30 Mbit/s of 1400-byte payloads through 20 Mbit/s of link: about a third
    // of the datagrams must be lost (the frames carry 42 bytes of headers, so a bit more).
    let udp = client_json(
        &lab,
        "a",
        &["udp", &b, "-t", "2", "-b", "30M", "-l", "1400"],
    );
    let loss = udp["summary"]["flows"][0]["loss_percent"].as_f64().unwrap();
    drop(srv);
    assert!(loss > 20.0 && loss < 45.0, "loss {loss}%");
}
