//! Runs the chosen benchmarks over the frame sizes through any [`Trial`], and states how the
//! run departs from RFC 2544's procedure.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use super::back_to_back::{self, BackToBackParams};
use super::frame_loss::{self, FrameLossParams};
use super::frame_sizes::{self, IpVersion};
use super::latency::{self, LatencyParams};
use super::record::Generator;
use super::record::{Benchmark, FrameSizeRecord, Rfc2544PlanRecord, StartAt};
use super::throughput::{self, SearchParams};
use super::trial::{Trial, TrialPurpose, TrialRecord};

/// A validated `linerate rfc2544` run.
#[derive(Debug, Clone, PartialEq)]
pub struct Rfc2544Plan {
    /// Frame sizes in the order to run them (each valid for `ip`).
    pub frame_sizes: Vec<u32>,
    /// IP version of the path.
    pub ip: IpVersion,
    /// Line rate, bits per second.
    pub line_rate_bps: f64,
    /// Benchmarks to run (latency implies a throughput search).
    pub benchmarks: Vec<Benchmark>,
    /// Both directions at once.
    pub bidirectional: bool,
    /// Search trial length.
    pub trial: Duration,
    /// Confirmation trial length; `None` skips confirmation.
    pub confirm: Option<Duration>,
    /// Confirmation attempts per goal.
    pub confirm_attempts: u32,
    /// Allowed loss ratios (0 = NDR).
    pub goals: Vec<f64>,
    /// Search resolution, percent of the theoretical maximum.
    pub resolution_percent: f64,
    /// Most search trials per frame size.
    pub max_trials: u32,
    /// Where the search starts.
    pub start: StartAt,
    /// Length of the unpaced calibration trial; `None` skips it.
    pub calibrate: Option<Duration>,
    /// Wait between trials.
    pub settle: Duration,
    /// Latency trials.
    pub latency: LatencyParams,
    /// Frame loss trial length.
    pub frame_loss_time: Duration,
    /// Frame loss step, percent.
    pub frame_loss_step_percent: f64,
    /// Longest back-to-back burst, as time at line rate.
    pub b2b_max: Duration,
    /// Back-to-back repetitions.
    pub b2b_repeat: u32,
    /// How frames are written.
    pub generator: Generator,
    /// `--profile`: both ends sample their CPUs in every trial.
    pub profile: Option<linerate_wire::profile::ProfileSpec>,
}

/// Most bursts in one back-to-back repetition.
const B2B_MAX_TRIALS: u32 = 40;

impl Rfc2544Plan {
    fn wants(&self, b: Benchmark) -> bool {
        self.benchmarks.contains(&b)
    }

    /// The plan as recorded.
    pub fn record(&self, server: String, line_rate_source: String) -> Rfc2544PlanRecord {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Rfc2544PlanRecord {
            server,
            ip_version: self.ip.name().to_string(),
            line_rate_bps: self.line_rate_bps,
            line_rate_source,
            bidirectional: self.bidirectional,
            benchmarks: self.benchmarks.clone(),
            frame_sizes: self.frame_sizes.clone(),
            trial_ms: ms(self.trial),
            confirm_ms: self.confirm.map(ms),
            confirm_attempts: self.confirm_attempts,
            loss_goals_percent: self.goals.iter().map(|g| g * 100.0).collect(),
            resolution_percent: self.resolution_percent,
            max_trials: self.max_trials,
            start: self.start,
            calibrate_ms: self.calibrate.map(ms),
            settle_ms: ms(self.settle),
            latency_ms: ms(self.latency.duration),
            latency_repeat: self.latency.repeat,
            frame_loss_ms: ms(self.frame_loss_time),
            frame_loss_step_percent: self.frame_loss_step_percent,
            back_to_back_max_ms: ms(self.b2b_max),
            back_to_back_repeat: self.b2b_repeat,
            udp_offload: self.generator == Generator::Gso,
            generator: Some(self.generator),
            profile: self.profile,
        }
    }

