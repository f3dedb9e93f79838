//! The summary block: first on every kind of page, its figures the records' own, a figure
//! not measured shown as "-" (never 0), and capped so that it fits the first screen.
//! (tests/it/report.rs checks the same pages in Chromium at 1280x800.)

use super::super::tests::sweep_fixture;
use super::super::{build, Input, RunInput};
use super::{MAX_LINES, MAX_ROWS};
use crate::export::fixtures;
use crate::model::campaign::{CampaignRecord, CampaignSweep, CAMPAIGN_SCHEMA_VERSION};
use crate::model::RunRecord;

fn input(label: &str, runs: Vec<RunRecord>) -> RunInput {
    RunInput {
        label: label.into(),
        file: format!("{label}.json"),
        runs,
        metrics: Vec::new(),
    }
}

/// The summary section of a page.
fn block(html: &str) -> &str {
    let start = html.find("<section id=\"summary\">").expect("no summary");
    let end = start + html[start..].find("</section>").unwrap();
    &html[start..end]
}

/// (metric, value, text) of every figure cell of the summary.
fn cells(html: &str) -> Vec<(String, f64, String)> {
    block(html)
        .split("<td data-metric=\"")
        .skip(1)
        .map(|c| {
            let (metric, rest) = c.split_once("\" data-value=\"").unwrap();
            let (value, rest) = rest.split_once("\">").unwrap();
            let text = rest.split("</td>").next().unwrap();
            (metric.to_string(), value.parse().unwrap(), text.to_string())
        })
        .collect()
}

fn campaign() -> CampaignRecord {
    let sweep = |name: &str| CampaignSweep {
        name: name.into(),
        row: None,
        column: None,
        record: sweep_fixture(),
    };
    CampaignRecord {
        schema_version: CAMPAIGN_SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".into(),
        name: "c".into(),
        file: "c.toml".into(),
        sweeps: vec![sweep("tcp"), sweep("udp")],
        table: None,
    }
}

/// Every kind of page, as `report` builds it.
fn every_kind() -> Vec<(&'static str, Input)> {
    let rfc = |l: &str| {
        (
            l.to_string(),
            format!("{l}.json"),
            crate::rfc2544::tests::fixture(
                true,
                vec![crate::rfc2544::record::Benchmark::Throughput],
            ),
        )
    };
    vec![
        (
            "tcp",
            Input::Runs(vec![input("A", vec![fixtures::tcp_send()])]),
        ),
        (
            "rr",
            Input::Runs(vec![input("A", vec![fixtures::tcp_rr()])]),
        ),
        (
            "compared",
            Input::Runs(vec![
                input("A", vec![fixtures::tcp_send()]),
                input("B", vec![fixtures::tcp_send()]),
            ]),
        ),
        ("rfc2544", Input::Rfc2544(vec![rfc("A")])),
        ("rfc2544 compared", Input::Rfc2544(vec![rfc("A"), rfc("B")])),
        ("sweep", Input::Sweep("s.json".into(), sweep_fixture())),
        ("campaign", Input::Campaign("c.json".into(), campaign())),
    ]
}

#[test]
fn every_page_opens_with_its_summary_then_charts_then_tables() {
    for (kind, inp) in every_kind() {
        let html = build(&inp).html;
        let body = &html[html.find("<body>").unwrap()..];
        let at = body.find("<section id=\"summary\">").expect(kind);
        let after = at + block(body).len();
        for first in ["<figure", "<pre>", "<h2>Comparison", "<h3>"] {
            if let Some(i) = body.find(first) {
                assert!(i > after, "{kind}: {first} before the summary");
            }
        }
        assert_eq!(body[..at].matches("<h2").count(), 0, "{kind}");
        assert!(
            !cells(&html).is_empty(),
            "{kind}: no figures in the summary"
        );
        // The charts come before the tables of the results.
        if let (Some(f), Some(p)) = (body.find("<figure"), body.find("<pre>")) {
            assert!(
                f < p || kind.starts_with("campaign") || kind.starts_with("rfc2544 compared"),
                "{kind}: a table before the charts"
            );
        }
    }
}

#[test]
fn the_summary_figures_are_the_records_own() {
    let rec = fixtures::tcp_send();
    let html = build(&Input::Runs(vec![input("A", vec![rec.clone()])])).html;
    let got = cells(&html);
    let flow = &rec.summary.flows[0];
    let server = rec.summary.server.as_ref();
    let want = [
        ("throughput_bps", flow.receiver_bps),
        ("client_cpu_percent", rec.summary.client.cpu_util_percent),
        (
            "client_service_demand_us_per_kb",
            rec.summary.client.service_demand_us_per_kb,
        ),
        (
            "server_cpu_percent",
            server.and_then(|s| s.cpu_util_percent),
        ),
        (
            "server_service_demand_us_per_kb",
            server.and_then(|s| s.service_demand_us_per_kb),
        ),
    ];
    for (metric, value) in want {
        let Some(v) = value else { continue };
        let cell = got
            .iter()
            .find(|c| c.0 == metric)
            .unwrap_or_else(|| panic!("{metric}: {got:?}"));
        assert_eq!(cell.1, v, "{metric}");
        assert_eq!(cell.2, crate::model::units::format_metric(metric, v));
    }
    // The diagnosis, one line a verdict.
    let d = rec.diagnosis.as_ref().expect("the fixture is diagnosed");
    assert!(!d.verdicts.is_empty());
    for v in &d.verdicts {
        assert!(
            block(&html).contains(&format!("{}: ", v.kind.name())),
            "{}",
            v.kind.name()
        );
    }
    // RR: transactions per second and p99 from the record.
    let rr = fixtures::tcp_rr();
    let html = build(&Input::Runs(vec![input("A", vec![rr.clone()])])).html;
    let got = cells(&html);
    let r = rr.rr.as_ref().unwrap();
    let find = |m: &str| got.iter().find(|c| c.0 == m).map(|c| c.1);
    assert_eq!(find("transactions_per_sec"), r.transactions_per_sec);
    assert_eq!(
        find("latency_p99_ns"),
        r.latency.as_ref().map(|l| l.p99_ns as f64)
    );
}

