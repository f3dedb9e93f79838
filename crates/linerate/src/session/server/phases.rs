//! The test phases of a server session: collecting the data connections, then running the
//! engine until the client says stop.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    ErrorCode, Finished, IntervalMsg, Message, Results, ReturnedCapture, Start, TestSpec, Transport,
};
use linerate_wire::report::{IntervalReport, Role, SideReport, StreamRole};
use linerate_wire::stream_hello::{self, StreamHello};

use super::{Abort, Event, Session};
use crate::engine::{DataSocket, StreamSetup};
use crate::rr::session::{Running, StartLinks};
use crate::session::conn::{self, Incoming};
use crate::session::sockets::{self, SockOpts};
use crate::session::{split, stream_layout};

pub(super) fn collect_streams(
    s: &mut Session<'_>,
    spec: &TestSpec,
    token: &[u8; 16],
) -> Result<Vec<StreamSetup>, Abort> {
    // TCP_CRR opens its connections during the test, one per transaction.
    let crr = spec.rr.as_ref().is_some_and(|r| r.connect_per_transaction);
    let layout = if crr {
        Vec::new()
    } else {
        stream_layout(spec.direction, spec.streams)
    };
    let deadline = Instant::now() + s.ctx.cfg.handshake_timeout;
    let mut ready: Option<Vec<u16>> = None;
    let mut tcp: HashMap<u16, TcpStream> = HashMap::new();
    let want_tcp = spec.transport == Transport::Tcp;
    loop {
        if ready.is_some() && (!want_tcp || tcp.len() == layout.len()) {
            break;
        }
        match conn::recv_until(&s.rx, deadline) {
            None => {
                return Err(s.fail(
                    ErrorCode::Timeout,
                    format!(
                        "only {} of {} data connections arrived in time: check that port {}/tcp is reachable",
                        tcp.len(),
                        layout.len(),
                        s.ctx.port
                    ),
                ))
            }
            Some(Event::Data(i, st)) => {
                if usize::from(i) < layout.len() && want_tcp {
                    tcp.insert(i, st);
                }
            }
            Some(Event::Ctl(Incoming::Msg(Message::StreamsReady(r)))) => {
                if ready.is_some() {
                    return Err(s.fail(ErrorCode::Protocol, "streams_ready sent twice".into()));
                }
                if !want_tcp && r.udp_ports.len() != layout.len() {
                    return Err(s.fail(
                        ErrorCode::Protocol,
                        format!("expected {} UDP ports, got {}", layout.len(), r.udp_ports.len()),
                    ));
                }
                ready = Some(r.udp_ports);
            }
            Some(Event::Ctl(Incoming::Msg(other))) => {
                return Err(s.unexpected("streams_ready", &other))
            }
            Some(Event::Ctl(Incoming::Closed)) => {
                return Err(Abort("client closed the connection while opening streams".into()))
            }
            Some(Event::Ctl(Incoming::Broken(e))) => {
                return Err(s.fail(ErrorCode::Protocol, format!("bad frame: {e}")))
            }
            Some(Event::Interval(_)) => {}
        }
    }
    let opts = SockOpts {
        sndbuf: spec.server_sndbuf,
        rcvbuf: spec.server_rcvbuf.or_else(|| {
            (spec.transport == Transport::Udp && spec.direction.client_sends())
                .then_some(sockets::UDP_DEFAULT_RCVBUF)
        }),
        nodelay: spec.nodelay,
        mss: spec.mss,
        congestion: spec.congestion.clone(),
        tos: spec.tos,
    };
    let local_ip = sockets::canonical(
        s.w.stream()
            .local_addr()
            .map_err(|e| Abort(e.to_string()))?
            .ip(),
    );
    let peer_ip = sockets::canonical(s.peer.ip());
    let udp_ports = ready.unwrap_or_default();
    if !want_tcp {
        claim_udp_peers(s, peer_ip, &udp_ports, token)?;
    }
    let mut out = Vec::new();
    for (pos, (index, client_sends)) in layout.iter().enumerate() {
        let role = if *client_sends {
            StreamRole::Rx
        } else {
            StreamRole::Tx
        };
        let socket = if want_tcp {
            let Some(st) = tcp.remove(index) else {
                return Err(s.fail(ErrorCode::Protocol, format!("stream {index} missing")));
            };
            let r = sockets::apply(
                &socket2::SockRef::from(&st),
                &opts,
                true,
                local_ip.is_ipv6(),
            );
            if let Err(e) = r {
                return Err(s.fail(ErrorCode::BadRequest, format!("on the server: {e}")));
            }
            DataSocket::Tcp(Arc::new(st))
        } else {
            let local = SocketAddr::new(local_ip, s.ctx.port);
            let peer = SocketAddr::new(peer_ip, udp_ports[pos]);
            match sockets::udp_socket(local, peer, &opts, true) {
                Ok(u) => DataSocket::Udp(Arc::new(u)),
                Err(e) => {
                    return Err(s.fail(
                        ErrorCode::BadRequest,
                        format!("on the server: UDP socket: {e}"),
                    ))
                }
            }
        };
        let n = spec.streams;
        let k = index % n;
        if let (DataSocket::Udp(u), true) = (&socket, s.has("udp_stream_hello")) {
            let peer = SocketAddr::new(peer_ip, udp_ports[pos]);
            await_udp_hello(s, u, peer, token, *index, deadline)?;
        }
        // Raw frames: opened before `start` (resolving the next hop takes tens of ms).
        let raw = match (&socket, role == StreamRole::Tx && spec.raw_frames) {
            (DataSocket::Udp(u), true) => Some(crate::engine::rawgen::RawSender::open(
                u,
                (spec.write_size as usize).max(linerate_wire::probe::LEN),
            )),
            _ => None,
        };
        out.push(StreamSetup {
            index: *index,
            role,
            socket,
            quota: if role == StreamRole::Tx {
                spec.bytes.map(|b| split(b, n, k))
            } else {
                None
            },
            rate_bps: if role == StreamRole::Tx {
                spec.rate_bps.map(|r| split(r, n, k))
            } else {
                None
            },
            raw,
        });
    }
    Ok(out)
}

