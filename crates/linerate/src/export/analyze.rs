//! `linerate analyze` as a table and as CSV: pure functions of the
//! [`AnalysisRecord`], fixed decimals, "-" where a figure could not be measured.

use std::fmt::Write as _;

use crate::model::trace::{
    AnalysisRecord, Endpoint, OtherFlows, TcpConnection, TcpDirection, UdpFlow,
};
use crate::model::units::{format_bps, format_bytes};

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.decimals$}"))
}

/// The human-readable report.
pub fn table(rec: &AnalysisRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {}, {} packets ({} TCP/UDP, {} other, {} undecodable) over {} s",
        rec.file,
        rec.format,
        rec.packets,
        rec.packets_analysed,
        rec.packets_other,
        rec.packets_undecodable,
        opt(rec.duration_s, 3)
    );
    for c in &rec.tcp {
        connection(&mut out, c);
    }
    if !rec.udp.is_empty() {
        let _ = writeln!(
            out,
            "\nUDP flows\n  {:>3}  {:<44} {:>9} {:>10} {:>12} {:>12} {:>10} {:>6}",
            "#", "flow", "packets", "bytes", "throughput", "packets/s", "max gap", "gaps"
        );
        for u in &rec.udp {
            let _ = writeln!(
                out,
                "  {:>3}  {:<44} {:>9} {:>10} {:>12} {:>12} {:>10} {:>6}",
                u.index,
                format!("{} -> {}", u.src, u.dst),
                u.packets,
                format_bytes(u.bytes),
                u.throughput_bps.map_or_else(|| "-".into(), format_bps),
                opt(u.packets_per_s, 1),
                u.max_gap_ms
                    .map_or_else(|| "-".into(), |g| format!("{g:.3} ms")),
                u.gaps_over_10ms
            );
        }
    }
    if let Some(o) = &rec.others {
        let _ = writeln!(
            out,
            "\nothers (beyond the {} largest): {} TCP connections ({} with a handshake, {} reset), {} packets, {} ({} seen once), {} retransmissions, {} out of order, {} duplicate ACKs; {} UDP flows, {} packets, {}",
            rec.top.map_or_else(|| "-".to_string(), |t| t.to_string()),
            o.tcp_connections,
            o.tcp_handshakes,
            o.tcp_reset,
            o.tcp_packets,
            format_bytes(o.tcp_bytes),
            format_bytes(o.tcp_unique_bytes),
            o.tcp_retransmissions,
            o.tcp_out_of_order,
            o.tcp_duplicate_acks,
            o.udp_flows,
            o.udp_packets,
            format_bytes(o.udp_bytes)
        );
    }
    if !rec.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &rec.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

fn connection(out: &mut String, c: &TcpConnection) {
    let state = match (c.handshake_seen, c.closed, c.reset) {
        (_, _, true) => "reset",
        (true, true, _) => "complete",
        (true, false, _) => "open at the end",
        (false, true, _) => "closed, opened before the capture",
        (false, false, _) => "opened before the capture",
    };
    let _ = writeln!(
        out,
        "\nTCP {}  {} -> {}  start {:.3} s, {:.3} s, {}; handshake RTT {} ms, longest idle {} ms",
        c.index,
        c.a,
        c.b,
        c.start_s,
        c.duration_s,
        state,
        opt(c.handshake_rtt_ms, 3),
        opt(c.idle_max_ms, 3)
    );
    let _ = writeln!(
        out,
        "  {:<5} {:>8} {:>8} {:>10} {:>10} {:>6} {:>5} {:>5} {:>5} {:>7} {:>6} {:>5} {:>26} {:>12}",
        "dir",
        "packets",
        "data",
        "bytes",
        "unique",
        "rexmt",
        "fast",
        "spur",
        "ooo",
        "dupack",
        "sack",
        "zwin",
        "RTT min/avg/max ms (n)",
        "throughput"
    );
    for (name, d) in [("a->b", &c.a_to_b), ("b->a", &c.b_to_a)] {
        let rtt = d.rtt.as_ref().filter(|r| r.samples > 0).map_or_else(
            || "-".to_string(),
            |r| {
                format!(
                    "{:.3}/{:.3}/{:.3} ({})",
                    r.min_ms, r.avg_ms, r.max_ms, r.samples
                )
            },
        );
        let _ = writeln!(
            out,
            "  {:<5} {:>8} {:>8} {:>10} {:>10} {:>6} {:>5} {:>5} {:>5} {:>7} {:>6} {:>5} {:>26} {:>12}",
            name,
            d.packets,
            d.data_packets,
            format_bytes(d.bytes),
            format_bytes(d.unique_bytes),
            d.retransmissions,
            d.fast_retransmissions,
            d.spurious_retransmissions,
            d.out_of_order,
            d.duplicate_acks,
            d.sack_blocks,
            d.zero_windows,
            rtt,
            d.throughput_bps.map_or_else(|| "-".into(), format_bps)
        );
    }
    for (name, d) in [("a->b", &c.a_to_b), ("b->a", &c.b_to_a)] {
        direction_details(out, name, d);
    }
    for f in &c.findings {
        let dir = if f.direction == "a_to_b" {
            "a->b"
        } else {
            "b->a"
        };
        let _ = writeln!(out, "  finding {dir}: {}", f.message);
    }
}

