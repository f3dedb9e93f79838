//! `--profile` inside an engine: the sampler runs from the engine's start to its finish, and
//! the report keeps the samples of the measured window only (warm-up boundary to the
//! senders' stop), so a profile covers the same time as the CPU figures beside it.

use std::time::Instant;

use linerate_wire::profile::{ProfileReport, ProfileSpec};

use crate::sys::cpu::{read_proc_stat, CpuTimes};
use crate::sys::kallsyms::Kallsyms;
use crate::sys::perf::{Sampler, SamplerConfig};

/// A profile being taken, or why it is not.
pub struct Profiling {
    spec: ProfileSpec,
    sampler: Result<Sampler, String>,
    /// The engine's epoch on `CLOCK_MONOTONIC` (the samples' clock), ns.
    epoch_mono_ns: u64,
    /// `/proc/stat` when sampling started: each CPU's busy time over the sampler's life is
    /// what its samples are checked against ([`crate::model::profile::uneven_sampling`]).
    cpu_before: Option<CpuTimes>,
}

/// Each CPU's busy share of its ticks between two `/proc/stat` snapshots (0..=1).
fn busy_fractions(before: &CpuTimes, after: &CpuTimes) -> Vec<(u32, f64)> {
    after
        .per_cpu
        .iter()
        .filter_map(|(cpu, a)| {
            let (_, b) = before.per_cpu.iter().find(|(c, _)| c == cpu)?;
            let d = a.saturating_sub(b);
            (d.total() > 0).then(|| (*cpu, d.busy() as f64 / d.total() as f64))
        })
        .collect()
}

fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| (t.tv_sec() as u64).saturating_mul(1_000_000_000) + t.tv_nsec() as u64)
        .unwrap_or(0)
}

impl Profiling {
    /// Starts sampling every CPU if `spec` asks for it; `epoch` is the engine's (the
    /// window's times are relative to it).
    pub fn start(spec: Option<ProfileSpec>, epoch: Instant) -> Option<Profiling> {
        let spec = spec?;
        let cpu_before = read_proc_stat().ok();
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
            cpu_before,
        })
    }

    /// Stops sampling and builds the profile of `[from_ns, to_ns)` (relative to the epoch);
    /// `Err` is the warning to give instead (one line, what to change).
    pub fn finish(self, from_ns: u64, to_ns: u64) -> Result<ProfileReport, String> {
        let sampler = self
            .sampler
            .map_err(|e| format!("--profile: no profile of this end: {e}"))?;
        let raw = sampler.stop();
        let cpu_after = read_proc_stat().ok();
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
        if let (Some(before), Some(after)) = (&self.cpu_before, &cpu_after) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cpu::parse_proc_stat;

    #[test]
    fn busy_fractions_are_each_cpus_busy_share_between_two_snapshots() {
        let before = parse_proc_stat(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 50 1000 10 0 5 0\ncpu1 10 0 10 500 0 0 0 0\ncpu2 1 0 1 1 0 0 0 0\n",
        )
        .unwrap();
        // cpu0: 80 busy (30 user, 40 system, 10 softirq) of 100; cpu1: none of 300; cpu2
        // unchanged (no ticks: no figure); cpu3 appeared (no earlier line: no figure).
        let after = parse_proc_stat(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 130 0 90 1015 15 0 15 0\ncpu1 10 0 10 800 0 0 0 0\ncpu2 1 0 1 1 0 0 0 0\ncpu3 5 0 5 5 0 0 0 0\n",
        )
        .unwrap();
        let f = busy_fractions(&before, &after);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].0, 0);
        assert!((f[0].1 - 0.8).abs() < 1e-12, "{f:?}");
        assert_eq!(f[1], (1, 0.0));
    }
}
