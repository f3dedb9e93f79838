//! One trial: offer frames of one size at one rate (or in one burst) and count what comes back.
//!
//! [`Trial`] is the seam between the benchmarks (pure search logic, tested against
//! [`super::sim::SimulatedDut`]) and the network (`app::rfc2544::net::NetTrial`, which runs
//! each trial as a UDP stream test against `linerate serve` beyond the device).
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

use crate::model::dut::DutCounters;
use linerate_wire::profile::ProfileReport;

/// The tester's two ends' profiles of one trial's measured window (`--profile`): the
/// client (this host, the generator of the forward direction) and the server beyond the
/// device. Either is absent, with a warning in the trial, when that end could not or was not
/// allowed to profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialProfile {
    /// This end's profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ProfileReport>,
    /// The server's profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ProfileReport>,
}

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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
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

pub use linerate_wire::report::{DelayReport, RawTx, TxPath};

/// Largest disagreement between the frames a trial counted and the packets an interface
/// counted, as a fraction of the frames, before the trial is invalid.
pub const COUNT_TOLERANCE: f64 = 0.02;
/// Packets an interface may carry beyond the frames, TCP and ICMP without a complaint:
/// address resolution (ARP is in no protocol counter) and the like.
pub const COUNT_SLACK_PACKETS: u64 = 8;

/// Which end of a direction an interface count belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CountedAt {
    /// The sender's egress interface (`tx_packets`).
    SenderTx,
    /// The receiver's ingress interface (`rx_packets`).
    ReceiverRx,
}

/// The cross-check of one count (pure): `frames` that linerate counted against `packets`
/// that the interface `iface` counted over the trial (with the host's TCP and ICMP packets
/// already taken off). `None` when they agree within [`COUNT_TOLERANCE`] (and
/// [`COUNT_SLACK_PACKETS`] above); otherwise why the trial's counts cannot be trusted.
pub fn cross_check(at: CountedAt, iface: &str, frames: u64, packets: u64) -> Option<String> {
    if frames == 0 {
        return None;
    }
    let f = frames as f64;
    let p = packets as f64;
    let (what, counted) = match at {
        CountedAt::SenderTx => ("sent", "transmitted"),
        CountedAt::ReceiverRx => ("received", "received"),
    };
    if p < f * (1.0 - COUNT_TOLERANCE) {
        let per = if packets == 0 { f } else { f / p };
        if per >= 1.5 {
            return Some(format!(
                "the path carried 1 packet per {per:.0} frames: {iface} {counted} {packets} packets for {frames} frames {what}, so segmentation offload (GSO/GRO) crossed a virtual link and the device handled super-packets, not frames"
            ));
        }
        return Some(format!(
            "{iface} {counted} {packets} packets for {frames} frames {what} ({:.1}% fewer): the interface did not carry every frame the tester counted (for a sender: frames dropped by the interface, see tx_dropped)",
            (f - p) * 100.0 / f
        ));
    }
    if p > f * (1.0 + COUNT_TOLERANCE) + COUNT_SLACK_PACKETS as f64 {
        return Some(format!(
            "{iface} {counted} {} packets more than the {frames} frames {what} and the host's TCP and ICMP packets ({:.1}% more): other traffic shared the interface during the trial{}",
            packets - frames,
            (p - f) * 100.0 / f,
            match at {
                CountedAt::SenderTx => "",
                CountedAt::ReceiverRx => ", or frames were dropped in the receiving host before its socket",
            }
        ));
    }
    None
}

