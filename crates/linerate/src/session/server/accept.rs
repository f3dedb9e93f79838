//! The accept loop of `linerate serve`: each new connection routed by its first bytes to a
//! control session ([`super::connection`]), an iperf3 session or stream
//! ([`crate::session::iperf3::server`]), or, for a data connection, the session that owns
//! its token. Its own file so that the iperf3 server, which uses the server's shared state,
//! is not also imported by the file that holds that state.

use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use linerate_wire::control::{self, ErrorCode, ErrorMsg, Message};
use linerate_wire::stream_hello::{self, StreamHello};

use super::connection::{handle_control, Event};
use super::{
    log, Ctx, Route, Server, ACCEPT_ERROR_LOG_EVERY, BUSY_ANSWER_TIME, FD_RESERVE, MAX_BUSY_ANSWERS,
};
use crate::session::iperf3::server as iperf3;
use crate::sys::net::{self, AsSock, Recv};
use crate::sys::sockets;

impl Server {
    /// Serves until the shutdown flag is set (or after one test with `one_off`). Running tests
    /// are told the server is shutting down and given a moment to end.
    pub fn run(self) -> anyhow::Result<()> {
        self.listener.set_nonblocking(true)?;
        // The UDP port's reader: iperf3 clients announce their UDP streams on it.
        let udp = self.udp.try_clone().context("UDP port")?;
        let ctx = self.ctx.clone();
        let udp_reader = std::thread::Builder::new()
            .name("lr-udp-port".into())
            .spawn(move || iperf3::udp_dispatch(ctx, udp))
            .context("starting the UDP port's reader")?;
        let mut waiting: Vec<Waiting> = Vec::new();
        let mut accept_errors = AcceptErrors::default();
        while !self.ctx.shutdown.load(SeqCst) {
            // The listener and the connections still waiting for their first bytes, for at
            // most 100 ms or until the first of their handshake time-outs.
            let now = Instant::now();
            let wait = waiting
                .iter()
                .map(|w| w.deadline.saturating_duration_since(now))
                .fold(Duration::from_millis(100), Duration::min);
            let timeout = wait.max(Duration::from_millis(1));
            let mut fds = Vec::with_capacity(1 + waiting.len());
            fds.push(self.listener.as_sock());
            fds.extend(waiting.iter().map(|w| w.stream.as_sock()));
            let ready: Vec<bool> = match net::poll_readable(&fds, timeout) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("waiting for connections"),
            };
            drop(fds);
            let now = Instant::now();
            // From the back, so that swap_remove leaves the indices still to visit alone.
            for k in (0..waiting.len()).rev() {
                if ready[k + 1] || now >= waiting[k].deadline {
                    self.first_bytes(waiting.swap_remove(k));
                }
            }
            if !ready[0] {
                continue;
            }
            loop {
                match self.listener.accept() {
                    Ok((stream, peer)) => self.dispatch(stream, peer, &mut waiting),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        // EMFILE and friends: log (rarely), back off, keep serving others.
                        accept_errors.failed(&self.ctx, &e, Instant::now());
                        std::thread::sleep(Duration::from_millis(50));
                        break;
                    }
                }
            }
        }
        for w in waiting {
            self.ctx.close_connection(w.ip);
        }
        // Give sessions a moment to tell their clients and end their engines.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.ctx.sessions.load(SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = udp_reader.join();
        Ok(())
    }

    /// A new connection: a data connection whose stream hello is already there is routed at
    /// once; any other waits (counted against the limits) in `waiting` for its first bytes,
    /// or gets a thread at once when [`MAX_WAITING`] already wait.
    fn dispatch(&self, stream: TcpStream, peer: SocketAddr, waiting: &mut Vec<Waiting>) {
        let accepted = Instant::now();
        net::after_accept(&stream);
        let seq = self.ctx.accept_seq.fetch_add(1, SeqCst);
        let Some(stream) = route_ready_data(&self.ctx, stream, peer) else {
            return;
        };
        let ip = sockets::canonical(peer.ip());
        // Descriptors are the lowest free: a number this high means nearly all are open.
        #[allow(clippy::unnecessary_cast)] // an i32 descriptor on Linux, a u64 SOCKET on Windows
        let fd = stream.raw_sock() as u64;
        let keep = FD_RESERVE + MAX_BUSY_ANSWERS as u64;
        if fd >= self.ctx.open_files.saturating_sub(keep) {
            let why = format!(
                "the server has nearly all of its {} file descriptors open: retry later",
                self.ctx.open_files
            );
            return answer_busy(&self.ctx, stream, peer, why);
        }
        if let Err(why) = self.ctx.open_connection(ip) {
            return answer_busy(&self.ctx, stream, peer, why);
        }
        let w = Waiting {
            deadline: accepted + self.ctx.cfg.handshake_timeout,
            stream,
            peer,
            ip,
            accepted,
            seq,
        };
        if waiting.len() < MAX_WAITING {
            waiting.push(w);
        } else {
            self.spawn_conn(w);
        }
    }

    /// A waiting connection that became readable (or whose handshake time is up): a data
    /// connection with its whole stream hello is routed here, on the accept thread; any other
    /// gets its own thread, which reads and routes it (and logs a time-out).
    fn first_bytes(&self, w: Waiting) {
        match route_ready_data(&self.ctx, w.stream, w.peer) {
            None => self.ctx.close_connection(w.ip),
            Some(stream) => self.spawn_conn(Waiting { stream, ..w }),
        }
    }

    fn spawn_conn(&self, w: Waiting) {
        let ctx = self.ctx.clone();
        let ip = w.ip;
        let spawned = std::thread::Builder::new()
            .name("lr-conn".into())
            .spawn(move || {
                handle_conn(&ctx, w.stream, w.peer, w.accepted, w.seq);
                ctx.close_connection(w.ip);
            });
        if spawned.is_err() {
            self.ctx.close_connection(ip);
        }
    }
}

