//! Hardware interrupts from `/proc/interrupts`, and which of them belong to an interface.
//!
//! Format (kernel/irq/proc.c `show_interrupts`, arch `arch_show_interrupts`):
//!
//! ```text
//!            CPU0       CPU1
//!  38:          0       1790 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
//! LOC:    3221740    2693633   Local timer interrupts
//! ERR:          0
//! ```
//!
//! * The header names the online CPUs; numbers can have gaps (offline CPUs have no column).
//! * A row is `IRQ:` (a number, or an architecture name such as `NMI`, `LOC`, `RES`,
//!   `IPI0`), up to one count per CPU, then a free-form description (chip, hardware IRQ and
//!   trigger, handler names). Some rows print a single total instead of per-CPU counts
//!   (x86 `ERR`, `MIS`); a row with fewer counts than CPUs is kept as a total-only row.
//! * Counts are `unsigned int` and wrap at 2³² (see [`super::counter`]).
//!
//! # Which IRQs are the interface's ([`IrqMatcher`])
//!
//! Drivers name their interrupts in one of three ways, tried in this order (the first rule
//! that finds any row wins, so a NIC's queue IRQs are not diluted by its other ones):
//!
//! 1. after the interface: `eth0-TxRx-0`, `enp3s0f0-rx-1`, `eth0` (ixgbe, igb, i40e, ena);
//! 2. after the virtio device behind it, which `/sys/class/net/IF/device` names
//!    (`virtio2-input.0`, `virtio2-output.0`; the `-config` IRQ is not a queue and is left
//!    out);
//! 3. after the PCI address (`ethtool -i` bus-info) of the device: `mlx5_comp0@pci:0000:3b:00.0`,
//!    `i40e-0000:3b:00.0:misc` — every IRQ of that PCI function.
//!
//! A name matches only as a whole word: the characters around it must not be letters or
//! digits, so `eth1` does not match `eth10-TxRx-0` and `eth0` does not match `veth0`.

use std::collections::BTreeSet;
use std::path::Path;

use linerate_wire::host::{
    InterruptCounters, IrqRow, PerCpu, MAX_INTERFACE_IRQ_ROWS, MAX_IRQ_ROWS,
};

use super::counter::{add_into, align_cpus, delta_u32};
use super::{read_text, SysError, SysParseError};

/// The path [`read_proc_interrupts`] reads.
pub const PROC_INTERRUPTS: &str = "/proc/interrupts";

const WHAT: &str = "/proc/interrupts";

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IrqLine {
    /// The IRQ ("38", "LOC").
    pub irq: String,
    /// The counts, one per CPU of the header when the row is per-CPU; fewer (usually one)
    /// for total-only rows.
    pub counts: Vec<u64>,
    /// The text after the counts, runs of whitespace collapsed to one space.
    pub description: String,
}

impl IrqLine {
    /// Sum of the counts.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// Whether the IRQ is a device interrupt (numbered), not an architecture one.
    pub fn is_device(&self) -> bool {
        !self.irq.is_empty() && self.irq.bytes().all(|b| b.is_ascii_digit())
    }
}

/// A parsed `/proc/interrupts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcInterrupts {
    /// CPU numbers of the count columns, from the header.
    pub cpus: Vec<u32>,
    /// The rows, in file order.
    pub lines: Vec<IrqLine>,
}

impl ProcInterrupts {
    /// Whether `line` has one count per CPU.
    pub fn is_per_cpu(&self, line: &IrqLine) -> bool {
        line.counts.len() == self.cpus.len()
    }
}

