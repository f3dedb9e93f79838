//! The client side of a stream test: connect, negotiate, open data streams, run, exchange
//! results, and build the [`RunRecord`].

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linerate_wire::control::{
    self, ErrorCode, Hello, Message, ProtocolVersion, StreamsReady, TestRequest, TestSpec,
    Transport,
};
use linerate_wire::report::{IntervalReport, Role, SideReport, StreamRole};
use linerate_wire::stream_hello::{self, StreamHello};

use super::conn::{self, ControlWriter, Debug, Incoming};
use super::sockets::{self, SockOpts};
use super::{split, stream_layout};
use crate::engine::{DataSocket, StreamSetup};
use crate::model::{self, PlanRecord, RunRecord};
use crate::rr::session::{CrrTarget, Running, StartLinks};

/// Everything the client needs to run one stream test.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// Server host name or address.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// What to ask the server for.
    pub spec: TestSpec,
    /// The client's own socket options.
    pub local: SockOpts,
    /// CPU for the client's data threads.
    pub client_cpu: Option<u32>,
    /// Connection time-out.
    pub connect_timeout: Duration,
    /// Log control frames.
    pub debug: Debug,
    /// Credentials for a server that requires authentication (`--auth-user`).
    pub auth: Option<super::auth::Credentials>,
}

/// Receives live events while a test runs (console printer, JSON stream, tests).
pub trait Observer {
    /// One interval at one end.
    fn interval(&mut self, side: Role, iv: &IntervalReport);
    /// The test has started.
    fn started(&mut self, _plan: &PlanRecord, _started_at: &str) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {
    fn interval(&mut self, _: Role, _: &IntervalReport) {}
}

enum Event {
    Ctl(Incoming),
    Interval(IntervalReport),
}

fn ctl(i: Incoming) -> Event {
    Event::Ctl(i)
}

/// Error from the server, shown as one line.
#[derive(Debug, thiserror::Error)]
#[error("server refused the test: {message}")]
pub struct ServerError {
    /// The server's code.
    pub code: ErrorCode,
    /// The server's words.
    pub message: String,
}

fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve '{host}': check the host name"))?
        .next()
        .ok_or_else(|| anyhow!("'{host}' resolves to no address: check the host name"))
}

impl StreamPlan {
    /// The plan as recorded in results.
    pub fn record(&self) -> PlanRecord {
        let s = &self.spec;
        PlanRecord {
            server: format!("{}:{}", self.host, self.port),
            transport: s.transport,
            direction: s.direction,
            streams: s.streams,
            duration_ms: s.duration_ms,
            bytes: s.bytes,
            write_size: s.write_size,
            local_sndbuf: self.local.sndbuf,
            local_rcvbuf: self.local.rcvbuf,
            remote_sndbuf: s.server_sndbuf,
            remote_rcvbuf: s.server_rcvbuf,
            nodelay: s.nodelay,
            mss: s.mss,
            congestion: s.congestion.clone(),
            tos: s.tos,
            rate_bps: s.rate_bps,
            interval_ms: s.interval_ms,
            omit_ms: s.omit_ms,
            client_cpu: self.client_cpu,
            server_cpu: s.server_cpu,
            udp_offload: s.udp_offload,
            link_rate_bps: None,
        }
    }
}

fn expect(rx: &Receiver<Event>, what: &str, deadline: Instant) -> anyhow::Result<Message> {
    match next_message(rx, what, deadline)? {
        Some(m) => Ok(m),
        None => {
            bail!("the server sent no {what} in time: is it overloaded or not a linerate server?")
        }
    }
}

/// The next control message before `deadline` (`None` at the deadline); an `error`, a close
/// or a bad frame is an error.
fn next_message(
    rx: &Receiver<Event>,
    what: &str,
    deadline: Instant,
) -> anyhow::Result<Option<Message>> {
    loop {
        match conn::recv_until(rx, deadline) {
            None => return Ok(None),
            Some(Event::Ctl(Incoming::Msg(Message::Error(e)))) => {
                return Err(ServerError {
                    code: e.code,
                    message: e.message,
                }
                .into())
            }
            Some(Event::Ctl(Incoming::Msg(m))) => return Ok(Some(m)),
            Some(Event::Ctl(Incoming::Closed)) => {
                bail!("the server closed the connection while we waited for {what}")
            }
            Some(Event::Ctl(Incoming::Broken(e))) => {
                bail!("bad control frame from the server while waiting for {what}: {e}")
            }
            Some(Event::Interval(_)) => {}
        }
    }
}

