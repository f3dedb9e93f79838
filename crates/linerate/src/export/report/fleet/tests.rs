//! The fleet page from a fixture record: cells, links, the worst pairs' order, escaping, a
//! failed pair, a pair that never ran, the legend.

use super::*;
use crate::export::fixtures;
use crate::export::report::{build, Input};
use crate::fleet::record::{HostSummary, InterferenceCheck, PairFigures, SCHEMA_VERSION};

const EVIL: &str = "<script>alert(1)</script>&\"x\"";

/// 4 agents, 12 planned pairs: 10 ran (throughput 10..100 Mbit/s, set per pair), one failed
/// (its reason holds markup), one never ran; host #2's name is markup.
pub(crate) fn fixture() -> FleetInput {
    let agents: Vec<String> = (0..4).map(|i| format!("198.18.0.{}:5301", i + 1)).collect();
    let mut pairs = Vec::new();
    let mut runs = BTreeMap::new();
    for (r, round) in crate::fleet::plan::rounds(4).iter().enumerate() {
        for p in round {
            let n = pairs.len() as i64;
            let run_id = 100 + n;
            pairs.push(PairResult {
                source: agents[p.source].clone(),
                destination: agents[p.destination].clone(),
                round: r + 1,
                beside: round.len() - 1,
                status: PairStatus::Ok,
                error: None,
                run_id,
                started_at: None,
                figures: PairFigures {
                    // Distinct, not in run order: 7 * n mod 12 spreads them.
                    throughput_bps: Some(10e6 * (1 + (7 * n) % 12) as f64),
                    retransmits: Some(n as u64),
                    ..PairFigures::default()
                },
            });
            runs.insert(run_id, fixtures::tcp_send());
        }
    }
    // One failed (no record), one that never ran.
    pairs[3].status = PairStatus::Failed;
    pairs[3].error = Some(format!("cannot reach the agent: {EVIL}"));
    pairs[3].figures = PairFigures::default();
    runs.remove(&pairs[3].run_id);
    let gone = pairs.remove(7);
    runs.remove(&gone.run_id);
    let interference = vec![InterferenceCheck::judge(
        &pairs[0],
        &PairFigures {
            interval_samples: vec![1e6, 1.1e6, 0.9e6],
            ..PairFigures::default()
        },
        Some(200),
    )];
    runs.insert(200, fixtures::tcp_send());
    let record = FleetRecord {
        schema_version: SCHEMA_VERSION,
        tool_version: "linerate 0".into(),
        name: "rack7".into(),
        test: vec!["tcp".into(), "-t".into(), "10".into()],
        agents: agents.clone(),
        rounds: 6,
        planned_pairs: 12,
        pairs,
        interference,
        hosts: agents
            .iter()
            .enumerate()
            .map(|(i, a)| HostSummary {
                agent: a.clone(),
                hostname: Some(if i == 1 {
                    EVIL.into()
                } else {
                    format!("node{i}")
                }),
                pairs_ok: 0,
                pairs_failed: 0,
                min_out: None,
                min_in: None,
            })
            .collect(),
        started_at: Some("2026-11-26T12:00:00Z".into()),
        ended_at: Some("2026-11-26T12:01:00Z".into()),
    };
    let (s, d) = (
        record.pairs[0].source.clone(),
        record.pairs[0].destination.clone(),
    );
    let alone = vec![(200, s, d)];
    FleetInput {
        source: "fleet rack7 in results.db".into(),
        detailed: detailed_runs(&record, &alone),
        record,
        runs,
        alone,
    }
}

/// The first heat map's table.
fn first_map(html: &str) -> &str {
    let start = html.find("<table class=\"heat\">").unwrap();
    let end = start + html[start..].find("</table>").unwrap();
    &html[start..end]
}

