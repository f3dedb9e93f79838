//! Change points in a series of results: **E-divisive means** (D. S. Matteson and N. A.
//! James 2014, "A nonparametric approach for multiple change point analysis of multivariate
//! data", JASA 109; the method Hunter, Apache Otava and MongoDB's
//! signal-processing-algorithms run over performance histories) with a **permutation test**
//! for each change's significance.
//!
//! * **Statistic.** For a segment split at `τ` into `X` (`n` points before) and `Y` (`m`
//!   points from `τ` on), the energy distance with exponent 1:
//!   `Ê = 2/(n·m)·Σ|x−y| − Σ_{i<k}|x_i−x_k| / C(n,2) − Σ_{j<k}|y_j−y_k| / C(m,2)`, scaled
//!   `Q = n·m/(n+m)·Ê`. The candidate of a segment is the `τ` with the largest `Q`, each side
//!   holding at least [`Config::min_segment`] points.
//! * **Bisection.** Start with the whole series as one segment; the candidate with the
//!   largest `Q` over all segments is tested; when significant it is a change point and its
//!   segment is split in two; the search stops at the first candidate that is not.
//! * **Significance.** The tested segment's values are shuffled [`Config::permutations`]
//!   times (a fixed seed: the same series always gives the same answer) and the candidate's
//!   `Q` recomputed each time; `p = (1 + #{Q_perm ≥ Q}) / (1 + permutations)`, significant when
//!   `p < alpha`. A permutation test asks whether the best split is better than the best
//!   split of the same values in random order, so a lone outlier (which a shuffle moves
//!   about but keeps) is not a change, and nothing is assumed about the noise's shape.
//! * **Size.** Each change carries the means of the segments on both sides of it in the
//!   final segmentation.
//!
//! A series shorter than [`Config::min_points`] has too few points to call a change with
//! this test: the answer is [`Outcome::TooFewPoints`], never a guess.

/// Settings of [`e_divisive`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Fewest points on either side of a change.
    pub min_segment: usize,
    /// Fewest points in a series to look for changes at all.
    pub min_points: usize,
    /// Shuffles per tested candidate.
    pub permutations: usize,
    /// A change is significant when its permutation p-value is below this.
    pub alpha: f64,
    /// Seed of the shuffles.
    pub seed: u64,
    /// Most changes reported.
    pub max_changes: usize,
    /// Most points looked at: the newest this many of a longer series (the older ones are
    /// left out, and [`window`] says how many), so that the time and memory do not grow
    /// with the series: each test of a candidate is `permutations` splits of at most this
    /// many points, each O(n²) in time and memory.
    pub max_points: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            min_segment: 3,
            min_points: 8,
            permutations: 999,
            alpha: 0.005,
            seed: 0x6c69_6e65_7261_7465,
            max_changes: 16,
            max_points: MAX_POINTS,
        }
    }
}

/// Default of [`Config::max_points`]: 200 points, each split a 201² prefix-sum matrix
/// (316 KiB), and at most 17 candidates of 999 permutations each: about a second of work
/// in an optimised build whatever the series' length. Apache Otava (Hunter) looks at
/// windows of 50 points by default.
pub const MAX_POINTS: usize = 200;

/// Of a series of `len` finite points, the ones [`e_divisive`] looks at: from this index
/// (those before it are left out) to the end.
pub fn window(len: usize, cfg: &Config) -> usize {
    len.saturating_sub(cfg.max_points.max(2 * cfg.min_segment.max(2)))
}

/// The method's name and settings in words, as `history --changes` prints it.
pub fn method(cfg: &Config) -> String {
    format!(
        "E-divisive means (Matteson & James 2014, energy distance, exponent 1), each change \
         tested with {} permutations of its segment, significant when p < {}; at least {} \
         points a side, over the newest {} points of a series",
        cfg.permutations, cfg.alpha, cfg.min_segment, cfg.max_points
    )
}

/// One change point.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// Index of the first point after the change (0-based).
    pub index: usize,
    /// The statistic `Q` of the split.
    pub q: f64,
    /// Its permutation p-value.
    pub p_value: f64,
    /// Mean of the segment before the change (in the final segmentation).
    pub mean_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
}

