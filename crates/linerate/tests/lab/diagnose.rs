//! Diagnoses of real runs in network namespaces (root): a link whose sender's interface is
//! shaped with tbf is `link_bound` from the shaper linerate reads itself; a shaper on a
//! router in the middle is invisible to both ends, so there the `--link-rate` hint is what
//! makes it `link_bound`; a 2 KiB socket buffer is `window_limited`, and UDP into a 4 KiB
//! receive buffer is `receiver_drops`. TCP_INFO's segment counts agree with the
//! namespace's SNMP counters.

use linerate_lab::{Lab, LabOptions, Shaping};
use serde_json::Value;

use crate::common::{self, serve_in};

fn kinds(diagnosis: &Value) -> Vec<String> {
    diagnosis["verdicts"]
        .as_array()
        .expect("verdicts array")
        .iter()
        .map(|v| v["kind"].as_str().expect("kind").to_string())
        .collect()
}

/// Evidence figures of every verdict: finite, not negative, shares at most 100 %.
fn assert_evidence_sane(d: &Value) {
    for v in d["verdicts"].as_array().unwrap() {
        for e in v["evidence"].as_array().unwrap() {
            let x = e["value"].as_f64().expect("a number");
            assert!(x >= 0.0, "{e} in {v:#}");
            match e["unit"].as_str().unwrap() {
                "percent" => assert!(x <= 100.0, "{e} in {v:#}"),
                "ratio" => assert!(x <= 1.0, "{e} in {v:#}"),
                _ => {}
            }
        }
    }
}

// ---- lab: verdicts for real, in network namespaces ----

fn lab_name(tag: &str) -> String {
    common::lab_name("dg", tag)
}

/// Runs the client in `a` against a server in `b` and returns the record's diagnosis.
fn lab_diagnosis(lab: &Lab, args: &[&str]) -> Value {
    lab_record(lab, args)["diagnosis"].clone()
}

/// Runs the client in `a` against a server in `b` and returns the JSON record.
fn lab_record(lab: &Lab, args: &[&str]) -> Value {
    let srv = serve_in(lab, "b");
    let b = lab.addr("b").unwrap().to_string();
    let mut a = vec![env!("CARGO_BIN_EXE_linerate"), args[0], &b];
    a.extend_from_slice(&args[1..]);
    a.push("--json");
    let out = lab.exec("a", &a).expect("run client in namespace");
    drop(srv);
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json record");
    assert!(rec["diagnosis"].is_object(), "no diagnosis: {rec:#}");
    rec
}

fn verdict<'a>(d: &'a Value, kind: &str) -> &'a Value {
    d["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} verdict: {d:#}"))
}

fn evidence(v: &Value, metric: &str) -> f64 {
    v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["metric"] == metric)
        .and_then(|e| e["value"].as_f64())
        .unwrap_or_else(|| panic!("no {metric} evidence: {v:#}"))
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_diagnose_tbf_on_the_senders_interface_is_link_bound_without_a_hint() {
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(50_000_000)),
        ..LabOptions::default()
    };
    let lab = Lab::pair(&lab_name("l"), &opts).expect("lab up (needs root)");
    let shaped = lab.iface("a").unwrap().to_string();
    let rec = lab_record(&lab, &["tcp", "-t", "3", "-O", "1"]);
    // Each end read its own interface's root qdisc: tbf at the client, none at the server.
    let ci = &rec["client"]["interface"];
    assert_eq!(ci["name"], shaped.as_str(), "{ci:#}");
    assert_eq!(ci["root_qdisc"], "tbf", "{ci:#}");
    assert_eq!(ci["shaped_rate_bps"], 50_000_000u64, "{ci:#}");
    let si = &rec["server"]["interface"];
    assert!(si["shaped_rate_bps"].is_null(), "{si:#}");
    let d = &rec["diagnosis"];
    let v = verdict(d, "link_bound");
    assert_eq!(v["flow"], "client_to_server");
    assert_eq!(evidence(v, "link_rate_bps"), 50e6, "{v:#}");
    assert!(evidence(v, "link_utilisation") >= 0.9, "{v:#}");
    let source = format!("tbf on {shaped} at the client");
    assert!(v["message"].as_str().unwrap().contains(&source), "{v:#}");
    assert_eq!(kinds(d)[0], "link_bound", "{d:#}");
    assert!(rec["plan"]["link_rate_bps"].is_null());
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_diagnose_a_shaper_beyond_both_ends_needs_the_link_rate_hint() {
    // a — r — b with tbf on r's egress toward b: neither end's interface shows it.
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(50_000_000)),
        ..LabOptions::default()
    };
    let lab = Lab::router(&lab_name("r"), &opts).expect("lab up (needs root)");
    let rec = lab_record(&lab, &["tcp", "-t", "3", "-O", "1"]);
    for end in ["client", "server"] {
        let i = &rec[end]["interface"];
        assert!(i["shaped_rate_bps"].is_null(), "{end}: {i:#}");
    }
    let d = &rec["diagnosis"];
    assert!(!kinds(d).iter().any(|k| k == "link_bound"), "{d:#}");
    let nj = d["not_judged"].to_string();
    assert!(nj.contains("link bound"), "{d:#}");
    // The same path with the hint.
    let d = lab_diagnosis(&lab, &["tcp", "-t", "3", "-O", "1", "--link-rate", "50M"]);
    let v = verdict(&d, "link_bound");
    assert_eq!(v["flow"], "client_to_server");
    assert!(evidence(v, "link_utilisation") >= 0.9, "{v:#}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("the --link-rate given"),
        "{v:#}"
    );
    assert_eq!(kinds(&d)[0], "link_bound", "{d:#}");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_diagnose_tiny_socket_buffer_is_window_limited() {
    // 2 KiB asked: the kernel grants a 4 KiB SO_RCVBUF (doubled), under 4 segments of the
    // veth's MSS, so the verdict rests on granted sizes, not on timing. (With 4 KiB asked,
    // 8 KiB granted, the verdict rests on TCP_INFO's rwnd-limited share alone, which on a
    // 30 us path swings round the threshold: seen 0.42 here, lower on a faster machine.)
    let lab = Lab::pair(&lab_name("w"), &LabOptions::default()).expect("lab up (needs root)");
    let rec = lab_record(&lab, &["tcp", "-t", "2", "-w", "2K"]);
    let d = &rec["diagnosis"];
    let v = verdict(d, "window_limited");
    assert_eq!(v["flow"], "client_to_server");
    // The evidence is the record's own figures: the smaller granted buffer, the path's MSS.
    let granted = rec["server"]["streams"][0]["rcvbuf_bytes"]
        .as_f64()
        .expect("server's granted SO_RCVBUF");
    let mss = evidence(v, "path_mss_bytes");
    assert!(evidence(v, "limiting_buffer_bytes") <= granted, "{v:#}");
    assert!(evidence(v, "limiting_buffer_bytes") < 4.0 * mss, "{v:#}");
    assert_evidence_sane(d);
    let k = kinds(d);
    assert!(
        !k.iter().any(|x| x == "link_bound" || x == "receiver_drops"),
        "{d:#}"
    );
}

