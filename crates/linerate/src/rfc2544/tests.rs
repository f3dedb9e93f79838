//! Tests of the whole RFC 2544 pipeline on a simulated device: the runner, the record and
//! its JSON Schema. The renderings of the same records are tested in `export::rfc2544`.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::frame_sizes::IpVersion;
use super::latency::LatencyParams;
use super::record::{self, Benchmark, Rfc2544Record, StartAt};
use super::run::{self, Rfc2544Plan};
use super::sim::{Capacity, SimulatedDut};

fn plan(bidir: bool, benchmarks: Vec<Benchmark>) -> Rfc2544Plan {
    Rfc2544Plan {
        frame_sizes: vec![64, 512, 1518],
        ip: IpVersion::V4,
        line_rate_bps: 100e6,
        benchmarks,
        bidirectional: bidir,
        trial: Duration::from_secs(2),
        confirm: Some(Duration::from_secs(60)),
        confirm_attempts: 3,
        goals: vec![0.0, 0.001],
        resolution_percent: 1.0,
        max_trials: 20,
        start: StartAt::LineRate,
        calibrate: Some(Duration::from_secs(1)),
        settle: Duration::from_secs(1),
        latency: LatencyParams {
            repeat: 3,
            duration: Duration::from_secs(10),
        },
        frame_loss_time: Duration::from_secs(5),
        frame_loss_step_percent: 20.0,
        b2b_max: Duration::from_millis(100),
        b2b_repeat: 2,
        generator: super::record::Generator::Auto,
        profile: None,
    }
}

/// A CPU-bound router like the seed's 8240 board: 20,000 frames per second per direction
/// whatever their size, a 200-frame buffer, 30 µs of delay, a tester that reaches 120,000
/// fps at most.
fn dut(bidir: bool) -> SimulatedDut {
    let mut d = SimulatedDut::new(Capacity::Fps(20_000.0), 42);
    d.tester_max_fps = 120_000.0;
    d.buffer_frames = 200;
    d.delay_ns = 30_000;
    d.bidirectional = bidir;
    d
}

/// The record of a simulated run (fixed start time, so every output is reproducible).
pub(crate) fn fixture(bidir: bool, benchmarks: Vec<Benchmark>) -> Rfc2544Record {
    let p = plan(bidir, benchmarks);
    let never = AtomicBool::new(false);
    let (sizes, stopped) = run::run(&mut dut(bidir), &p, &never);
    assert_eq!(stopped, None);
    Rfc2544Record {
        schema_version: record::SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        started_at: "2024-05-01T12:00:00Z".into(),
        plan: p.record("198.51.100.2:5301".into(), "--line-rate".into()),
        frame_sizes: sizes,
        interrupted: false,
        deviations: p.deviations(),
        warnings: Vec::new(),
    }
}

#[test]
fn a_cpu_bound_router_forwards_the_same_frame_rate_at_every_size() {
    let rec = fixture(false, vec![Benchmark::Throughput]);
    for f in &rec.frame_sizes {
        let ndr = &f.throughput.as_ref().unwrap().goals[0];
        // 1518-byte frames: 100 Mbit/s carries only 8,127 fps, so the line is the limit.
        if f.frame_size == 1518 {
            assert_eq!(ndr.status, super::throughput::ThroughputStatus::LineRate);
            continue;
        }
        let fps = ndr.throughput_fps.unwrap();
        // 2 s search trials with a 200-frame buffer pass up to 20,100 fps; the 60 s
        // confirmation only up to 20,003: it fails once and steps down below 20,000.
        assert!(
            fps <= 20_003.4 && fps > 19_500.0,
            "{} B: {fps}",
            f.frame_size
        );
        assert_eq!(f.tester_max_fps, Some(120_000.0));
    }
}

