//! Time-sequence graphs (in the manner of tcptrace's `a2b_tsg`) as SVG: one direction of one
//! connection, sequence number against time. Data segments are vertical bars from their
//! first to their last byte (retransmissions red), the ACKs a green step line, the right
//! edge of the advertised window (ACK + window) an olive step line, SACK blocks purple,
//! duplicate ACKs green ticks; the time the detectors marked is shaded behind (delayed-ACK
//! stalls red, receive-window-limited blue, loss recovery orange).
//!
//! Like `export::rfc2544::chart`, the drawing is a pure function of its input with fixed number
//! formatting, so the same capture always gives the same bytes.

use std::fmt::Write as _;

use crate::analyze::{DirectionGraph, GraphEvent, GraphKind, PeriodKind};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 80.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" step for about `n` ticks over `span`.
fn tick_step(span: f64, n: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / n;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn bytes_label(v: f64) -> String {
    if v >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", v / (1024.0 * 1024.0))
    } else if v >= 1024.0 {
        format!("{:.0} KiB", v / 1024.0)
    } else {
        format!("{v:.0} B")
    }
}

/// The SVG of one direction's time-sequence graph: the frame, the shaded periods, the ACK
/// and window lines, the segments, the axes and the legend.
pub fn render_svg(g: &DirectionGraph) -> String {
    let f = Frame::of(g);
    let (pw, ph) = (f.pw, f.ph);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH:.0} {HEIGHT:.0}" font-family="{FONT}">"#
    );
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{WIDTH:.0}" height="{HEIGHT:.0}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="24.0" font-size="15" text-anchor="middle">TCP {} {}: time-sequence graph</text>"#,
        WIDTH / 2.0,
        g.connection,
        esc(&g.title)
    );
    let _ = writeln!(
        out,
        r#"<clipPath id="plot"><rect x="{LEFT:.1}" y="{TOP:.1}" width="{pw:.1}" height="{ph:.1}"/></clipPath>"#
    );
    let _ = writeln!(out, r#"<g clip-path="url(#plot)">"#);
    shaded_periods(&mut out, g, &f);
    ack_lines(&mut out, &g.events, &f);
    segments(&mut out, &g.events, &f);
    let _ = writeln!(out, "</g>");
    axes(&mut out, g, &f);
    legend(&mut out, g);
    out.push_str("</svg>\n");
    out
}

/// Where the plot puts times and sequence offsets: the span of the events and periods,
/// and the plot's size.
struct Frame {
    t0: u64,
    y0: u64,
    span_t: f64,
    span_y: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn of(g: &DirectionGraph) -> Frame {
        let ev = &g.events;
        let t0 = ev
            .iter()
            .map(|e| e.t_ns)
            .chain(g.periods.iter().map(|p| p.start_ns))
            .min()
            .unwrap_or(0);
        let t1 = ev
            .iter()
            .map(|e| e.t_ns)
            .chain(g.periods.iter().map(|p| p.end_ns))
            .max()
            .unwrap_or(t0)
            .max(t0.saturating_add(1000));
        let y0 = ev
            .iter()
            .filter(|e| matches!(e.kind, GraphKind::Data | GraphKind::Retransmission))
            .map(|e| e.a)
            .min()
            .unwrap_or(0);
        // The window's edge may lie far above the data: it is drawn clipped.
        let y1 = ev
            .iter()
            .map(|e| match e.kind {
                GraphKind::Ack | GraphKind::DupAck => e.a,
                _ => e.b,
            })
            .max()
            .unwrap_or(y0 + 1)
            .max(y0 + 1);
        Frame {
            t0,
            y0,
            span_t: (t1 - t0) as f64 / 1e9,
            span_y: (y1 - y0) as f64,
            pw: WIDTH - LEFT - RIGHT,
            ph: HEIGHT - TOP - BOTTOM,
        }
    }

    /// The x of time `t` (nanoseconds).
    fn x(&self, t: u64) -> f64 {
        LEFT + (t.saturating_sub(self.t0) as f64 / 1e9) / self.span_t * self.pw
    }

    /// The y of sequence offset `s`, at most a little above the plot.
    fn y(&self, s: u64) -> f64 {
        let v = (s.max(self.y0) - self.y0) as f64 / self.span_y;
        TOP + self.ph - v.min(1.05) * self.ph
    }
}

/// Delayed-ACK stalls, window-limited and loss-recovery periods, shaded.
fn shaded_periods(out: &mut String, g: &DirectionGraph, f: &Frame) {
    let (x, ph) = (|t| f.x(t), f.ph);
    for p in &g.periods {
        let color = match p.kind {
            PeriodKind::DelayedAck => "#f6b3b3",
            PeriodKind::ReceiveWindow => "#b9d3f2",
            PeriodKind::LossRecovery => "#f7d9a8",
            PeriodKind::ApplicationLimited | PeriodKind::Sending => continue,
        };
        let (xa, xb) = (x(p.start_ns), x(p.end_ns));
        let _ = writeln!(
            out,
            r#"<rect x="{xa:.2}" y="{TOP:.1}" width="{:.2}" height="{ph:.1}" fill="{color}" fill-opacity="0.6"/>"#,
            (xb - xa).max(0.5)
        );
    }
}

