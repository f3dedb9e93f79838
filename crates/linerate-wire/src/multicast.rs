//! The `multicast` exchange (feature `multicast`): a client that sends UDP to a multicast
//! group (`linerate udp GROUP --receivers A,B,C`) orders each receiving `linerate serve` to
//! join the group, and collects what each one received.
//!
//! `C: hello  S: welcome  [C: auth  S: auth_ok]  C: mcast_join  S: mcast_joined | error
//! (the client sends its datagrams to the group)  C: mcast_stop  S: mcast_report, done`.
//!
//! A join is a test at the server: it counts against `--max-tests`, lasts at most the
//! server's `--max-duration`, names one group, and comes only after authentication on a
//! server that asks for it. Every field is checked here ([`McastJoin::check`],
//! [`McastReport::check_sizes`]) before either end acts on it.

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest interface name in a message (the kernel's IFNAMSIZ less its NUL).
pub const MAX_IFNAME: usize = 15;
/// Most warnings a report carries, and the longest one.
pub const MAX_WARNINGS: usize = 8;
/// Longest warning text.
pub const MAX_WARNING_TEXT: usize = 256;
/// Largest datagram payload a receiver reads (the IPv4 UDP limit).
pub const MAX_DATAGRAM: u32 = 65_507;

/// Client → server, instead of `test_request`: join this group and count what arrives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McastJoin {
    /// The group: an IPv4 (224.0.0.0/4) or IPv6 (ff00::/8) multicast address.
    pub group: IpAddr,
    /// The group's UDP port.
    pub port: u16,
    /// Source-specific multicast (SSM): only datagrams from this unicast source are
    /// received; `None` for any source.
    #[serde(default)]
    pub source: Option<IpAddr>,
    /// How long the client will send, milliseconds; the server stops receiving at this
    /// plus its grace, whatever the client does.
    pub duration_ms: u64,
    /// The datagram payload the client sends, bytes (at most [`MAX_DATAGRAM`]).
    pub len: u32,
}

impl McastJoin {
    /// Why the join cannot be honoured, in one line, or `Ok`. `max_duration_ms` is the
    /// server's limit.
    pub fn check(&self, max_duration_ms: u64) -> Result<(), String> {
        if !self.group.is_multicast() {
            return Err(format!(
                "{} is not a multicast group: give an address in 224.0.0.0/4 or ff00::/8",
                self.group
            ));
        }
        if self.port == 0 {
            return Err("the group's port is 0: give a UDP port from 1 to 65535".into());
        }
        if let Some(s) = self.source {
            if s.is_multicast() || s.is_unspecified() {
                return Err(format!("the SSM source {s} is not a unicast address"));
            }
            if s.is_ipv4() != self.group.is_ipv4() {
                return Err(format!(
                    "the SSM source {s} and the group {} are not of the same IP version",
                    self.group
                ));
            }
        }
        if self.duration_ms == 0 || self.duration_ms > max_duration_ms {
            return Err(format!(
                "a multicast test of {} ms is outside this server's limit of {} ms (linerate serve --max-duration)",
                self.duration_ms, max_duration_ms
            ));
        }
        if self.len < crate::probe::LEN as u32 || self.len > MAX_DATAGRAM {
            return Err(format!(
                "a datagram of {} bytes is outside {}..={MAX_DATAGRAM}",
                self.len,
                crate::probe::LEN
            ));
        }
        Ok(())
    }
}

/// Server → client: the group is joined; send now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McastJoined {
    /// The interface the server joined on (the one its control connection arrived on).
    #[serde(default)]
    pub interface: Option<String>,
    /// The server's boot id: one-way delay is reported only where it is the client's (one
    /// host's shared `CLOCK_MONOTONIC`, network namespaces included).
    #[serde(default)]
    pub boot_id: Option<String>,
}

/// Client → server: the client has stopped sending; report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McastStop {
    /// Datagrams the client sent (for the server's log).
    pub sent: u64,
}

/// One-way delay percentiles of the datagrams received, nanoseconds (sender's
/// `CLOCK_MONOTONIC` in the probe header to the receiver's at the read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McastDelay {
    /// Datagrams measured.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Smallest.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// Server → client: what the receiver counted between the join and the stop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McastReport {
    /// Datagrams counted (duplicates included; not those of [`McastReport::foreign`]).
    pub datagrams: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Datagrams whose sequence number had been seen already.
    pub duplicates: u64,
    /// Datagrams that arrived after a later one.
    pub reordered: u64,
    /// Highest sequence number seen, if any.
    #[serde(default)]
    pub highest_seq: Option<u64>,
    /// Datagrams from another source than the first one counted (or than the SSM
    /// source), or too short to hold the probe header: not counted.
    #[serde(default)]
    pub foreign: u64,
    /// RFC 3550 interarrival jitter at the end, nanoseconds.
    #[serde(default)]
    pub jitter_ns: Option<u64>,
    /// One-way delay (meaningful only on one host, see [`McastJoined::boot_id`]).
    #[serde(default)]
    pub delay: Option<McastDelay>,
    /// Receiving time: first to last datagram counted, nanoseconds.
    #[serde(default)]
    pub span_ns: u64,
    /// What the receiver could not do or noticed.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl McastReport {
    /// Checks the report against the protocol's caps.
    pub fn check_sizes(&self) -> Result<(), String> {
        if self.warnings.len() > MAX_WARNINGS {
            return Err(format!(
                "{} warnings, more than {MAX_WARNINGS}",
                self.warnings.len()
            ));
        }
        if self.warnings.iter().any(|w| w.len() > MAX_WARNING_TEXT) {
            return Err(format!("a warning longer than {MAX_WARNING_TEXT} bytes"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(group: &str) -> McastJoin {
        McastJoin {
            group: group.parse().unwrap(),
            port: 5001,
            source: None,
            duration_ms: 1000,
            len: 1400,
        }
    }

    #[test]
    fn join_checks_every_field() {
        assert!(join("239.1.2.3").check(60_000).is_ok());
        assert!(join("ff3e::8000:1").check(60_000).is_ok());
        let e = join("198.18.0.1").check(60_000).unwrap_err();
        assert!(e.contains("not a multicast group"), "{e}");
        let mut j = join("232.1.1.1");
        j.source = Some("ff02::1".parse().unwrap());
        assert!(j.check(60_000).unwrap_err().contains("not a unicast"));
        j.source = Some("2001:db8::1".parse().unwrap());
        assert!(j.check(60_000).unwrap_err().contains("same IP version"));
        j.source = Some("198.18.0.1".parse().unwrap());
        assert!(j.check(60_000).is_ok());
        j.duration_ms = 61_000;
        assert!(j.check(60_000).unwrap_err().contains("--max-duration"));
        let mut j = join("239.1.1.1");
        j.port = 0;
        assert!(j.check(60_000).is_err());
        let mut j = join("239.1.1.1");
        j.len = 70_000;
        assert!(j.check(60_000).is_err());
    }

    #[test]
    fn report_caps() {
        let mut r = McastReport::default();
        assert!(r.check_sizes().is_ok());
        r.warnings = vec!["x".repeat(MAX_WARNING_TEXT + 1)];
        assert!(r.check_sizes().is_err());
        r.warnings = vec!["x".into(); MAX_WARNINGS + 1];
        assert!(r.check_sizes().is_err());
    }
}
