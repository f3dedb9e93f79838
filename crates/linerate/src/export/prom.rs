//! The Prometheus text exposition format (version 0.0.4): the server's figures for
//! `serve --metrics ADDR` ([`server`]) and a client run's for `--prom FILE` ([`runs`],
//! node_exporter's textfile collector style). Each family has its `# HELP` and `# TYPE`
//! once, samples follow in a fixed order, label values are escaped, and a figure that was
//! not measured is absent (never 0).

use std::fmt::Write as _;

use crate::model::rr::LatencySummary;
use crate::model::{FlowDirection, RunRecord};
use crate::session::server::policy::metrics::Snapshot;

/// The content type of the format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A document being written.
#[derive(Default)]
pub(super) struct Prom {
    pub(super) out: String,
}

/// A label value escaped as the format asks (backslash, double quote, newline).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: integers without a fraction, others as Rust prints them (shortest
/// round-trip form, which Prometheus parses). Zero is `0`, never `-0`.
fn value(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

impl Prom {
    /// A family with its samples: (labels, value); non-finite values are left out, and a
    /// family without samples is not written.
    pub(super) fn family(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: &[(Vec<(&str, String)>, f64)],
    ) {
        let samples: Vec<_> = samples.iter().filter(|(_, v)| v.is_finite()).collect();
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(self.out, "{name} {}", value(*v));
            } else {
                let l: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", label_value(v)))
                    .collect();
                let _ = writeln!(self.out, "{name}{{{}}} {}", l.join(","), value(*v));
            }
        }
    }
}

fn none() -> Vec<(&'static str, String)> {
    Vec::new()
}

/// The server's figures (`serve --metrics`).
pub fn server(s: &Snapshot) -> String {
    let mut p = Prom::default();
    let dir = |d: &str| vec![("direction", d.to_string())];
    p.family(
        "linerate_server_tests_total",
        "counter",
        "Tests admitted since the server started, by how they ended (running ones are in linerate_server_tests_running).",
        &[
            (vec![("outcome", "completed".into())], s.tests_completed as f64),
            (vec![("outcome", "failed".into())], s.tests_failed as f64),
        ],
    );
    p.family(
        "linerate_server_tests_running",
        "gauge",
        "Tests running now.",
        &[(none(), s.tests_running as f64)],
    );
    p.family(
        "linerate_server_errors_total",
        "counter",
        "Control sessions that ended with an error, refused ones included.",
        &[(none(), s.errors as f64)],
    );
    p.family(
        "linerate_server_bytes_total",
        "counter",
        "Payload bytes moved by the tests' streams at this end, warm-up included.",
        &[
            (dir("received"), s.rx_bytes as f64),
            (dir("sent"), s.tx_bytes as f64),
        ],
    );
    p.family(
        "linerate_server_throughput_bps",
        "gauge",
        "Payload rate of the running tests' latest intervals together, bits per second.",
        &[
            (dir("received"), s.current_rx_bps),
            (dir("sent"), s.current_tx_bps),
        ],
    );
    if let Some(c) = s.current_cpu_percent {
        p.family(
            "linerate_server_cpu_percent",
            "gauge",
            "System-wide CPU utilisation in a running test's latest interval (the highest if several run), percent of all CPUs.",
            &[(none(), c)],
        );
    }
    if let Some(l) = &s.last {
        let mut rate = Vec::new();
        if let Some(v) = l.rx_bps {
            rate.push((dir("received"), v));
        }
        if let Some(v) = l.tx_bps {
            rate.push((dir("sent"), v));
        }
        p.family(
            "linerate_server_last_test_throughput_bps",
            "gauge",
            "Payload rate of the last test that finished, over its window at this end, bits per second.",
            &rate,
        );
        if let Some(c) = l.cpu_percent {
            p.family(
                "linerate_server_last_test_cpu_percent",
                "gauge",
                "System-wide CPU utilisation over the last test's window, percent of all CPUs.",
                &[(none(), c)],
            );
        }
        if let Some(c) = l.busiest_cpu_percent {
            p.family(
                "linerate_server_last_test_busiest_cpu_percent",
                "gauge",
                "Utilisation of the busiest CPU over the last test's window, percent of that CPU.",
                &[(none(), c)],
            );
        }
    }
    p.out
}

fn flow_name(d: FlowDirection) -> &'static str {
    match d {
        FlowDirection::ClientToServer => "client_to_server",
        FlowDirection::ServerToClient => "server_to_client",
    }
}

