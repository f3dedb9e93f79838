//! `linerate report`: one self-contained HTML page of results (a run, several runs, a
//! repeated run, a sweep, a campaign or RFC 2544 runs), with its charts inline as SVG.
//!
//! The page needs nothing from a network: no scripts, no external fonts, styles or images,
//! and a Content-Security-Policy that forbids fetching anything. A small inline stylesheet
//! lets it read on a phone (charts scale to the width) and in print. Every chart plots the
//! record's own numbers (`charts`, drawn by `export::chart`), the text blocks are the same
//! renderings the other commands print (table, compare, sweep, campaign, RFC 2544), and the
//! page is a pure function of its input: no generation time, stable order, fixed float
//! formatting, so the same input gives the same bytes.

pub mod charts;
#[cfg(feature = "fleet")]
pub mod fleet;
pub mod summary;

use std::fmt::Write as _;

use serde_json::Value;

use crate::export::chart::{self, color, esc, Chart, Point, Series, XAxis};
use crate::model::campaign::CampaignRecord;
use crate::model::compare::{
    compare, compare_figures, CompareReport, FigureInput, Input as CompareInput,
};
use crate::model::diagnosis::{confidence_name, place, Diagnosis};
use crate::model::sweep::SweepRecord;
use crate::model::units::format_metric;
use crate::model::{MetricSummary, RunRecord};
use crate::rfc2544::record::Rfc2544Record;
use charts::Labelled;

/// Most runs of one input whose intervals are charted (a long `--repeat` would bury the
/// lines); the page says when more were left out.
pub const MAX_CHARTED_RUNS: usize = 8;

/// One input of stream or RR runs: a single run or a repeated one.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// "A", "B", ...
    pub label: String,
    /// Where it came from (a file name or "run 12").
    pub file: String,
    /// Its runs.
    pub runs: Vec<RunRecord>,
    /// The statistics of a repeated run (empty for a single run).
    pub metrics: Vec<MetricSummary>,
}

/// What a report is made of.
#[derive(Debug, Clone)]
pub enum Input {
    /// One or more stream or RR inputs; two or more are compared with the first.
    Runs(Vec<RunInput>),
    /// One or more RFC 2544 runs: (label, file, record).
    Rfc2544(Vec<(String, String, Rfc2544Record)>),
    /// A sweep (`linerate sweep --json`, or a stored sweep).
    Sweep(String, SweepRecord),
    /// A campaign (`linerate campaign --json`).
    Campaign(String, CampaignRecord),
    /// A fleet run (`linerate report --fleet NAME`): the mesh as heat maps.
    #[cfg(feature = "fleet")]
    Fleet(Box<fleet::FleetInput>),
}

