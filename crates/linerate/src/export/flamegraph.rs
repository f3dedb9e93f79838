//! Flame graphs of `--profile-callchains` profiles: an SVG drawn from a profile's folded
//! stacks (`model::profile`), a pure function of them (same stacks, same bytes) in the
//! conventions of [`super::chart`]: coordinates in fixed decimals, escaped text, its font.
//!
//! The classic layout of flamegraph.pl: one box per frame, y the stack depth from the
//! bottom (the whole profile, `all`, at the foot; then the process; then the kernel frames
//! from the outermost), x the frame's share of the samples. At each depth the frames of one
//! parent are merged by name and placed alphabetically, so x is not time. A frame narrower
//! than [`MIN_PER_MILLE`] thousandths of the samples is not drawn (nor anything above it); the notes say how
//! many were left out. Every box has a `<title>` (a tooltip in any SVG viewer) with the
//! function, its category, its samples and its share; the box's colour is its category
//! (`model::profile::categorize`), with a legend, so the copy, TCP/IP, softirq, ... split is
//! visible at a glance. No script: it reads the same in a browser, an image viewer or print.
//!
//! The profile's folded stacks hold busy samples only (idle is apart); stacks beyond its cap
//! (`MAX_FOLDED`) are drawn as one frame, `[smaller stacks]`, on `all`, so `all` is every busy
//! sample and a frame's share is of the busy samples, as in the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use linerate_wire::profile::{Category, FoldedStack, ProfileReport};

use super::chart::{esc, FONT};

/// Narrowest frame drawn, thousandths of all samples (0.1 %).
pub const MIN_PER_MILLE: u64 = 1;
/// The frame that stands for the stacks a profile did not keep.
pub const LEFT_OUT_FRAME: &str = "[smaller stacks]";

const WIDTH: i64 = 1200;
const MARGIN: i64 = 10;
const FRAME_H: i64 = 17;
const BOX_H: i64 = 15;
const TOP: i64 = 64;
const FONT_SIZE: f64 = 11.0;
/// A generous average glyph width of the font at [`FONT_SIZE`], px (labels are cut to fit).
const CHAR_W: f64 = 6.6;

/// Colours of the categories (light, so black labels read on them; distinct in print).
fn fill(c: Category) -> &'static str {
    match c {
        Category::DataCopy => "#f28e2b",
        Category::TcpIp => "#a0cbe8",
        Category::Udp => "#8cd17d",
        Category::DriverNapi => "#d4a6c8",
        Category::Softirq => "#ff9d9a",
        Category::Interrupts => "#f1ce63",
        Category::Scheduler => "#bab0ac",
        Category::Locking => "#e15759",
        Category::Memory => "#d7b5a6",
        Category::Syscall => "#86bcb6",
        Category::UserSpace => "#fabfd2",
        Category::Other => "#e8e8e8",
    }
}
const PROCESS_FILL: &str = "#c9d6e3";
const ALL_FILL: &str = "#f4f4f4";

/// What a drawn frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// The whole profile.
    All,
    /// A process (the first frame of every folded stack).
    Process,
    /// A function of a category.
    Function(Category),
}

impl Kind {
    fn fill(self) -> &'static str {
        match self {
            Kind::All => ALL_FILL,
            Kind::Process => PROCESS_FILL,
            Kind::Function(c) => fill(c),
        }
    }
    fn label(self) -> &'static str {
        match self {
            Kind::All => "all busy samples",
            Kind::Process => "process",
            Kind::Function(c) => c.label(),
        }
    }
}

/// The merged call tree: node 0 is `all`.
#[derive(Debug, Default)]
struct Tree {
    nodes: Vec<Node>,
}

#[derive(Debug, Default)]
struct Node {
    name: String,
    samples: u64,
    children: BTreeMap<String, usize>,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node {
                name: "all".into(),
                ..Node::default()
            }],
        }
    }

    fn add(&mut self, frames: &[&str], samples: u64) {
        self.nodes[0].samples += samples;
        let mut at = 0;
        for f in frames {
            let next = match self.nodes[at].children.get(*f) {
                Some(i) => *i,
                None => {
                    let i = self.nodes.len();
                    self.nodes.push(Node {
                        name: (*f).to_string(),
                        ..Node::default()
                    });
                    self.nodes[at].children.insert((*f).to_string(), i);
                    i
                }
            };
            self.nodes[next].samples += samples;
            at = next;
        }
    }
}

