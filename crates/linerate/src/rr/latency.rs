//! Latency recording with HdrHistogram (Gil Tene's high dynamic range histogram).
//!
//! Each stream thread records into its own histogram (no locks in the data path); the engine
//! merges them at the end. Values are nanoseconds from 1 ns to 100 s with 3 significant
//! digits: any two values within 0.1 % are equivalent, whatever their magnitude, in about
//! 200 KiB per histogram. A value above 100 s is recorded as 100 s (`saturating_record`).

use hdrhistogram::Histogram;

use crate::model::{HistogramBucket, LatencySummary};

/// Largest latency a histogram holds, ns (100 s).
pub const MAX_LATENCY_NS: u64 = 100_000_000_000;

/// An empty latency histogram.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
        .expect("invariant: constant bounds 1..1e11 with 3 digits are valid")
}

/// Adds `other` into `into`; both come from [`new_histogram`], so the bounds match.
pub fn merge(into: &mut Histogram<u64>, other: &Histogram<u64>) {
    // Same bounds and precision: `add` cannot fail; were it to, the samples would be missing
    // from the merged figures, which the count in the summary shows.
    let _ = into.add(other);
}

/// The figures of `h`, with its non-empty buckets re-binned to 2 significant digits
/// (about 1 % wide) for the record; `None` when nothing was recorded.
pub fn summarize(h: &Histogram<u64>) -> Option<LatencySummary> {
    if h.is_empty() {
        return None;
    }
    let mut coarse = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 2)
        .expect("invariant: constant bounds 1..1e11 with 2 digits are valid");
    for v in h.iter_recorded() {
        let _ = coarse.record_n(v.value_iterated_to(), v.count_at_value());
    }
    let histogram = coarse
        .iter_recorded()
        .map(|v| HistogramBucket {
            value_ns: coarse.median_equivalent(v.value_iterated_to()),
            count: v.count_at_value(),
        })
        .collect();
    let q = |p: f64| h.value_at_quantile(p);
    Some(LatencySummary {
        count: h.len(),
        min_ns: h.min(),
        mean_ns: h.mean(),
        stddev_ns: (h.len() >= 2).then(|| h.stdev()),
        p50_ns: q(0.50),
        p90_ns: q(0.90),
        p99_ns: q(0.99),
        p99_9_ns: q(0.999),
        p99_99_ns: q(0.9999),
        max_ns: h.max(),
        histogram,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        // 1..=10,000 µs, once each. The p-quantile of 1..N is ⌈pN⌉ µs: p50 = 5,000 µs,
        // p90 = 9,000 µs, p99 = 9,900 µs, p99.9 = 9,990 µs, p99.99 = 9,999 µs; within
        // HdrHistogram's 0.1 % equivalence at 3 digits. Mean 5,000.5 µs; population stddev
        // √((N² − 1)/12) µs = 2,886.75 µs.
        let mut h = new_histogram();
        for us in 1..=10_000u64 {
            h.saturating_record(us * 1000);
        }
        let s = summarize(&h).expect("recorded");
        let near = |got: u64, want: u64| {
            let rel = (got as f64 - want as f64).abs() / want as f64;
            assert!(rel <= 0.001, "{got} vs {want}");
        };
        near(s.p50_ns, 5_000_000);
        near(s.p90_ns, 9_000_000);
        near(s.p99_ns, 9_900_000);
        near(s.p99_9_ns, 9_990_000);
        near(s.p99_99_ns, 9_999_000);
        near(s.min_ns, 1000);
        near(s.max_ns, 10_000_000);
        assert!((s.mean_ns - 5_000_500.0).abs() / 5_000_500.0 < 0.001);
        let sd = s.stddev_ns.unwrap_or(0.0);
        assert!((sd - 2_886_751.0).abs() / 2_886_751.0 < 0.001, "{sd}");
        assert_eq!(s.count, 10_000);
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 10_000);
        // The stored buckets give the median back within their ~1 % width.
        let p50 = crate::model::rr::histogram_percentile(&s.histogram, 50.0).unwrap_or(0);
        assert!((p50 as f64 - 5e6).abs() / 5e6 < 0.01, "{p50}");
    }

    #[test]
    fn merge_adds_counts_and_empty_is_none() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        assert!(summarize(&a).is_none());
        a.saturating_record(10_000);
        b.saturating_record(30_000);
        b.saturating_record(MAX_LATENCY_NS * 10); // clamps to 100 s
        merge(&mut a, &b);
        let s = summarize(&a).expect("three samples");
        assert_eq!(s.count, 3);
        assert!(s.max_ns >= MAX_LATENCY_NS && s.max_ns < MAX_LATENCY_NS + MAX_LATENCY_NS / 500);
        let one = {
            let mut h = new_histogram();
            h.saturating_record(5);
            summarize(&h).expect("one")
        };
        assert_eq!(one.stddev_ns, None);
    }
}
