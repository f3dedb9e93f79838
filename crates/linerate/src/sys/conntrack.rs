//! Connection tracking (netfilter conntrack) of the calling thread's network namespace:
//! the table's fill (`/proc/sys/net/netfilter/nf_conntrack_count` of `nf_conntrack_max`)
//! and its statistics (`/proc/net/stat/nf_conntrack`: a header of column names, then one
//! row of 32-bit hex counters per possible CPU).
//!
//! Why it matters: a host with conntrack loaded (Docker loads it for all traffic) makes an
//! entry for every connection and keeps a closed TCP connection's entry for its TIME_WAIT
//! time (`nf_conntrack_tcp_timeout_time_wait`, 120 s by default; the socket's own
//! TIME_WAIT is 60 s). A TCP_CRR test opens thousands of connections a second, so it can
//! fill the table; a full table drops the SYN of every new connection ("nf_conntrack:
//! table full, dropping packet", counter `drop`), the connect retries and times out while
//! the server is fine. [`Snapshot`] is read before and after a window, [`Snapshot::delta`]
//! gives the [`ConntrackCounters`] of the record, and [`explain`] the sentence a connect
//! time-out or a warning names.
//!
//! `nf_conntrack_max` is one value for every namespace (writable only from the initial
//! one); the count and the statistics are the namespace's own. Without the module none of
//! the files exists and [`Snapshot::read`] gives `None`: nothing is tracked, nothing can be
//! dropped by it.

use std::collections::BTreeMap;

use linerate_wire::host::ConntrackCounters;

use super::counter::delta_u32;

/// The per-CPU statistics.
pub const STAT_PATH: &str = "/proc/net/stat/nf_conntrack";
/// Entries in the namespace's table.
pub const COUNT_PATH: &str = "/proc/sys/net/netfilter/nf_conntrack_count";
/// The table's size.
pub const MAX_PATH: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
/// How long a closed TCP connection's entry stays (seconds).
pub const TIME_WAIT_PATH: &str = "/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait";
/// The kernel's default of `nf_conntrack_tcp_timeout_time_wait`, seconds (2 minutes).
pub const DEFAULT_TIME_WAIT_S: u64 = 120;
/// Columns of the statistics summed into [`ConntrackCounters`].
const DROP: &str = "drop";
const INSERT_FAILED: &str = "insert_failed";
const EARLY_DROP: &str = "early_drop";
/// Most columns and rows read from the statistics (the kernel has 18 columns and a row per
/// possible CPU); a file beyond them is not conntrack's.
const MAX_COLUMNS: usize = 64;
const MAX_ROWS: usize = 8192;

/// `/proc/net/stat/nf_conntrack` parsed: the column names and each CPU's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The header's names, in order.
    pub columns: Vec<String>,
    /// One row per CPU, a value per column.
    pub rows: Vec<Vec<u64>>,
}

impl Stat {
    /// The column's value summed over the CPUs; `None` when the kernel has no such column.
    /// (`entries` is the table's count repeated on every row: not a sum, see
    /// [`Stat::entries`].)
    pub fn sum(&self, column: &str) -> Option<u64> {
        let i = self.columns.iter().position(|c| c == column)?;
        Some(self.rows.iter().map(|r| r[i]).sum())
    }

    /// The `entries` column (the table's count, the same on every row).
    pub fn entries(&self) -> Option<u64> {
        let i = self.columns.iter().position(|c| c == "entries")?;
        self.rows.first().map(|r| r[i])
    }

    /// The change of `column` from `earlier`, CPU by CPU (each counter is 32 bits and
    /// wraps), summed; `None` without the column or when the rows differ in number.
    fn delta(&self, earlier: &Stat, column: &str) -> Option<u64> {
        let i = self.columns.iter().position(|c| c == column)?;
        let j = earlier.columns.iter().position(|c| c == column)?;
        if self.rows.len() != earlier.rows.len() {
            return None;
        }
        Some(
            self.rows
                .iter()
                .zip(&earlier.rows)
                .map(|(l, e)| delta_u32(e[j], l[i]))
                .sum(),
        )
    }
}

