//! RFC 2544 §26.3 frame loss rate: loss over the range of offered loads.
//!
//! The first trial offers 100% of the theoretical maximum for the frame size; each next trial
//! offers `step_percent` less (the RFC asks for steps no coarser than 10%) until two trials in
//! a row lose nothing, or the lowest step was tried. Loss is `(sent − received) × 100 / sent`
//! with "sent" the frames the tester really sent, and frames its own receiving socket dropped
//! not charged to the device. A step the tester could not drive is marked tester-limited.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::trial::{Trial, TrialPurpose, TrialRecord};

/// How to run the frame loss rate test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameLossParams {
    /// Theoretical maximum of the line for this frame size, frames per second.
    pub line_fps: f64,
    /// Step between offered loads, percent of `line_fps`.
    pub step_percent: f64,
    /// Length of each trial.
    pub duration: Duration,
}

/// One point of the loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameLossPoint {
    /// Offered load, percent of the theoretical maximum.
    pub offered_percent: f64,
    /// Offered rate per direction, frames per second.
    pub offered_fps: f64,
    /// Rate the tester reached (the slowest direction), frames per second.
    pub achieved_fps: f64,
    /// The tester fell short of the offered load by more than 1%.
    pub tester_limited: bool,
    /// Frames lost in the device, percent of frames sent (all directions).
    pub loss_percent: f64,
}

/// Why the test stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameLossEnd {
    /// Two trials in a row lost nothing (RFC 2544's stopping rule).
    TwoWithoutLoss,
    /// The lowest step was reached.
    LowestStep,
    /// A trial could not run.
    Error,
}

/// The loss curve of one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameLossTrace {
    /// Frame size, bytes.
    pub frame_size: u32,
    /// One point per trial, highest load first.
    pub points: Vec<FrameLossPoint>,
    /// Every trial.
    pub trials: Vec<TrialRecord>,
    /// Why it stopped.
    pub end: FrameLossEnd,
    /// The error that stopped it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs the frame loss rate test for one frame size.
pub fn measure(trial: &mut dyn Trial, frame: u32, p: &FrameLossParams) -> FrameLossTrace {
    let step = p.step_percent.clamp(0.1, 100.0);
    let mut trace = FrameLossTrace {
        frame_size: frame,
        points: Vec::new(),
        trials: Vec::new(),
        end: FrameLossEnd::LowestStep,
        error: None,
    };
    let mut clean_in_a_row = 0;
    let steps = (100.0 / step).round().max(1.0) as u32;
    for i in 0..steps {
        let percent = 100.0 - f64::from(i) * step;
        if percent <= 0.0 {
            break;
        }
        let fps = p.line_fps * percent / 100.0;
        let record = match trial.run(frame, fps, p.duration) {
            Ok(o) => TrialRecord::paced(TrialPurpose::FrameLoss, frame, fps, p.duration, o),
            Err(e) => {
                trace.error = Some(format!("{e:#}"));
                trace.end = FrameLossEnd::Error;
                trace.trials.push(TrialRecord::failed(
                    TrialPurpose::FrameLoss,
                    frame,
                    Some(fps),
                    &e,
                ));
                break;
            }
        };
        trace.points.push(FrameLossPoint {
            offered_percent: percent,
            offered_fps: fps,
            achieved_fps: super::trial::slowest(&record.ways),
            tester_limited: record.tester_limited,
            loss_percent: record.loss_percent,
        });
        let clean = record.passes(0.0);
        trace.trials.push(record);
        clean_in_a_row = if clean { clean_in_a_row + 1 } else { 0 };
        if clean_in_a_row == 2 {
            trace.end = FrameLossEnd::TwoWithoutLoss;
            break;
        }
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc2544::sim::{Capacity, LossModel, SimulatedDut};

    #[test]
    fn steps_down_until_two_clean_trials() {
        // Capacity 70% of line: 100, 90, 80 lose; 70 and 60 are clean → stop after 60.
        let mut dut = SimulatedDut::new(Capacity::Fps(700.0), 1);
        let p = FrameLossParams {
            line_fps: 1000.0,
            step_percent: 10.0,
            duration: Duration::from_secs(10),
        };
        let t = measure(&mut dut, 64, &p);
        let offered: Vec<f64> = t.points.iter().map(|p| p.offered_percent).collect();
        assert_eq!(offered, vec![100.0, 90.0, 80.0, 70.0, 60.0]);
        assert_eq!(t.end, FrameLossEnd::TwoWithoutLoss);
        // At 100%: 10,000 sent, 7,000 forwarded → 30% loss.
        assert!((t.points[0].loss_percent - 30.0).abs() < 1e-9);
        // At 80%: 8,000 sent → 12.5% loss.
        assert!((t.points[2].loss_percent - 12.5).abs() < 1e-9);
        assert_eq!(t.points[3].loss_percent, 0.0);
    }

    #[test]
    fn random_loss_never_stops_early() {
        let mut dut = SimulatedDut::new(Capacity::Fps(1e9), 5);
        dut.loss = LossModel::Random(0.05);
        let p = FrameLossParams {
            line_fps: 1000.0,
            step_percent: 25.0,
            duration: Duration::from_secs(4),
        };
        let t = measure(&mut dut, 1518, &p);
        assert_eq!(t.points.len(), 4);
        assert_eq!(t.end, FrameLossEnd::LowestStep);
        for pt in &t.points {
            assert!((pt.loss_percent - 5.0).abs() < 0.1, "{pt:?}");
        }
    }
}