fn direction_details(out: &mut String, name: &str, d: &TcpDirection) {
    if d.sequence_span_bytes > d.unique_bytes {
        let _ = writeln!(
            out,
            "  bytes {name}: {} seen of a {} sequence span (the capture missed the rest); \"unique\" and the throughput count the bytes seen",
            format_bytes(d.unique_bytes),
            format_bytes(d.sequence_span_bytes)
        );
    }
    if let Some(t) = &d.time {
        if d.unique_bytes > 0 {
            let _ = writeln!(
                out,
                "  time {name} ({:.3} s): receive window {:.1}%, application {:.1}%, loss recovery {:.1}%, sending {:.1}%; delayed-ACK stalls {:.1}%",
                t.total_s,
                t.receive_window_limited_percent,
                t.application_limited_percent,
                t.loss_recovery_percent,
                t.sending_percent,
                t.delayed_ack_stall_percent
            );
        }
    }
    if let Some(a) = &d.ack_delay {
        if d.unique_bytes > 0 {
            let _ = writeln!(
                out,
                "  ACK delay {name} (beyond min RTT, {} ACKs of everything outstanding): p50 {:.3} ms, p90 {:.3} ms, max {:.3} ms",
                a.samples, a.p50_ms, a.p90_ms, a.max_ms
            );
        }
    }
    if let Some(r) = &d.rfc6349 {
        let _ = writeln!(
            out,
            "  RFC 6349 {name} at {} (MTU {}, ideal {}): transfer time ratio {}, TCP efficiency {}%, buffer delay {}%",
            format_bps(r.bottleneck_bps as f64),
            r.mtu,
            format_bps(r.ideal_bps),
            opt(r.transfer_time_ratio, 3),
            opt(r.tcp_efficiency_percent, 2),
            opt(r.buffer_delay_percent, 1)
        );
    }
}

/// The CSV's columns.
const CSV_HEADER: [&str; 37] = [
    "proto",
    "index",
    "direction",
    "src",
    "dst",
    "start_s",
    "duration_s",
    "packets",
    "data_packets",
    "bytes",
    "unique_bytes",
    "retransmissions",
    "fast_retransmissions",
    "spurious_retransmissions",
    "retransmitted_bytes",
    "out_of_order",
    "lost_segments",
    "duplicate_acks",
    "sack_blocks",
    "zero_windows",
    "window_probes",
    "rtt_samples",
    "rtt_min_ms",
    "rtt_avg_ms",
    "rtt_max_ms",
    "rtt_stddev_ms",
    "throughput_bps",
    "receive_window_limited_percent",
    "application_limited_percent",
    "loss_recovery_percent",
    "delayed_ack_stall_percent",
    "transfer_time_ratio",
    "tcp_efficiency_percent",
    "buffer_delay_percent",
    "packets_per_s",
    "max_gap_ms",
    "findings",
];

/// A figure with six decimals, or an empty cell.
fn f6(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:.6}"))
}

