//! The report of a fleet run (`linerate report --fleet NAME`): the mesh as heat maps
//! (source x destination; throughput or transactions/s, and retransmits, loss and rr p99
//! when the test gave them), the worst pairs, the failures with their reasons, the
//! interference check, and a section per stored pair (`id="run-ID"`) that its cells link
//! to: every pair's in a fleet of up to [`MAX_DETAILED_RUNS`] runs, else the worst pairs'
//! and the interference check's only, and every other cell names its run (`linerate report
//! ID` shows it). So the page is bounded whatever the fleet's size: a few hundred bytes a
//! pair for the maps and lists (a 200-agent fleet, 39,800 pairs: under 20 MB), and at most
//! [`MAX_DETAILED_RUNS`] run sections.
//!
//! A map's colours span the run's own lowest and highest value of that figure (a legend in
//! the figure's units says which is which); the darkest cell is the worst one. A pair that
//! failed shows its reason, a pair that never ran says so: neither is a 0. Every string
//! (agent names, host names, error texts: they come from the network and DNS) is escaped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use super::{run_details, Page};
use crate::export::chart::esc;
use crate::fleet::record::{FleetRecord, PairResult, PairStatus};
use crate::model::units::format_metric;
use crate::model::RunRecord;

/// How many of the worst pairs the page lists.
pub const WORST_LISTED: usize = 5;
/// Most run sections a page holds: a fleet with more runs gets sections for its worst
/// pairs and its interference check only.
pub const MAX_DETAILED_RUNS: usize = 64;
/// Most failed pairs the page lists with their reasons (the maps show every one).
pub const MAX_FAILED_LISTED: usize = 200;

/// The heat maps' styles, added to the page's.
pub const CSS: &str = "table.heat td{text-align:right;white-space:nowrap}table.heat td a{color:inherit}\
td.failed{background:#fde0dd;color:#7a0010;white-space:normal;max-width:14rem}td.none{color:#777}td.self{background:#eee}\
.key{display:inline-block;padding:0 .4rem;margin-right:.2rem}";

/// A fleet run to report: its record and the stored runs its pairs name.
#[derive(Debug, Clone)]
pub struct FleetInput {
    /// Where it came from ("fleet rack-7 in results.db").
    pub source: String,
    /// The run's record (`FleetRecord::from_runs` of the stored pairs).
    pub record: FleetRecord,
    /// The stored records of the runs in [`FleetInput::detailed`] that ran, by run id.
    pub runs: BTreeMap<i64, RunRecord>,
    /// The interference check's alone runs: run id, source, destination.
    pub alone: Vec<(i64, String, String)>,
    /// The runs the page has a section for ([`detailed_runs`]); the others' cells name
    /// their run.
    pub detailed: BTreeSet<i64>,
}

/// The runs a page of `rec` has a section for: all of them (its pairs' and the `alone`
/// re-runs') when they are at most [`MAX_DETAILED_RUNS`], else the worst pairs' and the
/// interference check's.
pub fn detailed_runs(rec: &FleetRecord, alone: &[(i64, String, String)]) -> BTreeSet<i64> {
    let all = rec
        .pairs
        .iter()
        .map(|p| p.run_id)
        .chain(alone.iter().map(|a| a.0));
    if rec.pairs.len() + alone.len() <= MAX_DETAILED_RUNS {
        return all.collect();
    }
    let mesh_of = |s: &str, d: &str| {
        rec.pairs
            .iter()
            .find(|p| p.source == s && p.destination == d)
            .map(|p| p.run_id)
    };
    rec.worst(WORST_LISTED)
        .iter()
        .map(|p| p.run_id)
        .chain(
            rec.interference
                .iter()
                .flat_map(|c| [mesh_of(&c.source, &c.destination), c.alone_run_id])
                .flatten(),
        )
        .take(MAX_DETAILED_RUNS)
        .collect()
}

/// One heat map: a figure of each pair.
struct Map {
    id: &'static str,
    title: &'static str,
    /// A metric name whose suffix gives the unit ([`format_metric`]).
    metric: &'static str,
    higher_is_better: bool,
    get: fn(&PairResult) -> Option<f64>,
}