/// One drawn box, in samples: it covers `[offset, offset + samples)` of `all`.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    name: String,
    kind: Kind,
    depth: usize,
    offset: u64,
    samples: u64,
}

/// The frames to draw (parents before their children) and how many were too narrow.
fn layout(tree: &Tree, min_samples: u64) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    let mut narrow = 0usize;
    // (node, depth, offset)
    let mut todo = vec![(0usize, 0usize, 0u64)];
    while let Some((i, depth, offset)) = todo.pop() {
        let n = &tree.nodes[i];
        if n.samples < min_samples {
            narrow += subtree_size(tree, i);
            continue;
        }
        let kind = match depth {
            0 => Kind::All,
            1 if n.name == LEFT_OUT_FRAME => Kind::Function(Category::Other),
            1 => Kind::Process,
            _ => Kind::Function(category(&n.name)),
        };
        frames.push(Frame {
            name: n.name.clone(),
            kind,
            depth,
            offset,
            samples: n.samples,
        });
        let mut at = offset;
        let mut kids = Vec::with_capacity(n.children.len());
        for c in n.children.values() {
            kids.push((*c, depth + 1, at));
            at += tree.nodes[*c].samples;
        }
        // Reversed so that the stack pops them in alphabetical order.
        todo.extend(kids.into_iter().rev());
    }
    (frames, narrow)
}

fn subtree_size(tree: &Tree, i: usize) -> usize {
    1 + tree.nodes[i]
        .children
        .values()
        .map(|c| subtree_size(tree, *c))
        .sum::<usize>()
}

/// The category of a frame above the process: user space for `[user] COMM`, else the
/// kernel function's.
fn category(name: &str) -> Category {
    if name.starts_with("[user]") {
        Category::UserSpace
    } else {
        crate::model::profile::categorize(name)
    }
}

/// A position in hundredths of a pixel as fixed-decimal text ("12.05").
fn px(h: i64) -> String {
    format!("{}.{:02}", h / 100, h % 100)
}