/// Parses `/proc/net/stat/nf_conntrack`: a header of names, then rows of hex numbers, one
/// per CPU, as many as the header has names.
pub fn parse_stat(text: &str) -> Result<Stat, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or("empty file")?;
    let columns: Vec<String> = header.split_whitespace().map(str::to_string).collect();
    if columns.is_empty() || columns.len() > MAX_COLUMNS {
        return Err(format!("a header of {} columns", columns.len()));
    }
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        if n >= MAX_ROWS {
            return Err(format!("more than {MAX_ROWS} rows"));
        }
        let row = line
            .split_whitespace()
            .map(|v| u64::from_str_radix(v, 16))
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|e| format!("row {}: {e}", n + 1))?;
        if row.len() != columns.len() {
            return Err(format!(
                "row {} has {} values for {} columns",
                n + 1,
                row.len(),
                columns.len()
            ));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("no row".to_string());
    }
    Ok(Stat { columns, rows })
}

/// The conntrack figures at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Entries in the table (`nf_conntrack_count`).
    pub count: Option<u64>,
    /// The table's size (`nf_conntrack_max`).
    pub max: Option<u64>,
    /// The statistics.
    pub stat: Option<Stat>,
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

impl Snapshot {
    /// Reads the figures of this thread's namespace; `None` when conntrack is not loaded
    /// (none of its files exists). A statistics file that does not parse is left out.
    pub fn read() -> Option<Snapshot> {
        let stat = std::fs::read_to_string(STAT_PATH)
            .ok()
            .and_then(|t| parse_stat(&t).ok());
        let s = Snapshot {
            count: read_u64(COUNT_PATH),
            max: read_u64(MAX_PATH),
            stat,
        };
        (s != Snapshot::default()).then_some(s)
    }

    /// Packets dropped since boot (or since `earlier`).
    fn drops_since(&self, earlier: Option<&Snapshot>) -> Option<u64> {
        let l = self.stat.as_ref()?;
        match earlier.and_then(|e| e.stat.as_ref()) {
            Some(e) => l.delta(e, DROP),
            None => l.sum(DROP),
        }
    }

    /// The counters of the window from `earlier` to `self`; the fill is `self`'s.
    pub fn delta(&self, earlier: &Snapshot) -> ConntrackCounters {
        let d = |c: &str| {
            self.stat
                .as_ref()
                .zip(earlier.stat.as_ref())
                .and_then(|(l, e)| l.delta(e, c))
        };
        ConntrackCounters {
            entries: self.count.or_else(|| self.stat.as_ref()?.entries()),
            max_entries: self.max,
            drops: d(DROP),
            insert_failed: d(INSERT_FAILED),
            early_drops: d(EARLY_DROP),
        }
    }
}

/// Whether the figures show conntrack in the way: drops, failed inserts, or a table at
/// least nine tenths full.
pub fn in_the_way(c: &ConntrackCounters) -> bool {
    let full = matches!((c.entries, c.max_entries), (Some(n), Some(m)) if m > 0 && n * 10 >= m * 9);
    full || c.drops.unwrap_or(0) > 0 || c.insert_failed.unwrap_or(0) > 0
}

/// The figures in words: "conntrack: 262144 of 262144 entries (nf_conntrack_max), 1234
/// packets dropped and 0 failed inserts (/proc/net/stat/nf_conntrack)", with `window`
/// naming what the counts cover.
pub fn describe(c: &ConntrackCounters, window: &str) -> String {
    let fill = match (c.entries, c.max_entries) {
        (Some(n), Some(m)) => format!("{n} of {m} entries in use (nf_conntrack_max {m})"),
        (Some(n), None) => format!("{n} entries in use"),
        (None, Some(m)) => format!("a table of {m} entries"),
        (None, None) => "its fill unknown".to_string(),
    };
    let counts = match c.drops {
        Some(d) => format!(
            "; {d} packets dropped{} and {} failed inserts {window} (/proc/net/stat/nf_conntrack)",
            if d > 0 { " for want of an entry" } else { "" },
            c.insert_failed.unwrap_or(0),
        ),
        None => String::new(),
    };
    format!("conntrack: {fill}{counts}")
}

