//! The RFC 2544 §26.1 graph: frame rate against frame size, with the theoretical maximum of
//! the line, as SVG (a pure, deterministic function of the record) and as PNG.
//!
//! Frame sizes are placed at equal distances (the sizes tested, not a linear byte axis, so
//! 64 and 128 do not crowd each other). A hollow marker is a tester-limited result: the
//! device forwarded at least that much. Numbers are written with fixed decimals and nothing
//! depends on the time or the machine, so the same record always gives the same bytes.
//!
//! Drawn with the shared toolkit (`export::chart`), which also makes the PNG; a second
//! chart gives the throughput as a percentage of the line rate.

use std::path::Path;

use crate::export::chart::{self, Chart, Point, Series, XAxis};
use crate::model::dut::DutCounters;
use crate::model::units::format_bps;
use crate::rfc2544::record::{FrameSizeRecord, Rfc2544Record};
use crate::rfc2544::throughput::{GoalResult, ThroughputStatus};

/// The first loss goal's result at each frame size: (index, goal).
fn first_goals(rec: &Rfc2544Record) -> impl Iterator<Item = (usize, &GoalResult)> {
    rec.frame_sizes.iter().enumerate().filter_map(|(i, f)| {
        f.throughput
            .as_ref()
            .and_then(|t| t.goals.first())
            .map(|g| (i, g))
    })
}

fn x_axis(rec: &Rfc2544Record) -> XAxis {
    XAxis::Categories(
        rec.frame_sizes
            .iter()
            .map(|f| f.frame_size.to_string())
            .collect(),
    )
}

fn series(name: &str, color: &'static str, dashed: bool, points: Vec<Point>) -> Series {
    Series {
        name: name.to_string(),
        color,
        dashed,
        markers: true,
        joined: true,
        points,
    }
}

const LIMITED: &str = "hollow marker: tester-limited (the device forwarded at least this)";
const X_LABEL: &str = "frame size (bytes, FCS included)";

/// Frame rate against frame size: the theoretical maximum, the throughput per direction
/// and, for a bidirectional test, both directions together (RFC 2544 §26.1).
pub fn frame_rate_chart(rec: &Rfc2544Record) -> Chart {
    let theory = rec
        .frame_sizes
        .iter()
        .enumerate()
        .map(|(i, f)| Point::new(i as f64, f.theoretical_max_fps))
        .collect();
    let measured: Vec<Point> = first_goals(rec)
        .filter_map(|(i, g)| {
            g.throughput_fps.map(|fps| Point {
                hollow: g.status == ThroughputStatus::TesterLimited,
                ..Point::new(i as f64, fps)
            })
        })
        .collect();
    let name = if rec.plan.bidirectional {
        "throughput, per direction"
    } else {
        "throughput"
    };
    let mut all = vec![
        series("theoretical maximum", "#777777", true, theory),
        series(name, "#1f6fb4", false, measured.clone()),
    ];
    if rec.plan.bidirectional {
        let total = measured
            .iter()
            .map(|p| Point { y: p.y * 2.0, ..*p })
            .collect();
        all.push(series(
            "throughput, both directions",
            "#d2691e",
            false,
            total,
        ));
    }
    let mut notes = vec![LIMITED.to_string()];
    notes.extend(device_notes(rec));
    Chart {
        id: "rfc2544-frame-rate".into(),
        title: title(rec),
        x_label: X_LABEL.into(),
        y_label: "frames per second".into(),
        x_axis: x_axis(rec),
        y_max: None,
        series: all,
        best: None,
        notes,
    }
}

/// The device's counters (`--dut`) in the trial at a frame size's throughput rate
/// ([`FrameSizeRecord::device_at_throughput`]).
pub fn device_at_throughput(f: &FrameSizeRecord) -> Option<&DutCounters> {
    f.device_at_throughput()
}

/// One note per frame size with the device's busiest CPU at the throughput rate: its busy
/// share and its interrupt + softirq share (`--dut`).
fn device_notes(rec: &Rfc2544Record) -> Vec<String> {
    rec.frame_sizes
        .iter()
        .filter_map(|f| {
            let c = device_at_throughput(f)?.cpu.as_ref()?;
            let irq = (c.busiest_softirq_percent + c.busiest_irq_percent).min(100.0);
            Some(format!(
                "the device (--dut) at the throughput rate, {} B: CPU{} {:.0}% busy, {:.0}% interrupts + softirq",
                f.frame_size,
                c.busiest_cpu,
                c.busiest_busy_percent.min(100.0),
                irq
            ))
        })
        .collect()
}

/// The throughput per direction as a percentage of the theoretical maximum (100 %).
pub fn line_rate_chart(rec: &Rfc2544Record) -> Chart {
    let n = rec.frame_sizes.len();
    let full = (0..n).map(|i| Point::new(i as f64, 100.0)).collect();
    let measured = first_goals(rec)
        .filter_map(|(i, g)| {
            g.figures.as_ref().map(|f| Point {
                hollow: g.status == ThroughputStatus::TesterLimited,
                ..Point::new(i as f64, f.percent_of_line)
            })
        })
        .collect();
    let name = if rec.plan.bidirectional {
        "throughput, per direction"
    } else {
        "throughput"
    };
    Chart {
        id: "rfc2544-line-rate".into(),
        title: format!(
            "RFC 2544 throughput as % of line rate ({})",
            format_bps(rec.plan.line_rate_bps)
        ),
        x_label: X_LABEL.into(),
        y_label: "% of line rate".into(),
        x_axis: x_axis(rec),
        y_max: None,
        series: vec![
            series("theoretical maximum (100 %)", "#777777", true, full),
            series(name, "#1f6fb4", false, measured),
        ],
        best: None,
        notes: vec![LIMITED.into()],
    }
}

/// The frame-rate chart as an SVG document with `<text>` labels.
pub fn render_svg(rec: &Rfc2544Record) -> String {
    chart::render_svg(&frame_rate_chart(rec))
}

fn title(rec: &Rfc2544Record) -> String {
    let goal = rec.plan.loss_goals_percent.first().copied().unwrap_or(0.0);
    let loss = if goal == 0.0 {
        "no loss".to_string()
    } else {
        format!("at most {goal}% loss")
    };
    format!(
        "RFC 2544 throughput ({loss}) towards {}, line rate {}",
        rec.plan.server,
        format_bps(rec.plan.line_rate_bps)
    )
}

/// Writes the frame-rate chart to `path`: SVG when it ends in `.svg`, PNG when it ends in
/// `.png`. Returns warnings (a PNG without a font has no text).
pub fn write(rec: &Rfc2544Record, path: &Path) -> anyhow::Result<Vec<String>> {
    chart::write(&frame_rate_chart(rec), path)
}

/// The frame-rate chart as PNG bytes, with any warnings.
pub fn png(rec: &Rfc2544Record) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
    chart::png(&frame_rate_chart(rec))
}
