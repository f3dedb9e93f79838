//! Comparing two sets of trials: Welch's t-test, the confidence interval of the difference of
//! the means, and the ratio of the means with a delta-method interval.
//!
//! * **Test**: Welch's unequal-variances t-test (B. L. Welch 1947, "The generalization of
//!   'Student's' problem when several different population variances are involved",
//!   Biometrika 34). With sample means `m_a`, `m_b`, sample variances `s_a²`, `s_b²` (divisor
//!   `n − 1`) and sizes `n_a`, `n_b`:
//!   `v_a = s_a²/n_a`, `v_b = s_b²/n_b`, `se = √(v_a + v_b)`, `t = (m_b − m_a)/se`, and the
//!   Welch–Satterthwaite degrees of freedom `ν = (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1))`.
//!   The two-sided p-value is `2·(1 − F_ν(|t|))` with Student's t CDF ([`student_t_cdf`]).
//!   It does not assume equal variances, which two configurations of a network path rarely
//!   have; it is what `scipy.stats.ttest_ind(b, a, equal_var=False)` computes.
//! * **Interval of the difference** `m_b − m_a`: `± t(1 − α/2, ν)·se`.
//! * **Ratio** `m_b / m_a` with the first-order delta method:
//!   `se_r = |r|·√(v_a/m_a² + v_b/m_b²)`, interval `r ± t(1 − α/2, ν)·se_r`. It is an
//!   approximation that is good while both means are many standard errors from 0, which
//!   holds for throughput, transaction rates and CPU figures of repeated runs.
//!
//! Both sets need at least two finite samples (a variance); otherwise there is no test.

use crate::tdist::{student_t_cdf, student_t_quantile};

/// The outcome of [`welch`].
#[derive(Debug, Clone, PartialEq)]
pub struct WelchResult {
    /// Samples in A and B.
    pub n_a: usize,
    /// See `n_a`.
    pub n_b: usize,
    /// Mean of A (the baseline).
    pub mean_a: f64,
    /// Mean of B.
    pub mean_b: f64,
    /// `mean_b − mean_a`.
    pub diff: f64,
    /// Standard error of the difference.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom; `None` when neither set varies.
    pub df: Option<f64>,
    /// t statistic; `None` when neither set varies (se = 0).
    pub t: Option<f64>,
    /// Two-sided p-value; `None` when neither set varies.
    pub p_value: Option<f64>,
    /// Interval of the difference at the requested level.
    pub diff_ci: Option<(f64, f64)>,
    /// `mean_b / mean_a`; `None` when `mean_a` is 0.
    pub ratio: Option<f64>,
    /// Delta-method interval of the ratio.
    pub ratio_ci: Option<(f64, f64)>,
}

impl WelchResult {
    /// True when the difference is significant at `alpha` (two-sided p < alpha). Samples that
    /// do not vary at all count as significant exactly when their means differ.
    pub fn significant(&self, alpha: f64) -> bool {
        match self.p_value {
            Some(p) => p < alpha,
            None => self.diff != 0.0,
        }
    }
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// Welch's t-test of B against A at confidence `level` (e.g. 0.95). `None` when either set
/// has fewer than two finite samples or `level` is not in (0, 1). Non-finite samples are
/// ignored.
pub fn welch(a: &[f64], b: &[f64], level: f64) -> Option<WelchResult> {
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, sa2) = mean_var(&a);
    let (mb, sb2) = mean_var(&b);
    let va = sa2 / a.len() as f64;
    let vb = sb2 / b.len() as f64;
    let se = (va + vb).sqrt();
    let diff = mb - ma;
    let ratio = (ma != 0.0).then(|| mb / ma);
    let mut out = WelchResult {
        n_a: a.len(),
        n_b: b.len(),
        mean_a: ma,
        mean_b: mb,
        diff,
        se,
        df: None,
        t: None,
        p_value: None,
        diff_ci: None,
        ratio,
        ratio_ci: None,
    };
    if se == 0.0 {
        out.diff_ci = Some((diff, diff));
        out.ratio_ci = ratio.map(|r| (r, r));
        return Some(out);
    }
    let df =
        (va + vb).powi(2) / (va * va / (a.len() as f64 - 1.0) + vb * vb / (b.len() as f64 - 1.0));
    let t = diff / se;
    let q = student_t_quantile(1.0 - (1.0 - level) / 2.0, df)?;
    out.df = Some(df);
    out.t = Some(t);
    out.p_value = student_t_cdf(-t.abs(), df).map(|tail| (2.0 * tail).min(1.0));
    out.diff_ci = Some((diff - q * se, diff + q * se));
    out.ratio_ci = match ratio {
        Some(r) if mb != 0.0 => {
            let se_r = r.abs() * (va / (ma * ma) + vb / (mb * mb)).sqrt();
            Some((r - q * se_r, r + q * se_r))
        }
        _ => None,
    };
    Some(out)
}

