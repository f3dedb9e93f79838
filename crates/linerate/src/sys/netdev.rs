//! Interface statistics from `/sys/class/net/IF/statistics/` or `/proc/net/dev`.
//!
//! Both show the kernel's `struct rtnl_link_stats64` for the interface. sysfs has every
//! field on its own; `/proc/net/dev` (net/core/net-procfs.c `dev_seq_printf_stats`) folds
//! some together:
//!
//! ```text
//! Inter-|   Receive                                                |  Transmit
//!  face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
//!     lo: 779722639935 171276329    0    0    0     0          0         0 779722639935 ...
//! ```
//!
//! where receive `drop` is `rx_dropped + rx_missed_errors` and `frame` is the sum of the
//! length, over, CRC and frame errors. linerate reports `rx_dropped` with the
//! `/proc/net/dev` meaning from either source, so the two agree.
//!
//! **Which source.** sysfs shows the network namespace it was *mounted* in, not the one of
//! the reading thread; `/proc/thread-self/net/dev` always shows the thread's own. So sysfs
//! is used only when [`super::iface::sysfs_net_dir`] confirms that its entry for the name
//! is the interface the thread sees (same ifindex), else `/proc/net/dev`, and the
//! sysfs-only fields are absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use linerate_wire::host::InterfaceStats;

use super::counter::delta_u64;
use super::{read_text, SysError, SysParseError};

const WHAT: &str = "/proc/net/dev";

/// `/proc/thread-self/net/FILE` (Linux 3.17+: the calling thread's network namespace),
/// or `/proc/net/FILE` where `thread-self` does not exist.
pub fn proc_net_path(file: &str) -> PathBuf {
    let thread = Path::new("/proc/thread-self/net");
    if thread.is_dir() {
        thread.join(file)
    } else {
        Path::new("/proc/net").join(file)
    }
}

/// Where a snapshot's interface statistics came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsSource {
    /// `/sys/class/net/IF/statistics/`.
    Sysfs,
    /// `/proc/net/dev`.
    ProcNetDev,
}

/// Interface statistics at one moment, with their source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceCounters {
    /// Where they came from.
    pub source: StatsSource,
    /// The values (cumulative, not deltas).
    pub stats: InterfaceStats,
}

/// One `/proc/net/dev` row: the 16 columns in file order.
pub type NetDevRow = [u64; 16];

/// Parses `/proc/net/dev` into interface name → its 16 columns. The two header lines are
/// recognised by their `|`.
pub fn parse_proc_net_dev(text: &str) -> Result<BTreeMap<String, NetDevRow>, SysParseError> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.contains('|') || raw.trim().is_empty() {
            continue;
        }
        let (name, rest) = raw
            .split_once(':')
            .ok_or_else(|| SysParseError::new(WHAT, Some(i + 1), "row without \"name:\""))?;
        let mut row = [0u64; 16];
        let mut n = 0;
        for w in rest.split_whitespace() {
            let slot = row
                .get_mut(n)
                .ok_or_else(|| SysParseError::new(WHAT, Some(i + 1), "more than 16 columns"))?;
            *slot = w.parse().map_err(|_| {
                SysParseError::new(WHAT, Some(i + 1), format!("{w:?} is not a counter"))
            })?;
            n += 1;
        }
        if n != 16 {
            return Err(SysParseError::new(
                WHAT,
                Some(i + 1),
                format!("{n} columns, 16 expected"),
            ));
        }
        out.insert(name.trim().to_string(), row);
    }
    Ok(out)
}

/// The [`InterfaceStats`] a `/proc/net/dev` row gives (sysfs-only fields absent).
pub fn stats_from_row(r: &NetDevRow) -> InterfaceStats {
    InterfaceStats {
        rx_bytes: r[0],
        rx_packets: r[1],
        rx_errors: r[2],
        rx_dropped: r[3],
        rx_fifo_errors: r[4],
        tx_bytes: r[8],
        tx_packets: r[9],
        tx_errors: r[10],
        tx_dropped: r[11],
        tx_fifo_errors: r[12],
        rx_missed_errors: None,
        rx_over_errors: None,
        rx_crc_errors: None,
    }
}

