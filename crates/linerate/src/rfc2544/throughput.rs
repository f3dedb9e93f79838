//! RFC 2544 §26.1 throughput: the highest rate at which the device forwards every frame
//! (or, for a partial drop rate, all but an allowed fraction), found by binary search.
//!
//! Method (RFC 2544 §24 and §26.1; NFVbench's and FD.io CSIT's NDR/PDR practice):
//!
//! * The first trial offers `start_fps`: the theoretical maximum of the line (RFC 2544), or the
//!   tester's own maximum when that is lower and the user asked to start there.
//! * Every trial is kept. The bounds are re-derived from all search trials each time (the
//!   MLRsearch rule): the upper bound is the lowest rate that failed (or the start, or the
//!   tester's ceiling); the lower bound is the highest rate that passed *below* the upper bound,
//!   so a pass above a failure ("loss inversion") never raises the result.
//! * The next trial is half-way between the bounds; the search ends when they are within
//!   `resolution_fps` or after `max_trials` search trials.
//! * Several loss goals (NDR with 0 loss, PDRs with a tolerated loss) share the trials: the
//!   strictest goal is searched first and each later goal starts from the bounds the earlier
//!   trials already give it.
//! * A tester-limited trial (the sender reached less than 99% of the offered rate) is run
//!   again at the same rate, up to [`TESTER_RETRIES`] times: a software tester that lost the
//!   CPU for a few milliseconds is noise, not a property of the device, and only the last try
//!   counts. If the tester still falls short, the trial counts at the rate the tester reached,
//!   and that rate becomes a ceiling: the search cannot go above it. A result bounded by that
//!   ceiling rather than by a device failure is reported as
//!   [`ThroughputStatus::TesterLimited`], never as the device's limit.
//! * A trial whose counts the interface counters contradict (more than 2% apart, see
//!   [`super::trial::cross_check`]) is *invalid*: it neither passes nor fails and is run again
//!   at the same rate like a tester-limited one. If it is still invalid, the search of that
//!   frame size stops with [`ThroughputStatus::Invalid`] and no figure: whatever made the
//!   counts wrong (segmentation offload, frames dropped in the tester's own interface, other
//!   traffic) would make any figure wrong too. The other frame sizes still run.
//! * Search trials are short; RFC 2544 asks for the final figure to hold for a full-length
//!   trial (60 s). Each goal's result is confirmed with one trial of `confirm_duration`; if that
//!   loses too much, the rate is lowered by the loss seen (at least one resolution step) and
//!   confirmed again, up to `confirm_attempts` times. An unconfirmed goal has no throughput.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::frame_sizes;
use super::trial::{Trial, TrialPurpose, TrialRecord};

/// Times a tester-limited trial is repeated at the same rate before its shortfall counts.
pub const TESTER_RETRIES: u32 = 2;

/// How to search one frame size.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchParams {
    /// Theoretical maximum of the line for this frame size, frames per second.
    pub line_fps: f64,
    /// Line rate, bits per second (for the figures).
    pub line_rate_bps: f64,
    /// First offered rate (at most `line_fps`).
    pub start_fps: f64,
    /// Stop when the bounds are this close, frames per second.
    pub resolution_fps: f64,
    /// Allowed loss ratios, e.g. `[0.0]` (NDR) or `[0.0, 0.001]` (NDR and PDR 0.1%).
    pub goals: Vec<f64>,
    /// Most search trials (confirmations not counted).
    pub max_trials: u32,
    /// Length of a search trial.
    pub trial_duration: Duration,
    /// Length of the confirmation trial; `None` skips confirmation.
    pub confirm_duration: Option<Duration>,
    /// Confirmation trials per goal before giving up.
    pub confirm_attempts: u32,
}

/// Why a goal's result is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputStatus {
    /// A rate the device could not forward bounds the result: this is the device's limit.
    DeviceLimit,
    /// The device forwarded the theoretical maximum of the line.
    LineRate,
    /// The tester could not offer more: the device forwarded everything the tester sent, so
    /// its throughput is at least this, but its own limit was not reached.
    TesterLimited,
    /// Even the lowest rate tried lost too many frames.
    NoPass,
    /// The search stopped on a trial whose counts the interface counters contradict (see
    /// [`SearchTrace::invalid`]): no figure can be trusted for this size.
    Invalid,
}