/// One new value against a baseline sample: is it from the same distribution?
///
/// With the baseline's mean `m`, sample standard deviation `s` (divisor `n − 1`) and size
/// `n`, a new observation `x` from the same normal distribution has
/// `t = (x − m) / (s·√(1 + 1/n))` distributed as Student's t with `n − 1` degrees of freedom
/// (the prediction interval of one new value). `p_below` is the one-sided p-value of `x`
/// being lower than the baseline, `p_above` of it being higher.
#[derive(Debug, Clone, PartialEq)]
pub struct NewValueTest {
    /// Baseline size.
    pub n: usize,
    /// Baseline mean.
    pub mean: f64,
    /// Baseline sample standard deviation.
    pub sd: f64,
    /// The t statistic; `None` when the baseline does not vary.
    pub t: Option<f64>,
    /// Degrees of freedom, `n − 1`.
    pub df: f64,
    /// One-sided p-value for "lower"; `None` when the baseline does not vary.
    pub p_below: Option<f64>,
    /// One-sided p-value for "higher".
    pub p_above: Option<f64>,
}

/// [`NewValueTest`] of `x` against `baseline`; `None` with fewer than two finite baseline
/// values or a non-finite `x`.
pub fn new_value_test(baseline: &[f64], x: f64) -> Option<NewValueTest> {
    let b: Vec<f64> = baseline.iter().copied().filter(|v| v.is_finite()).collect();
    if b.len() < 2 || !x.is_finite() {
        return None;
    }
    let (m, v) = mean_var(&b);
    let n = b.len() as f64;
    let df = n - 1.0;
    let se = (v * (1.0 + 1.0 / n)).sqrt();
    let t = (se > 0.0).then(|| (x - m) / se);
    Some(NewValueTest {
        n: b.len(),
        mean: m,
        sd: v.sqrt(),
        t,
        df,
        p_below: t.and_then(|t| student_t_cdf(t, df)),
        p_above: t.and_then(|t| student_t_cdf(-t, df)),
    })
}