/// A client command's runs (one, or `--repeat`'s) for `--prom FILE`: runs and errors,
/// bytes, the last run's throughput, CPU of both ends and, for rr, transactions and latency.
pub fn runs(command: &str, runs: &[RunRecord]) -> String {
    let mut p = Prom::default();
    let cmd = || ("command", command.to_string());
    let server = runs.last().map_or(String::new(), |r| r.plan.server.clone());
    let base = || vec![cmd(), ("server", server.clone())];
    p.family(
        "linerate_client_tests_total",
        "counter",
        "Runs this command made.",
        &[(base(), runs.len() as f64)],
    );
    let errors = runs
        .iter()
        .filter(|r| r.failure.is_some() || r.interrupted)
        .count();
    p.family(
        "linerate_client_errors_total",
        "counter",
        "Runs that failed or were cut short after they started.",
        &[(base(), errors as f64)],
    );
    let Some(last) = runs.last() else {
        return p.out;
    };
    let with = |k: &'static str, v: &str| {
        let mut l = base();
        l.push((k, v.to_string()));
        l
    };
    let mut bytes = Vec::new();
    let mut rate = Vec::new();
    for f in &last.summary.flows {
        let name = flow_name(f.direction);
        let total: u64 = runs
            .iter()
            .flat_map(|r| {
                r.summary
                    .flows
                    .iter()
                    .filter(|g| g.direction == f.direction)
            })
            .map(|g| g.receiver_bytes.unwrap_or(g.sender_bytes))
            .sum();
        bytes.push((with("flow", name), total as f64));
        if let Some(b) = f.receiver_bps.or(f.sender_bps) {
            rate.push((with("flow", name), b));
        }
    }
    p.family(
        "linerate_client_bytes_total",
        "counter",
        "Payload bytes of every run, per flow (received where the receiver reported, else sent).",
        &bytes,
    );
    p.family(
        "linerate_client_last_throughput_bps",
        "gauge",
        "Throughput of the last run per flow (the receiver's where it reported), bits per second.",
        &rate,
    );
    let mut cpu = Vec::new();
    let mut busiest = Vec::new();
    let mut ends = vec![("client", Some(&last.summary.client))];
    ends.push(("server", last.summary.server.as_ref()));
    for (end, e) in ends {
        let Some(e) = e else { continue };
        if let Some(v) = e.cpu_util_percent {
            cpu.push((with("end", end), v));
        }
        if let Some(v) = e.busiest_cpu_util_percent {
            busiest.push((with("end", end), v));
        }
    }
    p.family(
        "linerate_client_last_cpu_percent",
        "gauge",
        "System-wide CPU utilisation of each end over the last run's window, percent of all CPUs.",
        &cpu,
    );
    p.family(
        "linerate_client_last_busiest_cpu_percent",
        "gauge",
        "Utilisation of each end's busiest CPU over the last run's window, percent of that CPU.",
        &busiest,
    );
    if let Some(rr) = &last.rr {
        if let Some(t) = rr.transactions_per_sec {
            p.family(
                "linerate_client_last_transactions_per_second",
                "gauge",
                "Transactions per second of the last run.",
                &[(base(), t)],
            );
        }
        if let Some(l) = &rr.latency {
            latency_summary(&mut p, command, &server, l);
        }
    }
    p.out
}

