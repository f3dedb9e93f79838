//! `linerate sweep` arguments, and their validation into a [`SweepPlan`]: every point's test
//! command line is parsed and checked by the test's own rules before anything runs, so a
//! bad value at point 40 is a usage error at once, not after an hour.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args as ClapArgs;

use super::common::{parse_one, StoreArgs};
use super::repeat::{repeat_plan, RepeatArgs};
use super::rr::RrArgs;
use super::stream::StreamArgs;
use super::{units, UsageError};
use crate::model::criteria::Criteria;
use crate::model::plan::StreamPlan;
use crate::model::repeat as metrics;
use crate::model::sweep::{
    check_size, count_vary, expand, fill, names_in, parse_vary, split_words, Vary,
};
use crate::repeat::RepeatPlan;

/// `linerate sweep` arguments.
#[derive(Debug, ClapArgs)]
pub struct SweepArgs {
    /// A dimension of the matrix, NAME=VALUES (repeatable; every combination is a point,
    /// the first --vary outermost). NAME is an option of the test (len, l, window, parallel,
    /// P, congestion, mss, rate, tos, size, ...; flags take on/off) or a variable
    /// that only --client-cmd templates use (mtu). VALUES: 1K,4K,16K or ranges 1..8
    /// (step 1), 1500..9000:+500, 1K..64K:*2.
    #[arg(long = "vary", value_name = "NAME=VALUES", required = true)]
    pub vary: Vec<String>,
    /// A command run on this host before each point, templated with the point's values
    /// ({mtu}); run without a shell (words split at spaces, quotes keep a word together).
    /// Repeatable, run in order; its output and exit status are kept with the point, and a
    /// failure fails the point.
    #[arg(long = "client-cmd", value_name = "TEMPLATE")]
    pub client_cmd: Vec<String>,
    /// A hook on the server before each point: NAME PARAM={VAR} ... (repeatable, run in
    /// order, before the client commands). The server's operator declares its hooks with
    /// `linerate serve --hooks FILE` (typed, range-checked parameters, a restore command the
    /// server runs when the sweep ends or the client goes away); a hook it did not declare is
    /// refused and the sweep stops.
    #[arg(long = "hook", value_name = "NAME PARAM={VAR}")]
    pub hook: Vec<String>,
    /// A command run on this host once at the end (also after Ctrl-C), e.g. to restore an
    /// MTU; not templated. Repeatable.
    #[arg(long = "client-restore", value_name = "COMMAND")]
    pub client_restore: Vec<String>,
    /// Longest a client command may run before it is killed.
    #[arg(long, default_value = "30", value_parser = units::parse_duration)]
    pub cmd_timeout: Duration,
    /// The metric the best point is picked by: throughput (the test's primary: throughput
    /// or transactions per second), service-demand (client CPU per unit of work),
    /// server-service-demand, cpu, p99 (rr), or a metric name such as latency_p50_ns.
    #[arg(long, default_value = "throughput", value_name = "METRIC")]
    pub best: String,
    /// The point the best is compared with (its number, from 1).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub baseline: u32,
    /// Write every point's result to FILE as it finishes (one JSON line each), so an
    /// interrupted sweep loses nothing and --resume can continue it.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Continue the sweep in --journal FILE: the points it holds are not run again.
    #[arg(long, requires = "journal")]
    pub resume: bool,
    /// One JSON record (schema: docs/json-schema/sweep-v1.json).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV: a header and one row per point.
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub repeat: RepeatArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The test, after `--`: tcp|udp|rr HOST [its options].
    #[arg(last = true, required = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// How a sweep prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepFormat {
    /// The table with the best point in words.
    Table,
    /// `--json`.
    Json,
    /// `--csv`.
    Csv,
}