impl ThroughputStatus {
    /// Words for tables.
    pub fn describe(self) -> &'static str {
        match self {
            ThroughputStatus::DeviceLimit => "device limit",
            ThroughputStatus::LineRate => "line rate",
            ThroughputStatus::TesterLimited => "tester-limited",
            ThroughputStatus::NoPass => "no rate passed",
            ThroughputStatus::Invalid => "invalid counts",
        }
    }
}

/// Outcome of the full-length confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confirmation {
    /// Not asked for (`--confirm-time 0`): the figure comes from short trials only.
    Skipped,
    /// A full-length trial passed.
    Passed,
    /// No full-length trial passed: no throughput is reported.
    Failed,
    /// Nothing to confirm (no rate passed, or the search stopped on an error).
    NotRun,
}

/// The throughput figures of one goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Figures {
    /// Frames per second in each direction.
    pub fps_per_direction: f64,
    /// Frames per second, all directions together.
    pub fps_total: f64,
    /// Layer-2 bit rate (frames with FCS) per direction.
    pub l2_bps_per_direction: f64,
    /// Layer-2 bit rate, all directions together.
    pub l2_bps_total: f64,
    /// Per-direction rate as a percentage of the theoretical maximum.
    pub percent_of_line: f64,
}

impl Figures {
    /// Figures for `fps` per direction in `directions` directions.
    pub fn new(fps: f64, directions: usize, frame: u32, line_fps: f64) -> Figures {
        let n = directions.max(1) as f64;
        Figures {
            fps_per_direction: fps,
            fps_total: fps * n,
            l2_bps_per_direction: frame_sizes::l2_bps(fps, frame),
            l2_bps_total: frame_sizes::l2_bps(fps, frame) * n,
            percent_of_line: if line_fps > 0.0 {
                fps * 100.0 / line_fps
            } else {
                0.0
            },
        }
    }
}

/// The result for one loss goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalResult {
    /// Allowed device loss, percent (0 = NDR, RFC 2544's throughput).
    pub max_loss_percent: f64,
    /// Highest rate that passed in the search, frames per second per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_fps: Option<f64>,
    /// The throughput: the confirmed rate (or the search result when confirmation was
    /// skipped), frames per second per direction; absent when nothing passed or the
    /// confirmation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_fps: Option<f64>,
    /// Figures derived from `throughput_fps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// What bounds the result.
    pub status: ThroughputStatus,
    /// Whether the search bounds came within the resolution (false: it ran out of trials).
    pub resolution_reached: bool,
    /// The full-length confirmation.
    pub confirmation: Confirmation,
}

/// Every trial of one frame size's search and the result per goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchTrace {
    /// Frame size, bytes.
    pub frame_size: u32,
    /// Every trial in the order run (search and confirmation).
    pub trials: Vec<TrialRecord>,
    /// One result per goal, strictest first.
    pub goals: Vec<GoalResult>,
    /// Why the search stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the search stopped on invalid counts, if it did: a trial whose frames the
    /// interface counters contradicted, still so after [`TESTER_RETRIES`] repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// Bounds for one goal, derived from the search trials so far.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bounds {
    /// Highest passing rate below `upper`.
    lo: Option<f64>,
    /// Lowest rate that failed (infinite if none).
    fail: f64,
    /// The start rate, lowered by any tester ceiling.
    cap: f64,
    /// Whether a tester-limited trial lowered `cap`.
    tester_ceiling: bool,
    /// Trials so far.
    trials: usize,
}

