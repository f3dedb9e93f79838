//! Diagnoses of real runs and `linerate doctor` against a real server, on loopback.
//!
//! * A plain TCP run gets a diagnosis that invents no bottleneck (no link, window or
//!   receiver verdict; CPU or tester verdicts are allowed: loopback tests load the CPUs),
//!   and doctor reports both ends' findings.
//! * `linerate rr --csv` ends with the verdict columns; `linerate doctor --json` validates
//!   against the committed `docs/json-schema/doctor-v1.json`.
//!
//! The verdicts of shaped and lossy paths are checked in network namespaces in
//! `tests/lab/diagnose.rs`.

use std::time::Duration;

use linerate_wire::control::{Direction, Transport};
use serde_json::Value;

use crate::common::{bin, plan, run, spec, TestServer};

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
    // The verdict's columns, then (added later, so at the end) the --dut ones.
    assert!(
        header.contains(",interrupted,verdict,verdict_message,dut_"),
        "{header}"
    );
    assert!(header.ends_with(",dut_ingress_drops"), "{header}");
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
    let (report, rtt) = linerate::app::doctor::remote(
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
    assert!(report
        .host
        .as_ref()
        .is_some_and(|h| h.cpu_count.is_some_and(|n| n >= 1)));
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