/// What to do about a full table.
pub const FIX: &str = "a full conntrack table drops the SYNs of new connections while the \
     server is fine: raise `sysctl -w net.netfilter.nf_conntrack_max=N` (N above the \
     connections per second times nf_conntrack_tcp_timeout_time_wait, 120 s by default), or \
     wait for its TIME_WAIT entries to expire";

/// The sentence a connect time-out (or a warning about retransmitted SYNs) adds: the
/// host's conntrack figures now, with the drops since `before` (or since boot), and the
/// advice when they show conntrack in the way. `None` when conntrack is not loaded.
pub fn explain(before: Option<&Snapshot>) -> Option<String> {
    let now = Snapshot::read()?;
    Some(explain_from(before, &now))
}

/// [`explain`] from a given reading (pure).
pub fn explain_from(before: Option<&Snapshot>, now: &Snapshot) -> String {
    let c = match before {
        Some(b) => now.delta(b),
        None => ConntrackCounters {
            entries: now.count.or_else(|| now.stat.as_ref()?.entries()),
            max_entries: now.max,
            drops: now.drops_since(None),
            insert_failed: now.stat.as_ref().and_then(|s| s.sum(INSERT_FAILED)),
            early_drops: now.stat.as_ref().and_then(|s| s.sum(EARLY_DROP)),
        },
    };
    let window = if before.is_some() {
        "meanwhile"
    } else {
        "since boot"
    };
    let mut s = describe(&c, window);
    if in_the_way(&c) {
        s.push_str(": ");
        s.push_str(FIX);
    }
    s
}

/// The fill a TCP_CRR test at `tps` transactions per second reaches: one entry per
/// connection for `time_wait_s` seconds after it closed.
pub fn entries_needed(tps: u64, time_wait_s: u64) -> u64 {
    tps.saturating_mul(time_wait_s)
}

/// The highest TCP_CRR rate (connections per second) a table of `max` entries holds for
/// good with `time_wait_s` seconds per closed connection.
pub fn sustained_tps(max: u64, time_wait_s: u64) -> u64 {
    max / time_wait_s.max(1)
}

/// The fill and the TIME_WAIT time, for `linerate doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// Entries in the table.
    pub count: Option<u64>,
    /// The table's size.
    pub max: u64,
    /// `nf_conntrack_tcp_timeout_time_wait`, seconds.
    pub time_wait_s: u64,
}

/// Reads [`Facts`]; `None` when conntrack is not loaded.
pub fn facts() -> Option<Facts> {
    Some(Facts {
        count: read_u64(COUNT_PATH),
        max: read_u64(MAX_PATH)?,
        time_wait_s: read_u64(TIME_WAIT_PATH).unwrap_or(DEFAULT_TIME_WAIT_S),
    })
}