/// Waits for the server's `start`, sending each UDP stream's hello (protocol 1.3) every 10 ms
/// meanwhile: the first ones may arrive before the server's sockets exist, and UDP may lose
/// some.
fn await_start(
    rx: &Receiver<Event>,
    hellos: &[(Arc<std::net::UdpSocket>, [u8; stream_hello::LEN])],
    deadline: Instant,
) -> anyhow::Result<Message> {
    if hellos.is_empty() {
        return expect(rx, "start", deadline);
    }
    loop {
        for (u, h) in hellos {
            // An error here is an ICMP report from an earlier one; the next try will tell.
            let _ = u.send(h);
        }
        let step = (Instant::now() + Duration::from_millis(10)).min(deadline);
        if let Some(m) = next_message(rx, "start", step)? {
            return Ok(m);
        }
        if Instant::now() >= deadline {
            return expect(rx, "start", deadline);
        }
    }
}

/// Runs one stream test against a server. `interrupt` (set by Ctrl-C) ends the test early;
/// what was measured is still returned.
pub fn run(
    plan: &StreamPlan,
    observer: &mut dyn Observer,
    interrupt: &AtomicBool,
) -> anyhow::Result<RunRecord> {
    let addr = resolve(&plan.host, plan.port)?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stream = sockets::connect_tcp(addr, &SockOpts::default(), plan.connect_timeout)
        .map_err(|e| {
            anyhow!(
                "cannot reach a linerate server at {}:{} ({e}): check that `linerate serve` runs there and that port {}/tcp is open",
                plan.host,
                plan.port,
                plan.port
            )
        })?;
    let (tx, rx) = mpsc::channel();
    conn::spawn_reader(
        stream.try_clone()?,
        control::MAX_CONTROL_FRAME,
        plan.debug,
        "client",
        tx.clone(),
        ctl,
    )?;
    let mut w = ControlWriter::new(stream.try_clone()?, "client", plan.debug)?;
    let hs = Duration::from_secs(10);
    w.send(&Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: crate::software(),
        features: control::FEATURES.iter().map(|f| f.to_string()).collect(),
    }))?;
    let welcome = match expect(&rx, "welcome", Instant::now() + hs)? {
        Message::Welcome(wl) => wl,
        Message::Reject(r) => bail!(
            "the server at {}:{} speaks protocol {} and this client {}: {}",
            plan.host,
            plan.port,
            r.server_protocol,
            ProtocolVersion::CURRENT,
            r.message
        ),
        other => bail!("protocol error: expected welcome, got {}", other.name()),
    };
    if plan.spec.rr.is_some() && !welcome.features.iter().any(|f| f == "rr") {
        bail!(
            "the server at {}:{} does not offer request/response tests (protocol {}, no 'rr' feature): upgrade linerate on the server",
            plan.host,
            plan.port,
            welcome.protocol
        );
    }
    let mut early_warnings = Vec::new();
    super::auth::client_handshake(
        plan.auth.as_ref(),
        &welcome,
        &format!("{}:{}", plan.host, plan.port),
        &mut |m| w.send(m).map_err(Into::into),
        &mut |what| expect(&rx, what, Instant::now() + hs),
        &mut early_warnings,
    )?;
    // One-way delay needs a server that stamps CLOCK_MONOTONIC (protocol 1.1).
    let mut request_spec = plan.spec.clone();
    if request_spec.one_way_delay.is_some()
        && !welcome.features.iter().any(|f| f == "one_way_delay")
    {
        request_spec.one_way_delay = None;
        early_warnings.push(
            "one-way delay not measured: the server does not offer it (upgrade it to linerate with protocol 1.1)".to_string(),
        );
    }
    if request_spec.smooth_pacing && !welcome.features.iter().any(|f| f == "smooth_pacing") {
        request_spec.smooth_pacing = false;
        early_warnings.push(
            "the server's senders may burst to catch up after a stall: it does not offer smooth pacing (upgrade it to linerate with protocol 1.1)".to_string(),
        );
    }
    // Raw frames (protocol 1.3): this end sends them whatever the server offers; a server
    // without the feature sends datagrams, and says so in its stream reports' absence of
    // `tx_path` (the caller states the deviation).
    if request_spec.raw_frames && !welcome.features.iter().any(|f| f == "raw_frames") {
        request_spec.raw_frames = false;
        if request_spec.direction.client_receives() {
            early_warnings.push(
                "the server sends datagrams, not raw frames: it does not offer them (upgrade it to linerate with protocol 1.3)".to_string(),
            );
        }
    }
    if request_spec.capture_snaplen.is_some() && !welcome.features.iter().any(|f| f == "capture") {
        request_spec.capture_snaplen = None;
        early_warnings.push(
            "--capture: the server does not offer captures (upgrade it to linerate with protocol 1.3); only this end's packets were captured".to_string(),
        );
    }
    w.send(&Message::TestRequest(TestRequest {
        spec: request_spec.clone(),
    }))?;
    let accept = match expect(&rx, "accept", Instant::now() + hs)? {
        Message::Accept(a) => a,
        other => bail!("protocol error: expected accept, got {}", other.name()),
    };
    let token = stream_hello::token_from_hex(&accept.token)
        .ok_or_else(|| anyhow!("protocol error: the server's token is not 32 hex digits"))?;
    let setups = open_streams(plan, addr, &stream, token)?;
    // A raw-frame test whose server sends: take this end's host counters now, before the
    // server can start (it starts at `streams_ready`), so that every frame received falls in
    // the interface counters' window (RFC 2544's cross-check).
    let early_host = (plan.spec.raw_frames
        && plan.spec.transport == Transport::Udp
        && plan.spec.direction.client_receives())
    .then(|| {
        let iface = crate::sys::iface::route_interface(addr.ip()).ok();
        crate::sys::hostsnap::HostSnapshot::take(iface.as_deref()).0
    });
    let udp_ports: Vec<u16> = setups
        .iter()
        .filter_map(|s| match &s.socket {
            DataSocket::Udp(u) => u.local_addr().ok().map(|a| a.port()),
            DataSocket::Tcp(_) => None,
        })
        .collect();
    w.send(&Message::StreamsReady(StreamsReady { udp_ports }))?;
    // Protocol 1.3: each UDP socket proves that it belongs to this test, until the start.
    let udp_hellos: Vec<(Arc<std::net::UdpSocket>, [u8; stream_hello::LEN])> =
        if welcome.features.iter().any(|f| f == "udp_stream_hello") {
            setups
                .iter()
                .filter_map(|s| match &s.socket {
                    DataSocket::Udp(u) => Some((
                        u.clone(),
                        StreamHello {
                            token,
                            stream_index: s.index,
                        }
                        .to_bytes(),
                    )),
                    DataSocket::Tcp(_) => None,
                })
                .collect()
        } else {
            Vec::new()
        };
    match await_start(&rx, &udp_hellos, Instant::now() + hs)? {
        Message::Start(_) => {}
        other => bail!("protocol error: expected start, got {}", other.name()),
    }
    let record_plan = plan.record();
    observer.started(&record_plan, &started_at);
    let spec = &plan.spec;
    let crr = CrrTarget {
        addr,
        token,
        opts: plan.local.clone(),
        timeout: plan.connect_timeout,
    };
    let itx = tx.clone();
    let sink = move |iv| {
        let _ = itx.send(Event::Interval(iv));
    };
    let engine_spec = TestSpec {
        raw_frames: plan.spec.raw_frames,
        ..request_spec.clone()
    };
    let mut engine = Running::start(
        Role::Client,
        &engine_spec,
        plan.client_cpu,
        setups,
        StartLinks {
            crr: Some(crr),
            control: Some(Arc::new(stream.try_clone()?)),
            early_host,
        },
        sink,
    )?;
    let mut warnings = early_warnings;
    let mut client_intervals = Vec::new();
    // The server's intervals as they arrive; since protocol 1.3 its results leave them out.
    let mut server_intervals = Vec::new();
    let begun = Instant::now();
    let deadline = spec.duration_ms.map(|d| begun + Duration::from_millis(d));
    let mut server_finished = false;
    let mut interrupted = false;
    let mut server_report: Option<SideReport> = None;
    let mut server_capture: Option<control::ReturnedCapture> = None;
    let mut early_server_error: Option<String> = None;
    // Run until the time is up, the bytes are through, Ctrl-C, or the server ends the test.
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Event::Interval(iv)) => {
                observer.interval(Role::Client, &iv);
                client_intervals.push(iv);
            }
            Ok(Event::Ctl(Incoming::Msg(Message::Interval(m)))) => {
                observer.interval(Role::Server, &m.interval);
                server_intervals.push(m.interval);
            }
            Ok(Event::Ctl(Incoming::Msg(Message::Finished(_)))) => server_finished = true,
            Ok(Event::Ctl(Incoming::Msg(Message::Error(e)))) => {
                early_server_error = Some(e.message);
                interrupted = true;
                break;
            }
            Ok(Event::Ctl(Incoming::Msg(other))) => {
                early_server_error = Some(format!(
                    "protocol error: unexpected {} during the test",
                    other.name()
                ));
                interrupted = true;
                break;
            }
            Ok(Event::Ctl(Incoming::Closed)) | Ok(Event::Ctl(Incoming::Broken(_))) => {
                early_server_error =
                    Some("the server closed the control connection during the test".into());
                interrupted = true;
                break;
            }
            Err(_) => {}
        }
        if interrupt.load(SeqCst) {
            interrupted = true;
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if spec.bytes.is_some() {
            let mine = !engine.has_senders() || engine.senders_done();
            let theirs = !spec.direction.client_receives() || server_finished;
            // The client's receivers see the server's last byte shortly after `finished`.
            if mine
                && theirs
                && (!spec.direction.client_receives()
                    || engine.receivers_done()
                    || spec.transport == Transport::Udp)
            {
                break;
            }
        }
    }
    engine.stop_senders();
    if let Some(e) = &early_server_error {
        warnings.push(format!("the test ended early: {e}"));
    } else {
        let _ = w.send(&Message::Stop(control::Stop { interrupted }));
        // The server drains its receivers, then reports.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match conn::recv_until(&rx, deadline) {
                Some(Event::Interval(iv)) => {
                    observer.interval(Role::Client, &iv);
                    client_intervals.push(iv);
                }
                Some(Event::Ctl(Incoming::Msg(Message::Results(r)))) => {
                    let r = *r;
                    server_capture = r.capture;
                    let mut report = r.report;
                    if r.intervals_streamed {
                        report.intervals = std::mem::take(&mut server_intervals);
                    }
                    server_report = Some(report);
                    break;
                }
                Some(Event::Ctl(Incoming::Msg(Message::Interval(m)))) => {
                    observer.interval(Role::Server, &m.interval);
                    server_intervals.push(m.interval);
                }
                Some(Event::Ctl(Incoming::Msg(Message::Finished(_)))) => {}
                Some(Event::Ctl(Incoming::Msg(Message::Error(e)))) => {
                    warnings.push(format!(
                        "the server reported an error instead of results: {}",
                        e.message
                    ));
                    break;
                }
                Some(Event::Ctl(Incoming::Msg(other))) => {
                    warnings.push(format!(
                        "protocol error: expected results, got {}",
                        other.name()
                    ));
                    break;
                }
                Some(Event::Ctl(_)) => {
                    warnings
                        .push("the server closed the connection before sending its results".into());
                    break;
                }
                None => {
                    warnings.push("the server sent no results within 15 s".into());
                    break;
                }
            }
        }
    }
    let (mut report, rr_data) = engine.finish(Duration::from_millis(50), Duration::from_secs(2));
    while let Ok(ev) = rx.try_recv() {
        if let Event::Interval(iv) = ev {
            observer.interval(Role::Client, &iv);
            client_intervals.push(iv);
        }
    }
    if server_report.is_some() {
        // Without the intervals: the server does not use them, and a long test's would not
        // fit one frame.
        let _ = w.send(&Message::Results(Box::new(control::Results {
            capture: None,
            report: report.clone(),
            intervals_streamed: false,
        })));
        let _ = conn::recv_until(&rx, Instant::now() + Duration::from_secs(2));
    }
    report.intervals = client_intervals;
    w.close();
    if interrupted && early_server_error.is_none() {
        warnings.push("interrupted: the totals cover the part of the test that ran".into());
    }
    if server_report.is_none() {
        warnings.push("server measurements are missing: receiver-side figures, server CPU and service demand are not shown".into());
    }
    if plan.spec.rr.is_none() && !interrupted {
        warnings.extend(idle_senders_warning(&report, server_report.as_ref()));
    }
    let mut rec = build_record(
        record_plan,
        started_at,
        Some(welcome.protocol),
        interrupted,
        report,
        server_report,
        warnings,
    );
    if let (Some(rr), Some(data)) = (&plan.spec.rr, rr_data) {
        crate::rr::session::attach(&mut rec, rr, &data);
        rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
    }
    rec.server_capture = server_capture;
    Ok(rec)
}

