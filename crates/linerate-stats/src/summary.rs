//! `Summary`: descriptive statistics of a sample, with a Student-t confidence interval.
//!
//! * Mean: two-pass arithmetic mean.
//! * Standard deviation: the sample standard deviation with Bessel's correction
//!   (divisor `n − 1`), `None` for fewer than two samples — never a fake 0.
//! * Percentiles: Hyndman & Fan (1996), "Sample Quantiles in Statistical Packages",
//!   The American Statistician 50(4), definition 7 ("R-7", the default of R, NumPy and
//!   Excel `PERCENTILE.INC`): linear interpolation between the closest ranks,
//!   `h = (n − 1)·p/100`, `Q = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])` on the sorted sample.
//!   The median is the 50th percentile, i.e. the usual median.
//! * Confidence interval of the mean: `mean ± t(1 − α/2, n − 1)·s/√n`, the Student-t
//!   interval (Student 1908; any statistics text), with the quantile from
//!   [`student_t_quantile`].
//!
//! Samples that are not finite (NaN, ±∞) are ignored: they are not measurements.

use serde::{Deserialize, Serialize};

use crate::tdist::student_t_quantile;

/// Descriptive statistics of a set of samples; see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of finite samples.
    pub n: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); absent when n < 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Median (R-7 50th percentile).
    pub median: f64,
    /// The finite samples, sorted ascending; kept for [`Summary::percentile`].
    #[serde(default)]
    samples: Vec<f64>,
}

impl Summary {
    /// Summarises `samples`, ignoring non-finite values; `None` when no finite value remains.
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let nf = n as f64;
        let mean = sorted.iter().sum::<f64>() / nf;
        let stddev = (n >= 2).then(|| {
            let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (nf - 1.0)).sqrt()
        });
        let min = sorted[0];
        let max = sorted[n - 1];
        let median = r7(&sorted, 50.0)?;
        Some(Summary {
            n: n as u64,
            mean,
            stddev,
            min,
            max,
            median,
            samples: sorted,
        })
    }

    /// The `p`-th percentile (`0 <= p <= 100`) by R-7 linear interpolation; `None` for `p`
    /// out of range or NaN, or when the samples are not available (a `Summary`
    /// deserialised without them).
    pub fn percentile(&self, p: f64) -> Option<f64> {
        r7(&self.samples, p)
    }

    /// The finite samples, sorted ascending.
    pub fn samples(&self) -> &[f64] {
        &self.samples
    }

    /// Student-t confidence interval `(low, high)` for the mean at confidence `level`
    /// (e.g. 0.95); `None` when `n < 2` or `level` is not in (0, 1).
    pub fn mean_ci(&self, level: f64) -> Option<(f64, f64)> {
        if !(level > 0.0 && level < 1.0) {
            return None;
        }
        let s = self.stddev?;
        let df = self.n.checked_sub(1).filter(|&d| d > 0)? as f64;
        let t = student_t_quantile(1.0 - (1.0 - level) / 2.0, df)?;
        let half = t * s / (self.n as f64).sqrt();
        Some((self.mean - half, self.mean + half))
    }
}