impl ChangePoint {
    /// `mean_after / mean_before − 1` in percent; `None` when the mean before is 0.
    pub fn change_percent(&self) -> Option<f64> {
        (self.mean_before != 0.0).then(|| (self.mean_after / self.mean_before - 1.0) * 100.0)
    }
}

/// What [`e_divisive`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The series is shorter than `needed` points: no answer.
    TooFewPoints {
        /// Points given (finite ones).
        points: usize,
        /// Points needed.
        needed: usize,
    },
    /// The change points, in series order (empty: none significant).
    Changes(Vec<ChangePoint>),
}

/// Splitmix64: a small, fixed generator for the shuffles.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by rejection.
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next();
            if v < zone {
                return (v % n) as usize;
            }
        }
    }

    fn shuffle(&mut self, x: &mut [f64]) {
        for i in (1..x.len()).rev() {
            let j = self.below(i + 1);
            x.swap(i, j);
        }
    }
}

/// The best split of `x` (offset within `x`, and its `Q`), each side at least `min` long:
/// the largest `Q` of `x[..τ]` against `x[τ..κ]` over every `τ` and right end `κ` (as
/// Matteson and James do, so that a change followed by a change back is seen), through a
/// two-dimensional prefix sum of the distances (O(len²)).
pub fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let len = x.len();
    if min < 2 || len < 2 * min {
        return None;
    }
    // p[a·w + b] = Σ_{i<a, j<b} |x_i − x_j|.
    let w = len + 1;
    let mut p = vec![0.0f64; w * w];
    for a in 0..len {
        let mut row = 0.0;
        for b in 0..len {
            row += (x[a] - x[b]).abs();
            p[(a + 1) * w + b + 1] = p[a * w + b + 1] + row;
        }
    }
    let block = |r0: usize, r1: usize, c0: usize, c1: usize| {
        p[r1 * w + c1] - p[r0 * w + c1] - p[r1 * w + c0] + p[r0 * w + c0]
    };
    let pairs = |k: f64| k * (k - 1.0) / 2.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=len - min {
        let n = tau as f64;
        let left = block(0, tau, 0, tau) / 2.0 / pairs(n);
        for kappa in tau + min..=len {
            let m = (kappa - tau) as f64;
            let cross = block(0, tau, tau, kappa);
            let right = block(tau, kappa, tau, kappa) / 2.0 / pairs(m);
            let q = n * m / (n + m) * (2.0 * cross / (n * m) - left - right);
            if best.is_none_or(|(_, bq)| q > bq) {
                best = Some((tau, q));
            }
        }
    }
    best
}

/// The change points of `series` (non-finite values are left out first, then all but the
/// newest [`Config::max_points`]: [`window`]); their indices count the finite points of the
/// whole series.
pub fn e_divisive(series: &[f64], cfg: &Config) -> Outcome {
    let finite: Vec<f64> = series.iter().copied().filter(|v| v.is_finite()).collect();
    let from = window(finite.len(), cfg);
    match e_divisive_all(&finite[from..], cfg) {
        Outcome::Changes(mut cs) => {
            for c in &mut cs {
                c.index += from;
            }
            Outcome::Changes(cs)
        }
        few => few,
    }
}

