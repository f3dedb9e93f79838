//! `serve --metrics` and `--prom FILE`: the Prometheus text format checked by promtool
//! (scripts/test.sh puts Debian's promtool in /usr/local/bin: these tests fail, never skip,
//! without it), its figures against the run's own record, and the HTTP responder's limits.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};

use crate::common::{bin, run_ok};

/// `linerate serve` on loopback with `--metrics` on a free port; killed on drop.
struct Served {
    child: Child,
    port: u16,
    metrics: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Served {
    let mut child = bin()
        .args([
            "serve",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut port, mut metrics) = (None, None);
    while port.is_none() || metrics.is_none() {
        let l = lines.next().expect("serve ended").unwrap();
        if let Some(rest) = l.strip_prefix("linerate serve: listening on ") {
            let addr: SocketAddr = rest.split(' ').next().unwrap().parse().unwrap();
            port = Some(addr.port());
        }
        if let Some(rest) = l.strip_prefix("linerate serve: metrics at http://") {
            metrics = Some(rest.trim_end_matches("/metrics").parse().unwrap());
        }
    }
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Served {
        child,
        port: port.unwrap(),
        metrics: metrics.unwrap(),
    }
}

/// Sends `request` raw and returns the whole answer.
fn http(addr: SocketAddr, request: &[u8]) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    c.write_all(request).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

/// `promtool check metrics` on `text`: its findings, empty when it passes.
fn promtool(text: &str) -> String {
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): scripts/test.sh installs it from Debian's prometheus package")
        });
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = p.wait_with_output().unwrap();
    let findings = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "promtool: {findings}\n{text}");
    findings
}

/// The value of the sample `series` (name and labels as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn served_metrics_pass_promtool_and_agree_with_the_run() {
    let srv = serve();
    let before = http(srv.metrics, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(before.starts_with("HTTP/1.1 200 OK\r\n"), "{before}");
    assert!(before.contains("Content-Type: text/plain; version=0.0.4"));
    let body = before.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(promtool(body), "");
    assert_eq!(sample(body, "linerate_server_tests_running"), Some(0.0));
    // Nothing finished yet: no last-test figures, rather than zeros.
    assert!(!body.contains("last_test"), "{body}");

    let port = srv.port.to_string();
    let out = run_ok(&["tcp", "127.0.0.1", "-p", &port, "-t", "1", "--json"]);
    let rec: serde_json::Value = serde_json::from_str(&out).unwrap();
    let after = http(srv.metrics, b"GET /metrics HTTP/1.0\r\n\r\n");
    let body = after.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(promtool(body), "");
    assert_eq!(
        sample(body, "linerate_server_tests_total{outcome=\"completed\"}"),
        Some(1.0),
        "{body}"
    );
    assert_eq!(sample(body, "linerate_server_tests_running"), Some(0.0));
    // The server's last test: its receiving rate is the record's receiver throughput,
    // both from the server's own report.
    let flow = &rec["summary"]["flows"][0];
    let want = flow["receiver_bps"].as_f64().unwrap();
    let got = sample(
        body,
        "linerate_server_last_test_throughput_bps{direction=\"received\"}",
    )
    .unwrap();
    assert!((got - want).abs() <= want * 1e-9, "{got} vs {want}");
    // Bytes: the sum of the server's intervals, as its record lists them.
    let ivs: u64 = rec["server"]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["rx_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(
        sample(body, "linerate_server_bytes_total{direction=\"received\"}"),
        Some(ivs as f64)
    );
    assert!(ivs > 0);
}