/// One point, ready to run.
#[derive(Debug, Clone)]
pub struct PointPlan {
    /// Number, from 1.
    pub index: u32,
    /// Its values by name.
    pub values: BTreeMap<String, String>,
    /// The test command line (`linerate tcp HOST ...`).
    pub argv: Vec<String>,
    /// The validated test.
    pub plan: StreamPlan,
    /// Its pass/fail criteria.
    pub criteria: Criteria,
    /// `--link-rate` of the test.
    pub link_rate_bps: Option<u64>,
    /// The client commands, filled in.
    pub commands: Vec<Vec<String>>,
    /// The server hooks, filled in: name and parameter values.
    pub hooks: Vec<(String, BTreeMap<String, String>)>,
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// The test command (tcp, udp, rr).
    pub test_command: String,
    /// The test's command line as given.
    pub test: Vec<String>,
    /// The matrix.
    pub vary: Vec<Vary>,
    /// Every point.
    pub points: Vec<PointPlan>,
    /// `--client-restore`, split.
    pub restore: Vec<Vec<String>>,
    /// `--cmd-timeout`.
    pub cmd_timeout: Duration,
    /// The metric name the best point is picked by.
    pub best_by: String,
    /// The baseline point.
    pub baseline: u32,
    /// Runs per point.
    pub rp: RepeatPlan,
    /// Output.
    pub format: SweepFormat,
}

/// The test commands a sweep runs.
pub const TESTS: &[&str] = &["tcp", "udp", "rr"];

/// The options a sweep sets itself, which its test must not carry.
const OWN: &[&str] = &[
    "repeat",
    "confidence",
    "iterations",
    "json",
    "json-stream",
    "csv",
    "format",
    "prom",
    "capture",
    "db",
    "no-store",
    "tag",
];

/// How a name of the test's options is written on its command line.
#[derive(Debug, Clone, PartialEq)]
struct OptionName {
    flag: String,
    takes_value: bool,
}

fn test_option(test: &str, name: &str) -> Option<OptionName> {
    let sub = match test {
        "tcp" | "udp" => StreamArgs::augment_args(clap::Command::new("test")),
        "rr" => RrArgs::augment_args(clap::Command::new("test")),
        _ => return None,
    };
    let found = sub.get_arguments().find_map(|a| {
        let long = a.get_long().filter(|l| *l == name);
        let short = a
            .get_short()
            .filter(|s| name.chars().count() == 1 && name.starts_with(*s));
        let flag = match (long, short) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(s)) => format!("-{s}"),
            (None, None) => return None,
        };
        Some(OptionName {
            flag,
            takes_value: a.get_action().takes_values(),
        })
    });
    found
}

/// The metric name `--best` asks for, for a test of this kind.
pub fn best_metric(best: &str, rr: bool) -> Result<String, UsageError> {
    let all = &metrics::ALL;
    let name = match (best, rr) {
        ("throughput", false) => metrics::THROUGHPUT.name,
        ("throughput", true) => metrics::TPS.name,
        ("service-demand", false) => metrics::CLIENT_SD_KB.name,
        ("service-demand", true) => metrics::CLIENT_SD_TR.name,
        ("server-service-demand", false) => metrics::SERVER_SD_KB.name,
        ("server-service-demand", true) => metrics::SERVER_SD_TR.name,
        ("cpu", _) => metrics::CLIENT_CPU.name,
        ("p99", true) => metrics::P99.name,
        ("p99", false) => {
            return Err(UsageError(
                "--best p99: latency percentiles come from rr tests; sweep `rr` or pick throughput".into(),
            ))
        }
        (other, _) => match all.iter().find(|d| d.name == other) {
            Some(d) => d.name,
            None => {
                return Err(UsageError(format!(
                    "--best {other}: use throughput, service-demand, server-service-demand, cpu, p99, or a metric name ({})",
                    all.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
                )))
            }
        },
    };
    Ok(name.to_string())
}

/// Parses one point's test command line by the test's own rules.
fn point_plan(test: &str, argv: &[String]) -> Result<(StreamPlan, Criteria, Option<u64>), String> {
    let first_line = |e: clap::Error| {
        e.to_string()
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("invalid")
            .trim_start_matches("error: ")
            .to_string()
    };
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let err = |e: UsageError| e.0;
    match test {
        "tcp" | "udp" => {
            let name = if test == "tcp" { "tcp" } else { "udp" };
            let a: StreamArgs = parse_one(name, &argv).map_err(first_line)?;
            if a.dut.dut.is_some() {
                return Err(
                    "--dut is not available in a sweep: run the test alone with --dut".into(),
                );
            }
            let t = if test == "tcp" {
                linerate_wire::control::Transport::Tcp
            } else {
                linerate_wire::control::Transport::Udp
            };
            Ok((
                super::stream::stream_plan(&a, t).map_err(err)?,
                super::stream::criteria(&a, t).map_err(err)?,
                a.link_rate,
            ))
        }
        "rr" => {
            let a: RrArgs = parse_one("rr", &argv).map_err(first_line)?;
            Ok((
                super::rr::rr_plan(&a).map_err(err)?,
                super::rr::criteria(&a).map_err(err)?,
                None,
            ))
        }
        _ => Err(format!("`{test}` is not a test a sweep runs")),
    }
}