/// [`e_divisive`] of every point of `x` (all finite).
fn e_divisive_all(x: &[f64], cfg: &Config) -> Outcome {
    let min = cfg.min_segment.max(2);
    let needed = cfg.min_points.max(2 * min);
    if x.len() < needed {
        return Outcome::TooFewPoints {
            points: x.len(),
            needed,
        };
    }
    let mut rng = Rng(cfg.seed);
    // Segment boundaries, sorted: [0, c1, c2, ..., len].
    let mut bounds = vec![0, x.len()];
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    while found.len() < cfg.max_changes {
        let best = bounds
            .windows(2)
            .filter_map(|w| best_split(&x[w[0]..w[1]], min).map(|(t, q)| (w[0], w[1], t, q)))
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((start, end, tau, q)) = best else {
            break;
        };
        let mut seg = x[start..end].to_vec();
        let mut at_least = 0usize;
        for _ in 0..cfg.permutations {
            rng.shuffle(&mut seg);
            if best_split(&seg, min).is_some_and(|(_, qp)| qp >= q) {
                at_least += 1;
            }
        }
        let p = (1 + at_least) as f64 / (1 + cfg.permutations) as f64;
        if p >= cfg.alpha {
            break;
        }
        found.push((start + tau, q, p));
        bounds.push(start + tau);
        bounds.sort_unstable();
    }
    found.sort_by_key(|c| c.0);
    let mean = |a: usize, b: usize| x[a..b].iter().sum::<f64>() / (b - a) as f64;
    let changes = found
        .iter()
        .map(|&(index, q, p_value)| {
            let i = bounds.iter().position(|&b| b == index).unwrap_or(1);
            let (before, after) = (
                bounds[i.saturating_sub(1)],
                bounds[(i + 1).min(bounds.len() - 1)],
            );
            ChangePoint {
                index,
                q,
                p_value,
                mean_before: mean(before, index),
                mean_after: mean(index, after),
            }
        })
        .collect();
    Outcome::Changes(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gaussian noise (Box–Muller over splitmix64), fixed by `seed`.
    fn noise(n: usize, sd: f64, seed: u64) -> Vec<f64> {
        let mut r = Rng(seed);
        let mut u = || (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        (0..n)
            .map(|_| {
                let (a, b) = (u().max(1e-300), u());
                sd * (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
            })
            .collect()
    }

    fn changes(x: &[f64]) -> Vec<ChangePoint> {
        match e_divisive(x, &Config::default()) {
            Outcome::Changes(c) => c,
            other => panic!("{other:?}"),
        }
    }

    fn indices(x: &[f64]) -> Vec<usize> {
        changes(x).iter().map(|c| c.index).collect()
    }

    #[test]
    fn a_step_is_found_where_it_is_with_its_size() {
        // 12 runs at 50, 12 at 40 (the lab's tbf rates, Mbit/s), 1 % noise.
        for seed in 1..=10 {
            let n = noise(24, 0.5, seed);
            let x: Vec<f64> = (0..24)
                .map(|i| if i < 12 { 50.0 } else { 40.0 } + n[i])
                .collect();
            let c = changes(&x);
            assert_eq!(c.len(), 1, "seed {seed}: {c:?}");
            assert_eq!(c[0].index, 12, "seed {seed}: {c:?}");
            assert!(c[0].p_value < 0.005);
            let pct = c[0].change_percent().unwrap();
            assert!((pct + 20.0).abs() < 2.0, "{pct}");
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        let n = noise(36, 1.0, 7);
        let x: Vec<f64> = (0..36)
            .map(|i| match i {
                0..=11 => 100.0,
                12..=23 => 90.0,
                _ => 100.0,
            } + n[i])
            .collect();
        assert_eq!(indices(&x), vec![12, 24]);
    }

    #[test]
    fn a_small_step_in_large_noise_is_not_claimed() {
        // A step of a fifth of the noise's standard deviation is not there to be seen.
        for seed in 1..=10 {
            let n = noise(24, 5.0, seed);
            let x: Vec<f64> = (0..24)
                .map(|i| if i < 12 { 100.0 } else { 99.0 } + n[i])
                .collect();
            assert!(indices(&x).is_empty(), "seed {seed}");
        }
    }

    #[test]
    fn pure_noise_has_no_change_point() {
        for seed in 1..=20 {
            let x: Vec<f64> = noise(40, 2.0, seed).iter().map(|v| 100.0 + v).collect();
            assert!(indices(&x).is_empty(), "seed {seed}: {:?}", changes(&x));
        }
    }

    #[test]
    fn a_single_outlier_is_not_a_change() {
        for (seed, at) in [(1, 5), (2, 12), (3, 20), (4, 0), (5, 23)] {
            let mut x: Vec<f64> = noise(24, 1.0, seed).iter().map(|v| 100.0 + v).collect();
            x[at] = 60.0;
            assert!(indices(&x).is_empty(), "outlier at {at}: {:?}", changes(&x));
        }
    }

    #[test]
    fn a_strong_drift_is_reported_a_slow_one_is_not() {
        // 10 standard deviations over 40 runs: the series changed, and the changes found
        // lie inside it, each smaller than the whole drift.
        let n = noise(40, 1.0, 3);
        let x: Vec<f64> = (0..40).map(|i| 100.0 - 0.25 * i as f64 + n[i]).collect();
        let c = changes(&x);
        assert!(!c.is_empty());
        for ch in &c {
            assert!((3..=37).contains(&ch.index), "{c:?}");
            assert!(ch.mean_after < ch.mean_before, "{c:?}");
            assert!(ch.mean_before - ch.mean_after < 10.0, "{c:?}");
        }
        // A quarter of a standard deviation over 40 runs is noise.
        for seed in 1..=10 {
            let n = noise(40, 1.0, seed);
            let x: Vec<f64> = (0..40)
                .map(|i| 100.0 - 0.25 / 40.0 * i as f64 + n[i])
                .collect();
            assert!(indices(&x).is_empty(), "seed {seed}");
        }
    }

    #[test]
    fn too_few_points_say_so() {
        assert_eq!(
            e_divisive(&[1.0, 2.0, 3.0, f64::NAN, 5.0], &Config::default()),
            Outcome::TooFewPoints {
                points: 4,
                needed: 8
            }
        );
    }

    #[test]
    fn a_constant_series_has_no_change_and_the_answer_is_repeatable() {
        assert!(indices(&[5.0; 20]).is_empty());
        let n = noise(24, 0.5, 9);
        let x: Vec<f64> = (0..24)
            .map(|i| if i < 12 { 50.0 } else { 40.0 } + n[i])
            .collect();
        assert_eq!(changes(&x), changes(&x));
    }

    #[test]
    fn a_series_of_100_000_points_is_bounded_by_its_newest_window() {
        // Steps every 50 points all along: before the window, each test of a candidate
        // built a 100,001² matrix (80 GB) per permutation.
        let n = noise(100_000, 0.5, 11);
        let x: Vec<f64> = (0..100_000)
            .map(|i| if (i / 50) % 2 == 0 { 50.0 } else { 40.0 } + n[i])
            .collect();
        let cfg = Config::default();
        let t = std::time::Instant::now();
        let got = e_divisive(&x, &cfg);
        let took = t.elapsed();
        // The answer is the window's own, with the series' indices.
        let from = window(x.len(), &cfg);
        assert_eq!(from, 100_000 - MAX_POINTS);
        let Outcome::Changes(alone) = e_divisive(&x[from..], &cfg) else {
            panic!("the window alone has too few points");
        };
        let Outcome::Changes(c) = got else {
            panic!("{got:?}")
        };
        assert!(!c.is_empty());
        let shifted: Vec<usize> = alone.iter().map(|c| c.index + from).collect();
        assert_eq!(c.iter().map(|c| c.index).collect::<Vec<_>>(), shifted);
        // The steps found are where they are (the window starts on a step's boundary).
        for ch in &c {
            assert_eq!(ch.index % 50, 0, "{c:?}");
        }
        // The stated bound: under 10 s (in a debug build too).
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn best_split_matches_the_definition() {
        // x = [0, 0, 1, 1]: split at 2 gives cross mean 1, within 0: E = 2, Q = 4/4·2 = 2.
        let (t, q) = best_split(&[0.0, 0.0, 1.0, 1.0], 2).unwrap();
        assert_eq!(t, 2);
        assert!((q - 2.0).abs() < 1e-12);
        // [0, 0, 1, 1, 0, 0]: the right end κ = 4 isolates the step up.
        let (t, q) = best_split(&[0.0, 0.0, 1.0, 1.0, 0.0, 0.0], 2).unwrap();
        assert_eq!((t, q), (2, 2.0));
        assert_eq!(best_split(&[1.0, 2.0, 3.0], 2), None);
    }
}