/// Claims the client addresses of a test's UDP streams for it: refuses a port listed twice,
/// port 0, and a port that a running test already uses (its server socket would be connected
/// to the same address, and the kernel would split the datagrams between the two tests).
fn claim_udp_peers(
    s: &mut Session<'_>,
    peer_ip: std::net::IpAddr,
    ports: &[u16],
    token: &[u8; 16],
) -> Result<(), Abort> {
    let mut seen = std::collections::BTreeSet::new();
    for &p in ports {
        if p == 0 || !seen.insert(p) {
            return Err(s.fail(
                ErrorCode::Protocol,
                format!(
                    "streams_ready lists UDP port {p} {}",
                    if p == 0 { "(not a port)" } else { "twice" }
                ),
            ));
        }
    }
    let taken = {
        let Ok(mut claims) = s.ctx.udp_peers.lock() else {
            return Err(s.fail(ErrorCode::Internal, "UDP port registry unavailable".into()));
        };
        let taken = ports
            .iter()
            .map(|&p| SocketAddr::new(peer_ip, p))
            .find(|a| claims.get(a).is_some_and(|owner| owner != token));
        if taken.is_none() {
            for &p in ports {
                claims.insert(SocketAddr::new(peer_ip, p), *token);
            }
        }
        taken
    };
    match taken {
        Some(a) => Err(s.fail(
            ErrorCode::BadRequest,
            format!(
                "UDP port {} of {} belongs to another test running on this server: each UDP stream needs its own client port",
                a.port(),
                a.ip()
            ),
        )),
        None => Ok(()),
    }
}

