//! `--profile` between a real client and server on 127.0.0.1: both ends' profiles (or, where
//! this host does not allow profiling, the one-line warning that says what to change and no
//! profile), a server that does not allow profiles, the RR engine, the CLI's checks and the
//! folded stacks written by `--profile-out`.

use linerate::model::RunRecord;
use linerate_wire::control::{Direction, Transport};
use linerate_wire::profile::{Category, ProfileReport, ProfileSpec};
use linerate_wire::report::SideReport;

use crate::common::{plan, run, spec, TestServer};
#[cfg(feature = "chart")]
use crate::common::{run_against, run_json, run_usage_error};

/// Whether this host lets linerate sample every CPU and read kernel symbols (root or
/// CAP_PERFMON, kptr_restrict): the same sampler the engines use, asked directly.
fn profiling_allowed() -> bool {
    let ok = linerate::sys::perf::Sampler::start(linerate::sys::perf::SamplerConfig {
        frequency_hz: 99,
        callchains: false,
    })
    .map(|s| drop(s.stop()))
    .is_ok();
    ok && linerate::sys::kallsyms::Kallsyms::read().is_ok()
}

/// One end's profile: present, consistent and busy where profiling is allowed; else absent
/// with the warning that says what to change.
fn check_end(side: &SideReport, allowed: bool) -> Option<&ProfileReport> {
    if !allowed {
        assert!(side.profile.is_none());
        assert!(
            side.warnings
                .iter()
                .any(|w| w.starts_with("--profile: no profile of this end")
                    && (w.contains("perf_event_paranoid") || w.contains("kptr_restrict"))),
            "{:?}",
            side.warnings
        );
        return None;
    }
    let p = side.profile.as_ref().expect("a profile");
    assert_eq!(p.check(), Ok(()));
    assert_eq!(p.event, "cpu-clock");
    assert!(p.samples > 0 && p.busy_samples() > 0, "{p:?}");
    // Shares of the busy samples: they add up to 100 (each is rounded nowhere).
    let total: f64 = p.categories.iter().map(|c| c.busy_percent).sum();
    assert!((total - 100.0).abs() < 1e-6, "{total}");
    let n: u64 = p.categories.iter().map(|c| c.samples).sum();
    assert_eq!(n, p.busy_samples());
    assert_eq!(p.kernel_samples + p.user_samples, p.busy_samples());
    // Every CPU of the host, each with its samples adding up to the whole.
    assert_eq!(p.per_cpu.iter().map(|c| c.samples).sum::<u64>(), p.samples);
    // The window is the test's measured window: about the 0.6 s of the test at 99 Hz per
    // CPU, never the whole session (connect, drain).
    let cpus = p.per_cpu.len() as f64;
    let expected = 99.0 * cpus * p.duration_ns as f64 / 1e9;
    assert!(
        (p.samples as f64) <= expected * 1.2 + 5.0,
        "{} samples, expected about {expected}",
        p.samples
    );
    assert!(
        p.duration_ns > 400_000_000 && p.duration_ns < 2_000_000_000,
        "{}",
        p.duration_ns
    );
    // A loopback TCP test spends kernel time on data, and linerate's threads ran.
    assert!(p.kernel_samples > 0);
    // Both ends run in this test process, whose name the profile lists with its samples.
    let me = std::fs::read_to_string("/proc/self/comm").unwrap();
    assert!(
        p.processes
            .iter()
            .any(|s| s.comm == me.trim() && s.samples > 0),
        "{:?}",
        p.processes
    );
    Some(p)
}

fn profiled(srv: &TestServer, transport: Transport) -> RunRecord {
    let mut s = spec(transport, Direction::Send);
    s.profile = Some(ProfileSpec {
        frequency_hz: 99,
        callchains: true,
    });
    run(&plan(srv.addr, s))
}

