//! Protocol counters from `/proc/net/snmp`, `/proc/net/netstat` and `/proc/net/snmp6`.
//!
//! * `snmp` and `netstat` are pairs of lines, a header naming the counters and a line of
//!   values, both starting with the group (`Ip:`, `Tcp:`, `TcpExt:`, `IpExt:`, ...):
//!
//!   ```text
//!   Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens ... RetransSegs InErrs OutRsts
//!   Tcp: 1 200 120000 -1 1441 ... 5492 0 54
//!   ```
//!
//!   A few values are gauges or settings, and `Tcp.MaxConn` is -1, so values are `i64`.
//! * `snmp6` is one `Name value` per line (`Udp6InDatagrams 1249`); names are split into
//!   group and counter at the known prefixes (`Ip6`, `Icmp6`, `Udp6`, `UdpLite6`), so they
//!   read like the IPv4 ones: `Udp6.InDatagrams`. It is absent when IPv6 is disabled.
//!
//! Counters are named `Group.Name`. The files are read from `/proc/thread-self/net/` so a
//! thread that joined another network namespace reads that namespace's counters.

use super::counter::delta_u64;
use super::netdev::proc_net_path;
use super::{read_text, SysError, SysParseError};
use std::collections::BTreeMap;

/// Counters by `Group.Name`.
pub type SnmpCounters = BTreeMap<String, i64>;

fn parse_value(what: &'static str, line: usize, w: &str) -> Result<i64, SysParseError> {
    w.parse::<i64>()
        .map_err(|_| SysParseError::new(what, Some(line), format!("{w:?} is not an integer")))
}

/// Parses `/proc/net/snmp` or `/proc/net/netstat` (header/value line pairs).
pub fn parse_snmp_pairs(what: &'static str, text: &str) -> Result<SnmpCounters, SysParseError> {
    let mut out = SnmpCounters::new();
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    while let Some((hi, header)) = lines.next() {
        let (group, names) = header
            .split_once(':')
            .ok_or_else(|| SysParseError::new(what, Some(hi + 1), "header without \"Group:\""))?;
        let (vi, values) = lines.next().ok_or_else(|| {
            SysParseError::new(what, Some(hi + 1), format!("{group} header without values"))
        })?;
        let (vgroup, values) = values
            .split_once(':')
            .filter(|(g, _)| *g == group)
            .ok_or_else(|| {
                SysParseError::new(what, Some(vi + 1), format!("expected \"{group}:\" values"))
            })?;
        let names: Vec<&str> = names.split_whitespace().collect();
        let values: Vec<&str> = values.split_whitespace().collect();
        if names.len() != values.len() {
            return Err(SysParseError::new(
                what,
                Some(vi + 1),
                format!(
                    "{vgroup}: {} names but {} values",
                    names.len(),
                    values.len()
                ),
            ));
        }
        for (n, v) in names.into_iter().zip(values) {
            out.insert(format!("{group}.{n}"), parse_value(what, vi + 1, v)?);
        }
    }
    Ok(out)
}

/// Prefixes of `/proc/net/snmp6` names, longest first.
const SNMP6_GROUPS: &[&str] = &["UdpLite6", "Icmp6", "Udp6", "Ip6"];

/// Parses `/proc/net/snmp6` (`Name value` lines). Names without a known prefix are kept
/// under the group `Snmp6`.
pub fn parse_snmp6(text: &str) -> Result<SnmpCounters, SysParseError> {
    const WHAT: &str = "/proc/net/snmp6";
    let mut out = SnmpCounters::new();
    for (i, raw) in text.lines().enumerate() {
        let mut words = raw.split_whitespace();
        let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
            if raw.trim().is_empty() {
                continue;
            }
            return Err(SysParseError::new(
                WHAT,
                Some(i + 1),
                "expected \"Name value\"",
            ));
        };
        let key = SNMP6_GROUPS
            .iter()
            .find_map(|g| {
                name.strip_prefix(g)
                    .filter(|rest| !rest.is_empty())
                    .map(|rest| format!("{g}.{rest}"))
            })
            .unwrap_or_else(|| format!("Snmp6.{name}"));
        out.insert(key, parse_value(WHAT, i + 1, value)?);
    }
    Ok(out)
}