#[test]
fn every_cell_links_to_its_run_and_shows_its_figure() {
    let input = fixture();
    let html = build(&Input::Fleet(Box::new(input.clone()))).html;
    let map = first_map(&html);
    for p in &input.record.pairs {
        let link = format!("<a href=\"#run-{}\">", p.run_id);
        assert!(map.contains(&link), "no cell links run {}", p.run_id);
        // Every link lands on a section of the page.
        assert!(html.contains(&format!("<h2 id=\"run-{}\">", p.run_id)));
        if let Some(b) = p.figures.throughput_bps {
            let cell = format!("{link}{}</a>", esc(&format_metric("throughput_bps", b)));
            assert!(map.contains(&cell), "{cell} not in the map");
        }
    }
    // The header and 4 rows of 4 cells, the diagonal empty.
    assert_eq!(map.matches("<tr><th>").count(), 5);
    assert_eq!(map.matches("<td").count(), 16);
    assert_eq!(map.matches("class=\"self\"").count(), 4);
    assert_eq!(map.matches("not run").count(), 1);
    // The alone run of the interference check has its section, and nothing links outside.
    assert!(html.contains("<h2 id=\"run-200\">"));
    for href in html.split("href=\"").skip(1) {
        assert!(
            href.starts_with("#run-"),
            "a link out of the page: {href:.40}"
        );
    }
    // A second map: the retransmits.
    assert!(html.contains("id=\"map-retransmits\""));
    assert!(!html.contains("id=\"map-p99\""));
}

#[test]
fn a_failed_pair_shows_its_reason_not_a_zero() {
    let input = fixture();
    let html = build(&Input::Fleet(Box::new(input.clone()))).html;
    let failed = &input.record.pairs[3];
    let map = first_map(&html);
    let cell_start = map.find("<td class=\"failed\"").expect("a failed cell");
    let cell = &map[cell_start..cell_start + map[cell_start..].find("</td>").unwrap()];
    assert!(
        cell.contains(&format!("href=\"#run-{}\"", failed.run_id)),
        "{cell}"
    );
    assert!(cell.contains("failed: cannot reach the agent"), "{cell}");
    assert!(!cell.contains("bit/s") && !cell.contains(">0<"), "{cell}");
    assert!(html.contains("<h2>Failed pairs</h2>"));
}

#[test]
fn strings_from_the_network_are_escaped() {
    let html = build(&Input::Fleet(Box::new(fixture()))).html;
    assert!(!html.contains("<script"), "raw markup in the page");
    assert!(!html.contains("\"x\""), "a raw quote from the network");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;"));
}

#[test]
fn worst_pairs_are_listed_lowest_first() {
    let input = fixture();
    let html = build(&Input::Fleet(Box::new(input.clone()))).html;
    let start = html.find("<ol class=\"worst\">").unwrap();
    let list = &html[start..start + html[start..].find("</ol>").unwrap()];
    let ids: Vec<i64> = list
        .split("href=\"#run-")
        .skip(1)
        .map(|t| t.split('"').next().unwrap().parse().unwrap())
        .collect();
    let mut want: Vec<&PairResult> = input
        .record
        .pairs
        .iter()
        .filter(|p| p.figures.throughput_bps.is_some())
        .collect();
    want.sort_by(|a, b| {
        a.figures
            .throughput_bps
            .unwrap()
            .total_cmp(&b.figures.throughput_bps.unwrap())
    });
    let want: Vec<i64> = want.iter().take(WORST_LISTED).map(|p| p.run_id).collect();
    assert_eq!(ids, want);
}

#[test]
fn the_scale_spans_the_runs_own_range() {
    let input = fixture();
    let html = build(&Input::Fleet(Box::new(input.clone()))).html;
    let vals: Vec<f64> = input
        .record
        .pairs
        .iter()
        .filter_map(|p| p.figures.throughput_bps)
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let legend_start = html.find("<p class=\"legend\">").unwrap();
    let legend = &html[legend_start..legend_start + html[legend_start..].find("</p>").unwrap()];
    let (dark, _) = colour(0.0);
    let (light, _) = colour(1.0);
    assert!(
        legend.contains(&format!(
            "background:{dark};color:#fff\">{}",
            format_metric("throughput_bps", lo)
        )),
        "{legend}"
    );
    assert!(
        legend.contains(&format!(
            "background:{light};color:#000\">{}",
            format_metric("throughput_bps", hi)
        )),
        "{legend}"
    );
    // The lowest pair's cell is the darkest, the highest the lightest.
    let map = first_map(&html);
    let cell = |v: f64| format!("background:{}", colour(position(v, lo, hi, true)).0);
    assert_eq!(cell(lo), format!("background:{dark}"));
    assert!(map.contains(&cell(lo)) && map.contains(&cell(hi)));
    // Retransmits: lower is better, so the most retransmits is the darkest.
    assert_eq!(position(9.0, 0.0, 9.0, false), 0.0);
    // All equal: one key, no division by zero.
    assert_eq!(position(5.0, 5.0, 5.0, true), 1.0);
}

