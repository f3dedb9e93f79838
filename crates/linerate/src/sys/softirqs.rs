//! Software interrupts from `/proc/softirqs`.
//!
//! Format (fs/proc/softirqs.c): a header of CPU columns as in `/proc/interrupts`, then one
//! row per softirq type, `NAME:` and one `unsigned int` count per CPU (they wrap at 2³²):
//!
//! ```text
//!                     CPU0       CPU1
//!           HI:          0          0
//!       NET_TX:       8650       6790
//!       NET_RX:  100395122   78911504
//! ```
//!
//! linerate reports NET_RX (receive processing: NAPI polls, backlog processing) and NET_TX
//! (transmit completions and qdisc runs deferred to softirq context).

use std::path::Path;

use linerate_wire::host::SoftirqCounters;

use super::counter::align_cpus;
use super::interrupts::parse_cpu_header;
use super::{read_text, SysError, SysParseError};

/// The path [`read_proc_softirqs`] reads.
pub const PROC_SOFTIRQS: &str = "/proc/softirqs";

const WHAT: &str = "/proc/softirqs";

/// A parsed `/proc/softirqs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcSoftirqs {
    /// CPU numbers of the count columns.
    pub cpus: Vec<u32>,
    /// (softirq name, one count per CPU), in file order.
    pub rows: Vec<(String, Vec<u64>)>,
}

impl ProcSoftirqs {
    /// The per-CPU counts of softirq `name` ("NET_RX").
    pub fn get(&self, name: &str) -> Option<&[u64]> {
        self.rows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.as_slice())
    }

    /// The sum over CPUs of softirq `name`.
    pub fn total(&self, name: &str) -> Option<u64> {
        self.get(name)
            .map(|c| c.iter().fold(0u64, |a, &b| a.saturating_add(b)))
    }
}

/// Parses the contents of `/proc/softirqs`. Every row must have one count per CPU.
pub fn parse_proc_softirqs(text: &str) -> Result<ProcSoftirqs, SysParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (hno, header) = lines
        .next()
        .ok_or_else(|| SysParseError::new(WHAT, None, "empty"))?;
    let cpus = parse_cpu_header(WHAT, hno + 1, header)?;
    let mut rows = Vec::new();
    for (i, raw) in lines {
        let (name, rest) = raw
            .split_once(':')
            .ok_or_else(|| SysParseError::new(WHAT, Some(i + 1), "row without \"NAME:\""))?;
        let counts = rest
            .split_whitespace()
            .map(|w| {
                w.parse::<u64>().map_err(|_| {
                    SysParseError::new(WHAT, Some(i + 1), format!("{w:?} is not a count"))
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        if counts.len() != cpus.len() {
            return Err(SysParseError::new(
                WHAT,
                Some(i + 1),
                format!("{} counts for {} CPUs", counts.len(), cpus.len()),
            ));
        }
        rows.push((name.trim().to_string(), counts));
    }
    Ok(ProcSoftirqs { cpus, rows })
}

/// Reads and parses `/proc/softirqs`.
pub fn read_proc_softirqs() -> Result<ProcSoftirqs, SysError> {
    read_proc_softirqs_from(Path::new(PROC_SOFTIRQS))
}

/// Reads and parses a file in `/proc/softirqs` format (errors name `path`).
pub fn read_proc_softirqs_from(path: &Path) -> Result<ProcSoftirqs, SysError> {
    let text = read_text(path)?;
    parse_proc_softirqs(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// NET_RX and NET_TX deltas. `None` (with a warning) when either snapshot lacks one of
/// them; other warnings say which CPUs came or went.
pub fn softirq_delta(
    earlier: &ProcSoftirqs,
    later: &ProcSoftirqs,
) -> (Option<SoftirqCounters>, Vec<String>) {
    let (align, warning) = align_cpus(WHAT, &earlier.cpus, &later.cpus);
    let mut warnings: Vec<String> = warning.into_iter().collect();
    let pick = |name: &str| match (earlier.get(name), later.get(name)) {
        (Some(e), Some(l)) => Some(align.delta_u32(e, l)),
        _ => None,
    };
    match (pick("NET_RX"), pick("NET_TX")) {
        (Some(net_rx), Some(net_tx)) => (
            Some(SoftirqCounters {
                cpus: align.cpus.clone(),
                net_rx,
                net_tx,
            }),
            warnings,
        ),
        _ => {
            warnings.push(format!("{WHAT} has no NET_RX or NET_TX row"));
            (None, warnings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = include_str!("../../tests/fixtures/proc/softirqs-2cpu.txt");
    const TWO_LATER: &str = include_str!("../../tests/fixtures/proc/softirqs-2cpu-later.txt");
    const SIXTY_FOUR: &str = include_str!("../../tests/fixtures/proc/softirqs-64cpu.txt");

    #[test]
    fn parses_two_cpus() {
        let s = parse_proc_softirqs(TWO).unwrap();
        assert_eq!(s.cpus, vec![0, 1]);
        assert_eq!(s.rows.len(), 10);
        assert_eq!(s.get("NET_RX"), Some(&[100_395_122u64, 78_911_504][..]));
        assert_eq!(s.total("NET_TX"), Some(8650 + 6790));
        assert_eq!(s.get("NOPE"), None);
    }

    #[test]
    fn parses_64_cpus() {
        let s = parse_proc_softirqs(SIXTY_FOUR).unwrap();
        assert_eq!(s.cpus.len(), 64);
        // Generated: NET_RX on CPU n is 1000 * (n + 1); sum = 1000 * 64 * 65 / 2.
        assert_eq!(s.get("NET_RX").unwrap()[63], 64_000);
        assert_eq!(s.total("NET_RX"), Some(2_080_000));
        assert_eq!(s.total("NET_TX"), Some(63 * 64 / 2));
    }

    #[test]
    fn delta_is_exact() {
        let a = parse_proc_softirqs(TWO).unwrap();
        let b = parse_proc_softirqs(TWO_LATER).unwrap();
        let (d, w) = softirq_delta(&a, &b);
        assert!(w.is_empty());
        let d = d.unwrap();
        // softirqs-2cpu-later.txt adds NET_RX +4000/+6000, NET_TX +30/+12.
        assert_eq!(d.cpus, vec![0, 1]);
        assert_eq!(d.net_rx.per_cpu, vec![4000, 6000]);
        assert_eq!(d.net_rx.total, 10_000);
        assert_eq!(d.net_tx.per_cpu, vec![30, 12]);
        assert_eq!(d.net_tx.total, 42);
    }

    #[test]
    fn bad_rows_and_missing_net_rows() {
        let e = parse_proc_softirqs("  CPU0 CPU1\n HI: 1\n").unwrap_err();
        assert!(e.reason.contains("1 counts for 2 CPUs"), "{e}");
        assert!(parse_proc_softirqs("  CPU0\n HI: x\n").is_err());
        let s = parse_proc_softirqs("  CPU0\n HI: 1\n").unwrap();
        let (d, w) = softirq_delta(&s, &s);
        assert!(d.is_none());
        assert!(w[0].contains("NET_RX"), "{w:?}");
    }
}
