//! The repetition flags every test command shares (`--repeat`, `--confidence`,
//! `--iterations`), netperf `-i`/`-I` style, and their validation into a [`RepeatPlan`].

use clap::Args as ClapArgs;

use super::UsageError;
use crate::repeat::RepeatPlan;

/// Repetition of a whole test, netperf `-i`/`-I` style.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct RepeatArgs {
    /// Run the test N times and report every run, the mean, stddev and confidence interval.
    #[arg(long, value_name = "N", conflicts_with = "confidence")]
    pub repeat: Option<u32>,
    /// Repeat until the LEVEL% confidence interval of the mean is within WIDTH% (full width,
    /// netperf -I: 99,5 = within ±2.5 % of the mean), between --iterations MIN and MAX runs.
    #[arg(long, value_name = "LEVEL,WIDTH", value_parser = parse_confidence)]
    pub confidence: Option<(f64, f64)>,
    /// Fewest and most runs with --confidence (netperf -i MAX,MIN; default 3,10).
    #[arg(long, value_name = "MIN,MAX", value_parser = parse_min_max, requires = "confidence")]
    pub iterations: Option<(u32, u32)>,
}

impl RepeatArgs {
    /// True when more than one plain run may be made.
    pub fn is_set(&self) -> bool {
        self.repeat.is_some() || self.confidence.is_some()
    }
}

/// Default `--iterations` with `--confidence` (netperf's -i default is 10 at most, 1 at least;
/// 3 is the fewest that gives an interval worth the name).
pub const DEFAULT_ITERATIONS: (u32, u32) = (3, 10);

/// Builds the repetition plan.
pub fn repeat_plan(r: &RepeatArgs) -> Result<RepeatPlan, UsageError> {
    if let Some(n) = r.repeat {
        if n == 0 || n > 1000 {
            return Err(UsageError(format!("--repeat {n}: use 1 to 1000 runs")));
        }
        return Ok(RepeatPlan {
            min: n,
            max: n,
            confidence: None,
        });
    }
    match r.confidence {
        None => Ok(RepeatPlan::ONCE),
        Some(c) => {
            let (min, max) = r.iterations.unwrap_or(DEFAULT_ITERATIONS);
            Ok(RepeatPlan {
                min: min.max(2),
                max: max.max(2),
                confidence: Some(c),
            })
        }
    }
}

/// `LEVEL,WIDTH` in percent, e.g. `99,5`.
pub fn parse_confidence(s: &str) -> Result<(f64, f64), String> {
    let err = || {
        format!("invalid --confidence '{s}': use LEVEL,WIDTH in percent, e.g. 99,5 (99 % confidence, interval within ±2.5 % of the mean)")
    };
    let (l, w) = s.split_once(',').ok_or_else(err)?;
    let level: f64 = l.trim().parse().map_err(|_| err())?;
    let width: f64 = w.trim().parse().map_err(|_| err())?;
    if !(level > 50.0 && level < 100.0 && width > 0.0 && width <= 100.0) {
        return Err(err());
    }
    Ok((level, width))
}

/// `MIN,MAX` run counts, 1 <= MIN <= MAX <= 1000.
pub fn parse_min_max(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("invalid --iterations '{s}': use MIN,MAX runs such as 3,10");
    let (a, b) = s.split_once(',').ok_or_else(err)?;
    let min: u32 = a.trim().parse().map_err(|_| err())?;
    let max: u32 = b.trim().parse().map_err(|_| err())?;
    if min == 0 || min > max || max > 1000 {
        return Err(err());
    }
    Ok((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    /// A test's command line as far as its repeat options go (`rr HOST`'s host and the
    /// repeat group, which the test commands flatten in).
    #[derive(Debug, clap::Args)]
    struct Test {
        #[allow(dead_code)]
        host: String,
        #[command(flatten)]
        repeat: RepeatArgs,
    }

    #[test]
    fn value_parsers() {
        assert_eq!(parse_confidence("99,5"), Ok((99.0, 5.0)));
        assert!(parse_confidence("99").is_err());
        assert!(parse_confidence("100,5").is_err());
        assert_eq!(parse_min_max("3,10"), Ok((3, 10)));
        assert!(parse_min_max("10,3").is_err());
        assert!(parse_min_max("0,3").is_err());
    }

    #[test]
    fn repeat_plans() {
        let r = |argv: &[&str]| match parse_one::<Test>("rr", argv) {
            Ok(a) => repeat_plan(&a.repeat),
            other => panic!("{other:?}"),
        };
        assert_eq!(r(&["linerate", "rr", "h"]).unwrap(), RepeatPlan::ONCE);
        assert_eq!(r(&["linerate", "rr", "h", "--repeat", "5"]).unwrap().max, 5);
        let c = r(&[
            "linerate",
            "rr",
            "h",
            "--confidence",
            "99,5",
            "--iterations",
            "3,7",
        ])
        .unwrap();
        assert_eq!((c.min, c.max, c.confidence), (3, 7, Some((99.0, 5.0))));
        assert!(r(&["linerate", "rr", "h", "--repeat", "0"]).is_err());
        assert!(parse_one::<Test>("rr", &["linerate", "rr", "h", "--iterations", "3,7"]).is_err());
    }
}
