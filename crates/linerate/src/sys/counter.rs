//! Differences of kernel counters between two snapshots.
//!
//! Two kinds of counters, two rules:
//!
//! * **32-bit counters** (per-CPU interrupt and softirq counts are `unsigned int`; every
//!   `/proc/net/softnet_stat` column is printed as 8 hex digits) wrap at 2³². A later value
//!   below the earlier one is taken as one wrap: `(later − earlier) mod 2³²` ([`delta_u32`]).
//!   At 1 Mpps `processed` wraps about every 70 minutes, so this happens in practice.
//! * **64-bit counters** (interface statistics, SNMP counters on 64-bit kernels, `ethtool
//!   -S`) never wrap in practice; a later value below the earlier one means the counter was
//!   reset (interface re-created, driver reloaded), and the delta is unknown ([`delta_u64`]
//!   gives `None`, the caller warns and leaves the value out).
//!
//! CPUs are matched by number, never by position: a CPU present in only one snapshot (hot
//! plug) is left out of per-CPU deltas ([`align_cpus`]).

use linerate_wire::host::PerCpu;

/// `later − earlier` for a counter kept in 32 bits: one wrap is assumed when it went down.
pub fn delta_u32(earlier: u64, later: u64) -> u64 {
    if later >= earlier {
        later - earlier
    } else {
        later.wrapping_sub(earlier) & 0xffff_ffff
    }
}

/// `later − earlier` for a 64-bit counter; `None` when it went down (reset).
pub fn delta_u64(earlier: u64, later: u64) -> Option<u64> {
    later.checked_sub(earlier)
}

/// The CPUs two snapshots have in common and where each is in either snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuAlign {
    /// CPU numbers present in both, in the later snapshot's order.
    pub cpus: Vec<u32>,
    /// (index in earlier, index in later) for each of `cpus`.
    pub pairs: Vec<(usize, usize)>,
}

impl CpuAlign {
    /// Per-CPU 32-bit deltas of `earlier`/`later` (indexed like their snapshots' CPU lists)
    /// and their sum. Missing entries count as 0.
    pub fn delta_u32(&self, earlier: &[u64], later: &[u64]) -> PerCpu {
        let per_cpu: Vec<u64> = self
            .pairs
            .iter()
            .map(|&(i, j)| {
                delta_u32(
                    earlier.get(i).copied().unwrap_or(0),
                    later.get(j).copied().unwrap_or(0),
                )
            })
            .collect();
        let total = per_cpu.iter().fold(0u64, |a, &b| a.saturating_add(b));
        PerCpu { total, per_cpu }
    }
}

/// Matches CPU numbers of two snapshots. The warning names CPUs present in only one.
pub fn align_cpus(what: &str, earlier: &[u32], later: &[u32]) -> (CpuAlign, Option<String>) {
    let mut align = CpuAlign::default();
    let mut only_later = Vec::new();
    for (j, cpu) in later.iter().enumerate() {
        match earlier.iter().position(|c| c == cpu) {
            Some(i) => {
                align.cpus.push(*cpu);
                align.pairs.push((i, j));
            }
            None => only_later.push(*cpu),
        }
    }
    let only_earlier: Vec<u32> = earlier
        .iter()
        .filter(|c| !later.contains(c))
        .copied()
        .collect();
    let warning = (!only_later.is_empty() || !only_earlier.is_empty()).then(|| {
        format!(
            "{what}: the set of CPUs changed during the test (gone: {only_earlier:?}, new: \
             {only_later:?}); those CPUs are left out of the per-CPU deltas"
        )
    });
    (align, warning)
}

/// Adds `add` into `acc` element-wise (saturating), growing `acc` as needed.
pub fn add_into(acc: &mut PerCpu, add: &[u64]) {
    if acc.per_cpu.len() < add.len() {
        acc.per_cpu.resize(add.len(), 0);
    }
    for (a, b) in acc.per_cpu.iter_mut().zip(add) {
        *a = a.saturating_add(*b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_counters_wrap_once() {
        assert_eq!(delta_u32(10, 25), 15);
        assert_eq!(delta_u32(7, 7), 0);
        // 0xffff_fff0 -> 0x10: 0x10 + 0x10 = 32 increments across the wrap.
        assert_eq!(delta_u32(0xffff_fff0, 0x10), 32);
    }

    #[test]
    fn u64_counters_reset_is_unknown() {
        assert_eq!(delta_u64(10, 25), Some(15));
        assert_eq!(delta_u64(25, 10), None);
    }

    #[test]
    fn cpus_are_matched_by_number() {
        let (a, w) = align_cpus("x", &[0, 1, 2], &[0, 2, 3]);
        assert_eq!(a.cpus, vec![0, 2]);
        assert_eq!(a.pairs, vec![(0, 0), (2, 1)]);
        let w = w.unwrap();
        assert!(w.contains("gone: [1]") && w.contains("new: [3]"), "{w}");
        let d = a.delta_u32(&[5, 6, 7], &[15, 17, 99]);
        assert_eq!(d.per_cpu, vec![10, 10]);
        assert_eq!(d.total, 20);
        let (same, none) = align_cpus("x", &[0, 1], &[0, 1]);
        assert_eq!(same.cpus, vec![0, 1]);
        assert!(none.is_none());
    }

    #[test]
    fn add_into_grows() {
        let mut acc = PerCpu::default();
        add_into(&mut acc, &[1, 2]);
        add_into(&mut acc, &[10, 20, 30]);
        assert_eq!(acc.per_cpu, vec![11, 22, 30]);
    }
}