#[test]
fn every_benchmark_runs_per_size() {
    let rec = fixture(true, Benchmark::ALL.to_vec());
    assert_eq!(rec.frame_sizes.len(), 3);
    for f in &rec.frame_sizes {
        assert!(f.calibration.is_some());
        let l = f.latency.as_ref().unwrap();
        assert_eq!(l.trials.len(), 3);
        assert_eq!(l.ways.len(), 2);
        assert_eq!(l.ways[0].tagged_mean_ns, Some(30_000.0));
        let fl = f.frame_loss.as_ref().unwrap();
        assert!(!fl.points.is_empty());
        let b = f.back_to_back.as_ref().unwrap();
        assert_eq!(b.bursts.len(), 2);
    }
    // 64 B: the tester (120,000 fps) is slower than 100 Mbit/s of 64-byte frames
    // (148,810 fps): its bursts are not back to back.
    let b64 = rec.frame_sizes[0].back_to_back.as_ref().unwrap();
    assert!(b64.bursts.iter().all(|b| b.tester_limited));
}

#[test]
fn records_validate_against_the_schema_and_round_trip() {
    let schema: serde_json::Value = serde_json::from_str(&record::schema()).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    for rec in [
        fixture(false, Benchmark::ALL.to_vec()),
        fixture(true, vec![Benchmark::Throughput]),
    ] {
        let text = record::to_json(&rec);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Err(errors) = compiled.validate(&value) {
            let msgs: Vec<String> = errors
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect();
            panic!("invalid: {msgs:#?}");
        }
        let back: Rfc2544Record = serde_json::from_str(&text).unwrap();
        assert_eq!(record::to_json(&back), text);
        // Every trial of every search is in the record.
        let trials: usize = rec.frame_sizes.iter().map(|f| f.trial_count()).sum();
        assert_eq!(text.matches("\"purpose\"").count(), trials);
    }
}

/// The pass/fail criterion behind exit code 1: every throughput the search found is
/// confirmed at full length.
#[test]
fn an_unconfirmed_throughput_fails_the_run() {
    use super::throughput::Confirmation;
    let mut rec = fixture(false, vec![Benchmark::Throughput]);
    assert_eq!(rec.failures(), Vec::<String>::new());
    let size = rec.frame_sizes[1].frame_size;
    let goal = &mut rec.frame_sizes[1].throughput.as_mut().unwrap().goals[0];
    goal.confirmation = Confirmation::Failed;
    goal.throughput_fps = None;
    let f = rec.failures();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with(&format!("{size} B, loss goal 0%: the throughput found")),
        "{f:?}"
    );
    assert!(f[0].contains("not confirmed"), "{f:?}");
}

/// A profile of 100 busy samples whose `duration_ns` is `tag` (to tell trials apart), with
/// folded stacks: 60 in the user copy under `udp_sendmsg`, 40 in `net_rx_action`.
pub(crate) fn fake_profile(tag: u64) -> linerate_wire::profile::ProfileReport {
    use linerate_wire::profile::*;
    let cat = |category, samples| CategoryShare {
        category,
        samples,
        busy_percent: samples as f64,
    };
    ProfileReport {
        event: "cpu-clock".into(),
        frequency_hz: 999,
        duration_ns: tag,
        start_monotonic_ns: None,
        samples: 120,
        idle_samples: 20,
        idle_percent: 20.0 * 100.0 / 120.0,
        kernel_samples: 100,
        user_samples: 0,
        lost_samples: 0,
        unresolved_samples: 0,
        top: vec![FunctionShare {
            name: "_copy_from_iter".into(),
            category: Category::DataCopy,
            samples: 60,
            busy_percent: 60.0,
        }],
        categories: vec![cat(Category::DataCopy, 60), cat(Category::Softirq, 40)],
        processes: vec![ProcessShare {
            comm: "linerate".into(),
            samples: 100,
            busy_percent: 100.0,
        }],
        per_cpu: vec![CpuProfile {
            cpu: 0,
            samples: 120,
            idle_samples: 20,
            categories: vec![cat(Category::DataCopy, 60), cat(Category::Softirq, 40)],
            top_function: Some("_copy_from_iter".into()),
        }],
        folded: vec![
            FoldedStack {
                stack: "linerate;udp_sendmsg;_copy_from_iter".into(),
                samples: 60,
            },
            FoldedStack {
                stack: "linerate;__do_softirq;net_rx_action".into(),
                samples: 40,
            },
        ],
        folded_left_out_samples: 0,
        warnings: vec![],
    }
}

