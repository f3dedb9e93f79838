//! Per-CPU packet processing from `/proc/net/softnet_stat`.
//!
//! One row per online CPU, every column 8 hex digits (a 32-bit value that wraps). The
//! number of columns grew over the years (net/core/net-procfs.c `softnet_seq_show`):
//!
//! | column | meaning | since |
//! | --- | --- | --- |
//! | 1 | `processed`: packets taken from the backlog/NAPI | |
//! | 2 | `dropped`: backlog full (`net.core.netdev_max_backlog`) | |
//! | 3 | `time_squeeze`: NET_RX ran out of budget or time with work left | |
//! | 4–8 | always 0 (were throttling/fastroute counters) | |
//! | 9 | `cpu_collision`, always 0 since 4.x | |
//! | 10 | `received_rps`: IPIs received to process RPS-steered packets | 2.6.35 (10 columns) |
//! | 11 | `flow_limit_count` | 3.11 (11 columns) |
//! | 12 | backlog length now (a gauge) | 5.10 (13 columns) |
//! | 13 | the CPU number | 5.10 |
//! | 14, 15 | input and process queue lengths now (gauges) | 6.x (15 columns) |
//!
//! Without column 13 the CPU number is taken to be the row position, which is wrong when a
//! CPU below the last one is offline (the kernel skips offline CPUs); the rows are still
//! matched consistently between two snapshots of the same machine.

use std::path::{Path, PathBuf};

use linerate_wire::host::{PerCpu, SoftnetCounters};

use super::counter::align_cpus;
use super::netdev::proc_net_path;
use super::{read_text, SysError, SysParseError};

const WHAT: &str = "/proc/net/softnet_stat";

/// One CPU's row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftnetRow {
    /// CPU number (column 13, or the row position on older kernels).
    pub cpu: u32,
    /// Packets processed.
    pub processed: u64,
    /// Packets dropped at a full backlog.
    pub dropped: u64,
    /// Budget or time exhausted with work left.
    pub time_squeeze: u64,
    /// RPS wake-ups received (10+ columns).
    pub received_rps: Option<u64>,
    /// Flow-limit drops (11+ columns).
    pub flow_limit_count: Option<u64>,
    /// Backlog length at the time of reading (13+ columns).
    pub backlog_len: Option<u64>,
}