/// R-7 percentile of an ascending, non-empty, finite slice.
fn r7(sorted: &[f64], p: f64) -> Option<f64> {
    if !(0.0..=100.0).contains(&p) || sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor();
    let i = lo as usize; // 0 <= lo <= n − 1
    let frac = h - lo;
    let x_lo = sorted[i];
    match sorted.get(i + 1) {
        Some(&x_hi) if frac > 0.0 => Some(x_lo + frac * (x_hi - x_lo)),
        _ => Some(x_lo),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn empty_and_all_nan_are_none() {
        assert_eq!(Summary::from_samples(&[]), None);
        assert_eq!(Summary::from_samples(&[f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn single_sample_has_no_stddev_or_ci() {
        let s = Summary::from_samples(&[4.5]);
        let s = s.as_ref();
        assert_eq!(s.map(|s| (s.n, s.mean, s.stddev)), Some((1, 4.5, None)));
        assert_eq!(s.map(|s| (s.min, s.max, s.median)), Some((4.5, 4.5, 4.5)));
        assert_eq!(s.and_then(|s| s.mean_ci(0.95)), None);
        assert_eq!(s.and_then(|s| s.percentile(90.0)), Some(4.5));
    }

    #[test]
    fn hand_computed_fixture() {
        // Samples (unsorted, one NaN ignored): 2 4 4 4 5 5 7 9 → n = 8, sum 40, mean 5.
        // Squared deviations: 9 1 1 1 0 0 4 16 = 32; sample variance 32/7 = 4.571428…,
        // stddev √(32/7) = 2.138089935…
        // Median (R-7, h = 7·0.5 = 3.5): x[3] + 0.5·(x[4] − x[3]) = 4 + 0.5·1 = 4.5.
        // P90: h = 7·0.9 = 6.3 → x[6] + 0.3·(x[7] − x[6]) = 7 + 0.3·2 = 7.6.
        // P25: h = 1.75 → 4 + 0.75·0 = 4. P0 = 2, P100 = 9.
        let data = [9.0, 4.0, 2.0, f64::NAN, 4.0, 5.0, 7.0, 4.0, 5.0];
        let s = Summary::from_samples(&data).expect("8 finite samples");
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!(close(s.stddev.unwrap_or(f64::NAN), (32.0f64 / 7.0).sqrt()));
        assert_eq!((s.min, s.max, s.median), (2.0, 9.0, 4.5));
        assert!(close(s.percentile(90.0).unwrap_or(f64::NAN), 7.6));
        assert_eq!(s.percentile(25.0), Some(4.0));
        assert_eq!(s.percentile(0.0), Some(2.0));
        assert_eq!(s.percentile(100.0), Some(9.0));
        assert_eq!(s.percentile(100.5), None);
        assert_eq!(s.percentile(f64::NAN), None);
        assert_eq!(s.samples(), &[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);

        // 95 % CI: t(0.975, 7) = 2.3646243 (table 2.365); half = 2.3646243·2.1380899/√8
        // = 1.7874879… → (3.2125121, 6.7874879).
        let (lo, hi) = s.mean_ci(0.95).unwrap_or((f64::NAN, f64::NAN));
        assert!((lo - 3.212_512_1).abs() < 1e-6, "{lo}");
        assert!((hi - 6.787_487_9).abs() < 1e-6, "{hi}");
        assert_eq!(s.mean_ci(1.0), None);
        assert_eq!(s.mean_ci(0.0), None);
    }

    #[test]
    fn constant_samples_have_zero_width_ci() {
        // Genuinely zero spread: stddev 0 is measured, not faked; CI collapses to the mean.
        let s = Summary::from_samples(&[3.0, 3.0, 3.0]);
        assert_eq!(s.as_ref().and_then(|s| s.stddev), Some(0.0));
        assert_eq!(s.and_then(|s| s.mean_ci(0.99)), Some((3.0, 3.0)));
    }

    #[test]
    fn serde_round_trip_keeps_percentiles() {
        let s = Summary::from_samples(&[1.0, 2.0, 3.0, 10.0]);
        let json = serde_json::to_string(&s).unwrap_or_default();
        let back: Option<Summary> = serde_json::from_str(&json).ok().flatten();
        assert_eq!(back, s);
        // R-7 P50 of 1 2 3 10: h = 1.5 → 2 + 0.5·1 = 2.5.
        assert_eq!(back.and_then(|b| b.percentile(50.0)), Some(2.5));
        // n = 1 omits stddev from JSON.
        let one = serde_json::to_string(&Summary::from_samples(&[1.0])).unwrap_or_default();
        assert!(!one.contains("stddev"), "{one}");
    }

    proptest! {
        #[test]
        fn invariants(data in proptest::collection::vec(-1e6f64..1e6, 1..60), p in 0.0f64..=100.0) {
            let s = Summary::from_samples(&data);
            prop_assert!(s.is_some());
            let s = s.unwrap();
            prop_assert_eq!(s.n, data.len() as u64);
            prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            let q = s.percentile(p).unwrap_or(f64::NAN);
            prop_assert!(s.min <= q && q <= s.max);
            let q2 = s.percentile((p + 1.0).min(100.0)).unwrap_or(f64::NAN);
            prop_assert!(q <= q2);
            prop_assert_eq!(s.stddev.is_some(), data.len() >= 2);
        }
    }
}
