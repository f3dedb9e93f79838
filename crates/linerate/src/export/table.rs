//! The default human output: a compact table per run, and iperf3-like live interval lines.
//!
//! A value that was not measured prints as "-", never as 0.

use super::align::{align, of_cpus};
use super::sender_bytes;
use crate::model::dut::DutCounters;
use crate::model::labels::flow_label;
use crate::model::latency::LatencyUnderLoad;
use crate::model::rr::LatencySummary;
use crate::model::units::{format_bps, format_bytes, format_duration_ns, format_pps};
use crate::model::{EndSummary, FlowSummary, RunRecord};
use linerate_wire::control::{Direction, Transport};
use linerate_wire::report::{IntervalReport, Role};

const MISSING: &str = "-";

/// The whole run: a title line, one row per flow, one row per end, the diagnosis, then the
/// warnings.
pub fn render(rec: &RunRecord) -> String {
    if let Some(rr) = &rec.rr {
        let mut out = super::rr::table(rec, rr);
        out.push_str(&super::profile::table_block(rec));
        if let Some(d) = &rec.diagnosis {
            out.push_str(&super::diagnosis::table_block(d));
        }
        return out;
    }
    let mut out = title(rec);
    out.push('\n');
    out.push_str(&align(&flow_rows(rec)));
    out.push('\n');
    out.push_str(&align(&end_rows(rec)));
    out.push_str(&shaping_lines(rec));
    out.push_str(&data_path_lines(rec));
    if let Some(l) = &rec.latency_under_load {
        out.push_str(&latency_block(l));
    }
    if let Some(d) = &rec.dut {
        out.push_str(&dut_block(d));
    }
    out.push_str(&super::profile::table_block(rec));
    if let Some(d) = &rec.diagnosis {
        out.push_str(&super::diagnosis::table_block(d));
    }
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

fn title(rec: &RunRecord) -> String {
    let p = &rec.plan;
    let direction = match p.direction {
        Direction::Send => "send",
        Direction::Receive => "receive",
        Direction::Both => "both directions",
    };
    let streams = if p.streams == 1 { "stream" } else { "streams" };
    let mut t = format!(
        "{} {} {direction} with {}: {} {streams}, {} B writes, {} measured, started {}",
        rec.tool_version,
        transport_name(p.transport),
        p.server,
        p.streams,
        p.write_size,
        format_duration_ns(rec.summary.client.duration_ns),
        rec.started_at,
    );
    if rec.interrupted {
        t.push_str(" (interrupted)");
    }
    t.push('\n');
    t
}

fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Tcp => "tcp",
        Transport::Udp => "udp",
        Transport::Quic => "quic",
    }
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

fn flow_rows(rec: &RunRecord) -> Vec<Vec<String>> {
    let udp = rec.plan.transport == Transport::Udp;
    let mut head = vec!["flow", "sender", "receiver", "sent", "received"];
    if udp {
        // Datagrams are what the sockets moved, packets what the interfaces counted: with
        // UDP GSO/GRO one packet carries many datagrams.
        head.extend([
            "sent dgram/s",
            "recv dgram/s",
            "pkt/s out",
            "pkt/s in",
            "dgram/pkt",
            "loss",
            "lost",
            "dup",
            "reorder",
            "jitter",
        ]);
    } else {
        head.push("retransmits");
    }
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    for f in &rec.summary.flows {
        rows.push(flow_row(rec, f, udp));
    }
    rows
}

fn flow_row(rec: &RunRecord, f: &FlowSummary, udp: bool) -> Vec<String> {
    let mut row = vec![
        flow_label(f.direction).to_string(),
        opt(f.sender_bps, format_bps),
        opt(f.receiver_bps, format_bps),
        opt(sender_bytes(rec, f), format_bytes),
        opt(f.receiver_bytes, format_bytes),
    ];
    if udp {
        let u = f.udp.as_ref();
        row.extend([
            opt(f.sender_pps, format_pps),
            opt(f.receiver_pps, format_pps),
            opt(f.sender_interface_pps, format_pps),
            opt(f.receiver_interface_pps, format_pps),
            opt(
                f.sender_datagrams_per_packet
                    .or(f.receiver_datagrams_per_packet),
                |r| format!("{r:.1}"),
            ),
            opt(f.loss_percent, |l| format!("{l:.2}%")),
            opt(f.lost_datagrams.or(u.map(|u| u.lost)), |n| n.to_string()),
            opt(u.map(|u| u.duplicates), |n| n.to_string()),
            opt(u.map(|u| u.reordered), |n| n.to_string()),
            opt(u.and_then(|u| u.jitter_ns), format_duration_ns),
        ]);
    } else {
        row.push(opt(f.retransmits, |n| n.to_string()));
    }
    row
}