/// The label that fits in `width_px`: the name, or its start and "..", or nothing.
fn fit(name: &str, width_px: f64) -> Option<String> {
    let room = ((width_px - 6.0) / CHAR_W).floor();
    if room < 3.0 {
        return None;
    }
    let room = room as usize;
    if name.chars().count() <= room {
        return Some(name.to_string());
    }
    let cut: String = name.chars().take(room - 2).collect();
    Some(format!("{cut}.."))
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The lines under the title: what the axes are, and what was left out.
fn notes(total: u64, narrow: usize, left_out_samples: u64) -> Vec<String> {
    let mut notes = vec![format!(
        "{total} busy samples. x: share of the samples (frames merged by name, alphabetical at each depth: not time); y: stack depth."
    )];
    let mut left = String::new();
    if narrow > 0 {
        let _ = write!(
            left,
            "{narrow} frames narrower than {:.1}% not drawn. ",
            MIN_PER_MILLE as f64 / 10.0
        );
    }
    if left_out_samples > 0 {
        let _ = write!(
            left,
            "{left_out_samples} samples of stacks the profile did not keep are {LEFT_OUT_FRAME}."
        );
    }
    if !left.is_empty() {
        notes.push(left.trim_end().to_string());
    }
    notes
}

/// The legend of the `kinds` drawn, `per_row` to a row, from `legend_top` down.
fn legend(out: &mut String, kinds: &[Kind], legend_top: i64, per_row: usize) {
    for (i, k) in kinds.iter().enumerate() {
        let col = (i % per_row) as i64;
        let row = (i / per_row) as i64;
        let lx = MARGIN + col * 195;
        let ly = legend_top + row * 20;
        let _ = writeln!(
            out,
            r##"<rect x="{lx}" y="{ly}" width="14" height="12" fill="{}" stroke="#999999" stroke-width="0.5"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            k.fill(),
            lx + 20,
            ly + 10,
            esc(k.label())
        );
    }
}

/// The flame graph of `stacks` (folded, `outer;...;inner`, the first frame the process)
/// with `left_out_samples` more in stacks not kept, as an SVG document under `title`;
/// `None` when there are no samples to draw (the caller says so).
pub fn render(title: &str, stacks: &[FoldedStack], left_out_samples: u64) -> Option<String> {
    let mut tree = Tree::new();
    for s in stacks.iter().filter(|s| s.samples > 0) {
        let frames: Vec<&str> = s.stack.split(';').collect();
        tree.add(&frames, s.samples);
    }
    if left_out_samples > 0 {
        tree.add(&[LEFT_OUT_FRAME], left_out_samples);
    }
    let total = tree.nodes[0].samples;
    if total == 0 {
        return None;
    }
    // Frames of at least MIN_PER_MILLE thousandths of the samples (and one sample).
    let min_samples = total.saturating_mul(MIN_PER_MILLE).div_ceil(1000).max(1);
    let (frames, narrow) = layout(&tree, min_samples);
    let depth = frames.iter().map(|f| f.depth).max().unwrap_or(0) as i64;
    let plot_w = (WIDTH - 2 * MARGIN) * 100;
    let x = |samples: u64| -> i64 {
        // Hundredths of a pixel, rounded down: monotone, so a child's box never leaves its
        // parent's.
        MARGIN * 100 + ((u128::from(samples) * plot_w as u128) / u128::from(total)) as i64
    };
    let base = TOP + (depth + 1) * FRAME_H;
    let mut kinds: Vec<Kind> = frames.iter().map(|f| f.kind).collect();
    kinds.sort();
    kinds.dedup();
    let per_row = 6;
    let legend_rows = kinds.len().div_ceil(per_row) as i64;
    let height = base + 16 + legend_rows * 20 + 24;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="{FONT}">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="24" font-size="16" text-anchor="middle">{}</text>"#,
        WIDTH / 2,
        esc(title)
    );
    let notes = notes(total, narrow, left_out_samples);
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#555555">{}</text>"##,
            WIDTH / 2,
            42 + 16 * i,
            esc(note)
        );
    }
    for f in &frames {
        let x1 = x(f.offset);
        let x2 = x(f.offset + f.samples);
        let w = x2 - x1;
        let y = base - (f.depth as i64 + 1) * FRAME_H;
        let tip = format!(
            "{} ({}): {} samples, {:.2}%",
            f.name,
            f.kind.label(),
            f.samples,
            percent(f.samples, total)
        );
        let _ = write!(
            out,
            r##"<g><title>{}</title><rect x="{}" y="{y}" width="{}" height="{BOX_H}" fill="{}" stroke="#ffffff" stroke-width="0.5"/>"##,
            esc(&tip),
            px(x1),
            px(w),
            f.kind.fill()
        );
        if let Some(label) = fit(&f.name, w as f64 / 100.0) {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" font-size="{FONT_SIZE:.0}">{}</text>"#,
                px(x1 + 300),
                y + BOX_H - 4,
                esc(&label)
            );
        }
        out.push_str("</g>\n");
    }
    // Legend: the kinds drawn.
    legend(&mut out, &kinds, base + 16, per_row);
    out.push_str("</svg>\n");
    Some(out)
}