/// One-sided p-values of Welch's test: (B lower than A, B higher than A); `None` when there
/// is no t (neither set varies).
pub fn welch_one_sided(r: &WelchResult) -> Option<(f64, f64)> {
    let (t, df) = (r.t?, r.df?);
    Some((student_t_cdf(t, df)?, student_t_cdf(-t, df)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[track_caller]
    fn check(got: Option<f64>, want: f64, rel: f64) {
        let g = got.unwrap_or(f64::NAN);
        assert!(close(g, want, rel), "got {g}, want {want}");
    }

    #[test]
    fn clear_difference_matches_scipy() {
        // Seed 001's two drivers, five runs each (Mbit/s). Expected values from SciPy 1.17.1:
        // r = scipy.stats.ttest_ind(b, a, equal_var=False); r.confidence_interval(0.95);
        // df by the Welch–Satterthwaite formula in numpy:
        // mean_a 662.8, mean_b 588.2, diff −74.6, se 2.019900988, t −36.93250335,
        // df 7.703813402, p 5.97812154e-10, CI (−79.2892564, −69.9107436).
        // Ratio 0.887447193724, delta-method se 0.0028473658739 and interval with
        // scipy.stats.t.ppf(0.975, df): (0.880836954543, 0.894057432904).
        let a = [663.0, 658.0, 667.0, 661.0, 665.0];
        let b = [588.0, 592.0, 585.0, 590.0, 586.0];
        let r = welch(&a, &b, 0.95).expect("two sets of five");
        assert_eq!((r.n_a, r.n_b), (5, 5));
        check(Some(r.diff), -74.6, 1e-12);
        check(Some(r.se), 2.019_900_988, 1e-9);
        check(r.t, -36.932_503_35, 1e-9);
        check(r.df, 7.703_813_402, 1e-9);
        check(r.p_value, 5.978_121_54e-10, 1e-6);
        let (lo, hi) = r.diff_ci.unwrap_or((f64::NAN, f64::NAN));
        check(Some(lo), -79.289_256_4, 1e-8);
        check(Some(hi), -69.910_743_6, 1e-8);
        check(r.ratio, 0.887_447_193_724, 1e-11);
        let (lo, hi) = r.ratio_ci.unwrap_or((f64::NAN, f64::NAN));
        check(Some(lo), 0.880_836_954_543, 1e-9);
        check(Some(hi), 0.894_057_432_904, 1e-9);
        assert!(r.significant(0.05));
    }

    #[test]
    fn no_difference_matches_scipy() {
        // SciPy: mean 10 both, t 0, df 8.196721311, p 1.0, CI (−0.209632244, 0.209632244).
        let a = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0];
        let b = [10.1, 9.9, 10.0, 10.2, 9.8];
        let r = welch(&a, &b, 0.95).expect("enough samples");
        assert!(r.diff.abs() < 1e-12);
        check(r.df, 8.196_721_311, 1e-9);
        check(r.p_value, 1.0, 1e-9);
        let (lo, hi) = r.diff_ci.unwrap_or((f64::NAN, f64::NAN));
        check(Some(hi), 0.209_632_244, 1e-7);
        assert!((lo + hi).abs() < 1e-9);
        assert!(!r.significant(0.05));
    }

    #[test]
    fn unequal_sizes_and_variances_match_scipy() {
        // a = 1..5, b = 2, 4, …, 14. SciPy: diff 5, se 1.779513042, t 2.809757435,
        // df 8.037105751, p 0.02274725528, CI (0.8997309224, 9.100269078).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0];
        let r = welch(&a, &b, 0.95).expect("enough samples");
        check(r.t, 2.809_757_435, 1e-9);
        check(r.df, 8.037_105_751, 1e-9);
        check(r.p_value, 0.022_747_255_28, 1e-7);
        let (lo, hi) = r.diff_ci.unwrap_or((f64::NAN, f64::NAN));
        check(Some(lo), 0.899_730_922_4, 1e-7);
        check(Some(hi), 9.100_269_078, 1e-8);
        assert!(r.significant(0.05));
        assert!(!r.significant(0.01));
    }

    #[test]
    fn too_few_samples_or_bad_level_give_no_test() {
        assert_eq!(welch(&[1.0], &[2.0, 3.0], 0.95), None);
        assert_eq!(welch(&[1.0, 2.0], &[f64::NAN, 3.0], 0.95), None);
        assert_eq!(welch(&[1.0, 2.0], &[2.0, 3.0], 1.0), None);
    }

    #[test]
    fn no_variation_is_decided_by_the_means() {
        let r = welch(&[5.0, 5.0], &[5.0, 5.0, 5.0], 0.95).expect("samples");
        assert_eq!((r.t, r.p_value), (None, None));
        assert!(!r.significant(0.05));
        let r = welch(&[5.0, 5.0], &[6.0, 6.0], 0.95).expect("samples");
        assert!(r.significant(0.05));
        assert_eq!(r.ratio, Some(1.2));
    }
    #[test]
    fn a_new_value_against_a_baseline_matches_scipy() {
        // Baseline 10, 11, 12, 13, 14: mean 12, s = 1.58113883, se = s·sqrt(1.2) = 1.732050808;
        // x = 8: t = −2.309401077, df 4; the closed form of the t CDF with 4 degrees of
        // freedom, 1/2 + 3/8·u·(1 − u²/12) with u = t/√(1 + t²/4), gives 0.0410431399.
        let r = new_value_test(&[10.0, 11.0, 12.0, 13.0, 14.0], 8.0).expect("five values");
        check(r.t, -2.309_401_077, 1e-8);
        check(r.p_below, 0.041_043_139_9, 1e-8);
        check(r.p_above, 1.0 - 0.041_043_139_9, 1e-8);
        assert_eq!(new_value_test(&[1.0], 2.0), None);
        let flat = new_value_test(&[3.0, 3.0, 3.0], 2.0).expect("three values");
        assert_eq!((flat.t, flat.p_below), (None, None));
    }

    #[test]
    fn welch_one_sided_halves_the_two_sided_p() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0];
        let r = welch(&a, &b, 0.95).expect("enough samples");
        let (below, above) = welch_one_sided(&r).expect("a t");
        check(Some(above), 0.022_747_255_28 / 2.0, 1e-7);
        check(Some(below), 1.0 - 0.022_747_255_28 / 2.0, 1e-7);
    }
}