#[test]
fn an_rr_mesh_maps_transactions_and_p99() {
    let mut input = fixture();
    for p in &mut input.record.pairs {
        if p.status == PairStatus::Ok {
            p.figures = PairFigures {
                transactions_per_sec: Some(10_000.0 + p.run_id as f64),
                rr_p99_ns: Some(80_000.0),
                ..PairFigures::default()
            };
        }
    }
    let html = build(&Input::Fleet(Box::new(input))).html;
    assert!(html.contains("id=\"map-transactions\""));
    assert!(html.contains("id=\"map-p99\""));
    assert!(!html.contains("id=\"map-throughput\""));
    assert!(!html.contains("id=\"map-retransmits\""));
}

#[test]
fn a_200_agent_fleet_page_is_bounded_and_links_its_detail() {
    // 200 agents, 39,800 pairs: every 7th failed with a reason as long as an agent may
    // send (1,024 characters), the rest with throughput and retransmits.
    const N: usize = 200;
    let agents: Vec<String> = (0..N)
        .map(|i| format!("198.18.{}.{}:5301", i / 250, i % 250 + 1))
        .collect();
    let long = format!("cannot reach the agent: {}", "x".repeat(1000));
    let mut pairs = Vec::new();
    for (r, round) in crate::fleet::plan::rounds(N).iter().enumerate() {
        for p in round {
            let n = pairs.len();
            let failed = n % 7 == 3;
            pairs.push(PairResult {
                source: agents[p.source].clone(),
                destination: agents[p.destination].clone(),
                round: r + 1,
                beside: round.len() - 1,
                status: if failed {
                    PairStatus::Failed
                } else {
                    PairStatus::Ok
                },
                error: failed.then(|| long.clone()),
                run_id: 1000 + n as i64,
                started_at: None,
                figures: if failed {
                    PairFigures::default()
                } else {
                    PairFigures {
                        throughput_bps: Some(9.4e9 - n as f64 * 1e4),
                        retransmits: Some(n as u64 % 97),
                        ..PairFigures::default()
                    }
                },
            });
        }
    }
    assert_eq!(pairs.len(), N * (N - 1));
    let mut input = fixture();
    input.record.agents = agents;
    input.record.pairs = pairs;
    input.record.hosts.clear();
    input.record.interference.clear();
    input.alone.clear();
    input.detailed = detailed_runs(&input.record, &input.alone);
    assert!(input.detailed.len() <= MAX_DETAILED_RUNS);
    input.runs = input
        .detailed
        .iter()
        .map(|&id| (id, fixtures::tcp_send()))
        .collect();
    let started = std::time::Instant::now();
    let html = build(&Input::Fleet(Box::new(input.clone()))).html;
    let took = started.elapsed();
    assert!(html.len() < 20 << 20, "{} bytes", html.len());
    // A section for each detailed run only, and every link lands on one of them.
    assert_eq!(html.matches("<h2 id=\"run-").count(), input.detailed.len());
    for href in html.split("href=\"#run-").skip(1) {
        let id: i64 = href[..href.find('"').unwrap()].parse().unwrap();
        assert!(
            input.detailed.contains(&id),
            "a link to run {id}, which has no section"
        );
    }
    // The others name their run, and the page says how to see it.
    assert!(html.contains("<span title=\"run 1001\">"));
    assert!(html.contains("`linerate report ID` shows it"));
    // The failed list is cut, and says how many more there are.
    let failed = input.record.failed().count();
    assert!(html.contains(&format!("{} more failed pairs", failed - MAX_FAILED_LISTED)));
    // No walk of every pair for every cell (1.6e9 comparisons a map, minutes): the page's
    // bound in docs/ARCHITECTURE.md is 10 s, a debug build's own.
    eprintln!(
        "{} pairs: a page of {} bytes in {took:?}",
        input.record.pairs.len(),
        html.len()
    );
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}
