//! The RFC 2544 §26.1 graph: frame rate against frame size, with the theoretical maximum of
//! the line, as SVG (a pure, deterministic function of the record) and as PNG (the same SVG
//! rasterized with resvg).
//!
//! Frame sizes are placed at equal distances (the sizes tested, not a linear byte axis, so
//! 64 and 128 do not crowd each other). A hollow marker is a tester-limited result: the
//! device forwarded at least that much. Numbers are written with fixed decimals and nothing
//! depends on the time or the machine, so the same record always gives the same bytes.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use super::record::Rfc2544Record;
use super::throughput::ThroughputStatus;
use crate::export::units::format_bps;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 460.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 100.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";

struct Series {
    name: &'static str,
    color: &'static str,
    dashed: bool,
    /// (index of the frame size, frames/s, tester-limited)
    points: Vec<(usize, f64, bool)>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round axis maximum at or above `v`: 1, 2, 2.5 or 5 × 10^k.
pub fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let exp = v.log10().floor();
    let base = 10f64.powf(exp);
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * base >= v * (1.0 - 1e-12) {
            return m * base;
        }
    }
    10.0 * base
}

/// "1.5M", "250k", "40": an axis label.
pub fn short_number(v: f64) -> String {
    let (x, unit) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{x:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

fn series(rec: &Rfc2544Record) -> Vec<Series> {
    let mut theory = Series {
        name: "theoretical maximum",
        color: "#777777",
        dashed: true,
        points: Vec::new(),
    };
    let mut measured = Series {
        name: if rec.plan.bidirectional {
            "throughput, per direction"
        } else {
            "throughput"
        },
        color: "#1f6fb4",
        dashed: false,
        points: Vec::new(),
    };
    let mut total = Series {
        name: "throughput, both directions",
        color: "#d2691e",
        dashed: false,
        points: Vec::new(),
    };
    for (i, f) in rec.frame_sizes.iter().enumerate() {
        theory.points.push((i, f.theoretical_max_fps, false));
        let goal = f.throughput.as_ref().and_then(|t| t.goals.first());
        if let Some((fps, g)) = goal.and_then(|g| g.throughput_fps.map(|fps| (fps, g))) {
            let limited = g.status == ThroughputStatus::TesterLimited;
            measured.points.push((i, fps, limited));
            total.points.push((i, fps * 2.0, limited));
        }
    }
    let mut out = vec![theory, measured];
    if rec.plan.bidirectional {
        out.push(total);
    }
    out
}

/// The chart as an SVG document (see the module docs).
pub fn render_svg(rec: &Rfc2544Record) -> String {
    let all = series(rec);
    let n = rec.frame_sizes.len().max(1);
    let y_max = nice_max(
        all.iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / n as f64;
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH:.0} {HEIGHT:.0}" font-family="{FONT}">"#
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="28" font-size="16" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        esc(&title(rec))
    );
    axes(&mut s, rec, y_max, &x, &y);
    for se in &all {
        draw_series(&mut s, se, &x, &y);
    }
    legend(&mut s, &all, TOP + plot_h + 62.0);
    s.push_str("</svg>\n");
    s
}

fn title(rec: &Rfc2544Record) -> String {
    let goal = rec.plan.loss_goals_percent.first().copied().unwrap_or(0.0);
    let loss = if goal == 0.0 {
        "no loss".to_string()
    } else {
        format!("≤ {goal}% loss")
    };
    format!(
        "RFC 2544 throughput ({loss}) towards {}, line rate {}",
        rec.plan.server,
        format_bps(rec.plan.line_rate_bps)
    )
}

/// Grid, frame, tick labels and axis titles.
fn axes(
    s: &mut String,
    rec: &Rfc2544Record,
    y_max: f64,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    for k in 0..=5 {
        let v = y_max * f64::from(k) / 5.0;
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#dddddd"/>"##,
            WIDTH - RIGHT
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            yy + 4.0,
            short_number(v)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{plot_w:.1}" height="{plot_h:.1}" fill="none" stroke="#333333"/>"##
    );
    for (i, f) in rec.frame_sizes.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            x(i),
            TOP + plot_h + 18.0,
            f.frame_size
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">frame size (bytes, FCS included)</text>"#,
        LEFT + plot_w / 2.0,
        TOP + plot_h + 40.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" font-size="13" text-anchor="middle" transform="rotate(-90 18 {:.1})">frames per second</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
}

fn draw_series(s: &mut String, se: &Series, x: &dyn Fn(usize) -> f64, y: &dyn Fn(f64) -> f64) {
    if se.points.len() > 1 {
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let dash = if se.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            pts.join(" "),
            se.color
        );
    }
    for p in &se.points {
        let fill = if p.2 { "#ffffff" } else { se.color };
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{fill}" stroke="{}" stroke-width="2"/>"#,
            x(p.0),
            y(p.1),
            se.color
        );
    }
}

fn legend(s: &mut String, all: &[Series], yy: f64) {
    let mut xx = LEFT;
    for se in all {
        let dash = if se.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<line x1="{xx:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-width="2"{dash}/>"#,
            xx + 24.0,
            se.color
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
            xx + 30.0,
            yy + 4.0,
            esc(se.name)
        );
        xx += 40.0 + 6.5 * se.name.len() as f64;
    }
    let _ = writeln!(
        s,
        r#"<text x="{LEFT:.1}" y="{:.1}" font-size="12">hollow marker: tester-limited (the device forwarded at least this)</text>"#,
        yy + 22.0
    );
}

/// Writes the chart to `path`: SVG when it ends in `.svg`, PNG when it ends in `.png`.
/// Returns warnings (a PNG without a font has no text).
pub fn write(rec: &Rfc2544Record, path: &Path) -> anyhow::Result<Vec<String>> {
    let svg = render_svg(rec);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let (bytes, warnings) = match ext.as_deref() {
        Some("svg") => (svg.into_bytes(), Vec::new()),
        Some("png") => png(&svg)?,
        _ => anyhow::bail!("--chart {}: name the file .svg or .png", path.display()),
    };
    std::fs::write(path, bytes)
        .with_context(|| format!("writing the chart to {}", path.display()))?;
    Ok(warnings)
}

/// Rasterizes `svg` to PNG bytes with the system's fonts (fontdb). Without any font the image
/// is still drawn, without its text, and a warning says so.
pub fn png(svg: &str) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    let mut warnings = Vec::new();
    if db.is_empty() {
        warnings.push(
            "no system font found: the PNG chart has no labels (install fonts-dejavu-core, or use an .svg chart)".to_string(),
        );
    }
    let tree = usvg::Tree::from_str(svg, &opt).context("rendering the chart")?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).context("allocating the PNG image")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let bytes = pixmap.encode_png().context("encoding the PNG image")?;
    Ok((bytes, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis_maxima() {
        assert_eq!(nice_max(148_809.5), 200_000.0);
        assert_eq!(nice_max(1_488_095.0), 2_000_000.0);
        assert_eq!(nice_max(2000.0), 2000.0);
        assert_eq!(nice_max(2100.0), 2500.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(short_number(1_500_000.0), "1.5M");
        assert_eq!(short_number(250_000.0), "250k");
        assert_eq!(short_number(40.0), "40");
    }
}