/// Parses the files of a sysfs `statistics` directory, given as file name → contents.
/// The ten fields `/proc/net/dev` also has must be present.
pub fn parse_sysfs_statistics(
    files: &BTreeMap<String, String>,
) -> Result<InterfaceStats, SysParseError> {
    const WHAT: &str = "sysfs statistics";
    let get = |name: &str| -> Result<Option<u64>, SysParseError> {
        files
            .get(name)
            .map(|t| {
                t.trim().parse::<u64>().map_err(|_| {
                    SysParseError::new(WHAT, Some(1), format!("{name} is {:?}", t.trim()))
                })
            })
            .transpose()
    };
    let need = |name: &str| -> Result<u64, SysParseError> {
        get(name)?.ok_or_else(|| SysParseError::new(WHAT, None, format!("no {name}")))
    };
    let missed = get("rx_missed_errors")?;
    Ok(InterfaceStats {
        rx_packets: need("rx_packets")?,
        tx_packets: need("tx_packets")?,
        rx_bytes: need("rx_bytes")?,
        tx_bytes: need("tx_bytes")?,
        rx_errors: need("rx_errors")?,
        tx_errors: need("tx_errors")?,
        rx_dropped: need("rx_dropped")?.saturating_add(missed.unwrap_or(0)),
        tx_dropped: need("tx_dropped")?,
        rx_fifo_errors: need("rx_fifo_errors")?,
        tx_fifo_errors: need("tx_fifo_errors")?,
        rx_missed_errors: missed,
        rx_over_errors: get("rx_over_errors")?,
        rx_crc_errors: get("rx_crc_errors")?,
    })
}

/// The sysfs statistics files linerate reads.
const SYSFS_FILES: &[&str] = &[
    "rx_packets",
    "tx_packets",
    "rx_bytes",
    "tx_bytes",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_fifo_errors",
    "tx_fifo_errors",
    "rx_missed_errors",
    "rx_over_errors",
    "rx_crc_errors",
];