/// The flame graph of one end's profile (`end`: "client", "server", ...), `None` when it
/// has no folded stacks (no `--profile-callchains`, or no busy samples).
pub fn of_profile(end: &str, p: &ProfileReport) -> Option<String> {
    let title = format!(
        "Flame graph of the {end}: kernel call chains, {} at {} Hz over {:.1} s",
        p.event,
        p.frequency_hz,
        p.duration_ns as f64 / 1e9
    );
    render(&title, &p.folded, p.folded_left_out_samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Vec<FoldedStack> {
        text.lines()
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(stack, n)| FoldedStack {
                stack: stack.to_string(),
                samples: n.parse().unwrap(),
            })
            .collect()
    }

    const FIXTURE: &str = "\
linerate;entry_SYSCALL_64;__x64_sys_sendto;tcp_sendmsg_locked;rep_movs_alternative 600
linerate;entry_SYSCALL_64;__x64_sys_sendto;tcp_sendmsg_locked;tcp_push 150
linerate;entry_SYSCALL_64;__x64_sys_recvfrom;tcp_recvmsg;_copy_to_iter 200
linerate;[user] linerate 40
swapper;do_idle;asm_sysvec_apic_timer_interrupt;__do_softirq;net_rx_action 9
swapper;do_idle;asm_sysvec_apic_timer_interrupt;__do_softirq;rare_function 1
";

    /// Every `<rect>` of a frame: (tooltip, x, width, y) from the SVG text.
    fn boxes(svg: &str) -> Vec<(String, f64, f64, i64)> {
        let mut out = Vec::new();
        for g in svg.split("<g><title>").skip(1) {
            let (title, rest) = g.split_once("</title>").unwrap();
            let attr = |name: &str| -> String {
                let key = format!(" {name}=\"");
                let from = rest.find(&key).unwrap() + key.len();
                rest[from..].split('"').next().unwrap().to_string()
            };
            out.push((
                title.to_string(),
                attr("x").parse().unwrap(),
                attr("width").parse().unwrap(),
                attr("y").parse().unwrap(),
            ));
        }
        out
    }

    fn find<'a>(b: &'a [(String, f64, f64, i64)], name: &str) -> &'a (String, f64, f64, i64) {
        b.iter()
            .find(|t| t.0.starts_with(&format!("{name} (")))
            .unwrap_or_else(|| panic!("{name} not drawn"))
    }

    #[test]
    fn widths_are_shares_and_children_nest_in_their_parents() {
        let svg = render("t", &folded(FIXTURE), 0).unwrap();
        let b = boxes(&svg);
        let plot = (WIDTH - 2 * MARGIN) as f64;
        let all = find(&b, "all");
        assert!(all.0.contains("1000 samples, 100.00%"), "{}", all.0);
        assert_eq!((all.1, all.2), (MARGIN as f64, plot));
        // The root frame's samples are the folded totals.
        let linerate = find(&b, "linerate");
        let swapper = find(&b, "swapper");
        assert!(
            linerate.0.contains(": 990 samples, 99.00%"),
            "{}",
            linerate.0
        );
        assert!(swapper.0.contains(": 10 samples, 1.00%"), "{}", swapper.0);
        assert!((linerate.2 + swapper.2 - all.2).abs() < 0.02);
        assert!((linerate.2 - plot * 0.99).abs() < 0.02);
        // Merged: one tcp_sendmsg_locked box of 750 samples, its two children inside it.
        assert_eq!(svg.matches("<title>tcp_sendmsg_locked (").count(), 1);
        let send = find(&b, "tcp_sendmsg_locked");
        assert!(
            send.0.contains("TCP/IP): 750 samples, 75.00%"),
            "{}",
            send.0
        );
        for child in ["rep_movs_alternative", "tcp_push"] {
            let c = find(&b, child);
            assert!(
                c.1 >= send.1 && c.1 + c.2 <= send.1 + send.2 + 1e-9,
                "{child}"
            );
            assert_eq!(c.3, send.3 - FRAME_H, "{child} one level up");
        }
        // Alphabetical at each depth: __x64_sys_recvfrom left of __x64_sys_sendto,
        // linerate left of swapper.
        assert!(find(&b, "__x64_sys_recvfrom").1 < find(&b, "__x64_sys_sendto").1);
        assert!(linerate.1 < swapper.1);
        // Every child within its parent and no wider, at every depth: the boxes one row up
        // that start inside a box end inside it.
        for p in &b {
            let inside: Vec<_> = b
                .iter()
                .filter(|c| c.3 == p.3 - FRAME_H && c.1 >= p.1 && c.1 < p.1 + p.2)
                .collect();
            let sum: f64 = inside.iter().map(|c| c.2).sum();
            assert!(sum <= p.2 + 0.01 * inside.len() as f64, "{}", p.0);
            for c in inside {
                assert!(c.1 + c.2 <= p.1 + p.2 + 1e-9, "{} in {}", c.0, p.0);
            }
        }
    }

    #[test]
    fn colours_follow_the_categories_with_a_legend() {
        let svg = render("t", &folded(FIXTURE), 0).unwrap();
        let rect_of = |name: &str| {
            let g = svg
                .split("<g><title>")
                .find(|g| g.starts_with(&format!("{name} (")))
                .unwrap();
            g.split("fill=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(rect_of("rep_movs_alternative"), fill(Category::DataCopy));
        assert_eq!(rect_of("_copy_to_iter"), fill(Category::DataCopy));
        assert_eq!(rect_of("tcp_push"), fill(Category::TcpIp));
        assert_eq!(rect_of("net_rx_action"), fill(Category::Softirq));
        assert_eq!(rect_of("[user] linerate"), fill(Category::UserSpace));
        assert_eq!(rect_of("linerate"), PROCESS_FILL);
        assert!(svg.contains(">data copy</text>"));
        assert!(svg.contains(">softirq</text>"));
        assert!(svg.contains(">process</text>"));
        // No category that is not drawn is in the legend.
        assert!(!svg.contains(">locking</text>"));
    }

    #[test]
    fn frames_under_a_tenth_of_a_percent_are_left_out_and_counted() {
        let svg = render("t", &folded(FIXTURE), 0).unwrap();
        // rare_function has 1 of 1000 samples: exactly 0.1 %, drawn.
        assert!(svg.contains("<title>rare_function ("));
        let mut stacks = folded(FIXTURE);
        stacks[0].samples = 6000; // 6400 samples: 1 is under 0.1 %
        let svg = render("t", &stacks, 0).unwrap();
        assert!(!svg.contains("<title>rare_function ("));
        assert!(
            svg.contains(">1 frames narrower than 0.1% not drawn.<"),
            "{svg}"
        );
        // A narrow subtree counts every frame in it.
        let stacks = folded("a;b 5000\na;c;d;e 1\n");
        let svg = render("t", &stacks, 0).unwrap();
        assert!(
            svg.contains(">3 frames narrower than 0.1% not drawn.<"),
            "{svg}"
        );
    }

    #[test]
    fn stacks_the_profile_did_not_keep_are_one_frame() {
        let svg = render("t", &folded(FIXTURE), 250).unwrap();
        let b = boxes(&svg);
        assert!(find(&b, "all").0.contains("1250 samples"));
        assert!(find(&b, LEFT_OUT_FRAME).0.contains("250 samples, 20.00%"));
        assert!(svg.contains("250 samples of stacks the profile did not keep"));
    }

    #[test]
    fn names_are_escaped_and_labels_cut_to_fit() {
        let stacks =
            folded("p<1>;f&g<T> 10\np<1>;a_very_long_function_name_that_cannot_fit_in_its_box 1\n");
        let svg = render("a & b <c>", &stacks, 0).unwrap();
        assert!(svg.contains("<title>f&amp;g&lt;T&gt; ("));
        assert!(svg.contains(">f&amp;g&lt;T&gt;</text>"));
        assert!(svg.contains(">a &amp; b &lt;c&gt;</text>"));
        assert!(!svg.contains("f&g"));
        // The long name's box is 1/11 of 1180 px: the label is cut with "..".
        assert!(svg.contains(">a_very_long_f..</text>"), "{svg}");
        // Every '<' in the document opens a tag.
        for part in svg.split('<').skip(1) {
            assert!(
                part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/'),
                "{part}"
            );
        }
        resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).unwrap();
    }

    #[test]
    fn the_same_stacks_give_the_same_bytes_in_any_order() {
        let a = render("t", &folded(FIXTURE), 3).unwrap();
        let mut rev = folded(FIXTURE);
        rev.reverse();
        assert_eq!(a, render("t", &rev, 3).unwrap());
        assert!(resvg::usvg::Tree::from_str(&a, &resvg::usvg::Options::default()).is_ok());
    }

    #[test]
    fn no_samples_no_graph() {
        assert_eq!(render("t", &[], 0), None);
        assert_eq!(render("t", &folded("a;b 0\n"), 0), None);
    }
}
