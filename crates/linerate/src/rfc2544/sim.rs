//! A simulated device under test, for deterministic tests of the benchmarks (smoltcp's
//! netsim idea applied to the RFC 2544 search).
//!
//! The model, per direction and trial:
//!
//! * the tester sends at `min(offered, tester_max_fps)`; with `pushback` the device slows the
//!   sender to its capacity instead of dropping (what a Linux shaper does to a sender on the
//!   same host, see the lab notes);
//! * the device forwards at most `capacity × duration + buffer_frames` frames;
//! * of those, [`LossModel::Random`] drops a fraction: `floor(n × ratio)` frames plus one more
//!   with probability equal to the fractional part, drawn from a SplitMix64 generator seeded
//!   with `seed`, so the same simulator gives the same trial sequence every time;
//! * every frame is delayed by `delay_ns`.

use std::time::Duration;

use anyhow::bail;

use super::trial::{DelayReport, Trial, TrialOutcome, Way, WayOutcome};

/// How much the device forwards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Capacity {
    /// A packet-rate limit (a CPU-bound router): frames per second per direction.
    Fps(f64),
    /// A bit-rate limit that counts frames without FCS, as tbf does: bits per second.
    Bps(f64),
}

/// Random loss on top of the capacity limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// None.
    None,
    /// This fraction of forwarded frames is lost.
    Random(f64),
}

/// A simulated device (see the module docs).
#[derive(Debug, Clone)]
pub struct SimulatedDut {
    /// Forwarding capacity per direction.
    pub capacity: Capacity,
    /// Extra loss.
    pub loss: LossModel,
    /// Seed of the loss draws.
    pub seed: u64,
    /// The tester's own highest send rate, frames per second (infinite: unlimited).
    pub tester_max_fps: f64,
    /// Above capacity, slow the sender down instead of dropping.
    pub pushback: bool,
    /// Frames the device can queue (absorbs bursts).
    pub buffer_frames: u64,
    /// Test both directions at once.
    pub bidirectional: bool,
    /// One-way delay of every frame, nanoseconds.
    pub delay_ns: u64,
    /// Frames per packet on the path (1 = honest frames; 64 = UDP GSO super-packets): the
    /// interface counts `sent / segments` packets, and the cross-check marks the trial
    /// invalid.
    pub segments_per_packet: u64,
    rng: u64,
}

impl SimulatedDut {
    /// A device with `capacity`, no loss, an unlimited tester, no buffer, one direction.
    pub fn new(capacity: Capacity, seed: u64) -> SimulatedDut {
        SimulatedDut {
            capacity,
            loss: LossModel::None,
            seed,
            tester_max_fps: f64::INFINITY,
            pushback: false,
            buffer_frames: 0,
            bidirectional: false,
            delay_ns: 10_000,
            segments_per_packet: 1,
            rng: seed,
        }
    }

    /// Capacity in frames per second for `frame`-byte frames.
    pub fn capacity_fps(&self, frame: u32) -> f64 {
        match self.capacity {
            Capacity::Fps(f) => f,
            Capacity::Bps(b) => b / (8.0 * f64::from(frame.saturating_sub(4).max(1))),
        }
    }