#[test]
fn both_ends_profile_a_tcp_stream_test_or_say_why_not() {
    let allowed = profiling_allowed();
    let srv = TestServer::with(|c| c.allow_profile = true);
    let rec = profiled(&srv, Transport::Tcp);
    assert!(rec.failure.is_none(), "{:?}", rec.failure);
    let server = rec.server.as_ref().expect("server report");
    let c = check_end(&rec.client, allowed);
    let s = check_end(server, allowed);
    if let (Some(c), Some(_)) = (c, s) {
        // Call chains: folded stacks that add up to the busy samples.
        let folded: u64 =
            c.folded.iter().map(|f| f.samples).sum::<u64>() + c.folded_left_out_samples;
        assert_eq!(folded, c.busy_samples());
        assert!(c
            .folded
            .iter()
            .all(|f| !f.stack.is_empty() && f.stack.contains(';')));
    }
    // The profile is in the JSON record.
    let json = serde_json::to_value(&rec).unwrap();
    assert_eq!(json["client"]["profile"].is_object(), allowed);
}

#[test]
fn a_server_that_does_not_allow_profiles_says_so_and_the_client_still_profiles() {
    let allowed = profiling_allowed();
    let srv = TestServer::start();
    let rec = profiled(&srv, Transport::Udp);
    let server = rec.server.as_ref().expect("server report");
    assert!(server.profile.is_none());
    assert!(
        server
            .warnings
            .iter()
            .any(|w| w.contains("linerate serve --allow-profile")),
        "{:?}",
        server.warnings
    );
    check_end(&rec.client, allowed);
}

#[test]
fn an_rr_test_is_profiled_at_both_ends() {
    let allowed = profiling_allowed();
    let srv = TestServer::with(|c| c.allow_profile = true);
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.write_size = 1;
    s.rr = Some(linerate_wire::control::RrSpec {
        request_bytes: 1,
        response_bytes: 1,
        burst: 1,
        connect_per_transaction: false,
        udp: false,
        timeout_ms: 0,
        target_tps: None,
        bounceback: None,
    });
    s.profile = Some(ProfileSpec {
        frequency_hz: 99,
        callchains: false,
    });
    let rec = run(&plan(srv.addr, s));
    assert!(rec.rr.is_some());
    let c = check_end(&rec.client, allowed);
    check_end(rec.server.as_ref().expect("server report"), allowed);
    if let Some(c) = c {
        assert!(c.folded.is_empty(), "no stacks without call chains");
        // Every transaction is a system call pair: the kernel's share is not nothing.
        assert!(c.category_percent(Category::UserSpace) < 100.0);
    }
}

#[test]
#[cfg(feature = "chart")]
fn the_cli_prints_profiles_and_writes_folded_stacks() {
    let allowed = profiling_allowed();
    let srv = TestServer::with(|c| c.allow_profile = true);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("stacks");
    let out = run_against(
        &srv,
        "tcp",
        &[
            "-t",
            "0.5",
            "--profile",
            "--profile-hz",
            "199",
            "--profile-callchains",
            "--profile-out",
            out_dir.to_str().unwrap(),
        ],
    );
    if allowed {
        assert!(
            out.contains("profile of the client: cpu-clock at 199 Hz"),
            "{out}"
        );
        assert!(
            out.contains("profile of the server: cpu-clock at 199 Hz"),
            "{out}"
        );
        assert!(out.contains("top functions:"), "{out}");
        for end in ["client", "server"] {
            let text = std::fs::read_to_string(out_dir.join(format!("{end}.folded"))).unwrap();
            // `stack count` per line.
            for line in text.lines() {
                let (stack, n) = line.rsplit_once(' ').expect("stack count");
                assert!(!stack.is_empty() && n.parse::<u64>().unwrap() > 0, "{line}");
            }
            // The flame graph beside them draws the same samples.
            assert!(crate::common::check_flame_graph(&out_dir, end) > 0);
        }
    } else {
        assert!(!out.contains("profile of the client"), "{out}");
    }
    let err = run_usage_error(&["tcp", "127.0.0.1", "--profile", "--profile-hz", "0"]);
    assert!(err.contains("--profile-hz 0: give 1 to 10000"), "{err}");
    let err = run_usage_error(&["tcp", "127.0.0.1", "--profile-hz", "99"]);
    assert!(err.contains("--profile"), "{err}");
    let err = run_usage_error(&["rr", "127.0.0.1", "--profile", "--profile-out", "x"]);
    assert!(err.contains("--profile-callchains"), "{err}");
}

