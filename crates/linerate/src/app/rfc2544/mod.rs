//! `linerate rfc2544`: the four RFC 2544 benchmarks of a device between this host and a
//! `linerate serve`, with a progress line, and the table, JSON, CSV and chart outputs. The
//! search logic is `crate::rfc2544`; [`net`] runs its trials over the network. Exit code 1
//! when a throughput could not be confirmed (`Rfc2544Record::failures`).

pub mod net;

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::repeat::progress::Bar as ProgressBar;
use anyhow::{anyhow, Context};

use super::{signal_flag, write_out};
use crate::cli::rfc2544::{self as cli, Rfc2544Args};
use crate::cli::UsageError;
#[cfg(feature = "chart")]
use crate::export::rfc2544::chart;
use crate::export::rfc2544::{self as report, format_fps};
use crate::rfc2544::frame_sizes::IpVersion;
use crate::rfc2544::record::{self, Benchmark, Rfc2544Record};
use crate::rfc2544::run;
use crate::rfc2544::trial::{Trial, TrialOutcome};
use net::{NetTrial, NetTrialConfig};

/// Runs `linerate rfc2544`.
pub fn command(a: &Rfc2544Args) -> anyhow::Result<ExitCode> {
    a.store.validate()?;
    let peer = resolve(&a.host, a.port)?;
    let ip = if peer.to_canonical().is_ipv4() {
        IpVersion::V4
    } else {
        IpVersion::V6
    };
    let (line_rate, source, mtu) = line_rate(a, peer)?;
    let plan = cli::plan(a, ip, line_rate, mtu)?;
    check_chart_paths(a)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let cfg = NetTrialConfig {
        host: a.host.clone(),
        port: a.port,
        ip,
        bidirectional: plan.bidirectional,
        settle: plan.settle,
        generator: plan.generator,
        raw_tx: a.raw_tx,
        connect_timeout: a.connect_timeout,
        auth: a.auth.credentials()?,
        profile: plan.profile,
    };
    let auth = cfg.auth.clone();
    let mut net = NetTrial::new(cfg, &interrupt);
    if let Some((host, port)) = &a.dut.dut {
        let target = crate::session::protocol::client::Target {
            addr: crate::session::protocol::client::resolve(host, *port)?,
            server: format!("{host}:{port}"),
            connect_timeout: a.connect_timeout,
            debug: crate::model::plan::Debug(false),
            auth,
        };
        net.dut = Some(crate::session::side::dut::DutProbe::open(&target)?);
    }
    let smallest = plan.frame_sizes.iter().copied().min().unwrap_or(64);
    net.learn(smallest)
        .context("the learning trial (a short stream before the benchmarks) failed")?;
    let bar = progress_bar(a.json || a.csv);
    let mut observed = Observed {
        inner: net,
        bar: bar.clone(),
    };
    let (mut sizes, stopped) = run::run(&mut observed, &plan, &interrupt);
    bar.finish_and_clear();
    let mut warnings = collect_warnings(&sizes);
    if plan.benchmarks.contains(&Benchmark::Latency) {
        for f in sizes
            .iter()
            .filter(|f| f.latency.is_none() && f.throughput.is_some())
        {
            warnings.push(format!(
                "latency of {} B frames not measured: the throughput search found no rate to measure it at",
                f.frame_size
            ));
        }
    }
    if let Some(why) = &stopped {
        warnings.push(format!("the run stopped early: {why}"));
    }
    crate::diagnose::rules::dut::rfc2544_device_verdicts(&mut sizes);
    let mut deviations = plan.deviations();
    deviations.extend(run::generator_deviations(&plan, &sizes));
    let rec = Rfc2544Record {
        schema_version: record::SCHEMA_VERSION,
        tool_version: crate::software(),
        started_at,
        plan: plan.record(format!("{}:{}", a.host, a.port), source),
        frame_sizes: sizes,
        interrupted: stopped.is_some(),
        deviations,
        warnings,
    };
    emit(a, &rec)?;
    write_profiles(a.profile.profile_out.as_deref(), &rec);
    let keeper = super::keep::Keeper::new(&a.store, "rfc2544");
    if let Some(why) = stopped.filter(|_| !interrupt.load(SeqCst)) {
        keeper.keep_rfc2544(2, &rec);
        return Err(anyhow!("the RFC 2544 run stopped early: {why}"));
    }
    let failures = rec.failures();
    keeper.keep_rfc2544(i32::from(!failures.is_empty()), &rec);
    for f in &failures {
        eprintln!("linerate: failed: {f}");
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn check_chart_paths(a: &Rfc2544Args) -> Result<(), UsageError> {
    if cfg!(not(feature = "chart")) && !a.chart.is_empty() {
        return Err(crate::cli::not_in_this_build("--chart", "chart"));
    }
    for path in &a.chart {
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("svg" | "png")
        ) {
            return Err(UsageError(format!(
                "--chart {}: name the file .svg or .png",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Prints the record in the chosen format, then writes the charts (so a chart that cannot
/// be written does not lose the results).
fn emit(a: &Rfc2544Args, rec: &Rfc2544Record) -> anyhow::Result<()> {
    if a.json {
        write_out(&record::to_json(rec))?;
    } else {
        for w in &rec.warnings {
            eprintln!("warning: {w}");
        }
        if a.csv {
            write_out(&report::render_csv(rec))?;
        } else {
            write_out(&report::render_table(rec))?;
        }
    }
    #[cfg(feature = "chart")]
    for path in &a.chart {
        for w in chart::write(rec, path)? {
            eprintln!("warning: {w}");
        }
    }
    Ok(())
}

/// `--profile-out DIR`: per frame size, both ends' folded stacks and flame graphs as
/// DIR/SIZE-client.folded, DIR/SIZE-client.svg, DIR/SIZE-server.folded, DIR/SIZE-server.svg
/// (`SIZE` as `64B`).
fn write_profiles(dir: Option<&std::path::Path>, rec: &Rfc2544Record) {
    let mut ends = Vec::new();
    for f in &rec.frame_sizes {
        let p = f.profile.as_ref();
        for (end, side) in [
            ("client", p.and_then(|p| p.client.as_ref())),
            ("server", p.and_then(|p| p.server.as_ref())),
        ] {
            ends.push((
                format!("{}B-{end}", f.frame_size),
                format!("{end} ({} B frames)", f.frame_size),
                side,
            ));
        }
    }
    super::run::write_profiles(dir, &ends);
}

fn resolve(host: &str, port: u16) -> anyhow::Result<IpAddr> {
    crate::session::protocol::client::resolve(host, port).map(|a| a.ip())
}

/// The line rate (bit/s), where it came from, and the MTU of the interface towards the
/// server when known.
fn line_rate(a: &Rfc2544Args, peer: IpAddr) -> anyhow::Result<(f64, String, Option<u32>)> {
    let iface = crate::sys::iface::route_interface(peer).ok();
    let facts = iface
        .as_deref()
        .filter(|n| *n != "lo")
        .map(|n| crate::sys::hostsnap::interface_facts(n).0);
    let mtu = facts.as_ref().and_then(|f| f.mtu);
    if let Some(r) = a.line_rate {
        return Ok((r as f64, "--line-rate".to_string(), mtu));
    }
    let Some(name) = iface else {
        return Err(UsageError(format!(
            "cannot find the interface towards {peer} to read its speed: give --line-rate, e.g. --line-rate 1G"
        ))
        .into());
    };
    let Some(f) = facts else {
        return Err(UsageError(
            "the server is on this host (loopback has no line rate): give --line-rate, e.g. --line-rate 10G".into(),
        )
        .into());
    };
    if f.bus_info.as_deref().is_none_or(str::is_empty) {
        return Err(UsageError(format!(
            "{name} is a virtual interface (driver {}): its reported speed is nominal, so give the line rate to compare with, e.g. --line-rate 1G",
            f.driver.as_deref().unwrap_or("unknown")
        ))
        .into());
    }
    match f.speed_mbps {
        Some(mbps) if mbps > 0 => Ok((
            f64::from(mbps) * 1e6,
            format!("speed of {name}"),
            mtu,
        )),
        _ => Err(UsageError(format!(
            "{name} reports no link speed (link down, or the driver does not know it): give --line-rate, e.g. --line-rate 1G"
        ))
        .into()),
    }
}

/// The trial counter on stderr; hidden when the output is JSON or CSV, or when stdout or
/// stderr is not a terminal (the results go to a file or a pipe).
fn progress_bar(machine_output: bool) -> ProgressBar {
    use std::io::IsTerminal;
    if machine_output || !std::io::stderr().is_terminal() || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::spinner(
        "{spinner} [{elapsed_precise}] trial {pos}: {msg}",
        Duration::from_millis(200),
    )
}

/// Shows each trial on the progress line.
struct Observed<T> {
    inner: T,
    bar: ProgressBar,
}

impl<T: Trial> Observed<T> {
    fn around(
        &mut self,
        msg: String,
        f: impl FnOnce(&mut T) -> anyhow::Result<TrialOutcome>,
    ) -> anyhow::Result<TrialOutcome> {
        self.bar.set_message(msg);
        let r = f(&mut self.inner);
        self.bar.inc(1);
        r
    }
}

fn rate_text(fps: f64) -> String {
    if fps.is_finite() {
        format!("{} fps", format_fps(fps))
    } else {
        "unpaced".to_string()
    }
}

impl<T: Trial> Trial for Observed<T> {
    fn run(&mut self, frame: u32, offered_fps: f64, dur: Duration) -> anyhow::Result<TrialOutcome> {
        let msg = format!(
            "{frame} B at {} for {:.1} s",
            rate_text(offered_fps),
            dur.as_secs_f64()
        );
        self.around(msg, |t| t.run(frame, offered_fps, dur))
    }

    fn run_tagged(
        &mut self,
        frame: u32,
        offered_fps: f64,
        dur: Duration,
    ) -> anyhow::Result<TrialOutcome> {
        let msg = format!(
            "{frame} B latency at {} for {:.1} s",
            rate_text(offered_fps),
            dur.as_secs_f64()
        );
        self.around(msg, |t| t.run_tagged(frame, offered_fps, dur))
    }

    fn burst(&mut self, frame: u32, frames: u64) -> anyhow::Result<TrialOutcome> {
        let msg = format!("{frame} B burst of {frames} frames");
        self.around(msg, |t| t.burst(frame, frames))
    }
}

/// Every distinct warning of every trial, in the order first seen.
fn collect_warnings(sizes: &[crate::rfc2544::record::FrameSizeRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in sizes.iter().flat_map(|f| f.trials()) {
        let invalid = t
            .invalid
            .as_ref()
            .map(|why| format!("a {} B trial's counts are invalid: {why}", t.frame_size));
        for w in t.warnings.iter().chain(&invalid) {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
    }
    out
}
