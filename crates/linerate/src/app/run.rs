//! Running a planned client test, shared by `linerate tcp|udp` and `linerate rr`: once with
//! live output (the Ctrl-C flag, interval lines or JSON-stream events as they arrive, then
//! the record in the chosen format, warnings on stderr where the format has no place for
//! them), or repeated by `--repeat`/`--confidence` (`crate::repeat`).
//!
//! stdout is written and flushed before anything goes to stderr, so that with the two merged
//! (rsh, `2>&1`) a classic netperf or ttcp block comes first; `-q` leaves stderr silent.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use linerate_wire::control::Transport;
use linerate_wire::profile::ProfileReport;
use linerate_wire::report::{IntervalReport, Role};

#[cfg(feature = "analyze")]
use anyhow::Context;

#[cfg(feature = "analyze")]
use super::analyze::analyze_path;
use super::keep::Keeper;
use super::{signal_flag, write_out};
#[cfg(feature = "analyze")]
use crate::analyze::AnalyzeOptions;
use crate::cli::analyze::CaptureArgs;
use crate::cli::output::Output;
#[cfg(feature = "analyze")]
use crate::cli::UsageError;
use crate::export::{self, Format};
use crate::model::criteria::Criteria;
use crate::model::plan::StreamPlan;
#[cfg(feature = "analyze")]
use crate::model::trace::TraceRecord;
use crate::model::{PlanRecord, RunRecord, RunSetRecord, StreamEvent};
use crate::repeat::{run_repetitions, RepeatPlan};
use crate::session::protocol::client::{self, Observer};
use crate::session::side::dut::DutProbe;

/// The interval lines of a table: stream tests show both ends, RR tests the client's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lines {
    Stream(Transport),
    Rr,
}

/// Prints intervals as they arrive, in the chosen format.
pub struct LiveOutput {
    format: Format,
    lines: Lines,
    header_done: bool,
}

impl LiveOutput {
    /// Live output of a test run by `plan`.
    pub fn new(format: Format, plan: &StreamPlan) -> LiveOutput {
        LiveOutput {
            format,
            lines: match plan.spec.rr {
                Some(_) => Lines::Rr,
                None => Lines::Stream(plan.spec.transport),
            },
            header_done: false,
        }
    }

    fn table_line(&mut self, side: Role, iv: &IntervalReport) {
        let (header, row) = match self.lines {
            Lines::Stream(t) => (
                export::table::interval_header(t),
                export::table::interval_line(side, iv, t),
            ),
            Lines::Rr if side == Role::Client => (
                export::rr::interval_header(),
                export::rr::interval_line(side, iv),
            ),
            Lines::Rr => return,
        };
        if !self.header_done {
            self.header_done = true;
            let _ = write_out(&line(header));
        }
        let _ = write_out(&line(row));
    }
}

impl Observer for LiveOutput {
    fn started(&mut self, plan: &PlanRecord, started_at: &str) {
        if self.format == Format::JsonStream {
            let _ = write_out(&export::json::event_line(&StreamEvent::Start {
                plan: plan.clone(),
                started_at: started_at.to_string(),
            }));
        }
    }

    fn interval(&mut self, side: Role, iv: &IntervalReport) {
        match self.format {
            Format::Table => self.table_line(side, iv),
            Format::JsonStream => {
                let _ = write_out(&export::json::event_line(&StreamEvent::Interval {
                    side,
                    interval: iv.clone(),
                }));
            }
            _ => {}
        }
    }
}

/// Ends `s` with exactly one newline.
fn line(mut s: String) -> String {
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// How [`run_once`] runs its test besides the plan.
pub struct Once<'a> {
    /// The `--link-rate` hint for the diagnosis.
    pub link_rate_bps: Option<u64>,
    /// `--capture`: record and analyse the test's packets.
    pub capture: &'a CaptureArgs,
    /// `--latency`: probes beside the load (`crate::session::side::latency`).
    pub latency: bool,
    /// `--prom FILE`: the run in the Prometheus text format.
    pub prom: Option<&'a Path>,
    /// `--profile-out DIR`: each end's folded stacks.
    pub profile_out: Option<&'a Path>,
    /// `--iperf3`: the server is an iperf3 server (`crate::session::iperf3::client`).
    pub iperf3: bool,
}