    /// Where this plan departs from RFC 2544's procedure, one sentence each.
    pub fn deviations(&self) -> Vec<String> {
        let s = |d: Duration| d.as_secs_f64();
        let mut out = vec![
            "residual frames are awaited until 50 ms pass without one (at most 2 s), not a fixed 2 s (RFC 2544 §23)".to_string(),
            "frames are UDP datagrams between one address pair, one stream per direction (RFC 2544 §12 also asks for a run with random destinations)".to_string(),
        ];
        match self.generator {
            Generator::Auto => {}
            Generator::Sendmmsg => out.push("frames are UDP datagrams sent with sendmmsg (--generator sendmmsg), not raw frames: the tester's own kernel path limits its rate".into()),
            Generator::Gso => out.push("frames were sent with UDP GSO (--generator gso): on virtual links and Linux forwarding paths up to 64 frames cross the device as one super-packet, so it did a fraction of the per-frame work the figures claim".into()),
        }
        if self.settle < Duration::from_secs(5) {
            out.push(format!(
                "{:.1} s between trials; RFC 2544 §23 waits at least 5 s for the device to settle (use --settle 5)",
                s(self.settle)
            ));
        }
        match self.confirm {
            None => out.push("throughput is not confirmed with a full-length trial; RFC 2544 §24 asks for 60 s (use --confirm-time 60)".into()),
            Some(c) if c < Duration::from_secs(60) => out.push(format!(
                "throughput confirmed with {:.1} s trials; RFC 2544 §24 asks for 60 s",
                s(c)
            )),
            Some(_) => {}
        }
        if !self.goals.contains(&0.0) {
            out.push("no zero-loss goal: RFC 2544 throughput allows no loss".into());
        }
        if self.frame_sizes.len() < 5 {
            out.push(format!(
                "{} frame size(s); RFC 2544 §9 asks for at least 5",
                self.frame_sizes.len()
            ));
        }
        if self.wants(Benchmark::Latency) {
            if self.latency.duration < Duration::from_secs(120) {
                out.push(format!(
                    "latency trials of {:.1} s; RFC 2544 §26.2 asks for 120 s",
                    s(self.latency.duration)
                ));
            }
            if self.latency.repeat < 20 {
                out.push(format!(
                    "{} latency trials per size; RFC 2544 §26.2 asks for 20",
                    self.latency.repeat
                ));
            }
        }
        if self.wants(Benchmark::FrameLoss) {
            if self.frame_loss_step_percent > 10.0 {
                out.push(format!(
                    "frame loss steps of {}%; RFC 2544 §26.3 asks for 10% or finer",
                    self.frame_loss_step_percent
                ));
            }
            if self.frame_loss_time < Duration::from_secs(60) {
                out.push(format!(
                    "frame loss trials of {:.1} s; RFC 2544 §24 asks for 60 s",
                    s(self.frame_loss_time)
                ));
            }
        }
        if self.wants(Benchmark::BackToBack) {
            if self.b2b_max < Duration::from_secs(2) {
                out.push(format!(
                    "back-to-back bursts of at most {:.2} s at line rate; RFC 2544 §26.4 asks for at least 2 s",
                    s(self.b2b_max)
                ));
            }
            if self.b2b_repeat < 50 {
                out.push(format!(
                    "{} back-to-back repetitions; RFC 2544 §26.4 asks for 50",
                    self.b2b_repeat
                ));
            }
        }
        out
    }
}

