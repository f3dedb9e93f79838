//! The output flags of the test commands (`--json`, `--json-stream`, `--csv`, `--format`,
//! `-q`, ttcp's `-f`, `--each-run`) and the output they pick.

use clap::Args as ClapArgs;

use super::UsageError;
use crate::export::ttcp::TtcpUnit;
use crate::export::{Classic, Format};

/// Output selection, shared by commands that print results.
#[derive(Debug, Clone, ClapArgs)]
pub struct OutputArgs {
    /// One JSON record (its schema: `linerate schema run`).
    #[arg(long, conflicts_with_all = ["json_stream", "csv", "format"])]
    pub json: bool,
    /// Line-delimited JSON events: start, every interval, end.
    #[arg(long, conflicts_with_all = ["csv", "format"])]
    pub json_stream: bool,
    /// CSV: a header and one row per direction.
    #[arg(long, conflicts_with = "format")]
    pub csv: bool,
    /// Output format: table, json, json-stream, csv, netperf, ttcp.
    #[arg(long)]
    pub format: Option<String>,
    /// Quiet: only the results on stdout; no warnings, diagnosis, progress or failed-criteria
    /// lines on stderr (the exit code still tells). With --format netperf|ttcp, stdout and
    /// stderr merged (rsh) carry the classic block alone.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// With --format ttcp: ttcp's -f unit, k m g (Kbit, Mbit, Gbit /sec) or K M G (KB, MB,
    /// GB /sec), binary prefixes as ttcp (default K).
    #[arg(short = 'f', long = "ttcp-unit", value_name = "k|m|g|K|M|G")]
    pub ttcp_unit: Option<String>,
    /// With --repeat/--confidence and --format netperf: print every run's table before the
    /// table of means (netperf -i/-I prints only the means).
    #[arg(long)]
    pub each_run: bool,
    /// Also write the results to FILE in the Prometheus text format (node_exporter's
    /// textfile collector: runs, errors, bytes, throughput, CPU of both ends; rr:
    /// transactions and latency), replaced atomically.
    #[arg(long, value_name = "FILE")]
    pub prom: Option<std::path::PathBuf>,
}

/// What the output flags picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// The format.
    pub format: Format,
    /// `-q`.
    pub quiet: bool,
    /// The classic formats' choices.
    pub classic: Classic,
}

/// Picks the output: the format and the flags that go with it, checked together.
pub fn output(o: &OutputArgs) -> Result<Output, UsageError> {
    let format = output_format(o)?;
    if let Some(p) = &o.prom {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() || p.file_name().is_none() {
            return Err(UsageError(format!(
                "--prom {}: name a file in an existing directory (e.g. /var/lib/node_exporter/textfile/linerate.prom)",
                p.display()
            )));
        }
    }
    let ttcp_unit = match &o.ttcp_unit {
        None => TtcpUnit::default(),
        Some(_) if format != Format::Ttcp => {
            return Err(UsageError(
                "-f sets ttcp's throughput unit: use it with --format ttcp".into(),
            ))
        }
        Some(u) => TtcpUnit::from_letter(u.trim()).ok_or_else(|| {
            UsageError(format!(
                "-f {u}: use one of ttcp's units k, m, g (Kbit, Mbit, Gbit /sec) or K, M, G \
                 (KB, MB, GB /sec)"
            ))
        })?,
    };
    if o.each_run && format != Format::Netperf {
        return Err(UsageError(
            "--each-run prints every run's netperf table: use it with --format netperf and \
             --repeat or --confidence (other formats show every run already)"
                .into(),
        ));
    }
    Ok(Output {
        format,
        quiet: o.quiet,
        classic: Classic {
            ttcp_unit,
            each_run: o.each_run,
        },
    })
}

/// Picks the output format.
pub fn output_format(o: &OutputArgs) -> Result<Format, UsageError> {
    if o.json {
        return Ok(Format::Json);
    }
    if o.json_stream {
        return Ok(Format::JsonStream);
    }
    if o.csv {
        return Ok(Format::Csv);
    }
    match &o.format {
        None => Ok(Format::Table),
        Some(f) => f
            .parse()
            .map_err(|e: crate::export::UnknownFormat| UsageError(format!("--format: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(format: Option<&str>, unit: Option<&str>, each_run: bool) -> OutputArgs {
        OutputArgs {
            prom: None,
            json: false,
            json_stream: false,
            csv: false,
            format: format.map(str::to_string),
            quiet: false,
            ttcp_unit: unit.map(str::to_string),
            each_run,
        }
    }

    #[test]
    fn ttcp_units_are_ttcps_letters_and_only_with_ttcp() {
        let o = output(&args(Some("ttcp"), Some("m"), false)).unwrap();
        assert_eq!(o.classic.ttcp_unit, TtcpUnit::MBits);
        let o = output(&args(Some("ttcp"), Some("G"), false)).unwrap();
        assert_eq!(o.classic.ttcp_unit, TtcpUnit::GBytes);
        let e = output(&args(Some("ttcp"), Some("x"), false)).unwrap_err();
        assert!(e.0.contains("-f x"), "{}", e.0);
        let e = output(&args(Some("netperf"), Some("m"), false)).unwrap_err();
        assert!(e.0.contains("--format ttcp"), "{}", e.0);
    }

    #[test]
    fn each_run_needs_netperf() {
        assert!(
            output(&args(Some("netperf"), None, true))
                .unwrap()
                .classic
                .each_run
        );
        assert!(output(&args(None, None, true)).is_err());
    }
}