/// A simulated device whose trials come back profiled, each with its own tag.
struct Profiled {
    dut: SimulatedDut,
    n: u64,
    /// The tester reaches only 95 % of the rate in full-length trials (a busy tester).
    slow_confirmations: bool,
}

impl Profiled {
    fn tag(
        &mut self,
        o: anyhow::Result<super::trial::TrialOutcome>,
    ) -> anyhow::Result<super::trial::TrialOutcome> {
        let mut o = o?;
        self.n += 1;
        if self.slow_confirmations {
            for w in &mut o.ways {
                w.achieved_fps *= 0.95;
            }
        }
        o.profile = Some(Box::new(super::trial::TrialProfile {
            client: Some(fake_profile(self.n)),
            server: Some(fake_profile(1000 + self.n)),
        }));
        Ok(o)
    }
}

impl super::trial::Trial for Profiled {
    fn run(
        &mut self,
        frame: u32,
        fps: f64,
        dur: Duration,
    ) -> anyhow::Result<super::trial::TrialOutcome> {
        let o = self.dut.run(frame, fps, dur);
        let slow = self.slow_confirmations;
        self.slow_confirmations = slow && dur >= Duration::from_secs(60);
        let o = self.tag(o);
        self.slow_confirmations = slow;
        o
    }
    fn run_tagged(
        &mut self,
        frame: u32,
        fps: f64,
        dur: Duration,
    ) -> anyhow::Result<super::trial::TrialOutcome> {
        let o = self.dut.run_tagged(frame, fps, dur);
        self.tag(o)
    }
    fn burst(&mut self, frame: u32, frames: u64) -> anyhow::Result<super::trial::TrialOutcome> {
        let o = self.dut.burst(frame, frames);
        self.tag(o)
    }
}

/// A profiled run: the record of `benchmarks`, every trial profiled.
pub(crate) fn profiled_fixture(benchmarks: Vec<Benchmark>) -> Rfc2544Record {
    profiled_run(benchmarks, false)
}

fn profiled_run(benchmarks: Vec<Benchmark>, slow_confirmations: bool) -> Rfc2544Record {
    let mut p = plan(false, benchmarks);
    p.profile = Some(linerate_wire::profile::ProfileSpec {
        frequency_hz: 999,
        callchains: true,
    });
    let never = AtomicBool::new(false);
    let mut t = Profiled {
        dut: dut(false),
        n: 0,
        slow_confirmations,
    };
    let (sizes, stopped) = run::run(&mut t, &p, &never);
    assert_eq!(stopped, None);
    Rfc2544Record {
        schema_version: record::SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        started_at: "2024-05-01T12:00:00Z".into(),
        plan: p.record("198.51.100.2:5301".into(), "--line-rate".into()),
        frame_sizes: sizes,
        interrupted: false,
        deviations: p.deviations(),
        warnings: Vec::new(),
    }
}

