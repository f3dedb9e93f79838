//! A multicast test: its plan, and its record (`linerate udp GROUP --receivers ... --json`,
//! schema `docs/json-schema/multicast-v1.json`): the sender's figures and one row per
//! receiver, each from that receiver's own report. Nothing is averaged over receivers: a
//! receiver that did not join or received nothing says so in its row.

use std::net::IpAddr;
use std::time::Duration;

use linerate_wire::multicast::{McastDelay, McastReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::plan::{Credentials, Debug};

/// A multicast test, every default applied (`cli::multicast::multicast_plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct McastPlan {
    /// The group.
    pub group: IpAddr,
    /// The group's UDP port.
    pub port: u16,
    /// The SSM source, if any.
    pub source: Option<IpAddr>,
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u32,
    /// The interface to send on, if not the route's.
    pub interface: Option<String>,
    /// Datagram payload, bytes.
    pub len: u32,
    /// Paced rate, bits per second of UDP payload.
    pub rate_bps: u64,
    /// How long to send.
    pub duration: Duration,
    /// The receivers' `linerate serve`s: (host, control port).
    pub receivers: Vec<(String, u16)>,
    /// Time to connect to each receiver.
    pub connect_timeout: Duration,
    /// Credentials for receivers that ask for them.
    pub auth: Option<Credentials>,
    /// Log control frames.
    pub debug: Debug,
}

/// What the sender did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McastSender {
    /// Datagrams sent.
    pub datagrams: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Sends the kernel refused (not counted as sent).
    pub send_errors: u64,
    /// From the first send to the last, seconds.
    pub elapsed_s: f64,
    /// Payload bits per second over `elapsed_s`; absent when nothing was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
}

/// How a receiver took part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiverStatus {
    /// Joined and received datagrams.
    Received,
    /// Joined and received no datagram of the sender.
    ReceivedNothing,
    /// Never joined (unreachable, refused, too old).
    NotJoined,
    /// Joined, but its report never came.
    NoReport,
}

/// One receiver's figures, from its own report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReceiverRow {
    /// The receiver as named (`host:port`).
    pub name: String,
    /// What happened there.
    pub status: ReceiverStatus,
    /// Why it did not join or report, or what it noticed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The interface it joined on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Datagrams it counted, duplicates included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<u64>,
    /// Payload bytes it counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Datagrams sent and never received: sent less the distinct ones received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// `lost` in percent of the datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// Datagrams received again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// Datagrams received after a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered: Option<u64>,
    /// Datagrams of another source (or not linerate's) that it did not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<u64>,
    /// RFC 3550 interarrival jitter, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<f64>,
    /// One-way delay, only where the receiver shares this host's clock (same boot id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<McastDelay>,
    /// Payload bits per second from its first datagram to its last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
}

impl ReceiverRow {
    /// A receiver that never joined, and why.
    pub fn not_joined(name: &str, why: String) -> ReceiverRow {
        ReceiverRow::empty(name, ReceiverStatus::NotJoined, Some(why), None)
    }

    /// A receiver that joined but sent no report.
    pub fn no_report(name: &str, interface: Option<String>, why: String) -> ReceiverRow {
        ReceiverRow::empty(name, ReceiverStatus::NoReport, Some(why), interface)
    }

    fn empty(
        name: &str,
        status: ReceiverStatus,
        error: Option<String>,
        interface: Option<String>,
    ) -> ReceiverRow {
        ReceiverRow {
            name: name.to_string(),
            status,
            error,
            interface,
            datagrams: None,
            bytes: None,
            lost: None,
            loss_percent: None,
            duplicates: None,
            reordered: None,
            foreign: None,
            jitter_us: None,
            delay: None,
            throughput_bps: None,
        }
    }

    /// A receiver's row from its report, `sent` datagrams having gone out; the delay only
    /// when `same_clock` (the receiver runs on this host).
    pub fn from_report(
        name: &str,
        interface: Option<String>,
        r: &McastReport,
        sent: u64,
        same_clock: bool,
    ) -> ReceiverRow {
        let distinct = r.datagrams.saturating_sub(r.duplicates);
        let lost = sent.saturating_sub(distinct);
        let status = if r.datagrams == 0 {
            ReceiverStatus::ReceivedNothing
        } else {
            ReceiverStatus::Received
        };
        let error = (!r.warnings.is_empty()).then(|| r.warnings.join("; "));
        ReceiverRow {
            datagrams: Some(r.datagrams),
            bytes: Some(r.bytes),
            lost: Some(lost),
            loss_percent: (sent > 0).then(|| lost as f64 * 100.0 / sent as f64),
            duplicates: Some(r.duplicates),
            reordered: Some(r.reordered),
            foreign: Some(r.foreign),
            jitter_us: r.jitter_ns.map(|j| j as f64 / 1e3),
            delay: r.delay.filter(|_| same_clock),
            throughput_bps: (r.span_ns > 0 && r.datagrams > 1)
                .then(|| r.bytes as f64 * 8e9 / r.span_ns as f64),
            ..ReceiverRow::empty(name, status, error, interface)
        }
    }
}

