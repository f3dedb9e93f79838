//! The result of `linerate rfc2544`: one [`Rfc2544Record`] holds the plan, every trial of every
//! benchmark and the results per frame size. The table, CSV, chart and JSON (schema:
//! `docs/json-schema/rfc2544-v1.json`) are all rendered from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::back_to_back::BackToBackTrace;
use super::frame_loss::FrameLossTrace;
use super::latency::LatencyTrace;
use super::throughput::{Confirmation, SearchTrace};
use super::trial::{TrialPurpose, TrialRecord};
use linerate_wire::profile::ProfileReport;

/// Version of the [`Rfc2544Record`] layout.
pub const SCHEMA_VERSION: u32 = 1;

/// The four RFC 2544 benchmarks linerate runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Benchmark {
    /// §26.1.
    Throughput,
    /// §26.2.
    Latency,
    /// §26.3.
    FrameLoss,
    /// §26.4.
    BackToBack,
}

impl Benchmark {
    /// All four, in RFC order.
    pub const ALL: [Benchmark; 4] = [
        Benchmark::Throughput,
        Benchmark::Latency,
        Benchmark::FrameLoss,
        Benchmark::BackToBack,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Throughput => "throughput",
            Benchmark::Latency => "latency",
            Benchmark::FrameLoss => "frame-loss",
            Benchmark::BackToBack => "back-to-back",
        }
    }
}

/// Where the throughput search starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartAt {
    /// The theoretical maximum of the line (RFC 2544).
    LineRate,
    /// The tester's own maximum for the size, when lower.
    TesterMax,
}

/// The test as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rfc2544PlanRecord {
    /// Server as given, host:port.
    pub server: String,
    /// `ipv4` or `ipv6`.
    pub ip_version: String,
    /// Line rate the theoretical maxima are computed from, bits per second.
    pub line_rate_bps: f64,
    /// Where the line rate came from (`--line-rate`, or an interface's speed).
    pub line_rate_source: String,
    /// Both directions at once (RFC 2544 §14: the same rate each way).
    pub bidirectional: bool,
    /// Benchmarks run.
    pub benchmarks: Vec<Benchmark>,
    /// Frame sizes, bytes (FCS included).
    pub frame_sizes: Vec<u32>,
    /// Search trial length, milliseconds.
    pub trial_ms: u64,
    /// Confirmation trial length, milliseconds; absent when skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_ms: Option<u64>,
    /// Confirmation attempts per goal.
    pub confirm_attempts: u32,
    /// Allowed loss per goal, percent (0 = NDR).
    pub loss_goals_percent: Vec<f64>,
    /// Search resolution, percent of the theoretical maximum.
    pub resolution_percent: f64,
    /// Most search trials per frame size.
    pub max_trials: u32,
    /// Where the search starts.
    pub start: StartAt,
    /// Length of the unpaced trial that measures the tester's maximum, milliseconds; absent
    /// when skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrate_ms: Option<u64>,
    /// Wait between trials, milliseconds.
    pub settle_ms: u64,
    /// Latency trial length, milliseconds.
    pub latency_ms: u64,
    /// Latency trials per frame size.
    pub latency_repeat: u32,
    /// Frame loss trial length, milliseconds.
    pub frame_loss_ms: u64,
    /// Frame loss step, percent of the theoretical maximum.
    pub frame_loss_step_percent: f64,
    /// Back-to-back: longest burst tried, as time at line rate, milliseconds.
    pub back_to_back_max_ms: u64,
    /// Back-to-back repetitions per frame size.
    pub back_to_back_repeat: u32,
    /// UDP GSO/GRO allowed (only with `--generator gso`).
    pub udp_offload: bool,
    /// How frames were asked to be written (`--generator`); absent in records from before
    /// it existed, which used GSO unless `--no-offload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<Generator>,
    /// `--profile`: what both ends sampled in every trial; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<linerate_wire::profile::ProfileSpec>,
}

