//! RFC 2544 §26.2 latency: at the throughput rate, the delay of a tagged frame, repeated.
//!
//! The RFC sends a stream at the throughput rate for at least 120 s, tags one frame after 60 s
//! and takes the time from when it was fully sent to when it arrived; the trial is repeated at
//! least 20 times and the average reported. linerate stamps *every* frame with its send time
//! (SmartBits' "SmartMetrics" idea), so besides the RFC figure (the frame sent half-way through
//! the trial, averaged over the trials) each trial also gives the minimum, mean, median, 99th
//! percentile and maximum over all its frames.
//!
//! The delay is measured from just before the tester's send call to when its receive call
//! returned the frame, on one clock (`CLOCK_MONOTONIC`), so both ends must share it: the client
//! and the server run on one machine (as in `linerate lab`), which linerate checks by the
//! kernel's boot id. Otherwise no latency is reported (see docs/rfc2544.md).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::trial::{Trial, TrialPurpose, TrialRecord, Way};

/// How to measure latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyParams {
    /// Trials (RFC 2544: at least 20).
    pub repeat: u32,
    /// Length of each trial (RFC 2544: at least 120 s).
    pub duration: Duration,
}

/// Latency of one direction over all trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WayLatency {
    /// Which direction.
    pub way: Way,
    /// RFC 2544 §26.2 figure: mean delay of the tagged frames, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagged_mean_ns: Option<f64>,
    /// Trials whose tagged frame arrived.
    pub tagged_count: u32,
    /// Mean of the trials' mean delays, nanoseconds.
    pub mean_ns: f64,
    /// Smallest delay of any frame, nanoseconds.
    pub min_ns: u64,
    /// Largest 99th percentile of a trial, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_max_ns: Option<u64>,
    /// Largest delay of any frame, nanoseconds.
    pub max_ns: u64,
}

/// Latency trials of one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyTrace {
    /// Frame size, bytes.
    pub frame_size: u32,
    /// Offered rate per direction (the throughput), frames per second.
    pub rate_fps: f64,
    /// Every trial.
    pub trials: Vec<TrialRecord>,
    /// Per direction; empty when no delay could be measured.
    pub ways: Vec<WayLatency>,
    /// Why it stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs `p.repeat` tagged trials at `rate_fps` and summarises the delays.
pub fn measure(
    trial: &mut dyn Trial,
    frame: u32,
    rate_fps: f64,
    p: &LatencyParams,
) -> LatencyTrace {
    let mut trace = LatencyTrace {
        frame_size: frame,
        rate_fps,
        trials: Vec::new(),
        ways: Vec::new(),
        error: None,
    };
    for _ in 0..p.repeat.max(1) {
        match trial.run_tagged(frame, rate_fps, p.duration) {
            Ok(o) => trace.trials.push(TrialRecord::paced(
                TrialPurpose::Latency,
                frame,
                rate_fps,
                p.duration,
                o,
            )),
            Err(e) => {
                trace.error = Some(format!("{e:#}"));
                trace.trials.push(TrialRecord::failed(
                    TrialPurpose::Latency,
                    frame,
                    Some(rate_fps),
                    &e,
                ));
                break;
            }
        }
    }
    trace.ways = [Way::Forward, Way::Reverse]
        .into_iter()
        .filter_map(|w| summarize(&trace.trials, w))
        .collect();
    trace
}

fn summarize(trials: &[TrialRecord], way: Way) -> Option<WayLatency> {
    let delays: Vec<_> = trials
        .iter()
        .flat_map(|t| t.ways.iter())
        .filter(|w| w.way == way)
        .filter_map(|w| w.delay.as_ref())
        .collect();
    if delays.is_empty() {
        return None;
    }
    let tagged: Vec<f64> = delays
        .iter()
        .filter_map(|d| d.tagged_ns)
        .map(|t| t as f64)
        .collect();
    let n = delays.len() as f64;
    Some(WayLatency {
        way,
        tagged_mean_ns: (!tagged.is_empty())
            .then(|| tagged.iter().sum::<f64>() / tagged.len() as f64),
        tagged_count: u32::try_from(tagged.len()).unwrap_or(u32::MAX),
        mean_ns: delays.iter().map(|d| d.mean_ns).sum::<f64>() / n,
        min_ns: delays.iter().map(|d| d.min_ns).min().unwrap_or(0),
        p99_max_ns: delays.iter().filter_map(|d| d.p99_ns).max(),
        max_ns: delays.iter().map(|d| d.max_ns).max().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc2544::sim::{Capacity, SimulatedDut};

    #[test]
    fn repeats_and_averages_the_tagged_frames() {
        let mut dut = SimulatedDut::new(Capacity::Fps(10_000.0), 3);
        dut.delay_ns = 25_000;
        dut.bidirectional = true;
        let p = LatencyParams {
            repeat: 4,
            duration: Duration::from_secs(2),
        };
        let t = measure(&mut dut, 512, 9_000.0, &p);
        assert_eq!(t.trials.len(), 4);
        assert!(t.trials.iter().all(|t| t.purpose == TrialPurpose::Latency));
        assert_eq!(t.ways.len(), 2);
        for w in &t.ways {
            assert_eq!(w.tagged_count, 4);
            assert_eq!(w.tagged_mean_ns, Some(25_000.0));
            assert_eq!((w.min_ns, w.max_ns), (25_000, 25_000));
        }
    }

    #[test]
    fn no_delay_measured_gives_no_figures() {
        struct NoDelay(SimulatedDut);
        impl Trial for NoDelay {
            fn run(
                &mut self,
                f: u32,
                r: f64,
                d: Duration,
            ) -> anyhow::Result<super::super::trial::TrialOutcome> {
                self.0.run(f, r, d)
            }
            fn burst(
                &mut self,
                f: u32,
                n: u64,
            ) -> anyhow::Result<super::super::trial::TrialOutcome> {
                self.0.burst(f, n)
            }
        }
        let mut t = NoDelay(SimulatedDut::new(Capacity::Fps(1e4), 1));
        let p = LatencyParams {
            repeat: 2,
            duration: Duration::from_secs(1),
        };
        let tr = measure(&mut t, 64, 100.0, &p);
        assert_eq!(tr.trials.len(), 2);
        assert!(tr.ways.is_empty());
    }
}