/// A short profiled rfc2544 throughput search, 20 Mbit/s of 1024-byte frames, with a
/// confirmation of `confirm_s` seconds (0: none).
#[cfg(feature = "chart")]
fn profiled_rfc2544(confirm_s: &str) -> Vec<&str> {
    vec![
        "--line-rate",
        "20M",
        "--frame-sizes",
        "1024",
        "--test",
        "throughput",
        "--trial-time",
        "0.3",
        "--confirm-time",
        confirm_s,
        "--settle",
        "0",
        "--calibrate-time",
        "0",
        "--profile",
    ]
}

/// `rfc2544 --profile`: both ends profile every trial; the record keeps, per frame size, the
/// trial at the throughput rate, and `--profile-out` writes its stacks and flame graphs.
#[test]
#[cfg(feature = "chart")]
fn an_rfc2544_run_keeps_the_profiles_at_the_throughput_rate() {
    let allowed = profiling_allowed();
    let srv = TestServer::with(|c| c.allow_profile = true);
    let dir = tempfile::tempdir().unwrap();
    let mut args = profiled_rfc2544("0.5");
    args.extend([
        "--profile-hz",
        "199",
        "--profile-callchains",
        "--profile-out",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    let rec = run_json(&srv, "rfc2544", &args);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/json-schema/rfc2544-v1.json")).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    assert!(compiled.is_valid(&rec), "record does not match its schema");
    assert_eq!(rec["plan"]["profile"]["frequency_hz"], 199);
    let size = &rec["frame_sizes"][0];
    let kept = &size["profile"];
    // 20 Mbit/s of 1024-byte frames passes loopback: the throughput is the line's, confirmed
    // (at the rate the tester reached, below the one offered, on a busy machine). Where no
    // rate was confirmed, the last trial's profile is kept and says so.
    match size["throughput"]["goals"][0]["throughput_fps"].as_f64() {
        Some(fps) => {
            assert_eq!(kept["at_throughput"], true, "{kept}");
            assert_eq!(kept["purpose"], "confirmation");
            assert!(kept["offered_fps"].as_f64().unwrap() >= fps * (1.0 - 1e-9));
        }
        None => assert_eq!(kept["at_throughput"], false),
    }
    // No trial carries one of its own.
    let trials = size["throughput"]["trials"].as_array().unwrap();
    assert!(trials.iter().all(|t| t.get("profile").is_none()));
    let warnings: Vec<&str> = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    if !allowed {
        assert!(kept.get("client").is_none());
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("the client: --profile: no profile of this end")),
            "{warnings:?}"
        );
        return;
    }
    for end in ["client", "server"] {
        let p: ProfileReport = serde_json::from_value(kept[end].clone()).expect(end);
        assert_eq!(p.check(), Ok(()));
        assert!(p.busy_samples() > 0, "{end}: {p:?}");
        // The confirmation's measured window: about its 0.5 s.
        assert!(
            p.duration_ns > 300_000_000 && p.duration_ns < 1_500_000_000,
            "{}",
            p.duration_ns
        );
        let folded: u64 =
            p.folded.iter().map(|f| f.samples).sum::<u64>() + p.folded_left_out_samples;
        assert_eq!(folded, p.busy_samples());
        let drawn = crate::common::check_flame_graph(dir.path(), &format!("1024B-{end}"));
        assert_eq!(drawn, p.busy_samples());
    }
    // The table prints them too.
    let out = run_against(&srv, "rfc2544", &profiled_rfc2544("0"));
    assert!(
        out.contains("profile of the client, 1024 B frames, search trial at "),
        "{out}"
    );
    // Without confirmation the kept trial is a search trial, at the throughput rate when the
    // search found one.
    assert!(out.contains("): cpu-clock at 999 Hz"), "{out}");
    assert!(
        out.contains("profile of the server, 1024 B frames"),
        "{out}"
    );
}