    /// SplitMix64 (Steele, Lea, Flood 2014), as a float in [0, 1).
    fn next_unit(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn random_loss(&mut self, forwarded: u64) -> u64 {
        match self.loss {
            LossModel::None => 0,
            LossModel::Random(ratio) => {
                let expected = forwarded as f64 * ratio.clamp(0.0, 1.0);
                let whole = expected.floor();
                let extra = u64::from(self.next_unit() < expected - whole);
                (whole as u64 + extra).min(forwarded)
            }
        }
    }

    fn ways(&self) -> Vec<Way> {
        if self.bidirectional {
            vec![Way::Forward, Way::Reverse]
        } else {
            vec![Way::Forward]
        }
    }

    fn way(&mut self, way: Way, sent: u64, accepted: u64, fps: f64, tag: bool) -> WayOutcome {
        let forwarded = sent.min(accepted);
        let received = forwarded - self.random_loss(forwarded);
        WayOutcome {
            way,
            sent,
            received,
            tester_rx_dropped: Some(0),
            achieved_fps: fps,
            sender_cpu_percent: None,
            tx_path: None,
            raw_tx: None,
            iface_tx_packets: Some(sent / self.segments_per_packet.max(1)),
            iface_rx_packets: Some(received / self.segments_per_packet.max(1)),
            delay: (tag && received > 0).then_some(DelayReport {
                samples: received,
                min_ns: self.delay_ns,
                mean_ns: self.delay_ns as f64,
                p50_ns: Some(self.delay_ns),
                p99_ns: Some(self.delay_ns),
                max_ns: self.delay_ns,
                tagged_ns: Some(self.delay_ns),
            }),
        }
    }

    fn paced(
        &mut self,
        frame: u32,
        offered: f64,
        dur: Duration,
        tag: bool,
    ) -> anyhow::Result<TrialOutcome> {
        let cap = self.capacity_fps(frame);
        let mut fps = offered.min(self.tester_max_fps);
        if !fps.is_finite() {
            bail!("simulated tester has no maximum rate: set tester_max_fps for unpaced trials");
        }
        if self.pushback {
            fps = fps.min(cap);
        }
        let secs = dur.as_secs_f64();
        let sent = (fps * secs).round() as u64;
        let accepted = (cap * secs).round() as u64 + self.buffer_frames;
        let ways = self
            .ways()
            .into_iter()
            .map(|w| self.way(w, sent, accepted, fps, tag))
            .collect();
        Ok(super::trial::checked(ways, Vec::new(), &|_, _| {
            "the simulated interface".into()
        }))
    }
}

impl Trial for SimulatedDut {
    fn run(&mut self, frame: u32, offered_fps: f64, dur: Duration) -> anyhow::Result<TrialOutcome> {
        self.paced(frame, offered_fps, dur, false)
    }

    fn run_tagged(
        &mut self,
        frame: u32,
        offered_fps: f64,
        dur: Duration,
    ) -> anyhow::Result<TrialOutcome> {
        self.paced(frame, offered_fps, dur, true)
    }

    fn burst(&mut self, frame: u32, frames: u64) -> anyhow::Result<TrialOutcome> {
        let fps = self.tester_max_fps;
        if !fps.is_finite() || fps <= 0.0 {
            bail!("simulated tester has no maximum rate: set tester_max_fps for bursts");
        }
        let cap = self.capacity_fps(frame);
        // While the burst arrives the device drains at its capacity.
        let drained = (frames as f64 * (cap / fps).min(1.0)).floor() as u64;
        let accepted = drained + self.buffer_frames;
        let ways = self
            .ways()
            .into_iter()
            .map(|w| self.way(w, frames, accepted, fps, false))
            .collect();
        Ok(super::trial::checked(ways, Vec::new(), &|_, _| {
            "the simulated interface".into()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws() {
        let mut a = SimulatedDut::new(Capacity::Fps(1000.0), 7);
        a.loss = LossModel::Random(0.0123);
        let mut b = a.clone();
        for _ in 0..20 {
            let x = a.run(64, 900.0, Duration::from_millis(1300)).unwrap();
            let y = b.run(64, 900.0, Duration::from_millis(1300)).unwrap();
            assert_eq!(x, y);
        }
    }

    #[test]
    fn capacity_and_pushback() {
        let mut d = SimulatedDut::new(Capacity::Bps(20e6), 1);
        // tbf counts 1514 bytes of a 1518-byte frame: 20e6 / (8 × 1514) = 1651.25 fps.
        assert!((d.capacity_fps(1518) - 1651.255).abs() < 1e-3);
        let o = d.run(1518, 2000.0, Duration::from_secs(1)).unwrap();
        assert_eq!((o.ways[0].sent, o.ways[0].received), (2000, 1651));
        d.pushback = true;
        let o = d.run(1518, 2000.0, Duration::from_secs(1)).unwrap();
        assert_eq!((o.ways[0].sent, o.ways[0].received), (1651, 1651));
        assert!(o.tester_limited(2000.0));
    }

    #[test]
    fn bursts_fill_the_buffer() {
        let mut d = SimulatedDut::new(Capacity::Fps(1000.0), 1);
        d.tester_max_fps = 10_000.0;
        d.buffer_frames = 100;
        // A burst of 200 at 10× capacity: 20 drained + 100 buffered = 120 forwarded.
        let o = d.burst(64, 200).unwrap();
        assert_eq!(o.ways[0].received, 120);
        let o = d.burst(64, 110).unwrap();
        assert_eq!(o.ways[0].received, 110);
    }
}
