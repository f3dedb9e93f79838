//! The one chart toolkit every chart uses (RFC 2544, `linerate report`): a [`Chart`] is
//! series of points on an x axis (sizes or labels at equal distances, linear, or log) and
//! a linear y axis from 0, with optional confidence-interval bars, a best-point mark, a
//! legend and notes. [`render_svg`] draws it as SVG, a pure function of the chart: numbers
//! are written with fixed decimals and nothing depends on the time or the machine, so the
//! same chart always gives the same bytes.
//!
//! The PNG ([`png`]) is the same drawing rasterized with resvg. To keep the binary small
//! resvg is built without its text engine (shaping and font matching add about 2.5 MB): for
//! the PNG the labels are written as glyph outlines taken with ttf-parser from a system font
//! (DejaVu Sans or Liberation Sans, else any TrueType font under /usr/share/fonts). The
//! labels are plain text, so glyph-by-glyph placement with the font's advances is all the
//! layout they need. Without any font the PNG is drawn without text and a warning says so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const PLOT_H: f64 = 310.0;
/// The font every chart and flame graph names.
pub const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";

/// Series colours, in order (distinct in print and for the common colour blindnesses).
pub const PALETTE: [&str; 8] = [
    "#1f6fb4", "#d2691e", "#2a9d55", "#b8336a", "#6a51a3", "#8c6d1f", "#17a2b8", "#555555",
];

/// The colour of the `i`th series.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// How x values are placed.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// x is an index into these labels, placed at equal distances (frame sizes, sweep points).
    Categories(Vec<String>),
    /// x from 0 to a round maximum.
    Linear,
    /// x on a log scale (decades); values ≤ 0 are left out.
    Log,
}

/// One point; `lo`/`hi` draw a confidence-interval bar; `hollow` draws an open marker.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// Position on the x axis (an index for [`XAxis::Categories`]).
    pub x: f64,
    /// Value.
    pub y: f64,
    /// Lower end of the interval bar.
    pub lo: Option<f64>,
    /// Upper end of the interval bar.
    pub hi: Option<f64>,
    /// An open marker (e.g. a tester-limited result).
    pub hollow: bool,
}

impl Point {
    /// A plain point.
    pub fn new(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            ..Point::default()
        }
    }
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Stroke colour.
    pub color: &'static str,
    /// Dashed line (a theoretical or reference line).
    pub dashed: bool,
    /// A marker on every point (off for long time series).
    pub markers: bool,
    /// Points joined by a line (off for categories that are not a sequence).
    pub joined: bool,
    /// The points, in x order.
    pub points: Vec<Point>,
}

/// A chart: what [`render_svg`] draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Short name, also the file name under `--chart-dir` (`[a-z0-9-]`).
    pub id: String,
    /// Title above the plot.
    pub title: String,
    /// x axis title.
    pub x_label: String,
    /// y axis title.
    pub y_label: String,
    /// How x is placed.
    pub x_axis: XAxis,
    /// A fixed top of the y axis (100 for percentages, 1 for a CDF); else a round maximum.
    pub y_max: Option<f64>,
    /// The lines.
    pub series: Vec<Series>,
    /// The best point, marked with a ring and this label.
    pub best: Option<(Point, String)>,
    /// Lines of text under the legend.
    pub notes: Vec<String>,
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