fn end_rows(rec: &RunRecord) -> Vec<Vec<String>> {
    let head = [
        "end",
        "cpu (all)",
        "busiest cpu",
        "demand us/KB",
        "own threads",
        "io calls",
        "us/call",
        "calls/s",
        "sndbuf",
        "rcvbuf",
    ];
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    rows.push(end_row("client", Some(&rec.summary.client)));
    rows.push(end_row("server", rec.summary.server.as_ref()));
    rows
}

fn end_row(name: &str, e: Option<&EndSummary>) -> Vec<String> {
    let Some(e) = e else {
        // The end did not report: every figure is unknown.
        let mut row = vec![name.to_string()];
        row.extend(std::iter::repeat_n(MISSING.to_string(), 9));
        return row;
    };
    vec![
        name.to_string(),
        opt(e.cpu_util_percent, |v| of_cpus(v, e.cpu_count)),
        opt(e.busiest_cpu_util_percent, |v| format!("{v:.2}%")),
        opt(e.service_demand_us_per_kb, |v| format!("{v:.3}")),
        opt(e.tool_cpu_percent, |v| format!("{v:.1}%")),
        opt(e.io_calls.filter(|_| e.calls_per_sec.is_some()), |v| {
            v.to_string()
        }),
        opt(e.us_per_call, |v| format!("{v:.2}")),
        opt(e.calls_per_sec, |v| format!("{v:.0}")),
        opt(e.sndbuf_bytes, |v| format_bytes(u64::from(v))),
        opt(e.rcvbuf_bytes, |v| format_bytes(u64::from(v))),
    ]
}