/// TCP_INFO's counts against the client namespace's own SNMP counters (nothing else runs
/// there): with 1 % of the packets towards `b` dropped, the data connection's
/// `total_retrans` is the namespace's `Tcp.RetransSegs` within 3 % (the control connection's
/// few packets may add a retransmission or two), and its `segs_out` is the namespace's
/// `Tcp.OutSegs` within 5 %: TCP_INFO covers the connection's life, the host counters the
/// measured window (its edges miss the handshake, the few milliseconds before the meter's
/// baseline and the drain after the senders stop; seen: 1.1 %). Both count a GSO packet as
/// its segments.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_tcp_info_segment_counts_agree_with_the_namespace_snmp() {
    let opts = LabOptions {
        loss: Some(0.01),
        ..LabOptions::default()
    };
    let lab = Lab::pair(&lab_name("s"), &opts).expect("lab up (needs root)");
    let rec = lab_record(&lab, &["tcp", "-t", "2"]);
    let info = &rec["client"]["streams"][0]["tcp_info"];
    let snmp = &rec["client"]["host_counters"]["snmp"];
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k}: {v:#}"));
    let (retrans, ns_retrans) = (n(info, "total_retrans"), n(snmp, "Tcp.RetransSegs"));
    assert!(
        retrans >= 10,
        "1 % loss should cost retransmissions: {info:#}"
    );
    // The window lies inside the connection's life: the namespace can count more only by
    // the control connection's few; it counts fewer by what the window's edges leave out
    // (seen: 0.8 % of 16,483 with bbr retransmitting through the drain).
    assert!(
        ns_retrans <= retrans + 5 && retrans - ns_retrans.min(retrans) <= retrans * 3 / 100 + 5,
        "TCP_INFO total_retrans {retrans}, namespace Tcp.RetransSegs {ns_retrans}"
    );
    let (segs, ns_segs) = (n(info, "segs_out"), n(snmp, "Tcp.OutSegs"));
    assert!(
        ns_segs.abs_diff(segs) as f64 <= 0.05 * segs as f64 + 100.0,
        "TCP_INFO segs_out {segs}, namespace Tcp.OutSegs {ns_segs}"
    );
    let data = n(info, "data_segs_out");
    assert!(data <= segs && retrans <= data, "{info:#}");
    assert_evidence_sane(&rec["diagnosis"]);
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_diagnose_udp_into_a_small_receive_buffer_is_receiver_drops() {
    let lab = Lab::pair(&lab_name("u"), &LabOptions::default()).expect("lab up (needs root)");
    let d = lab_diagnosis(
        &lab,
        &["udp", "-t", "2", "-l", "1400", "--remote-rcvbuf", "4K"],
    );
    let v = verdict(&d, "receiver_drops");
    assert_eq!(
        (v["side"].as_str(), v["flow"].as_str()),
        (Some("server"), Some("client_to_server")),
        "{v:#}"
    );
    let errors = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["metric"] == "udp_rcvbuf_errors")
        .unwrap();
    assert!(errors["value"].as_f64().unwrap() > 0.0);
    assert!(!kinds(&d).iter().any(|x| x == "link_bound"), "{d:#}");
}