/// Runs one test by `plan` with live output (Ctrl-C ends it early and still reports), gives
/// the record the `--link-rate` hint, records and analyses its packets with `--capture`,
/// prints it in `format`, and exits 1 when it fails one of the `criteria` (2 when the test
/// itself failed once it had started: [`RunRecord::failure`]).
pub fn run_once(
    plan: &StreamPlan,
    out: Output,
    how: &Once<'_>,
    criteria: &Criteria,
    keeper: &Keeper,
    dut: Option<&mut DutProbe>,
) -> anyhow::Result<ExitCode> {
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let mut live = LiveOutput::new(out.format, plan);
    let rec = with_capture(how.capture, plan, |plan| {
        let mut rec = if how.iperf3 {
            crate::session::iperf3::client::run(plan, &mut live, &interrupt)?
        } else if how.latency {
            crate::session::side::latency::run(plan, &mut live, &interrupt)?
        } else {
            let dut = dut.map(|d| d as &mut dyn client::WindowWatch);
            client::run_with_dut(plan, &mut live, &interrupt, dut)?
        };
        crate::diagnose::apply_link_rate(&mut rec, how.link_rate_bps);
        Ok(rec)
    })?;
    render_run(out, how, keeper.command(), &rec)?;
    if let Some(code) = failed(std::slice::from_ref(&rec)) {
        keeper.keep_run(2, &rec);
        return Ok(code);
    }
    let failures = criteria.failures(&rec);
    let code = i32::from(!failures.is_empty());
    keeper.keep_run(code, &rec);
    Ok(verdict(failures, out))
}

/// `--profile-out DIR`: each end's folded stacks and flame graph as DIR/client.folded,
/// DIR/client.svg, DIR/server.folded and DIR/server.svg ([`write_profiles`]).
fn write_folded(dir: Option<&Path>, rec: &RunRecord) {
    let ends = [
        ("client", "client", Some(&rec.client)),
        ("server", "server", rec.server.as_ref()),
    ]
    .map(|(file, end, side)| {
        (
            file.to_string(),
            end.to_string(),
            side.and_then(|s| s.profile.as_ref()),
        )
    });
    write_profiles(dir, &ends);
}

/// `--profile-out DIR`: for each `(file, end, profile)`, the profile's folded stacks as
/// DIR/FILE.folded and its flame graph (`export::flamegraph`) as DIR/FILE.svg. An end without
/// a profile or stacks writes no file and says why; a file that cannot be written costs a
/// warning, never the printed result or the exit code.
#[cfg(feature = "chart")]
pub(crate) fn write_profiles(
    dir: Option<&Path>,
    ends: &[(String, String, Option<&ProfileReport>)],
) {
    let Some(dir) = dir else { return };
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("linerate: warning: --profile-out {}: {e}", dir.display());
        return;
    }
    for (file, end, p) in ends {
        let Some(p) = p else {
            eprintln!(
                "linerate: warning: --profile-out: the {end} has no profile; no {file}.folded or {file}.svg"
            );
            continue;
        };
        let Some(svg) = export::flamegraph::of_profile(end, p) else {
            eprintln!("linerate: warning: --profile-out: the {end}'s profile has no stacks; no {file}.folded or {file}.svg");
            continue;
        };
        for (path, bytes) in [
            (
                dir.join(format!("{file}.folded")),
                crate::model::profile::folded_text(p),
            ),
            (dir.join(format!("{file}.svg")), svg),
        ] {
            if let Err(e) = std::fs::write(&path, bytes) {
                eprintln!(
                    "linerate: warning: --profile-out: cannot write {}: {e}",
                    path.display()
                );
            }
        }
    }
}