const MAPS: [Map; 5] = [
    Map {
        id: "throughput",
        title: "Throughput at the receiver",
        metric: "throughput_bps",
        higher_is_better: true,
        get: |p| p.figures.throughput_bps,
    },
    Map {
        id: "transactions",
        title: "Transactions per second",
        metric: "transactions_per_sec",
        higher_is_better: true,
        get: |p| p.figures.transactions_per_sec,
    },
    Map {
        id: "retransmits",
        title: "TCP retransmissions of the sender",
        metric: "retransmits",
        higher_is_better: false,
        get: |p| p.figures.retransmits.map(|r| r as f64),
    },
    Map {
        id: "loss",
        title: "Loss",
        metric: "loss_percent",
        higher_is_better: false,
        get: |p| p.figures.loss_percent,
    },
    Map {
        id: "p99",
        title: "rr latency, 99th percentile",
        metric: "rr_p99_ns",
        higher_is_better: false,
        get: |p| p.figures.rr_p99_ns,
    },
];

/// A figure in its units; counts as whole numbers.
fn value_text(metric: &str, v: f64) -> String {
    if metric == "retransmits" {
        format!("{v:.0}")
    } else {
        format_metric(metric, v)
    }
}

/// Viridis, worst (dark) to best (light).
const STOPS: [(u8, u8, u8); 5] = [
    (0x44, 0x01, 0x54),
    (0x3b, 0x52, 0x8b),
    (0x21, 0x91, 0x8c),
    (0x5e, 0xc9, 0x62),
    (0xfd, 0xe7, 0x25),
];

/// The colour of `t` in 0..=1 (0: worst), and the text colour that reads on it.
pub fn colour(t: f64) -> (String, &'static str) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let bg = format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    );
    (bg, if t < 0.6 { "#fff" } else { "#000" })
}

/// Where `v` sits between the worst and the best value of the run (0: worst, 1: best); all
/// equal: 1.
fn position(v: f64, lo: f64, hi: f64, higher_is_better: bool) -> f64 {
    if hi <= lo {
        return 1.0;
    }
    let t = (v - lo) / (hi - lo);
    if higher_is_better {
        t
    } else {
        1.0 - t
    }
}

fn clip(s: &str, n: usize) -> String {
    linerate_wire::text::clip(s, n)
}

/// The agent's label in headings: `#i HOST:PORT (hostname)`.
fn agent_label(rec: &FleetRecord, i: usize) -> String {
    let a = &rec.agents[i];
    match rec
        .hosts
        .iter()
        .find(|h| &h.agent == a)
        .and_then(|h| h.hostname.as_deref())
    {
        Some(h) => format!("#{} {a} ({})", i + 1, clip(h, 64)),
        None => format!("#{} {a}", i + 1),
    }
}

/// `text` linked to the pair's run section when the page has one, else with the run's id
/// in its title.
fn pair_link(p: &PairResult, text: &str, detailed: &BTreeSet<i64>) -> String {
    if detailed.contains(&p.run_id) {
        format!("<a href=\"#run-{}\">{}</a>", p.run_id, esc(text))
    } else {
        format!("<span title=\"run {}\">{}</span>", p.run_id, esc(text))
    }
}

/// One cell of a heat map: empty on the diagonal, the failure's reason (the primary map;
/// the others say only `failed`), or the pair's figure coloured by its place in the run's
/// range `(lo, hi)`, linked to its run.
fn heat_cell(
    h: &mut String,
    pair: Option<&PairResult>,
    (own, primary): (bool, bool),
    m: &Map,
    (lo, hi): (f64, f64),
    detailed: &BTreeSet<i64>,
) {
    match pair {
        _ if own => h.push_str("<td class=\"self\"></td>"),
        None => h.push_str("<td class=\"none\">not run</td>"),
        Some(p) if p.status == PairStatus::Failed && !primary => {
            h.push_str("<td class=\"failed\">failed</td>")
        }
        Some(p) if p.status == PairStatus::Failed => {
            let why = p.error.as_deref().unwrap_or("failed");
            let _ = write!(
                h,
                "<td class=\"failed\" title=\"{}\">{}</td>",
                esc(&clip(why, 200)),
                pair_link(p, &format!("failed: {}", clip(why, 60)), detailed)
            );
        }
        Some(p) => match (m.get)(p).filter(|v| v.is_finite()) {
            Some(v) => {
                let (bg, fg) = colour(position(v, lo, hi, m.higher_is_better));
                let _ = write!(
                    h,
                    "<td style=\"background:{bg};color:{fg}\">{}</td>",
                    pair_link(p, &value_text(m.metric, v), detailed)
                );
            }
            None => {
                let _ = write!(
                    h,
                    "<td class=\"none\">{}</td>",
                    pair_link(p, "not measured", detailed)
                );
            }
        },
    }
}