/// Parses `/proc/net/softnet_stat` (3 or more hex columns per row).
pub fn parse_softnet_stat(text: &str) -> Result<Vec<SoftnetRow>, SysParseError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let cols = raw
            .split_whitespace()
            .map(|w| {
                u32::from_str_radix(w, 16).map(u64::from).map_err(|_| {
                    SysParseError::new(WHAT, Some(i + 1), format!("{w:?} is not 32-bit hex"))
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        if cols.len() < 3 {
            return Err(SysParseError::new(
                WHAT,
                Some(i + 1),
                format!("{} columns, at least 3 expected", cols.len()),
            ));
        }
        let position = u32::try_from(rows.len()).unwrap_or(u32::MAX);
        let cpu = match cols.get(12) {
            Some(&c) => u32::try_from(c).unwrap_or(u32::MAX),
            None => position,
        };
        rows.push(SoftnetRow {
            cpu,
            processed: cols[0],
            dropped: cols[1],
            time_squeeze: cols[2],
            received_rps: cols.get(9).copied(),
            flow_limit_count: cols.get(10).copied(),
            backlog_len: cols.get(11).copied(),
        });
    }
    Ok(rows)
}

/// The softnet_stat file of the calling thread's network namespace.
pub fn softnet_stat_path() -> PathBuf {
    proc_net_path("softnet_stat")
}

/// Reads and parses `/proc/net/softnet_stat` (of the calling thread's network namespace).
pub fn read_softnet_stat() -> Result<Vec<SoftnetRow>, SysError> {
    read_softnet_stat_from(&softnet_stat_path())
}

/// Reads and parses a file in softnet_stat format (errors name `path`).
pub fn read_softnet_stat_from(path: &Path) -> Result<Vec<SoftnetRow>, SysError> {
    let text = read_text(path)?;
    parse_softnet_stat(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// Sums of `processed`, `dropped`, `time_squeeze` over CPUs (for interval sampling).
pub fn totals(rows: &[SoftnetRow]) -> (u64, u64, u64) {
    rows.iter().fold((0, 0, 0), |(p, d, t), r| {
        (
            p.saturating_add(r.processed),
            d.saturating_add(r.dropped),
            t.saturating_add(r.time_squeeze),
        )
    })
}

/// Deltas between two snapshots, CPUs matched by number; counters wrap at 2³². The
/// optional columns are reported only when both snapshots have them on every row.
pub fn softnet_delta(
    earlier: &[SoftnetRow],
    later: &[SoftnetRow],
) -> (SoftnetCounters, Vec<String>) {
    let ecpus: Vec<u32> = earlier.iter().map(|r| r.cpu).collect();
    let lcpus: Vec<u32> = later.iter().map(|r| r.cpu).collect();
    let (align, warning) = align_cpus(WHAT, &ecpus, &lcpus);
    let col = |f: fn(&SoftnetRow) -> u64| -> PerCpu {
        let e: Vec<u64> = earlier.iter().map(f).collect();
        let l: Vec<u64> = later.iter().map(f).collect();
        align.delta_u32(&e, &l)
    };
    let opt = |f: fn(&SoftnetRow) -> Option<u64>| -> Option<PerCpu> {
        let e: Option<Vec<u64>> = earlier.iter().map(f).collect();
        let l: Option<Vec<u64>> = later.iter().map(f).collect();
        Some(align.delta_u32(&e?, &l?))
    };
    let counters = SoftnetCounters {
        cpus: align.cpus.clone(),
        processed: col(|r| r.processed),
        dropped: col(|r| r.dropped),
        time_squeeze: col(|r| r.time_squeeze),
        received_rps: opt(|r| r.received_rps),
        flow_limit_count: opt(|r| r.flow_limit_count),
    };
    (counters, warning.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = include_str!("../../tests/fixtures/proc/softnet_stat-10col.txt");
    const OLD_LATER: &str = include_str!("../../tests/fixtures/proc/softnet_stat-10col-later.txt");
    const MID: &str = include_str!("../../tests/fixtures/proc/softnet_stat-13col.txt");
    const NEW: &str = include_str!("../../tests/fixtures/proc/softnet_stat-15col.txt");
    const NEW_LATER: &str = include_str!("../../tests/fixtures/proc/softnet_stat-15col-later.txt");

    #[test]
    fn parses_each_shape() {
        let old = parse_softnet_stat(OLD).unwrap();
        assert_eq!(old.len(), 4);
        assert_eq!(old[1].processed, 0x1e240);
        assert_eq!(old[1].received_rps, Some(4));
        assert_eq!(old[1].flow_limit_count, None);
        assert_eq!(old[3].cpu, 3);

        let mid = parse_softnet_stat(MID).unwrap();
        // CPU 2 is offline: the CPU column says 0, 1, 3.
        assert_eq!(mid.iter().map(|r| r.cpu).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(mid[0].processed, 0x0a1b_2c3d);
        assert_eq!(mid[0].dropped, 16);
        assert_eq!(mid[0].time_squeeze, 255);
        assert_eq!(mid[0].received_rps, Some(32));
        assert_eq!(mid[0].flow_limit_count, Some(1));
        assert_eq!(mid[1].backlog_len, Some(3));

        let new = parse_softnet_stat(NEW).unwrap();
        assert_eq!(new.len(), 2);
        assert_eq!(new[0].processed, 0x0621_8e34);
        assert_eq!(new[1].cpu, 1);
        assert_eq!(new[1].time_squeeze, 7);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_softnet_stat("0001 zz 0003\n").is_err());
        let e = parse_softnet_stat("00000001 00000002\n").unwrap_err();
        assert!(e.reason.contains("2 columns"), "{e}");
        assert!(parse_softnet_stat("100000000 0 0\n").is_err());
        assert_eq!(parse_softnet_stat("").unwrap(), vec![]);
    }

    #[test]
    fn old_delta_wraps() {
        let (d, w) = softnet_delta(
            &parse_softnet_stat(OLD).unwrap(),
            &parse_softnet_stat(OLD_LATER).unwrap(),
        );
        assert!(w.is_empty());
        // CPU0 processed wrapped 0xfffffff0 -> 0x10 (32); CPU1 0x1e240 -> 0x1e340 (256),
        // dropped 2 -> 5, squeeze 10 -> 11, received_rps 4 -> 6.
        assert_eq!(d.cpus, vec![0, 1, 2, 3]);
        assert_eq!(d.processed.per_cpu, vec![32, 256, 0, 0]);
        assert_eq!(d.processed.total, 288);
        assert_eq!(d.dropped.total, 3);
        assert_eq!(d.time_squeeze.per_cpu, vec![0, 1, 0, 0]);
        assert_eq!(d.received_rps.map(|r| r.total), Some(2));
        assert_eq!(d.flow_limit_count, None);
    }

    #[test]
    fn new_delta_is_exact() {
        let (d, _) = softnet_delta(
            &parse_softnet_stat(NEW).unwrap(),
            &parse_softnet_stat(NEW_LATER).unwrap(),
        );
        // softnet_stat-15col-later.txt: CPU0 processed +0x100, squeeze +5; CPU1 dropped +3,
        // squeeze +1, received_rps +7.
        assert_eq!(d.processed.per_cpu, vec![256, 0]);
        assert_eq!(d.dropped.per_cpu, vec![0, 3]);
        assert_eq!(d.time_squeeze.total, 6);
        assert_eq!(d.received_rps.unwrap().per_cpu, vec![0, 7]);
        assert_eq!(d.flow_limit_count.unwrap().total, 0);
        assert_eq!(totals(&parse_softnet_stat(NEW).unwrap()).2, 13);
    }
}
