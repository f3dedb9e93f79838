//! Stream tests with a real client and server in network namespaces built by linerate-lab:
//! across a veth pair, and through a shaped router.

use linerate_lab::{Lab, LabOptions, ShapedWays, Shaping};

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

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_rate_shapes_both_directions_of_a_router() {
    // `linerate lab up --rate` shapes both ways: a shaper on r's egress towards b and one
    // towards a, so sending and receiving cross the same shaped link (the PowerBook ttcp report).
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(20_000_000)),
        rate_ways: ShapedWays::Both,
        ..LabOptions::default()
    };
    let lab = Lab::router(&common::lab_name("k", "bw"), &opts).expect("lab up (needs root)");
    let (host_b, to_b) = lab.shaped_link();
    let (host_a, to_a) = lab.shaped_link_back();
    let (host_b, to_b, host_a, to_a) = (
        host_b.to_string(),
        to_b.to_string(),
        host_a.to_string(),
        to_a.to_string(),
    );
    assert_eq!((host_b.as_str(), host_a.as_str()), ("r", "r"));
    assert_ne!(to_b, to_a);
    let before_b = lab.qdisc_stats(&host_b, &to_b).unwrap();
    let before_a = lab.qdisc_stats(&host_a, &to_a).unwrap();
    assert_eq!(
        (before_b.kind.as_str(), before_a.kind.as_str()),
        ("tbf", "tbf")
    );
    let srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let send = client_json(&lab, "a", &["tcp", &b, "-t", "2"]);
    let recv = client_json(&lab, "a", &["tcp", &b, "-t", "2", "-R"]);
    drop(srv);
    let after_b = lab.qdisc_stats(&host_b, &to_b).unwrap();
    let after_a = lab.qdisc_stats(&host_a, &to_a).unwrap();
    for (rec, way) in [(&send, "a -> b"), (&recv, "b -> a")] {
        let f = &rec["summary"]["flows"][0];
        let bps = f["receiver_bps"].as_f64().unwrap();
        // The shaper holds each direction to its 20 Mbit/s (payload a little less).
        assert!(
            bps < 21e6 && bps > 10e6,
            "{way}: {bps} bit/s through 20 Mbit/s"
        );
    }
    // Witness: each direction's own shaper carried at least that direction's payload, and
    // held it back (overlimits).
    let bytes = |rec: &serde_json::Value| {
        rec["summary"]["flows"][0]["receiver_bytes"]
            .as_u64()
            .unwrap()
    };
    let through_b = after_b.sent_bytes - before_b.sent_bytes;
    let through_a = after_a.sent_bytes - before_a.sent_bytes;
    assert!(
        through_b >= bytes(&send),
        "{through_b} B through {to_b}, {} B received at b",
        bytes(&send)
    );
    assert!(
        through_a >= bytes(&recv),
        "{through_a} B through {to_a}, {} B received at a",
        bytes(&recv)
    );
    assert!(after_b.overlimits > before_b.overlimits, "{after_b:?}");
    assert!(after_a.overlimits > before_a.overlimits, "{after_a:?}");
}

/// `--zerocopy` across a veth pair into another namespace, both ways: every send is
/// accounted for by a completion and the bytes arrive. Whether the kernel really skipped
/// the copy is what this measures, not asserts: the receiving socket is still on this host,
/// and msg_zerocopy.rst says data looped to a local socket is copied (the test prints the
/// counts).
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_zerocopy_completions_across_a_veth_pair() {
    let lab = Lab::pair(&common::lab_name("zc", "z"), &LabOptions::default())
        .expect("lab up (needs root)");
    let srv = serve_in(&lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    for dir in [&[][..], &["-R"][..]] {
        let mut args = vec!["tcp", b.as_str(), "-n", "64M", "--zerocopy", "--no-rx-copy"];
        args.extend_from_slice(dir);
        let rec = client_json(&lab, "a", &args);
        let f = &rec["summary"]["flows"][0];
        assert_eq!(f["receiver_bytes"].as_u64(), Some(64 << 20), "{dir:?} {f}");
        assert_eq!(f["sender_bytes"].as_u64(), Some(64 << 20), "{dir:?} {f}");
        let sender = if dir.is_empty() { "client" } else { "server" };
        let receiver = if dir.is_empty() { "server" } else { "client" };
        let st = &rec[sender]["streams"][0];
        assert_eq!(st["send_mode"], "zerocopy", "{st}");
        assert_eq!(rec[receiver]["streams"][0]["recv_mode"], "trunc");
        let z = &st["zerocopy"];
        let sends = z["sends"].as_u64().unwrap();
        assert_eq!(Some(sends), st["io_calls"].as_u64(), "{z}");
        assert_eq!(z["completed"].as_u64(), Some(sends), "{z}");
        assert_eq!(z["outstanding"].as_u64(), Some(0), "{z}");
        let copied = z["copied"].as_u64().unwrap();
        assert!(copied <= sends, "{z}");
        eprintln!("veth, {sender} sends: {sends} zero-copy sends, {copied} copied by the kernel");
    }
    drop(srv);
}