/// Reads `DIR/statistics/*` of a sysfs interface directory (errors name the file).
pub fn read_sysfs_statistics(dir: &Path) -> Result<InterfaceStats, SysError> {
    let stats = dir.join("statistics");
    let mut files = BTreeMap::new();
    for name in SYSFS_FILES {
        let path = stats.join(name);
        match read_text(&path) {
            Ok(t) => {
                files.insert((*name).to_string(), t);
            }
            // Optional fields may be missing; required ones fail in the parser.
            Err(SysError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    parse_sysfs_statistics(&files).map_err(|e| SysError::Parse(e.with_file(stats)))
}

/// Reads `/proc/net/dev` of the calling thread's namespace.
pub fn read_proc_net_dev() -> Result<BTreeMap<String, NetDevRow>, SysError> {
    let path = proc_net_path("dev");
    let text = read_text(&path)?;
    parse_proc_net_dev(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// Statistics of interface `name`: from `sysfs_dir` (a trusted `/sys/class/net/IF`) when
/// given, else from `/proc/net/dev`.
pub fn read_iface_counters(
    name: &str,
    sysfs_dir: Option<&Path>,
) -> Result<IfaceCounters, SysError> {
    if let Some(dir) = sysfs_dir {
        return Ok(IfaceCounters {
            source: StatsSource::Sysfs,
            stats: read_sysfs_statistics(dir)?,
        });
    }
    let rows = read_proc_net_dev()?;
    let row = rows.get(name).ok_or_else(|| {
        SysError::Parse(
            SysParseError::new(WHAT, None, format!("no interface {name:?}"))
                .with_file(proc_net_path("dev")),
        )
    })?;
    Ok(IfaceCounters {
        source: StatsSource::ProcNetDev,
        stats: stats_from_row(row),
    })
}

/// Field-wise deltas. Errors (as a warning text) when the two came from different sources
/// or a counter went down (the interface was reset or re-created).
pub fn iface_delta(
    name: &str,
    earlier: &IfaceCounters,
    later: &IfaceCounters,
) -> Result<InterfaceStats, String> {
    if earlier.source != later.source {
        return Err(format!(
            "interface {name}: statistics came from different sources ({:?}, {:?}); left out",
            earlier.source, later.source
        ));
    }
    let (e, l) = (&earlier.stats, &later.stats);
    let reset =
        || format!("interface {name}: statistics went down during the test (reset?); left out");
    let d = |a: u64, b: u64| delta_u64(a, b).ok_or_else(reset);
    let opt = |a: Option<u64>, b: Option<u64>| -> Result<Option<u64>, String> {
        match (a, b) {
            (Some(a), Some(b)) => d(a, b).map(Some),
            _ => Ok(None),
        }
    };
    Ok(InterfaceStats {
        rx_packets: d(e.rx_packets, l.rx_packets)?,
        tx_packets: d(e.tx_packets, l.tx_packets)?,
        rx_bytes: d(e.rx_bytes, l.rx_bytes)?,
        tx_bytes: d(e.tx_bytes, l.tx_bytes)?,
        rx_errors: d(e.rx_errors, l.rx_errors)?,
        tx_errors: d(e.tx_errors, l.tx_errors)?,
        rx_dropped: d(e.rx_dropped, l.rx_dropped)?,
        tx_dropped: d(e.tx_dropped, l.tx_dropped)?,
        rx_fifo_errors: d(e.rx_fifo_errors, l.rx_fifo_errors)?,
        tx_fifo_errors: d(e.tx_fifo_errors, l.tx_fifo_errors)?,
        rx_missed_errors: opt(e.rx_missed_errors, l.rx_missed_errors)?,
        rx_over_errors: opt(e.rx_over_errors, l.rx_over_errors)?,
        rx_crc_errors: opt(e.rx_crc_errors, l.rx_crc_errors)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET_DEV: &str = include_str!("../../tests/fixtures/proc/net-dev.txt");

    #[test]
    fn parses_proc_net_dev() {
        let m = parse_proc_net_dev(NET_DEV).unwrap();
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            vec!["eth0", "ifb0", "ifb1", "lo"]
        );
        // Captured: eth0: 141387264 5625 0 0 0 0 0 0 | 353834 3601 0 0 0 0 0 0
        let s = stats_from_row(&m["eth0"]);
        assert_eq!(s.rx_bytes, 141_387_264);
        assert_eq!(s.rx_packets, 5625);
        assert_eq!(s.tx_bytes, 353_834);
        assert_eq!(s.tx_packets, 3601);
        assert_eq!(s.rx_missed_errors, None);
        // A name glued to its first number (old kernels, long names) still parses.
        let glued = "Inter-| x\n face |y\nenp3s0f1:123 4 0 0 0 0 0 0 5 6 0 0 0 0 0 0\n";
        let m = parse_proc_net_dev(glued).unwrap();
        assert_eq!(m["enp3s0f1"][0], 123);
        assert_eq!(m["enp3s0f1"][9], 6);
    }

    #[test]
    fn rejects_short_rows() {
        let e = parse_proc_net_dev("lo: 1 2 3\n").unwrap_err();
        assert!(e.reason.contains("3 columns"), "{e}");
        assert!(parse_proc_net_dev("lo 1 2\n").is_err());
        assert!(parse_proc_net_dev("lo: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n").is_err());
    }

    fn files(pairs: &[(&str, u64)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), format!("{v}\n")))
            .collect()
    }

    const BASE: &[(&str, u64)] = &[
        ("rx_packets", 100),
        ("tx_packets", 200),
        ("rx_bytes", 1000),
        ("tx_bytes", 2000),
        ("rx_errors", 1),
        ("tx_errors", 2),
        ("rx_dropped", 3),
        ("tx_dropped", 4),
        ("rx_fifo_errors", 5),
        ("tx_fifo_errors", 6),
    ];

    #[test]
    fn sysfs_rx_dropped_includes_missed() {
        let mut f = files(BASE);
        f.extend(files(&[("rx_missed_errors", 7), ("rx_crc_errors", 8)]));
        let s = parse_sysfs_statistics(&f).unwrap();
        assert_eq!(s.rx_dropped, 3 + 7);
        assert_eq!(s.rx_missed_errors, Some(7));
        assert_eq!(s.rx_crc_errors, Some(8));
        assert_eq!(s.rx_over_errors, None);
        let mut bad = files(BASE);
        bad.remove("tx_bytes");
        assert!(parse_sysfs_statistics(&bad)
            .unwrap_err()
            .reason
            .contains("tx_bytes"));
        bad = files(BASE);
        bad.insert("rx_packets".into(), "x\n".into());
        assert!(parse_sysfs_statistics(&bad).is_err());
    }

    #[test]
    fn delta_is_exact_and_resets_are_refused() {
        let a = IfaceCounters {
            source: StatsSource::Sysfs,
            stats: parse_sysfs_statistics(&files(BASE)).unwrap(),
        };
        let mut later = files(BASE);
        later.extend(files(&[("rx_packets", 150), ("tx_bytes", 2500)]));
        let b = IfaceCounters {
            source: StatsSource::Sysfs,
            stats: parse_sysfs_statistics(&later).unwrap(),
        };
        let d = iface_delta("x", &a, &b).unwrap();
        assert_eq!(d.rx_packets, 50);
        assert_eq!(d.tx_bytes, 500);
        assert_eq!(d.tx_packets, 0);
        assert!(iface_delta("x", &b, &a).unwrap_err().contains("went down"));
        let c = IfaceCounters {
            source: StatsSource::ProcNetDev,
            ..b
        };
        assert!(iface_delta("x", &a, &c)
            .unwrap_err()
            .contains("different sources"));
    }

    #[test]
    fn reads_live_loopback() {
        let p = proc_net_path("dev");
        assert!(p.starts_with("/proc/thread-self/net"), "{}", p.display());
        let c = read_iface_counters("lo", None).unwrap();
        assert_eq!(c.source, StatsSource::ProcNetDev);
        let s = read_sysfs_statistics(Path::new("/sys/class/net/lo")).unwrap();
        assert!(s.rx_missed_errors.is_some());
        let msg = read_iface_counters("nosuch0", None)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("nosuch0") && msg.contains("/proc/thread-self/net/dev"),
            "{msg}"
        );
    }
}