/// The record of a multicast test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MulticastRecord {
    /// "linerate x.y.z".
    pub tool_version: String,
    /// The group.
    pub group: String,
    /// The group's UDP port.
    pub port: u16,
    /// The SSM source, when the test was source-specific.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// TTL (IPv4) or hop limit (IPv6) of the datagrams sent.
    pub ttl: u32,
    /// The interface sent on, when one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Datagram payload, bytes.
    pub len_bytes: u32,
    /// Paced rate asked for, bits per second of payload.
    pub rate_bps: u64,
    /// The sender's figures.
    pub sender: McastSender,
    /// One row per receiver, in the order named.
    pub receivers: Vec<ReceiverRow>,
    /// What the run noticed: a receiver that did not join or received nothing, by name.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl MulticastRecord {
    /// The warnings every reader must see: each receiver that did not join, did not report
    /// or received nothing, by name.
    pub fn receiver_warnings(&self) -> Vec<String> {
        self.receivers
            .iter()
            .filter_map(|r| match r.status {
                ReceiverStatus::Received => None,
                ReceiverStatus::ReceivedNothing => Some(format!(
                    "receiver {} joined {} but received nothing of the {} datagrams sent",
                    r.name, self.group, self.sender.datagrams
                )),
                ReceiverStatus::NotJoined => Some(format!(
                    "receiver {} never joined {}: {}",
                    r.name,
                    self.group,
                    r.error.as_deref().unwrap_or("no reason given")
                )),
                ReceiverStatus::NoReport => Some(format!(
                    "receiver {} joined {} but sent no report: {}",
                    r.name,
                    self.group,
                    r.error.as_deref().unwrap_or("no reason given")
                )),
            })
            .collect()
    }

    /// The highest loss of the receivers that reported, percent (for `--max-loss`): a
    /// receiver without figures does not count as lossless.
    pub fn worst_loss_percent(&self) -> Option<f64> {
        self.receivers
            .iter()
            .filter_map(|r| r.loss_percent)
            .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.max(l))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(datagrams: u64, duplicates: u64) -> McastReport {
        McastReport {
            datagrams,
            bytes: datagrams * 100,
            duplicates,
            span_ns: 1_000_000_000,
            jitter_ns: Some(1500),
            delay: Some(McastDelay {
                count: datagrams,
                ..McastDelay::default()
            }),
            ..McastReport::default()
        }
    }

    #[test]
    fn loss_is_sent_less_distinct_received() {
        let r = ReceiverRow::from_report("a:5301", None, &report(90, 5), 100, true);
        assert_eq!(r.status, ReceiverStatus::Received);
        assert_eq!(r.lost, Some(15));
        assert_eq!(r.loss_percent, Some(15.0));
        assert_eq!(r.jitter_us, Some(1.5));
        assert!(r.delay.is_some());
        assert_eq!(r.throughput_bps, Some(9000.0 * 8.0));
        // Another host's clock: no delay.
        let r = ReceiverRow::from_report("a:5301", None, &report(90, 0), 100, false);
        assert!(r.delay.is_none());
    }

    #[test]
    fn missing_receivers_are_named_and_not_averaged() {
        let rec = MulticastRecord {
            tool_version: "linerate test".into(),
            group: "239.1.1.1".into(),
            port: 5001,
            source: None,
            ttl: 1,
            interface: None,
            len_bytes: 100,
            rate_bps: 1_000_000,
            sender: McastSender {
                datagrams: 100,
                ..McastSender::default()
            },
            receivers: vec![
                ReceiverRow::from_report("a:1", None, &report(100, 0), 100, true),
                ReceiverRow::from_report("b:1", None, &report(0, 0), 100, true),
                ReceiverRow::not_joined("c:1", "connection refused".into()),
                ReceiverRow::from_report("d:1", None, &report(50, 0), 100, true),
            ],
            warnings: vec![],
        };
        let w = rec.receiver_warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("b:1") && w[0].contains("received nothing"));
        assert!(w[1].contains("c:1") && w[1].contains("connection refused"));
        assert_eq!(rec.worst_loss_percent(), Some(100.0));
        assert_eq!(rec.receivers[2].loss_percent, None);
    }
}
