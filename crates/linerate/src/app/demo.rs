//! `linerate demo`: a server on loopback and a short suite (TCP both ways, small UDP
//! datagrams): the quickest way to see linerate work.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use linerate_wire::control::{Direction, Transport};

use super::{signal_flag, write_out};
use crate::cli::demo::DemoArgs;
use crate::cli::stream::DEFAULT_TCP_LEN;
use crate::model::plan::Debug;
use crate::model::plan::StreamPlan;
use crate::model::units::{format_bps, format_per_sec};
use crate::model::{EndSummary, RunRecord};
use crate::session::protocol::client;
use crate::session::server::{Server, ServerConfig};

/// Runs `linerate demo`.
pub fn command(a: &DemoArgs) -> anyhow::Result<ExitCode> {
    let cfg = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        log: false,
        ..ServerConfig::default()
    };
    let server = Server::bind(cfg).context("starting the demo server on 127.0.0.1")?;
    let port = server.local_addr()?.port();
    let stop_server = server.shutdown_handle();
    let handle = std::thread::spawn(move || server.run());
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let suite: [(&str, Transport, Direction, u32); 3] = [
        ("TCP send", Transport::Tcp, Direction::Send, DEFAULT_TCP_LEN),
        (
            "TCP receive",
            Transport::Tcp,
            Direction::Receive,
            DEFAULT_TCP_LEN,
        ),
        ("UDP 64 B", Transport::Udp, Direction::Send, 64),
    ];
    if !a.json {
        eprintln!(
            "linerate demo: a server on 127.0.0.1:{port} and {} tests of {:.1} s each",
            suite.len(),
            a.time.as_secs_f64()
        );
    }
    let mut records = Vec::new();
    let mut rows = Vec::new();
    for (name, transport, direction, len) in suite {
        if interrupt.load(SeqCst) {
            break;
        }
        let p = demo_plan(port, transport, direction, len, a.time);
        let rec = client::run(&p, &mut client::Quiet, &interrupt)
            .with_context(|| format!("demo test '{name}'"))?;
        rows.push(demo_row(name, &rec));
        records.push(rec);
    }
    stop_server.store(true, SeqCst);
    let _ = handle.join();
    if a.json {
        write_out(&(linerate_wire::json::to_string_pretty(&records)? + "\n"))?;
    } else {
        let mut out = format!(
            "{:<12} {:>14} {:>16} {:>14} {:>8} {:>10} {:>10} {:>12} {:>12}\n",
            "test",
            "throughput",
            "datagrams/s",
            "packets/s",
            "loss",
            "cpu client",
            "cpu server",
            "SD client",
            "SD server"
        );
        for r in &rows {
            out.push_str(r);
        }
        // What the UDP line's two rates count (datagrams per packet with GSO/GRO).
        for (rec, (name, ..)) in records.iter().zip(suite) {
            for n in rec.diagnosis.iter().flat_map(|d| &d.notes) {
                out.push_str(&format!("\n{name}: {n}\n"));
            }
        }
        out.push_str("\nTry it between two hosts: `linerate serve` on one, `linerate tcp HOST` on the other.\n");
        write_out(&out)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn demo_plan(
    port: u16,
    transport: Transport,
    direction: Direction,
    len: u32,
    t: Duration,
) -> StreamPlan {
    let ms = u64::try_from(t.as_millis()).unwrap_or(2000).max(100);
    let spec = crate::model::plan::default_spec(transport, direction, len, ms);
    StreamPlan {
        host: "127.0.0.1".into(),
        port,
        spec,
        local: Default::default(),
        client_cpu: None,
        connect_timeout: Duration::from_secs(5),
        debug: Debug(false),
        auth: None,
        max_time: None,
    }
}

/// One line of the demo summary; "-" where a figure is missing.
fn demo_row(name: &str, rec: &RunRecord) -> String {
    let dash = || "-".to_string();
    let f = rec.summary.flows.first();
    let bps = f
        .and_then(|f| f.receiver_bps.or(f.sender_bps))
        .map_or_else(dash, format_bps);
    // Datagrams the sockets moved, and packets the interface carried for them (fewer with
    // UDP GSO/GRO: the stack handled that many packets, each up to 64 datagrams).
    let dps = f
        .and_then(|f| f.receiver_pps)
        .map_or_else(dash, |v| format_per_sec(v, "dgram/s"));
    let pps = f
        .and_then(|f| f.receiver_interface_pps.or(f.sender_interface_pps))
        .map_or_else(dash, |v| format_per_sec(v, "pkt/s"));
    let loss = f
        .and_then(|f| f.loss_percent)
        .map_or_else(dash, |l| format!("{l:.2}%"));
    let cpu = |e: Option<&EndSummary>| {
        e.and_then(|e| e.cpu_util_percent)
            .map_or_else(dash, |c| format!("{c:.1}%"))
    };
    let sd = |e: Option<&EndSummary>| {
        e.and_then(|e| e.service_demand_us_per_kb)
            .map_or_else(dash, |c| format!("{c:.3} us/KB"))
    };
    format!(
        "{:<12} {:>14} {:>16} {:>14} {:>8} {:>10} {:>10} {:>12} {:>12}\n",
        name,
        bps,
        dps,
        pps,
        loss,
        cpu(Some(&rec.summary.client)),
        cpu(rec.summary.server.as_ref()),
        sd(Some(&rec.summary.client)),
        sd(rec.summary.server.as_ref())
    )
}
