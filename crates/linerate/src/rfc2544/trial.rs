//! One trial: offer frames of one size at one rate (or in one burst) and count what comes back.
//!
//! [`Trial`] is the seam between the benchmarks (pure search logic, tested against
//! [`super::sim::SimulatedDut`]) and the network ([`super::net::NetTrial`], which runs each
//! trial as a UDP stream test against `linerate serve` beyond the device).
//!
//! Every trial checks the tester itself (RFC 2544 asks the tester to offer a known load;
//! NFVbench's rule that a tester short of its offered rate must not be read as the device's
//! limit): the rate the sender actually reached must be within [`TESTER_TOLERANCE`] of the rate
//! offered, or the trial is *tester-limited*. Frames dropped at the tester's own receiving
//! socket (`Udp.RcvbufErrors` on the receiving host) are counted apart and are not charged to
//! the device.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A trial whose sender reached less than `(1 − TESTER_TOLERANCE)` of the offered rate is
/// tester-limited.
pub const TESTER_TOLERANCE: f64 = 0.01;

/// Runs trials. Implementations wait between trials as the plan says (RFC 2544 §23).
pub trait Trial {
    /// Offers `offered_fps` frames per second of `frame` bytes in each tested direction for
    /// `dur`. A non-finite `offered_fps` sends as fast as the tester can (no pacing).
    fn run(&mut self, frame: u32, offered_fps: f64, dur: Duration) -> anyhow::Result<TrialOutcome>;

    /// Like [`Trial::run`], and also measures the one-way delay of the frames, with the frame
    /// sent half-way through the trial as the RFC 2544 §26.2 tagged frame. The default does not
    /// measure delay.
    fn run_tagged(
        &mut self,
        frame: u32,
        offered_fps: f64,
        dur: Duration,
    ) -> anyhow::Result<TrialOutcome> {
        self.run(frame, offered_fps, dur)
    }

    /// Sends `frames` frames back to back (no pacing: the tester's minimum gap) in each tested
    /// direction.
    fn burst(&mut self, frame: u32, frames: u64) -> anyhow::Result<TrialOutcome>;
}

/// Which way frames went, seen from the tester (the `linerate rfc2544` client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// Client → device → server.
    Forward,
    /// Server → device → client.
    Reverse,
}

impl Way {
    /// Short label for tables: `a→b` style.
    pub fn label(self) -> &'static str {
        match self {
            Way::Forward => "fwd",
            Way::Reverse => "rev",
        }
    }
}

pub use linerate_wire::report::DelayReport;

/// What happened to one direction of a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WayOutcome {
    /// Which direction.
    pub way: Way,
    /// Frames the tester sent.
    pub sent: u64,
    /// Distinct frames that came back (duplicates not counted).
    pub received: u64,
    /// Frames dropped at the tester's own receiving socket (receive-buffer overflow on the
    /// receiving host during the trial); absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_rx_dropped: Option<u64>,
    /// Rate the sender reached, frames per second (sent over its active time).
    pub achieved_fps: f64,
    /// CPU of the sending end's test threads, percent of one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cpu_percent: Option<f64>,
    /// One-way delay (latency trials on a shared clock only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DelayReport>,
}

impl WayOutcome {
    /// Frames lost in the device: not received, minus those the tester's socket dropped.
    pub fn device_lost(&self) -> u64 {
        self.sent
            .saturating_sub(self.received)
            .saturating_sub(self.tester_rx_dropped.unwrap_or(0))
    }

    /// Frames lost in the device as a fraction of the frames sent (0 when nothing was sent).
    pub fn device_loss_ratio(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.device_lost() as f64 / self.sent as f64
        }
    }
}

/// What a trial measured, per direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialOutcome {
    /// One entry per tested direction.
    pub ways: Vec<WayOutcome>,
    /// What could not be measured or looked wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl TrialOutcome {
    /// Device loss over all directions, as a fraction of all frames sent.
    pub fn device_loss_ratio(&self) -> f64 {
        let sent: u64 = self.ways.iter().map(|w| w.sent).sum();
        let lost: u64 = self.ways.iter().map(WayOutcome::device_lost).sum();
        if sent == 0 {
            0.0
        } else {
            lost as f64 / sent as f64
        }
    }

    /// Whether every direction lost at most `max_loss_ratio` of its frames in the device
    /// (RFC 2544 counts each direction; a bidirectional trial passes only if both do).
    pub fn passes(&self, max_loss_ratio: f64) -> bool {
        ways_pass(&self.ways, max_loss_ratio)
    }

    /// The slowest sender's rate, frames per second (per direction).
    pub fn achieved_fps(&self) -> f64 {
        slowest(&self.ways)
    }

    /// Whether some sender fell short of `offered_fps` by more than [`TESTER_TOLERANCE`].
    pub fn tester_limited(&self, offered_fps: f64) -> bool {
        offered_fps.is_finite() && self.achieved_fps() < offered_fps * (1.0 - TESTER_TOLERANCE)
    }
}

