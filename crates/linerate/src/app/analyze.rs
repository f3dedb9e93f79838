//! `linerate analyze FILE`: read a capture, analyse it, print it ([`analyze_path`] also
//! serves the capture a test took with `--capture`, see `app::run`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::analyze::{analyze_reader, AnalyzeOptions, DirectionGraph};
use crate::cli::analyze::AnalyzeArgs;
use crate::cli::UsageError;
use crate::export;
use crate::model::trace::AnalysisRecord;

/// Runs the command.
pub(crate) fn command(a: &AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let opts = AnalyzeOptions {
        link_rate_bps: a.link_rate,
        mtu: a.mtu,
        graphs: a.graph.is_some(),
        top: (a.top > 0).then_some(a.top),
    };
    let (rec, graphs) = analyze_path(&a.file, &opts)?;
    if let Some(dir) = &a.graph {
        let written = write_graphs(dir, &rec, &graphs)?;
        let of = match (&rec.others, rec.top) {
            (Some(o), Some(top)) if o.tcp_connections > 0 => {
                format!(" (of the {top} largest connections; --top changes it)")
            }
            _ => String::new(),
        };
        eprintln!(
            "linerate analyze: {} time-sequence graph{} in {}{of}",
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
