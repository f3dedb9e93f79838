//! The binary: exit codes, one-line errors, output formats, schema.

use std::process::Stdio;

use crate::common::{bin, run_against, run_json, run_ok, run_usage_error, TestServer};

#[test]
fn bad_input_exits_2_with_one_line() {
    for args in [
        &["tcp", "127.0.0.1", "-l", "12Q"][..],
        &["udp", "127.0.0.1", "-l", "4"],
        &["tcp", "127.0.0.1", "-t", "1", "-n", "1M"],
        &["tcp", "127.0.0.1", "--format", "xml"],
        &["frobnicate"],
    ] {
        let err = run_usage_error(args);
        assert!(!err.trim().is_empty(), "{args:?}");
    }
    let err = run_usage_error(&["udp", "127.0.0.1", "-l", "4"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("-l 4"), "{err}");
}

#[test]
fn unreachable_server_names_host_port_and_what_to_check() {
    // A port nobody listens on: bind, learn the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = run_usage_error(&["tcp", "127.0.0.1", "-p", &port.to_string(), "-t", "1"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("linerate serve"), "{err}");
}

#[test]
fn help_shows_examples() {
    for cmd in ["serve", "tcp", "udp", "demo"] {
        let h = run_ok(&[cmd, "--help"]);
        assert!(h.contains("Examples:"), "{cmd} --help has no examples");
    }
}

#[test]
fn netperf_format_keeps_the_classic_table() {
    let srv = TestServer::start();
    let out = run_against(
        &srv,
        "tcp",
        &["-t", "0.5", "-l", "64K", "--format", "netperf"],
    );
    assert!(out.contains("TCP STREAM TEST"), "{out}");
    assert!(out.contains("Service Demand"), "{out}");
    // The data row: recv socket, send socket, message size, elapsed, throughput, 2 utils, 2 SDs.
    let row = out.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols.len(), 9, "{row}");
    assert_eq!(cols[2], "65536");
    assert!(cols[4].parse::<f64>().unwrap() > 0.0);
}

#[test]
fn ttcp_format_prints_transmitter_and_receiver_lines() {
    let srv = TestServer::start();
    let out = run_against(&srv, "tcp", &["-n", "16M", "-l", "8K", "--format", "ttcp"]);
    assert!(out.contains("ttcp-t: buflen=8192, nbuf=2048"), "{out}");
    assert!(out.contains("ttcp-t: 16777216 bytes in"), "{out}");
    assert!(out.contains("ttcp-t: 2048 I/O calls"), "{out}");
    assert!(out.contains("ttcp-r: 16777216 bytes in"), "{out}");
}

#[test]
fn json_output_validates_against_the_committed_schema() {
    let srv = TestServer::start();
    let rec = run_json(&srv, "udp", &["-t", "0.5", "-b", "10M", "--json"]);
    let schema_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-schema/run-v1.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    if let Err(errors) = compiled.validate(&rec) {
        let msgs: Vec<String> = errors
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        panic!("record does not match the schema: {msgs:?}");
    }
    assert_eq!(rec["schema_version"], 1);
    assert!(rec["summary"]["flows"][0]["receiver_pps"].as_f64().unwrap() > 0.0);
}

#[test]
fn json_stream_emits_start_intervals_end() {
    let srv = TestServer::start();
    let out = run_against(&srv, "tcp", &["-t", "0.6", "-i", "0.2", "--json-stream"]);
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "start");
    assert_eq!(events.last().unwrap()["event"], "end");
    assert!(events.iter().filter(|e| e["event"] == "interval").count() >= 2);
}

#[test]
fn csv_has_header_and_a_row_per_direction() {
    let srv = TestServer::start();
    let out = run_against(&srv, "tcp", &["-t", "0.5", "--bidir", "--csv"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].contains("receiver_bps"));
}

