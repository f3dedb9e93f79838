//! `linerate analyze FILE`: read a capture, analyse it, print it; and the same analysis for
//! the capture a test took with `--capture`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::analyze::{analyze_reader, AnalyzeOptions, DirectionGraph};
use crate::model::trace::AnalysisRecord;
use crate::cli::analyze::AnalyzeArgs;
use crate::cli::plan::UsageError;
use crate::export;

/// Runs the command.
pub(crate) fn command(a: &AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let opts = AnalyzeOptions {
        link_rate_bps: a.link_rate,
        mtu: a.mtu,
        graphs: a.graph.is_some(),
    };
    let (rec, graphs) = analyze_path(&a.file, &opts)?;
    if let Some(dir) = &a.graph {
        let written = write_graphs(dir, &rec, &graphs)?;
        eprintln!(
            "linerate analyze: {} time-sequence graph{} in {}",
            written,
            if written == 1 { "" } else { "s" },
            dir.display()
        );
    }
    let out = if a.json {
        export::json::render_analysis(&rec)
    } else if a.csv {
        export::analyze::csv(&rec)
    } else {
        export::analyze::table(&rec)
    };
    super::write_out(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Analyses the capture at `path` ("-": standard input).
pub fn analyze_path(
    path: &Path,
    opts: &AnalyzeOptions,
) -> anyhow::Result<(AnalysisRecord, Vec<DirectionGraph>)> {
    let name = path.display().to_string();
    let result = if name == "-" {
        analyze_reader(std::io::stdin(), &name, opts)
    } else {
        let file = std::fs::File::open(path).map_err(|e| {
            UsageError(format!(
                "cannot open the capture {name}: {e} (give a pcap or pcapng file)"
            ))
        })?;
        analyze_reader(
            std::io::BufReader::with_capacity(1 << 20, file),
            &name,
            opts,
        )
    };
    result.map_err(|e| UsageError(format!("{name}: {e:#}")).into())
}

/// Writes `conn-N-a_to_b.svg` (and b_to_a) for every direction that carried data; returns
/// how many were written.
pub fn write_graphs(
    dir: &Path,
    rec: &AnalysisRecord,
    graphs: &[DirectionGraph],
) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the graph directory {}", dir.display()))?;
    let mut n = 0;
    for g in graphs {
        let Some(c) = rec.tcp.iter().find(|c| c.index == g.connection) else {
            continue;
        };
        let d = if g.direction == "a_to_b" {
            &c.a_to_b
        } else {
            &c.b_to_a
        };
        if d.unique_bytes == 0 {
            continue;
        }
        let path = dir.join(format!("conn-{}-{}.svg", g.connection, g.direction));
        std::fs::write(&path, export::tsg::render_svg(g))
            .with_context(|| format!("cannot write {}", path.display()))?;
        n += 1;
    }
    Ok(n)
}

/// Cap of a `--capture` file: a 10 s test at line rate with 128-byte snaps stays far below.
pub const CAPTURE_MAX_BYTES: u64 = 1 << 30;

/// Runs `test` while capturing its packets into `cap.capture` (when given), then analyses
/// the capture, puts what it found into the record (`trace`) and diagnoses it again.
pub(crate) fn with_capture(
    cap: &crate::cli::analyze::CaptureArgs,
    plan: &crate::session::client::StreamPlan,
    test: impl FnOnce(&crate::session::client::StreamPlan) -> anyhow::Result<crate::model::RunRecord>,
) -> anyhow::Result<crate::model::RunRecord> {
    use std::net::ToSocketAddrs;
    let Some(path) = &cap.capture else {
        return test(plan);
    };
    // Ask the server to capture its side too (it returns it if it allows captures).
    let mut asked = plan.clone();
    asked.spec.capture_snaplen = Some(cap.snaplen);
    let plan = &asked;
    let server = (plan.host.as_str(), plan.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
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
            rec.trace = Some(crate::model::trace::TraceRecord {
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
fn server_trace(
    rec: &mut crate::model::RunRecord,
    path: &Path,
    snaplen: u32,
    opts: &AnalyzeOptions,
) -> Option<Box<crate::model::trace::TraceRecord>> {
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
            Some(Box::new(crate::model::trace::TraceRecord {
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
