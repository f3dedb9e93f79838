//! The RFC 2544 §26.1 graph: frame rate against frame size, with the theoretical maximum of
//! the line, as SVG (a pure, deterministic function of the record) and as PNG.
//!
//! Frame sizes are placed at equal distances (the sizes tested, not a linear byte axis, so
//! 64 and 128 do not crowd each other). A hollow marker is a tester-limited result: the
//! device forwarded at least that much. Numbers are written with fixed decimals and nothing
//! depends on the time or the machine, so the same record always gives the same bytes.
//!
//! The PNG is the same drawing rasterized with resvg. To keep the binary small resvg is built
//! without its text engine (shaping and font matching add about 2.5 MB): for the PNG the
//! labels are written as glyph outlines taken with ttf-parser from a system font (DejaVu Sans
//! or Liberation Sans, else any TrueType font under /usr/share/fonts). The labels are plain
//! Latin text, so glyph-by-glyph placement with the font's advances is all the layout they
//! need. Without any font the PNG is drawn without text and a warning says so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::dut::DutCounters;
use crate::model::units::format_bps;
use crate::rfc2544::record::{FrameSizeRecord, Rfc2544Record};
use crate::rfc2544::throughput::ThroughputStatus;
use crate::rfc2544::trial::TrialPurpose;

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

/// Horizontal alignment of a label at its x.
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    Start,
    Middle,
    End,
}

/// The document being written; labels become `<text>` or glyph outlines.
struct Svg<'f> {
    out: String,
    font: Option<&'f ttf_parser::Face<'f>>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Collects a glyph outline as SVG path data, scaled and placed.
struct PathData<'a> {
    d: &'a mut String,
    x: f64,
    y: f64,
    scale: f64,
}

impl PathData<'_> {
    fn pt(&self, gx: f32, gy: f32) -> (f64, f64) {
        (
            self.x + f64::from(gx) * self.scale,
            self.y - f64::from(gy) * self.scale,
        )
    }
}

impl ttf_parser::OutlineBuilder for PathData<'_> {
    fn move_to(&mut self, x: f32, y: f32) {
        let (a, b) = self.pt(x, y);
        let _ = write!(self.d, "M{a:.2} {b:.2}");
    }
    fn line_to(&mut self, x: f32, y: f32) {
        let (a, b) = self.pt(x, y);
        let _ = write!(self.d, "L{a:.2} {b:.2}");
    }
    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        let (a, b) = self.pt(x1, y1);
        let (c, e) = self.pt(x, y);
        let _ = write!(self.d, "Q{a:.2} {b:.2} {c:.2} {e:.2}");
    }
    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        let (a, b) = self.pt(x1, y1);
        let (c, e) = self.pt(x2, y2);
        let (f, g) = self.pt(x, y);
        let _ = write!(self.d, "C{a:.2} {b:.2} {c:.2} {e:.2} {f:.2} {g:.2}");
    }
    fn close(&mut self) {
        self.d.push('Z');
    }
}

impl Svg<'_> {
    /// A label with its baseline at `y`; `rotate` turns it 90° counter-clockwise about (x, y).
    fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, rotate: bool, label: &str) {
        let transform = if rotate {
            format!(r#" transform="rotate(-90 {x:.1} {y:.1})""#)
        } else {
            String::new()
        };
        let Some(face) = self.font else {
            let a = match anchor {
                Anchor::Start => "",
                Anchor::Middle => r#" text-anchor="middle""#,
                Anchor::End => r#" text-anchor="end""#,
            };
            let _ = writeln!(
                self.out,
                r#"<text x="{x:.1}" y="{y:.1}" font-size="{size:.0}"{a}{transform}>{}</text>"#,
                esc(label)
            );
            return;
        };
        let scale = size / f64::from(face.units_per_em().max(1));
        let glyphs: Vec<ttf_parser::GlyphId> = label
            .chars()
            .filter_map(|c| face.glyph_index(c).or_else(|| face.glyph_index('?')))
            .collect();
        let advance = |g: ttf_parser::GlyphId| f64::from(face.glyph_hor_advance(g).unwrap_or(0));
        let width: f64 = glyphs.iter().map(|g| advance(*g)).sum::<f64>() * scale;
        let mut pen = match anchor {
            Anchor::Start => x,
            Anchor::Middle => x - width / 2.0,
            Anchor::End => x - width,
        };
        let mut d = String::new();
        for g in glyphs {
            let mut b = PathData {
                d: &mut d,
                x: pen,
                y,
                scale,
            };
            let _ = face.outline_glyph(g, &mut b);
            pen += advance(g) * scale;
        }
        let _ = writeln!(self.out, r##"<path d="{d}" fill="#000000"{transform}/>"##);
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}/>"#
        );
    }
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