/// Parses a header of CPU columns (`CPU0 CPU1 CPU3`), as in `/proc/interrupts` and
/// `/proc/softirqs`.
pub(crate) fn parse_cpu_header(
    what: &'static str,
    line_no: usize,
    line: &str,
) -> Result<Vec<u32>, SysParseError> {
    let cpus = line
        .split_whitespace()
        .map(|w| {
            w.strip_prefix("CPU")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| {
                    SysParseError::new(
                        what,
                        Some(line_no),
                        format!("header column {w:?} is not CPU<N>"),
                    )
                })
        })
        .collect::<Result<Vec<u32>, _>>()?;
    if cpus.is_empty() {
        return Err(SysParseError::new(
            what,
            Some(line_no),
            "no CPU columns in the header",
        ));
    }
    Ok(cpus)
}

/// Parses the contents of `/proc/interrupts`.
pub fn parse_proc_interrupts(text: &str) -> Result<ProcInterrupts, SysParseError> {
    let mut lines_iter = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (hno, header) = lines_iter
        .next()
        .ok_or_else(|| SysParseError::new(WHAT, None, "empty"))?;
    let cpus = parse_cpu_header(WHAT, hno + 1, header)?;
    let mut lines = Vec::new();
    for (i, raw) in lines_iter {
        let (name, rest) = raw.split_once(':').ok_or_else(|| {
            SysParseError::new(WHAT, Some(i + 1), "row without \"IRQ:\" at its start")
        })?;
        let irq = name.trim();
        if irq.is_empty() || irq.contains(char::is_whitespace) {
            return Err(SysParseError::new(
                WHAT,
                Some(i + 1),
                format!("{irq:?} is not an IRQ name"),
            ));
        }
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::with_capacity(cpus.len());
        while counts.len() < cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        let description = words.collect::<Vec<_>>().join(" ");
        lines.push(IrqLine {
            irq: irq.to_string(),
            counts,
            description,
        });
    }
    Ok(ProcInterrupts { cpus, lines })
}

/// Reads and parses `/proc/interrupts`.
pub fn read_proc_interrupts() -> Result<ProcInterrupts, SysError> {
    read_proc_interrupts_from(Path::new(PROC_INTERRUPTS))
}

/// Reads and parses a file in `/proc/interrupts` format (errors name `path`).
pub fn read_proc_interrupts_from(path: &Path) -> Result<ProcInterrupts, SysError> {
    let text = read_text(path)?;
    parse_proc_interrupts(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// Whether `needle` occurs in `hay` as a whole word (no ASCII letter or digit on either side).
pub fn contains_word(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let bytes = hay.as_bytes();
    hay.match_indices(needle).any(|(at, _)| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        let after = bytes.get(at + needle.len());
        !before.is_some_and(u8::is_ascii_alphanumeric)
            && !after.is_some_and(u8::is_ascii_alphanumeric)
    })
}

/// Recognises an interface's interrupts by name (see the module docs for the rules).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IrqMatcher {
    /// Interface name ("eth0").
    pub iface: String,
    /// The virtio device behind it ("virtio2"), from `/sys/class/net/IF/device`.
    pub virtio: Option<String>,
    /// PCI address of its device ("0000:3b:00.0").
    pub bus_info: Option<String>,
}

impl IrqMatcher {
    /// A matcher by interface name only.
    pub fn new(iface: &str) -> Self {
        IrqMatcher {
            iface: iface.to_string(),
            ..IrqMatcher::default()
        }
    }

    /// The IRQs of `ints` that belong to the interface, in file order.
    pub fn matching_irqs(&self, ints: &ProcInterrupts) -> Vec<String> {
        let by = |pred: &dyn Fn(&str) -> bool| -> Vec<String> {
            ints.lines
                .iter()
                .filter(|l| l.is_device() && pred(&l.description))
                .map(|l| l.irq.clone())
                .collect()
        };
        let named = by(&|d| contains_word(d, &self.iface));
        if !named.is_empty() {
            return named;
        }
        if let Some(v) = &self.virtio {
            let (input, output) = (format!("{v}-input"), format!("{v}-output"));
            let virtio = by(&|d| contains_word(d, &input) || contains_word(d, &output));
            if !virtio.is_empty() {
                return virtio;
            }
        }
        match &self.bus_info {
            Some(bus) if looks_like_pci_address(bus) => by(&|d| contains_word(d, bus)),
            _ => Vec::new(),
        }
    }
}