/// Everything measured for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameSizeRecord {
    /// Frame size, bytes (FCS included).
    pub frame_size: u32,
    /// UDP payload that makes frames of that size, bytes.
    pub udp_payload: u32,
    /// Theoretical maximum per direction: line rate / (8 × (size + 20)), frames per second.
    pub theoretical_max_fps: f64,
    /// The tester's own highest rate towards the server for this size (unpaced trial),
    /// frames per second per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_max_fps: Option<f64>,
    /// The unpaced trial that measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<TrialRecord>,
    /// §26.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<SearchTrace>,
    /// §26.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyTrace>,
    /// §26.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_loss: Option<FrameLossTrace>,
    /// §26.4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_to_back: Option<BackToBackTrace>,
    /// What limited the device under test at the throughput rate (`--dut`): the
    /// diagnosis's device rules over its counters in the trial at that rate
    /// ([`FrameSizeRecord::device_at_throughput`]); empty without `--dut` or when nothing
    /// stood out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_verdicts: Vec<crate::model::diagnosis::Verdict>,
    /// `--profile`: where both tester ends' CPUs went in one trial of this size, the trial
    /// at the throughput rate when there is one ([`FrameSizeRecord::keep_profile`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<SizeProfile>,
}

/// The profiles of both tester ends in one trial of a frame size (`--profile`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SizeProfile {
    /// What the profiled trial was for.
    pub purpose: TrialPurpose,
    /// Its offered rate per direction, frames per second (absent for unpaced trials and
    /// bursts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_fps: Option<f64>,
    /// Whether it ran at the throughput rate of the first loss goal; when not (no rate
    /// passed, or no throughput benchmark), it is the last trial of the size that was
    /// profiled.
    pub at_throughput: bool,
    /// This end's profile of the trial's measured window (absent, with a warning in the
    /// record, when it could not profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ProfileReport>,
    /// The server's (absent, with a warning, when it could not or may not profile: `linerate
    /// serve --allow-profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ProfileReport>,
}

impl FrameSizeRecord {
    /// The trial at this size's throughput rate (the first loss goal) among those that
    /// `has` what is looked for: its full-length confirmation when there is one, else the
    /// last passing search trial at that rate.
    /// With `effective`, a trial counts at the rate it is counted at (the rate the tester
    /// reached when it fell short of the offered one), else at its offered rate only.
    fn trial_at_throughput(
        &self,
        effective: bool,
        has: impl Fn(&TrialRecord) -> bool,
    ) -> Option<&TrialRecord> {
        let t = self.throughput.as_ref()?;
        let fps = t.goals.first()?.throughput_fps?;
        let same = |r: f64| (r - fps).abs() <= fps * 1e-9;
        let at = |tr: &&TrialRecord| {
            has(tr) && (tr.offered_fps.is_some_and(same) || (effective && same(tr.effective_fps)))
        };
        let trials = t.trials.iter().rev();
        trials
            .clone()
            .filter(at)
            .find(|tr| tr.purpose == TrialPurpose::Confirmation)
            .or_else(|| trials.clone().find(at))
    }

    /// The device's counters (`--dut`) in the trial at this size's throughput rate (the
    /// first loss goal): its full-length confirmation when there is one, else the last
    /// passing search trial at that rate.
    pub fn device_at_throughput(&self) -> Option<&crate::model::dut::DutCounters> {
        self.trial_at_throughput(false, |tr| tr.dut.is_some())
            .and_then(|tr| tr.dut.as_ref())
    }

    /// `--profile`: keeps one trial's profiles as [`FrameSizeRecord::profile`] and drops the
    /// others': the trial at the throughput rate (as [`FrameSizeRecord::device_at_throughput`]
    /// picks it, and also when the tester fell short of the rate offered: then the
    /// throughput is the rate it reached, and where its CPUs went is the question), else the
    /// last trial of the size that has one. The profile at the throughput rate says where
    /// the CPUs went at the highest load the device passed.
    pub fn keep_profile(&mut self) {
        let at_throughput = self
            .trial_at_throughput(true, |tr| tr.profile.is_some())
            .and_then(|chosen| self.trials().position(|tr| std::ptr::eq(tr, chosen)));
        let chosen = at_throughput.map(|i| (i, true)).or_else(|| {
            self.trials()
                .enumerate()
                .filter(|(_, tr)| tr.profile.is_some())
                .last()
                .map(|(i, _)| (i, false))
        });
        let mut kept = None;
        for (i, tr) in self.trials_mut().enumerate() {
            let Some(p) = tr.profile.take() else {
                continue;
            };
            if let Some((_, at_throughput)) = chosen.filter(|c| c.0 == i) {
                let p = *p;
                kept = Some(SizeProfile {
                    purpose: tr.purpose,
                    offered_fps: tr.offered_fps,
                    at_throughput,
                    client: p.client,
                    server: p.server,
                });
            }
        }
        self.profile = kept;
    }