/// Column name → the sum over CPUs of every column but `entries`, for tests and messages.
pub fn sums(s: &Stat) -> BTreeMap<String, u64> {
    s.columns
        .iter()
        .filter(|c| *c != "entries")
        .filter_map(|c| Some((c.clone(), s.sum(c)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel 6.x's layout, two CPUs (the columns as this kernel prints them).
    const TWO_CPUS: &str = "\
entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
00000100  00000000 00000000 00000000 00000003 00000000 00000000 00000000 00000000 00000002 0000000a 00000001 00000000  00000000 00000000 00000000 00000000
00000100  00000000 00000000 00000000 00000001 00000000 00000000 00000000 00000000 00000000 000000f0 00000000 00000000  00000000 00000000 00000000 00000000
";

    #[test]
    fn parses_the_hex_table_and_sums_over_cpus() {
        let s = parse_stat(TWO_CPUS).unwrap();
        assert_eq!(s.columns.len(), 17);
        assert_eq!(s.rows.len(), 2);
        // drop: 0x0a + 0xf0 = 10 + 240.
        assert_eq!(s.sum("drop"), Some(250));
        assert_eq!(s.sum("insert_failed"), Some(2));
        assert_eq!(s.sum("invalid"), Some(4));
        // entries is the table's count on every row, not a per-CPU figure.
        assert_eq!(s.entries(), Some(256));
        assert_eq!(s.sum("no_such_column"), None);
        assert_eq!(sums(&s).get("early_drop"), Some(&1));
        assert!(!sums(&s).contains_key("entries"));
    }

    #[test]
    fn rejects_what_is_not_the_table() {
        assert!(parse_stat("").is_err());
        assert!(parse_stat("entries drop\n").is_err(), "no row");
        assert!(parse_stat("entries drop\n00000001\n").is_err(), "short row");
        assert!(
            parse_stat("entries drop\n0000000g 00000001\n").is_err(),
            "not hex"
        );
    }

    fn snap(count: u64, drops: [u64; 2], insert_failed: u64) -> Snapshot {
        let text = format!(
            "entries insert_failed drop early_drop\n{count:08x} {insert_failed:08x} {:08x} 00000000\n{count:08x} 00000000 {:08x} 00000000\n",
            drops[0], drops[1]
        );
        Snapshot {
            count: Some(count),
            max: Some(300),
            stat: Some(parse_stat(&text).unwrap()),
        }
    }

    #[test]
    fn delta_is_per_cpu_and_wraps_at_32_bits() {
        let before = snap(10, [0xffff_fff0, 5], 0);
        let after = snap(300, [0x10, 7], 3);
        let d = after.delta(&before);
        // CPU 0 wrapped: 0x10 - 0xfffffff0 mod 2^32 = 32; CPU 1: 2.
        assert_eq!(d.drops, Some(34));
        assert_eq!(d.insert_failed, Some(3));
        assert_eq!(d.early_drops, Some(0));
        assert_eq!(d.entries, Some(300));
        assert_eq!(d.max_entries, Some(300));
        assert!(in_the_way(&d));
        // CPUs that came or went: no delta rather than a wrong one.
        let mut other = after.clone();
        other.stat.as_mut().unwrap().rows.pop();
        assert_eq!(other.delta(&before).drops, None);
    }

    #[test]
    fn explain_names_the_figures_and_the_fix_only_when_in_the_way() {
        let before = snap(10, [0, 0], 0);
        let full = snap(300, [40, 2], 0);
        let s = explain_from(Some(&before), &full);
        assert!(
            s.starts_with("conntrack: 300 of 300 entries in use (nf_conntrack_max 300); 42 packets dropped for want of an entry and 0 failed inserts meanwhile"),
            "{s}"
        );
        assert!(s.contains("nf_conntrack_max=N"), "{s}");
        let quiet = snap(11, [0, 0], 0);
        let s = explain_from(Some(&before), &quiet);
        assert_eq!(
            s,
            "conntrack: 11 of 300 entries in use (nf_conntrack_max 300); 0 packets dropped and 0 failed inserts meanwhile (/proc/net/stat/nf_conntrack)"
        );
        let s = explain_from(None, &full);
        assert!(
            s.contains("42 packets dropped for want of an entry and 0 failed inserts since boot"),
            "{s}"
        );
    }

    #[test]
    fn crr_arithmetic() {
        // 10,000 connections a second, each entry kept 120 s after close: 1.2 M entries;
        // Docker's 262,144 holds 2,184 a second for good.
        assert_eq!(entries_needed(10_000, 120), 1_200_000);
        assert_eq!(sustained_tps(262_144, 120), 2_184);
        assert_eq!(sustained_tps(262_144, 0), 262_144);
    }
}