/// A trial as kept in the record: what was asked and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialRecord {
    /// What the trial was for.
    pub purpose: TrialPurpose,
    /// Frame size, bytes.
    pub frame_size: u32,
    /// Offered rate per direction, frames per second; absent for unpaced trials and bursts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_fps: Option<f64>,
    /// Trial length, milliseconds (bursts: absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Burst length, frames per direction (back-to-back only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_frames: Option<u64>,
    /// The sender fell short of the offered rate by more than 1%.
    pub tester_limited: bool,
    /// The rate the trial is counted at per direction: the offered rate, or what the tester
    /// reached when it was tester-limited.
    pub effective_fps: f64,
    /// Device loss over all directions, percent of frames sent.
    pub loss_percent: f64,
    /// Per direction.
    pub ways: Vec<WayOutcome>,
    /// Why the trial failed to run, if it did (the search stops there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What could not be measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Why a trial ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialPurpose {
    /// Unpaced: the tester's own highest rate for this size.
    Calibration,
    /// A binary-search step (short trial).
    Search,
    /// Full-length confirmation of a search result.
    Confirmation,
    /// Latency at the throughput rate.
    Latency,
    /// One step of the frame-loss-rate curve.
    FrameLoss,
    /// One back-to-back burst.
    BackToBack,
}

impl TrialRecord {
    /// Builds the record of a paced (or unpaced, when `offered_fps` is not finite) trial.
    pub fn paced(
        purpose: TrialPurpose,
        frame: u32,
        offered_fps: f64,
        dur: Duration,
        outcome: TrialOutcome,
    ) -> TrialRecord {
        let tester_limited = outcome.tester_limited(offered_fps);
        let effective_fps = if tester_limited || !offered_fps.is_finite() {
            outcome.achieved_fps()
        } else {
            offered_fps
        };
        TrialRecord {
            purpose,
            frame_size: frame,
            offered_fps: offered_fps.is_finite().then_some(offered_fps),
            duration_ms: Some(u64::try_from(dur.as_millis()).unwrap_or(u64::MAX)),
            burst_frames: None,
            tester_limited,
            effective_fps: finite_or_zero(effective_fps),
            loss_percent: outcome.device_loss_ratio() * 100.0,
            ways: outcome.ways,
            error: None,
            warnings: outcome.warnings,
        }
    }

    /// The record of a trial that could not run.
    pub fn failed(
        purpose: TrialPurpose,
        frame: u32,
        offered_fps: Option<f64>,
        error: &anyhow::Error,
    ) -> TrialRecord {
        TrialRecord {
            purpose,
            frame_size: frame,
            offered_fps: offered_fps.filter(|f| f.is_finite()),
            duration_ms: None,
            burst_frames: None,
            tester_limited: false,
            effective_fps: 0.0,
            loss_percent: 0.0,
            ways: Vec::new(),
            error: Some(format!("{error:#}")),
            warnings: Vec::new(),
        }
    }

    /// Whether the device lost at most `max_loss_ratio` of the frames in every direction.
    pub fn passes(&self, max_loss_ratio: f64) -> bool {
        self.error.is_none() && ways_pass(&self.ways, max_loss_ratio)
    }
}

/// The slowest sender's rate over `ways`, frames per second (0 when there are none).
pub fn slowest(ways: &[WayOutcome]) -> f64 {
    ways.iter()
        .map(|w| w.achieved_fps)
        .reduce(f64::min)
        .unwrap_or(0.0)
}

/// Every direction sent frames and lost at most `max_loss_ratio` of them in the device.
fn ways_pass(ways: &[WayOutcome], max_loss_ratio: f64) -> bool {
    !ways.is_empty()
        && ways
            .iter()
            .all(|w| w.sent > 0 && w.device_loss_ratio() <= max_loss_ratio)
}

fn finite_or_zero(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn way(sent: u64, received: u64, fps: f64) -> WayOutcome {
        WayOutcome {
            way: Way::Forward,
            sent,
            received,
            tester_rx_dropped: Some(0),
            achieved_fps: fps,
            sender_cpu_percent: None,
            delay: None,
        }
    }

    #[test]
    fn tester_socket_drops_are_not_device_loss() {
        let mut w = way(1000, 990, 1000.0);
        assert_eq!(w.device_lost(), 10);
        w.tester_rx_dropped = Some(4);
        assert_eq!(w.device_lost(), 6);
        assert!((w.device_loss_ratio() - 0.006).abs() < 1e-12);
        w.tester_rx_dropped = Some(50);
        assert_eq!(w.device_lost(), 0);
    }

    #[test]
    fn tester_check_is_one_percent() {
        let o = TrialOutcome {
            ways: vec![way(990, 990, 990.0)],
            warnings: vec![],
        };
        // 990 of 1000 offered is exactly 1% short: still the tester's offered load.
        assert!(!o.tester_limited(1000.0));
        assert!(o.tester_limited(1000.2));
        assert!(!o.tester_limited(f64::INFINITY));
        let r = TrialRecord::paced(TrialPurpose::Search, 64, 2000.0, Duration::from_secs(1), o);
        assert!(r.tester_limited);
        assert_eq!(r.effective_fps, 990.0);
        assert!(r.passes(0.0));
    }

    #[test]
    fn bidirectional_trials_pass_only_if_both_ways_do() {
        let mut rev = way(1000, 999, 1000.0);
        rev.way = Way::Reverse;
        let o = TrialOutcome {
            ways: vec![way(1000, 1000, 1000.0), rev],
            warnings: vec![],
        };
        assert!(!o.passes(0.0));
        assert!(o.passes(0.001));
        assert!((o.device_loss_ratio() - 0.0005).abs() < 1e-12);
    }
}