/// Escapes text for XML and HTML.
pub fn esc(s: &str) -> String {
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

/// Largest magnitude a chart places on its scale. No figure linerate charts comes near it
/// (1e15 bit/s, 11 days in ns, a PB); a value beyond it (a hand-edited or corrupt file's
/// `1e308`) would squeeze every other point onto the axis under tick labels of 300 digits.
pub const MAX_PLOTTED: f64 = 1e15;
/// Smallest magnitude other than 0 a chart places on its scale (a share of 10^12
/// transactions is still above it); below it, down to 5e-324, an axis maximum of 10^k
/// underflows to 0 and every coordinate becomes NaN.
pub const MIN_PLOTTED: f64 = 1e-12;

/// Whether `v` can be placed on a chart's scale: 0, or finite with a magnitude from
/// [`MIN_PLOTTED`] to [`MAX_PLOTTED`]. Others are left out, and the chart says so.
pub fn plottable(v: f64) -> bool {
    v == 0.0 || (MIN_PLOTTED..=MAX_PLOTTED).contains(&v.abs())
}

/// A round axis maximum at or above `v`: 1, 2, 2.5 or 5 × 10^k (1 for a `v` that is not
/// [`plottable`] or not above 0).
pub fn nice_max(v: f64) -> f64 {
    if !(plottable(v) && v > 0.0) {
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

/// "1.5M", "250k", "40", "2.5G": an axis label.
pub fn short_number(v: f64) -> String {
    let (x, unit) = if v.abs() >= 1e12 {
        (v / 1e12, "T")
    } else if v.abs() >= 1e9 {
        (v / 1e9, "G")
    } else if v.abs() >= 1e6 {
        (v / 1e6, "M")
    } else if v.abs() >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{x:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// The x placement: (position of a value, tick values with their labels).
struct XScale {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
}

impl XScale {
    fn new(chart: &Chart) -> XScale {
        let xs = || {
            chart
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x))
                .filter(|x| plottable(*x))
        };
        match &chart.x_axis {
            XAxis::Categories(labels) => {
                let n = labels.len().max(1) as f64;
                XScale {
                    lo: -0.5,
                    hi: n - 0.5,
                    log: false,
                    ticks: labels
                        .iter()
                        .enumerate()
                        .map(|(i, l)| (i as f64, l.clone()))
                        .collect(),
                }
            }
            XAxis::Linear => {
                let max = xs().fold(0.0, f64::max);
                let step = nice_max(max / 6.0);
                let top = (max / step).ceil().max(1.0) * step;
                let n = (top / step).round() as u32;
                XScale {
                    lo: 0.0,
                    hi: top,
                    log: false,
                    ticks: (0..=n)
                        .map(|k| {
                            let v = step * f64::from(k);
                            (v, short_number(v))
                        })
                        .collect(),
                }
            }
            XAxis::Log => {
                let pos = || xs().filter(|x| *x > 0.0);
                let min = pos().fold(f64::INFINITY, f64::min);
                let max = pos().fold(0.0, f64::max);
                let (lo, hi) = if min.is_finite() && max > 0.0 {
                    let lo = min.log10().floor();
                    (lo, max.log10().ceil().max(lo + 1.0))
                } else {
                    (0.0, 1.0)
                };
                XScale {
                    lo,
                    hi,
                    log: true,
                    ticks: ((lo as i32)..=(hi as i32))
                        .map(|k| {
                            let v = 10f64.powi(k);
                            (f64::from(k), short_number(v))
                        })
                        .collect(),
                }
            }
        }
    }

    /// The axis position of value `v` (log10 for a log axis); `None` if it has none.
    fn pos(&self, v: f64) -> Option<f64> {
        if !plottable(v) {
            None
        } else if self.log {
            (v > 0.0).then(|| v.log10())
        } else {
            Some(v)
        }
    }

    fn px(&self, pos: f64) -> f64 {
        let plot_w = WIDTH - LEFT - RIGHT;
        let span = (self.hi - self.lo).max(f64::MIN_POSITIVE);
        LEFT + plot_w * (pos - self.lo) / span
    }
}

/// The chart as an SVG document with `<text>` labels.
pub fn render_svg(chart: &Chart) -> String {
    render(chart, None)
}

/// Legend rows: (x, y of each entry's row).
fn legend_layout(chart: &Chart) -> Vec<(f64, usize)> {
    let mut out = Vec::new();
    let (mut xx, mut row) = (LEFT, 0);
    for se in &chart.series {
        let w = 40.0 + 6.5 * se.name.chars().count() as f64;
        if xx > LEFT && xx + w > WIDTH - RIGHT {
            xx = LEFT;
            row += 1;
        }
        out.push((xx, row));
        xx += w;
    }
    out
}

/// The values of `chart` that cannot be placed on its scales ([`plottable`]): how many, and
/// the first.
fn left_out(chart: &Chart) -> (usize, Option<f64>) {
    let x_too = !matches!(chart.x_axis, XAxis::Categories(_));
    let values = chart.series.iter().flat_map(|s| &s.points).flat_map(|p| {
        [Some(p.y), p.lo, p.hi, x_too.then_some(p.x)]
            .into_iter()
            .flatten()
    });
    let mut bad = values.filter(|v| !plottable(*v));
    let first = bad.next();
    (first.map_or(0, |_| 1 + bad.count()), first)
}

/// The grid, frame, ticks and axis titles of `chart`, its y scale from 0 to `y_max`.
fn axes(s: &mut Svg<'_>, chart: &Chart, xs: &XScale, y_max: f64) {
    let y = |v: f64| TOP + PLOT_H * (1.0 - v / y_max);
    let plot_w = WIDTH - LEFT - RIGHT;
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
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{plot_w:.1}" height="{PLOT_H:.1}" fill="none" stroke="#333333"/>"##
    );
    // At most about 12 tick labels, so that long category lists stay legible.
    let every = xs.ticks.len().div_ceil(12).max(1);
    for (i, (pos, label)) in xs.ticks.iter().enumerate() {
        let xx = xs.px(*pos);
        if !matches!(chart.x_axis, XAxis::Categories(_)) {
            s.line(xx, TOP, xx, TOP + PLOT_H, r##"stroke="#eeeeee""##);
        }
        if i % every == 0 {
            s.text(xx, TOP + PLOT_H + 18.0, 12.0, Anchor::Middle, false, label);
        }
    }
    let bottom = TOP + PLOT_H + 40.0;
    s.text(
        LEFT + plot_w / 2.0,
        bottom,
        13.0,
        Anchor::Middle,
        false,
        &chart.x_label,
    );
    s.text(
        22.0,
        TOP + PLOT_H / 2.0,
        13.0,
        Anchor::Middle,
        true,
        &chart.y_label,
    );
}

fn render(chart: &Chart, font: Option<&ttf_parser::Face<'_>>) -> String {
    let layout = legend_layout(chart);
    let rows = layout.last().map_or(0, |l| l.1 + 1);
    let legend_top = TOP + PLOT_H + 62.0;
    let mut notes = chart.notes.clone();
    if let (n, Some(first)) = left_out(chart) {
        let what = if n == 1 { "value" } else { "values" };
        let eg = if first.is_finite() {
            format!(", e.g. {first:e}")
        } else {
            String::new()
        };
        notes.push(format!(
            "left out of the scale: {n} {what} no measurement gives (not finite, or of a size outside {MIN_PLOTTED:e} to {MAX_PLOTTED:e}){eg}"
        ));
    }
    let height = legend_top + 20.0 * rows as f64 + 20.0 * notes.len() as f64 + 8.0;
    let xs = XScale::new(chart);
    let values = chart.series.iter().flat_map(|s| {
        s.points
            .iter()
            .flat_map(|p| [Some(p.y), p.hi].into_iter().flatten())
    });
    let y_max = chart
        .y_max
        .filter(|m| plottable(*m) && *m > 0.0)
        .unwrap_or_else(|| nice_max(values.filter(|v| plottable(*v)).fold(0.0, f64::max)));
    let y = |v: f64| TOP + PLOT_H * (1.0 - v / y_max);
    let mut s = Svg {
        out: String::new(),
        font,
    };
    let _ = writeln!(
        s.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="{FONT}">"#
    );
    let _ = writeln!(
        s.out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    s.text(WIDTH / 2.0, 28.0, 16.0, Anchor::Middle, false, &chart.title);
    axes(&mut s, chart, &xs, y_max);
    let place = |p: &Point| -> Option<(f64, f64)> {
        let pos = xs.pos(p.x)?;
        plottable(p.y).then(|| (xs.px(pos), y(p.y.clamp(0.0, y_max))))
    };
    for se in &chart.series {
        draw_series(&mut s, se, &place, &y, y_max);
    }
    if let Some((p, label)) = &chart.best {
        if let Some((cx, cy)) = place(p) {
            let _ = writeln!(
                s.out,
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="9" fill="none" stroke="#c00000" stroke-width="2"/>"##
            );
            s.text(cx, cy - 14.0, 12.0, Anchor::Middle, false, label);
        }
    }
    for (se, (xx, row)) in chart.series.iter().zip(&layout) {
        let yy = legend_top + 20.0 * *row as f64;
        let style = format!(r#"stroke="{}" stroke-width="2"{}"#, se.color, dash(se));
        s.line(*xx, yy, xx + 24.0, yy, &style);
        s.text(xx + 30.0, yy + 4.0, 12.0, Anchor::Start, false, &se.name);
    }
    for (i, note) in notes.iter().enumerate() {
        let yy = legend_top + 20.0 * rows as f64 + 20.0 * i as f64 + 2.0;
        s.text(LEFT, yy, 12.0, Anchor::Start, false, note);
    }
    s.out.push_str("</svg>\n");
    s.out
}

fn dash(se: &Series) -> &'static str {
    if se.dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

fn draw_series(
    s: &mut Svg<'_>,
    se: &Series,
    place: &dyn Fn(&Point) -> Option<(f64, f64)>,
    y: &dyn Fn(f64) -> f64,
    y_max: f64,
) {
    let placed: Vec<(&Point, (f64, f64))> = se
        .points
        .iter()
        .filter_map(|p| place(p).map(|xy| (p, xy)))
        .collect();
    if se.joined && placed.len() > 1 {
        let pts: Vec<String> = placed
            .iter()
            .map(|(_, (x, y))| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s.out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"#,
            pts.join(" "),
            se.color,
            dash(se)
        );
    }
    for (p, (cx, cy)) in &placed {
        if let (Some(lo), Some(hi)) = (p.lo, p.hi) {
            if plottable(lo) && plottable(hi) {
                let (y1, y2) = (y(lo.clamp(0.0, y_max)), y(hi.clamp(0.0, y_max)));
                let style = format!(r#"stroke="{}" stroke-width="1.5""#, se.color);
                s.line(*cx, y1, *cx, y2, &style);
                s.line(cx - 5.0, y1, cx + 5.0, y1, &style);
                s.line(cx - 5.0, y2, cx + 5.0, y2, &style);
            }
        }
        if se.markers || placed.len() == 1 {
            let fill = if p.hollow { "#ffffff" } else { se.color };
            let _ = writeln!(
                s.out,
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4" fill="{fill}" stroke="{}" stroke-width="2"/>"#,
                se.color
            );
        }
    }
}

/// Writes `chart` to `path`: SVG when it ends in `.svg`, PNG when it ends in `.png`.
/// Returns warnings (a PNG without a font has no text).
pub fn write(chart: &Chart, path: &Path) -> anyhow::Result<Vec<String>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let (bytes, warnings) = match ext.as_deref() {
        Some("svg") => (render_svg(chart).into_bytes(), Vec::new()),
        Some("png") => png(chart)?,
        _ => anyhow::bail!("{}: name the chart file .svg or .png", path.display()),
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

/// The warning for a PNG drawn without a font.
pub const NO_FONT: &str = "no system font found: the PNG chart has no labels (install fonts-dejavu-core, or use an .svg chart)";

/// The chart as PNG bytes (see the module docs), with any warnings.
pub fn png(chart: &Chart) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
    let font = system_font();
    let face = font
        .as_ref()
        .and_then(|(_, bytes)| ttf_parser::Face::parse(bytes, 0).ok());
    let mut warnings = Vec::new();
    if face.is_none() {
        warnings.push(NO_FONT.to_string());
    }
    // Without a font the <text> elements are simply not drawn by resvg's text-less build.
    let svg = render(chart, face.as_ref());
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

/// At most `max` points: runs of consecutive points replaced by their mean (x and y), so a
/// long time series keeps its shape in a bounded size. Returns the points and how many
/// original points each one stands for (1: not thinned).
pub fn thin(points: Vec<Point>, max: usize) -> (Vec<Point>, usize) {
    let max = max.max(1);
    if points.len() <= max {
        return (points, 1);
    }
    let k = points.len().div_ceil(max);
    let out = points
        .chunks(k)
        .map(|c| {
            let n = c.len() as f64;
            Point::new(
                c.iter().map(|p| p.x).sum::<f64>() / n,
                c.iter().map(|p| p.y).sum::<f64>() / n,
            )
        })
        .collect();
    (out, k)
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
        assert_eq!(short_number(9.41e9), "9.41G");
    }

    fn chart(x_axis: XAxis, points: Vec<Point>) -> Chart {
        Chart {
            id: "t".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis,
            y_max: None,
            series: vec![Series {
                name: "s".into(),
                color: color(0),
                dashed: false,
                markers: true,
                joined: true,
                points,
            }],
            best: None,
            notes: vec![],
        }
    }

    #[test]
    fn linear_axis_ticks_are_round() {
        let c = chart(
            XAxis::Linear,
            vec![Point::new(0.1, 1.0), Point::new(60.0, 2.0)],
        );
        let xs = XScale::new(&c);
        assert_eq!(xs.hi, 60.0);
        let labels: Vec<&str> = xs.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "10", "20", "30", "40", "50", "60"]);
    }

    #[test]
    fn log_axis_spans_decades_and_drops_non_positive() {
        let c = chart(
            XAxis::Log,
            vec![
                Point::new(0.0, 1.0),
                Point::new(12.0, 1.0),
                Point::new(3000.0, 2.0),
            ],
        );
        let xs = XScale::new(&c);
        let labels: Vec<&str> = xs.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10", "100", "1k", "10k"]);
        let svg = render_svg(&c);
        // The point at 0 has no place on a log axis: two markers, one line.
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(svg.matches("<polyline").count(), 1);
    }

    #[test]
    fn interval_bars_and_best_mark() {
        let mut c = chart(
            XAxis::Categories(vec!["a".into(), "b".into()]),
            vec![
                Point {
                    lo: Some(0.5),
                    hi: Some(1.5),
                    ..Point::new(0.0, 1.0)
                },
                Point::new(1.0, 2.0),
            ],
        );
        c.best = Some((Point::new(1.0, 2.0), "best".into()));
        let svg = render_svg(&c);
        // One bar and its two caps, plus grid and legend lines.
        assert_eq!(svg.matches(r#"stroke-width="1.5""#).count(), 3);
        assert!(svg.contains(r##"r="9" fill="none" stroke="#c00000""##));
        assert!(svg.contains(">best<"));
    }

    /// Numbers the axes cannot hold (a corrupt file's 1e308 or 5e-324) are left out of the
    /// scale with a note: no NaN or infinite coordinate, no tick label of 300 digits.
    #[test]
    fn absurd_values_are_left_out_of_the_scale() {
        let labels_ok = |svg: &str| {
            for t in svg.split("<text").skip(1) {
                let label = t.split('>').nth(1).unwrap().split('<').next().unwrap();
                // Tick labels ("250k", "1.5M") are short numbers.
                if label.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
                    assert!(label.len() <= 8, "{label}");
                }
            }
        };
        for absurd in [1e308, 5e-324, -1e308, f64::INFINITY, f64::NAN, 1e16, 1e-13] {
            for axis in [
                XAxis::Linear,
                XAxis::Log,
                XAxis::Categories(vec!["a".into(); 3]),
            ] {
                let mut c = chart(
                    axis,
                    vec![
                        Point::new(1.0, 40.0),
                        Point {
                            lo: Some(absurd),
                            hi: Some(absurd),
                            ..Point::new(2.0, absurd)
                        },
                        Point::new(absurd, 60.0),
                    ],
                );
                c.best = Some((Point::new(2.0, absurd), "best".into()));
                let svg = render_svg(&c);
                for bad in ["NaN", "inf"] {
                    assert!(!svg.contains(bad), "{absurd} {bad}: {svg}");
                }
                labels_ok(&svg);
                assert!(svg.contains("left out of the scale"), "{absurd}: {svg}");
                // The scale is the plausible points' (60 rounds up to 100).
                assert!(svg.contains(">100<"), "{absurd}: {svg}");
                let note = render_svg(&c);
                assert_eq!(svg, note, "still deterministic");
            }
        }
        // Alone on a chart: an axis of 1, not of 0 or 1e308.
        let svg = render_svg(&chart(XAxis::Linear, vec![Point::new(1.0, 5e-324)]));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(svg.contains(">1<"), "{svg}");
        assert_eq!(nice_max(5e-324), 1.0);
        assert_eq!(nice_max(1e308), 1.0);
        // Zero, negative zero and small real figures stay on the chart.
        assert!(plottable(0.0) && plottable(-0.0) && plottable(1e-6) && plottable(4e13));
        let svg = render_svg(&chart(
            XAxis::Linear,
            vec![Point::new(1.0, -0.0), Point::new(2.0, 3.0)],
        ));
        assert!(!svg.contains("left out"), "{svg}");
    }

    #[test]
    fn thinning_keeps_means() {
        let pts: Vec<Point> = (0..10).map(|i| Point::new(f64::from(i), 2.0)).collect();
        let (out, k) = thin(pts, 4);
        assert_eq!(k, 3);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0], Point::new(1.0, 2.0));
        let (same, k) = thin(vec![Point::new(0.0, 1.0)], 4);
        assert_eq!((same.len(), k), (1, 1));
    }
}