/// The receive window's right edge and the ACK step lines.
fn ack_lines(out: &mut String, ev: &[GraphEvent], f: &Frame) {
    let (x, y, pw) = (|t| f.x(t), |s| f.y(s), f.pw);
    let acks: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e.kind, GraphKind::Ack | GraphKind::DupAck))
        .collect();
    for (color, pick) in [("#b5a000", 1usize), ("#1f9e1f", 0usize)] {
        let mut d = String::new();
        let mut prev_y: Option<f64> = None;
        for e in &acks {
            let v = if pick == 0 { e.a } else { e.b };
            if pick == 1 && e.b == 0 {
                continue;
            }
            let (px, py) = (x(e.t_ns), y(v));
            match prev_y {
                None => {
                    let _ = write!(d, "M{px:.2} {py:.2}");
                }
                Some(_) => {
                    let _ = write!(d, "H{px:.2}V{py:.2}");
                }
            }
            prev_y = Some(py);
        }
        if !d.is_empty() {
            let _ = write!(d, "H{:.2}", LEFT + pw);
            let _ = writeln!(
                out,
                r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.2"/>"#
            );
        }
    }
}

/// Data segments, retransmissions, SACK blocks and duplicate-ACK ticks.
fn segments(out: &mut String, ev: &[GraphEvent], f: &Frame) {
    let (x, y) = (|t| f.x(t), |s| f.y(s));
    let mut normal = String::new();
    let mut retrans = String::new();
    let mut sack = String::new();
    let mut dup = String::new();
    for e in ev {
        let px = x(e.t_ns);
        match e.kind {
            GraphKind::Data | GraphKind::Retransmission => {
                let (ya, yb) = (y(e.a), y(e.b));
                let target = if e.kind == GraphKind::Data {
                    &mut normal
                } else {
                    &mut retrans
                };
                let _ = write!(target, "M{px:.2} {ya:.2}V{:.2}", yb.min(ya - 0.8));
            }
            GraphKind::Sack => {
                let _ = write!(sack, "M{px:.2} {:.2}V{:.2}", y(e.a), y(e.b));
            }
            GraphKind::DupAck => {
                let py = y(e.a);
                let _ = write!(dup, "M{px:.2} {py:.2}v-4");
            }
            GraphKind::Ack => {}
        }
    }
    for (d, color, w) in [
        (normal, "#222222", 1.0),
        (retrans, "#d62728", 1.6),
        (sack, "#9467bd", 1.2),
        (dup, "#1f9e1f", 1.0),
    ] {
        if !d.is_empty() {
            let _ = writeln!(
                out,
                r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="{w:.1}"/>"#
            );
        }
    }
}

/// The plot's border, the time and sequence axes with their ticks and titles.
fn axes(out: &mut String, g: &DirectionGraph, f: &Frame) {
    let (pw, ph, span_t, span_y, t0) = (f.pw, f.ph, f.span_t, f.span_y, f.t0);
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#444444"/>"##
    );
    let st = tick_step(span_t, 8.0);
    let mut k = 0.0;
    while k <= span_t + st * 1e-9 {
        let px = LEFT + k / span_t * pw;
        let decimals = if st >= 1.0 {
            0
        } else {
            (-st.log10().floor()) as usize
        };
        let _ = writeln!(
            out,
            r##"<line x1="{px:.2}" y1="{:.1}" x2="{px:.2}" y2="{:.1}" stroke="#444444"/><text x="{px:.2}" y="{:.1}" font-size="11" text-anchor="middle">{k:.decimals$}</text>"##,
            TOP + ph,
            TOP + ph + 5.0,
            TOP + ph + 19.0
        );
        k += st;
    }
    let sy = tick_step(span_y, 6.0);
    let mut v = 0.0;
    while v <= span_y + sy * 1e-9 {
        let py = TOP + ph - v / span_y * ph;
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{py:.2}" x2="{LEFT:.1}" y2="{py:.2}" stroke="#444444"/><text x="{:.1}" y="{:.2}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT - 5.0,
            LEFT - 8.0,
            py + 4.0,
            bytes_label(v)
        );
        v += sy;
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">time (s) since {:.6} s</text>"#,
        LEFT + pw / 2.0,
        TOP + ph + 36.0,
        t0.saturating_sub(g.start_ns) as f64 / 1e9
    );
    let _ = writeln!(
        out,
        r#"<text x="18.0" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 18.0 {:.1})">sequence offset</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
}

/// The legend, and a note when only the first events are drawn.
fn legend(out: &mut String, g: &DirectionGraph) {
    let items = [
        ("#222222", "data"),
        ("#d62728", "retransmission"),
        ("#1f9e1f", "ACK"),
        ("#b5a000", "ACK + window"),
        ("#9467bd", "SACK"),
        ("#f6b3b3", "delayed-ACK stall"),
        ("#b9d3f2", "window limited"),
        ("#f7d9a8", "loss recovery"),
    ];
    let mut lx = LEFT;
    let ly = HEIGHT - 18.0;
    for (color, label) in items {
        let _ = writeln!(
            out,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="10" fill="{color}"/><text x="{:.1}" y="{ly:.1}" font-size="11">{label}</text>"#,
            ly - 9.0,
            lx + 16.0
        );
        lx += 20.0 + label.len() as f64 * 6.4;
    }
    if g.truncated {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#d62728">only the first events are drawn</text>"##,
            WIDTH - RIGHT,
            TOP - 8.0
        );
    }
}