#[test]
fn demo_runs_its_suite() {
    let out = bin()
        .args(["demo", "-t", "0.5"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in ["TCP send", "TCP receive", "UDP 64 B"] {
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn serve_one_off_exits_after_one_test() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = port.to_string();
    let mut server = bin()
        .args(["serve", "--bind", "127.0.0.1", "-p", &p, "--one-off"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ok = false;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let out = bin()
            .args(["tcp", "127.0.0.1", "-p", &p, "-t", "0.3"])
            .output()
            .unwrap();
        if out.status.success() {
            ok = true;
            break;
        }
    }
    assert!(ok, "client never got through");
    let status = server.wait().unwrap();
    assert!(status.success());
    let mut log = String::new();
    use std::io::Read;
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    // One log line per test.
    assert!(log.lines().any(|l| l.contains("tcp send")), "{log}");
}

#[test]
fn ctrl_c_stops_the_test_and_still_reports() {
    let srv = TestServer::start();
    let port = srv.addr.port().to_string();
    let child = bin()
        .args(["tcp", "127.0.0.1", "-p", &port, "-t", "30", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["interrupted"], true);
    assert!(
        rec["summary"]["flows"][0]["receiver_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    let measured = rec["client"]["totals"]["duration_ns"].as_u64().unwrap();
    assert!(measured < 10_000_000_000, "stopped early: {measured} ns");
}

/// Exit code 1: the run completed, its record is printed, and a criterion the user gave
/// failed. UDP into a 4 KiB server receive buffer loses datagrams (each GRO super-packet is
/// bigger than the buffer; without GRO two datagrams fill it), so `--max-loss 0` fails and
/// `--max-loss 100` passes; the record's own loss figure is the witness.
#[test]
fn max_loss_exceeded_exits_1_with_the_record() {
    let srv = TestServer::start();
    let port = srv.addr.port().to_string();
    let run = |max: &str| {
        bin()
            .args(["udp", "127.0.0.1", "-p", &port, "-t", "0.5", "-l", "1400"])
            .args(["--remote-rcvbuf", "4K", "--max-loss", max, "--json"])
            .output()
            .unwrap()
    };
    let out = run("0");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the record");
    let loss = rec["summary"]["flows"][0]["loss_percent"].as_f64().unwrap();
    assert!(loss > 0.0, "{loss}");
    assert!(
        err.contains("linerate: failed: client->server:") && err.contains("--max-loss 0%"),
        "{err}"
    );
    let out = run("100");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A criterion that does not apply is bad input.
    let err = run_usage_error(&["tcp", "127.0.0.1", "--max-loss", "1"]);
    assert!(err.contains("--max-loss applies to UDP"), "{err}");
    let err = run_usage_error(&["rr", "127.0.0.1", "--max-loss", "1"]);
    assert!(err.contains("--udp"), "{err}");
}

/// `linerate schema NAME` prints exactly what `docs/json-schema/NAME-v1.json` holds, for
/// every committed schema.
#[cfg(feature = "schema")]
#[test]
fn schema_prints_every_committed_schema() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json-schema");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let name = file.strip_suffix("-v1.json").expect("NAME-v1.json");
        // The history, check and change-point records are the results database's: not in a
        // build without it.
        if cfg!(not(feature = "store")) && matches!(name, "history" | "check" | "changes") {
            continue;
        }
        // The fleet record is the fleet coordinator's: not in a build without it.
        if cfg!(not(feature = "fleet")) && name == "fleet" {
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            run_ok(&["schema", name]),
            committed,
            "linerate schema {name}"
        );
        n += 1;
    }
    assert_eq!(
        n,
        9 + 3 * usize::from(cfg!(feature = "store")) + usize::from(cfg!(feature = "fleet")),
        "run, event, trials, rfc2544, analyze, doctor, sweep, campaign, multicast; history, check, changes; fleet"
    );
    assert_eq!(run_ok(&["schema"]), run_ok(&["schema", "run"]));
    let err = run_usage_error(&["schema", "nosuch"]);
    assert!(err.contains("doctor"), "{err}");
}