/// The deviations that only the trials show: with `--generator auto`, an end whose frames
/// went out as datagrams instead of raw frames (no CAP_NET_RAW, an interface without
/// Ethernet, an older server), with the reason its warnings gave.
pub fn generator_deviations(plan: &Rfc2544Plan, sizes: &[FrameSizeRecord]) -> Vec<String> {
    use super::trial::{TxPath, Way};
    if plan.generator != Generator::Auto {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (way, end, prefix) in [
        (Way::Forward, "this tester", "client: "),
        (Way::Reverse, "the server", "server: "),
    ] {
        let trials = || sizes.iter().flat_map(|f| f.trials());
        let datagrams = trials()
            .flat_map(|t| &t.ways)
            .any(|w| w.way == way && w.tx_path != Some(TxPath::RawFrames));
        if !datagrams {
            continue;
        }
        let why = trials()
            .flat_map(|t| &t.warnings)
            .find_map(|w| {
                w.strip_prefix(prefix)
                    .and_then(|w| w.strip_prefix("raw frames not sent ("))
                    .and_then(|w| w.split_once("): ").map(|(why, _)| why.to_string()))
            })
            .unwrap_or_else(|| "it does not offer them: an older linerate".to_string());
        out.push(format!(
            "{end} sent its frames as UDP datagrams with sendmmsg, one per message, not as raw frames ({why}): its own kernel path may limit its rate"
        ));
    }
    out
}

/// Runs the plan's benchmarks for every frame size. Stops at the first trial that cannot run
/// (or at `interrupt`), keeping what was measured; returns the records and, if it stopped
/// early, why.
pub fn run(
    trial: &mut dyn Trial,
    plan: &Rfc2544Plan,
    interrupt: &AtomicBool,
) -> (Vec<FrameSizeRecord>, Option<String>) {
    let mut out = Vec::new();
    for &frame in &plan.frame_sizes {
        if interrupt.load(Relaxed) {
            return (out, Some("interrupted".into()));
        }
        let (rec, error) = run_size(trial, plan, frame);
        out.push(rec);
        if error.is_some() {
            return (out, error);
        }
    }
    (out, None)
}

fn run_size(
    trial: &mut dyn Trial,
    plan: &Rfc2544Plan,
    frame: u32,
) -> (FrameSizeRecord, Option<String>) {
    let mut rec = FrameSizeRecord {
        frame_size: frame,
        udp_payload: frame_sizes::udp_payload(frame, plan.ip).unwrap_or(0),
        theoretical_max_fps: frame_sizes::max_fps(plan.line_rate_bps, frame),
        tester_max_fps: None,
        calibration: None,
        throughput: None,
        latency: None,
        frame_loss: None,
        back_to_back: None,
        device_verdicts: Vec::new(),
        profile: None,
    };
    let error = measure_size(trial, plan, &mut rec).err();
    // One trial's profiles per size are kept (the rest are dropped here, size by size).
    rec.keep_profile();
    (rec, error)
}

/// `Err` with the message of a benchmark that stopped on a trial that could not run.
fn stopped(error: Option<String>) -> Result<(), String> {
    error.map_or(Ok(()), Err)
}

/// Runs the plan's benchmarks for one frame size into `rec`, stopping at the first error.
fn measure_size(
    trial: &mut dyn Trial,
    plan: &Rfc2544Plan,
    rec: &mut FrameSizeRecord,
) -> Result<(), String> {
    let frame = rec.frame_size;
    let line_fps = rec.theoretical_max_fps;
    if let Some(dur) = plan.calibrate {
        let t = match trial.run(frame, f64::INFINITY, dur) {
            Ok(o) => TrialRecord::paced(TrialPurpose::Calibration, frame, f64::INFINITY, dur, o),
            Err(e) => TrialRecord::failed(TrialPurpose::Calibration, frame, None, &e),
        };
        // An invalid calibration (e.g. frames the tester's interface dropped) has no maximum.
        rec.tester_max_fps = (t.effective_fps > 0.0 && t.valid()).then_some(t.effective_fps);
        let error = t.error.clone();
        rec.calibration = Some(t);
        stopped(error)?;
    }
    if plan.wants(Benchmark::Throughput) || plan.wants(Benchmark::Latency) {
        let start = match (plan.start, rec.tester_max_fps) {
            (StartAt::TesterMax, Some(t)) => t.min(line_fps),
            _ => line_fps,
        };
        let params = SearchParams {
            line_fps,
            line_rate_bps: plan.line_rate_bps,
            start_fps: start,
            resolution_fps: line_fps * plan.resolution_percent / 100.0,
            goals: plan.goals.clone(),
            max_trials: plan.max_trials,
            trial_duration: plan.trial,
            confirm_duration: plan.confirm,
            confirm_attempts: plan.confirm_attempts,
        };
        let trace = throughput::search(trial, frame, &params);
        let error = trace.error.clone();
        let ndr = trace.goals.first().and_then(|g| g.throughput_fps);
        rec.throughput = Some(trace);
        stopped(error)?;
        if let (true, Some(rate)) = (plan.wants(Benchmark::Latency), ndr) {
            let t = latency::measure(trial, frame, rate, &plan.latency);
            let error = t.error.clone();
            rec.latency = Some(t);
            stopped(error)?;
        }
    }
    if plan.wants(Benchmark::FrameLoss) {
        let p = FrameLossParams {
            line_fps,
            step_percent: plan.frame_loss_step_percent,
            duration: plan.frame_loss_time,
        };
        let t = frame_loss::measure(trial, frame, &p);
        let error = t.error.clone();
        rec.frame_loss = Some(t);
        stopped(error)?;
    }
    if plan.wants(Benchmark::BackToBack) {
        let p = BackToBackParams {
            line_fps,
            max_frames: (line_fps * plan.b2b_max.as_secs_f64()).ceil().max(1.0) as u64,
            repeat: plan.b2b_repeat,
            max_trials: B2B_MAX_TRIALS,
        };
        let t = back_to_back::measure(trial, frame, &p);
        let error = t.error.clone();
        rec.back_to_back = Some(t);
        stopped(error)?;
    }
    Ok(())
}