/// Assembles the record and collects both ends' warnings.
pub fn build_record(
    plan: PlanRecord,
    started_at: String,
    protocol: Option<ProtocolVersion>,
    interrupted: bool,
    client: SideReport,
    server: Option<SideReport>,
    mut warnings: Vec<String>,
) -> RunRecord {
    for w in &client.warnings {
        warnings.push(format!("client: {w}"));
    }
    if let Some(s) = &server {
        for w in &s.warnings {
            warnings.push(format!("server: {w}"));
        }
    }
    let summary = model::summarize(plan.direction, &client, server.as_ref());
    let mut rec = RunRecord {
        schema_version: model::SCHEMA_VERSION,
        tool_version: crate::software(),
        started_at,
        plan,
        protocol,
        interrupted,
        summary,
        client,
        server,
        warnings,
        rr: None,
        diagnosis: None,
        trace: None,
        server_capture: None,
    };
    rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
    rec
}

/// A warning when some of several sending streams sent nothing: on a busy host with many
/// streams (-P) a short test can end before every thread got a CPU. The totals are still
/// right, but the streams did not run side by side.
fn idle_senders_warning(client: &SideReport, server: Option<&SideReport>) -> Option<String> {
    let senders: Vec<_> = client
        .streams
        .iter()
        .chain(server.iter().flat_map(|s| &s.streams))
        .filter(|s| s.role == StreamRole::Tx)
        .collect();
    let idle: Vec<String> = senders
        .iter()
        .filter(|s| s.bytes == 0)
        .map(|s| s.index.to_string())
        .collect();
    (senders.len() > 1 && !idle.is_empty()).then(|| {
        format!(
            "{} of {} sending streams sent nothing (stream {}): their threads got no CPU before the test ended, so the streams did not all run side by side; use a longer -t or fewer -P",
            idle.len(),
            senders.len(),
            idle.join(", ")
        )
    })
}