#[test]
fn a_profiled_run_keeps_the_profile_at_the_throughput_rate_per_size() {
    let rec = profiled_fixture(vec![Benchmark::Throughput, Benchmark::BackToBack]);
    // Trials are tagged 1, 2, ... in the order run, over all sizes.
    let mut before = 0u64;
    for f in &rec.frame_sizes {
        let p = f.profile.as_ref().expect("a profile per size");
        let t = f.throughput.as_ref().unwrap();
        let fps = t.goals[0].throughput_fps.unwrap();
        assert!(p.at_throughput, "{} B", f.frame_size);
        assert_eq!(p.purpose, super::trial::TrialPurpose::Confirmation);
        assert_eq!(p.offered_fps, Some(fps));
        // It is the profile of the last confirmation at that rate, not of a later
        // back-to-back burst.
        let confirmation = t
            .trials
            .iter()
            .rev()
            .find(|tr| {
                tr.purpose == super::trial::TrialPurpose::Confirmation
                    && tr.offered_fps == Some(fps)
            })
            .unwrap();
        let at = f
            .trials()
            .position(|tr| std::ptr::eq(tr, confirmation))
            .unwrap() as u64;
        let client = p.client.as_ref().unwrap();
        let server = p.server.as_ref().unwrap();
        assert_eq!(client.duration_ns, before + at + 1, "{} B", f.frame_size);
        assert_eq!(server.duration_ns, client.duration_ns + 1000);
        assert!(f.back_to_back.is_some());
        // No trial keeps its own.
        assert!(f.trials().all(|tr| tr.profile.is_none()));
        before += f.trial_count() as u64;
    }
    // The tags differ by size: each size kept its own trial's.
    let tags: Vec<u64> = rec
        .frame_sizes
        .iter()
        .map(|f| {
            f.profile
                .as_ref()
                .unwrap()
                .client
                .as_ref()
                .unwrap()
                .duration_ns
        })
        .collect();
    assert!(tags.windows(2).all(|w| w[0] < w[1]), "{tags:?}");
    assert!(rec.plan.profile.is_some());
    // In the JSON: one profile per size (two ends), none in the trials, valid by the schema.
    let text = record::to_json(&rec);
    assert_eq!(
        text.matches("\"event\": \"cpu-clock\"").count(),
        2 * rec.frame_sizes.len()
    );
    let schema: serde_json::Value = serde_json::from_str(&record::schema()).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(compiled.is_valid(&value));
    let back: Rfc2544Record = serde_json::from_str(&text).unwrap();
    assert_eq!(back.frame_sizes[0].profile, rec.frame_sizes[0].profile);
}

#[test]
fn without_a_throughput_rate_the_last_profiled_trial_is_kept() {
    let rec = profiled_fixture(vec![Benchmark::BackToBack]);
    for f in &rec.frame_sizes {
        let p = f.profile.as_ref().unwrap();
        assert!(!p.at_throughput);
        assert_eq!(p.purpose, super::trial::TrialPurpose::BackToBack);
        assert_eq!(p.offered_fps, None);
    }
    // Without --profile: no profile anywhere.
    let plain = fixture(false, vec![Benchmark::Throughput]);
    assert!(plain.frame_sizes.iter().all(|f| f.profile.is_none()));
    assert!(!record::to_json(&plain).contains("\"profile\""));
}

/// A tester that falls short in the confirmation: the throughput is the rate it reached, not
/// the one offered, and the profile kept is that confirmation's all the same.
#[test]
fn a_tester_limited_confirmation_keeps_its_profile_at_the_throughput_rate() {
    let rec = profiled_run(vec![Benchmark::Throughput], true);
    for f in &rec.frame_sizes {
        let t = f.throughput.as_ref().unwrap();
        let g = &t.goals[0];
        let fps = g.throughput_fps.unwrap();
        let confirmation = t
            .trials
            .iter()
            .rev()
            .find(|tr| tr.purpose == super::trial::TrialPurpose::Confirmation && tr.passes(0.0))
            .unwrap();
        assert!(confirmation.tester_limited, "{} B", f.frame_size);
        assert_eq!(confirmation.effective_fps, fps);
        assert!(confirmation.offered_fps.unwrap() > fps);
        let p = f.profile.as_ref().unwrap();
        assert!(p.at_throughput, "{} B", f.frame_size);
        assert_eq!(p.purpose, super::trial::TrialPurpose::Confirmation);
        assert_eq!(p.offered_fps, confirmation.offered_fps);
        // The device's counters (--dut) are still left out for a tester-limited rate.
        assert_eq!(f.device_at_throughput(), None);
    }
}