/// The chart as an SVG document with `<text>` labels (see the module docs).
pub fn render_svg(rec: &Rfc2544Record) -> String {
    render(rec, None)
}

fn render(rec: &Rfc2544Record, font: Option<&ttf_parser::Face<'_>>) -> String {
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
    let mut s = Svg {
        out: String::new(),
        font,
    };
    let _ = writeln!(
        s.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH:.0} {HEIGHT:.0}" font-family="{FONT}">"#
    );
    let _ = writeln!(
        s.out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    s.text(WIDTH / 2.0, 28.0, 16.0, Anchor::Middle, false, &title(rec));
    axes(&mut s, rec, y_max, &x, &y);
    for se in &all {
        draw_series(&mut s, se, &x, &y);
    }
    let device = device_labels(&mut s, rec, &x, &y);
    legend(&mut s, &all, TOP + plot_h + 62.0);
    if device {
        let note = "above each point, the device (--dut) at the throughput rate: its busiest CPU, busy % / interrupts + softirq %";
        s.text(WIDTH / 2.0, 44.0, 11.0, Anchor::Middle, false, note);
    }
    s.out.push_str("</svg>\n");
    s.out
}

/// The device's counters (`--dut`) in the trial at a frame size's throughput rate (the first
/// loss goal): its full-length confirmation when there is one, else the highest passing
/// search trial at that rate.
pub fn device_at_throughput(f: &FrameSizeRecord) -> Option<&DutCounters> {
    let t = f.throughput.as_ref()?;
    let fps = t.goals.first()?.throughput_fps?;
    let at = |tr: &&crate::rfc2544::trial::TrialRecord| {
        tr.dut.is_some()
            && tr
                .offered_fps
                .is_some_and(|o| (o - fps).abs() <= fps * 1e-9)
    };
    let trials = t.trials.iter().rev();
    trials
        .clone()
        .filter(at)
        .find(|tr| tr.purpose == TrialPurpose::Confirmation)
        .or_else(|| trials.clone().find(at))
        .and_then(|tr| tr.dut.as_ref())
}