/// A build without flame graphs refuses `--profile-out` (`ProfileArgs::spec`): no files.
#[cfg(not(feature = "chart"))]
pub(crate) fn write_profiles(
    _dir: Option<&Path>,
    _ends: &[(String, String, Option<&ProfileReport>)],
) {
}

/// `--prom FILE`: the runs in the Prometheus text format, replaced atomically; a file that
/// cannot be written costs a warning, never the printed result or the exit code.
fn write_prom(path: Option<&Path>, command: &str, runs: &[RunRecord]) {
    let Some(path) = path else { return };
    if let Err(e) = export::prom::write_atomic(path, &export::prom::runs(command, runs)) {
        eprintln!(
            "linerate: warning: --prom {}: cannot write it: {e}",
            path.display()
        );
    }
}

/// Exit code 2 with one error line when a run failed after it started (the server ended it
/// or vanished, no results, a byte count not reached in time); its record is printed first.
fn failed(runs: &[RunRecord]) -> Option<ExitCode> {
    let mut any = false;
    for (k, f) in runs
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((k, r.failure.as_ref()?)))
    {
        any = true;
        if runs.len() > 1 {
            eprintln!("linerate: error: run {}: {f}", k + 1);
        } else {
            eprintln!("linerate: error: {f}");
        }
    }
    any.then(|| ExitCode::from(2))
}

/// Exit code 1 with each failed criterion on stderr (unless `-q`), or 0.
fn verdict(failures: Vec<String>, out: Output) -> ExitCode {
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    if !out.quiet {
        let classic = matches!(out.format, Format::Netperf | Format::Ttcp);
        for f in &failures {
            if classic {
                eprintln!("# linerate: failed: {f}");
            } else {
                eprintln!("linerate: failed: {f}");
            }
        }
    }
    ExitCode::from(1)
}

