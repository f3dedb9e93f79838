//! Latency under load (`--latency` on `linerate tcp|udp`): what a stream test's load does to
//! the round-trip time of light traffic beside it (bufferbloat), and the responsiveness in
//! round trips per minute (RPM).
//!
//! Definitions:
//! * probes: a TCP request/response on its own connection (netperf TCP_RR, 1-byte request and
//!   response) and a UDP one (UDP_RR, 16-byte datagrams), [`PROBE_RATE_TPS`] transactions a
//!   second each, paced from a schedule, latency taken from each request's intended send
//!   time (so a probe stuck behind a queue is not hidden by the ones it delays);
//! * idle: the probes alone for a baseline before the load starts; loaded: the same probes
//!   during the load's measured window (its warm-up left out);
//! * increase: loaded median over idle median (a ratio) and their difference (ns), TCP probe
//!   first, else UDP;
//! * the loaded flows' smoothed RTT: the sending end's TCP_INFO `rtt` at the end of each
//!   measured interval (the mean over its streams), as the interval reports carry it;
//! * responsiveness follows the TCP-only formula of draft-ietf-ippm-responsiveness-09
//!   (§ "Aggregating the Measurements"): RPM = (60000 / ((TM(tcp_f) + TM(http_f)) / 2) +
//!   60000 / TM(http_l)) / 2, with TM the single-sided 95 % trimmed mean in ms. What
//!   differs: no TLS nor HTTP; the foreign probe is one persistent TCP_RR connection, so its
//!   request/response time stands for both the handshake (`tcp_f`) and the request
//!   (`http_f`); the self probe (`http_l`) is the loaded flows' TCP_INFO smoothed RTT, which
//!   the draft allows when a load connection cannot carry probes; the samples are those of
//!   the whole measured window, not of a final moving-average window of 4 intervals, and
//!   the load is the test's own (no ramp-up until goodput is stable). A UDP load has no
//!   TCP flow: its RPM is the foreign part alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rr::{HistogramBucket, LatencySummary};

/// Probe transactions per second, for each probe.
pub const PROBE_RATE_TPS: u64 = 10;

/// Requests a probe keeps in flight at most: at [`PROBE_RATE_TPS`] a second this keeps the
/// schedule through RTTs up to 6.4 s, so that a deep queue delays probes but never throttles
/// them.
pub const PROBE_BURST: u32 = 64;

/// A UDP probe unanswered this long is lost (longer than any queue worth measuring).
pub const PROBE_UDP_TIMEOUT_MS: u64 = 5_000;

/// The idle baseline's length, ms.
pub const IDLE_BASELINE_MS: u64 = 2_000;

/// The share of the samples the trimmed mean keeps (the smallest ones): the draft's 95 %.
pub const TRIM_KEEP: f64 = 0.95;

/// The draft whose formula [`Responsiveness`] follows.
pub const RESPONSIVENESS_DRAFT: &str = "draft-ietf-ippm-responsiveness-09";

/// What the load did to the probes' round trips.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyUnderLoad {
    /// Probe transactions per second, each probe.
    pub probe_rate_tps: u64,
    /// The idle baseline's length, ns.
    pub idle_duration_ns: u64,
    /// TCP probe (TCP_RR on its own connection) before the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_tcp: Option<LatencySummary>,
    /// UDP probe (UDP_RR) before the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_udp: Option<LatencySummary>,
    /// TCP probe during the load's measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_tcp: Option<LatencySummary>,
    /// UDP probe during the load's measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_udp: Option<LatencySummary>,
    /// UDP probes unanswered within the probe time-out during the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_udp_lost: Option<u64>,
    /// Payload bytes both probes moved (both ways) during the load's measured window.
    pub loaded_probe_bytes: u64,
    /// The loaded flows' smoothed RTT (sender's TCP_INFO each measured interval): median, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_srtt_p50_us: Option<f64>,
    /// The same samples' 95 % trimmed mean, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_srtt_trimmed_mean_us: Option<f64>,
    /// Interval samples behind the smoothed-RTT figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_srtt_samples: Option<u64>,
    /// Which probe the increase is taken from: "tcp" or "udp".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase_probe: Option<String>,
    /// Loaded median over idle median of that probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase_ratio: Option<f64>,
    /// Loaded median minus idle median of that probe, ns (negative when the load made it
    /// faster, as a busy-polling CPU can).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_delay_ns: Option<i64>,
    /// Responsiveness under the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responsiveness: Option<Responsiveness>,
}

