//! Outliers by the modified Z-score (Iglewicz & Hoaglin).
//!
//! Boris Iglewicz and David Hoaglin (1993), "Volume 16: How to Detect and Handle Outliers",
//! The ASQC Basic References in Quality Control: Statistical Techniques, ed. E. F. Mykytka:
//!
//! ```text
//! M_i = 0.6745 · (x_i − median) / MAD,     MAD = median(|x_i − median|)
//! ```
//!
//! and a sample with `|M_i| > 3.5` is a potential outlier. 0.6745 is the 0.75 quantile of
//! the standard normal distribution, which makes `MAD / 0.6745` a consistent estimate of σ for
//! normal data. The median and MAD resist the outliers they look for, unlike mean and stddev
//! (hyperfine uses the same test for its "statistical outliers" warning).
//!
//! When more than half of the samples are equal, MAD is 0 and `M_i` is undefined. Then the
//! mean absolute deviation around the median takes its place, scaled by 1.253314 (√(π/2), the
//! ratio of σ to the mean absolute deviation for normal data): `M_i = (x_i − median) /
//! (1.253314 · MeanAD)` (the fallback IBM SPSS documents for its modified Z). When that is 0
//! too, every sample is the same and none is an outlier.
//!
//! Non-finite samples are ignored.

/// The threshold Iglewicz and Hoaglin recommend: `|M| > 3.5` is a potential outlier.
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// 0.75 quantile of the standard normal distribution.
const Q75: f64 = 0.6745;
/// √(π/2): σ / mean absolute deviation for normal data.
const MEAN_AD_SCALE: f64 = 1.253_314;

fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// The modified Z-score of every sample, in input order (`None` for a non-finite sample);
/// all `Some(0.0)`-or-`None` when the samples do not vary.
pub fn modified_z_scores(samples: &[f64]) -> Vec<Option<f64>> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let Some(med) = median(&sorted) else {
        return vec![None; samples.len()];
    };
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = median(&dev).unwrap_or(0.0);
    let scale = if mad > 0.0 {
        mad / Q75
    } else {
        MEAN_AD_SCALE * dev.iter().sum::<f64>() / dev.len() as f64
    };
    samples
        .iter()
        .map(|&x| {
            x.is_finite()
                .then(|| if scale > 0.0 { (x - med) / scale } else { 0.0 })
        })
        .collect()
}

/// Indices of the samples whose modified Z-score exceeds [`MODIFIED_Z_THRESHOLD`] in
/// absolute value.
pub fn outliers(samples: &[f64]) -> Vec<usize> {
    modified_z_scores(samples)
        .iter()
        .enumerate()
        .filter(|(_, z)| z.is_some_and(|z| z.abs() > MODIFIED_Z_THRESHOLD))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_far_sample_is_an_outlier() {
        // Expected values from numpy (median, MAD, 0.6745·(x − median)/MAD):
        // x = 10.0 10.1 9.9 10.2 10.0 14.0 9.8; median 10.0; |x − 10| sorted:
        // 0 0 0.1 0.1 0.2 0.2 4.0 → MAD 0.1; M = 0 0.6745 −0.6745 1.349 0 26.98 −1.349.
        let x = [10.0, 10.1, 9.9, 10.2, 10.0, 14.0, 9.8];
        let z = modified_z_scores(&x);
        let want = [0.0, 0.6745, -0.6745, 1.349, 0.0, 26.98, -1.349];
        for (got, want) in z.iter().zip(want) {
            assert!(
                (got.unwrap_or(f64::NAN) - want).abs() < 1e-9,
                "{got:?} {want}"
            );
        }
        assert_eq!(outliers(&x), vec![5]);
    }

    #[test]
    fn zero_mad_falls_back_to_mean_absolute_deviation() {
        // 5 5 5 5 9: median 5, MAD 0; MeanAD = 4/5 = 0.8; M(9) = 4 / (1.253314 · 0.8)
        // = 3.98942… > 3.5 (numpy gives 3.98942324).
        let x = [5.0, 5.0, 5.0, 5.0, 9.0];
        let z = modified_z_scores(&x);
        assert!((z[4].unwrap_or(f64::NAN) - 3.989_423_24).abs() < 1e-7);
        assert_eq!(outliers(&x), vec![4]);
    }

    #[test]
    fn constant_or_tiny_samples_have_no_outliers() {
        assert!(outliers(&[3.0, 3.0, 3.0]).is_empty());
        assert!(outliers(&[1.0]).is_empty());
        assert!(outliers(&[]).is_empty());
        // Tight, normal-looking data: nothing flagged.
        assert!(outliers(&[100.0, 101.0, 99.0, 100.5, 99.5, 100.2]).is_empty());
        // A NaN is skipped, not flagged, and keeps its slot.
        let z = modified_z_scores(&[1.0, f64::NAN, 1.0]);
        assert_eq!(z, vec![Some(0.0), None, Some(0.0)]);
    }
}