/// `dddd:bb:dd.f` (hex digits), the form of a PCI bus-info.
pub fn looks_like_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b':',
            10 => *c == b'.',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Interrupt deltas between two snapshots.
///
/// `interface` names the IRQs recognised as the interface's (`None`: no interface was
/// given). Rows are matched by IRQ name; a row only in `later` counts from 0. Rows and the
/// caps are as documented on [`InterruptCounters`]. The warnings say which CPUs came or went.
pub fn interrupt_delta(
    earlier: &ProcInterrupts,
    later: &ProcInterrupts,
    interface: Option<&BTreeSet<String>>,
) -> (InterruptCounters, Vec<String>) {
    let (align, warning) = align_cpus(WHAT, &earlier.cpus, &later.cpus);
    let mut all = PerCpu::default();
    let mut iface_sum = PerCpu::default();
    let mut iface_seen = false;
    let mut changed: Vec<(usize, IrqRow)> = Vec::new();
    for (pos, l) in later.lines.iter().enumerate() {
        let e = earlier.lines.iter().find(|e| e.irq == l.irq);
        let per_cpu_both = later.is_per_cpu(l) && e.is_none_or(|e| earlier.is_per_cpu(e));
        let (per_cpu, total) = if per_cpu_both {
            let zeros;
            let ec = match e {
                Some(e) => &e.counts,
                None => {
                    zeros = vec![0; earlier.cpus.len()];
                    &zeros
                }
            };
            let d = align.delta_u32(ec, &l.counts);
            (d.per_cpu, d.total)
        } else {
            (
                Vec::new(),
                delta_u32(e.map_or(0, IrqLine::total), l.total()),
            )
        };
        let matched = interface.is_some_and(|m| m.contains(&l.irq));
        all.total = all.total.saturating_add(total);
        add_into(&mut all, &per_cpu);
        if matched {
            iface_seen = true;
            iface_sum.total = iface_sum.total.saturating_add(total);
            add_into(&mut iface_sum, &per_cpu);
        }
        if total > 0 {
            changed.push((
                pos,
                IrqRow {
                    irq: l.irq.clone(),
                    description: l.description.clone(),
                    per_cpu,
                    total,
                    matched_interface: matched,
                },
            ));
        }
    }
    for p in [&mut all, &mut iface_sum] {
        p.per_cpu.resize(align.cpus.len(), 0);
    }
    let (rows, omitted) = cap_rows(changed);
    let counters = InterruptCounters {
        cpus: align.cpus,
        all,
        interface: iface_seen.then_some(iface_sum),
        rows,
        rows_omitted: omitted,
    };
    (counters, warning.into_iter().collect())
}

/// Keeps every interface row (largest [`MAX_INTERFACE_IRQ_ROWS`]) and the largest
/// [`MAX_IRQ_ROWS`] others, returned in file order, and the number left out.
fn cap_rows(changed: Vec<(usize, IrqRow)>) -> (Vec<IrqRow>, u32) {
    let total = changed.len();
    let (mut mine, mut others): (Vec<_>, Vec<_>) =
        changed.into_iter().partition(|(_, r)| r.matched_interface);
    for (v, cap) in [
        (&mut mine, MAX_INTERFACE_IRQ_ROWS),
        (&mut others, MAX_IRQ_ROWS),
    ] {
        // Largest first; ties keep file order (stable sort).
        v.sort_by_key(|r| std::cmp::Reverse(r.1.total));
        v.truncate(cap);
    }
    let mut kept: Vec<(usize, IrqRow)> = mine.into_iter().chain(others).collect();
    kept.sort_by_key(|(pos, _)| *pos);
    let omitted = u32::try_from(total - kept.len()).unwrap_or(u32::MAX);
    (kept.into_iter().map(|(_, r)| r).collect(), omitted)
}

#[cfg(test)]
mod tests;