fn open_streams(
    plan: &StreamPlan,
    addr: SocketAddr,
    control_conn: &TcpStream,
    token: [u8; 16],
) -> anyhow::Result<Vec<StreamSetup>> {
    let spec = &plan.spec;
    if spec.rr.as_ref().is_some_and(|r| r.connect_per_transaction) {
        // TCP_CRR: every transaction opens its own connection once the test runs.
        return Ok(Vec::new());
    }
    let layout = stream_layout(spec.direction, spec.streams);
    let mut local = plan.local.clone();
    if spec.transport == Transport::Udp
        && spec.direction.client_receives()
        && local.rcvbuf.is_none()
    {
        local.rcvbuf = Some(sockets::UDP_DEFAULT_RCVBUF);
    }
    let local_ip = sockets::canonical(control_conn.local_addr()?.ip());
    let mut out = Vec::with_capacity(layout.len());
    for (index, client_sends) in layout {
        let socket = match spec.transport {
            Transport::Tcp => {
                let mut s = sockets::connect_tcp(addr, &local, plan.connect_timeout)
                    .with_context(|| format!("opening data connection {index} to {addr}"))?;
                use std::io::Write;
                s.write_all(
                    &StreamHello {
                        token,
                        stream_index: index,
                    }
                    .to_bytes(),
                )?;
                DataSocket::Tcp(Arc::new(s))
            }
            Transport::Udp => {
                let u = sockets::udp_socket(SocketAddr::new(local_ip, 0), addr, &local, false)
                    .with_context(|| format!("opening UDP socket {index} to {addr}"))?;
                let _ = u.as_fd();
                DataSocket::Udp(Arc::new(u))
            }
        };
        let n = spec.streams;
        let k = index % n;
        let role = if client_sends {
            StreamRole::Tx
        } else {
            StreamRole::Rx
        };
        // Raw frames: opened now, before `streams_ready`, because resolving the next hop
        // takes tens of milliseconds and the server starts sending at `start`: frames
        // arriving before this end's engine starts would be in the receiver's count but not
        // in its interface counters' window.
        let raw = match (&socket, client_sends && spec.raw_frames) {
            (DataSocket::Udp(u), true) => Some(crate::engine::rawgen::RawSender::open(
                u,
                (spec.write_size as usize).max(linerate_wire::probe::LEN),
            )),
            _ => None,
        };
        out.push(StreamSetup {
            index,
            role,
            socket,
            quota: if client_sends {
                spec.bytes.map(|b| split(b, n, k))
            } else {
                None
            },
            rate_bps: if client_sends {
                spec.rate_bps.map(|r| split(r, n, k))
            } else {
                None
            },
            raw,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::idle_senders_warning;

    #[test]
    fn a_sending_stream_that_sent_nothing_is_named() {
        let rec = crate::model::fixtures::tcp_send();
        let mut client = rec.client.clone();
        assert_eq!(idle_senders_warning(&client, rec.server.as_ref()), None);
        let mut idle = client.streams[0].clone();
        idle.index = 7;
        idle.bytes = 0;
        client.streams.push(idle);
        let w = idle_senders_warning(&client, rec.server.as_ref()).unwrap();
        assert!(
            w.starts_with("1 of 2 sending streams sent nothing (stream 7)"),
            "{w}"
        );
        // One stream alone is never "idle beside others".
        client.streams.remove(0);
        assert_eq!(idle_senders_warning(&client, None), None);
    }
}