/// The last run's latency as a Prometheus summary: the quantiles, and the sum and count of
/// the latencies it is of.
fn latency_summary(p: &mut Prom, command: &str, server: &str, l: &LatencySummary) {
    let name = "linerate_client_last_latency_seconds";
    let _ = writeln!(
        p.out,
        "# HELP {name} Latency of the last run's transactions, seconds."
    );
    let _ = writeln!(p.out, "# TYPE {name} summary");
    let labels = |q: Option<&str>| {
        let mut l = vec![
            format!("command=\"{}\"", label_value(command)),
            format!("server=\"{}\"", label_value(server)),
        ];
        if let Some(q) = q {
            l.push(format!("quantile=\"{q}\""));
        }
        l.join(",")
    };
    for (q, ns) in [("0.5", l.p50_ns), ("0.99", l.p99_ns), ("0.999", l.p99_9_ns)] {
        let _ = writeln!(
            p.out,
            "{name}{{{}}} {}",
            labels(Some(q)),
            value(ns as f64 / 1e9)
        );
    }
    let sum = l.mean_ns * l.count as f64 / 1e9;
    if sum.is_finite() {
        let _ = writeln!(p.out, "{name}_sum{{{}}} {}", labels(None), value(sum));
    }
    let _ = writeln!(p.out, "{name}_count{{{}}} {}", labels(None), l.count);
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, synced,
/// then renamed over `path` (a textfile collector never reads half a file).
pub fn write_atomic(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map_or("metrics".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use crate::session::server::policy::metrics::LastTest;

    /// A strict reader of the text format (promtool is the witness in the integration
    /// tests): every sample's family has HELP and TYPE before it, names and labels are
    /// well formed, values parse, no family repeats.
    pub(crate) fn parse(text: &str) -> Vec<(String, String, f64)> {
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.chars().enumerate().all(|(i, c)| {
                    c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
                })
        };
        let mut typed = Vec::new();
        let mut out = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (n, t) = rest.split_once(' ').unwrap();
                assert!(["counter", "gauge", "summary"].contains(&t), "{line}");
                assert!(!typed.contains(&n.to_string()), "{n} typed twice");
                assert!(t != "counter" || n.ends_with("_total"), "{n}");
                typed.push(n.to_string());
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
            let (series, v) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}').unwrap()),
                None => (series, ""),
            };
            assert!(name_ok(name), "{name}");
            let family = typed.last().map(String::as_str).unwrap_or("");
            let base = name
                .strip_suffix("_sum")
                .or_else(|| name.strip_suffix("_count"))
                .filter(|b| *b == family)
                .unwrap_or(name);
            assert_eq!(family, base, "{line}");
            if !labels.is_empty() {
                for kv in labels.split("\",") {
                    let (k, v) = kv.split_once("=\"").unwrap();
                    assert!(name_ok(k), "{k}");
                    assert!(!v.trim_end_matches('"').contains('\n'));
                }
            }
            out.push((
                name.to_string(),
                labels.to_string(),
                v.parse::<f64>().unwrap(),
            ));
        }
        out
    }

    #[test]
    fn server_figures_in_the_text_format() {
        let s = Snapshot {
            tests_started: 3,
            tests_completed: 2,
            tests_failed: 0,
            errors: 1,
            tests_running: 1,
            rx_bytes: 1234,
            tx_bytes: 0,
            current_rx_bps: 8e9,
            current_tx_bps: 0.0,
            current_cpu_percent: Some(12.5),
            last: Some(LastTest {
                rx_bps: Some(9.41e9),
                tx_bps: None,
                cpu_percent: Some(30.25),
                busiest_cpu_percent: None,
            }),
        };
        let text = server(&s);
        let samples = parse(&text);
        let get = |n: &str, l: &str| {
            samples
                .iter()
                .find(|(a, b, _)| a == n && b == l)
                .map(|s| s.2)
        };
        assert_eq!(
            get("linerate_server_tests_total", "outcome=\"completed\""),
            Some(2.0)
        );
        assert_eq!(
            get("linerate_server_bytes_total", "direction=\"received\""),
            Some(1234.0)
        );
        assert_eq!(
            get(
                "linerate_server_last_test_throughput_bps",
                "direction=\"received\""
            ),
            Some(9.41e9)
        );
        // Not measured: absent, not 0.
        assert_eq!(
            get(
                "linerate_server_last_test_throughput_bps",
                "direction=\"sent\""
            ),
            None
        );
        assert!(!text.contains("busiest"));
        assert_eq!(text, server(&s.clone()));
    }

    #[test]
    fn client_runs_in_the_text_format() {
        let rec = fixtures::tcp_send();
        let text = runs("tcp", &[rec.clone(), rec.clone()]);
        let samples = parse(&text);
        let bytes = samples
            .iter()
            .find(|s| s.0 == "linerate_client_bytes_total")
            .unwrap();
        let f = &rec.summary.flows[0];
        assert_eq!(bytes.2, 2.0 * f.receiver_bytes.unwrap() as f64);
        let rate = samples
            .iter()
            .find(|s| s.0 == "linerate_client_last_throughput_bps")
            .unwrap();
        assert_eq!(Some(rate.2), f.receiver_bps);
        assert!(rate.1.contains("server=\"192.168.0.4:5001\""), "{}", rate.1);
        let rr = runs("rr", &[fixtures::tcp_rr()]);
        assert!(parse(&rr)
            .iter()
            .any(|s| s.0 == "linerate_client_last_latency_seconds"));
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// A negative zero (a rate of no bytes, or a file that says -0.0) is written `0`.
    #[test]
    fn zero_is_never_negative() {
        assert_eq!(value(-0.0), "0");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(-2.0), "-2");
        let s = Snapshot {
            current_rx_bps: -0.0,
            current_tx_bps: -0.0,
            current_cpu_percent: Some(-0.0),
            last: Some(LastTest {
                rx_bps: Some(-0.0),
                tx_bps: Some(-0.0),
                cpu_percent: Some(-0.0),
                busiest_cpu_percent: Some(-0.0),
            }),
            ..Snapshot::default()
        };
        let mut rec = fixtures::tcp_send();
        for f in &mut rec.summary.flows {
            f.receiver_bps = Some(-0.0);
            f.sender_bps = Some(-0.0);
        }
        rec.summary.client.cpu_util_percent = Some(-0.0);
        for text in [server(&s), runs("tcp", &[rec])] {
            let samples = parse(&text);
            assert!(samples.iter().any(|s| s.0.contains("throughput")), "{text}");
            for line in text.lines().filter(|l| !l.starts_with('#')) {
                assert!(!line.ends_with(" -0"), "{line}");
            }
        }
    }

    #[test]
    fn the_file_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("linerate.prom");
        write_atomic(&path, "a 1\n").unwrap();
        write_atomic(&path, "b 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b 2\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