/// Failed accepts: the first is logged, then at most one line per
/// [`ACCEPT_ERROR_LOG_EVERY`] with the number of failures since the last line.
#[derive(Debug, Default)]
struct AcceptErrors {
    last_logged: Option<Instant>,
    not_logged: u64,
}

impl AcceptErrors {
    fn failed(&mut self, ctx: &Ctx, e: &io::Error, now: Instant) {
        let due = self
            .last_logged
            .is_none_or(|t| now.saturating_duration_since(t) >= ACCEPT_ERROR_LOG_EVERY);
        if !due {
            self.not_logged += 1;
            return;
        }
        if ctx.cfg.log {
            let more = match self.not_logged {
                0 => String::new(),
                n => format!(" ({n} more failures since the last line)"),
            };
            eprintln!("linerate serve: accept failed: {e}{more}");
        }
        self.last_logged = Some(now);
        self.not_logged = 0;
    }
}

/// A connection accepted before its first bytes: TCP_CRR's data connections nearly always
/// are (the accept thread wakes on the handshake's last ACK, before the hello that follows
/// it), so they wait here, on the accept thread, rather than each costing a thread start.
struct Waiting {
    stream: TcpStream,
    peer: SocketAddr,
    ip: IpAddr,
    accepted: Instant,
    seq: u64,
    /// The end of its handshake time.
    deadline: Instant,
}

/// Connections that wait on the accept thread at most; more get a thread each.
const MAX_WAITING: usize = 256;

/// Tells a connection over a limit that the server is busy: a control client gets an
/// `error` (code `busy`, with `why`) after its `hello`, within [`BUSY_ANSWER_TIME`], so it
/// can say so instead of "connection closed". At most [`MAX_BUSY_ANSWERS`] at once; the
/// others are closed at once.
fn answer_busy(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, why: String) {
    if ctx.busy_answers.fetch_add(1, SeqCst) >= MAX_BUSY_ANSWERS {
        ctx.busy_answers.fetch_sub(1, SeqCst);
        return;
    }
    log(ctx, peer, &format!("{peer}: refused: {why}"));
    let c = ctx.clone();
    let spawned = std::thread::Builder::new()
        .name("lr-busy".into())
        .spawn(move || {
            tell_busy(stream, why);
            c.busy_answers.fetch_sub(1, SeqCst);
        });
    if spawned.is_err() {
        ctx.busy_answers.fetch_sub(1, SeqCst);
    }
}

