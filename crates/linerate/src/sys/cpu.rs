//! System-wide CPU utilisation from `/proc/stat`.
//!
//! `/proc/stat` (see proc(5)) has one `cpu` line summed over all CPUs and one `cpuN` line
//! per online CPU, each with tick counters (USER_HZ, normally 1/100 s):
//! `user nice system idle iowait irq softirq steal guest guest_nice`.
//!
//! * `guest` and `guest_nice` are already included in `user` and `nice` by the kernel, so
//!   they are not read (adding them would count guest time twice).
//! * Old kernels print fewer columns: 4 before Linux 2.5.41 (`user nice system idle`),
//!   7 before 2.6.11 (no `steal`). Absent trailing columns are taken as 0; fewer than 4 is
//!   an error.
//! * Offline CPUs have no `cpuN` line, so indices may have gaps; CPUs are matched by index
//!   between two snapshots, never by position.
//!
//! Utilisation over an interval is computed from the difference of two snapshots
//! ([`cpu_report`], [`util_percent`]). Counters can go backwards (a CPU taken offline and
//! back online restarts some of its per-CPU counters, and `iowait` is known to decrease
//! occasionally); every field difference is therefore a saturating subtraction that
//! clamps at 0 rather than wrapping to an absurd value.

use std::path::Path;

use linerate_wire::report::CpuReport;

use super::{read_text, SysError, SysParseError};

/// The path [`read_proc_stat`] reads.
pub const PROC_STAT: &str = "/proc/stat";

/// Tick counters of one CPU line: one type with the device exchange's (`linerate_wire::device`).
pub use linerate_wire::device::CpuTick;

/// One snapshot of `/proc/stat`'s CPU lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// The `cpu` line: all CPUs together.
    pub total: CpuTick,
    /// The `cpuN` lines: (N, ticks), in file order (ascending N; offline CPUs absent).
    pub per_cpu: Vec<(u32, CpuTick)>,
}

const WHAT: &str = "/proc/stat";