    fn trials_mut(&mut self) -> impl Iterator<Item = &mut TrialRecord> {
        let tp = self.throughput.iter_mut().flat_map(|t| &mut t.trials);
        let lat = self.latency.iter_mut().flat_map(|t| &mut t.trials);
        let fl = self.frame_loss.iter_mut().flat_map(|t| &mut t.trials);
        let b2b = self.back_to_back.iter_mut().flat_map(|t| &mut t.trials);
        self.calibration
            .iter_mut()
            .chain(tp)
            .chain(lat)
            .chain(fl)
            .chain(b2b)
    }

    /// Trials run for this size, all benchmarks.
    pub fn trial_count(&self) -> usize {
        self.trials().count()
    }

    /// Every trial run for this size, all benchmarks, in the order run.
    pub fn trials(&self) -> impl Iterator<Item = &TrialRecord> {
        let tp = self.throughput.iter().flat_map(|t| &t.trials);
        let lat = self.latency.iter().flat_map(|t| &t.trials);
        let fl = self.frame_loss.iter().flat_map(|t| &t.trials);
        let b2b = self.back_to_back.iter().flat_map(|t| &t.trials);
        self.calibration
            .iter()
            .chain(tp)
            .chain(lat)
            .chain(fl)
            .chain(b2b)
    }
}

/// The whole result of `linerate rfc2544`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rfc2544Record {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// The test as run.
    pub plan: Rfc2544PlanRecord,
    /// One entry per frame size, in the order run.
    pub frame_sizes: Vec<FrameSizeRecord>,
    /// True when the run was cut short (Ctrl-C or an error); sizes not reached are missing.
    pub interrupted: bool,
    /// Where this run departs from RFC 2544's procedure (RFC 9971 asks that deviations be
    /// stated with the results).
    pub deviations: Vec<String>,
    /// What could not be measured or looked wrong, one sentence each.
    pub warnings: Vec<String>,
}

impl Rfc2544Record {
    /// The run's pass/fail criterion, one sentence per failure (empty: passed): every
    /// throughput goal whose search found a rate must have confirmed it with a full-length
    /// trial. A goal whose confirmation failed has no throughput, and `linerate rfc2544`
    /// exits with code 1. (No rate passing at all, invalid counts and a stopped search are
    /// reported in the record and its warnings, not here.)
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for size in &self.frame_sizes {
            let Some(t) = &size.throughput else {
                continue;
            };
            for g in t
                .goals
                .iter()
                .filter(|g| g.confirmation == Confirmation::Failed)
            {
                out.push(format!(
                    "{} B, loss goal {}%: the throughput found in the search ({}) was not confirmed by a full-length trial",
                    size.frame_size,
                    g.max_loss_percent,
                    g.search_fps
                        .map_or("-".to_string(), |f| format!("{f:.1} fps")),
                ));
            }
        }
        out
    }
}

/// JSON Schema of [`Rfc2544Record`] (`docs/json-schema/rfc2544-v1.json`), pretty, with a
/// trailing newline.
pub fn schema() -> String {
    let mut text = linerate_wire::json::to_string_pretty(&schemars::schema_for!(Rfc2544Record))
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}"));
    text.push('\n');
    text
}

/// The record as pretty JSON, with a trailing newline.
pub fn to_json(rec: &Rfc2544Record) -> String {
    let mut text = linerate_wire::json::to_string_pretty(rec)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}"));
    text.push('\n');
    text
}

/// How the tester (and, with `--bidir`, the server) writes frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Generator {
    /// Raw Ethernet frames through an AF_PACKET ring where the end can (CAP_NET_RAW, an
    /// Ethernet interface, a resolved next hop); otherwise one datagram per `sendmmsg`
    /// message, stated as a deviation.
    Auto,
    /// One datagram per `sendmmsg` message at both ends.
    Sendmmsg,
    /// UDP GSO: up to 64 datagrams per send call. On virtual links and Linux forwarding
    /// paths they stay one super-packet, so the device does a fraction of the per-frame work.
    Gso,
}

impl Generator {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Generator::Auto => "auto",
            Generator::Sendmmsg => "sendmmsg",
            Generator::Gso => "gso",
        }
    }
}