impl Bounds {
    fn derive(trials: &[TrialRecord], goal: f64, start: f64) -> Bounds {
        // A tester-limited trial that was tried again at the same rate no longer counts.
        let superseded = |i: usize| {
            trials[i].tester_limited
                && trials[i + 1..].iter().any(|later| {
                    later.purpose == TrialPurpose::Search
                        && later.offered_fps == trials[i].offered_fps
                })
        };
        let search = || {
            trials
                .iter()
                .enumerate()
                .filter(move |(i, t)| {
                    t.purpose == TrialPurpose::Search
                        && t.error.is_none()
                        && t.valid()
                        && !superseded(*i)
                })
                .map(|(_, t)| t)
        };
        let mut fail = f64::INFINITY;
        let mut cap = start;
        let mut tester_ceiling = false;
        for t in search() {
            if t.tester_limited && t.effective_fps < cap {
                cap = t.effective_fps;
                tester_ceiling = true;
            }
            if !t.passes(goal) {
                fail = fail.min(t.effective_fps);
            }
        }
        let lo = search()
            .filter(|t| t.passes(goal) && t.effective_fps < fail && t.effective_fps <= cap)
            .map(|t| t.effective_fps)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
        Bounds {
            lo,
            fail,
            cap,
            tester_ceiling,
            trials: search().count(),
        }
    }

    fn upper(&self) -> f64 {
        self.fail.min(self.cap)
    }

    fn converged(&self, resolution: f64) -> bool {
        self.trials > 0 && self.upper() - self.lo.unwrap_or(0.0) <= resolution
    }

    fn next_rate(&self, start: f64) -> f64 {
        if self.trials == 0 {
            start
        } else {
            (self.lo.unwrap_or(0.0) + self.upper()) / 2.0
        }
    }

    fn status(&self, line_fps: f64) -> ThroughputStatus {
        if self.lo.is_none() {
            ThroughputStatus::NoPass
        } else if self.fail <= self.cap {
            ThroughputStatus::DeviceLimit
        } else if !self.tester_ceiling && self.cap >= line_fps {
            ThroughputStatus::LineRate
        } else {
            ThroughputStatus::TesterLimited
        }
    }
}

/// Searches the throughput of one frame size for every goal in `p.goals`. Never fails: a
/// trial that cannot run ends the search and is recorded in [`SearchTrace::error`].
pub fn search(trial: &mut dyn Trial, frame: u32, p: &SearchParams) -> SearchTrace {
    let mut trace = SearchTrace {
        frame_size: frame,
        trials: Vec::new(),
        goals: Vec::new(),
        error: None,
        invalid: None,
    };
    let mut goals = p.goals.clone();
    goals.sort_by(f64::total_cmp);
    goals.dedup();
    let mut budget = p.max_trials;
    let mut bounds = Vec::new();
    for &goal in &goals {
        let mut b = Bounds::derive(&trace.trials, goal, p.start_fps);
        while trace.error.is_none()
            && trace.invalid.is_none()
            && !b.converged(p.resolution_fps)
            && budget > 0
        {
            let rate = b.next_rate(p.start_fps);
            let purpose = TrialPurpose::Search;
            if !run_driven(
                trial,
                &mut trace,
                purpose,
                frame,
                rate,
                p.trial_duration,
                &mut budget,
            ) {
                break;
            }
            if let Some(why) = trace.trials.last().and_then(|t| t.invalid.clone()) {
                trace.invalid = Some(why);
                break;
            }
            b = Bounds::derive(&trace.trials, goal, p.start_fps);
        }
        bounds.push((goal, b));
    }
    for (goal, b) in bounds {
        let result = goal_result(trial, &mut trace, frame, p, goal, &b);
        trace.goals.push(result);
    }
    trace
}

/// Runs a trial at `rate`, and again (up to [`TESTER_RETRIES`] times) while the tester falls
/// short of it, each try taking one from `budget`; false if a trial could not run.
fn run_driven(
    trial: &mut dyn Trial,
    trace: &mut SearchTrace,
    purpose: TrialPurpose,
    frame: u32,
    rate: f64,
    dur: Duration,
    budget: &mut u32,
) -> bool {
    let mut retries = TESTER_RETRIES;
    while *budget > 0 {
        *budget -= 1;
        if !run_one(trial, trace, purpose, frame, rate, dur) {
            return false;
        }
        let limited = trace
            .trials
            .last()
            .is_some_and(|t| t.tester_limited || !t.valid());
        if !limited || retries == 0 {
            break;
        }
        retries -= 1;
    }
    true
}

