//! Value parsers for sizes, rates and durations. Errors keep the original input.
//!
//! * sizes are bytes with binary suffixes, as iperf and ttcp read them: `128K` = 131072,
//!   `4M` = 4 MiB, `1G`; `KiB`/`MiB`/`GiB` are accepted too, and a plain number is bytes;
//! * rates are bits per second with decimal suffixes, as link speeds are written: `100M`
//!   = 100,000,000 bit/s, `1G`, `2.5G`; a plain number is bit/s;
//! * durations are seconds (`10`, `1.5`) or carry a unit (`500ms`, `2s`, `1m`).

use std::time::Duration;

fn split_num(s: &str) -> (&str, &str) {
    let i = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..i], s[i..].trim())
}

/// Parses a byte size.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, suffix) = split_num(t);
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "invalid size '{s}': use a number of bytes with an optional K, M or G suffix (e.g. 128K)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid size '{s}': expected a number such as 128K or 65536"))?;
    let bytes = v * mult as f64;
    if !((0.0..1.8e19).contains(&bytes)) {
        return Err(format!("invalid size '{s}': out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a size that must fit in 32 bits (socket buffers, write sizes).
pub fn parse_size32(s: &str) -> Result<u32, String> {
    let v = parse_size(s)?;
    u32::try_from(v).map_err(|_| format!("invalid size '{s}': at most 4G"))
}

/// Parses a rate in bits per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, suffix) = split_num(t);
    let mult: f64 = match suffix
        .to_ascii_lowercase()
        .trim_end_matches("bit/s")
        .trim_end_matches("bps")
    {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(format!(
            "invalid rate '{s}': use bits per second with an optional K, M or G suffix (e.g. 100M)"
        ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid rate '{s}': expected a number such as 100M or 2.5G"))?;
    let bps = v * mult;
    if !((0.0..1.8e19).contains(&bps)) {
        return Err(format!("invalid rate '{s}': out of range"));
    }
    Ok(bps.round() as u64)
}

/// Parses a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, suffix) = split_num(t);
    let v: f64 = num.parse().map_err(|_| {
        format!("invalid duration '{s}': expected seconds such as 10 or 1.5, or 500ms")
    })?;
    let secs = match suffix {
        "" | "s" | "sec" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration '{s}': use a number of seconds, or a unit of ms, s, m or h"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("invalid duration '{s}': out of range"))
}

/// Parses a CPU pair `LOCAL[,REMOTE]` (iperf3 -A, netperf -T).
pub fn parse_affinity(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let mut it = s.splitn(2, ',');
    let p = |x: Option<&str>| -> Result<Option<u32>, String> {
        match x.map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("invalid CPU '{v}' in '{s}': use LOCAL[,REMOTE] such as 0,1")),
        }
    };
    Ok((p(it.next())?, p(it.next())?))
}

/// A percentage from 0 to 100 (`--max-loss 0.5`; a trailing `%` is allowed).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "invalid percentage '{s}': use a number from 0 to 100, such as 0.1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("128K"), Ok(131072));
        assert_eq!(parse_size("128KiB"), Ok(131072));
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("12Q").unwrap_err().contains("'12Q'"));
        assert!(parse_size("").is_err());
        assert!(parse_size32("8G").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100M"), Ok(100_000_000));
        assert_eq!(parse_rate("2.5G"), Ok(2_500_000_000));
        assert_eq!(parse_rate("64000"), Ok(64_000));
        assert_eq!(parse_rate("10Mbps"), Ok(10_000_000));
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("3 fortnights").is_err());
    }

    #[test]
    fn affinity() {
        assert_eq!(parse_affinity("0,1"), Ok((Some(0), Some(1))));
        assert_eq!(parse_affinity("1"), Ok((Some(1), None)));
        assert_eq!(parse_affinity(",1"), Ok((None, Some(1))));
        assert!(parse_affinity("a,b").is_err());
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("0.5"), Ok(0.5));
        assert_eq!(parse_percent("2%"), Ok(2.0));
        assert_eq!(parse_percent("0"), Ok(0.0));
        assert!(parse_percent("101").is_err());
        assert!(parse_percent("-1").is_err());
        assert!(parse_percent("lots").is_err());
    }
}
