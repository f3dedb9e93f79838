//! Human-readable numbers with units, used by every rendering (the table, the live interval
//! lines, charts) and by the diagnosis's and doctor's messages.
//!
//! Rates use SI prefixes (1 kbit = 1000 bit) with four significant digits, byte counts use
//! IEC prefixes (1 KiB = 1024 B) with two decimals. Every function is pure; a non-finite or
//! negative rate prints as "-" because it cannot be a measurement.

const SI_RATE: [&str; 5] = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
const SI_PPS: [&str; 4] = ["pps", "kpps", "Mpps", "Gpps"];
const IEC_BYTES: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Bits per second with SI prefixes: "16.57 Gbit/s", "948.2 Mbit/s", "12.00 kbit/s".
pub fn format_bps(bps: f64) -> String {
    si4(bps, &SI_RATE)
}

/// Packets (datagrams) per second with SI prefixes: "1.235 Mpps", "812.3 kpps".
pub fn format_pps(pps: f64) -> String {
    si4(pps, &SI_PPS)
}

/// A count per second with an SI prefix before the unit: "9.600M datagrams/s",
/// "150.2k packets/s", "512.0 packets/s".
pub fn format_per_sec(value: f64, unit: &str) -> String {
    let s = si4(value, &["", "k", "M", "G"]);
    match s.split_once(' ') {
        Some((number, "")) => format!("{number} {unit}"),
        Some((number, prefix)) => format!("{number}{prefix} {unit}"),
        None => s,
    }
}

/// Bytes with IEC prefixes and two decimals: "1.50 GiB"; below 1 KiB the exact count: "512 B".
pub fn format_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut idx = 0;
    while v >= 1024.0 && idx + 1 < IEC_BYTES.len() {
        v /= 1024.0;
        idx += 1;
    }
    // 1023.999 KiB would print as "1024.00 KiB": move up a unit instead.
    if round_to(v, 2) >= 1024.0 && idx + 1 < IEC_BYTES.len() {
        v /= 1024.0;
        idx += 1;
    }
    format!("{v:.2} {}", IEC_BYTES[idx])
}

/// A duration: "10.00 s" from one second up, then "250 ms", "12.5 ms", "1.25 ms", "52.0 us",
/// and plain "ns" below a microsecond.
pub fn format_duration_ns(ns: u64) -> String {
    const UNITS: [(f64, &str); 3] = [(1e6, "ms"), (1e3, "us"), (1.0, "ns")];
    let secs = ns as f64 / 1e9;
    if ns >= 1_000_000_000 || round_to(ns as f64 / 1e6, 0) >= 1000.0 {
        return format!("{secs:.2} s");
    }
    for (i, (scale, unit)) in UNITS.iter().enumerate() {
        let v = ns as f64 / scale;
        if *unit == "ns" {
            return format!("{ns} ns");
        }
        if v >= 1.0 {
            // Rounding up into the next unit ("1000 us") reads as the larger unit instead.
            if round_to(v, 0) >= 1000.0 && i > 0 {
                let (up_scale, up_unit) = UNITS[i - 1];
                return format!("{} {up_unit}", three_sig(ns as f64 / up_scale));
            }
            return format!("{} {unit}", three_sig(v));
        }
    }
    format!("{ns} ns")
}

