//! `--latency` on stream tests against a real server on loopback: the probes' idle baseline
//! and loaded figures, what they cost, the responsiveness recomputed from the record's own
//! histograms, and probes a server refuses leaving their figures absent with a warning.

use serde_json::Value;

use crate::common::{run_against, run_json, run_usage_error, TestServer};

fn section(rec: &Value) -> &Value {
    let l = &rec["latency_under_load"];
    assert!(l.is_object(), "no latency_under_load: {rec:#}");
    l
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k}: {v:#}"))
}

/// The mean of the smallest ⌈95 %⌉ of a stored histogram's samples, ms.
fn trimmed_mean_ms(summary: &Value) -> f64 {
    let buckets = summary["histogram"].as_array().expect("histogram");
    let total: u64 = buckets.iter().map(|b| u(b, "count")).sum();
    let keep = ((0.95 * total as f64).ceil() as u64).max(1);
    let (mut left, mut sum) = (keep, 0.0);
    for b in buckets {
        let take = u(b, "count").min(left);
        sum += take as f64 * u(b, "value_ns") as f64;
        left -= take;
    }
    sum / keep as f64 / 1e6
}

#[test]
fn tcp_latency_reports_idle_and_loaded_probes_and_rpm() {
    let srv = TestServer::start();
    // A paced load keeps the host from saturating; 2 s of it, 0.5 s of warm-up left out.
    let rec = run_json(
        &srv,
        "tcp",
        &["-t", "2", "-O", "0.5", "-b", "200M", "--latency", "--json"],
    );
    let l = section(&rec);
    assert_eq!(u(l, "probe_rate_tps"), 10);
    assert_eq!(u(l, "idle_duration_ns"), 2_000_000_000);
    // 10 a second for the 2 s baseline: 20 slots (a slot or so at the edges).
    for p in ["idle_tcp", "idle_udp"] {
        let n = u(&l[p], "count");
        assert!(
            (17..=22).contains(&n),
            "{p}: {n} transactions in 2 s at 10/s"
        );
    }
    // Under load the probes run from the load's start to its end, their first 0.5 s left
    // out: about 1.5 s of slots, plus the load's set-up and drain.
    for p in ["loaded_tcp", "loaded_udp"] {
        let n = u(&l[p], "count");
        assert!((10..=30).contains(&n), "{p}: {n} transactions");
    }
    assert_eq!(u(l, "loaded_udp_lost"), 0, "{l:#}");
    // What they cost: well under 1 % of what the load moved.
    let load_bytes = u(&rec["summary"]["flows"][0], "sender_bytes");
    let probe_bytes = u(l, "loaded_probe_bytes");
    assert!(
        probe_bytes > 0 && probe_bytes * 100 < load_bytes,
        "{probe_bytes} of {load_bytes}"
    );
    // The loaded flows' smoothed RTT is the sender's measured intervals' TCP_INFO rtt.
    let ivs: Vec<&Value> = rec["client"]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|iv| iv["omitted"] != true && iv["rtt_us"].is_u64())
        .collect();
    assert_eq!(u(l, "loaded_srtt_samples"), ivs.len() as u64);
    // The increase is the loaded median over the idle one, from the same summaries.
    let (idle, loaded) = (u(&l["idle_tcp"], "p50_ns"), u(&l["loaded_tcp"], "p50_ns"));
    let ratio = l["increase_ratio"].as_f64().unwrap();
    assert!((ratio - loaded as f64 / idle as f64).abs() < 1e-9, "{l:#}");
    assert_eq!(l["increase_probe"], "tcp");
    assert_eq!(
        l["added_delay_ns"].as_i64(),
        Some(loaded as i64 - idle as i64)
    );
    // RPM recomputed from the record's histogram and srtt samples (the draft's formula).
    let r = &l["responsiveness"];
    let foreign = 60_000.0 / trimmed_mean_ms(&l["loaded_tcp"]);
    assert!(
        (r["foreign_rpm"].as_f64().unwrap() - foreign).abs() < 1e-6 * foreign,
        "{r:#}"
    );
    let self_rpm = r["self_rpm"].as_f64().expect("a TCP load has a self part");
    let rpm = r["rpm"].as_f64().unwrap();
    assert!(
        (rpm - (foreign + self_rpm) / 2.0).abs() < 1e-6 * rpm,
        "{r:#}"
    );
    assert_eq!(r["draft"], "draft-ietf-ippm-responsiveness-09");
    let band = match rpm {
        x if x < 300.0 => "poor",
        x if x < 1000.0 => "fair",
        x if x < 6000.0 => "good",
        _ => "excellent",
    };
    assert_eq!(r["rating"], band);
    // The table says the same in words.
    let text = run_against(&srv, "tcp", &["-t", "1", "-b", "100M", "--latency"]);
    assert!(
        text.contains("latency under load (10 probes a second each"),
        "{text}"
    );
    assert!(text.contains("TCP_RR") && text.contains("UDP_RR"), "{text}");
    assert!(text.contains("RPM ("), "{text}");
}

#[test]
fn udp_latency_has_no_self_part_and_repeat_is_refused() {
    let srv = TestServer::start();
    let rec = run_json(
        &srv,
        "udp",
        &["-t", "1", "-b", "50M", "--latency", "--json"],
    );
    let l = section(&rec);
    assert!(u(&l["loaded_udp"], "count") > 0, "{l:#}");
    assert!(
        l["loaded_srtt_samples"].is_null(),
        "a UDP load has no TCP_INFO: {l:#}"
    );
    let r = &l["responsiveness"];
    assert!(r["self_rpm"].is_null(), "{r:#}");
    assert_eq!(r["rpm"], r["foreign_rpm"]);
    let err = run_usage_error(&["tcp", "127.0.0.1", "--latency", "--repeat", "2"]);
    assert!(
        err.contains("--latency") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn probes_the_server_refuses_are_absent_with_a_warning() {
    // One test at a time: the two idle probes compete for the slot, and the loaded probes
    // find it taken by the load. The load itself runs.
    let srv = TestServer::with(|c| c.max_tests = 1);
    let rec = run_json(
        &srv,
        "tcp",
        &["-t", "1", "-b", "100M", "--latency", "--json"],
    );
    assert!(u(&rec["summary"]["flows"][0], "receiver_bytes") > 0);
    let l = section(&rec);
    assert!(
        l["loaded_tcp"].is_null() && l["loaded_udp"].is_null(),
        "{l:#}"
    );
    assert!(
        l["responsiveness"].is_null(),
        "no loaded probe, no RPM: {l:#}"
    );
    let warnings = rec["warnings"].to_string();
    assert!(
        warnings.contains("--latency: the loaded probe failed"),
        "{warnings}"
    );
}
