//! `linerate check` arguments: the new result, the baseline, the thresholds.

use clap::Args as ClapArgs;

use super::UsageError;
use crate::model::check::Threshold;
use crate::model::repeat;

/// `linerate check` arguments.
#[derive(Debug, ClapArgs)]
pub struct CheckArgs {
    /// The new result: a result file (--json of tcp, udp or rr, single or repeated) or a
    /// stored run id. Or give no NEW and the test to run now after `--`.
    #[arg(value_name = "NEW")]
    pub new: Option<std::path::PathBuf>,
    /// The baseline: a stored run id, or a tag (every stored run with it and the new
    /// result's command and parameters).
    #[arg(long, value_name = "ID|TAG", conflicts_with = "last")]
    pub baseline: Option<String>,
    /// The baseline: the last K stored runs before the new one with the same command,
    /// parameters and host facts.
    #[arg(long, value_name = "K")]
    pub last: Option<u32>,
    /// Largest tolerated change for the worse: `5%` for every metric, or per metric
    /// `throughput=5%,p99=10%` (names: throughput, reverse_throughput, pps, loss, tps, p50,
    /// p99, lost_transactions, client_cpu, server_cpu, service_demand, client_sd,
    /// server_sd, interrupts, or a full name such as latency_p99_ns). Percentage metrics
    /// (loss, CPU) take percentage points. Repeatable. Default: 5% on the primary metric.
    #[arg(long = "max-regress", value_name = "[METRIC=]PERCENT")]
    pub max_regress: Vec<String>,
    /// Results database; default $XDG_DATA_HOME/linerate/results.db.
    #[arg(long, value_name = "PATH", env = "LINERATE_DB")]
    pub db: Option<std::path::PathBuf>,
    /// Print the check as JSON (schema: docs/json-schema/check-v1.json).
    #[arg(long, conflicts_with = "junit")]
    pub json: bool,
    /// Print the check as JUnit XML (one testcase per metric, a failure per regression).
    #[arg(long)]
    pub junit: bool,
    /// The test to run now, after `--`: tcp|udp|rr HOST [its options].
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// Short names a threshold may use, and the metrics each names.
const ALIASES: &[(&str, &[&str])] = &[
    ("throughput", &["throughput_bps"]),
    ("reverse_throughput", &["reverse_throughput_bps"]),
    ("pps", &["receiver_pps", "receiver_interface_pps"]),
    ("loss", &["loss_percent"]),
    ("tps", &["transactions_per_sec"]),
    ("transactions", &["transactions_per_sec"]),
    ("p50", &["latency_p50_ns"]),
    ("p99", &["latency_p99_ns"]),
    ("lost_transactions", &["lost_transactions_percent"]),
    ("client_cpu", &["client_cpu_percent"]),
    ("server_cpu", &["server_cpu_percent"]),
    ("cpu", &["client_cpu_percent", "server_cpu_percent"]),
    (
        "service_demand",
        &[
            "client_service_demand_us_per_kb",
            "server_service_demand_us_per_kb",
            "client_service_demand_us_per_tran",
            "server_service_demand_us_per_tran",
        ],
    ),
    (
        "client_sd",
        &[
            "client_service_demand_us_per_kb",
            "client_service_demand_us_per_tran",
        ],
    ),
    (
        "server_sd",
        &[
            "server_service_demand_us_per_kb",
            "server_service_demand_us_per_tran",
        ],
    ),
    (
        "interrupts",
        &["client_interrupts_per_sec", "server_interrupts_per_sec"],
    ),
];

/// Every full metric name.
fn full_names() -> Vec<&'static str> {
    repeat::ALL.iter().map(|d| d.name).collect()
}

/// `--max-regress` values as thresholds.
pub fn thresholds(items: &[String]) -> Result<Vec<Threshold>, UsageError> {
    let mut out = Vec::new();
    for item in items.iter().flat_map(|s| s.split(',')) {
        let item = item.trim();
        let (metric, value) = match item.split_once('=') {
            Some((m, v)) => (Some(m.trim()), v.trim()),
            None => (None, item),
        };
        let bad = || {
            UsageError(format!(
                "--max-regress {item}: give a percentage such as 5% or METRIC=PERCENT such as p99=10%"
            ))
        };
        let number = value.strip_suffix('%').unwrap_or(value).trim();
        let v: f64 = number.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        let metrics = match metric {
            None => Vec::new(),
            Some(m) => {
                let m = m.to_ascii_lowercase().replace('-', "_");
                if let Some((_, names)) = ALIASES.iter().find(|(a, _)| *a == m) {
                    names.iter().map(|s| s.to_string()).collect()
                } else if full_names().contains(&m.as_str()) {
                    vec![m]
                } else {
                    let known: Vec<&str> = ALIASES.iter().map(|(a, _)| *a).collect();
                    return Err(UsageError(format!(
                        "--max-regress {item}: no metric {m}; use one of {} or a full name such as latency_p99_ns",
                        known.join(", ")
                    )));
                }
            }
        };
        out.push(Threshold { metrics, value: v });
    }
    Ok(out)
}