/// A trial outcome from its directions, cross-checked against the interface counts each
/// carries ([`cross_check`]; `iface(way, end)` names the interface for the warning). On the
/// receiving side the frames are those received plus those the tester's own socket dropped:
/// both crossed the interface.
pub fn checked(
    ways: Vec<WayOutcome>,
    warnings: Vec<String>,
    iface: &dyn Fn(Way, CountedAt) -> String,
) -> TrialOutcome {
    let mut invalid = Vec::new();
    for w in &ways {
        if let Some(p) = w.iface_tx_packets {
            let at = CountedAt::SenderTx;
            invalid.extend(cross_check(at, &iface(w.way, at), w.sent, p));
        }
        if let Some(p) = w.iface_rx_packets {
            let at = CountedAt::ReceiverRx;
            let frames = w.received + w.tester_rx_dropped.unwrap_or(0);
            invalid.extend(cross_check(at, &iface(w.way, at), frames, p));
        }
    }
    TrialOutcome {
        ways,
        warnings,
        invalid: (!invalid.is_empty()).then(|| invalid.join("; ")),
        dut: None,
        profile: None,
    }
}

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
    /// How the sender put its frames on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_path: Option<TxPath>,
    /// Raw frames: the kernel path they went through (AF_XDP zero-copy or copy mode, or the
    /// AF_PACKET ring).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_tx: Option<RawTx>,
    /// Packets the sender's interface transmitted during the trial, less the packets the
    /// host counted for TCP (the control connection) and ICMP; absent when not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_tx_packets: Option<u64>,
    /// Packets the receiver's interface received during the trial, less TCP and ICMP;
    /// absent when not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_rx_packets: Option<u64>,
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
    /// Why the trial's counts cannot be trusted (interface counters disagree with them by
    /// more than [`COUNT_TOLERANCE`]); absent for a valid trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The device under test's counters over the trial (`--dut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<DutCounters>,
    /// Both ends' profiles (`--profile`); not serialized: the record keeps one trial's per
    /// frame size (`FrameSizeRecord::profile`).
    #[serde(skip)]
    pub profile: Option<Box<TrialProfile>>,
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
    /// Why the trial's counts cannot be trusted: interface counters disagreed with them by
    /// more than 2%. An invalid trial neither passes nor fails (see docs/rfc2544.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// What could not be measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The device under test's own counters over the trial (`--dut`): its CPUs, interrupts,
    /// softirqs and every interface's packets and drops. Absent without `--dut`, or when
    /// the device did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<DutCounters>,
    /// Both ends' profiles (`--profile`) until the run picks the one it keeps per frame
    /// size (`FrameSizeRecord::profile`); never serialized here.
    #[serde(skip)]
    pub profile: Option<Box<TrialProfile>>,
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
            invalid: outcome.invalid,
            warnings: outcome.warnings,
            dut: outcome.dut,
            profile: outcome.profile,
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
            invalid: None,
            warnings: Vec::new(),
            dut: None,
            profile: None,
        }
    }

    /// Whether the device lost at most `max_loss_ratio` of the frames in every direction
    /// (never for a trial that failed to run or whose counts are invalid).
    pub fn passes(&self, max_loss_ratio: f64) -> bool {
        self.error.is_none() && self.invalid.is_none() && ways_pass(&self.ways, max_loss_ratio)
    }

    /// Whether the trial's counts are trusted (no interface counter disagreed).
    pub fn valid(&self) -> bool {
        self.invalid.is_none()
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
            tx_path: None,
            raw_tx: None,
            iface_tx_packets: None,
            iface_rx_packets: None,
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
            invalid: None,
            dut: None,
            profile: None,
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
            invalid: None,
            dut: None,
            profile: None,
        };
        assert!(!o.passes(0.0));
        assert!(o.passes(0.001));
        assert!((o.device_loss_ratio() - 0.0005).abs() < 1e-12);
    }

    #[test]
    fn interface_counts_within_two_percent_agree() {
        let tx = CountedAt::SenderTx;
        assert_eq!(cross_check(tx, "eth0", 100_000, 100_000), None);
        assert_eq!(cross_check(tx, "eth0", 100_000, 98_000), None);
        assert_eq!(cross_check(tx, "eth0", 100_000, 102_008), None);
        // Nothing sent: nothing to compare.
        assert_eq!(cross_check(tx, "eth0", 0, 5), None);
        // A few ARP packets on a tiny trial are not a mismatch.
        assert_eq!(cross_check(CountedAt::ReceiverRx, "b0", 100, 106), None);
    }

    #[test]
    fn super_packets_are_named() {
        // GSO: 64 frames per packet, the seed case of issue 9.
        let w = cross_check(CountedAt::SenderTx, "veth0", 6_400_000, 100_000).unwrap();
        assert!(
            w.starts_with("the path carried 1 packet per 64 frames: veth0 transmitted 100000 packets for 6400000 frames sent"),
            "{w}"
        );
        assert!(w.contains("segmentation offload"), "{w}");
    }

    #[test]
    fn shortfall_and_excess_beyond_two_percent_are_invalid() {
        let w = cross_check(CountedAt::SenderTx, "veth0", 100_000, 97_000).unwrap();
        assert!(
            w.contains("97000 packets for 100000 frames sent (3.0% fewer)"),
            "{w}"
        );
        assert!(w.contains("tx_dropped"), "{w}");
        let w = cross_check(CountedAt::ReceiverRx, "b0", 100_000, 103_000).unwrap();
        assert!(w.contains("3000 packets more"), "{w}");
        assert!(w.contains("other traffic"), "{w}");
        assert!(w.contains("before its socket"), "{w}");
    }

    #[test]
    fn invalid_trials_never_pass() {
        let o = TrialOutcome {
            ways: vec![way(1000, 1000, 1000.0)],
            warnings: vec![],
            invalid: Some("why".into()),
            dut: None,
            profile: None,
        };
        let r = TrialRecord::paced(TrialPurpose::Search, 64, 1000.0, Duration::from_secs(1), o);
        assert!(!r.valid());
        assert!(!r.passes(1.0));
    }
}