/// Three significant digits, never fewer than the integer part: 250, 12.5, 1.25.
fn three_sig(v: f64) -> String {
    if round_to(v, 1) >= 100.0 {
        format!("{v:.0}")
    } else if round_to(v, 2) >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Four significant digits with a prefix chosen so that 1 <= value < 1000.
fn si4(value: f64, units: &[&str]) -> String {
    if !value.is_finite() || value < 0.0 {
        return "-".to_string();
    }
    let Some(base) = units.first() else {
        return "-".to_string();
    };
    if value == 0.0 {
        return format!("0 {base}");
    }
    let mut v = value;
    let mut idx = 0;
    while v >= 1000.0 && idx + 1 < units.len() {
        v /= 1000.0;
        idx += 1;
    }
    let mut decimals = decimals_for_four_sig(v);
    let rounded = round_to(v, decimals as i32);
    if rounded >= 1000.0 && idx + 1 < units.len() {
        v /= 1000.0;
        idx += 1;
        decimals = decimals_for_four_sig(v);
    } else {
        // 9.9996 rounds to 10.000: keep four significant digits, not five.
        decimals = decimals_for_four_sig(rounded);
    }
    format!("{v:.decimals$} {}", units[idx])
}

fn decimals_for_four_sig(v: f64) -> usize {
    if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// A metric's value with its unit, chosen by the name's suffix.
pub fn format_metric(name: &str, v: f64) -> String {
    if name.ends_with("_bps") {
        format_bps(v)
    } else if name.ends_with("_pps") {
        format_pps(v)
    } else if name.ends_with("_fps") {
        format_per_sec(v, "frames/s")
    } else if name.ends_with("_ns") {
        format_duration_ns(v.max(0.0).round() as u64)
    } else if name.ends_with("_percent") {
        format!("{v:.2}%")
    } else if name.ends_with("per_sec") {
        format!("{v:.1}/s")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_second_with_a_prefix() {
        assert_eq!(
            format_per_sec(9_600_000.0, "datagrams/s"),
            "9.600M datagrams/s"
        );
        assert_eq!(format_per_sec(150_200.0, "packets/s"), "150.2k packets/s");
        assert_eq!(format_per_sec(512.0, "packets/s"), "512.0 packets/s");
        assert_eq!(format_per_sec(0.0, "packets/s"), "0 packets/s");
        assert_eq!(format_per_sec(-1.0, "packets/s"), "-");
    }

    #[test]
    fn bps_uses_si_prefixes_and_four_significant_digits() {
        assert_eq!(format_bps(16.57e9), "16.57 Gbit/s");
        assert_eq!(format_bps(948.2e6), "948.2 Mbit/s");
        assert_eq!(format_bps(12_000.0), "12.00 kbit/s");
        assert_eq!(format_bps(1.5e9), "1.500 Gbit/s");
        assert_eq!(format_bps(999.0), "999.0 bit/s");
        assert_eq!(format_bps(0.0), "0 bit/s");
        assert_eq!(format_bps(2.5e12), "2.500 Tbit/s");
        assert_eq!(format_bps(4.0e15), "4000.0 Tbit/s");
    }

    #[test]
    fn bps_rounding_moves_to_the_next_prefix() {
        // 999.96 Mbit/s would print as "1000.0 Mbit/s".
        assert_eq!(format_bps(999.96e6), "1.000 Gbit/s");
        // 9.9996 Gbit/s would print with five significant digits.
        assert_eq!(format_bps(9.9996e9), "10.00 Gbit/s");
    }

    #[test]
    fn bps_refuses_impossible_values() {
        assert_eq!(format_bps(f64::NAN), "-");
        assert_eq!(format_bps(f64::INFINITY), "-");
        assert_eq!(format_bps(-1.0), "-");
    }

    #[test]
    fn pps_uses_si_prefixes() {
        assert_eq!(format_pps(1_234_567.0), "1.235 Mpps");
        assert_eq!(format_pps(812_300.0), "812.3 kpps");
        assert_eq!(format_pps(950.0), "950.0 pps");
        assert_eq!(format_pps(0.0), "0 pps");
    }

    #[test]
    fn bytes_use_iec_prefixes() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1024), "1.00 KiB");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(3 << 29), "1.50 GiB");
        assert_eq!(format_bytes(1_258_291), "1.20 MiB");
        // 1 MiB - 1 B rounds to 1024.00 KiB: shown as 1.00 MiB.
        assert_eq!(format_bytes((1 << 20) - 1), "1.00 MiB");
        assert_eq!(format_bytes(u64::MAX), "16.00 EiB");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration_ns(10_000_000_000), "10.00 s");
        assert_eq!(format_duration_ns(1_000_000_000), "1.00 s");
        assert_eq!(format_duration_ns(250_000_000), "250 ms");
        assert_eq!(format_duration_ns(12_500_000), "12.5 ms");
        assert_eq!(format_duration_ns(1_250_000), "1.25 ms");
        assert_eq!(format_duration_ns(52_000), "52.0 us");
        assert_eq!(format_duration_ns(999), "999 ns");
        assert_eq!(format_duration_ns(0), "0 ns");
        // 999.6 ms rounds to 1000 ms: shown in seconds.
        assert_eq!(format_duration_ns(999_600_000), "1.00 s");
        // 999.7 us rounds to 1000 us: shown in milliseconds.
        assert_eq!(format_duration_ns(999_700), "1.00 ms");
    }

    #[test]
    fn metric_units() {
        assert_eq!(format_metric("throughput_bps", 1.5e9), "1.500 Gbit/s");
        assert_eq!(format_metric("latency_p99_ns", 30_000.0), "30.0 us");
        assert_eq!(format_metric("client_cpu_percent", 12.345), "12.35%");
        assert_eq!(format_metric("transactions_per_sec", 5.0), "5.0/s");
    }
}
