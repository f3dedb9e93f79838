//! A multicast test's record in the table, CSV and JSON formats: the sender's line, then
//! one row per receiver (never a mean over them), then the warnings.

use serde::Serialize;

use super::align::align;
use crate::model::multicast::{MulticastRecord, ReceiverRow, ReceiverStatus};

fn status_name(s: ReceiverStatus) -> &'static str {
    match s {
        ReceiverStatus::Received => "received",
        ReceiverStatus::ReceivedNothing => "received nothing",
        ReceiverStatus::NotJoined => "not joined",
        ReceiverStatus::NoReport => "no report",
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn receiver_cells(r: &ReceiverRow) -> Vec<String> {
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    vec![
        r.name.clone(),
        r.interface.clone().unwrap_or_else(|| "-".into()),
        opt(r.datagrams),
        opt(r.lost),
        r.loss_percent.map_or("-".into(), |l| format!("{l:.3}")),
        opt(r.duplicates),
        opt(r.reordered),
        r.jitter_us.map_or("-".into(), |j| format!("{j:.1}")),
        r.delay.map_or("-".into(), |d| us(d.p50_ns)),
        r.delay.map_or("-".into(), |d| us(d.p99_ns)),
        r.throughput_bps
            .map_or("-".into(), |b| format!("{:.2}", b / 1e6)),
        status_name(r.status).into(),
    ]
}

/// The human table.
pub fn render(rec: &MulticastRecord) -> String {
    let s = &rec.sender;
    let src = rec
        .source
        .as_ref()
        .map_or("any source".to_string(), |s| format!("source {s} (SSM)"));
    let dev = rec
        .interface
        .as_ref()
        .map_or(String::new(), |i| format!(" on {i}"));
    let mut out = format!(
        "multicast {}:{} ({src}), TTL {}{dev}, {}-byte datagrams at {:.2} Mbit/s\n",
        rec.group,
        rec.port,
        rec.ttl,
        rec.len_bytes,
        rec.rate_bps as f64 / 1e6
    );
    out.push_str(&format!(
        "sender: {} datagrams, {} bytes in {:.2} s ({} Mbit/s), {} send errors\n\n",
        s.datagrams,
        s.bytes,
        s.elapsed_s,
        s.throughput_bps
            .map_or("-".into(), |b| format!("{:.2}", b / 1e6)),
        s.send_errors
    ));
    let mut rows = vec![[
        "receiver",
        "iface",
        "datagrams",
        "lost",
        "loss%",
        "dup",
        "reord",
        "jitter_us",
        "delay_p50_us",
        "delay_p99_us",
        "Mbit/s",
        "status",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect::<Vec<_>>()];
    rows.extend(rec.receivers.iter().map(receiver_cells));
    out.push_str(&align(&rows));
    for w in &rec.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// The record as pretty JSON (schema `docs/json-schema/multicast-v1.json`).
pub fn json(rec: &MulticastRecord) -> String {
    super::json::pretty(rec)
}

/// One CSV row: a receiver, with the test's settings and the sender's count.
#[derive(Debug, Default, Serialize)]
struct CsvRow<'a> {
    group: &'a str,
    port: u16,
    source: Option<&'a str>,
    ttl: u32,
    len_bytes: u32,
    rate_bps: u64,
    sent_datagrams: u64,
    receiver: &'a str,
    status: &'a str,
    interface: Option<&'a str>,
    datagrams: Option<u64>,
    lost: Option<u64>,
    loss_percent: Option<f64>,
    duplicates: Option<u64>,
    reordered: Option<u64>,
    foreign: Option<u64>,
    jitter_us: Option<f64>,
    delay_p50_ns: Option<u64>,
    delay_p99_ns: Option<u64>,
    delay_max_ns: Option<u64>,
    throughput_bps: Option<f64>,
}

/// A header and one row per receiver.
pub fn csv(rec: &MulticastRecord) -> String {
    let rows = rec.receivers.iter().map(|r| CsvRow {
        group: &rec.group,
        port: rec.port,
        source: rec.source.as_deref(),
        ttl: rec.ttl,
        len_bytes: rec.len_bytes,
        rate_bps: rec.rate_bps,
        sent_datagrams: rec.sender.datagrams,
        receiver: &r.name,
        status: status_name(r.status),
        interface: r.interface.as_deref(),
        datagrams: r.datagrams,
        lost: r.lost,
        loss_percent: r.loss_percent,
        duplicates: r.duplicates,
        reordered: r.reordered,
        foreign: r.foreign,
        jitter_us: r.jitter_us,
        delay_p50_ns: r.delay.map(|d| d.p50_ns),
        delay_p99_ns: r.delay.map(|d| d.p99_ns),
        delay_max_ns: r.delay.map(|d| d.max_ns),
        throughput_bps: r.throughput_bps,
    });
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(true)
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let mut any = false;
    for row in rows {
        any = true;
        if let Err(e) = w.serialize(row) {
            return format!(
                "error\n\"cannot write CSV: {}\"\n",
                e.to_string().replace('"', "'")
            );
        }
    }
    if !any {
        let _ = w.serialize(CsvRow::default());
    }
    let text = w
        .into_inner()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if any {
        text
    } else {
        text.lines()
            .next()
            .map(|h| format!("{h}\n"))
            .unwrap_or_default()
    }
}