/// The page and its charts (for `--chart-dir`).
pub struct Report {
    /// The HTML document.
    pub html: String,
    /// Every chart on the page, in page order.
    pub charts: Vec<Chart>,
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:64rem;padding:0 1rem 2rem;color:#111;line-height:1.4}\
h1{font-size:1.5rem}h2{font-size:1.25rem;border-bottom:1px solid #ccc;margin-top:2rem}h3{font-size:1.05rem}\
.meta{color:#555}figure{margin:1rem 0}svg{max-width:100%;height:auto}\
pre{overflow-x:auto;background:#f6f6f6;padding:.5rem;font-size:.8rem}\
table{border-collapse:collapse;font-size:.85rem;display:block;overflow-x:auto}\
td,th{border:1px solid #ddd;padding:.2rem .4rem;text-align:left;vertical-align:top}\
.verdict{font-weight:bold}.warn{color:#8a4b00}\
@media print{body{max-width:none}h2{break-after:avoid}figure,pre,table{break-inside:avoid}pre{white-space:pre-wrap}}";

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";

/// The page as it is built: HTML and the charts placed in it.
struct Page {
    html: String,
    charts: Vec<Chart>,
}

impl Page {
    fn h2(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h2>{}</h2>", esc(text));
    }
    fn h3(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h3>{}</h3>", esc(text));
    }
    fn p(&mut self, class: &str, text: &str) {
        if class.is_empty() {
            let _ = writeln!(self.html, "<p>{}</p>", esc(text));
        } else {
            let _ = writeln!(self.html, r#"<p class="{class}">{}</p>"#, esc(text));
        }
    }
    fn pre(&mut self, text: &str) {
        let _ = writeln!(self.html, "<pre>{}</pre>", esc(text.trim_end()));
    }
    fn list(&mut self, class: &str, items: &[String]) {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(self.html, r#"<ul class="{class}">"#);
        for i in items {
            let _ = writeln!(self.html, "<li>{}</li>", esc(i));
        }
        self.html.push_str("</ul>\n");
    }
    fn table(&mut self, head: &[String], rows: &[Vec<String>]) {
        if rows.is_empty() {
            return;
        }
        self.html.push_str("<table><thead><tr>");
        for h in head {
            let _ = write!(self.html, "<th>{}</th>", esc(h));
        }
        self.html.push_str("</tr></thead><tbody>\n");
        for r in rows {
            self.html.push_str("<tr>");
            for c in r {
                let _ = write!(self.html, "<td>{}</td>", esc(c));
            }
            self.html.push_str("</tr>\n");
        }
        self.html.push_str("</tbody></table>\n");
    }
    fn chart(&mut self, c: Chart) {
        let _ = writeln!(
            self.html,
            r#"<figure class="chart" id="chart-{}">"#,
            esc(&c.id)
        );
        self.html.push_str(&chart::render_svg(&c));
        self.html.push_str("</figure>\n");
        self.charts.push(c);
    }
    fn charts(&mut self, cs: Vec<Chart>) {
        for c in cs {
            self.chart(c);
        }
    }
    /// The flame graph of a profile with call chains (`export::flamegraph`), under a
    /// heading; nothing for a profile without stacks.
    fn flame_graph(&mut self, end: &str, p: &linerate_wire::profile::ProfileReport) {
        let Some(svg) = crate::export::flamegraph::of_profile(end, p) else {
            return;
        };
        self.h3(&format!("Flame graph of the {end}"));
        self.html.push_str("<figure class=\"flamegraph\">");
        self.html.push_str(&svg);
        self.html.push_str("</figure>\n");
    }
}

/// Builds the report of `input` (see the module docs).
pub fn build(input: &Input) -> Report {
    let mut page = Page {
        html: String::new(),
        charts: Vec::new(),
    };
    let css = match input {
        #[cfg(feature = "fleet")]
        Input::Fleet(_) => format!("{CSS}{}{}", summary::CSS, fleet::CSS),
        _ => format!("{CSS}{}", summary::CSS),
    };
    let (title, meta) = match input {
        Input::Runs(inputs) => {
            runs_page(&mut page, inputs);
            runs_title(inputs)
        }
        Input::Rfc2544(recs) => {
            rfc2544_page(&mut page, recs);
            rfc2544_title(recs)
        }
        Input::Sweep(file, rec) => {
            summary::sweep(&mut page, rec);
            sweep_section(&mut page, "", rec);
            (
                format!("linerate sweep: {}", rec.test.join(" ")),
                format!("{file}; {}, started {}", rec.tool_version, rec.started_at),
            )
        }
        Input::Campaign(file, rec) => {
            campaign_page(&mut page, rec);
            (
                format!("linerate campaign {}", rec.name),
                format!("{file}; {}", rec.tool_version),
            )
        }
        #[cfg(feature = "fleet")]
        Input::Fleet(f) => fleet::page(&mut page, f),
    };
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <title>{}</title>\n<style>{css}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"meta\">{}</p>\n",
        esc(&title),
        esc(&title),
        esc(&meta)
    );
    html.push_str(&page.html);
    html.push_str("</body>\n</html>\n");
    Report {
        html,
        charts: page.charts,
    }
}

fn runs_title(inputs: &[RunInput]) -> (String, String) {
    let first = inputs.first().and_then(|i| i.runs.first());
    let what = first.map_or("linerate results".to_string(), |r| {
        let test = match &r.rr {
            Some(rr) => rr.kind.netperf_name().to_string(),
            None => format!("{:?}", r.plan.transport).to_lowercase(),
        };
        format!("linerate {test} with {}", r.plan.server)
    });
    let title = if inputs.len() > 1 {
        format!("{what}: {} results compared", inputs.len())
    } else {
        what
    };
    let meta = inputs
        .iter()
        .map(|i| {
            let start = i.runs.first().map_or("", |r| r.started_at.as_str());
            let tool = i.runs.first().map_or("", |r| r.tool_version.as_str());
            let n = i.runs.len();
            let runs = if n == 1 {
                "1 run".to_string()
            } else {
                format!("{n} runs")
            };
            format!("{}: {} ({runs}; {tool}, started {start})", i.label, i.file)
        })
        .collect::<Vec<_>>()
        .join("; ");
    (title, meta)
}

/// The runs whose intervals are charted, labelled for the legend.
fn labelled(inputs: &[RunInput]) -> (Vec<Labelled<'_>>, bool) {
    let mut out = Vec::new();
    let mut cut = false;
    for i in inputs {
        let many = i.runs.len() > 1;
        cut |= i.runs.len() > MAX_CHARTED_RUNS;
        for (n, rec) in i.runs.iter().take(MAX_CHARTED_RUNS).enumerate() {
            let label = match (inputs.len() > 1, many) {
                (false, false) => String::new(),
                (false, true) => format!("run {}", n + 1),
                (true, false) => i.label.clone(),
                (true, true) => format!("{} run {}", i.label, n + 1),
            };
            out.push(Labelled { label, rec });
        }
    }
    (out, cut)
}

/// The comparison of two or more inputs with the first.
fn runs_comparison(inputs: &[RunInput]) -> Option<CompareReport> {
    if inputs.len() < 2 {
        return None;
    }
    let cmp: Vec<CompareInput> = inputs
        .iter()
        .map(|i| CompareInput {
            label: i.label.clone(),
            file: i.file.clone(),
            runs: i.runs.clone(),
        })
        .collect();
    compare(&cmp)
}

/// The comparison's verdicts, warnings and table, after the charts.
fn comparison_section(page: &mut Page, report: &CompareReport, counts: &[(String, String, usize)]) {
    page.h2("Comparison");
    for c in &report.comparisons {
        page.p("verdict", &c.sentence);
        page.list("warn", &c.warnings);
    }
    page.pre(&crate::export::compare::render(report, counts));
}

fn runs_page(page: &mut Page, inputs: &[RunInput]) {
    let cmp = runs_comparison(inputs);
    summary::runs(page, inputs, cmp.as_ref());
    if let Some((chart, changes)) = charts::series(inputs) {
        page.h2("Series");
        page.p(
            "",
            &format!(
                "The inputs in the order given as one series (stored runs by id, oldest first). Change points: {}.",
                crate::model::changes::method()
            ),
        );
        page.list("warn", &changes);
        page.chart(chart);
    }
    let (runs, cut) = labelled(inputs);
    let series = charts::time_series(&runs);
    let latency = charts::latency(&runs);
    if !series.is_empty() || !latency.is_empty() {
        page.h2("Charts");
        page.p(
            "",
            "Intervals are per end, all streams together: the record keeps per-stream figures for the whole test (the stream tables below). Solid lines are the client, dashed the server.",
        );
        if cut {
            page.p(
                "warn",
                &format!("only the first {MAX_CHARTED_RUNS} runs of each input are charted"),
            );
        }
        page.charts(latency);
        page.charts(series);
        page.charts(cpu_chart(&runs).into_iter().collect());
    }
    if let Some(report) = &cmp {
        let counts: Vec<(String, String, usize)> = inputs
            .iter()
            .map(|i| (i.label.clone(), i.file.clone(), i.runs.len()))
            .collect();
        comparison_section(page, report, &counts);
    }
    for i in inputs {
        run_input_section(page, i, inputs.len() > 1);
    }
}

/// Both ends' CPU figures over the whole test, per run: all CPUs, the busiest CPU, its
/// softirq share, irq and softirq shares of all CPUs.
fn cpu_chart(runs: &[Labelled<'_>]) -> Option<Chart> {
    let cats = [
        "all CPUs",
        "busiest CPU",
        "busiest CPU softirq",
        "irq (all)",
        "softirq (all)",
    ];
    let mut series = Vec::new();
    for r in runs {
        let mut ends = vec![("client", &r.rec.client)];
        if let Some(s) = &r.rec.server {
            ends.push(("server", s));
        }
        for (end, side) in ends {
            let Some(c) = &side.cpu else { continue };
            let values = [
                c.util_percent,
                c.busiest_cpu_util_percent,
                c.busiest_cpu_softirq_percent,
                c.irq_percent,
                c.softirq_percent,
            ];
            let name = if r.label.is_empty() {
                end.to_string()
            } else {
                format!("{}: {end}", r.label)
            };
            series.push(Series {
                name,
                color: color(series.len()),
                dashed: false,
                markers: true,
                joined: false,
                points: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Point::new(i as f64, *v))
                    .collect(),
            });
        }
    }
    (!series.is_empty()).then(|| Chart {
        id: "cpu-ends".into(),
        title: "CPU of both ends over the measured window (/proc/stat)".into(),
        x_label: "share".into(),
        y_label: "% (of all CPUs, or of the one busiest CPU)".into(),
        x_axis: XAxis::Categories(cats.iter().map(|s| s.to_string()).collect()),
        y_max: Some(100.0),
        series,
        best: None,
        notes: Vec::new(),
    })
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn run_input_section(page: &mut Page, input: &RunInput, labelled: bool) {
    let head = if labelled {
        format!("{}: {}", input.label, input.file)
    } else {
        format!("Results: {}", input.file)
    };
    page.h2(&head);
    if !input.metrics.is_empty() {
        page.h3(&format!(
            "{} runs: mean and confidence interval",
            input.runs.len()
        ));
        let rows: Vec<Vec<String>> = input
            .metrics
            .iter()
            .map(|m| {
                let ci = match (m.ci_low, m.ci_high) {
                    (Some(l), Some(h)) => format!(
                        "{} .. {} ({:.0} %)",
                        format_metric(&m.name, l),
                        format_metric(&m.name, h),
                        m.ci_level_percent
                    ),
                    _ => "-".into(),
                };
                vec![
                    m.name.clone(),
                    m.n.to_string(),
                    format_metric(&m.name, m.mean),
                    ci,
                    opt(m.cv_percent.map(|v| format!("{v:.2}"))),
                ]
            })
            .collect();
        page.table(
            &["metric", "runs", "mean", "interval", "cv %"].map(String::from),
            &rows,
        );
    }
    for (n, rec) in input.runs.iter().enumerate() {
        if input.runs.len() > 1 {
            page.h3(&format!("Run {}", n + 1));
        }
        run_details(page, rec);
    }
}

fn run_details(page: &mut Page, rec: &RunRecord) {
    page.pre(&crate::export::table::render(rec));
    for (end, side) in [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ] {
        if let Some(p) = side.and_then(|s| s.profile.as_ref()) {
            page.flame_graph(end, p);
        }
    }
    streams_table(page, rec);
    counters_table(page, rec);
    if let Some(d) = &rec.diagnosis {
        diagnosis(page, d);
    }
    hosts(page, rec);
    page.h3("Parameters");
    let plan = linerate_wire::json::to_value(&rec.plan).unwrap_or(Value::Null);
    page.table(&["parameter", "value"].map(String::from), &flatten(&plan));
    if !rec.warnings.is_empty() {
        page.h3("Warnings");
        page.list("warn", &rec.warnings);
    }
}

fn streams_table(page: &mut Page, rec: &RunRecord) {
    let mut rows = Vec::new();
    let mut sides = vec![("client", &rec.client)];
    if let Some(s) = &rec.server {
        sides.push(("server", s));
    }
    for (end, side) in sides {
        for s in &side.streams {
            let bps = (s.duration_ns > 0).then(|| s.bytes as f64 * 8e9 / s.duration_ns as f64);
            let ti = s.tcp_info.as_ref();
            rows.push(vec![
                end.to_string(),
                s.index.to_string(),
                format!("{:?}", s.role).to_lowercase(),
                s.bytes.to_string(),
                opt(bps.map(|b| format_metric("x_bps", b))),
                opt(ti.and_then(|t| t.total_retrans)),
                opt(ti.map(|t| t.rtt_us)),
                opt(ti.map(|t| u64::from(t.snd_cwnd) * u64::from(t.snd_mss))),
                opt(s.sndbuf_bytes),
                opt(s.rcvbuf_bytes),
            ]);
        }
    }
    if rows.is_empty() {
        return;
    }
    page.h3("Streams (whole test)");
    page.table(
        &[
            "end",
            "stream",
            "role",
            "bytes",
            "throughput",
            "retransmits",
            "RTT µs",
            "cwnd bytes",
            "sndbuf",
            "rcvbuf",
        ]
        .map(String::from),
        &rows,
    );
}

fn counters_table(page: &mut Page, rec: &RunRecord) {
    let mut sides = vec![("client", &rec.client, Some(&rec.summary.client))];
    if let Some(s) = &rec.server {
        sides.push(("server", s, rec.summary.server.as_ref()));
    }
    let mut rows = Vec::new();
    for (end, side, sum) in sides {
        let c = side.cpu.as_ref();
        let h = side.host_counters.as_ref();
        let f = |v: Option<f64>| opt(v.map(|v| format!("{v:.2}")));
        rows.push(vec![
            end.to_string(),
            f(c.map(|c| c.util_percent)),
            opt(c.map(|c| format!("cpu{} {:.2}", c.busiest_cpu, c.busiest_cpu_util_percent))),
            f(c.map(|c| c.busiest_cpu_softirq_percent)),
            f(c.map(|c| c.irq_percent)),
            f(c.map(|c| c.softirq_percent)),
            f(sum.and_then(|s| s.service_demand_us_per_kb)),
            f(sum.and_then(|s| s.tool_cpu_percent)),
            f(h.and_then(|h| h.rates.interrupts_per_sec)),
            f(h.and_then(|h| h.packets_per_interrupt)),
            f(h.and_then(|h| h.rates.net_rx_softirqs_per_sec)),
        ]);
    }
    page.h3("CPU and interrupts");
    page.table(
        &[
            "end",
            "CPU % (all)",
            "busiest CPU %",
            "its softirq %",
            "irq %",
            "softirq %",
            "µs/KB",
            "linerate % of a CPU",
            "interrupts/s",
            "packets/interrupt",
            "NET_RX softirqs/s",
        ]
        .map(String::from),
        &rows,
    );
}

fn diagnosis(page: &mut Page, d: &Diagnosis) {
    page.h3("Diagnosis");
    page.p("verdict", &d.summary);
    let items: Vec<String> = d
        .verdicts
        .iter()
        .map(|v| {
            let ev: Vec<String> = v
                .evidence
                .iter()
                .map(crate::export::diagnosis::evidence_text)
                .collect();
            format!(
                "{} ({}, {}): {} Evidence: {}. Suggestion: {}",
                v.kind.name(),
                place(v),
                confidence_name(v.confidence),
                v.message,
                if ev.is_empty() {
                    "-".to_string()
                } else {
                    ev.join(", ")
                },
                v.suggestion
            )
        })
        .collect();
    page.list("diagnosis", &items);
    let rest: Vec<String> = d
        .not_judged
        .iter()
        .map(|n| format!("not judged: {n}"))
        .chain(d.notes.iter().map(|n| format!("note: {n}")))
        .collect();
    page.list("notes", &rest);
}

fn hosts(page: &mut Page, rec: &RunRecord) {
    let side_facts = |s: &linerate_wire::report::SideReport| {
        let mut v = serde_json::Map::new();
        v.insert(
            "host".into(),
            linerate_wire::json::to_value(&s.host).unwrap_or(Value::Null),
        );
        if let Some(i) = &s.interface {
            v.insert(
                "interface".into(),
                linerate_wire::json::to_value(i).unwrap_or(Value::Null),
            );
        }
        flatten(&Value::Object(v))
    };
    let client = side_facts(&rec.client);
    let server = rec.server.as_ref().map(side_facts).unwrap_or_default();
    let mut keys: Vec<String> = client.iter().map(|r| r[0].clone()).collect();
    for r in &server {
        if !keys.contains(&r[0]) {
            keys.push(r[0].clone());
        }
    }
    let find = |rows: &[Vec<String>], k: &str| {
        rows.iter()
            .find(|r| r[0] == k)
            .map_or("-".to_string(), |r| r[1].clone())
    };
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| vec![k.clone(), find(&client, k), find(&server, k)])
        .collect();
    page.h3("Hosts");
    page.table(&["fact", "client", "server"].map(String::from), &rows);
}

/// A JSON value as (dotted path, value) rows, in the value's own order.
fn flatten(v: &Value) -> Vec<Vec<String>> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<Vec<String>>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
                let parts: Vec<String> = a.iter().map(scalar).collect();
                out.push(vec![prefix.to_string(), parts.join(", ")]);
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(&format!("{prefix}.{i}"), v, out);
                }
            }
            other => out.push(vec![prefix.to_string(), scalar(other)]),
        }
    }
    fn scalar(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Null => "-".into(),
            other => other.to_string(),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}

fn rfc2544_title(recs: &[(String, String, Rfc2544Record)]) -> (String, String) {
    let title = match recs {
        [(_, _, r)] => format!("linerate rfc2544 towards {}", r.plan.server),
        _ => format!("linerate rfc2544: {} results compared", recs.len()),
    };
    let meta = recs
        .iter()
        .map(|(l, f, r)| format!("{l}: {f} ({}, started {})", r.tool_version, r.started_at))
        .collect::<Vec<_>>()
        .join("; ");
    (title, meta)
}

fn rfc2544_page(page: &mut Page, recs: &[(String, String, Rfc2544Record)]) {
    use crate::export::rfc2544::chart as rc;
    let cmp = (recs.len() > 1)
        .then(|| {
            let inputs: Vec<FigureInput> = recs
                .iter()
                .map(|(l, f, r)| FigureInput {
                    label: l.clone(),
                    file: f.clone(),
                    runs: vec![crate::rfc2544::compare::figures(r)],
                })
                .collect();
            compare_figures(&inputs, crate::rfc2544::compare::sentence)
        })
        .flatten();
    summary::rfc2544(page, recs, cmp.as_ref());
    for (label, file, rec) in recs {
        page.h2(&if recs.len() > 1 {
            format!("{label}: {file}")
        } else {
            format!("Results: {file}")
        });
        let id = |mut c: Chart| {
            if recs.len() > 1 {
                c.id = format!("{}-{}", label.to_lowercase(), c.id);
                c.title = format!("{label}: {}", c.title);
            }
            c
        };
        page.chart(id(rc::frame_rate_chart(rec)));
        page.chart(id(rc::line_rate_chart(rec)));
        page.pre(&crate::export::rfc2544::render_table(rec));
        for f in &rec.frame_sizes {
            let Some(p) = &f.profile else { continue };
            for (end, side) in [("client", &p.client), ("server", &p.server)] {
                if let Some(s) = side {
                    page.flame_graph(&format!("{end} ({} B frames)", f.frame_size), s);
                }
            }
        }
        if !rec.deviations.is_empty() {
            page.h3("Deviations from RFC 2544");
            page.list("warn", &rec.deviations);
        }
        page.h3("Parameters");
        let plan = linerate_wire::json::to_value(&rec.plan).unwrap_or(Value::Null);
        page.table(&["parameter", "value"].map(String::from), &flatten(&plan));
        if !rec.warnings.is_empty() {
            page.h3("Warnings");
            page.list("warn", &rec.warnings);
        }
    }
    if let Some(report) = &cmp {
        let counts: Vec<(String, String, usize)> = recs
            .iter()
            .map(|(l, f, _)| (l.clone(), f.clone(), 1))
            .collect();
        comparison_section(page, report, &counts);
    }
}

fn sweep_section(page: &mut Page, id_prefix: &str, rec: &SweepRecord) {
    if let Some(b) = &rec.best {
        page.p("verdict", &b.sentence);
    }
    page.charts(charts::sweep(id_prefix, rec));
    page.pre(&crate::export::sweep::render_table(rec));
    let failed: Vec<String> = rec
        .points
        .iter()
        .filter_map(|p| {
            p.error
                .as_ref()
                .map(|e| format!("point {} ({}): {e}", p.index, p.label()))
        })
        .collect();
    page.list("warn", &failed);
    if !rec.warnings.is_empty() {
        page.h3("Warnings");
        page.list("warn", &rec.warnings);
    }
}

fn campaign_page(page: &mut Page, rec: &CampaignRecord) {
    summary::campaign(page, rec);
    page.pre(&crate::export::campaign::render(rec));
    for (i, s) in rec.sweeps.iter().enumerate() {
        page.h2(&format!("Sweep {}: {}", i + 1, s.name));
        sweep_section(page, &format!("s{}-", i + 1), &s.record);
    }
}

#[cfg(test)]
mod tests;
