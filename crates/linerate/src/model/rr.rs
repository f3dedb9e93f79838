//! Request/response results (netperf TCP_RR, TCP_CRR, UDP_RR): transaction rate, latency
//! percentiles from an HDR histogram, lost transactions and service demand per transaction.
//!
//! Definitions:
//! * a transaction counts when its whole response has arrived at the client; UDP requests
//!   whose response did not come within the time-out are *lost* transactions;
//! * transactions per second = transactions / the client's measured window (warm-up out);
//! * latency = response complete − send time. Without a target rate the send time is when
//!   the request was written. With a target rate it is the **intended** send time from the
//!   schedule, so a stall that delays later requests is counted in their latency instead of
//!   being hidden (coordinated omission, Gil Tene); the latency from the actual write is kept
//!   as `latency_from_actual_send`;
//! * percentiles are HdrHistogram's `value_at_quantile` with 3 significant digits (values
//!   within 0.1 % are equivalent), min/max/mean/stddev from the same histogram (stddev is the
//!   population deviation HdrHistogram computes, absent with fewer than 2 samples);
//! * a bounceback's exchange is a transaction: its latency runs from the request's write to
//!   its response's last byte, the server's hold included;
//! * service demand per transaction (netperf's `calc_service_demand` for RR tests):
//!   utilisation (fraction of all CPUs) × CPU count × window µs / transactions, µs of CPU
//!   per transaction, for each end, both over the client's transaction count.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which request/response test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrKind {
    /// One TCP connection per stream (netperf TCP_RR).
    TcpRr,
    /// A new TCP connection per transaction (netperf TCP_CRR).
    TcpCrr,
    /// UDP datagrams (netperf UDP_RR).
    UdpRr,
    /// Bursts of one-at-a-time exchanges on one TCP connection, on a schedule, with a hold
    /// at the server (iperf2's bounceback).
    TcpBounceback,
}

impl RrKind {
    /// netperf's test name: "TCP_RR", "TCP_CRR", "UDP_RR".
    pub fn netperf_name(self) -> &'static str {
        match self {
            RrKind::TcpRr => "TCP_RR",
            RrKind::TcpCrr => "TCP_CRR",
            RrKind::UdpRr => "UDP_RR",
            RrKind::TcpBounceback => "TCP_BOUNCEBACK",
        }
    }
}

/// One bucket of a latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistogramBucket {
    /// A representative value of the bucket (the middle of its equivalent range), ns.
    pub value_ns: u64,
    /// Samples in the bucket.
    pub count: u64,
}

/// Latency figures of one set of transactions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Transactions measured.
    pub count: u64,
    /// Smallest, ns.
    pub min_ns: u64,
    /// Arithmetic mean, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns; absent with fewer than two samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev_ns: Option<f64>,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// 99.99th percentile, ns.
    pub p99_99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// The histogram: non-empty buckets in ascending order, about 1 % wide (2 significant
    /// digits), so that percentiles can be recomputed and runs merged.
    pub histogram: Vec<HistogramBucket>,
}

/// The request/response part of a [`super::RunRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RrSummary {
    /// TCP_RR, TCP_CRR or UDP_RR.
    pub kind: RrKind,
    /// Bytes per request.
    pub request_bytes: u32,
    /// Bytes per response.
    pub response_bytes: u32,
    /// Transactions in flight per stream.
    pub burst: u32,
    /// Bounceback: exchanges per burst, the period between bursts' starts, the server's hold
    /// (each exchange's latency includes it) and whether TCP_QUICKACK was set. Its
    /// transactions are the exchanges, `transactions_per_sec` the exchanges per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounceback: Option<linerate_wire::control::Bounceback>,
    /// Target rate over all streams, transactions per second, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
    /// UDP: time-out after which a request counts as lost, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Completed transactions in the measured window.
    pub transactions: u64,
    /// The client's measured window, ns.
    pub duration_ns: u64,
    /// Transactions per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_sec: Option<f64>,
    /// UDP: requests whose response did not arrive within the time-out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_transactions: Option<u64>,
    /// UDP: lost / (completed + lost), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// UDP: responses that arrived after their request had timed out (not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_responses: Option<u64>,
    /// TCP_CRR: connections opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Latency (from the intended send time when a target rate was set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    /// With a target rate: latency from the actual write of each request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_from_actual_send: Option<LatencySummary>,
    /// Client µs of CPU per transaction (netperf's service demand, us/Tr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_service_demand_us_per_tran: Option<f64>,
    /// Server µs of CPU per transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_service_demand_us_per_tran: Option<f64>,
}

/// Service demand per transaction: netperf's `calc_service_demand` with transactions in
/// place of KB: util% / 100 × CPUs × window µs / transactions.
pub fn service_demand_us_per_tran(
    util_percent: f64,
    cpu_count: u32,
    duration_ns: u64,
    transactions: u64,
) -> Option<f64> {
    if transactions == 0 || duration_ns == 0 {
        return None;
    }
    let cpu_us = util_percent / 100.0 * f64::from(cpu_count) * duration_ns as f64 / 1000.0;
    Some(cpu_us / transactions as f64)
}

/// Recomputes a percentile (0–100) from a stored histogram: the value of the bucket holding
/// the sample of rank ⌈p/100 × count⌉ (nearest rank). `None` for an empty histogram.
pub fn histogram_percentile(buckets: &[HistogramBucket], p: f64) -> Option<u64> {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    if total == 0 || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = ((p / 100.0 * total as f64).ceil() as u64).max(1);
    let mut seen = 0u64;
    for b in buckets {
        seen += b.count;
        if seen >= rank {
            return Some(b.value_ns);
        }
    }
    buckets.last().map(|b| b.value_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_demand_per_transaction_matches_netperf_definition() {
        // 25 % of 2 CPUs for 10 s = 5 CPU-seconds = 5e6 µs over 250,000 transactions
        // = 20 µs per transaction.
        let sd = service_demand_us_per_tran(25.0, 2, 10_000_000_000, 250_000);
        assert_eq!(sd, Some(20.0));
        assert_eq!(service_demand_us_per_tran(25.0, 2, 10, 0), None);
    }

    #[test]
    fn percentile_from_buckets_uses_nearest_rank() {
        // 10 samples: 4 at 10 µs, 5 at 20 µs, 1 at 1 ms. Rank of p50 = 5 → 20 µs;
        // p40 = rank 4 → 10 µs; p99 = rank ⌈9.9⌉ = 10 → 1 ms.
        let b = [
            HistogramBucket {
                value_ns: 10_000,
                count: 4,
            },
            HistogramBucket {
                value_ns: 20_000,
                count: 5,
            },
            HistogramBucket {
                value_ns: 1_000_000,
                count: 1,
            },
        ];
        assert_eq!(histogram_percentile(&b, 50.0), Some(20_000));
        assert_eq!(histogram_percentile(&b, 40.0), Some(10_000));
        assert_eq!(histogram_percentile(&b, 99.0), Some(1_000_000));
        assert_eq!(histogram_percentile(&[], 50.0), None);
    }
}
