//! Diagnoses of real runs and `linerate doctor` against a real server.
//!
//! * On loopback: a plain TCP run gets a diagnosis that invents no bottleneck (no link,
//!   window or receiver verdict; CPU or tester verdicts are allowed: loopback tests load
//!   the CPUs), and doctor reports both ends' findings.
//! * `linerate rr --csv` ends with the verdict columns; `linerate doctor --json` validates
//!   against the committed `docs/json-schema/doctor-v1.json`.
//! * In network namespaces (root, like every lab test): a link whose sender's interface is
//!   shaped with tbf is `link_bound` from the shaper linerate reads itself; a shaper on a
//!   router in the middle is invisible to both ends, so there the `--link-rate` hint is what
//!   makes it `link_bound`; a 4 KiB socket buffer is `window_limited`, and UDP into a 4 KiB
//!   receive buffer is `receiver_drops`.

use std::time::Duration;

use linerate_lab::{Lab, LabOptions, Shaping};
use linerate_wire::control::{Direction, Transport};
use serde_json::Value;

use crate::common::{self, bin, plan, run, serve_in, spec, TestServer};

fn kinds(diagnosis: &Value) -> Vec<String> {
    diagnosis["verdicts"]
        .as_array()
        .expect("verdicts array")
        .iter()
        .map(|v| v["kind"].as_str().expect("kind").to_string())
        .collect()
}