/// CSV: a header, one row per TCP direction and one per UDP flow.
pub fn csv(rec: &AnalysisRecord) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(CSV_HEADER);
    for c in &rec.tcp {
        for (name, d, src, dst) in [
            ("a_to_b", &c.a_to_b, &c.a, &c.b),
            ("b_to_a", &c.b_to_a, &c.b, &c.a),
        ] {
            let _ = w.write_record(tcp_row(c, name, d, src, dst));
        }
    }
    for u in &rec.udp {
        let _ = w.write_record(udp_row(u));
    }
    // The connections and flows beyond --top, summed: "index" holds how many.
    if let Some(o) = &rec.others {
        for row in others_rows(o) {
            let _ = w.write_record(&row);
        }
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// The CSV row of one direction (`name`) of a TCP connection.
fn tcp_row(
    c: &TcpConnection,
    name: &str,
    d: &TcpDirection,
    src: &Endpoint,
    dst: &Endpoint,
) -> [String; 37] {
    let rtt = d.rtt.as_ref().filter(|r| r.samples > 0);
    let t = d.time.as_ref();
    let r = d.rfc6349.as_ref();
    let findings: Vec<&str> = c
        .findings
        .iter()
        .filter(|x| x.direction == name)
        .map(|x| x.kind.as_str())
        .collect();
    [
        "tcp".to_string(),
        c.index.to_string(),
        name.to_string(),
        src.to_string(),
        dst.to_string(),
        format!("{:.6}", c.start_s),
        format!("{:.6}", c.duration_s),
        d.packets.to_string(),
        d.data_packets.to_string(),
        d.bytes.to_string(),
        d.unique_bytes.to_string(),
        d.retransmissions.to_string(),
        d.fast_retransmissions.to_string(),
        d.spurious_retransmissions.to_string(),
        d.retransmitted_bytes.to_string(),
        d.out_of_order.to_string(),
        d.lost_segments.to_string(),
        d.duplicate_acks.to_string(),
        d.sack_blocks.to_string(),
        d.zero_windows.to_string(),
        d.window_probes.to_string(),
        rtt.map_or(0, |r| r.samples).to_string(),
        f6(rtt.map(|r| r.min_ms)),
        f6(rtt.map(|r| r.avg_ms)),
        f6(rtt.map(|r| r.max_ms)),
        f6(rtt.map(|r| r.stddev_ms)),
        f6(d.throughput_bps),
        f6(t.map(|t| t.receive_window_limited_percent)),
        f6(t.map(|t| t.application_limited_percent)),
        f6(t.map(|t| t.loss_recovery_percent)),
        f6(t.map(|t| t.delayed_ack_stall_percent)),
        f6(r.and_then(|r| r.transfer_time_ratio)),
        f6(r.and_then(|r| r.tcp_efficiency_percent)),
        f6(r.and_then(|r| r.buffer_delay_percent)),
        String::new(),
        String::new(),
        findings.join(";"),
    ]
}

/// The CSV row of one UDP flow.
fn udp_row(u: &UdpFlow) -> Vec<String> {
    let mut row = vec![String::new(); CSV_HEADER.len()];
    row[0] = "udp".into();
    row[1] = u.index.to_string();
    row[2] = "a_to_b".into();
    row[3] = u.src.to_string();
    row[4] = u.dst.to_string();
    row[5] = format!("{:.6}", u.start_s);
    row[6] = format!("{:.6}", u.duration_s);
    row[7] = u.packets.to_string();
    row[8] = u.packets.to_string();
    row[9] = u.bytes.to_string();
    row[26] = f6(u.throughput_bps);
    row[34] = f6(u.packets_per_s);
    row[35] = f6(u.max_gap_ms);
    row
}

/// The rows of the TCP connections and UDP flows summed under "others".
fn others_rows(o: &OtherFlows) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    if o.tcp_connections > 0 {
        let mut row = vec![String::new(); CSV_HEADER.len()];
        row[0] = "tcp_others".into();
        row[1] = o.tcp_connections.to_string();
        row[2] = "both".into();
        row[7] = o.tcp_packets.to_string();
        row[9] = o.tcp_bytes.to_string();
        row[10] = o.tcp_unique_bytes.to_string();
        row[11] = o.tcp_retransmissions.to_string();
        row[15] = o.tcp_out_of_order.to_string();
        row[16] = o.tcp_lost_segments.to_string();
        row[17] = o.tcp_duplicate_acks.to_string();
        rows.push(row);
    }
    if o.udp_flows > 0 {
        let mut row = vec![String::new(); CSV_HEADER.len()];
        row[0] = "udp_others".into();
        row[1] = o.udp_flows.to_string();
        row[2] = "a_to_b".into();
        row[7] = o.udp_packets.to_string();
        row[8] = o.udp_packets.to_string();
        row[9] = o.udp_bytes.to_string();
        rows.push(row);
    }
    rows
}