/// One line per end whose test interface has a shaping root qdisc (tbf, htb), e.g.
/// "shaped: client egress on veth0 by tbf at 50.00 Mbit/s"; nothing when none has.
pub(super) fn shaping_lines(rec: &RunRecord) -> String {
    let ends = [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ];
    let mut out = String::new();
    for (name, side) in ends {
        let Some(i) = side.and_then(|s| s.interface.as_ref()) else {
            continue;
        };
        if let Some(rate) = i.shaped_rate_bps {
            out.push_str(&format!(
                "shaped: {name} egress on {} by {} at {}\n",
                i.name,
                i.root_qdisc.as_deref().unwrap_or("a qdisc"),
                format_bps(rate as f64)
            ));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// With `--zerocopy`, `--sendfile` or `--no-rx-copy`: how each end's TCP streams moved
/// their data, as the ends report it, and the kernel's `MSG_ZEROCOPY` completions, e.g.
/// "data path: client sends with MSG_ZEROCOPY (5986 sends: 5986 completed, 5986 copied by
/// the kernel, 0 zero-copy)". Nothing for a test that used the copying defaults.
pub(super) fn data_path_lines(rec: &RunRecord) -> String {
    let p = &rec.plan;
    let any_zc =
        |s: &linerate_wire::report::SideReport| s.streams.iter().any(|x| x.zerocopy.is_some());
    if p.send_mode.is_copy()
        && p.recv_mode.is_copy()
        && !any_zc(&rec.client)
        && !rec.server.as_ref().is_some_and(any_zc)
    {
        return String::new();
    }
    let mut out = String::new();
    for (name, side) in [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ] {
        let Some(side) = side else {
            out.push_str(&format!("data path: {name} did not report\n"));
            continue;
        };
        if let Some(m) = side.streams.iter().find_map(|s| s.send_mode) {
            let mut zc = linerate_wire::report::ZerocopyReport::default();
            let mut have = false;
            for z in side.streams.iter().filter_map(|s| s.zerocopy) {
                have = true;
                zc.sends += z.sends;
                zc.completed += z.completed;
                zc.copied += z.copied;
                zc.outstanding += z.outstanding;
                zc.enobufs += z.enobufs;
            }
            let mut line = format!("data path: {name} sends with {}", m.describe());
            if have {
                line.push_str(&format!(
                    " ({} sends: {} completed, {} copied by the kernel, {} zero-copy",
                    zc.sends,
                    zc.completed,
                    zc.copied,
                    zc.zero_copied()
                ));
                if zc.outstanding > 0 {
                    line.push_str(&format!(", {} never completed", zc.outstanding));
                }
                if zc.enobufs > 0 {
                    line.push_str(&format!(", {} ENOBUFS retries", zc.enobufs));
                }
                line.push(')');
            }
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(m) = side.streams.iter().find_map(|s| s.recv_mode) {
            out.push_str(&format!(
                "data path: {name} receives with {}\n",
                m.describe()
            ));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// `--latency`: the probes' idle and loaded percentiles, the increase, the loaded flows'
/// smoothed RTT and the responsiveness.
/// The device's own counters (`--dut`) over the test: its CPU, interrupts and softirqs,
/// and each interface that moved packets. Its warnings are among the record's.
pub(super) fn dut_block(d: &DutCounters) -> String {
    let over = d.duration_ns.map_or(String::new(), |ns| {
        format!(" over {}", format_duration_ns(ns))
    });
    let mut out = format!("\nthe device (--dut {}){over}:\n", d.device);
    if d.same_host == Some(true) {
        out.push_str("  (on the tester's own host: its CPU figures include the tester's work)\n");
    }
    if let Some(c) = &d.cpu {
        out.push_str(&format!(
            "  CPU {:.1}% busy (all CPUs); busiest CPU {} {:.1}% busy, softirq {:.1}%, irq {:.1}%\n",
            c.all_busy_percent,
            c.busiest_cpu,
            c.busiest_busy_percent,
            c.busiest_softirq_percent,
            c.busiest_irq_percent
        ));
    }
    let counts = [
        ("interrupts", d.interrupts.as_ref()),
        ("NET_RX softirqs", d.net_rx_softirqs.as_ref()),
        ("NET_TX softirqs", d.net_tx_softirqs.as_ref()),
    ];
    let counts: Vec<String> = counts
        .iter()
        .filter_map(|(name, c)| c.map(|c| format!("{name} {}", c.counts.total)))
        .collect();
    if !counts.is_empty() {
        out.push_str(&format!("  {}\n", counts.join(", ")));
    }
    let mut rows = vec![[
        "interface",
        "rx packets",
        "tx packets",
        "rx drops",
        "tx drops",
        "errors",
    ]
    .map(String::from)
    .to_vec()];
    for i in d
        .interfaces
        .iter()
        .filter(|i| i.rx_packets > 0 || i.tx_packets > 0 || i.ingress_drops() > 0)
    {
        rows.push(vec![
            i.name.clone(),
            i.rx_packets.to_string(),
            i.tx_packets.to_string(),
            i.ingress_drops().to_string(),
            i.tx_dropped.to_string(),
            i.rx_errors.saturating_add(i.tx_errors).to_string(),
        ]);
    }
    if rows.len() > 1 {
        for line in align(&rows).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

pub(super) fn latency_block(l: &LatencyUnderLoad) -> String {
    let pcts = |s: Option<&LatencySummary>| {
        s.map_or(MISSING.to_string(), |s| {
            format!(
                "{} / {} / {}",
                format_duration_ns(s.p50_ns),
                format_duration_ns(s.p90_ns),
                format_duration_ns(s.p99_ns)
            )
        })
    };
    let count = |s: Option<&LatencySummary>| s.map_or(MISSING.to_string(), |s| s.count.to_string());
    let mut rows = vec![vec![
        "probe".to_string(),
        "idle p50 / p90 / p99".to_string(),
        "n".to_string(),
        "loaded p50 / p90 / p99".to_string(),
        "n".to_string(),
    ]];
    for (name, idle, loaded) in [
        ("TCP_RR", l.idle_tcp.as_ref(), l.loaded_tcp.as_ref()),
        ("UDP_RR", l.idle_udp.as_ref(), l.loaded_udp.as_ref()),
    ] {
        rows.push(vec![
            name.to_string(),
            pcts(idle),
            count(idle),
            pcts(loaded),
            count(loaded),
        ]);
    }
    let mut out = format!(
        "\nlatency under load ({} probes a second each; idle baseline {} before the load):\n",
        l.probe_rate_tps,
        format_duration_ns(l.idle_duration_ns)
    );
    out.push_str(&align(&rows));
    if let (Some(p), Some(r), Some(d)) = (&l.increase_probe, l.increase_ratio, l.added_delay_ns) {
        let sign = if d < 0 { "-" } else { "+" };
        out.push_str(&format!(
            "increase: {:.1}x the idle median ({sign}{}, {} probe)\n",
            r,
            format_duration_ns(d.unsigned_abs()),
            p.to_uppercase()
        ));
    }
    if let Some(lost) = l.loaded_udp_lost.filter(|&n| n > 0) {
        out.push_str(&format!("UDP probes lost under load: {lost}\n"));
    }
    if let Some(us) = l.loaded_srtt_p50_us {
        out.push_str(&format!(
            "loaded flows' smoothed RTT (TCP_INFO, {} intervals): median {}\n",
            l.loaded_srtt_samples.unwrap_or(0),
            format_duration_ns((us * 1e3) as u64)
        ));
    }
    if let Some(r) = &l.responsiveness {
        let parts = match r.self_rpm {
            Some(s) => format!("foreign {:.0}, self {s:.0}", r.foreign_rpm),
            None => format!(
                "foreign {:.0}, no TCP load for the self part",
                r.foreign_rpm
            ),
        };
        let idle = r
            .idle_rpm
            .map_or(String::new(), |i| format!("; idle {i:.0} RPM"));
        out.push_str(&format!(
            "responsiveness: {:.0} RPM ({}; {parts}{idle}; {}, TCP-only, no TLS/HTTP)\n",
            r.rpm, r.rating, r.draft
        ));
    }
    out
}

// Live interval lines. Columns have fixed widths so successive lines line up under
// `interval_header`; every transport-specific field is always present, "-" when unknown.

const W_SIDE: usize = 8;
const W_INTERVAL: usize = 13;
const W_BYTES: usize = 10;
const W_RATE: usize = 12;

fn fixed(fields: &[(String, usize)], tail: &[String]) -> String {
    let mut line = String::new();
    for (text, width) in fields {
        line.push_str(&format!("{text:<width$}  "));
    }
    for (i, text) in tail.iter().enumerate() {
        // Label-value fields: pad all but the last one to a common width, two blanks at least.
        if i + 1 < tail.len() {
            line.push_str(&format!("{text:<16}  "));
        } else {
            line.push_str(text);
        }
    }
    line.trim_end().to_string()
}

/// The header above [`interval_line`]s.
pub fn interval_header(transport: Transport) -> String {
    let tail: Vec<String> = match transport {
        Transport::Tcp | Transport::Quic => vec!["retransmits", "rtt", "cwnd", "cpu"],
        Transport::Udp => vec!["datagrams/s", "lost", "cpu"],
    }
    .into_iter()
    .map(String::from)
    .collect();
    fixed(
        &[
            ("[side]".to_string(), W_SIDE),
            ("interval".to_string(), W_INTERVAL),
            ("transfer".to_string(), W_BYTES),
            ("bitrate".to_string(), W_RATE),
        ],
        &tail,
    )
}

/// One interval at one end, e.g.
/// `[client]  1.00-2.00 s    1.93 GiB    16.58 Gbit/s  retr 3            rtt 52 us         cwnd 1.20 MiB     cpu 48%`.
/// Warm-up intervals end in "(omitted)".
pub fn interval_line(side: Role, iv: &IntervalReport, transport: Transport) -> String {
    let side = match side {
        Role::Client => "[client]",
        Role::Server => "[server]",
    };
    let span_ns = iv.end_ns.saturating_sub(iv.start_ns);
    let secs = span_ns as f64 / 1e9;
    let interval = format!(
        "{:.2}-{:.2} s",
        iv.start_ns as f64 / 1e9,
        iv.end_ns as f64 / 1e9
    );
    // An end that both sends and receives (both directions) shows the two figures.
    let per_sec = |n: u64| (span_ns > 0).then(|| n as f64 / secs);
    let (bytes, rate) = match (iv.tx_bytes, iv.rx_bytes) {
        (tx, rx) if tx > 0 && rx > 0 => (
            format!("{}/{}", format_bytes(tx), format_bytes(rx)),
            format!(
                "{}/{}",
                opt(per_sec(tx * 8), format_bps),
                opt(per_sec(rx * 8), format_bps)
            ),
        ),
        (tx, 0) if tx > 0 => (format_bytes(tx), opt(per_sec(tx * 8), format_bps)),
        (_, rx) => (format_bytes(rx), opt(per_sec(rx * 8), format_bps)),
    };
    let cpu = format!("cpu {}", opt(iv.cpu_percent, |c| format!("{c:.0}%")));
    let mut tail = match transport {
        Transport::Tcp | Transport::Quic => vec![
            format!("retr {}", opt(iv.retransmits, |n| n.to_string())),
            format!("rtt {}", opt(iv.rtt_us, |r| format!("{r} us"))),
            format!("cwnd {}", opt(iv.cwnd_bytes, format_bytes)),
            cpu,
        ],
        Transport::Udp => {
            let packets = iv.rx_packets.or(iv.tx_packets);
            let lost = iv.rx_lost.map(|lost| {
                let expected = iv.rx_packets.unwrap_or(0) + lost;
                if expected > 0 {
                    format!("{lost} ({:.2}%)", lost as f64 * 100.0 / expected as f64)
                } else {
                    lost.to_string()
                }
            });
            vec![
                opt(packets.and_then(per_sec), format_pps),
                format!("lost {}", lost.unwrap_or_else(|| MISSING.to_string())),
                cpu,
            ]
        }
    };
    if iv.omitted {
        if let Some(last) = tail.last_mut() {
            last.push_str("  (omitted)");
        }
    }
    fixed(
        &[
            (side.to_string(), W_SIDE),
            (interval, W_INTERVAL),
            (bytes, W_BYTES),
            (rate, W_RATE),
        ],
        &tail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    /// An end that did not say its CPUs or count its calls (an iperf3 server): its share
    /// of all CPUs without a count, and dashes, not zeros.
    #[test]
    fn an_end_without_counts_shows_dashes() {
        let mut rec = fixtures::tcp_send();
        if let Some(e) = rec.summary.server.as_mut() {
            e.cpu_count = None;
            e.io_calls = None;
            e.us_per_call = None;
            e.calls_per_sec = None;
        }
        let out = render(&rec);
        let row = out.lines().find(|l| l.starts_with("server ")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], "85.16%", "{row}");
        assert_eq!(cells[5..8], ["-", "-", "-"], "{row}");
    }

    #[test]
    fn tcp_table_shows_flows_ends_and_figures() {
        let out = render(&fixtures::tcp_send());
        let expected = "\
linerate 0.1.0 tcp send with 192.168.0.4:5001: 1 stream, 65535 B writes, 10.25 s measured, started 2024-05-01T12:00:00Z

flow            sender        receiver      sent        received    retransmits
client->server  291.9 Mbit/s  291.9 Mbit/s  356.72 MiB  356.72 MiB  3

end     cpu (all)    busiest cpu  demand us/KB  own threads  io calls  us/call  calls/s  sndbuf      rcvbuf
client  24.81% of 4  98.00%       27.847        96.6%        5708      1795.73  557      248.00 KiB  -
server  85.16% of 1  85.16%       23.896        40.0%        45000     227.78   4390     -           204.00 KiB
";
        // The diagnosis block follows (its layout is tested in export::diagnosis).
        let rec = fixtures::tcp_send();
        let block = super::super::diagnosis::table_block(rec.diagnosis.as_ref().unwrap());
        assert_eq!(out, format!("{expected}{block}"));
        assert!(block.starts_with("\ndiagnosis:\n  tester_limited (client, medium): "));
    }

    #[test]
    fn a_shaped_interface_gets_a_line_after_the_ends() {
        let mut rec = fixtures::tcp_send();
        assert!(!render(&rec).contains("shaped:"));
        rec.client.interface = Some(linerate_wire::host::InterfaceFacts {
            name: "veth0".into(),
            root_qdisc: Some("tbf".into()),
            shaped_rate_bps: Some(50_000_000),
            ..Default::default()
        });
        let out = render(&rec);
        assert!(
            out.contains("\nshaped: client egress on veth0 by tbf at 50.00 Mbit/s\n"),
            "{out}"
        );
    }

    #[test]
    fn missing_values_print_as_dash_never_zero() {
        let out = render(&fixtures::no_server());
        assert!(out.ends_with(
            "warning: server report missing: control connection closed before results\n\
             warning: client CPU utilisation unavailable: /proc/stat could not be read\n"
        ));
        assert!(out.contains("(interrupted)"));
        assert!(
            !out.contains("0.00%"),
            "a missing CPU must not print as 0.00%:\n{out}"
        );
        assert!(!out.contains("0.00"), "no fake zeros:\n{out}");
        let client = out.lines().find(|l| l.starts_with("client ")).unwrap();
        let cells: Vec<&str> = client.split_whitespace().collect();
        // cpu, busiest, demand, own threads: unknown.
        assert_eq!(&cells[1..5], ["-", "-", "-", "-"]);
        let server = out.lines().find(|l| l.starts_with("server ")).unwrap();
        assert_eq!(server.split_whitespace().filter(|c| *c == "-").count(), 9);
        // The receiver's figures are unknown too.
        let flow = out
            .lines()
            .find(|l| l.starts_with("client->server"))
            .unwrap();
        assert_eq!(
            flow.split_whitespace().collect::<Vec<_>>(),
            [
                "client->server",
                "8.000",
                "Gbit/s",
                "-",
                "4.66",
                "GiB",
                "-",
                "-"
            ]
        );
    }

    #[test]
    fn udp_table_shows_loss_duplicates_reordering_and_jitter() {
        let out = render(&fixtures::udp_send());
        let flow = out
            .lines()
            .find(|l| l.starts_with("client->server"))
            .unwrap();
        // 990,050 datagrams / 10 s = 99,005/s: "99.00 kpps" (99.005 is stored just below the
        // tie); no interface counters; 10,000 lost of 1,000,000 sent = 1.00%; jitter 12,345 ns.
        assert_eq!(
            flow.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>(),
            [
                "client->server",
                "1.120 Gbit/s",
                "1.109 Gbit/s",
                "1.30 GiB",
                "1.29 GiB",
                "100.0 kpps",
                "99.00 kpps",
                "-",
                "-",
                "-",
                "1.00%",
                "10000",
                "50",
                "12",
                "12.3 us"
            ]
        );
    }

    #[test]
    fn tcp_interval_lines_line_up_under_the_header() {
        let rec = fixtures::tcp_send();
        let header = interval_header(Transport::Tcp);
        let warm = interval_line(Role::Client, &rec.client.intervals[0], Transport::Tcp);
        let line = interval_line(Role::Client, &rec.client.intervals[1], Transport::Tcp);
        assert_eq!(
            header,
            "[side]    interval       transfer    bitrate       retransmits       rtt               cwnd              cpu"
        );
        // 2,072,321,720 B in 1 s = 16.58 Gbit/s = 1.93 GiB.
        assert_eq!(
            line,
            "[client]  1.00-2.00 s    1.93 GiB    16.58 Gbit/s  retr 3            rtt 52 us         cwnd 1.20 MiB     cpu 48%"
        );
        assert!(warm.ends_with("cpu 25%  (omitted)"), "{warm}");
        assert_eq!(header.find("bitrate"), line.find("16.58"));
    }

    #[test]
    fn udp_interval_lines_show_rate_and_loss() {
        let rec = fixtures::udp_send();
        let server = rec.server.as_ref().unwrap();
        let rx = interval_line(Role::Server, &server.intervals[0], Transport::Udp);
        // 99,000 datagrams in 1 s; 1000 lost of 100,000 = 1.00%; CPU not sampled.
        assert_eq!(
            rx,
            "[server]  0.00-1.00 s    132.18 MiB  1.109 Gbit/s  99.00 kpps        lost 1000 (1.00%)  cpu -"
        );
        let tx = interval_line(Role::Client, &rec.client.intervals[0], Transport::Udp);
        assert!(tx.contains("100.0 kpps"), "{tx}");
        assert!(tx.contains("lost -"), "{tx}");
    }
}
