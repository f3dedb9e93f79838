//! Request/response records in every format: the table, CSV, netperf's TCP_RR / TCP_CRR /
//! UDP_RR table (`-c -C` shape), and the live interval lines. JSON needs nothing special: the
//! record carries an `rr` object. ttcp has no request/response test; the CLI refuses
//! `--format ttcp` for `linerate rr` and the ttcp exporter prints nothing for an RR record.

use serde::Serialize;

use super::align::align;
use crate::model::labels::split_host_port;
use crate::model::units::{format_bytes, format_duration_ns};
use crate::model::{EndSummary, LatencySummary, RrKind, RrSummary, RunRecord};
use linerate_wire::report::{IntervalReport, Role, SideReport};

const MISSING: &str = "-";

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

fn ns(v: u64) -> String {
    format_duration_ns(v)
}

/// The human table of an RR record.
pub fn table(rec: &RunRecord, rr: &RrSummary) -> String {
    let p = &rec.plan;
    let streams = if p.streams == 1 { "stream" } else { "streams" };
    let mut out = format!(
        "{} {} with {}: {} {streams}, {} B requests, {} B responses, {} in flight per stream{}, {} measured, started {}{}\n\n",
        rec.tool_version,
        rr.kind.netperf_name(),
        p.server,
        p.streams,
        rr.request_bytes,
        rr.response_bytes,
        rr.burst,
        rr.target_tps.map_or(String::new(), |t| format!(", target {t}/s")),
        format_duration_ns(rr.duration_ns),
        rec.started_at,
        if rec.interrupted { " (interrupted)" } else { "" },
    );
    if let Some(bb) = &rr.bounceback {
        out.push_str(&format!(
            "bounceback: bursts of {} exchanges every {}, server hold {}, TCP_QUICKACK {}\n\n",
            bb.burst,
            format_duration_ns(bb.period_ns),
            format_duration_ns(bb.hold_ns),
            if bb.quickack { "on" } else { "off" }
        ));
    }
    let mut head = vec!["transactions", "per second"];
    let mut row = vec![
        rr.transactions.to_string(),
        opt(rr.transactions_per_sec, |t| format!("{t:.1}")),
    ];
    if rr.kind == RrKind::UdpRr {
        head.extend(["lost", "late", "timeout"]);
        row.push(opt(rr.lost_transactions, |l| {
            format!("{l} ({})", opt(rr.lost_percent, |p| format!("{p:.2}%")))
        }));
        row.push(opt(rr.late_responses, |l| l.to_string()));
        row.push(opt(rr.timeout_ms, |t| format!("{t} ms")));
    }
    if let Some(c) = rr.connections {
        head.push("connections");
        row.push(c.to_string());
    }
    out.push_str(&align(&[head.into_iter().map(String::from).collect(), row]));
    out.push('\n');
    let mut lat = vec![latency_head()];
    let label = if rr.latency_from_actual_send.is_some() {
        "from intended send"
    } else {
        "latency"
    };
    lat.push(latency_row(label, rr.latency.as_ref()));
    if let Some(a) = &rr.latency_from_actual_send {
        lat.push(latency_row("from actual send", Some(a)));
    }
    out.push_str(&align(&lat));
    out.push('\n');
    out.push_str(&align(&end_rows(rec, rr)));
    if !rec.warnings.is_empty() {
        out.push('\n');
        for w in &rec.warnings {
            out.push_str("warning: ");
            out.push_str(w);
            out.push('\n');
        }
    }
    out
}

