//! `linerate report`: pages of real runs, stored runs and comparisons; reproducible bytes;
//! charts as SVG and PNG; bad input; and the page in a real browser (headless Chromium,
//! which scripts/test.sh installs: these tests fail, never skip, without it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bin, bin_with_db, run_against, run_ok, run_usage_error, TestServer};

/// A tcp run with 0.1 s intervals and two streams, and two rr runs, as files.
fn runs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let srv = TestServer::start();
    let tcp = dir.join("tcp.json");
    let tcp_args = ["-t", "1", "-i", "0.1", "-P", "2", "--json"];
    std::fs::write(&tcp, run_against(&srv, "tcp", &tcp_args)).unwrap();
    let rr1 = dir.join("rr1.json");
    let rr2 = dir.join("rr2.json");
    let rr = ["-t", "0.3", "--rate", "2k", "--json"];
    std::fs::write(&rr1, run_against(&srv, "rr", &rr)).unwrap();
    let mut big = rr.to_vec();
    big.extend(["-r", "1K,1K"]);
    std::fs::write(&rr2, run_against(&srv, "rr", &big)).unwrap();
    (tcp, rr1, rr2)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The `points="..."` of every polyline in an SVG, as point counts.
fn polyline_lengths(svg: &str) -> Vec<usize> {
    svg.split("<polyline points=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or("").split(' ').count())
        .collect()
}

#[test]
fn a_report_of_real_runs_is_complete_reproducible_and_charts_the_records_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (tcp, rr1, rr2) = runs(dir.path());
    let page = dir.path().join("tcp.html");
    let charts = dir.path().join("charts");
    run_ok(&["report", s(&tcp), "-o", s(&page), "--chart-dir", s(&charts)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The same input gives the same bytes, to a file or to stdout.
    assert_eq!(run_ok(&["report", s(&tcp)]), html);

    // Every chart on the page is also an SVG and a PNG in --chart-dir, and nothing else is.
    let mut ids: Vec<String> = html
        .split("<figure class=\"chart\" id=\"chart-")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().to_string())
        .collect();
    ids.sort();
    for want in [
        "throughput",
        "rtt",
        "cwnd",
        "retransmits",
        "cpu",
        "cpu-ends",
    ] {
        assert!(ids.iter().any(|i| i == want), "{want} not in {ids:?}");
    }
    let mut files: Vec<String> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut want: Vec<String> = ids
        .iter()
        .flat_map(|i| [format!("{i}.png"), format!("{i}.svg")])
        .collect();
    want.sort();
    assert_eq!(files, want);
    for i in &ids {
        let png = std::fs::read(charts.join(format!("{i}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{i}.png");
    }

    // The throughput chart has one point per measured interval of each end, as the record
    // says (its own numbers, not a re-measurement).
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tcp).unwrap()).unwrap();
    let measured = |side: &str| {
        rec[side]["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|iv| iv["omitted"] != true)
            .count()
    };
    let svg = std::fs::read_to_string(charts.join("throughput.svg")).unwrap();
    assert_eq!(
        polyline_lengths(&svg),
        vec![measured("client"), measured("server")],
        "{svg}"
    );
    assert!(measured("client") >= 5, "0.1 s intervals over 1 s");
    // Per-stream figures: a row per stream at each end.
    assert_eq!(html.matches("<tr><td>client</td><td>").count(), 2 + 1);

    // Two rr runs: latency overlaid on shared axes, compared in words.
    let rr_page = run_ok(&["report", s(&rr1), s(&rr2)]);
    assert!(rr_page.contains("id=\"chart-latency-cdf\""), "no CDF");
    assert!(rr_page.contains("A: latency") && rr_page.contains("B: latency"));
    assert!(
        rr_page.contains("<p class=\"verdict\">B: "),
        "no verdict in words"
    );
}

#[test]
fn a_report_of_stored_runs_by_id() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    for _ in 0..2 {
        let o = bin_with_db(&db)
            .args([
                "tcp",
                &srv.addr.ip().to_string(),
                "-p",
                &srv.addr.port().to_string(),
            ])
            .args(["-t", "0.3", "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = bin_with_db(&db)
        .args(["report", "1", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = String::from_utf8(o.stdout).unwrap();
    assert!(
        html.contains("A: run 1") && html.contains("B: run 2"),
        "{html}"
    );
    assert!(html.contains("<h2>Comparison</h2>"));
    let o = bin_with_db(&db).args(["report", "99"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("linerate history"));
}

#[test]
fn report_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "not json").unwrap();
    for (args, needle) in [
        (vec!["report", s(&junk)], "is not a linerate result"),
        (vec!["report", s(&text)], "is not JSON"),
        (vec!["report", "/nonexistent/x.json"], "cannot read"),
    ] {
        let err = run_usage_error(&args);
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// A result file with CPU figures no host gives (1e308 %, 5e-324 %, -0 %, and one left
/// out: JSON has no NaN) charts without NaN or infinite coordinates and without tick labels
/// of 300 digits; the chart says what it left out of its scale.
#[test]
fn absurd_figures_in_a_file_are_left_out_of_the_charts() {
    let srv = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = run_against(&srv, "tcp", &["-t", "0.6", "-i", "0.1", "--json"]);
    let mut rec: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ivs = rec["client"]["intervals"].as_array_mut().unwrap();
    assert!(ivs.len() >= 4, "0.1 s intervals over 0.6 s: {}", ivs.len());
    let absurd = [
        serde_json::json!(1e308),
        serde_json::json!(5e-324),
        serde_json::json!(-0.0),
        serde_json::Value::Null,
    ];
    for (iv, v) in ivs.iter_mut().zip(&absurd) {
        iv["cpu_percent"] = v.clone();
    }
    let file = dir.path().join("absurd.json");
    let text = serde_json::to_string(&rec).unwrap();
    assert!(text.contains("\"cpu_percent\":1e+308") && text.contains("\"cpu_percent\":5e-324"));
    std::fs::write(&file, text).unwrap();
    let charts = dir.path().join("charts");
    let page = run_ok(&["report", s(&file), "--chart-dir", s(&charts)]);
    for e in std::fs::read_dir(&charts).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "svg") {
            continue;
        }
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        for t in svg.split("<text").skip(1) {
            let label = t.split('>').nth(1).unwrap().split('<').next().unwrap();
            if label.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
                assert!(
                    label.len() <= 8,
                    "a tick label of {} characters",
                    label.len()
                );
            }
        }
    }
    let cpu = std::fs::read_to_string(charts.join("cpu.svg")).unwrap();
    assert!(
        cpu.contains("left out of the scale: 2 values no measurement gives"),
        "{cpu}"
    );
    assert!(page.contains("left out of the scale"));
}

/// Chromium's flags: headless, no background services, and a network that cannot be
/// reached (every name unresolvable, a proxy on a closed loopback port), so that nothing
/// can leave the machine even if the page asked.
fn chromium(page: &Path, out: &[&str], profile: &Path, netlog: &Path) -> std::process::Output {
    chromium_sized(page, out, profile, netlog, "800,3000")
}

fn chromium_sized(
    page: &Path,
    out: &[&str],
    profile: &Path,
    netlog: &Path,
    size: &str,
) -> std::process::Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(out)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run chromium ({e}): install it (apt-get install -y chromium; scripts/test.sh does)")
        })
}

/// Chromium's own background services, which it contacts whatever the page is (blocked by
/// the resolver rules above); any other URL in the net log is the page's.
const BROWSER_OWN: [&str; 5] = [
    "google.com/",
    "googleapis.com/",
    "gvt1.com/",
    "gstatic.com/",
    "googleusercontent.com/",
];

/// What the page did in Chromium: (console errors, URLs it requested, the DOM, the
/// screenshot's size in bytes).
pub(super) fn load(page: &Path, dir: &Path) -> (Vec<String>, Vec<String>, String, usize) {
    let netlog = dir.join("net.json");
    let shot = dir.join("shot.png");
    let o = chromium(
        page,
        &[&format!("--screenshot={}", shot.display())],
        &dir.join("profile1"),
        &netlog,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let log = String::from_utf8_lossy(&o.stderr);
    let console: Vec<String> = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    let net = std::fs::read_to_string(&netlog).expect("chromium wrote no net log");
    let mut urls: Vec<String> = net
        .split("\"url\":\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .filter(|u| !BROWSER_OWN.iter().any(|h| u.contains(h)))
        .map(str::to_string)
        .collect();
    urls.sort();
    urls.dedup();
    let dom = chromium(
        page,
        &["--dump-dom"],
        &dir.join("profile2"),
        &dir.join("net2.json"),
    );
    assert!(dom.status.success());
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    (console, urls, dom, png.len())
}

#[test]
fn chromium_shows_every_chart_without_errors_or_network() {
    let dir = tempfile::tempdir().unwrap();
    let (tcp, rr1, rr2) = runs(dir.path());
    for (name, inputs) in [("tcp", vec![&tcp]), ("rr", vec![&rr1, &rr2])] {
        let page = dir.path().join(format!("{name}.html"));
        let mut args = vec!["report".to_string()];
        args.extend(inputs.iter().map(|p| s(p).to_string()));
        args.extend(["-o".to_string(), s(&page).to_string()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ok(&argv);
        let html = std::fs::read_to_string(&page).unwrap();
        let figures = html.matches("<figure class=\"chart\"").count();
        assert!(figures >= 3, "{name}: {figures} charts");
        for attr in ["src=", "href=", "<script", "<link", "url("] {
            assert!(!html.contains(attr), "{name}: {attr} in the page");
        }
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let (console, urls, dom, shot) = load(&page, &sub);
        assert!(shot > 20_000, "{name}: a blank screenshot ({shot} bytes)");
        assert!(console.is_empty(), "{name}: console errors {console:?}");
        assert!(urls.is_empty(), "{name}: the page requested {urls:?}");
        // Every chart is in the DOM as an SVG the browser parsed.
        assert_eq!(
            dom.matches("<figure class=\"chart\"").count(),
            figures,
            "{name}"
        );
        assert_eq!(dom.matches("<svg").count(), figures, "{name}");
    }

    // The detectors work: a page that throws and fetches is caught by both.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>x</title></head><body><img src=\"http://127.0.0.1:9/x.png\"><script>noSuchFunction();</script></body></html>",
    )
    .unwrap();
    let sub = dir.path().join("bad");
    std::fs::create_dir_all(&sub).unwrap();
    let (console, urls, _, _) = load(&bad, &sub);
    assert!(
        console.iter().any(|l| l.contains("Uncaught")),
        "{console:?}"
    );
    assert_eq!(urls, ["http://127.0.0.1:9/x.png"]);
}

#[test]
fn report_help_has_examples() {
    let o = bin().args(["report", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("--chart-dir") && text.contains("Examples:"),
        "{text}"
    );
}

/// One figure of the summary block as Chromium's DOM has it, checked: its row's key (the
/// input's label, a fleet pair's run id) and its metric.
#[derive(Debug)]
pub(super) struct Shown {
    pub key: String,
    pub metric: String,
}

/// A figure's text read back with its unit ("9.412 Gbit/s", "12.30%", "18.3 us",
/// "148.8k frames/s"), and the half of its last digit it was rounded to.
fn read_back(text: &str) -> (f64, f64) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().unwrap_or_else(|_| panic!("{text:?}"));
    let decimals = text[..end].split_once('.').map_or(0, |(_, d)| d.len());
    let scale = match text[end..].trim() {
        "Tbit/s" => 1e12,
        "Gbit/s" | "G frames/s" => 1e9,
        "Mbit/s" | "M frames/s" | "ms" => 1e6,
        "kbit/s" | "k frames/s" | "us" => 1e3,
        "s" => 1e9,
        "" | "%" | "/s" | "bit/s" | "frames/s" | "ns" => 1.0,
        u => panic!("unit {u:?} in {text:?}"),
    };
    (number * scale, 0.5 * 10f64.powi(-(decimals as i32)) * scale)
}

/// The page in Chromium at 1280x800: the summary block (`#summary`) lies within the first
/// screen, and every figure in it is the record's (`expect(key, metric)`) and reads as it.
/// The page is loaded once more with a script added at its end (and its no-script policy
/// taken out, nothing else changed) that writes the block's edges and the window's size into
/// the DOM. Returns the figures.
pub(super) fn summary_on_first_screen(
    page: &Path,
    dir: &Path,
    expect: impl Fn(&str, &str) -> Option<f64>,
) -> Vec<Shown> {
    let html = std::fs::read_to_string(page).unwrap();
    let csp = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let csp_end = csp + html[csp..].find('>').unwrap() + 1;
    let script = "<script>const r = document.getElementById('summary').getBoundingClientRect();\
        document.body.dataset.summary = r.top + ' ' + r.bottom + ' ' + innerWidth + ' ' + innerHeight;</script>";
    let measured = format!("{}{}", &html[..csp], &html[csp_end..])
        .replace("</body>", &format!("{script}</body>"));
    let probe = dir.join("measured.html");
    std::fs::write(&probe, measured).unwrap();
    let o = chromium_sized(
        &probe,
        &["--dump-dom"],
        &dir.join("profile-s"),
        &dir.join("net-s.json"),
        "1280,800",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let edges: Vec<f64> = dom
        .split("data-summary=\"")
        .nth(1)
        .unwrap_or_else(|| panic!("the script did not run: {dom:.2000}"))
        .split('"')
        .next()
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let [top, bottom, width, height] = edges[..] else {
        panic!("{edges:?}")
    };
    assert!(
        width <= 1280.0 && height <= 800.0 && height > 500.0,
        "window {width}x{height}"
    );
    assert!(
        top >= 0.0 && bottom <= height,
        "the summary spans {top}..{bottom} px of a {height} px screen: {}",
        page.display()
    );
    // The summary comes before any chart or table of the page.
    let at = dom
        .find("<section id=\"summary\">")
        .expect("no summary in the DOM");
    let end = at + dom[at..].find("</section>").unwrap();
    for other in ["<figure", "<pre>"] {
        assert!(
            dom.find(other).is_none_or(|i| i > end),
            "{other} before the summary"
        );
    }
    let mut shown = Vec::new();
    for row in dom[at..end].split("<tr data-key=\"").skip(1) {
        let key = row.split('"').next().unwrap().to_string();
        for cell in row.split("<td data-metric=\"").skip(1) {
            let (metric, rest) = cell.split_once("\" data-value=\"").unwrap();
            let (value, rest) = rest.split_once("\">").unwrap();
            let text = rest.split("</td>").next().unwrap().to_string();
            let value: f64 = value.parse().unwrap();
            let want = expect(&key, metric)
                .unwrap_or_else(|| panic!("{key}: the page shows {metric}, the record has none"));
            assert_eq!(value, want, "{key} {metric}");
            let (read, half) = read_back(&text);
            assert!(
                (read - want).abs() <= half * 1.001 + want.abs() * 1e-12,
                "{key} {metric}: {text:?} for {want}"
            );
            shown.push(Shown {
                key: key.clone(),
                metric: metric.to_string(),
            });
        }
    }
    shown
}

/// The value of a headline metric in a stream or RR run's JSON record, read by its own path.
pub(super) fn run_metric(rec: &serde_json::Value, metric: &str) -> Option<f64> {
    let flows = rec["summary"]["flows"].as_array()?;
    let flow = |dir: &str| flows.iter().find(|f| f["direction"] == dir);
    let first = flow("client_to_server").or(flows.first());
    let v = match metric {
        "throughput_bps" => &first?["receiver_bps"],
        "reverse_throughput_bps" if flows.len() > 1 => &flow("server_to_client")?["receiver_bps"],
        "loss_percent" => &first?["loss_percent"],
        "transactions_per_sec" => &rec["rr"]["transactions_per_sec"],
        "latency_p99_ns" => &rec["rr"]["latency"]["p99_ns"],
        "lost_transactions_percent" => &rec["rr"]["lost_percent"],
        "client_cpu_percent" => &rec["summary"]["client"]["cpu_util_percent"],
        "server_cpu_percent" => &rec["summary"]["server"]["cpu_util_percent"],
        "client_service_demand_us_per_kb" => &rec["summary"]["client"]["service_demand_us_per_kb"],
        "server_service_demand_us_per_kb" => &rec["summary"]["server"]["service_demand_us_per_kb"],
        "client_service_demand_us_per_tran" => &rec["rr"]["client_service_demand_us_per_tran"],
        "server_service_demand_us_per_tran" => &rec["rr"]["server_service_demand_us_per_tran"],
        _ => return None,
    };
    v.as_f64()
}

/// A tcp run, two rr runs compared: the summary on the first screen, its figures the
/// records'. (The RFC 2544, sweep, campaign and fleet pages are checked where their
/// records are made: tests/it/rfc2544.rs, sweep.rs, fleet.rs.)
#[test]
fn runs_pages_open_with_their_summary_on_the_first_screen() {
    let dir = tempfile::tempdir().unwrap();
    let (tcp, rr1, rr2) = runs(dir.path());
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    for (name, inputs) in [("tcp", vec![&tcp]), ("rr", vec![&rr1, &rr2])] {
        let page = dir.path().join(format!("{name}-summary.html"));
        let mut args = vec!["report".to_string()];
        args.extend(inputs.iter().map(|p| s(p).to_string()));
        args.extend(["-o".to_string(), s(&page).to_string()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ok(&argv);
        let recs: Vec<serde_json::Value> = inputs.iter().map(|p| read(p)).collect();
        let sub = dir.path().join(format!("{name}-chromium"));
        std::fs::create_dir_all(&sub).unwrap();
        let shown = summary_on_first_screen(&page, &sub, |key, metric| {
            let i = usize::from(key.as_bytes()[0] - b'A');
            run_metric(&recs[i], metric)
        });
        let primary = if name == "tcp" {
            "throughput_bps"
        } else {
            "transactions_per_sec"
        };
        for (i, _) in recs.iter().enumerate() {
            let key = ((b'A' + i as u8) as char).to_string();
            assert!(
                shown.iter().any(|f| f.key == key && f.metric == primary),
                "{name}: no {primary} of {key}: {shown:?}"
            );
        }
        assert!(
            shown.iter().any(|f| f.metric == "client_cpu_percent"),
            "{name}: {shown:?}"
        );
        if name == "rr" {
            assert!(
                shown.iter().any(|f| f.metric == "latency_p99_ns"),
                "{shown:?}"
            );
            let html = std::fs::read_to_string(&page).unwrap();
            let summary = html.split("<section id=\"summary\">").nth(1).unwrap();
            assert!(
                summary.starts_with("\n<h2>Summary</h2>\n<p class=\"verdict\">B: "),
                "the comparison first: {summary:.300}"
            );
        }
    }
}