/// Waits until the client's socket of UDP stream `index` (at `peer`) proves that it belongs
/// to this test: a datagram from exactly that address carrying the stream hello with the
/// test's token (protocol 1.3, feature `udp_stream_hello`). The client repeats it until
/// `start`; datagrams from elsewhere (one that reached the socket before it was connected)
/// are ignored, and a hello with another token ends the session.
fn await_udp_hello(
    s: &mut Session<'_>,
    u: &std::net::UdpSocket,
    peer: SocketAddr,
    token: &[u8; 16],
    index: u16,
    deadline: Instant,
) -> Result<(), Abort> {
    let mut buf = [0u8; 2048];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(s.fail(
                ErrorCode::Timeout,
                format!(
                    "no UDP hello for stream {index} arrived from {peer} in time: check that UDP port {} is reachable from the client (firewall, NAT)",
                    s.ctx.port
                ),
            ));
        }
        let wait = (deadline - now).min(Duration::from_millis(50));
        if u.set_read_timeout(Some(wait)).is_err() {
            return Err(s.fail(ErrorCode::Internal, "UDP socket time-out".into()));
        }
        match u.recv_from(&mut buf) {
            Ok((n, from))
                if sockets::canonical(from.ip()) == peer.ip() && from.port() == peer.port() =>
            {
                if n != stream_hello::LEN {
                    continue;
                }
                let Ok(h) = StreamHello::parse(&buf[..n]) else {
                    continue;
                };
                if &h.token != token || h.stream_index != index {
                    return Err(s.fail(
                        ErrorCode::BadRequest,
                        format!(
                            "the UDP port {} listed for stream {index} sent another test's token or stream: a UDP port belongs to one stream of one test",
                            peer.port()
                        ),
                    ));
                }
                return Ok(());
            }
            Ok(_) => {}
            Err(e) if crate::engine::stream::is_timeout(&e) => {}
            // An ICMP error from an earlier send: nothing to do with the proof.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(s.fail(ErrorCode::Internal, format!("UDP socket: {e}"))),
        }
        if let Ok(Event::Ctl(Incoming::Closed)) = s.rx.try_recv() {
            return Err(Abort(
                "client closed the connection while opening streams".into(),
            ));
        }
    }
}

/// The server's `results`: without the intervals when they went to the client as `interval`
/// messages, so the frame does not grow with the test's length. Should it still not fit
/// `max_frame` (a client without `interval_events`), the intervals are left out with a
/// warning rather than the whole report lost.
pub(super) fn results_message(
    mut report: SideReport,
    streamed: bool,
    mut capture: Option<ReturnedCapture>,
    max_frame: u32,
) -> Message {
    if streamed {
        report.intervals = Vec::new();
    }
    let msg = |report: SideReport, capture: Option<ReturnedCapture>| {
        Message::Results(Box::new(Results {
            report,
            intervals_streamed: streamed,
            capture,
        }))
    };
    let fits = |m: &Message| {
        linerate_wire::control::encode(m)
            .is_ok_and(|f| f.len() - linerate_wire::control::FRAME_HEADER_LEN <= max_frame as usize)
    };
    let m = msg(report.clone(), capture.clone());
    if fits(&m) {
        return m;
    }
    // The capture goes first: the results are the test, the capture its evidence.
    if capture.as_ref().is_some_and(|c| c.pcap_hex.is_some()) {
        capture = Some(ReturnedCapture {
            pcap_hex: None,
            note: Some(format!(
                "the server's capture is left out: with the results it does not fit one control frame of {max_frame} bytes"
            )),
        });
        let m = msg(report.clone(), capture.clone());
        if fits(&m) {
            return m;
        }
    }
    if report.intervals.is_empty() {
        return msg(report, capture);
    }
    let n = report.intervals.len();
    report.intervals = Vec::new();
    report.warnings.push(format!(
        "the server's {n} intervals are left out: they do not fit one control frame, and this client did not ask for them as they happened (interval_events)"
    ));
    msg(report, capture)
}