/// `NAME PARAM={VAR} ...`: a hook's name and its parameters' templates.
fn parse_hook(s: &str) -> Result<Hook, UsageError> {
    let words = split_words(s).map_err(|e| UsageError(format!("--hook: {e}")))?;
    let Some((name, rest)) = words.split_first() else {
        return Err(UsageError("--hook: name a hook".into()));
    };
    let mut params = Vec::new();
    for w in rest {
        let Some((k, t)) = w.split_once('=') else {
            return Err(UsageError(format!(
                "--hook '{s}': parameters are PARAM=VALUE, e.g. --hook 'mtu mtu={{mtu}}'"
            )));
        };
        params.push((k.to_string(), t.to_string()));
    }
    Ok((name.clone(), params))
}

/// The number of points of the sweep's matrix, counted from its `--vary` lists before any
/// value is written out; a usage error (one line, how to make fewer) beyond
/// [`MAX_POINTS`](crate::model::sweep::MAX_POINTS).
pub fn points_of(a: &SweepArgs) -> Result<u64, UsageError> {
    let dims = a
        .vary
        .iter()
        .map(|v| count_vary(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;
    check_size(&dims).map_err(UsageError)
}

/// A hook's name and its parameters (name, template).
type Hook = (String, Vec<(String, String)>);

/// Builds the sweep.
pub fn sweep_plan(a: &SweepArgs) -> Result<SweepPlan, UsageError> {
    a.store.validate()?;
    // The matrix's size first: a million points must be refused before they are built.
    points_of(a)?;
    let test = test_command(a)?;
    let templates: Vec<Vec<String>> = a
        .client_cmd
        .iter()
        .map(|c| split_words(c).map_err(|e| UsageError(format!("--client-cmd: {e}"))))
        .collect::<Result<_, _>>()?;
    let hooks = a
        .hook
        .iter()
        .map(|h| parse_hook(h))
        .collect::<Result<Vec<_>, _>>()?;
    let used: std::collections::BTreeSet<String> = templates
        .iter()
        .flatten()
        .chain(hooks.iter().flat_map(|(_, ps)| ps.iter().map(|(_, t)| t)))
        .flat_map(|w| names_in(w))
        .collect();
    let (vary, flags) = dimensions(a, &test, &used)?;
    let combos = expand(&vary).map_err(UsageError)?;
    let mut points = Vec::with_capacity(combos.len());
    for (i, values) in combos.into_iter().enumerate() {
        let index = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let mut argv = vec!["linerate".to_string()];
        argv.extend(a.test.iter().cloned());
        push_flags(&mut argv, &vary, &flags, &values)?;
        points.push(point(index, values, argv, &test, &templates, &hooks)?);
    }
    let rr = points.first().is_some_and(|p| p.plan.spec.rr.is_some());
    let best_by = best_metric(&a.best, rr)?;
    let n = u32::try_from(points.len()).unwrap_or(u32::MAX);
    if a.baseline == 0 || a.baseline > n {
        return Err(UsageError(format!(
            "--baseline {}: the sweep has points 1 to {n}",
            a.baseline
        )));
    }
    let restore = a
        .client_restore
        .iter()
        .map(|c| split_words(c).map_err(|e| UsageError(format!("--client-restore: {e}"))))
        .collect::<Result<_, _>>()?;
    if a.cmd_timeout.is_zero() {
        return Err(UsageError("--cmd-timeout must be above zero".into()));
    }
    Ok(SweepPlan {
        test_command: test,
        test: a.test.clone(),
        vary,
        points,
        restore,
        cmd_timeout: a.cmd_timeout,
        best_by,
        baseline: a.baseline,
        rp: repeat_plan(&a.repeat)?,
        format: if a.json {
            SweepFormat::Json
        } else if a.csv {
            SweepFormat::Csv
        } else {
            SweepFormat::Table
        },
    })
}

/// The test after `--` (one of [`TESTS`]), whose own words must not hold the sweep's flags.
fn test_command(a: &SweepArgs) -> Result<String, UsageError> {
    let test = a.test.first().cloned().unwrap_or_default();
    if !TESTS.contains(&test.as_str()) {
        return Err(UsageError(format!(
            "sweep: the test after -- must be one of {} (e.g. `linerate sweep --vary len=1K,64K -- tcp HOST`), not '{test}'",
            TESTS.join(", ")
        )));
    }
    for word in &a.test[1..] {
        let name = word.trim_start_matches('-');
        let name = name.split('=').next().unwrap_or(name);
        if word.starts_with("--") && OWN.contains(&name) {
            return Err(UsageError(format!(
                "sweep: give {word} to the sweep, before --, not to the test (the sweep repeats, prints and stores each point)"
            )));
        }
    }
    Ok(test)
}

/// The dimensions (--vary), each with its flag on the test's command line (found once,
/// not at every point) or none when only a --client-cmd or --hook uses it (`used`).
fn dimensions(
    a: &SweepArgs,
    test: &str,
    used: &std::collections::BTreeSet<String>,
) -> Result<(Vec<Vary>, Vec<Option<OptionName>>), UsageError> {
    let mut vary = Vec::new();
    let mut flags = Vec::new();
    for v in &a.vary {
        let (name, values) = parse_vary(v).map_err(UsageError)?;
        if vary.iter().any(|x: &Vary| x.name == name) {
            return Err(UsageError(format!("--vary {name} is given twice")));
        }
        let option = test_option(test, &name);
        if let Some(o) = &option {
            if OWN.contains(&o.flag.trim_start_matches('-')) {
                return Err(UsageError(format!(
                    "--vary {name}: the sweep sets {} itself",
                    o.flag
                )));
            }
        }
        if option.is_none() && !used.contains(&name) {
            return Err(UsageError(format!(
                "--vary {name}: not an option of `linerate {test}` and used by no --client-cmd or --hook; name a test option (linerate {test} --help) or use {{{name}}} in a --client-cmd or --hook"
            )));
        }
        vary.push(Vary {
            name,
            values,
            option: option.is_some(),
        });
        flags.push(option);
    }
    Ok((vary, flags))
}

/// Adds a point's values of the test's options to its command line: a value after its
/// flag, or a flag alone for on (and nothing for off).
fn push_flags(
    argv: &mut Vec<String>,
    vary: &[Vary],
    flags: &[Option<OptionName>],
    values: &BTreeMap<String, String>,
) -> Result<(), UsageError> {
    for (v, o) in vary.iter().zip(flags) {
        let Some(o) = o else {
            continue;
        };
        let val = &values[&v.name];
        if o.takes_value {
            argv.push(o.flag.clone());
            argv.push(val.clone());
        } else {
            match val.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => argv.push(o.flag.clone()),
                "off" | "false" | "no" | "0" => {}
                _ => {
                    return Err(UsageError(format!(
                        "--vary {}: {} is a flag: use on,off",
                        v.name, o.flag
                    )))
                }
            }
        }
    }
    Ok(())
}

/// One point: the test's plan from its command line, its commands and hooks filled with
/// its values.
fn point(
    index: u32,
    values: BTreeMap<String, String>,
    argv: Vec<String>,
    test: &str,
    templates: &[Vec<String>],
    hooks: &[Hook],
) -> Result<PointPlan, UsageError> {
    let label = values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let (plan, criteria, link_rate_bps) =
        point_plan(test, &argv).map_err(|e| UsageError(format!("point {index} ({label}): {e}")))?;
    let commands = templates
        .iter()
        .map(|t| t.iter().map(|w| fill(w, &values)).collect())
        .collect::<Result<Vec<Vec<String>>, String>>()
        .map_err(|e| UsageError(format!("--client-cmd: {e}")))?;
    let point_hooks = hooks
        .iter()
        .map(|(name, ps)| {
            ps.iter()
                .map(|(k, t)| fill(t, &values).map(|v| (k.clone(), v)))
                .collect::<Result<BTreeMap<_, _>, _>>()
                .map(|m| (name.clone(), m))
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| UsageError(format!("--hook: {e}")))?;
    Ok(PointPlan {
        index,
        values,
        argv,
        plan,
        criteria,
        link_rate_bps,
        commands,
        hooks: point_hooks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(argv: &[&str]) -> Result<SweepPlan, UsageError> {
        let mut v = vec!["linerate", "sweep"];
        v.extend_from_slice(argv);
        match parse_one::<SweepArgs>("sweep", &v) {
            Ok(s) => sweep_plan(&s),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn points_are_test_command_lines_checked_by_the_test() {
        let p = plan(&[
            "--vary",
            "len=1K,64K",
            "--vary",
            "P=1..2",
            "--vary",
            "nodelay=on,off",
            "--",
            "tcp",
            "h",
            "-t",
            "1",
        ])
        .unwrap();
        assert_eq!(p.points.len(), 8);
        let first = &p.points[0];
        assert_eq!(first.plan.spec.write_size, 1024);
        assert_eq!(first.plan.spec.streams, 1);
        assert!(first.argv.ends_with(&[
            "--len".into(),
            "1K".into(),
            "-P".into(),
            "1".into(),
            "--nodelay".into()
        ]));
        assert_eq!(p.points[7].plan.spec.write_size, 65536);
        assert_eq!(p.points[7].plan.spec.streams, 2);
        assert_eq!(p.best_by, "throughput_bps");
        let rr = plan(&["--vary", "r=1,64", "--best", "p99", "--", "rr", "h"]).unwrap();
        assert_eq!(rr.best_by, "latency_p99_ns");
    }

    /// `--best` takes every metric a run's record gives (`repeat::ALL`), the interrupt
    /// rates and the interface packet rate too.
    #[test]
    fn best_takes_every_metric_name() {
        for d in metrics::ALL {
            assert_eq!(best_metric(d.name, false).unwrap(), d.name);
        }
        let e = best_metric("no_such_metric", false).unwrap_err().0;
        assert!(e.contains("client_interrupts_per_sec"), "{e}");
        assert!(e.contains("receiver_interface_pps"), "{e}");
    }

    #[test]
    fn variables_fill_client_commands() {
        let p = plan(&[
            "--vary",
            "mtu=1500,9000",
            "--client-cmd",
            "ip link set dev veth0 mtu {mtu}",
            "--",
            "udp",
            "h",
        ])
        .unwrap();
        assert_eq!(p.points[1].commands[0].last().unwrap(), "9000");
        assert!(!p.vary[0].option);
    }

    #[test]
    fn hooks_are_names_with_templated_values() {
        let p = plan(&[
            "--vary",
            "mtu=1500,9000",
            "--hook",
            "mtu mtu={mtu}",
            "--",
            "tcp",
            "h",
        ])
        .unwrap();
        assert_eq!(p.points[1].hooks[0].0, "mtu");
        assert_eq!(p.points[1].hooks[0].1["mtu"], "9000");
        assert!(plan(&["--vary", "mtu=1", "--hook", "mtu 9000", "--", "tcp", "h"]).is_err());
    }

    #[test]
    fn bad_sweeps_are_usage_errors_before_anything_runs() {
        let e = |argv: &[&str]| plan(argv).err().map(|e| e.0).unwrap_or_default();
        assert!(e(&["--vary", "len=1K,0", "--", "tcp", "h"]).contains("point 2 (len=0)"));
        assert!(e(&["--vary", "frob=1", "--", "tcp", "h"]).contains("not an option"));
        assert!(e(&["--vary", "len=1", "--", "ftp", "h"]).contains("tcp, udp, rr"));
        assert!(e(&["--vary", "len=1", "--", "tcp", "h", "--json"]).contains("before --"));
        assert!(e(&["--vary", "len=1", "--baseline", "3", "--", "tcp", "h"]).contains("--baseline"));
        assert!(e(&["--vary", "len=1", "--best", "p99", "--", "tcp", "h"]).contains("rr"));
        assert!(e(&["--vary", "nodelay=maybe", "--", "tcp", "h"]).contains("on,off"));
        assert!(e(&[
            "--vary",
            "x=1",
            "--client-cmd",
            "echo {x} {y}",
            "--",
            "tcp",
            "h"
        ])
        .contains("{y}"));
    }
}