/// Runs one paced trial and records it; false if it could not run.
fn run_one(
    trial: &mut dyn Trial,
    trace: &mut SearchTrace,
    purpose: TrialPurpose,
    frame: u32,
    rate: f64,
    dur: Duration,
) -> bool {
    match trial.run(frame, rate, dur) {
        Ok(outcome) => {
            trace
                .trials
                .push(TrialRecord::paced(purpose, frame, rate, dur, outcome));
            true
        }
        Err(e) => {
            trace.error = Some(format!("{e:#}"));
            trace
                .trials
                .push(TrialRecord::failed(purpose, frame, Some(rate), &e));
            false
        }
    }
}

fn goal_result(
    trial: &mut dyn Trial,
    trace: &mut SearchTrace,
    frame: u32,
    p: &SearchParams,
    goal: f64,
    b: &Bounds,
) -> GoalResult {
    let directions = trace.trials.iter().map(|t| t.ways.len()).max().unwrap_or(1);
    let (throughput_fps, confirmation) = match (b.lo, p.confirm_duration) {
        (None, _) => (None, Confirmation::NotRun),
        (Some(_), _) if trace.error.is_some() || trace.invalid.is_some() => {
            (None, Confirmation::NotRun)
        }
        (Some(fps), None) => (Some(fps), Confirmation::Skipped),
        (Some(fps), Some(dur)) => confirm(trial, trace, frame, p, goal, fps, dur),
    };
    let status = if trace.invalid.is_some() {
        ThroughputStatus::Invalid
    } else {
        b.status(p.line_fps)
    };
    GoalResult {
        max_loss_percent: goal * 100.0,
        search_fps: b.lo,
        throughput_fps,
        figures: throughput_fps.map(|f| Figures::new(f, directions, frame, p.line_fps)),
        status,
        resolution_reached: b.upper() - b.lo.unwrap_or(0.0) <= p.resolution_fps,
        confirmation,
    }
}

