//! Command dispatch: turns parsed arguments into work and output. Results go to stdout;
//! progress, log lines and warnings to stderr.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use linerate_wire::control::{Direction, Transport};

use crate::cli::args::{Args, Command, DemoArgs, ServeArgs, StreamArgs};
use crate::cli::plan::{self, UsageError};
use crate::export;
use crate::model::RunRecord;
use crate::session::client::{self, StreamPlan};
use crate::session::conn::Debug;
use crate::session::server::{Server, ServerConfig};

pub(crate) mod analyze;
mod doctor;
mod lab;
pub(crate) mod live;
mod rfc2544;

/// Runs a command. Errors bubble up to `main`, which prints them on one line and exits 2.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Serve(a) => serve(&a),
        Command::Tcp(a) => stream(&a, Transport::Tcp),
        Command::Udp(a) => stream(&a, Transport::Udp),
        Command::Rr(a) => crate::repeat::rr_command(&a),
        Command::Compare(a) => crate::compare::command(&a),
        Command::Demo(a) => demo(&a),
        Command::Rfc2544(a) => rfc2544::command(&a),
        Command::Lab(a) => lab::run(&a),
        Command::Doctor(a) => doctor::command(&a),
        Command::Analyze(a) => analyze::command(&a),
        Command::Schema { which } => {
            let s = match which.as_str() {
                "run" => export::json::schema(),
                "event" => export::json::event_schema(),
                "trials" => export::json::trials_schema(),
                "rfc2544" => crate::rfc2544::record::schema(),
                "analyze" => export::json::analyze_schema(),
                other => {
                    return Err(UsageError(format!(
                        "unknown schema '{other}': use run, event, trials, rfc2544 or analyze"
                    ))
                    .into())
                }
            };
            write_out(&s)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(crate) fn write_out(s: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// Installs SIGINT/SIGTERM handlers that set `flag`; a second signal exits at once.
pub(crate) fn signal_flag(flag: &Arc<AtomicBool>) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(())
}

fn serve(a: &ServeArgs) -> anyhow::Result<ExitCode> {
    let ip: std::net::IpAddr = a.bind.parse().map_err(|_| {
        UsageError(format!(
            "--bind {}: not an IP address (use :: or 0.0.0.0 or 127.0.0.1)",
            a.bind
        ))
    })?;
    if a.max_streams == 0 || a.max_tests == 0 {
        return Err(UsageError("--max-streams and --max-tests must be at least 1".into()).into());
    }
    let mut cfg = ServerConfig {
        listen: SocketAddr::new(ip, a.port),
        max_tests: a.max_tests,
        handshake_timeout: a.handshake_timeout,
        idle_timeout: a.idle_timeout,
        one_off: a.one_off,
        allow_capture: a.allow_capture,
        debug: Debug(a.debug_protocol),
        log: !a.quiet,
        users: match &a.auth_users {
            Some(p) => Some(Arc::new(
                crate::session::auth::Users::load(p).map_err(UsageError)?,
            )),
            None => None,
        },
        ..ServerConfig::default()
    };
    cfg.limits.max_duration_ms = u64::try_from(a.max_duration.as_millis()).unwrap_or(u64::MAX);
    cfg.limits.max_streams = a.max_streams;
    cfg.limits.max_rate_bps = a.max_rate;
    cfg.limits.max_write_size = a.max_write_size;
    cfg.limits.max_socket_buffer = a.max_socket_buffer;
    let server = Server::bind(cfg)?;
    signal_flag(&server.shutdown_handle())?;
    eprintln!(
        "linerate serve: listening on {} (TCP and UDP){}{}",
        server.local_addr()?,
        if a.one_off { ", one test" } else { "" },
        if a.auth_users.is_some() {
            ", authentication required"
        } else {
            ""
        }
    );
    server.run()?;
    Ok(ExitCode::SUCCESS)
}

fn stream(a: &StreamArgs, transport: Transport) -> anyhow::Result<ExitCode> {
    if a.repeat.is_set() {
        if a.capture.capture.is_some() {
            return Err(UsageError(
                "--capture records one test: leave out --repeat/--confidence".into(),
            )
            .into());
        }
        return crate::repeat::stream_command(a, transport);
    }
    let plan = plan::stream_plan(a, transport)?;
    let format = plan::output_format(&a.output)?;
    live::run_once(&plan, format, a.link_rate, &a.capture)
}

fn demo(a: &DemoArgs) -> anyhow::Result<ExitCode> {
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
        (
            "TCP send",
            Transport::Tcp,
            Direction::Send,
            plan::DEFAULT_TCP_LEN,
        ),
        (
            "TCP receive",
            Transport::Tcp,
            Direction::Receive,
            plan::DEFAULT_TCP_LEN,
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
        write_out(&(serde_json::to_string_pretty(&records)? + "\n"))?;
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
    let spec = crate::session::default_spec(transport, direction, len, ms);
    StreamPlan {
        host: "127.0.0.1".into(),
        port,
        spec,
        local: Default::default(),
        client_cpu: None,
        connect_timeout: Duration::from_secs(5),
        debug: Debug(false),
        auth: None,
    }
}

/// One line of the demo summary; "-" where a figure is missing.
fn demo_row(name: &str, rec: &RunRecord) -> String {
    use crate::model::units::{format_bps, format_per_sec};
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
    let cpu = |e: Option<&crate::model::EndSummary>| {
        e.and_then(|e| e.cpu_util_percent)
            .map_or_else(dash, |c| format!("{c:.1}%"))
    };
    let sd = |e: Option<&crate::model::EndSummary>| {
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
