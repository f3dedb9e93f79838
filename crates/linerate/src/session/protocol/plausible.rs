//! Whether a peer's figures can be true. The client prints what the server measured; a
//! broken or hostile server can send anything that decodes ("18446744073709552.0 Tbit/s",
//! CPU "1e308%"). Figures that cannot be true are left out with a warning, never printed as
//! measured. Pure: the client machine calls [`report`] on the server's results and
//! [`interval`] on each of its intervals.

use std::time::Duration;

use linerate_wire::report::{CpuReport, IntervalReport, SideReport};

/// The fastest rate a report may claim, bits per second (10 Tbit/s: no link or loopback
/// comes near it).
pub const MAX_RATE_BPS: f64 = 1e13;
/// Most CPUs a host may claim.
pub const MAX_CPUS: u32 = 1 << 16;
/// A report's durations may exceed the time the client saw the test run by this much
/// (the server's engine starts before `start` and drains after `stop`).
pub const DURATION_SLACK: Duration = Duration::from_secs(30);

/// Checks the server's report of a test that ran `seen` by the client's clock (from
/// `start` to `results`). Implausible CPU figures are removed, with a note each; bytes
/// inconsistent with time make the whole report doubtful: `Err` says why, and the
/// caller leaves the report out.
pub fn report(r: &mut SideReport, seen: Duration) -> Result<Vec<String>, String> {
    let longest = (seen + DURATION_SLACK).as_nanos();
    let who = "the server's report";
    let t = &r.totals;
    let mut spans = vec![
        ("total", t.tx_bytes.max(t.rx_bytes), t.duration_ns),
        ("sent", t.tx_bytes, t.tx_duration_ns),
        ("received", t.rx_bytes, t.rx_duration_ns),
    ];
    for s in &r.streams {
        spans.push(("stream", s.bytes, s.duration_ns));
    }
    for (what, bytes, ns) in spans {
        if u128::from(ns) > longest {
            return Err(format!(
                "{who} is left out: it claims a {what} duration of {:.0} s for a test that ran {:.1} s",
                ns as f64 / 1e9,
                seen.as_secs_f64()
            ));
        }
        if !rate_ok(bytes, ns, longest) {
            return Err(format!(
                "{who} is left out: its {what} figure of {bytes} bytes in {:.3} s is not plausible (above {} Tbit/s)",
                ns as f64 / 1e9,
                MAX_RATE_BPS / 1e12
            ));
        }
    }
    let mut notes = Vec::new();
    if let Some(n) = r.host.cpu_count.filter(|n| *n > MAX_CPUS) {
        notes.push(format!(
            "{who}: its CPU count {n} is not plausible; its CPU figures are left out"
        ));
        r.cpu = None;
        r.process_cpu = None;
    }
    if let Some(c) = &r.cpu {
        if let Err(e) = cpu_ok(c) {
            notes.push(format!("{who}: {e}; its CPU utilisation is left out"));
            r.cpu = None;
        }
    }
    if let Some(p) = &r.process_cpu {
        // A report that does not say how many CPUs it has is held to the most any host
        // may claim.
        let cpus = u128::from(r.host.cpu_count.unwrap_or(MAX_CPUS).max(1));
        let used = u128::from(p.user_ns) + u128::from(p.system_ns);
        if used > longest * cpus {
            notes.push(format!(
                "{who}: linerate's own CPU time of {:.0} s is more than {cpus} CPUs can give in {:.1} s; it is left out",
                used as f64 / 1e9,
                seen.as_secs_f64()
            ));
            r.process_cpu = None;
        }
    }
    if let Some(p) = &r.profile {
        if let Err(e) = p.check() {
            notes.push(format!("{who}: its profile has {e}; it is left out"));
            r.profile = None;
        }
    }
    for iv in &mut r.intervals {
        if iv.cpu_percent.is_some_and(|c| !percent_ok(c)) {
            iv.cpu_percent = None;
        }
    }
    r.intervals.retain(interval_rate_ok);
    Ok(notes)
}

/// [`report`] applied to `r`: the report with its implausible figures left out, or `None`
/// when it is doubtful as a whole; the notes, or why it was left out, go to `warnings`.
pub fn checked(
    mut r: SideReport,
    seen: Duration,
    warnings: &mut Vec<String>,
) -> Option<SideReport> {
    match report(&mut r, seen) {
        Ok(notes) => {
            warnings.extend(notes);
            Some(r)
        }
        Err(why) => {
            warnings.push(why);
            None
        }
    }
}