/// Round trips per minute ([`RESPONSIVENESS_DRAFT`], TCP-only formula; see the module's
/// notes for what differs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Responsiveness {
    /// The draft followed.
    pub draft: String,
    /// 60000 / TM(loaded TCP probe, ms).
    pub foreign_rpm: f64,
    /// 60000 / TM(loaded flows' smoothed RTT, ms); absent for a UDP load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_rpm: Option<f64>,
    /// The mean of the foreign and self parts (the foreign part alone without a self part).
    pub rpm: f64,
    /// The draft's band: "poor" (< 300), "fair" (< 1000), "good" (< 6000) or "excellent".
    pub rating: String,
    /// 60000 / TM(idle TCP probe, ms): the same path without the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_rpm: Option<f64>,
}

/// The single-sided trimmed mean of a histogram: the mean of its smallest
/// ⌈`keep` × count⌉ samples (bucket values), ns. `None` when empty or `keep` is not in
/// (0, 1].
pub fn trimmed_mean_ns(buckets: &[HistogramBucket], keep: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    if total == 0 || !(keep > 0.0 && keep <= 1.0) {
        return None;
    }
    let mut left = ((keep * total as f64).ceil() as u64).clamp(1, total);
    let n = left;
    let mut sum = 0.0;
    for b in buckets {
        let take = b.count.min(left);
        sum += take as f64 * b.value_ns as f64;
        left -= take;
        if left == 0 {
            break;
        }
    }
    Some(sum / n as f64)
}

/// The single-sided trimmed mean of plain samples (any order): the mean of the smallest
/// ⌈`keep` × n⌉. `None` when empty or `keep` is not in (0, 1].
pub fn trimmed_mean(samples: &[f64], keep: f64) -> Option<f64> {
    if samples.is_empty() || !(keep > 0.0 && keep <= 1.0) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = ((keep * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[..n].iter().sum::<f64>() / n as f64)
}

/// The median of plain samples (the mean of the middle two for an even count).
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    })
}

/// Round trips per minute for a round trip of `ms` milliseconds.
fn per_minute(ms: f64) -> Option<f64> {
    (ms > 0.0 && ms.is_finite()).then(|| 60_000.0 / ms)
}

/// The draft's band of an RPM figure.
pub fn rating(rpm: f64) -> &'static str {
    if rpm < 300.0 {
        "poor"
    } else if rpm < 1000.0 {
        "fair"
    } else if rpm < 6000.0 {
        "good"
    } else {
        "excellent"
    }
}

/// Responsiveness from the loaded TCP probe's histogram, the loaded flows' smoothed-RTT
/// samples (µs; empty for a UDP load) and the idle TCP probe's histogram.
pub fn responsiveness(
    loaded_tcp: &[HistogramBucket],
    loaded_srtt_us: &[f64],
    idle_tcp: &[HistogramBucket],
) -> Option<Responsiveness> {
    let foreign = per_minute(trimmed_mean_ns(loaded_tcp, TRIM_KEEP)? / 1e6)?;
    let self_rpm = trimmed_mean(loaded_srtt_us, TRIM_KEEP).and_then(|us| per_minute(us / 1e3));
    let rpm = match self_rpm {
        Some(s) => (foreign + s) / 2.0,
        None => foreign,
    };
    Some(Responsiveness {
        draft: RESPONSIVENESS_DRAFT.to_string(),
        foreign_rpm: foreign,
        self_rpm,
        rpm,
        rating: rating(rpm).to_string(),
        idle_rpm: trimmed_mean_ns(idle_tcp, TRIM_KEEP).and_then(|ns| per_minute(ns / 1e6)),
    })
}