fn read_with(
    file: &str,
    parse: impl Fn(&str) -> Result<SnmpCounters, SysParseError>,
) -> Result<SnmpCounters, SysError> {
    let path = proc_net_path(file);
    let text = read_text(&path)?;
    parse(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// Reads `snmp`, `netstat` and `snmp6` of the calling thread's network namespace into one
/// map. `snmp` must be readable; a missing or unreadable `netstat` or `snmp6` (IPv6
/// disabled) only gives a warning.
pub fn read_snmp() -> Result<(SnmpCounters, Vec<String>), SysError> {
    // Windows: the IP Helper API's TCP and UDP counters, by the same names.
    if let Some(got) = super::system::protocol_counters() {
        return got
            .map(|v| (v.into_iter().collect(), Vec::new()))
            .map_err(|source| SysError::Io {
                path: "the host's protocol counters".into(),
                source,
            });
    }
    let mut all = read_with("snmp", |t| parse_snmp_pairs("/proc/net/snmp", t))?;
    let mut warnings = Vec::new();
    match read_with("netstat", |t| parse_snmp_pairs("/proc/net/netstat", t)) {
        Ok(m) => all.extend(m),
        Err(e) => warnings.push(e.to_string()),
    }
    match read_with("snmp6", parse_snmp6) {
        Ok(m) => all.extend(m),
        Err(SysError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            warnings.push("no /proc/net/snmp6 (IPv6 disabled): no IPv6 counters".to_string())
        }
        Err(e) => warnings.push(e.to_string()),
    }
    Ok((all, warnings))
}

/// Deltas of the counters `names` (as `Group.Name`). Counters missing from either snapshot
/// are left out silently (the kernel lacks them); one that went down (reset) is left out
/// with a warning; negative values (settings such as `Tcp.MaxConn`) are not counters and
/// are left out.
pub fn snmp_delta(
    earlier: &SnmpCounters,
    later: &SnmpCounters,
    names: &[&str],
) -> (BTreeMap<String, u64>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    for name in names {
        let (Some(&e), Some(&l)) = (earlier.get(*name), later.get(*name)) else {
            continue;
        };
        let (Ok(e), Ok(l)) = (u64::try_from(e), u64::try_from(l)) else {
            continue;
        };
        match delta_u64(e, l) {
            Some(d) => {
                out.insert((*name).to_string(), d);
            }
            None => warnings.push(format!(
                "{name} went down from {e} to {l} during the test (reset?): left out"
            )),
        }
    }
    (out, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = include_str!("../../tests/fixtures/proc/snmp.txt");
    const NETSTAT: &str = include_str!("../../tests/fixtures/proc/netstat.txt");
    const SNMP6: &str = include_str!("../../tests/fixtures/proc/snmp6.txt");

    #[test]
    fn parses_snmp_fixture() {
        let m = parse_snmp_pairs("snmp", SNMP).unwrap();
        // Values from the captured file (Debian 12 VM, Linux 6.18).
        assert_eq!(m["Tcp.MaxConn"], -1);
        assert_eq!(m["Tcp.RtoMin"], 200);
        assert!(m.contains_key("Tcp.RetransSegs"));
        assert!(m.contains_key("Udp.RcvbufErrors"));
        assert!(m.contains_key("UdpLite.InDatagrams"));
        assert!(m.contains_key("IcmpMsg.InType3"));
        assert_eq!(m["Ip.DefaultTTL"], 64);
    }

    #[test]
    fn parses_netstat_fixture() {
        let m = parse_snmp_pairs("netstat", NETSTAT).unwrap();
        for k in [
            "TcpExt.DelayedACKs",
            "TcpExt.DelayedACKLost",
            "TcpExt.TCPRcvQDrop",
            "TcpExt.TCPOFOQueue",
            "IpExt.InOctets",
            "MPTcpExt.MPCapableSYNRX",
        ] {
            assert!(m.contains_key(k), "{k}");
        }
        assert_eq!(m["TcpExt.SyncookiesSent"], 0);
    }

    #[test]
    fn parses_snmp6_fixture() {
        let m = parse_snmp6(SNMP6).unwrap();
        assert!(m.contains_key("Ip6.InReceives"));
        assert!(m.contains_key("Udp6.RcvbufErrors"));
        assert!(m.contains_key("UdpLite6.InDatagrams"));
        assert!(m.contains_key("Icmp6.InMsgs"));
        assert!(!m.keys().any(|k| k.starts_with("Snmp6.")), "{m:?}");
        let odd = parse_snmp6("Ip6InReceives 5\nWeird 7\n\n").unwrap();
        assert_eq!(odd["Ip6.InReceives"], 5);
        assert_eq!(odd["Snmp6.Weird"], 7);
    }

    #[test]
    fn rejects_malformed() {
        let e = parse_snmp_pairs("snmp", "Tcp: A B\nTcp: 1\n").unwrap_err();
        assert!(e.reason.contains("2 names but 1 values"), "{e}");
        assert_eq!(e.line, Some(2));
        assert!(parse_snmp_pairs("snmp", "Tcp: A\nUdp: 1\n").is_err());
        assert!(parse_snmp_pairs("snmp", "Tcp: A\n").is_err());
        assert!(parse_snmp_pairs("snmp", "Tcp: A\nTcp: x\n").is_err());
        assert!(parse_snmp6("Ip6InReceives\n").is_err());
        assert!(parse_snmp6("Ip6InReceives 1 2\n").is_err());
    }

    #[test]
    fn delta_is_exact() {
        let a = parse_snmp_pairs(
            "snmp",
            "Tcp: MaxConn RetransSegs InSegs\nTcp: -1 10 100\nUdp: InDatagrams\nUdp: 50\n",
        )
        .unwrap();
        let b = parse_snmp_pairs(
            "snmp",
            "Tcp: MaxConn RetransSegs InSegs\nTcp: -1 13 90\nUdp: InDatagrams\nUdp: 1050\n",
        )
        .unwrap();
        let (d, w) = snmp_delta(
            &a,
            &b,
            &[
                "Tcp.MaxConn",
                "Tcp.RetransSegs",
                "Tcp.InSegs",
                "Udp.InDatagrams",
                "Udp.NoPorts",
            ],
        );
        // RetransSegs 10 -> 13; InDatagrams 50 -> 1050; InSegs went down: left out, warned;
        // MaxConn is negative (a setting); NoPorts is absent.
        assert_eq!(
            d,
            BTreeMap::from([
                ("Tcp.RetransSegs".to_string(), 3),
                ("Udp.InDatagrams".to_string(), 1000)
            ])
        );
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("Tcp.InSegs"), "{w:?}");
    }

    #[test]
    fn reads_live_counters() {
        let (m, _w) = read_snmp().unwrap();
        assert!(m.contains_key("Udp.InDatagrams"));
        assert!(m.contains_key("TcpExt.DelayedACKs"));
    }
}
