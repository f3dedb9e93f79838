//! RFC 2544 §26.4 back-to-back frames: the longest burst at minimum inter-frame gap that the
//! device forwards without loss, repeated and averaged.
//!
//! Each repetition is a binary search over the burst length in frames: the first burst is
//! `max_frames` long (by default two seconds at line rate, RFC 2544's shortest trial); a burst
//! that loses frames lowers the upper bound, one that does not raises the lower bound, until
//! they are within `max(1, max_frames / 1000)` frames. The result of a repetition is the
//! longest burst that passed (0 if even the shortest lost frames).
//!
//! "Minimum gap" for a software tester means "as fast as it can send": bursts are unpaced. A
//! burst the tester sent at less than 99% of the line's theoretical rate was not back to back,
//! and the repetition is marked tester-limited.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::trial::{Trial, TrialPurpose, TrialRecord, TESTER_TOLERANCE};

/// How to run the back-to-back test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackToBackParams {
    /// Theoretical maximum of the line for this frame size, frames per second.
    pub line_fps: f64,
    /// Longest burst tried, frames.
    pub max_frames: u64,
    /// Repetitions (RFC 2544: at least 50).
    pub repeat: u32,
    /// Most bursts per repetition.
    pub max_trials: u32,
}

/// One repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BurstResult {
    /// Longest burst forwarded without loss, frames.
    pub frames: u64,
    /// The longest burst tried passed: the device's limit is at least this.
    pub at_max: bool,
    /// Some burst of this repetition was sent slower than 99% of line rate.
    pub tester_limited: bool,
    /// Bursts sent.
    pub trials: u32,
}

/// The back-to-back result of one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackToBackTrace {
    /// Frame size, bytes.
    pub frame_size: u32,
    /// One per repetition.
    pub bursts: Vec<BurstResult>,
    /// Mean of the repetitions' results, frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_frames: Option<f64>,
    /// Sample standard deviation, frames (absent with fewer than two repetitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev_frames: Option<f64>,
    /// Every burst.
    pub trials: Vec<TrialRecord>,
    /// Why it stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs the back-to-back test for one frame size.
pub fn measure(trial: &mut dyn Trial, frame: u32, p: &BackToBackParams) -> BackToBackTrace {
    let mut trace = BackToBackTrace {
        frame_size: frame,
        bursts: Vec::new(),
        mean_frames: None,
        stddev_frames: None,
        trials: Vec::new(),
        error: None,
    };
    let max = p.max_frames.max(1);
    let resolution = (max / 1000).max(1);
    for _ in 0..p.repeat.max(1) {
        let mut lo = 0u64;
        let mut hi = max + 1;
        let mut n = max;
        let mut result = BurstResult {
            frames: 0,
            at_max: false,
            tester_limited: false,
            trials: 0,
        };
        while hi - lo > resolution && result.trials < p.max_trials.max(1) {
            let record = match trial.burst(frame, n) {
                Ok(o) => burst_record(frame, n, o, p.line_fps),
                Err(e) => {
                    trace.error = Some(format!("{e:#}"));
                    trace.trials.push(TrialRecord::failed(
                        TrialPurpose::BackToBack,
                        frame,
                        None,
                        &e,
                    ));
                    break;
                }
            };
            result.trials += 1;
            result.tester_limited |= record.tester_limited;
            if record.passes(0.0) {
                lo = n;
            } else {
                hi = n;
            }
            trace.trials.push(record);
            n = lo + (hi - lo) / 2;
        }
        if trace.error.is_some() {
            break;
        }
        result.frames = lo;
        result.at_max = lo == max;
        trace.bursts.push(result);
    }
    let samples: Vec<f64> = trace.bursts.iter().map(|b| b.frames as f64).collect();
    if let Some(s) = linerate_stats::Summary::from_samples(&samples) {
        trace.mean_frames = Some(s.mean);
        trace.stddev_frames = s.stddev;
    }
    trace
}

fn burst_record(
    frame: u32,
    frames: u64,
    outcome: super::trial::TrialOutcome,
    line_fps: f64,
) -> TrialRecord {
    let achieved = outcome.achieved_fps();
    TrialRecord {
        purpose: TrialPurpose::BackToBack,
        frame_size: frame,
        offered_fps: None,
        duration_ms: None,
        burst_frames: Some(frames),
        tester_limited: achieved < line_fps * (1.0 - TESTER_TOLERANCE),
        effective_fps: if achieved.is_finite() { achieved } else { 0.0 },
        loss_percent: outcome.device_loss_ratio() * 100.0,
        ways: outcome.ways,
        error: None,
        invalid: outcome.invalid,
        warnings: outcome.warnings,
        dut: outcome.dut,
        profile: outcome.profile,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc2544::sim::{Capacity, SimulatedDut};

    #[test]
    fn finds_the_buffer_depth() {
        // Tester at 10× capacity, buffer 100 frames: a burst of n passes while
        // floor(n / 10) + 100 >= n, i.e. n <= 111.
        let mut dut = SimulatedDut::new(Capacity::Fps(1000.0), 1);
        dut.tester_max_fps = 10_000.0;
        dut.buffer_frames = 100;
        let p = BackToBackParams {
            line_fps: 10_000.0,
            max_frames: 1000,
            repeat: 3,
            max_trials: 40,
        };
        let t = measure(&mut dut, 64, &p);
        assert_eq!(t.bursts.len(), 3);
        for b in &t.bursts {
            assert_eq!(b.frames, 111);
            assert!(!b.at_max && !b.tester_limited);
        }
        assert_eq!(t.mean_frames, Some(111.0));
        assert_eq!(t.stddev_frames, Some(0.0));
        // Bursts of the first repetition: 1000 fails, then halving towards 111.
        let lens: Vec<u64> = t
            .trials
            .iter()
            .take(11)
            .filter_map(|t| t.burst_frames)
            .collect();
        assert_eq!(
            lens,
            vec![1000, 500, 250, 125, 62, 93, 109, 117, 113, 111, 112]
        );
    }

    #[test]
    fn a_slow_tester_is_flagged() {
        let mut dut = SimulatedDut::new(Capacity::Fps(1e9), 1);
        dut.tester_max_fps = 5_000.0;
        let p = BackToBackParams {
            line_fps: 10_000.0,
            max_frames: 500,
            repeat: 1,
            max_trials: 40,
        };
        let t = measure(&mut dut, 64, &p);
        assert_eq!(t.bursts.len(), 1);
        assert!(t.bursts[0].at_max && t.bursts[0].tester_limited);
        assert_eq!(t.trials.len(), 1);
    }
}