/// The increase of one probe's median: (loaded / idle, loaded − idle ns).
pub fn increase(idle: &LatencySummary, loaded: &LatencySummary) -> Option<(f64, i64)> {
    if idle.count == 0 || loaded.count == 0 || idle.p50_ns == 0 {
        return None;
    }
    Some((
        loaded.p50_ns as f64 / idle.p50_ns as f64,
        loaded.p50_ns as i64 - idle.p50_ns as i64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(value_ns: u64, count: u64) -> HistogramBucket {
        HistogramBucket { value_ns, count }
    }

    #[test]
    fn trimmed_mean_drops_the_largest_five_percent() {
        // 100 samples: 95 at 1 ms, 5 at 1 s. Keeping ⌈95⌉ leaves the 1 ms ones: 1 ms.
        let h = [b(1_000_000, 95), b(1_000_000_000, 5)];
        assert_eq!(trimmed_mean_ns(&h, 0.95), Some(1_000_000.0));
        // 20 samples: 19 at 10, 1 at 30 → keep ⌈19⌉ = 19 → 10. With 21 (keep ⌈19.95⌉ = 20),
        // one 30 stays: (19 × 10 + 30) / 20 = 11.
        assert_eq!(trimmed_mean_ns(&[b(10, 19), b(30, 1)], 0.95), Some(10.0));
        assert_eq!(trimmed_mean_ns(&[b(10, 19), b(30, 2)], 0.95), Some(11.0));
        assert_eq!(trimmed_mean_ns(&[], 0.95), None);
        assert_eq!(trimmed_mean_ns(&[b(10, 1)], 0.0), None);
        // Plain samples, any order.
        assert_eq!(trimmed_mean(&[30.0, 10.0, 20.0], 1.0), Some(20.0));
        assert_eq!(trimmed_mean(&[30.0, 10.0, 20.0], 0.5), Some(15.0));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn rpm_follows_the_draft_formula_and_bands() {
        // Foreign TM 400 ms → 150 RPM; self TM 200 ms → 300 RPM; RPM (150 + 300) / 2 = 225,
        // "poor". Idle TM 1 ms → 60,000.
        let r = responsiveness(&[b(400_000_000, 10)], &[200_000.0; 10], &[b(1_000_000, 10)])
            .expect("rpm");
        assert_eq!(r.foreign_rpm, 150.0);
        assert_eq!(r.self_rpm, Some(300.0));
        assert_eq!(r.rpm, 225.0);
        assert_eq!(r.rating, "poor");
        assert_eq!(r.idle_rpm, Some(60_000.0));
        assert_eq!(r.draft, RESPONSIVENESS_DRAFT);
        // A UDP load: the foreign part alone.
        let r = responsiveness(&[b(20_000_000, 10)], &[], &[]).expect("rpm");
        assert_eq!((r.rpm, r.self_rpm, r.idle_rpm), (3000.0, None, None));
        assert_eq!(r.rating, "good");
        assert_eq!(rating(299.9), "poor");
        assert_eq!(rating(999.0), "fair");
        assert_eq!(rating(6000.0), "excellent");
        // No loaded TCP samples: no figure, never a fake one.
        assert_eq!(responsiveness(&[], &[1000.0], &[]), None);
    }

    #[test]
    fn increase_is_the_ratio_and_difference_of_medians() {
        let s = crate::model::fixtures::latency_summary;
        assert_eq!(
            increase(&s(100_000, 20), &s(50_000_000, 90)),
            Some((500.0, 49_900_000))
        );
        assert_eq!(
            increase(&s(100_000, 20), &s(50_000, 90)),
            Some((0.5, -50_000))
        );
        assert_eq!(increase(&s(100_000, 0), &s(50_000, 90)), None);
    }
}