fn tell_busy(mut stream: TcpStream, why: String) {
    use std::io::{Read, Write};
    let deadline = Instant::now() + BUSY_ANSWER_TIME;
    let mut head = [0u8; 4];
    if peek_exact(&stream, &mut head, deadline).ok() != Some(4)
        || head[..2] != control::frame::MAGIC
    {
        return;
    }
    // Read the hello (capped as every frame before it), so that closing sends a FIN and
    // not a reset that could discard the answer.
    let left = deadline.saturating_duration_since(Instant::now());
    if stream
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .is_err()
    {
        return;
    }
    if crate::session::protocol::conn::read_frame(&mut stream, control::MAX_HANDSHAKE_FRAME)
        .is_err()
    {
        return;
    }
    let m = Message::Error(ErrorMsg {
        code: ErrorCode::Busy,
        message: why,
    });
    let Ok(frame) = control::encode(&m) else {
        return;
    };
    let _ = stream.set_write_timeout(Some(BUSY_ANSWER_TIME));
    if stream.write_all(&frame).is_err() {
        return;
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Until the client closes too (or the time is up), so that nothing unread is left.
    let mut sink = [0u8; 1024];
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Waits until `buf.len()` bytes can be read from `stream` or `deadline` passes, without
/// reading them, and returns how many are there (0: the peer closed). Each wait is one
/// blocking `recv(MSG_PEEK | MSG_WAITALL)` with the time left as its time-out, so a peer
/// that sends a byte and waits costs no CPU (no polling), and a peer that sends a byte now
/// and then cannot stretch the time past `deadline`.
pub(crate) fn peek_exact(
    stream: &TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> io::Result<usize> {
    let would_block = |e: &io::Error| e.kind() == io::ErrorKind::WouldBlock;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let how = if left.is_zero() {
            Recv::PeekNow
        } else {
            stream.set_read_timeout(Some(left))?;
            Recv::PeekAll
        };
        match net::recv(stream.as_sock(), buf, how) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // The time-out (or nothing there when it is already up): how much is there?
            Err(e) if would_block(&e) => {
                return match net::recv(stream.as_sock(), buf, Recv::PeekNow) {
                    Ok(n) => Ok(n),
                    Err(e) if would_block(&e) => Err(io::ErrorKind::TimedOut.into()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads the first bytes within the handshake time-out (counted from the accept) and
/// routes the connection.
fn handle_conn(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, accepted: Instant, seq: u64) {
    let deadline = accepted + ctx.cfg.handshake_timeout;
    let mut head = [0u8; 4];
    match peek_exact(&stream, &mut head, deadline) {
        Ok(4) => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no hello within the handshake time-out; closed"),
            );
            return;
        }
    }
    if head == stream_hello::MAGIC {
        handle_data(ctx, stream, peer, deadline);
    } else if linerate_wire::iperf3::Cookie::could_start(&head) {
        handle_iperf3(ctx, stream, peer, accepted, seq);
    } else if head[..2] == control::frame::MAGIC {
        // Counted from its first bytes until its test request: over the limit, the peer
        // is told busy within a second, or closed (MAX_BUSY_ANSWERS at once).
        if let Err(why) = ctx.enter_handshake(sockets::canonical(peer.ip())) {
            log(ctx, peer, &format!("{peer}: refused: {why}"));
            if ctx.busy_answers.fetch_add(1, SeqCst) < MAX_BUSY_ANSWERS {
                tell_busy(stream, why);
            }
            ctx.busy_answers.fetch_sub(1, SeqCst);
            return;
        }
        // Control messages are small and answered at once. Data connections keep the
        // options the test asks for (-N): forcing TCP_NODELAY on them would make a server
        // that sends (-R) measure something else than a client that sends.
        let _ = stream.set_nodelay(true);
        ctx.sessions.fetch_add(1, SeqCst);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle_control(ctx, stream, peer, accepted)
        }));
        if r.is_err() {
            log(
                ctx,
                peer,
                &format!("{peer}: session failed internally; other tests are unaffected"),
            );
        }
        ctx.sessions.fetch_sub(1, SeqCst);
    } else {
        log(
            ctx,
            peer,
            &format!("{peer}: not a linerate client (bad magic); closed"),
        );
    }
}

/// A connection that begins like an iperf3 cookie: a data connection of a running iperf3
/// session, or a new iperf3 client.
fn handle_iperf3(ctx: &Arc<Ctx>, stream: TcpStream, peer: SocketAddr, accepted: Instant, seq: u64) {
    let mut b = [0u8; linerate_wire::iperf3::COOKIE_LEN];
    match peek_exact(&stream, &mut b, accepted + ctx.cfg.handshake_timeout) {
        Ok(n) if n == b.len() => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no complete iperf3 cookie within the handshake time-out; closed"),
            );
            return;
        }
    }
    let _ = stream.set_read_timeout(None);
    let (arrival, stream) = iperf3::route(ctx, stream, peer, seq);
    let (iperf3::Arrival::Control(cookie), Some(stream)) = (arrival, stream) else {
        return;
    };
    ctx.sessions.fetch_add(1, SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        iperf3::handle_control(ctx, stream, peer, cookie, accepted)
    }));
    if r.is_err() {
        log(
            ctx,
            peer,
            &format!("{peer}: iperf3 session failed internally; other tests are unaffected"),
        );
    }
    ctx.sessions.fetch_sub(1, SeqCst);
}