fn parse_cpu_fields<'a>(
    fields: impl Iterator<Item = &'a str>,
    line: usize,
) -> Result<CpuTick, SysParseError> {
    let mut v = [0u64; 8];
    let mut n = 0usize;
    // Only the first 8 columns; guest and guest_nice (9, 10) are inside user and nice.
    for (slot, field) in v.iter_mut().zip(fields) {
        *slot = field.parse().map_err(|_| {
            SysParseError::new(
                WHAT,
                Some(line),
                format!("column {} is {field:?}, not a tick count", n + 2),
            )
        })?;
        n += 1;
    }
    if n < 4 {
        return Err(SysParseError::new(
            WHAT,
            Some(line),
            format!("{n} tick columns, at least 4 expected (user nice system idle)"),
        ));
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Ok(CpuTick {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

/// Parses the contents of `/proc/stat`; lines other than `cpu` and `cpuN` are ignored.
pub fn parse_proc_stat(text: &str) -> Result<CpuTimes, SysParseError> {
    let mut total = None;
    let mut per_cpu = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let mut fields = raw.split_whitespace();
        let Some(name) = fields.next() else {
            continue;
        };
        let Some(suffix) = name.strip_prefix("cpu") else {
            continue;
        };
        if suffix.is_empty() {
            if total.is_some() {
                return Err(SysParseError::new(
                    WHAT,
                    Some(line),
                    "second aggregate \"cpu\" line",
                ));
            }
            total = Some(parse_cpu_fields(fields, line)?);
        } else {
            let index: u32 = suffix.parse().map_err(|_| {
                SysParseError::new(WHAT, Some(line), format!("{name:?} is not cpu<N>"))
            })?;
            per_cpu.push((index, parse_cpu_fields(fields, line)?));
        }
    }
    let total = total.ok_or_else(|| SysParseError::new(WHAT, None, "no aggregate \"cpu\" line"))?;
    Ok(CpuTimes { total, per_cpu })
}

/// Reads and parses `/proc/stat` (on Windows: the same ticks from the system's
/// per-processor times, the backend's `system::cpu_ticks`).
pub fn read_proc_stat() -> Result<CpuTimes, SysError> {
    if let Some((total, per_cpu)) = super::system::cpu_ticks() {
        return Ok(CpuTimes { total, per_cpu });
    }
    read_proc_stat_from(Path::new(PROC_STAT))
}

/// Reads and parses a file in `/proc/stat` format (errors name `path`).
pub fn read_proc_stat_from(path: &Path) -> Result<CpuTimes, SysError> {
    let text = read_text(path)?;
    parse_proc_stat(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

fn percent(part: u64, whole: u64) -> f64 {
    // Callers guarantee whole > 0; `part * 100 / whole` keeps whole-number results exact.
    part as f64 * 100.0 / whole as f64
}

/// System-wide utilisation between two snapshots, percent of all CPUs (100 = all busy):
/// `100 − idle% − iowait%`. `None` when no tick elapsed.
pub fn util_percent(before: &CpuTimes, after: &CpuTimes) -> Option<f64> {
    let d = after.total.saturating_sub(&before.total);
    let total = d.total();
    (total > 0).then(|| percent(d.busy(), total))
}

/// Each CPU present in both snapshots (in `after`'s order) with its tick delta.
pub fn per_cpu_deltas<'a>(
    before: &'a CpuTimes,
    after: &'a CpuTimes,
) -> impl Iterator<Item = (u32, CpuTick)> + 'a {
    after.per_cpu.iter().filter_map(|(index, later)| {
        let (_, earlier) = before.per_cpu.iter().find(|(i, _)| i == index)?;
        Some((*index, later.saturating_sub(earlier)))
    })
}

/// Each CPU's busy share of its own ticks between two snapshots (0..=1), for the CPUs
/// present in both that had ticks.
pub fn busy_fractions(before: &CpuTimes, after: &CpuTimes) -> Vec<(u32, f64)> {
    per_cpu_deltas(before, after)
        .filter(|(_, d)| d.total() > 0)
        .map(|(cpu, d)| (cpu, d.busy() as f64 / d.total() as f64))
        .collect()
}

/// CPU use between two snapshots, as netperf's `-c/-C`.
///
/// Percentages are of the `cpu` line's tick delta, i.e. of all CPUs together; `util` is
/// `100 − idle% − iowait%` (computed from busy ticks, so it equals the sum of the other
/// shares exactly). The busiest CPU is the one with the highest utilisation among CPUs
/// present in both snapshots that had ticks (ties: the lowest index), with its softirq
/// share of its own ticks; `cpu_count` is how many CPUs were present in both.
///
/// `None` when no tick elapsed in the aggregate (never divides by zero) or when no CPU
/// line is present in both snapshots with ticks elapsed.
pub fn cpu_report(before: &CpuTimes, after: &CpuTimes) -> Option<CpuReport> {
    let d = after.total.saturating_sub(&before.total);
    let total = d.total();
    if total == 0 {
        return None;
    }
    let mut cpu_count: u32 = 0;
    let mut busiest: Option<(u32, f64, f64)> = None;
    for (index, dc) in per_cpu_deltas(before, after) {
        cpu_count = cpu_count.saturating_add(1);
        let t = dc.total();
        if t == 0 {
            continue;
        }
        let util = percent(dc.busy(), t);
        if busiest.is_none_or(|(_, best, _)| util > best) {
            busiest = Some((index, util, percent(dc.softirq, t)));
        }
    }
    let (busiest_cpu, busiest_util, busiest_softirq) = busiest?;
    Some(CpuReport {
        cpu_count,
        util_percent: percent(d.busy(), total),
        user_percent: percent(d.user.saturating_add(d.nice), total),
        system_percent: percent(d.system, total),
        irq_percent: percent(d.irq, total),
        softirq_percent: percent(d.softirq, total),
        steal_percent: percent(d.steal, total),
        busiest_cpu,
        busiest_cpu_util_percent: busiest_util,
        busiest_cpu_softirq_percent: busiest_softirq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = include_str!("../../tests/fixtures/proc/stat-2cpu.txt");
    const TWO_LATER: &str = include_str!("../../tests/fixtures/proc/stat-2cpu-later.txt");
    const SIXTY_FOUR: &str = include_str!("../../tests/fixtures/proc/stat-64cpu.txt");
    const OLD: &str = include_str!("../../tests/fixtures/proc/stat-old-4col.txt");

    fn tick(v: [u64; 8]) -> CpuTick {
        let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
        CpuTick {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
        }
    }

    fn assert_close(got: f64, want: f64, what: &str) {
        assert!((got - want).abs() < 1e-9, "{what}: got {got}, want {want}");
    }

    #[test]
    fn parses_two_cpu_fixture() {
        let t = parse_proc_stat(TWO).unwrap();
        assert_eq!(t.total, tick([10000, 200, 3000, 80000, 500, 100, 400, 0]));
        assert_eq!(
            t.per_cpu,
            vec![
                (0, tick([6000, 100, 2000, 38000, 300, 60, 300, 0])),
                (1, tick([4000, 100, 1000, 42000, 200, 40, 100, 0])),
            ]
        );
        // 10000+200+3000+80000+500+100+400+0 = 94200; busy = 94200 − 80000 − 500 = 13700.
        assert_eq!(t.total.total(), 94_200);
        assert_eq!(t.total.busy(), 13_700);
    }

    #[test]
    fn guest_columns_are_not_counted() {
        // stat-2cpu-later.txt has guest = 30 on the cpu line; total is still the 8 columns:
        // 10200+210+3140+80470+510+110+550+10 = 95200.
        let t = parse_proc_stat(TWO_LATER).unwrap();
        assert_eq!(t.total.total(), 95_200);
    }

    #[test]
    fn report_on_hand_computed_deltas() {
        // Deltas (later − earlier), from the two fixtures:
        //   cpu : user 200 nice 10 system 140 idle 470 iowait 10 irq 10 softirq 150 steal 10
        //         → 1000 ticks; busy = 1000 − 470 − 10 = 520.
        //   cpu0: 150 0 100 100 0 10 140 0 → 500 ticks, busy 400 → 80 %, softirq 140/500 = 28 %.
        //   cpu1: 50 10 40 370 10 0 10 10  → 500 ticks, busy 120 → 24 %.
        // Shares of 1000: util 52, user+nice 21, system 14, irq 1, softirq 15, steal 1
        // (21+14+1+15+1 = 52 ✓).
        let before = parse_proc_stat(TWO).unwrap();
        let after = parse_proc_stat(TWO_LATER).unwrap();
        let r = cpu_report(&before, &after).unwrap();
        assert_eq!(r.cpu_count, 2);
        assert_close(r.util_percent, 52.0, "util");
        assert_close(r.user_percent, 21.0, "user");
        assert_close(r.system_percent, 14.0, "system");
        assert_close(r.irq_percent, 1.0, "irq");
        assert_close(r.softirq_percent, 15.0, "softirq");
        assert_close(r.steal_percent, 1.0, "steal");
        assert_eq!(r.busiest_cpu, 0);
        assert_close(r.busiest_cpu_util_percent, 80.0, "busiest util");
        assert_close(r.busiest_cpu_softirq_percent, 28.0, "busiest softirq");
        assert_close(util_percent(&before, &after).unwrap(), 52.0, "util_percent");
    }

    #[test]
    fn no_elapsed_ticks_is_none() {
        let t = parse_proc_stat(TWO).unwrap();
        assert_eq!(cpu_report(&t, &t), None);
        assert_eq!(util_percent(&t, &t), None);
    }

    #[test]
    fn counters_going_backwards_saturate() {
        // Swapped snapshots: every aggregate field went backwards → all deltas clamp to 0 →
        // no ticks elapsed → None, not a wrapped ~1.8e19 tick count.
        let before = parse_proc_stat(TWO_LATER).unwrap();
        let after = parse_proc_stat(TWO).unwrap();
        assert_eq!(cpu_report(&before, &after), None);
        // Only idle went backwards (by 5), user advanced by 10: delta = user 10, idle 0
        // → 10 ticks, all busy → 100 %.
        let mut later = before.clone();
        later.total.idle -= 5;
        later.total.user += 10;
        assert_close(util_percent(&before, &later).unwrap(), 100.0, "clamped");
    }

    #[test]
    fn parses_sixty_four_cpus() {
        let t = parse_proc_stat(SIXTY_FOUR).unwrap();
        assert_eq!(t.per_cpu.len(), 64);
        let indices: Vec<u32> = t.per_cpu.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, (0..64).collect::<Vec<u32>>());
        // Fixture row i: user 100000+1000i, nice 10i, system 50000+500i, idle 9000000−20000i,
        // iowait 1000+i, irq 100+i, softirq 20000+300i; Σi over 0..64 = 2016, so e.g.
        // Σuser = 64·100000 + 1000·2016 = 8 416 000 and Σidle = 576 000 000 − 40 320 000.
        assert_eq!(
            t.total,
            tick([
                8_416_000,
                20_160,
                4_208_000,
                535_680_000,
                66_016,
                8_416,
                1_884_800,
                0
            ])
        );
        assert_eq!(
            t.per_cpu[63],
            (
                63,
                tick([163_000, 630, 81_500, 7_740_000, 1_063, 163, 38_900, 0])
            )
        );
        let mut sum = CpuTick::default();
        for (_, c) in &t.per_cpu {
            sum.user += c.user;
            sum.idle += c.idle;
            sum.softirq += c.softirq;
        }
        assert_eq!(
            (sum.user, sum.idle, sum.softirq),
            (t.total.user, t.total.idle, t.total.softirq)
        );
    }

    #[test]
    fn busiest_of_sixty_four() {
        // After: cpu 37 gets 100 ticks of softirq, every other CPU 100 ticks idle; the
        // aggregate gets 6400 ticks, 100 of them softirq.
        // util = 100/6400 = 1.5625 %, softirq 1.5625 %; busiest cpu37 at 100 %, softirq 100 %.
        let before = parse_proc_stat(SIXTY_FOUR).unwrap();
        let mut after = before.clone();
        for (i, c) in &mut after.per_cpu {
            if *i == 37 {
                c.softirq += 100;
            } else {
                c.idle += 100;
            }
        }
        after.total.softirq += 100;
        after.total.idle += 6300;
        let r = cpu_report(&before, &after).unwrap();
        assert_eq!((r.cpu_count, r.busiest_cpu), (64, 37));
        assert_close(r.util_percent, 1.5625, "util");
        assert_close(r.softirq_percent, 1.5625, "softirq");
        assert_close(r.busiest_cpu_util_percent, 100.0, "busiest");
        assert_close(r.busiest_cpu_softirq_percent, 100.0, "busiest softirq");
    }

    #[test]
    fn old_kernel_four_columns() {
        let t = parse_proc_stat(OLD).unwrap();
        assert_eq!(t.total, tick([1000, 20, 300, 8000, 0, 0, 0, 0]));
        assert_eq!(t.per_cpu.len(), 2);
        // Later snapshot: +50 user, +150 idle on the aggregate → 200 ticks, util 25 %.
        let mut after = t.clone();
        after.total.user += 50;
        after.total.idle += 150;
        after.per_cpu[1].1.user += 50;
        after.per_cpu[0].1.idle += 100;
        after.per_cpu[1].1.idle += 50;
        let r = cpu_report(&t, &after).unwrap();
        assert_close(r.util_percent, 25.0, "util");
        // cpu1: 50 busy of 100 → 50 %.
        assert_eq!(r.busiest_cpu, 1);
        assert_close(r.busiest_cpu_util_percent, 50.0, "busiest");
    }

    #[test]
    fn seven_columns_and_offline_cpus() {
        // 2.6.0-era 7 columns (no steal); CPU 2 offline in the first snapshot.
        let before =
            "cpu 10 0 10 80 0 0 0\ncpu0 5 0 5 40 0 0 0\ncpu1 5 0 5 40 0 0 0\ncpu3 0 0 0 0 0 0 0\n";
        let after = "cpu 30 0 10 160 0 0 0\ncpu0 25 0 5 40 0 0 0\ncpu2 0 0 0 40 0 0 0\ncpu3 0 0 0 40 0 0 0\n";
        let b = parse_proc_stat(before).unwrap();
        let a = parse_proc_stat(after).unwrap();
        assert_eq!(
            a.per_cpu.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [0, 2, 3]
        );
        assert_eq!(b.total.steal, 0);
        // Matched CPUs: 0 and 3 (cpu1 gone, cpu2 new) → cpu_count 2.
        // Aggregate delta: user 20, idle 80 → 100 ticks, util 20 %.
        // cpu0 delta: user 20 of 20 → 100 %; cpu3: idle 40 → 0 %.
        let r = cpu_report(&b, &a).unwrap();
        assert_eq!((r.cpu_count, r.busiest_cpu), (2, 0));
        assert_close(r.util_percent, 20.0, "util");
        assert_close(r.busiest_cpu_util_percent, 100.0, "busiest");
    }

    #[test]
    fn no_matching_cpu_lines_is_none() {
        let b = parse_proc_stat("cpu 1 0 0 1\ncpu0 1 0 0 1\n").unwrap();
        let a = parse_proc_stat("cpu 2 0 0 2\ncpu1 1 0 0 1\n").unwrap();
        assert_eq!(cpu_report(&b, &a), None);
        // The aggregate alone still gives a utilisation: 1 busy of 2 → 50 %.
        assert_close(util_percent(&b, &a).unwrap(), 50.0, "util");
    }

    #[test]
    fn malformed_input_reports_line() {
        let e = parse_proc_stat("intr 1\ncpu 1 2 x 4\n").unwrap_err();
        assert_eq!((e.line, e.what), (Some(2), "/proc/stat"));
        assert!(e.reason.contains("\"x\""), "{}", e.reason);
        let e = parse_proc_stat("cpu 1 2 3\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.reason.contains("3 tick columns"), "{}", e.reason);
        let e = parse_proc_stat("cpu0 1 2 3 4\n").unwrap_err();
        assert_eq!(e.line, None);
        let e = parse_proc_stat("cpu 1 2 3 4\ncpuX 1 2 3 4\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = parse_proc_stat("cpu 1 2 3 4\ncpu 1 2 3 4\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn read_error_names_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        std::fs::write(&path, "cpu 1 2\n").unwrap();
        let msg = read_proc_stat_from(&path).unwrap_err().to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("line 1"), "{msg}");
    }

    #[test]
    fn live_proc_stat_parses() {
        let t = read_proc_stat().unwrap();
        assert!(!t.per_cpu.is_empty());
        assert!(t.total.total() > 0);
    }

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