/// The cross-flag checks: exactly one new result, at most one baseline, a test that
/// `check` can run.
pub fn validate(a: &CheckArgs) -> Result<(), UsageError> {
    match (&a.new, a.test.is_empty()) {
        (Some(_), false) => {
            return Err(UsageError(
                "give the new result as NEW or as a test after --, not both".into(),
            ))
        }
        (None, true) => {
            return Err(UsageError(
                "no new result: give a result file or stored run id, or a test after -- (linerate check --last 5 -- tcp HOST)".into(),
            ))
        }
        _ => {}
    }
    if let Some(cmd) = a.test.first() {
        if !["tcp", "udp", "rr"].contains(&cmd.as_str()) {
            return Err(UsageError(format!(
                "-- {cmd}: check runs tcp, udp or rr tests"
            )));
        }
        if a.test
            .iter()
            .any(|s| s == "--json" || s == "--csv" || s.starts_with("--format"))
        {
            return Err(UsageError(
                "the test after -- takes no output option: check reads its JSON itself".into(),
            ));
        }
    }
    if a.last == Some(0) {
        return Err(UsageError("--last must be at least 1".into()));
    }
    if a.baseline.is_none() && a.last.is_none() {
        return Err(UsageError(
            "no baseline: give --baseline ID|TAG or --last K".into(),
        ));
    }
    thresholds(&a.max_regress).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    fn parse(argv: &[&str]) -> Result<CheckArgs, UsageError> {
        let mut v = vec!["linerate", "check"];
        v.extend_from_slice(argv);
        let a = parse_one::<CheckArgs>("check", &v).map_err(|e| UsageError(e.to_string()))?;
        validate(&a).map(|_| a)
    }

    #[test]
    fn thresholds_parse_per_metric_and_for_all() {
        let t = thresholds(&["5%".into(), "throughput=2%,p99=10".into()]).unwrap();
        assert_eq!(t.len(), 3);
        assert!(t[0].metrics.is_empty() && t[0].value == 5.0);
        assert_eq!(t[1].metrics, vec!["throughput_bps".to_string()]);
        assert_eq!(t[2].metrics, vec!["latency_p99_ns".to_string()]);
        assert_eq!(t[2].value, 10.0);
        assert_eq!(
            thresholds(&["latency_p50_ns=3%".into()]).unwrap()[0].metrics,
            vec!["latency_p50_ns".to_string()]
        );
        for bad in ["fast", "x=5%", "-5%", "p99=", "nan"] {
            let e = thresholds(&[bad.into()]).unwrap_err().0;
            assert!(e.contains("--max-regress"), "{e}");
        }
    }

    #[test]
    fn the_new_result_and_the_baseline_are_required_once() {
        assert!(parse(&["--last", "5", "3"]).is_ok());
        assert!(parse(&["--last", "5", "--", "tcp", "h"]).is_ok());
        assert!(parse(&["--baseline", "nightly", "run.json"]).is_ok());
        let e = parse(&["--last", "5"]).unwrap_err().0;
        assert!(e.contains("no new result"), "{e}");
        let e = parse(&["3"]).unwrap_err().0;
        assert!(e.contains("no baseline"), "{e}");
        let e = parse(&["--last", "5", "3", "--", "tcp", "h"])
            .unwrap_err()
            .0;
        assert!(e.contains("not both"), "{e}");
        let e = parse(&["--last", "5", "--", "rfc2544", "h"]).unwrap_err().0;
        assert!(e.contains("tcp, udp or rr"), "{e}");
        let e = parse(&["--last", "5", "--", "tcp", "h", "--json"])
            .unwrap_err()
            .0;
        assert!(e.contains("no output option"), "{e}");
        assert!(parse(&["--last", "0", "3"]).is_err());
    }
}