/// The legend of a heat map: five steps from the worst to the best value of this run.
fn legend(page: &mut Page, m: &Map, lo: f64, hi: f64) {
    let (worst, best) = if m.higher_is_better {
        (lo, hi)
    } else {
        (hi, lo)
    };
    let _ = write!(
        page.html,
        "<p class=\"legend\">Colour scale, this run's own range ({}): ",
        if m.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        }
    );
    let steps = if hi > lo { 5 } else { 1 };
    for k in 0..steps {
        let t = if steps == 1 {
            1.0
        } else {
            k as f64 / (steps - 1) as f64
        };
        let v = worst + (best - worst) * t;
        let (bg, fg) = colour(t);
        let _ = write!(
            page.html,
            "<span class=\"key\" style=\"background:{bg};color:{fg}\">{}</span> ",
            esc(&value_text(m.metric, v))
        );
    }
    page.html.push_str("</p>\n");
}

fn heat_map(page: &mut Page, rec: &FleetRecord, m: &Map, always: bool, detailed: &BTreeSet<i64>) {
    let values: Vec<f64> = rec
        .pairs
        .iter()
        .filter(|p| p.status == PairStatus::Ok)
        .filter_map(m.get)
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() && !always {
        return;
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let _ = writeln!(
        page.html,
        "<h2 id=\"map-{}\">{}</h2>",
        m.id,
        esc(&format!("Mesh: {}", m.title))
    );
    let h = &mut page.html;
    h.push_str("<table class=\"heat\"><thead><tr><th>source \\ destination</th>");
    for i in 0..rec.agents.len() {
        let _ = write!(
            h,
            "<th title=\"{}\">#{}</th>",
            esc(&agent_label(rec, i)),
            i + 1
        );
    }
    h.push_str("</tr></thead><tbody>\n");
    // Each pair found at once, not by a walk of every pair for every cell.
    let index: HashMap<(&str, &str), &PairResult> = rec
        .pairs
        .iter()
        .map(|p| ((p.source.as_str(), p.destination.as_str()), p))
        .collect();
    for (i, s) in rec.agents.iter().enumerate() {
        let _ = write!(h, "<tr><th>{}</th>", esc(&agent_label(rec, i)));
        for d in &rec.agents {
            let pair = index.get(&(s.as_str(), d.as_str())).copied();
            heat_cell(h, pair, (s == d, always), m, (lo, hi), detailed);
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
    if values.is_empty() {
        page.p("warn", "no pair gave this figure");
        return;
    }
    legend(page, m, lo, hi);
}

/// The worst pairs of the run, each linked to its run.
fn worst_pairs(page: &mut Page, rec: &FleetRecord, detailed: &BTreeSet<i64>) {
    let worst = rec.worst(WORST_LISTED);
    if !worst.is_empty() {
        page.h2("Worst pairs");
        page.html.push_str("<ol class=\"worst\">\n");
        for p in worst {
            let v = p.figures.primary().unwrap_or(f64::NAN);
            let metric = if p.figures.throughput_bps.is_some() {
                "throughput_bps"
            } else {
                "transactions_per_sec"
            };
            let _ = writeln!(
                page.html,
                "<li>{} (round {}, {} beside)</li>",
                pair_link(
                    p,
                    &format!(
                        "{} -> {}: {}",
                        p.source,
                        p.destination,
                        value_text(metric, v)
                    ),
                    detailed
                ),
                p.round,
                p.beside
            );
        }
        page.html.push_str("</ol>\n");
    }
}

/// The failed pairs with their reasons, the first [`MAX_FAILED_LISTED`] of them.
fn failed_pairs(page: &mut Page, rec: &FleetRecord, detailed: &BTreeSet<i64>) {
    page.h2("Failed pairs");
    page.html.push_str("<ul class=\"warn\">\n");
    for p in rec.failed().take(MAX_FAILED_LISTED) {
        let _ = writeln!(
            page.html,
            "<li>{}: {}</li>",
            pair_link(
                p,
                &format!("{} -> {} (round {})", p.source, p.destination, p.round),
                detailed
            ),
            esc(&clip(p.error.as_deref().unwrap_or("failed"), 300))
        );
    }
    page.html.push_str("</ul>\n");
    let more = rec.failed().count().saturating_sub(MAX_FAILED_LISTED);
    if more > 0 {
        page.p(
            "warn",
            &format!("{more} more failed pairs: the map shows each one's reason in its cell's title, and `linerate history --tag fleet:{}` lists them", rec.name),
        );
    }
}

/// The interference check's table: each pair run again alone, and its verdict.
fn interference(page: &mut Page, rec: &FleetRecord, rr: bool) {
    page.h2("Interference check");
    page.p(
        "",
        "Pairs run again alone after the mesh: flagged when the mean of the mesh test's intervals lies outside the 95 % prediction interval of the alone test's intervals.",
    );
    let rows: Vec<Vec<String>> = rec
        .interference
        .iter()
        .map(|c| {
            let unit = if rr {
                "transactions_per_sec"
            } else {
                "throughput_bps"
            };
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| value_text(unit, v));
            vec![
                format!("{} -> {}", c.source, c.destination),
                c.round.to_string(),
                c.beside.to_string(),
                f(c.mesh_mean),
                format!("{} .. {}", f(c.alone_ci_low), f(c.alone_ci_high)),
                if c.flagged { "flagged" } else { "no" }.to_string(),
                c.alone_run_id.map_or("-".into(), |i| format!("run {i}")),
                c.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    page.table(
        &[
            "pair",
            "round",
            "beside",
            "mesh mean",
            "alone interval",
            "disturbed",
            "alone run",
            "note",
        ]
        .map(String::from),
        &rows,
    );
}

/// A section per detailed pair's stored run and alone re-run, which the cells link to.
fn run_sections(page: &mut Page, input: &FleetInput) {
    let rec = &input.record;
    let shown = rec.pairs.len() + input.alone.len();
    if input.detailed.len() < shown {
        page.p(
            "",
            &format!(
                "This page has a section for {} of the fleet's {shown} runs (the worst pairs and the interference check's); every other cell names its run in its title, and `linerate report ID` shows it.",
                input.detailed.len()
            ),
        );
    }
    for p in rec
        .pairs
        .iter()
        .filter(|p| input.detailed.contains(&p.run_id))
    {
        let _ = writeln!(
            page.html,
            "<h2 id=\"run-{}\">{}</h2>",
            p.run_id,
            esc(&format!(
                "Round {}: {} -> {} (run {})",
                p.round, p.source, p.destination, p.run_id
            ))
        );
        if let Some(e) = &p.error {
            page.p("warn", &format!("failed: {e}"));
        }
        match input.runs.get(&p.run_id) {
            Some(r) => run_details(page, r),
            None if p.error.is_none() => page.p("warn", "the stored run has no record"),
            None => {}
        }
    }
    for (id, s, d) in &input.alone {
        let Some(r) = input.runs.get(id).filter(|_| input.detailed.contains(id)) else {
            continue;
        };
        let _ = writeln!(
            page.html,
            "<h2 id=\"run-{id}\">{}</h2>",
            esc(&format!("Interference check: {s} -> {d} alone (run {id})"))
        );
        run_details(page, r);
    }
}

/// The page of a fleet run; its title and the line under it.
pub(super) fn page(page: &mut Page, input: &FleetInput) -> (String, String) {
    let rec = &input.record;
    super::summary::fleet(page, rec);
    let ok = rec
        .pairs
        .iter()
        .filter(|p| p.status == PairStatus::Ok)
        .count();
    let failed = rec.failed().count();
    page.p(
        "verdict",
        &format!(
            "{} agents, {} rounds: {ok} of {} ordered pairs ran, {failed} failed, {} not run.",
            rec.agents.len(),
            rec.rounds,
            rec.planned_pairs,
            rec.missing()
        ),
    );
    page.p(
        "",
        "Rows are the source (the agent that ran the test), columns the destination; each cell links to its pair's run below. A failed pair shows why it failed.",
    );
    let rr = rec
        .pairs
        .iter()
        .any(|p| p.figures.transactions_per_sec.is_some());
    for (i, m) in MAPS.iter().enumerate() {
        // The primary map always (a mesh of failures still shows them), the others when
        // any pair gave their figure.
        let primary = (i == 0 && !rr) || (i == 1 && rr);
        if i < 2 && !primary {
            continue;
        }
        heat_map(page, rec, m, primary, &input.detailed);
    }
    worst_pairs(page, rec, &input.detailed);
    if failed > 0 {
        failed_pairs(page, rec, &input.detailed);
    }
    if !rec.interference.is_empty() {
        interference(page, rec, rr);
    }
    run_sections(page, input);
    let title = format!("linerate fleet {}: {}", rec.name, rec.test.join(" "));
    let meta = format!(
        "{}; {}, {} to {}",
        input.source,
        rec.tool_version,
        rec.started_at.as_deref().unwrap_or("-"),
        rec.ended_at.as_deref().unwrap_or("-")
    );
    (title, meta)
}

#[cfg(test)]
pub(super) mod tests;
