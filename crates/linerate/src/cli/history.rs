//! `linerate history` arguments: which stored runs to list.

use clap::Args as ClapArgs;

use super::UsageError;
use crate::store::Filter;

/// `linerate history` arguments.
#[derive(Debug, ClapArgs)]
pub struct HistoryArgs {
    /// Results database; default $XDG_DATA_HOME/linerate/results.db.
    #[arg(long, value_name = "PATH", env = "LINERATE_DB")]
    pub db: Option<std::path::PathBuf>,
    /// Runs of this command only: tcp, udp, rr, rfc2544, doctor, sweep.
    #[arg(long, value_name = "COMMAND")]
    pub command: Option<String>,
    /// Runs whose client or server host name, or server address, contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub host: Option<String>,
    /// Runs started on or after this time (RFC 3339 UTC or a date: 2026-11-23).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Runs started before this time (RFC 3339 UTC or a date).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Runs whose parameter KEY had VALUE (the plan's names: write_size=65536,
    /// streams=4, transport=tcp); repeatable, all must match.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Runs with this tag (repeatable, all must match).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The runs of this sweep (its run id).
    #[arg(long, value_name = "ID")]
    pub sweep: Option<i64>,
    /// Most runs listed, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Change points of each series the filters match (the same command, parameters and
    /// hosts, oldest first): E-divisive means with a permutation test, each change with its
    /// run, size and p-value, over the newest --limit runs that match. JSON schema:
    /// docs/json-schema/changes-v1.json.
    #[arg(long)]
    pub changes: bool,
    /// With --changes: the metric of the series (e.g. latency_p99_ns); default the primary
    /// one (throughput, or transactions per second for rr).
    #[arg(long, value_name = "NAME", requires = "changes")]
    pub metric: Option<String>,
    /// The list as JSON (schema: docs/json-schema/history-v1.json).
    #[arg(long)]
    pub json: bool,
}

/// Most runs `history --changes` reads (`--limit`): each is a stored record parsed for its
/// figure, so this bounds its time; its memory holds one figure per run.
pub const MAX_CHANGES_RUNS: u32 = 10_000;

/// The commands that store runs.
pub const COMMANDS: &[&str] = &["tcp", "udp", "rr", "rfc2544", "doctor", "sweep"];

/// The filter the arguments ask for.
pub fn filter(a: &HistoryArgs) -> Result<Filter, UsageError> {
    if let Some(c) = &a.command {
        if !COMMANDS.contains(&c.as_str()) {
            return Err(UsageError(format!(
                "--command {c}: use one of {}",
                COMMANDS.join(", ")
            )));
        }
    }
    let mut params = Vec::new();
    for p in &a.params {
        let Some((k, v)) = p.split_once('=') else {
            return Err(UsageError(format!(
                "--param {p}: use KEY=VALUE, e.g. --param write_size=65536"
            )));
        };
        let k = k.trim();
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(UsageError(format!(
                "--param {p}: KEY is a plan field name such as write_size or streams"
            )));
        }
        params.push((k.to_string(), v.trim().to_string()));
    }
    for (flag, t) in [("--since", &a.since), ("--until", &a.until)] {
        if let Some(t) = t {
            if humantime::parse_rfc3339_weak(t).is_err() && !is_date(t) {
                return Err(UsageError(format!(
                    "{flag} {t}: use an RFC 3339 UTC time (2026-11-23T18:00:00Z) or a date (2026-11-23)"
                )));
            }
        }
    }
    if a.limit == 0 {
        return Err(UsageError("--limit must be at least 1".into()));
    }
    if a.changes && a.limit > MAX_CHANGES_RUNS {
        return Err(UsageError(format!(
            "--limit {}: --changes reads at most {MAX_CHANGES_RUNS} runs (and looks for changes in each series' newest {}): narrow with --since/--until/--param",
            a.limit,
            linerate_stats::changepoint::MAX_POINTS
        )));
    }
    Ok(Filter {
        command: a.command.clone(),
        host: a.host.clone(),
        since: a.since.clone(),
        until: a.until.clone(),
        params,
        tags: a.tags.clone(),
        sweep_id: a.sweep,
        limit: a.limit,
    })
}

/// `YYYY-MM-DD`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    fn parse(argv: &[&str]) -> Result<Filter, UsageError> {
        let mut v = vec!["linerate", "history"];
        v.extend_from_slice(argv);
        match parse_one::<HistoryArgs>("history", &v) {
            Ok(h) => filter(&h),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn filters_are_checked() {
        let f = parse(&[
            "--command",
            "tcp",
            "--param",
            "write_size=65536",
            "--tag",
            "a",
        ])
        .unwrap();
        assert_eq!(
            f.params,
            vec![("write_size".to_string(), "65536".to_string())]
        );
        assert_eq!(f.command.as_deref(), Some("tcp"));
        assert!(parse(&["--command", "ftp"]).is_err());
        assert!(parse(&["--param", "write_size"]).is_err());
        assert!(parse(&["--param", "a'b=1"]).is_err());
        assert!(parse(&["--since", "yesterday"]).is_err());
        assert!(parse(&["--since", "2026-11-23"]).is_ok());
        assert!(parse(&["--until", "2026-11-23T18:00:00Z"]).is_ok());
        assert!(parse(&["--limit", "0"]).is_err());
        assert!(parse(&["--changes", "--limit", "10000"]).is_ok());
        let Err(e) = parse(&["--changes", "--limit", "100000"]) else {
            panic!("--limit 100000 taken with --changes");
        };
        assert!(e.0.contains("at most 10000 runs"), "{}", e.0);
    }
}
