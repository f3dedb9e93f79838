//! `--profile` inside an engine: the sampler runs from the engine's start to its finish, and
//! the report keeps the samples of the measured window only (warm-up boundary to the
//! senders' stop), so a profile covers the same time as the CPU figures beside it.

use std::time::Instant;

use linerate_wire::profile::{ProfileReport, ProfileSpec};

use crate::sys::cpu::{busy_fractions, CpuTimes};
use crate::sys::kallsyms::Kallsyms;
use crate::sys::perf::{Sampler, SamplerConfig};

/// A profile being taken, or why it is not.
pub struct Profiling {
    spec: ProfileSpec,
    sampler: Result<Sampler, String>,
    /// The engine's epoch on `CLOCK_MONOTONIC` (the samples' clock), ns.
    epoch_mono_ns: u64,
}

fn monotonic_ns() -> u64 {
    crate::sys::system::monotonic_ns().unwrap_or(0)
}

impl Profiling {
    /// Starts sampling every CPU if `spec` asks for it; `epoch` is the engine's (the
    /// window's times are relative to it).
    pub fn start(spec: Option<ProfileSpec>, epoch: Instant) -> Option<Profiling> {
        let spec = spec?;
        let sampler = Sampler::start(SamplerConfig {
            frequency_hz: spec.frequency_hz,
            callchains: spec.callchains,
        });
        // `Instant` is CLOCK_MONOTONIC on Linux.
        let epoch_mono_ns = monotonic_ns().saturating_sub(epoch.elapsed().as_nanos() as u64);
        Some(Profiling {
            spec,
            sampler,
            epoch_mono_ns,
        })
    }

    /// Stops sampling and builds the profile of `[from_ns, to_ns)` (relative to the epoch);
    /// `window_cpu` is the engine's `/proc/stat` at both ends of that window (those of its CPU
    /// figures), which each CPU's samples are checked against
    /// ([`crate::model::profile::uneven_sampling`]). `Err` is the warning to give instead (one
    /// line, what to change).
    pub fn finish(
        self,
        from_ns: u64,
        to_ns: u64,
        window_cpu: Option<(&CpuTimes, &CpuTimes)>,
    ) -> Result<ProfileReport, String> {
        let sampler = self
            .sampler
            .map_err(|e| format!("--profile: no profile of this end: {e}"))?;
        let raw = sampler.stop();
        let syms =
            Kallsyms::read().map_err(|e| format!("--profile: no profile of this end: {e}"))?;
        let mut report = crate::model::profile::build(
            &raw,
            &syms,
            self.spec,
            self.epoch_mono_ns + from_ns,
            self.epoch_mono_ns + to_ns,
        );
        // Without /proc/stat at both ends there is nothing to check the samples against.
        if let Some((before, after)) = window_cpu {
            if let Some(w) = crate::model::profile::uneven_sampling(
                &report.per_cpu,
                &busy_fractions(before, after),
                report.frequency_hz,
                report.duration_ns,
            ) {
                report.warnings.push(w);
            }
        }
        Ok(report)
    }
}