#[test]
fn the_metrics_responder_answers_get_metrics_only_within_limits() {
    let srv = serve();
    for (req, status) in [
        (b"POST /metrics HTTP/1.1\r\n\r\n".to_vec(), "405"),
        (b"GET / HTTP/1.1\r\n\r\n".to_vec(), "404"),
        (b"GET /metrics\r\n\r\n".to_vec(), "400"),
        (
            [b"GET /metrics HTTP/1.1\r\nX: ".to_vec(), vec![b'a'; 20_000]].concat(),
            "431",
        ),
    ] {
        let a = http(srv.metrics, &req);
        assert!(
            a.starts_with(&format!("HTTP/1.1 {status}")),
            "{status}: {a}"
        );
    }
    // A peer that closes at once costs nothing; the responder still answers.
    drop(TcpStream::connect(srv.metrics).unwrap());
    assert!(http(srv.metrics, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
}

/// Idle and dripping connections do not hold up a scrape: 20 connections that send
/// nothing and 3 that drip a byte every 200 ms, then a real scrape is answered 200 (and
/// passes promtool) long before any of them times out, where one connection at a time made
/// it wait 5 s for each. A dripper is cut off with 408 once its head has taken
/// `HEAD_TIMEOUT` in all.
#[test]
fn slow_peers_do_not_hold_up_a_scrape() {
    use linerate::app::metrics::HEAD_TIMEOUT;
    use std::time::{Duration, Instant};

    let srv = serve();
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(srv.metrics).unwrap())
        .collect();
    let t0 = Instant::now();
    let drippers: Vec<_> = (0..3)
        .map(|_| {
            let addr = srv.metrics;
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_nonblocking(true).unwrap();
                let start = Instant::now();
                let mut out = Vec::new();
                for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "
                    .iter()
                    .cycle()
                {
                    // The server's answer ends the drip.
                    let mut buf = [0u8; 512];
                    match c.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => out.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => break,
                    }
                    if c.write_all(&[*b]).is_err() || start.elapsed() > Duration::from_secs(30) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                (start.elapsed(), String::from_utf8_lossy(&out).into_owned())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let mut c = TcpStream::connect(srv.metrics).unwrap();
    // Prometheus's default scrape time-out.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = c.read_to_string(&mut answer);
    let took = asked.elapsed();
    assert!(
        answer.starts_with("HTTP/1.1 200 OK\r\n"),
        "{took:?}: {answer}"
    );
    assert!(
        took < HEAD_TIMEOUT,
        "the scrape took {took:?}: it waited for a slow peer (head time-out {HEAD_TIMEOUT:?})"
    );
    assert_eq!(promtool(answer.split("\r\n\r\n").nth(1).unwrap()), "");
    for d in drippers {
        let (lasted, out) = d.join().unwrap();
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
        // Cut off by the time-out of the whole head, not of each byte (a byte came every
        // 200 ms), with slack for scheduling.
        assert!(
            lasted >= HEAD_TIMEOUT - Duration::from_millis(300)
                && lasted < HEAD_TIMEOUT + Duration::from_secs(2),
            "a dripper lasted {lasted:?}"
        );
    }
    assert!(t0.elapsed() < HEAD_TIMEOUT * 3);
    drop(idle);
}

/// Idle peers holding every place do not keep a scraper out: 64 connections that send
/// nothing (twice `MAX_CONNECTIONS`), then 20 scrapes in a row are each answered 200 at
/// once (where all 20 got 503), each taking the place of the oldest idle connection, which
/// the server closes.
#[test]
fn idle_peers_holding_every_place_do_not_keep_a_scrape_out() {
    use linerate::app::metrics::{HEAD_TIMEOUT, MAX_CONNECTIONS};
    use std::time::{Duration, Instant};

    let srv = serve();
    let mut idle: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(srv.metrics).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for k in 0..20 {
        let asked = Instant::now();
        let a = http(srv.metrics, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let took = asked.elapsed();
        assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "scrape {k}: {a}");
        assert!(took < HEAD_TIMEOUT, "scrape {k} took {took:?}");
    }
    // The first idle connections gave their places up: closed by the server, long before
    // their head time-out.
    let t0 = Instant::now();
    let mut closed = 0;
    for c in idle.iter_mut().take(20) {
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 256];
        match c.read(&mut b) {
            // Closed, with nothing (FIN) or a reset.
            Ok(0) => closed += 1,
            Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                closed += 1
            }
            other => panic!("an old idle connection is still open: {other:?}"),
        }
    }
    assert!(
        closed >= 20,
        "{closed} of the oldest idle connections closed"
    );
    assert!(t0.elapsed() < HEAD_TIMEOUT, "{:?}", t0.elapsed());
    drop(idle);
}

#[test]
fn prom_file_of_a_client_run_passes_promtool_and_matches_the_record() {
    let srv = crate::common::TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("linerate.prom");
    let port = srv.addr.port().to_string();
    let out = run_ok(&[
        "tcp",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "--json",
        "--prom",
        file.to_str().unwrap(),
    ]);
    let rec: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(promtool(&text), "");
    let server = rec["plan"]["server"].as_str().unwrap();
    let labels = format!("command=\"tcp\",server=\"{server}\"");
    assert_eq!(
        sample(&text, &format!("linerate_client_tests_total{{{labels}}}")),
        Some(1.0)
    );
    let flow = &rec["summary"]["flows"][0];
    assert_eq!(
        sample(
            &text,
            &format!("linerate_client_bytes_total{{{labels},flow=\"client_to_server\"}}")
        ),
        flow["receiver_bytes"].as_f64()
    );
    assert_eq!(
        sample(
            &text,
            &format!("linerate_client_last_throughput_bps{{{labels},flow=\"client_to_server\"}}")
        ),
        flow["receiver_bps"].as_f64()
    );

    // rr with --repeat: every run counted, latency in seconds.
    let out = run_ok(&[
        "rr",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.3",
        "--rate",
        "1k",
        "--repeat",
        "2",
        "--json",
        "--prom",
        file.to_str().unwrap(),
    ]);
    let set: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(promtool(&text), "");
    assert!(text.contains("linerate_client_tests_total{command=\"rr\""));
    let p99 = set["trials"][1]["rr"]["latency"]["p99_ns"]
        .as_f64()
        .unwrap()
        / 1e9;
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("linerate_client_last_latency_seconds") && l.contains("quantile=\"0.99\"")
        })
        .unwrap();
    let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((v - p99).abs() < 1e-15, "{v} vs {p99}");

    let err = crate::common::run_usage_error(&[
        "tcp",
        "127.0.0.1",
        "-p",
        &port,
        "--prom",
        "/nonexistent/dir/x.prom",
    ]);
    assert!(err.contains("--prom"), "{err}");
}