/// Routes a data connection whose whole stream hello is already readable, on the accept
/// thread, and returns `None`; returns the stream for a connection thread otherwise.
///
/// TCP_CRR opens a data connection per transaction and sends its hello with the request
/// right after connecting, so by the time it is accepted the hello is nearly always there:
/// this saves a thread start per transaction. The peek never blocks (`MSG_DONTWAIT`), so a
/// slow peer cannot stall the accept loop.
fn route_ready_data(ctx: &Ctx, stream: TcpStream, peer: SocketAddr) -> Option<TcpStream> {
    let mut b = [0u8; stream_hello::LEN];
    let ready = matches!(net::recv(stream.as_sock(), &mut b, Recv::PeekNow), Ok(n) if n == b.len())
        && b[..4] == stream_hello::MAGIC;
    if !ready {
        return Some(stream);
    }
    // The peeked bytes are there: this read takes them without waiting.
    if (&stream).read_exact(&mut b).is_ok() {
        route_data(ctx, stream, peer, &b);
    }
    None
}

/// Reads a data connection's stream hello (all of it by `deadline`) and passes the
/// connection to the session that owns its token.
fn handle_data(ctx: &Ctx, mut stream: TcpStream, peer: SocketAddr, deadline: Instant) {
    let mut b = [0u8; stream_hello::LEN];
    match peek_exact(&stream, &mut b, deadline) {
        Ok(n) if n == b.len() => {}
        Ok(0) => return,
        Ok(_) | Err(_) => {
            log(
                ctx,
                peer,
                &format!("{peer}: no complete stream hello within the handshake time-out; closed"),
            );
            return;
        }
    }
    if stream.read_exact(&mut b).is_err() {
        return;
    }
    route_data(ctx, stream, peer, &b);
}

/// Passes a data connection whose stream hello `b` has been read to its session (or, in a
/// running server TCP_CRR test, straight to the stream's responder).
fn route_data(ctx: &Ctx, stream: TcpStream, peer: SocketAddr, b: &[u8; stream_hello::LEN]) {
    let Ok(h) = StreamHello::parse(b) else {
        log(
            ctx,
            peer,
            &format!("{peer}: malformed stream hello; closed"),
        );
        return;
    };
    let route = ctx
        .registry
        .lock()
        .ok()
        .and_then(|r| r.get(&h.token).cloned());
    match route {
        Some(Route {
            crr: Some(inbox), ..
        }) => inbox.deliver(h.stream_index, stream),
        Some(Route { session, .. }) => {
            let _ = stream.set_read_timeout(None);
            let _ = session.send(Event::Data(h.stream_index, stream));
        }
        None => log(
            ctx,
            peer,
            &format!("{peer}: data connection with an unknown token; closed"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::server::ServerConfig;
    #[test]
    fn accept_failures_are_counted_between_lines() {
        let mut a = AcceptErrors::default();
        let ctx_cfg = ServerConfig {
            log: false,
            ..ServerConfig::default()
        };
        let t0 = Instant::now();
        let e = io::Error::from_raw_os_error(24);
        // The line itself is off (log: false); what is counted is what matters.
        let server = Server::bind(ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ctx_cfg
        })
        .unwrap();
        for k in 0..100 {
            a.failed(&server.ctx, &e, t0 + Duration::from_millis(k * 10));
        }
        assert_eq!(a.not_logged, 99);
        a.failed(
            &server.ctx,
            &e,
            t0 + ACCEPT_ERROR_LOG_EVERY + Duration::from_secs(1),
        );
        assert_eq!(a.not_logged, 0);
    }
}