fn latency_head() -> Vec<String> {
    [
        "", "min", "mean", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "max",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

fn latency_row(label: &str, l: Option<&LatencySummary>) -> Vec<String> {
    let mut row = vec![label.to_string()];
    match l {
        None => row.extend(std::iter::repeat_n(MISSING.to_string(), 9)),
        Some(l) => row.extend([
            ns(l.min_ns),
            ns(l.mean_ns.round() as u64),
            opt(l.stddev_ns, |s| ns(s.round() as u64)),
            ns(l.p50_ns),
            ns(l.p90_ns),
            ns(l.p99_ns),
            ns(l.p99_9_ns),
            ns(l.p99_99_ns),
            ns(l.max_ns),
        ]),
    }
    row
}

fn end_rows(rec: &RunRecord, rr: &RrSummary) -> Vec<Vec<String>> {
    let head = [
        "end",
        "cpu (all)",
        "busiest cpu",
        "demand us/Tr",
        "own threads",
        "io calls",
        "sndbuf",
        "rcvbuf",
    ];
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    let row = |name: &str, e: Option<&EndSummary>, r: Option<&SideReport>, sd: Option<f64>| {
        let Some(e) = e else {
            let mut row = vec![name.to_string()];
            row.extend(std::iter::repeat_n(MISSING.to_string(), head.len() - 1));
            return row;
        };
        let (snd, rcv) = socket_sizes(r);
        vec![
            name.to_string(),
            opt(e.cpu_util_percent, |v| {
                super::align::of_cpus(v, e.cpu_count)
            }),
            opt(e.busiest_cpu_util_percent, |v| format!("{v:.2}%")),
            opt(sd, |v| format!("{v:.3}")),
            opt(e.tool_cpu_percent, |v| format!("{v:.1}%")),
            opt(e.io_calls, |v| v.to_string()),
            opt(snd, |v| format_bytes(u64::from(v))),
            opt(rcv, |v| format_bytes(u64::from(v))),
        ]
    };
    rows.push(row(
        "client",
        Some(&rec.summary.client),
        Some(&rec.client),
        rr.client_service_demand_us_per_tran,
    ));
    rows.push(row(
        "server",
        rec.summary.server.as_ref(),
        rec.server.as_ref(),
        rr.server_service_demand_us_per_tran,
    ));
    rows
}

/// SO_SNDBUF and SO_RCVBUF of an end's first stream.
fn socket_sizes(r: Option<&SideReport>) -> (Option<u32>, Option<u32>) {
    r.and_then(|r| r.streams.first())
        .map_or((None, None), |s| (s.sndbuf_bytes, s.rcvbuf_bytes))
}

/// One CSV row of an RR record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RrCsvRow {
    /// Start of the test, RFC 3339 UTC.
    pub started_at: String,
    /// TCP_RR, TCP_CRR or UDP_RR.
    pub test: &'static str,
    /// Parallel streams.
    pub streams: u16,
    /// Bytes per request.
    pub request_bytes: u32,
    /// Bytes per response.
    pub response_bytes: u32,
    /// Transactions in flight per stream.
    pub burst: u32,
    /// Target rate, transactions per second.
    pub target_tps: Option<u64>,
    /// Measured window, ns.
    pub duration_ns: u64,
    /// Completed transactions.
    pub transactions: u64,
    /// Transactions per second.
    pub transactions_per_sec: Option<f64>,
    /// UDP: lost transactions.
    pub lost_transactions: Option<u64>,
    /// UDP: lost percent.
    pub lost_percent: Option<f64>,
    /// Latency figures, ns.
    pub latency_min_ns: Option<u64>,
    /// Mean latency, ns.
    pub latency_mean_ns: Option<f64>,
    /// Latency stddev, ns.
    pub latency_stddev_ns: Option<f64>,
    /// Median latency, ns.
    pub latency_p50_ns: Option<u64>,
    /// p90, ns.
    pub latency_p90_ns: Option<u64>,
    /// p99, ns.
    pub latency_p99_ns: Option<u64>,
    /// p99.9, ns.
    pub latency_p99_9_ns: Option<u64>,
    /// p99.99, ns.
    pub latency_p99_99_ns: Option<u64>,
    /// Largest latency, ns.
    pub latency_max_ns: Option<u64>,
    /// Client CPU, percent of all its CPUs.
    pub client_cpu_util_percent: Option<f64>,
    /// Server CPU.
    pub server_cpu_util_percent: Option<f64>,
    /// Client µs of CPU per transaction.
    pub client_service_demand_us_per_tran: Option<f64>,
    /// Server µs of CPU per transaction.
    pub server_service_demand_us_per_tran: Option<f64>,
    /// Cut short.
    pub interrupted: bool,
    /// The strongest verdict of the diagnosis (`none` when nothing stands out); empty when
    /// the record has no diagnosis. The same columns end the stream CSV.
    pub verdict: &'static str,
    /// Its message, with the numbers behind it.
    pub verdict_message: String,
}

/// Header and one row.
pub fn csv(rec: &RunRecord, rr: &RrSummary) -> String {
    let l = rr.latency.as_ref();
    let verdict = rec.diagnosis.as_ref().and_then(|d| d.primary());
    let row = RrCsvRow {
        started_at: rec.started_at.clone(),
        test: rr.kind.netperf_name(),
        streams: rec.plan.streams,
        request_bytes: rr.request_bytes,
        response_bytes: rr.response_bytes,
        burst: rr.burst,
        target_tps: rr.target_tps,
        duration_ns: rr.duration_ns,
        transactions: rr.transactions,
        transactions_per_sec: rr.transactions_per_sec,
        lost_transactions: rr.lost_transactions,
        lost_percent: rr.lost_percent,
        latency_min_ns: l.map(|l| l.min_ns),
        latency_mean_ns: l.map(|l| l.mean_ns),
        latency_stddev_ns: l.and_then(|l| l.stddev_ns),
        latency_p50_ns: l.map(|l| l.p50_ns),
        latency_p90_ns: l.map(|l| l.p90_ns),
        latency_p99_ns: l.map(|l| l.p99_ns),
        latency_p99_9_ns: l.map(|l| l.p99_9_ns),
        latency_p99_99_ns: l.map(|l| l.p99_99_ns),
        latency_max_ns: l.map(|l| l.max_ns),
        client_cpu_util_percent: rec.summary.client.cpu_util_percent,
        server_cpu_util_percent: rec.summary.server.as_ref().and_then(|s| s.cpu_util_percent),
        client_service_demand_us_per_tran: rr.client_service_demand_us_per_tran,
        server_service_demand_us_per_tran: rr.server_service_demand_us_per_tran,
        interrupted: rec.interrupted,
        verdict: verdict.map_or("", |v| v.kind.name()),
        verdict_message: verdict.map(|v| v.message.clone()).unwrap_or_default(),
    };
    let mut w = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let res = w.serialize(&row).and_then(|()| {
        w.into_inner()
            .map_err(|e| ::csv::Error::from(e.into_error()))
    });
    match res {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!(
            "error\n\"cannot write CSV: {}\"\n",
            e.to_string().replace('"', "'")
        ),
    }
}

/// netperf's RR table with CPU columns (`netperf -t TCP_RR -c -C`, netperf 2.7 "MIGRATED"
/// omni output), column for column:
/// `"%-6d %-6d %-6d  %-6d %-6.2f  %-6.2f  %-6.2f %-6.2f %-6.3f  %-6.3f %s\n"` then the
/// remote socket sizes `"%-6d %-6d\n"`. UDP_RR prints one more blank after the rate, as
/// netperf does. Unknown values are -1 (sizes) and -1.00/-1.000 (CPU).
pub fn netperf(rec: &RunRecord, rr: &RrSummary) -> String {
    let (host, _) = split_host_port(&rec.plan.server);
    let v6 = host.parse::<std::net::Ipv6Addr>().is_ok();
    let (any, family) = if v6 {
        ("::", "AF_INET6")
    } else {
        ("0.0.0.0", "AF_INET")
    };
    let title = match rr.kind {
        RrKind::TcpRr => "TCP REQUEST/RESPONSE",
        RrKind::TcpCrr => "TCP Connect/Request/Response",
        RrKind::UdpRr => "UDP REQUEST/RESPONSE",
        RrKind::TcpBounceback => "TCP BOUNCEBACK",
    };
    let mut out = format!(
        "MIGRATED {title} TEST from {any} ({any}) port 0 {family} to {host} () port 0 {family} : first burst {}\n",
        rr.burst.saturating_sub(1)
    );
    out.push_str(
        "Local /Remote\n\
         Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n\
         Send   Recv   Size    Size   Time    Rate     local  remote local   remote\n\
         bytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr\n\n",
    );
    let size = |v: Option<u32>| v.map_or(-1, i64::from);
    let (ls, lr) = socket_sizes(Some(&rec.client));
    let (rs, rrcv) = socket_sizes(rec.server.as_ref());
    let util = |e: Option<&EndSummary>| e.and_then(|e| e.cpu_util_percent).unwrap_or(-1.0);
    let secs = rr.duration_ns as f64 / 1e9;
    let tps = rr.transactions_per_sec.unwrap_or(-1.0);
    let gap = if rr.kind == RrKind::UdpRr {
        "   "
    } else {
        "  "
    };
    out.push_str(&format!(
        "{:<6} {:<6} {:<6}  {:<6} {secs:<6.2}  {tps:<6.2}{gap}{:<6.2} {:<6.2} {:<6.3}  {:<6.3} \n",
        size(ls),
        size(lr),
        rr.request_bytes,
        rr.response_bytes,
        util(Some(&rec.summary.client)),
        util(rec.summary.server.as_ref()),
        rr.client_service_demand_us_per_tran.unwrap_or(-1.0),
        rr.server_service_demand_us_per_tran.unwrap_or(-1.0),
    ));
    out.push_str(&format!("{:<6} {:<6}\n", size(rs), size(rrcv)));
    out
}

/// The one table netperf `-i`/`-I` prints for repeated RR runs: the first run's sizes with
/// the mean elapsed time, transaction rate, CPU and service demand (each the mean of the
/// runs that measured it, else netperf's placeholder). `None` without RR runs.
pub fn netperf_average(runs: &[RunRecord]) -> Option<String> {
    let first = runs.first()?;
    let rr0 = first.rr.as_ref()?;
    let rrs: Vec<&RrSummary> = runs.iter().filter_map(|r| r.rr.as_ref()).collect();
    let mean = |v: Vec<Option<f64>>| -> Option<f64> {
        let n = v.len();
        let all: Option<Vec<f64>> = v.into_iter().collect();
        all.filter(|_| n > 0)
            .map(|a| a.iter().sum::<f64>() / n as f64)
    };
    let mut avg = first.clone();
    let mut rr = rr0.clone();
    rr.duration_ns =
        (rrs.iter().map(|r| r.duration_ns as f64).sum::<f64>() / rrs.len() as f64).round() as u64;
    rr.transactions_per_sec = mean(rrs.iter().map(|r| r.transactions_per_sec).collect());
    rr.client_service_demand_us_per_tran = mean(
        rrs.iter()
            .map(|r| r.client_service_demand_us_per_tran)
            .collect(),
    );
    rr.server_service_demand_us_per_tran = mean(
        rrs.iter()
            .map(|r| r.server_service_demand_us_per_tran)
            .collect(),
    );
    avg.summary.client.cpu_util_percent = mean(
        runs.iter()
            .map(|r| r.summary.client.cpu_util_percent)
            .collect(),
    );
    if let Some(s) = avg.summary.server.as_mut() {
        s.cpu_util_percent = mean(
            runs.iter()
                .map(|r| r.summary.server.as_ref().and_then(|s| s.cpu_util_percent))
                .collect(),
        );
    }
    Some(netperf(&avg, &rr))
}

/// Header of the live RR lines.
pub fn interval_header() -> String {
    format!(
        "{:<8}  {:<13}  {:<14}  {:<12}  cpu",
        "[side]", "interval", "transactions", "per second"
    )
}

/// One RR interval, e.g. `[client]  1.00-2.00 s    55012           55012.0/s     cpu 99%`.
pub fn interval_line(side: Role, iv: &IntervalReport) -> String {
    let side = match side {
        Role::Client => "[client]",
        Role::Server => "[server]",
    };
    let span = iv.end_ns.saturating_sub(iv.start_ns);
    let interval = format!(
        "{:.2}-{:.2} s",
        iv.start_ns as f64 / 1e9,
        iv.end_ns as f64 / 1e9
    );
    let n = iv.transactions;
    let rate = n.filter(|_| span > 0).map(|n| n as f64 * 1e9 / span as f64);
    let mut line = format!(
        "{side:<8}  {interval:<13}  {:<14}  {:<12}  cpu {}",
        opt(n, |n| n.to_string()),
        opt(rate, |r| format!("{r:.1}/s")),
        opt(iv.cpu_percent, |c| format!("{c:.0}%")),
    );
    if let Some(l) = iv.rx_lost {
        line.push_str(&format!("  lost {l}"));
    }
    if iv.omitted {
        line.push_str("  (omitted)");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    #[test]
    fn netperf_tcp_rr_matches_netperf_layout() {
        // Row shape of `netperf -t TCP_RR -c -C` on this machine:
        // "16384  131072 1       1      1.00    46941.72  100.00 100.00 42.606  42.606 ".
        // Fixture: 554,257 transactions in 10 s = 55,425.70/s; client 32.16 % of 2 CPUs →
        // 0.3216 × 2 × 1e7 µs / 554,257 = 11.605 us/Tr; server 32.33 % → 11.666 us/Tr.
        let rec = fixtures::tcp_rr();
        let rr = rec.rr.as_ref().unwrap();
        let expected = "\
MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : first burst 0
Local /Remote
Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem
Send   Recv   Size    Size   Time    Rate     local  remote local   remote
bytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr

16384  131072 1       1      10.00   55425.70  32.16  32.33  11.605  11.666 
16384  131072
";
        assert_eq!(netperf(&rec, rr), expected);
    }

    #[test]
    fn table_shows_rate_latency_and_cost() {
        let rec = fixtures::tcp_rr();
        let out = table(&rec, rec.rr.as_ref().unwrap());
        assert!(out.contains("TCP_RR with 127.0.0.1:5301"), "{out}");
        let rate = out.lines().nth(3).unwrap();
        assert_eq!(
            rate.split_whitespace().collect::<Vec<_>>(),
            ["554257", "55425.7"]
        );
        let lat = out
            .lines()
            .find(|l| l.starts_with("latency ") && l.contains("us"))
            .unwrap();
        // p50 17 µs, p99 30 µs, max 2.5 ms from the fixture.
        assert!(
            lat.contains("17.0 us") && lat.contains("30.0 us") && lat.contains("2.50 ms"),
            "{lat}"
        );
        let client = out.lines().find(|l| l.starts_with("client ")).unwrap();
        assert!(client.contains("11.605"), "{client}");
    }

    #[test]
    fn udp_rr_shows_loss_and_csv_has_percentiles() {
        let mut rec = fixtures::tcp_rr();
        if let Some(rr) = rec.rr.as_mut() {
            rr.kind = RrKind::UdpRr;
            rr.lost_transactions = Some(100);
            rr.lost_percent = Some(0.018);
            rr.late_responses = Some(3);
            rr.timeout_ms = Some(200);
        }
        let rr = rec.rr.clone().unwrap();
        let out = table(&rec, &rr);
        assert!(out.contains("100 (0.02%)"), "{out}");
        let csv = csv(&rec, &rr);
        let mut lines = csv.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |n: &str| row[head.iter().position(|h| *h == n).unwrap()];
        assert_eq!(col("test"), "UDP_RR");
        assert_eq!(col("latency_p99_ns"), "30000");
        assert_eq!(col("lost_transactions"), "100");
        // The verdict columns end the row, as in the stream CSV.
        assert_eq!(
            &head[head.len() - 3..],
            ["interrupted", "verdict", "verdict_message"]
        );
        let primary = rec.diagnosis.as_ref().unwrap().primary().unwrap();
        assert_eq!(col("verdict"), primary.kind.name());
        let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<RrCsvRowOwned> = reader.deserialize().map(Result::unwrap).collect();
        assert_eq!(rows[0].verdict_message, primary.message);
        assert!(netperf(&rec, &rr).contains("55425.70   32.16"));
    }

    /// The two verdict columns read back (the message may hold commas, so it is quoted).
    #[derive(serde::Deserialize)]
    struct RrCsvRowOwned {
        verdict_message: String,
    }

    #[test]
    fn interval_lines() {
        let iv = IntervalReport {
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
            transactions: Some(55_012),
            cpu_percent: Some(99.4),
            ..IntervalReport::default()
        };
        assert_eq!(
            interval_line(Role::Client, &iv),
            "[client]  1.00-2.00 s    55012           55012.0/s     cpu 99%"
        );
        assert!(interval_header().starts_with("[side]    interval"));
    }
}
