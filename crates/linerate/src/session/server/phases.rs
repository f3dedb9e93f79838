//! The test phases of a server session: collecting the data connections, then running the
//! engine until the client says stop.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    ErrorCode, Finished, IntervalMsg, Message, Start, TestSpec, Transport,
};
use linerate_wire::report::{Role, SideReport, StreamRole};

use super::{Abort, Event, Session};
use crate::engine::{DataSocket, StreamSetup};
use crate::rr::session::Running;
use crate::session::conn::{self, Incoming};
use crate::session::sockets::{self, SockOpts};
use crate::session::{split, stream_layout};

pub(super) fn collect_streams(
    s: &mut Session<'_>,
    spec: &TestSpec,
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
        None,
        early_host,
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
            Ok(Event::Interval(iv)) => {
                if send_intervals {
                    let _ = s.w.send(&Message::Interval(IntervalMsg {
                        interval: iv.clone(),
                    }));
                }
                intervals.push(iv);
            }
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
            intervals.push(iv);
        }
    }
    report.intervals = intervals;
    outcome.map(|()| (report, interrupted))
}
