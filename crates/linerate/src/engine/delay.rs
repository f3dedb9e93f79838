//! One-way delay of UDP datagrams (protocol 1.1, feature `one_way_delay`).
//!
//! Senders stamp each probe with `CLOCK_MONOTONIC` ([`mono_ns`]); a receiver that shares the
//! clock (same machine: network namespaces do not have their own monotonic clock) subtracts it
//! from its own reading when `recvmmsg` returns. The delay therefore includes both ends' socket
//! and stack time as well as the path; with a batch the receive time is that of the call, so a
//! datagram that waited in the socket behind others is charged that wait.
//!
//! The recorder keeps count, sum, minimum and maximum exactly and an HdrHistogram with two
//! significant digits (1% resolution) for the median and the 99th percentile.

use hdrhistogram::Histogram;
use linerate_wire::report::DelayReport;

/// Largest delay the histogram resolves (longer ones are recorded as this), nanoseconds.
const MAX_TRACKED_NS: u64 = 60_000_000_000;

/// `CLOCK_MONOTONIC` in nanoseconds (0 if the clock cannot be read, which Linux never does).
pub fn mono_ns() -> u64 {
    crate::sys::system::monotonic_ns().unwrap_or(0)
}

/// Accumulates the delays of one receiving stream.
pub struct DelayRecorder {
    hist: Option<Histogram<u64>>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    tag_seq: Option<u64>,
    tagged_ns: Option<u64>,
}

impl DelayRecorder {
    /// A recorder that also keeps the delay of datagram `tag_seq`.
    pub fn new(tag_seq: Option<u64>) -> DelayRecorder {
        DelayRecorder {
            hist: Histogram::new_with_bounds(1, MAX_TRACKED_NS, 2).ok(),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            tag_seq,
            tagged_ns: None,
        }
    }

    /// Accounts datagram `seq` sent at `tx_ns` and received at `rx_ns` (both
    /// `CLOCK_MONOTONIC`). A datagram "received before it was sent" is ignored.
    pub fn on_packet(&mut self, seq: u64, tx_ns: u64, rx_ns: u64) {
        let Some(d) = rx_ns.checked_sub(tx_ns) else {
            return;
        };
        self.count += 1;
        self.sum_ns += u128::from(d);
        self.min_ns = self.min_ns.min(d);
        self.max_ns = self.max_ns.max(d);
        if let Some(h) = self.hist.as_mut() {
            h.saturating_record(d.clamp(1, MAX_TRACKED_NS));
        }
        if self.tag_seq == Some(seq) && self.tagged_ns.is_none() {
            self.tagged_ns = Some(d);
        }
    }

    /// The summary; `None` when no delay was measured.
    pub fn report(&self) -> Option<DelayReport> {
        (self.count > 0).then(|| DelayReport {
            samples: self.count,
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / self.count as f64,
            p50_ns: self.hist.as_ref().map(|h| h.value_at_quantile(0.5)),
            p99_ns: self.hist.as_ref().map(|h| h.value_at_quantile(0.99)),
            max_ns: self.max_ns,
            tagged_ns: self.tagged_ns,
        })
    }
}

/// Merges the delay reports of several streams: exact count, mean, minimum and maximum; the
/// percentiles cannot be merged from summaries and are left out (unless there is only one).
pub fn merge(reports: &[&DelayReport]) -> Option<DelayReport> {
    match reports {
        [] => None,
        [one] => Some((*one).clone()),
        many => {
            let samples: u64 = many.iter().map(|r| r.samples).sum();
            let weighted: f64 = many.iter().map(|r| r.mean_ns * r.samples as f64).sum();
            Some(DelayReport {
                samples,
                min_ns: many.iter().map(|r| r.min_ns).min().unwrap_or(0),
                mean_ns: if samples > 0 {
                    weighted / samples as f64
                } else {
                    0.0
                },
                p50_ns: None,
                p99_ns: None,
                max_ns: many.iter().map(|r| r.max_ns).max().unwrap_or(0),
                tagged_ns: many.iter().find_map(|r| r.tagged_ns),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_exact_extremes_and_percentiles_within_one_percent() {
        let mut r = DelayRecorder::new(Some(7));
        // Delays 1 µs .. 100 µs, one each; datagram 7 has 8 µs.
        for i in 0..100u64 {
            r.on_packet(i, 1_000_000, 1_000_000 + (i + 1) * 1000);
        }
        r.on_packet(100, 5_000, 4_000); // before it was sent: ignored
        let rep = r.report().unwrap();
        assert_eq!(rep.samples, 100);
        assert_eq!((rep.min_ns, rep.max_ns), (1000, 100_000));
        assert!((rep.mean_ns - 50_500.0).abs() < 1e-9);
        assert_eq!(rep.tagged_ns, Some(8000));
        // R's nearest-rank median of 1..100 µs is 50 µs; HdrHistogram answers within 1%.
        let p50 = rep.p50_ns.unwrap() as f64;
        assert!((p50 - 50_000.0).abs() <= 500.0, "{p50}");
        let p99 = rep.p99_ns.unwrap() as f64;
        assert!((p99 - 99_000.0).abs() <= 990.0, "{p99}");
    }

    #[test]
    fn nothing_measured_is_absent() {
        assert_eq!(DelayRecorder::new(None).report(), None);
    }

    #[test]
    fn merging_weights_the_means() {
        let a = DelayReport {
            samples: 1,
            min_ns: 10,
            mean_ns: 10.0,
            max_ns: 10,
            ..DelayReport::default()
        };
        let b = DelayReport {
            samples: 3,
            min_ns: 20,
            mean_ns: 30.0,
            max_ns: 40,
            tagged_ns: Some(25),
            ..DelayReport::default()
        };
        let m = merge(&[&a, &b]).unwrap();
        assert_eq!((m.samples, m.min_ns, m.max_ns), (4, 10, 40));
        assert!((m.mean_ns - 25.0).abs() < 1e-12);
        assert_eq!((m.p50_ns, m.tagged_ns), (None, Some(25)));
        assert_eq!(merge(&[&a]), Some(a.clone()));
        assert!(mono_ns() > 0);
    }
}