fn confirm(
    trial: &mut dyn Trial,
    trace: &mut SearchTrace,
    frame: u32,
    p: &SearchParams,
    goal: f64,
    fps: f64,
    dur: Duration,
) -> (Option<f64>, Confirmation) {
    // A stricter goal's confirmation at this rate that passes this goal too is reused.
    let earlier = trace.trials.iter().find(|t| {
        t.purpose == TrialPurpose::Confirmation && t.offered_fps == Some(fps) && t.passes(goal)
    });
    if let Some(t) = earlier {
        return (Some(t.effective_fps), Confirmation::Passed);
    }
    let mut rate = fps;
    for _ in 0..p.confirm_attempts.max(1) {
        let mut budget = TESTER_RETRIES + 1;
        let purpose = TrialPurpose::Confirmation;
        if !run_driven(trial, trace, purpose, frame, rate, dur, &mut budget) {
            return (None, Confirmation::NotRun);
        }
        let Some(t) = trace.trials.last() else {
            break;
        };
        if let Some(why) = &t.invalid {
            trace.invalid = Some(why.clone());
            return (None, Confirmation::NotRun);
        }
        if t.passes(goal) {
            return (Some(t.effective_fps), Confirmation::Passed);
        }
        let loss = t.loss_percent / 100.0;
        rate -= p.resolution_fps.max(rate * loss);
        if rate <= 0.0 {
            break;
        }
    }
    (None, Confirmation::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc2544::sim::{Capacity, LossModel, SimulatedDut};

    fn params(goals: &[f64], confirm: Option<u64>) -> SearchParams {
        SearchParams {
            line_fps: 1000.0,
            line_rate_bps: 1e6,
            start_fps: 1000.0,
            resolution_fps: 10.0,
            goals: goals.to_vec(),
            max_trials: 20,
            trial_duration: Duration::from_secs(1),
            confirm_duration: confirm.map(Duration::from_secs),
            confirm_attempts: 3,
        }
    }

    fn offered(t: &SearchTrace) -> Vec<f64> {
        t.trials.iter().filter_map(|t| t.offered_fps).collect()
    }

    /// A router that forwards 300 fps. Binary search from 1000 fps with 10 fps resolution:
    /// a trial passes while round(rate × 1 s) ≤ 300 frames.
    #[test]
    fn ndr_binary_search_sequence() {
        let mut dut = SimulatedDut::new(Capacity::Fps(300.0), 1);
        let t = search(&mut dut, 64, &params(&[0.0], None));
        assert_eq!(
            offered(&t),
            vec![1000.0, 500.0, 250.0, 375.0, 312.5, 281.25, 296.875, 304.6875]
        );
        let g = &t.goals[0];
        assert_eq!(g.search_fps, Some(296.875));
        assert_eq!(g.throughput_fps, Some(296.875));
        assert_eq!(g.status, ThroughputStatus::DeviceLimit);
        assert!(g.resolution_reached);
        assert_eq!(g.confirmation, Confirmation::Skipped);
        let f = g.figures.as_ref().unwrap();
        assert!((f.percent_of_line - 29.6875).abs() < 1e-9);
        // 296.875 fps × 64 B × 8 = 152,000 bit/s.
        assert!((f.l2_bps_per_direction - 152_000.0).abs() < 1e-6);
        assert_eq!(t.error, None);
    }

    /// NDR and PDR (5%) in one run: the PDR search starts from the bounds the NDR trials
    /// already give (passes up to 312.5 at ≤ 5% loss, a failure at 375) and needs three more
    /// trials; each goal is then confirmed with one 10 s trial.
    #[test]
    fn ndr_and_pdr_share_trials() {
        let mut dut = SimulatedDut::new(Capacity::Fps(300.0), 1);
        let t = search(&mut dut, 64, &params(&[0.05, 0.0], Some(10)));
        assert_eq!(
            offered(&t),
            vec![
                1000.0, 500.0, 250.0, 375.0, 312.5, 281.25, 296.875, 304.6875, // NDR
                343.75, 328.125, 320.3125, // PDR 5%
                296.875, 312.5, // confirmations
            ]
        );
        let purposes: Vec<_> = t.trials.iter().map(|t| t.purpose).collect();
        assert_eq!(purposes[11], TrialPurpose::Confirmation);
        assert_eq!(purposes[10], TrialPurpose::Search);
        assert_eq!(t.goals.len(), 2);
        assert_eq!(t.goals[0].max_loss_percent, 0.0);
        assert_eq!(t.goals[0].throughput_fps, Some(296.875));
        assert_eq!(t.goals[1].max_loss_percent, 5.0);
        assert_eq!(t.goals[1].throughput_fps, Some(312.5));
        assert!(t
            .goals
            .iter()
            .all(|g| g.confirmation == Confirmation::Passed));
    }

    /// The tester reaches only 200 fps: the first trial falls short, passes at 200, and the
    /// result is "tester-limited at 200", not the device's limit.
    #[test]
    fn tester_limited_result_is_never_the_device_limit() {
        let mut dut = SimulatedDut::new(Capacity::Fps(300.0), 1);
        dut.tester_max_fps = 200.0;
        let t = search(&mut dut, 64, &params(&[0.0], Some(10)));
        // Tried three times at 1000 fps (two repeats of a tester-limited trial), then
        // confirmed at the tester's 200 fps.
        assert_eq!(offered(&t), vec![1000.0, 1000.0, 1000.0, 200.0]);
        assert!(t.trials[..3].iter().all(|t| t.tester_limited));
        assert_eq!(t.trials[0].effective_fps, 200.0);
        let g = &t.goals[0];
        assert_eq!(g.status, ThroughputStatus::TesterLimited);
        assert_eq!(g.throughput_fps, Some(200.0));
    }

    /// A shaper that pushes the sender back instead of dropping (tbf at 20 Mbit/s on the same
    /// host): 1518-byte frames are 1514 bytes to tbf, 1651.25 fps. The first trial at the
    /// line's 2031 fps is slowed to 1651.25 without loss: tester-limited at the shaped rate.
    #[test]
    fn pushback_is_reported_as_tester_limited_at_the_shaped_rate() {
        let mut dut = SimulatedDut::new(Capacity::Bps(20e6), 1);
        dut.pushback = true;
        let line = crate::rfc2544::frame_sizes::max_fps(25e6, 1518);
        let mut p = params(&[0.0], None);
        p.line_fps = line;
        p.start_fps = line;
        p.resolution_fps = line / 100.0;
        let t = search(&mut dut, 1518, &p);
        assert_eq!(t.trials.len(), 3);
        let g = &t.goals[0];
        assert_eq!(g.status, ThroughputStatus::TesterLimited);
        assert!((g.throughput_fps.unwrap() - 1651.255).abs() < 1e-3);
    }

    #[test]
    fn line_rate_and_no_pass() {
        let mut fast = SimulatedDut::new(Capacity::Fps(5000.0), 1);
        let t = search(&mut fast, 64, &params(&[0.0], None));
        assert_eq!(offered(&t), vec![1000.0]);
        assert_eq!(t.goals[0].status, ThroughputStatus::LineRate);

        let mut lossy = SimulatedDut::new(Capacity::Fps(5000.0), 1);
        lossy.loss = LossModel::Random(0.5);
        let t = search(&mut lossy, 64, &params(&[0.0], Some(10)));
        assert_eq!(
            offered(&t),
            vec![1000.0, 500.0, 250.0, 125.0, 62.5, 31.25, 15.625, 7.8125]
        );
        let g = &t.goals[0];
        assert_eq!(g.status, ThroughputStatus::NoPass);
        assert_eq!(
            (g.throughput_fps, g.confirmation),
            (None, Confirmation::NotRun)
        );
    }

    /// A 50-frame buffer lets 1 s trials pass up to 350 fps, but a 10 s trial only up to
    /// 305 fps: the confirmation at 343.75 loses 388 of 3438 frames (11.3%), so the next one
    /// offers 343.75 × (1 − 0.1129) = 304.95 fps, which passes.
    #[test]
    fn failed_confirmation_steps_down_by_the_loss() {
        let mut dut = SimulatedDut::new(Capacity::Fps(300.0), 1);
        dut.buffer_frames = 50;
        let t = search(&mut dut, 64, &params(&[0.0], Some(10)));
        let o = offered(&t);
        assert_eq!(
            o[..8],
            [1000.0, 500.0, 250.0, 375.0, 312.5, 343.75, 359.375, 351.5625]
        );
        assert_eq!(o[8], 343.75);
        let expected = 343.75 - 343.75 * (388.0 / 3438.0);
        assert!((o[9] - expected).abs() < 1e-9, "{}", o[9]);
        assert_eq!(o.len(), 10);
        let g = &t.goals[0];
        assert_eq!(g.search_fps, Some(343.75));
        assert_eq!(g.confirmation, Confirmation::Passed);
        assert!((g.throughput_fps.unwrap() - expected).abs() < 1e-9);
    }

    fn rec(rate: f64, lost: u64) -> TrialRecord {
        use crate::rfc2544::trial::tests::way;
        let o = crate::rfc2544::trial::TrialOutcome {
            ways: vec![way(1000, 1000 - lost, rate)],
            warnings: vec![],
            invalid: None,
            dut: None,
            profile: None,
        };
        TrialRecord::paced(TrialPurpose::Search, 64, rate, Duration::from_secs(1), o)
    }

    /// A tester that stalls once: the repeat at the same rate is not tester-limited, so the
    /// first try is superseded and sets no ceiling.
    #[test]
    fn a_transient_tester_stall_is_retried_not_a_ceiling() {
        use crate::rfc2544::trial::TrialOutcome;
        struct StallOnce(SimulatedDut, bool);
        impl Trial for StallOnce {
            fn run(&mut self, f: u32, r: f64, d: Duration) -> anyhow::Result<TrialOutcome> {
                let mut o = self.0.run(f, r, d)?;
                if !self.1 {
                    self.1 = true;
                    o.ways[0].achieved_fps *= 0.9;
                }
                Ok(o)
            }
            fn burst(&mut self, f: u32, n: u64) -> anyhow::Result<TrialOutcome> {
                self.0.burst(f, n)
            }
        }
        let mut t = StallOnce(SimulatedDut::new(Capacity::Fps(300.0), 1), false);
        let tr = search(&mut t, 64, &params(&[0.0], None));
        let o = offered(&tr);
        assert_eq!(o[..3], [1000.0, 1000.0, 500.0]);
        assert!(tr.trials[0].tester_limited && !tr.trials[1].tester_limited);
        assert_eq!(tr.goals[0].search_fps, Some(296.875));
        assert_eq!(tr.goals[0].status, ThroughputStatus::DeviceLimit);
    }

    /// Loss inversion: a pass above a failure must not raise the lower bound.
    #[test]
    fn a_pass_above_a_failure_is_ignored() {
        let trials = vec![rec(800.0, 5), rec(900.0, 0), rec(400.0, 0)];
        let b = Bounds::derive(&trials, 0.0, 1000.0);
        assert_eq!(b.lo, Some(400.0));
        assert_eq!(b.fail, 800.0);
        assert_eq!(b.next_rate(1000.0), 600.0);
        assert_eq!(b.status(1000.0), ThroughputStatus::DeviceLimit);
    }

    #[test]
    fn a_trial_that_cannot_run_ends_the_search() {
        struct Broken;
        impl Trial for Broken {
            fn run(
                &mut self,
                _: u32,
                _: f64,
                _: Duration,
            ) -> anyhow::Result<crate::rfc2544::trial::TrialOutcome> {
                anyhow::bail!("server gone")
            }
            fn burst(
                &mut self,
                _: u32,
                _: u64,
            ) -> anyhow::Result<crate::rfc2544::trial::TrialOutcome> {
                anyhow::bail!("server gone")
            }
        }
        let t = search(&mut Broken, 64, &params(&[0.0], Some(10)));
        assert_eq!(t.error.as_deref(), Some("server gone"));
        assert_eq!(t.trials.len(), 1);
        assert_eq!(t.goals[0].confirmation, Confirmation::NotRun);
        assert_eq!(t.goals[0].throughput_fps, None);
    }

    /// A path that carries 64 frames per packet (UDP GSO through a virtual link): every trial
    /// is invalid, the search stops after the retries with no figure, and says why.
    #[test]
    fn super_packets_give_no_figure() {
        let mut dut = SimulatedDut::new(Capacity::Fps(300.0), 1);
        dut.segments_per_packet = 64;
        let t = search(&mut dut, 64, &params(&[0.0], Some(10)));
        // The first rate, tried 1 + TESTER_RETRIES times, then the search stops.
        assert_eq!(offered(&t), vec![1000.0; 1 + TESTER_RETRIES as usize]);
        assert!(t.trials.iter().all(|r| !r.valid() && !r.passes(1.0)));
        let why = t.invalid.as_deref().unwrap();
        assert!(why.contains("segmentation offload"), "{why}");
        let g = &t.goals[0];
        assert_eq!(g.status, ThroughputStatus::Invalid);
        assert_eq!(g.throughput_fps, None);
        assert_eq!(g.confirmation, Confirmation::NotRun);
        assert!(t.error.is_none());
    }

    /// One invalid trial (other traffic for a moment) is repeated at the same rate and does
    /// not count: the search goes on as if it never happened.
    #[test]
    fn a_transient_invalid_trial_is_repeated_and_ignored() {
        use crate::rfc2544::trial::TrialOutcome;
        struct InvalidOnce(SimulatedDut, bool);
        impl Trial for InvalidOnce {
            fn run(&mut self, f: u32, r: f64, d: Duration) -> anyhow::Result<TrialOutcome> {
                let mut o = self.0.run(f, r, d)?;
                if !self.1 {
                    self.1 = true;
                    o.invalid = Some("other traffic".into());
                }
                Ok(o)
            }
            fn burst(&mut self, f: u32, n: u64) -> anyhow::Result<TrialOutcome> {
                self.0.burst(f, n)
            }
        }
        let mut t = InvalidOnce(SimulatedDut::new(Capacity::Fps(300.0), 1), false);
        let with = search(&mut t, 64, &params(&[0.0], Some(10)));
        let mut clean = SimulatedDut::new(Capacity::Fps(300.0), 1);
        let without = search(&mut clean, 64, &params(&[0.0], Some(10)));
        assert_eq!(offered(&with)[0], offered(&with)[1]);
        assert_eq!(offered(&with)[1..], offered(&without)[..]);
        assert_eq!(with.goals, without.goals);
        assert!(with.invalid.is_none());
    }
}