/// Labels each throughput point with the device's busiest-CPU and interrupt/softirq
/// shares; whether there was any.
fn device_labels(
    s: &mut Svg<'_>,
    rec: &Rfc2544Record,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) -> bool {
    let mut any = false;
    for (i, f) in rec.frame_sizes.iter().enumerate() {
        let fps = f
            .throughput
            .as_ref()
            .and_then(|t| t.goals.first())
            .and_then(|g| g.throughput_fps);
        let cpu = device_at_throughput(f).and_then(|d| d.cpu.as_ref());
        if let (Some(fps), Some(c)) = (fps, cpu) {
            let irq = (c.busiest_softirq_percent + c.busiest_irq_percent).min(100.0);
            let label = format!(
                "CPU{} {:.0}% / {:.0}%",
                c.busiest_cpu,
                c.busiest_busy_percent.min(100.0),
                irq
            );
            s.text(x(i), y(fps) - 12.0, 11.0, Anchor::Middle, false, &label);
            any = true;
        }
    }
    any
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

/// Grid, frame, tick labels and axis titles.
fn axes(
    s: &mut Svg<'_>,
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
        s.line(LEFT, yy, WIDTH - RIGHT, yy, r##"stroke="#dddddd""##);
        s.text(
            LEFT - 8.0,
            yy + 4.0,
            12.0,
            Anchor::End,
            false,
            &short_number(v),
        );
    }
    let _ = writeln!(
        s.out,
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{plot_w:.1}" height="{plot_h:.1}" fill="none" stroke="#333333"/>"##
    );
    for (i, f) in rec.frame_sizes.iter().enumerate() {
        let label = f.frame_size.to_string();
        s.text(
            x(i),
            TOP + plot_h + 18.0,
            12.0,
            Anchor::Middle,
            false,
            &label,
        );
    }
    let bottom = TOP + plot_h + 40.0;
    let label = "frame size (bytes, FCS included)";
    s.text(
        LEFT + plot_w / 2.0,
        bottom,
        13.0,
        Anchor::Middle,
        false,
        label,
    );
    let mid = TOP + plot_h / 2.0;
    s.text(22.0, mid, 13.0, Anchor::Middle, true, "frames per second");
}

fn dash(se: &Series) -> &'static str {
    if se.dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

fn draw_series(s: &mut Svg<'_>, se: &Series, x: &dyn Fn(usize) -> f64, y: &dyn Fn(f64) -> f64) {
    if se.points.len() > 1 {
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let _ = writeln!(
            s.out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"#,
            pts.join(" "),
            se.color,
            dash(se)
        );
    }
    for p in &se.points {
        let fill = if p.2 { "#ffffff" } else { se.color };
        let _ = writeln!(
            s.out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{fill}" stroke="{}" stroke-width="2"/>"#,
            x(p.0),
            y(p.1),
            se.color
        );
    }
}

fn legend(s: &mut Svg<'_>, all: &[Series], yy: f64) {
    let mut xx = LEFT;
    for se in all {
        let style = format!(r#"stroke="{}" stroke-width="2"{}"#, se.color, dash(se));
        s.line(xx, yy, xx + 24.0, yy, &style);
        s.text(xx + 30.0, yy + 4.0, 12.0, Anchor::Start, false, se.name);
        xx += 40.0 + 6.5 * se.name.len() as f64;
    }
    let note = "hollow marker: tester-limited (the device forwarded at least this)";
    s.text(LEFT, yy + 22.0, 12.0, Anchor::Start, false, note);
}

/// Writes the chart to `path`: SVG when it ends in `.svg`, PNG when it ends in `.png`.
/// Returns warnings (a PNG without a font has no text).
pub fn write(rec: &Rfc2544Record, path: &Path) -> anyhow::Result<Vec<String>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let (bytes, warnings) = match ext.as_deref() {
        Some("svg") => (render_svg(rec).into_bytes(), Vec::new()),
        Some("png") => png(rec)?,
        _ => anyhow::bail!("--chart {}: name the file .svg or .png", path.display()),
    };
    std::fs::write(path, bytes)
        .with_context(|| format!("writing the chart to {}", path.display()))?;
    Ok(warnings)
}

/// Preferred fonts, then any TrueType font found under these directories.
const FONT_FILES: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];
const FONT_DIRS: [&str; 2] = ["/usr/share/fonts", "/usr/local/share/fonts"];

/// The first readable system font (see [`FONT_FILES`]); `None` when there is none.
pub fn system_font() -> Option<(PathBuf, Vec<u8>)> {
    let preferred = FONT_FILES.iter().map(PathBuf::from);
    let mut found = Vec::new();
    for dir in FONT_DIRS {
        collect_ttf(Path::new(dir), 4, &mut found);
    }
    found.sort();
    preferred
        .chain(found)
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .find(|(_, b)| ttf_parser::Face::parse(b, 0).is_ok())
}

fn collect_ttf(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && depth > 0 {
            collect_ttf(&p, depth - 1, out);
        } else if p.extension().and_then(|x| x.to_str()) == Some("ttf") {
            out.push(p);
        }
    }
}

/// The chart as PNG bytes (see the module docs), with any warnings.
pub fn png(rec: &Rfc2544Record) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
    let font = system_font();
    let face = font
        .as_ref()
        .and_then(|(_, bytes)| ttf_parser::Face::parse(bytes, 0).ok());
    let mut warnings = Vec::new();
    if face.is_none() {
        warnings.push(
            "no system font found: the PNG chart has no labels (install fonts-dejavu-core, or use an .svg chart)".to_string(),
        );
    }
    // Without a font the <text> elements are simply not drawn by resvg's text-less build.
    let svg = render(rec, face.as_ref());
    rasterize(&svg).map(|png| (png, warnings))
}

/// Rasterizes an SVG document to PNG bytes with resvg.
pub fn rasterize(svg: &str) -> anyhow::Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let tree =
        usvg::Tree::from_str(svg, &usvg::Options::default()).context("rendering the chart")?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).context("allocating the PNG image")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().context("encoding the PNG image")
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