#[test]
fn a_figure_not_measured_is_a_dash_never_a_zero() {
    let mut a = fixtures::tcp_send();
    let b = fixtures::tcp_send();
    a.summary.client.cpu_util_percent = None;
    let html = build(&Input::Runs(vec![
        input("A", vec![a]),
        input("B", vec![b.clone()]),
    ]))
    .html;
    let cpus: Vec<f64> = cells(&html)
        .into_iter()
        .filter(|c| c.0 == "client_cpu_percent")
        .map(|c| c.1)
        .collect();
    assert_eq!(cpus, [b.summary.client.cpu_util_percent.unwrap()]);
    let row_a = block(&html).split("<tr data-key=\"A\">").nth(1).unwrap();
    assert!(row_a.split("</tr>").next().unwrap().contains("<td>-</td>"));
}

#[test]
fn two_results_put_the_comparisons_verdict_first() {
    let a = fixtures::tcp_send();
    let mut b = fixtures::tcp_send();
    b.summary.flows[0].receiver_bps = b.summary.flows[0].receiver_bps.map(|v| v * 0.8);
    let html = build(&Input::Runs(vec![input("A", vec![a]), input("B", vec![b])])).html;
    let s = block(&html);
    let verdict = s
        .find("<p class=\"verdict\">B: ")
        .expect("the comparison's verdict");
    assert!(s[verdict..].contains("20.0% lower throughput"));
    assert!(verdict < s.find("<table").unwrap());
}

#[test]
fn many_results_and_warnings_are_capped_and_counted() {
    let inputs: Vec<RunInput> = (0..MAX_ROWS + 4)
        .map(|i| {
            let mut r = fixtures::tcp_send();
            r.warnings = vec![format!("warning of run {i}")];
            input(&format!("R{i}"), vec![r])
        })
        .collect();
    let html = build(&Input::Runs(inputs)).html;
    let s = block(&html);
    assert_eq!(s.matches("<tr data-key=").count(), MAX_ROWS);
    assert!(s.contains("4 more results in the sections below"), "{s}");
    assert_eq!(s.matches("<li").count(), MAX_LINES, "{s}");
    assert!(s.contains("more verdicts and warnings in the sections below"));
}

#[test]
fn rfc2544_sweep_and_campaign_summaries_carry_their_answers() {
    let rec =
        crate::rfc2544::tests::fixture(true, vec![crate::rfc2544::record::Benchmark::Throughput]);
    let html = build(&Input::Rfc2544(vec![(
        "A".into(),
        "a.json".into(),
        rec.clone(),
    )]))
    .html;
    let got = cells(&html);
    for f in &rec.frame_sizes {
        let Some(fps) = f
            .throughput
            .as_ref()
            .and_then(|t| t.goals[0].throughput_fps)
        else {
            continue;
        };
        let name = crate::rfc2544::compare::metric_name(f.frame_size, 0.0);
        assert!(
            got.iter().any(|c| c.0 == name && c.1 == fps),
            "{name}: {got:?}"
        );
    }
    let sweep = sweep_fixture();
    let best = sweep.best.clone().unwrap();
    let html = build(&Input::Sweep("s.json".into(), sweep)).html;
    assert!(cells(&html)
        .iter()
        .any(|c| c.0 == best.metric && c.1 == best.mean));
    assert!(block(&html).contains(&crate::export::chart::esc(&best.sentence)));
    let html = build(&Input::Campaign("c.json".into(), campaign())).html;
    let bests = cells(&html).iter().filter(|c| c.1 == best.mean).count();
    assert!(bests >= 2, "each sweep's best point");
}

#[cfg(feature = "fleet")]
#[test]
fn a_fleet_page_opens_with_its_worst_pairs() {
    let f = super::super::fleet::tests::fixture();
    let html = build(&Input::Fleet(Box::new(f.clone()))).html;
    let body = &html[html.find("<body>").unwrap()..];
    let at = body.find("<section id=\"summary\">").unwrap();
    assert!(at < body.find("<table class=\"heat\">").unwrap());
    let worst = f.record.worst(super::WORST_PAIRS);
    let rows: Vec<&str> = block(&html).split("<tr data-key=\"").skip(1).collect();
    assert_eq!(rows.len(), worst.len());
    for (row, p) in rows.iter().zip(&worst) {
        assert!(row.starts_with(&format!("{}\"", p.run_id)), "{row}");
        let bps = row
            .split("data-metric=\"throughput_bps\" data-value=\"")
            .nth(1)
            .unwrap();
        let v: f64 = bps.split('"').next().unwrap().parse().unwrap();
        assert_eq!(Some(v), p.figures.throughput_bps);
    }
    assert!(
        block(&html).contains(&format!("1 of {} pairs failed", f.record.pairs.len())),
        "{}",
        block(&html)
    );
}