pub(super) fn run_test(
    s: &mut Session<'_>,
    spec: &TestSpec,
    token: &[u8; 16],
    streams: Vec<StreamSetup>,
    send_intervals: bool,
) -> Result<(SideReport, bool), Abort> {
    let tx = s.tx.clone();
    let sink = move |iv| {
        let _ = tx.send(Event::Interval(iv));
    };
    let control = s.w.stream().try_clone().ok().map(Arc::new);
    // Raw frames (RFC 2544): `start` goes out before this end's senders do. Raw senders are
    // not pushed back by a queue on the path, so an unpaced one fills a bottleneck's queue at
    // once, and a `start` sent after it would wait behind it (TCP retransmissions) past the
    // client's time-out. The host counters are taken first, so the client's frames still fall
    // inside this end's interface window.
    let start_first = spec.raw_frames && spec.transport == Transport::Udp && spec.rr.is_none();
    let early_host = (start_first && spec.direction.client_sends()).then(|| {
        let peer = streams.first().and_then(|st| match &st.socket {
            DataSocket::Udp(u) => u.peer_addr().ok(),
            DataSocket::Tcp(t) => t.peer_addr().ok(),
        });
        let iface = peer.and_then(|p| crate::sys::iface::route_interface(p.ip()).ok());
        crate::sys::hostsnap::HostSnapshot::take(iface.as_deref()).0
    });
    if start_first {
        if let Err(e) = s.w.send(&Message::Start(Start {})) {
            return Err(Abort(format!("write failed: {e}")));
        }
    }
    let engine = Running::start(
        Role::Server,
        spec,
        spec.server_cpu,
        streams,
        StartLinks {
            crr: None,
            control,
            early_host,
        },
        sink,
    )
    .map_err(|e| s.fail(ErrorCode::Internal, format!("cannot start threads: {e}")))?;
    if let Some(inbox) = engine.crr_inbox() {
        if let Ok(mut r) = s.ctx.registry.lock() {
            if let Some(route) = r.get_mut(token) {
                route.crr = Some(inbox);
            }
        }
    }
    let mut intervals = Vec::new();
    if start_first {
    } else if let Err(e) = s.w.send(&Message::Start(Start {})) {
        let _ = engine.finish(Duration::ZERO, Duration::ZERO);
        return Err(Abort(format!("write failed: {e}")));
    }
    let limit = Duration::from_millis(s.ctx.cfg.limits.max_duration_ms) + Duration::from_secs(5);
    let hard_stop = Instant::now() + limit;
    let mut finished_sent = false;
    let mut interrupted = false;
    let mut engine = engine;
    let outcome: Result<(), Abort> = loop {
        match s.rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Event::Ctl(Incoming::Msg(Message::Stop(st)))) => {
                interrupted = st.interrupted;
                break Ok(());
            }
            Ok(Event::Ctl(Incoming::Msg(other))) => {
                let a = s.unexpected("stop", &other);
                break Err(a);
            }
            Ok(Event::Ctl(Incoming::Closed)) => {
                break Err(Abort("client vanished during the test".into()))
            }
            Ok(Event::Ctl(Incoming::Broken(e))) => {
                break Err(Abort(format!(
                    "control connection broke during the test: {e}"
                )))
            }
            Ok(Event::Interval(iv)) => keep_interval(s, iv, send_intervals, &mut intervals),
            Ok(Event::Data(i, st)) => engine.add_connection(i, st),
            Err(_) => {}
        }
        if s.ctx.shutdown.load(SeqCst) {
            break Err(s.fail(
                ErrorCode::ShuttingDown,
                "the server is shutting down; the test was cut short".into(),
            ));
        }
        if Instant::now() >= hard_stop {
            break Err(s.fail(
                ErrorCode::LimitExceeded,
                format!(
                    "the test ran past this server's limit of {} s (linerate serve --max-duration)",
                    s.ctx.cfg.limits.max_duration_ms / 1000
                ),
            ));
        }
        if spec.bytes.is_some() && !finished_sent && engine.has_senders() && engine.senders_done() {
            finished_sent = true;
            let _ = s.w.send(&Message::Finished(Finished {}));
        }
    };
    engine.stop_senders();
    let (quiet, max_drain) = match outcome {
        Ok(()) => (Duration::from_millis(100), Duration::from_secs(3)),
        Err(_) => (Duration::ZERO, Duration::from_millis(200)),
    };
    let (mut report, _) = engine.finish(quiet, max_drain);
    while let Ok(ev) = s.rx.try_recv() {
        if let Event::Interval(iv) = ev {
            keep_interval(s, iv, send_intervals && outcome.is_ok(), &mut intervals);
        }
    }
    report.intervals = intervals;
    outcome.map(|()| (report, interrupted))
}

/// Sends an interval to the client as it happens (`interval_events`), or keeps it for the
/// results when the client did not ask for that.
fn keep_interval(
    s: &mut Session<'_>,
    iv: IntervalReport,
    send: bool,
    intervals: &mut Vec<IntervalReport>,
) {
    if send {
        let _ = s.w.send(&Message::Interval(IntervalMsg { interval: iv }));
    } else {
        intervals.push(iv);
    }
}