#[test]
fn plain_loopback_tcp_invents_no_bottleneck() {
    let server = TestServer::start();
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.duration_ms = Some(1000);
    let rec = run(&plan(server.addr, s));
    let d = rec
        .diagnosis
        .as_ref()
        .expect("every record has a diagnosis");
    let json = serde_json::to_value(d).unwrap();
    let k = kinds(&json);
    assert!(!k.is_empty());
    for invented in [
        "link_bound",
        "window_limited",
        "window_oversized",
        "receiver_drops",
    ] {
        assert!(
            !k.iter().any(|x| x == invented),
            "loopback got {invented}: {json:#}"
        );
    }
    for v in &d.verdicts {
        assert!(!v.message.is_empty() && !v.suggestion.is_empty(), "{v:?}");
        assert!(
            v.kind == linerate::diagnose::VerdictKind::None || !v.evidence.is_empty(),
            "{v:?}"
        );
    }
    assert!(!d.summary.is_empty());
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

/// The case from the field: socket buffers below one MSS (4 KiB requested, 8 KiB granted,
/// loopback's MSS about 64 KiB). The transfer crawls on timers; the diagnosis names the
/// window, with the numbers, and does not blame loss. TCP_INFO's segment counts agree with
/// the bytes the stream carried and with its own retransmissions.
#[test]
fn loopback_tcp_with_buffers_below_one_mss_is_window_limited_not_retransmission_bound() {
    let server = TestServer::start();
    let port = server.addr.port().to_string();
    let out = bin()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "2",
            "-w",
            "4K",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &rec["diagnosis"];
    let k = kinds(d);
    assert!(!k.iter().any(|x| x == "retransmission_bound"), "{d:#}");
    let v = verdict(d, "window_limited");
    assert_eq!(v["flow"], "client_to_server", "{v:#}");
    let granted = evidence(v, "limiting_buffer_bytes");
    let mss = evidence(v, "path_mss_bytes");
    assert!(granted <= 16_384.0 && mss >= 16_384.0, "{v:#}");
    assert!(evidence(v, "buffer_in_segments") < 4.0, "{v:#}");
    assert_eq!(evidence(v, "requested_buffer_bytes"), 4096.0, "{v:#}");
    let fix = v["suggestion"].as_str().unwrap();
    assert!(fix.contains("at least") && fix.contains("minimum"), "{fix}");
    assert_evidence_sane(d);
    // TCP_INFO's counts: a data segment carries at most one MSS, so the segments sent
    // cover the bytes; retransmissions are some of those segments.
    let st = &rec["client"]["streams"][0];
    let info = &st["tcp_info"];
    let data = info["data_segs_out"]
        .as_u64()
        .expect("data_segs_out (Linux 4.6+)");
    let segs = info["segs_out"].as_u64().expect("segs_out (Linux 4.2+)");
    let retrans = info["total_retrans"].as_u64().unwrap();
    let path_mss = info["snd_mss"]
        .as_u64()
        .unwrap()
        .max(info["advmss_bytes"].as_u64().unwrap_or(0));
    assert!(segs >= data && data >= retrans, "{info:#}");
    assert!(
        data * path_mss >= st["bytes"].as_u64().unwrap(),
        "{data} segments of at most {path_mss} B cannot carry {} B: {st:#}",
        st["bytes"]
    );
}

#[test]
fn diagnosis_in_every_output_format() {
    let server = TestServer::start();
    let port = server.addr.port().to_string();
    let args = ["tcp", "127.0.0.1", "-p", &port, "-t", "0.5"];
    let out = |extra: &[&str]| {
        let o = bin().args(args).args(extra).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (table, _) = out(&[]);
    assert!(table.contains("\ndiagnosis:\n  "), "{table}");
    let (json, _) = out(&["--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(!kinds(&v["diagnosis"]).is_empty());
    let (csv, _) = out(&["--csv"]);
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(",interrupted,verdict,verdict_message"),
        "{header}"
    );
    for f in ["netperf", "ttcp"] {
        let (stdout, stderr) = out(&["--format", f]);
        assert!(
            !stdout.contains("linerate:"),
            "{f} stdout must stay classic: {stdout}"
        );
        assert!(stderr.contains("# linerate: diagnosis: "), "{f}: {stderr}");
    }
}

#[test]
fn doctor_reports_both_ends_of_a_loopback_server() {
    let server = TestServer::start();
    let o = bin()
        .args([
            "doctor",
            "127.0.0.1",
            "-p",
            &server.addr.port().to_string(),
            "-w",
            "1M",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    for end in ["local", "server"] {
        let r = &rec[end];
        assert_eq!(r["interface"], "lo", "{end}: {r:#}");
        let checks: Vec<&str> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["check"].as_str().unwrap())
            .collect();
        for c in [
            "net.core.rmem_max",
            "net.ipv4.tcp_rmem",
            "net.ipv4.tcp_congestion_control",
            "cpu.governor",
            "interface",
            "path.mtu",
        ] {
            assert!(checks.contains(&c), "{end} lacks {c}: {checks:?}");
        }
        // Every warning comes with a command.
        for f in r["findings"].as_array().unwrap() {
            if f["severity"] == "warn" {
                assert!(f["fix"].as_str().is_some_and(|x| !x.is_empty()), "{f}");
            }
        }
    }
    assert!(rec["rtt_us"].as_u64().is_some_and(|r| r > 0), "{rec:#}");
    // The table shows both sections and changes nothing.
    let o = bin()
        .args(["doctor", "127.0.0.1", "-p", &server.addr.port().to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("this host: ") && text.contains("\nserver 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("doctor changes nothing"));
}

#[test]
fn doctor_in_process_and_bad_host() {
    let server = TestServer::start();
    let mut warnings = Vec::new();
    let (report, rtt) = linerate::doctor::remote(
        server.addr,
        None,
        Duration::from_secs(3),
        None,
        &mut warnings,
    )
    .unwrap();
    let report = report.expect("the server offers doctor");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(rtt.is_some());
    assert!(report.host.as_ref().is_some_and(|h| h.cpu_count >= 1));
    // Nobody listening: one line, exit 2.
    let o = bin()
        .args(["doctor", "127.0.0.1", "-p", "1", "--connect-timeout", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot reach a linerate server"));
}

#[test]
fn rr_csv_ends_with_the_verdict_columns() {
    let server = TestServer::start();
    let port = server.addr.port().to_string();
    let o = bin()
        .args(["rr", "127.0.0.1", "-p", &port, "-t", "0.3", "--csv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let head: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert!(
        head.join(",")
            .ends_with(",interrupted,verdict,verdict_message"),
        "{text}"
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{text}");
    let col = |n: &str| &rows[0][head.iter().position(|h| h == n).unwrap()];
    assert_eq!(col("test"), "TCP_RR");
    // Loopback RR: some verdict kind (often `none` or a CPU verdict), never a link.
    let verdict = col("verdict");
    assert!(
        !verdict.is_empty() && verdict != "link_bound",
        "verdict {verdict:?}: {text}"
    );
    assert!(!col("verdict_message").is_empty(), "{text}");
}

#[test]
fn rr_netperf_format_keeps_stdout_classic_and_puts_the_diagnosis_on_stderr() {
    let server = TestServer::start();
    let port = server.addr.port().to_string();
    let o = bin()
        .args([
            "rr",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "0.3",
            "--format",
            "netperf",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(stdout.contains("TCP REQUEST/RESPONSE"), "{stdout}");
    assert!(!stdout.contains("linerate:"), "{stdout}");
    assert!(stderr.contains("# linerate: diagnosis: "), "{stderr}");
}

#[test]
fn doctor_json_validates_against_the_committed_schema() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-schema/doctor-v1.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).unwrap();
    let server = TestServer::start();
    let port = server.addr.port().to_string();
    for args in [
        vec!["doctor", "127.0.0.1", "-p", &port, "--json"],
        vec!["doctor", "--json"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
        let errors: Vec<String> = match schema.validate(&rec) {
            Ok(()) => Vec::new(),
            Err(e) => e.map(|e| format!("{e} at {}", e.instance_path)).collect(),
        };
        assert!(errors.is_empty(), "{args:?}: {errors:#?}\n{rec:#}");
        assert!(rec["local"]["findings"]
            .as_array()
            .is_some_and(|f| !f.is_empty()));
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
fn lab_diagnose_tiny_socket_buffer_is_window_limited() {
    let lab = Lab::pair(&lab_name("w"), &LabOptions::default()).expect("lab up (needs root)");
    let d = lab_diagnosis(&lab, &["tcp", "-t", "2", "-w", "4K"]);
    let v = verdict(&d, "window_limited");
    assert_eq!(v["flow"], "client_to_server");
    let k = kinds(&d);
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