/// One test with live output, or runs by `rp`; every record gets the `--link-rate` hint, and
/// every run must meet the `criteria` for exit code 0. Of `how`, repeated runs use the
/// link rate and `--prom` (`--capture` and `--latency` take one run).
pub fn run_repeated(
    plan: &StreamPlan,
    out: Output,
    rp: RepeatPlan,
    how: &Once<'_>,
    criteria: &Criteria,
    keeper: &Keeper,
    mut dut: Option<&mut DutProbe>,
) -> anyhow::Result<ExitCode> {
    let (link_rate_bps, prom) = (how.link_rate_bps, how.prom);
    if rp == RepeatPlan::ONCE {
        return run_once(plan, out, how, criteria, keeper, dut);
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let format = out.format;
    let json = matches!(format, Format::Json | Format::JsonStream);
    let classic = matches!(format, Format::Netperf | Format::Ttcp);
    // Progress lines would come before a classic block when stderr and stdout are merged;
    // none when stdout is not a terminal (a file or a pipe) or for CSV either.
    let show = std::io::stderr().is_terminal()
        && std::io::stdout().is_terminal()
        && !json
        && !classic
        && format != Format::Csv
        && !out.quiet;
    let iperf3 = how.iperf3;
    let set = run_repetitions(rp, show, &interrupt, |_| {
        let mut rec = if iperf3 {
            crate::session::iperf3::client::run(plan, &mut client::Quiet, &interrupt)?
        } else {
            let dut = dut
                .as_deref_mut()
                .map(|d| d as &mut dyn client::WindowWatch);
            client::run_with_dut(plan, &mut client::Quiet, &interrupt, dut)?
        };
        crate::diagnose::apply_link_rate(&mut rec, link_rate_bps);
        Ok(rec)
    })?;
    render_run_set(out, prom, keeper.command(), &set)?;
    if let Some(code) = failed(&set.runs) {
        keeper.keep_run_set(2, &set);
        return Ok(code);
    }
    let failures: Vec<String> = set
        .runs
        .iter()
        .enumerate()
        .flat_map(|(k, r)| {
            criteria
                .failures(r)
                .into_iter()
                .map(move |f| format!("run {}: {f}", k + 1))
        })
        .collect();
    let code = i32::from(!failures.is_empty());
    keeper.keep_run_set(code, &set);
    Ok(verdict(failures, out))
}

/// The output stage of one run: the record on stdout in the chosen format (and on stderr
/// what the format has no place for), then the files asked for: `--prom`, `--profile-out`.
fn render_run(out: Output, how: &Once<'_>, command: &str, rec: &RunRecord) -> anyhow::Result<()> {
    emit(out, rec)?;
    write_prom(how.prom, command, std::slice::from_ref(rec));
    write_folded(how.profile_out, rec);
    Ok(())
}

/// The output stage of repeated runs: the set on stdout in the chosen format, `--prom`,
/// and (unless `-q`) on stderr the warnings and confidence lines the format has no place
/// for.
fn render_run_set(
    out: Output,
    prom: Option<&Path>,
    command: &str,
    set: &RunSetRecord,
) -> anyhow::Result<()> {
    let format = out.format;
    let classic = matches!(format, Format::Netperf | Format::Ttcp);
    write_out(&export::repeat::render(format, set, out.classic))?;
    write_prom(prom, command, &set.runs);
    if !out.quiet && !matches!(format, Format::Table | Format::Json) {
        let prefix = if classic {
            "# linerate: warning: "
        } else {
            "warning: "
        };
        for w in &set.warnings {
            eprintln!("{prefix}{w}");
        }
        if classic {
            for l in export::repeat::confidence_lines(set) {
                eprintln!("{l}");
            }
        }
    }
    Ok(())
}

/// Prints the record: stdout first and flushed, then (unless `-q`) what the format has no
/// place for on stderr: warnings, and for the classic formats their `# linerate:` lines.
fn emit(out: Output, rec: &RunRecord) -> anyhow::Result<()> {
    let format = out.format;
    let text = export::render_with(format, rec, out.classic);
    if format == Format::Table && !rec.client.intervals.is_empty() {
        write_out("\n")?;
    }
    write_out(&text)?;
    if out.quiet {
        return Ok(());
    }
    match format {
        Format::Table | Format::Json | Format::JsonStream => {}
        Format::Netperf | Format::Ttcp => {
            for l in export::classic_stderr_lines(format, rec) {
                eprintln!("{l}");
            }
        }
        Format::Csv => {
            for w in &rec.warnings {
                eprintln!("warning: {w}");
            }
        }
    }
    Ok(())
}

/// Cap of a `--capture` file: a 10 s test at line rate with 128-byte snaps stays far below.
#[cfg(feature = "analyze")]
pub const CAPTURE_MAX_BYTES: u64 = 1 << 30;

/// A build without the trace analysis (the board's core) refuses `--capture`, before the
/// test: it records packets to analyse them.
#[cfg(not(feature = "analyze"))]
fn with_capture(
    cap: &CaptureArgs,
    plan: &StreamPlan,
    test: impl FnOnce(&StreamPlan) -> anyhow::Result<RunRecord>,
) -> anyhow::Result<RunRecord> {
    if cap.capture.is_some() {
        return Err(crate::cli::not_in_this_build("--capture", "analyze").into());
    }
    test(plan)
}

/// Runs `test` while capturing its packets into `cap.capture` (when given), then analyses
/// the capture, puts what it found into the record (`trace`) and diagnoses it again.
#[cfg(feature = "analyze")]
fn with_capture(
    cap: &CaptureArgs,
    plan: &StreamPlan,
    test: impl FnOnce(&StreamPlan) -> anyhow::Result<RunRecord>,
) -> anyhow::Result<RunRecord> {
    let Some(path) = &cap.capture else {
        return test(plan);
    };
    crate::cli::linux_only("--capture (AF_PACKET)")?;
    // Ask the server to capture its side too (it returns it if it allows captures).
    let mut asked = plan.clone();
    asked.spec.capture_snaplen = Some(cap.snaplen);
    let plan = &asked;
    let server = crate::sys::resolve::lookup(&plan.host, plan.port)
        .ok()
        .and_then(|a| a.into_iter().next())
        .ok_or_else(|| UsageError(format!("--capture: cannot resolve {}", plan.host)))?;
    let capture = crate::sys::capture::Capture::start(path, server, cap.snaplen, CAPTURE_MAX_BYTES)
        .map_err(|e| UsageError(format!("--capture {}: {e}", path.display())))?;
    let result = test(plan);
    let stats = capture
        .stop()
        .with_context(|| format!("--capture {}", path.display()))?;
    let mut rec = result?;
    let opts = AnalyzeOptions {
        link_rate_bps: rec.plan.link_rate_bps,
        ..AnalyzeOptions::default()
    };
    match analyze_path(path, &opts) {
        Ok((a, _)) => {
            let mut tcp = a.tcp;
            // The control connection is the test's first connection: leave it out.
            if !tcp.is_empty() {
                tcp.remove(0);
            }
            let mut warnings = a.warnings;
            if stats.kernel_drops.is_some_and(|d| d > 0) {
                warnings.push(format!(
                    "the capture missed {} packets (the kernel dropped them): use a smaller --snaplen",
                    stats.kernel_drops.unwrap_or(0)
                ));
            }
            if stats.over_cap > 0 {
                warnings.push(format!(
                    "{} packets were not written: the capture reached its {} MiB cap",
                    stats.over_cap,
                    CAPTURE_MAX_BYTES >> 20
                ));
            }
            let server = server_trace(&mut rec, path, cap.snaplen, &opts);
            rec.trace = Some(TraceRecord {
                file: path.display().to_string(),
                interface: stats.interface,
                snaplen: cap.snaplen,
                packets: stats.packets,
                kernel_drops: stats.kernel_drops,
                over_cap: stats.over_cap,
                tcp,
                udp: a.udp,
                warnings,
                server,
            });
            rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
        }
        Err(e) => rec.warnings.push(format!(
            "--capture: the capture could not be analysed: {e:#}"
        )),
    }
    Ok(rec)
}

/// Writes the capture the server returned next to the client's (`FILE.server.pcap`) and
/// analyses it; notes and failures become warnings.
#[cfg(feature = "analyze")]
fn server_trace(
    rec: &mut RunRecord,
    path: &Path,
    snaplen: u32,
    opts: &AnalyzeOptions,
) -> Option<Box<TraceRecord>> {
    let returned = rec.server_capture.take()?;
    if let Some(n) = &returned.note {
        rec.warnings.push(format!("--capture at the server: {n}"));
    }
    let bytes = linerate_wire::hex::decode(returned.pcap_hex.as_deref()?);
    let Some(bytes) = bytes else {
        rec.warnings
            .push("--capture: the server's capture is not valid hex".to_string());
        return None;
    };
    let mut name = path.as_os_str().to_owned();
    name.push(".server.pcap");
    let spath = std::path::PathBuf::from(name);
    if let Err(e) = std::fs::write(&spath, &bytes) {
        rec.warnings
            .push(format!("--capture: cannot write {}: {e}", spath.display()));
        return None;
    }
    match analyze_path(&spath, opts) {
        Ok((a, _)) => {
            let mut tcp = a.tcp;
            if !tcp.is_empty() {
                tcp.remove(0);
            }
            Some(Box::new(TraceRecord {
                file: spath.display().to_string(),
                interface: String::new(),
                snaplen,
                packets: a.packets,
                kernel_drops: None,
                over_cap: 0,
                tcp,
                udp: a.udp,
                warnings: a.warnings,
                server: None,
            }))
        }
        Err(e) => {
            rec.warnings.push(format!(
                "--capture: the server's capture could not be analysed: {e:#}"
            ));
            None
        }
    }
}