/// Checks one of the server's intervals: a CPU figure outside 0-100 % is removed; bytes
/// that no link could carry in the interval make the interval doubtful (`Err`: leave it
/// out).
pub fn interval(iv: &mut IntervalReport) -> Result<(), String> {
    if !interval_rate_ok(iv) {
        return Err(format!(
            "an interval of {} bytes in {:.3} s",
            iv.tx_bytes.max(iv.rx_bytes),
            iv.end_ns.saturating_sub(iv.start_ns) as f64 / 1e9
        ));
    }
    if iv.cpu_percent.is_some_and(|c| !percent_ok(c)) {
        iv.cpu_percent = None;
    }
    Ok(())
}

fn interval_rate_ok(iv: &IntervalReport) -> bool {
    let ns = iv.end_ns.saturating_sub(iv.start_ns);
    // An interval of 0 ns has no rate to print; its bytes must still be possible in 1 ms.
    let ns = ns.max(1_000_000);
    iv.end_ns >= iv.start_ns
        && rate_ok(iv.tx_bytes, ns, u128::MAX)
        && rate_ok(iv.rx_bytes, ns, u128::MAX)
}

/// Whether `bytes` in `ns` is at most [`MAX_RATE_BPS`]; with `ns` 0 (no rate is shown) the
/// bytes must fit the longest time the test can have taken.
fn rate_ok(bytes: u64, ns: u64, longest_ns: u128) -> bool {
    let span = if ns == 0 { longest_ns } else { u128::from(ns) };
    let span = span.min(u128::from(u64::MAX)) as f64;
    bytes as f64 * 8.0 <= MAX_RATE_BPS * span / 1e9
}

fn percent_ok(p: f64) -> bool {
    p.is_finite() && (0.0..=100.0).contains(&p)
}

fn cpu_ok(c: &CpuReport) -> Result<(), String> {
    for (name, v) in [
        ("utilisation", c.util_percent),
        ("user", c.user_percent),
        ("system", c.system_percent),
        ("irq", c.irq_percent),
        ("softirq", c.softirq_percent),
        ("steal", c.steal_percent),
        ("busiest CPU", c.busiest_cpu_util_percent),
        ("busiest CPU's softirq", c.busiest_cpu_softirq_percent),
    ] {
        if !percent_ok(v) {
            return Err(format!("its CPU {name} of {v:e}% is not plausible"));
        }
    }
    if c.cpu_count > MAX_CPUS {
        return Err(format!("its CPU count {} is not plausible", c.cpu_count));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::report::{HostInfo, Role, Totals};

    fn side() -> SideReport {
        SideReport {
            role: Role::Server,
            host: HostInfo {
                cpu_count: Some(2),
                ..HostInfo::default()
            },
            streams: Vec::new(),
            intervals: Vec::new(),
            totals: Totals {
                duration_ns: 1_000_000_000,
                rx_bytes: 1_250_000_000,
                rx_duration_ns: 1_000_000_000,
                ..Totals::default()
            },
            cpu: Some(CpuReport {
                cpu_count: 2,
                util_percent: 40.0,
                user_percent: 10.0,
                system_percent: 30.0,
                irq_percent: 0.0,
                softirq_percent: 0.0,
                steal_percent: 0.0,
                busiest_cpu: 1,
                busiest_cpu_util_percent: 70.0,
                busiest_cpu_softirq_percent: 0.0,
            }),
            process_cpu: None,
            host_counters: None,
            interface: None,
            control_segments: None,
            profile: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_real_report_passes_untouched() {
        let mut r = side();
        assert_eq!(report(&mut r, Duration::from_secs(1)), Ok(vec![]));
        assert_eq!(r, side());
    }

    #[test]
    fn absurd_bytes_or_durations_leave_the_report_out() {
        let mut r = side();
        r.totals.rx_bytes = u64::MAX;
        let e = report(&mut r, Duration::from_secs(1)).unwrap_err();
        assert!(e.contains("not plausible"), "{e}");
        let mut r = side();
        r.totals.rx_duration_ns = 1;
        r.totals.rx_bytes = 1 << 40;
        assert!(report(&mut r, Duration::from_secs(1)).is_err());
        let mut r = side();
        r.totals.duration_ns = u64::MAX;
        let e = report(&mut r, Duration::from_secs(1)).unwrap_err();
        assert!(e.contains("duration"), "{e}");
    }

    #[test]
    fn absurd_cpu_figures_are_left_out_with_a_note() {
        let mut r = side();
        if let Some(c) = r.cpu.as_mut() {
            c.util_percent = 1e308;
        }
        let notes = report(&mut r, Duration::from_secs(1)).unwrap();
        assert!(r.cpu.is_none());
        assert!(notes[0].contains("1e308"), "{notes:?}");
        let mut iv = IntervalReport {
            end_ns: 1_000_000_000,
            rx_bytes: 1000,
            cpu_percent: Some(-3.0),
            ..IntervalReport::default()
        };
        assert_eq!(interval(&mut iv), Ok(()));
        assert_eq!(iv.cpu_percent, None);
        iv.rx_bytes = u64::MAX;
        assert!(interval(&mut iv).is_err());
    }
}
