//! Server responders: answer every complete request with one response.
//!
//! * TCP_RR: read what arrives, count complete requests, write one response for each (all
//!   that are due in one call), so pipelined requests (`burst`) are answered in order.
//! * TCP_CRR: take connections from the stream's queue one at a time; read one request,
//!   write one response, close (first, as netperf's netserver: see [`super::client`] on
//!   where TIME_WAIT belongs). With a port of the test's own (feature `crr_port`) every
//!   stream thread accepts on that port's listener instead, as netserver does, and checks
//!   each connection's stream hello: no thread hands a connection to another.
//! * UDP_RR: answer each datagram with `response_bytes`, copying the request's 16-byte probe
//!   header so the client can match them.
//!
//! Transactions here count responses sent. Every blocking call has a [`POLL`] time-out so
//! that the loops see the stop flag, except TCP_RR's reads, which [`super::RrEngine::stop`]
//! ends by shutting the socket's reading side.

use std::io::{self, Read};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use linerate_wire::probe;
use socket2::SockRef;

use super::io::{idle_read_timeout, is_timeout, pattern, read_n, write_all, write_all_now_first};
use super::{LoopCtx, POLL};
use crate::sys::sockets::{self, SockOpts};

/// Most response bytes written in one call.
const MAX_WRITE: usize = 1 << 20;

/// TCP_RR responder on one connection.
pub fn tcp(ctx: &LoopCtx, s: &TcpStream) -> io::Result<()> {
    // No read time-out (a kernel timer on every blocking read): RrEngine::stop shuts the
    // socket's reading side, which ends the read with 0 (where a shutdown does that:
    // elsewhere the read wakes on its own to see the stop, idle_read_timeout).
    s.set_read_timeout(idle_read_timeout())?;
    s.set_write_timeout(Some(POLL))?;
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = ctx.spec.response_bytes.max(1) as usize;
    let burst = ctx.spec.burst.max(1) as usize;
    let per_write = (MAX_WRITE / resp).clamp(1, burst.max(1));
    let respbuf = pattern(resp * per_write);
    let mut rbuf = vec![0u8; (req * burst).clamp(64 * 1024, MAX_WRITE)];
    let mut got = 0usize;
    let mut base = false;
    let mut r = s;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let k = match r.read(&mut rbuf) {
            Ok(0) => return Ok(()),
            Ok(k) => k,
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(e),
        };
        ctx.read(k);
        got += k;
        let mut due = got / req;
        got %= req;
        while due > 0 {
            let n = due.min(per_write);
            if !write_all(ctx, s, &respbuf[..n * resp])? {
                return Ok(());
            }
            // The server's transactions need no timestamps: the clock is read only
            // where a duration is measured.
            super::bump(&ctx.counters.transactions, n as u64);
            due -= n;
        }
    }
    Ok(())
}

/// TCP_CRR responder: connections of one stream, one after another, each given the
/// test's options (`opts`) first.
pub fn crr(ctx: &LoopCtx, queue: &Receiver<TcpStream>, opts: &SockOpts) -> io::Result<()> {
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = pattern(ctx.spec.response_bytes.max(1) as usize);
    let mut rbuf = vec![0u8; req.clamp(64, MAX_WRITE)];
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let s = match queue.recv_timeout(POLL) {
            Ok(s) => s,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        };
        super::bump(&ctx.counters.connections, 1);
        // The address family matters for the TOS option only: no getsockname otherwise.
        let v6 = opts.tos.is_some() && s.local_addr().is_ok_and(|a| a.is_ipv6());
        let served = sockets::apply(&SockRef::from(&s), opts, true, v6)
            .and_then(|()| crr_serve(ctx, &s, req, &resp, &mut rbuf, 0));
        if served.is_err() {
            super::bump(&ctx.counters.errors, 1);
        }
    }
    Ok(())
}

/// TCP_CRR responder on the test's own listener (feature `crr_port`): accepts until the
/// engine shuts the listener down. Each connection inherits the test's options from the
/// listener ([`crate::sys::listen::test_listener`]) and no time-out: the engine's watchdog
/// ([`super::watch`]) ends the wait for its hello after a second or at the stop, so no
/// read arms a kernel timer. A connection whose hello
/// is not the test's is closed unanswered; it is neither a transaction nor an error of the
/// test. Each thread counts what it served, whichever stream index the connection's hello
/// names (they all serve one test).
pub fn crr_listen(ctx: &LoopCtx, l: &super::CrrListener) -> io::Result<()> {
    use linerate_wire::stream_hello::{StreamHello, LEN};
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = pattern(ctx.spec.response_bytes.max(1) as usize);
    let mut rbuf = vec![0u8; (LEN + req).clamp(64, MAX_WRITE)];
    let first = LEN + req.min(MAX_WRITE - LEN);
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        if !accept_ready(&l.listener)? {
            continue;
        }
        let s = match l.listener.accept() {
            Ok((s, _)) => s,
            Err(_) if ctx.stop.load(Relaxed) => return Ok(()),
            // The listener's time-out: look at the stop flag, wait again.
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
            // Shut down by the engine (EINVAL): the test is over.
            Err(e) if e.raw_os_error() == Some(crate::sys::net::errno::EINVAL) => return Ok(()),
            Err(_) => {
                // Out of descriptors or memory, or a connection reset before it was
                // accepted: count it and go on after a moment.
                super::bump(&ctx.counters.errors, 1);
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        // The hello and as much of the request as came with it; a second at most for the
        // hello (a slow or hostile peer).
        let deadline = Instant::now() + Duration::from_secs(1);
        let Some(held) = ctx.watch.hold(&s, Some(deadline), &ctx.stop) else {
            return Ok(());
        };
        if let Some(t) = idle_read_timeout() {
            s.set_read_timeout(Some(t))?;
        }
        let got = match read_at_least(ctx, &s, &mut rbuf[..first], LEN, deadline) {
            Ok(Some(got)) => got,
            _ => continue,
        };
        if !StreamHello::parse(&rbuf[..LEN]).is_ok_and(|h| h.token == l.token) {
            continue;
        }
        // The rest bounds itself (time-outs set where it may wait); the stop still ends it.
        held.deadline(None);
        super::bump(&ctx.counters.connections, 1);
        let payload = got - LEN;
        ctx.read(payload);
        if crr_serve(ctx, &s, req, &resp, &mut rbuf, payload).is_err() {
            super::bump(&ctx.counters.errors, 1);
        }
    }
    Ok(())
}

/// Whether to `accept` now: always where the listener's shutdown ends a blocked accept
/// ([`crate::sys::net::SHUTDOWN_WAKES`]); elsewhere once a connection waits, looked for
/// up to [`POLL`] so that the loop still sees the stop.
fn accept_ready(l: &std::net::TcpListener) -> io::Result<bool> {
    use crate::sys::net::{self, AsSock};
    if net::SHUTDOWN_WAKES {
        return Ok(true);
    }
    net::wait_readable(l.as_sock(), POLL)
}

/// Reads into `buf` until at least `need` bytes are there: how many (at most `buf.len()`),
/// or None if the peer closes first, the watchdog shuts the connection down, or (where
/// reads have a time-out: [`idle_read_timeout`]) the test stops or `deadline` passes.
fn read_at_least(
    ctx: &LoopCtx,
    mut s: &TcpStream,
    buf: &mut [u8],
    need: usize,
    deadline: Instant,
) -> io::Result<Option<usize>> {
    let mut got = 0;
    while got < need {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Ok(None),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                if ctx.stop.load(Relaxed) || Instant::now() >= deadline {
                    return Ok(None);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Some(got))
}

/// One TCP_CRR transaction on `s`, of which `got` request bytes were already read.
fn crr_serve(
    ctx: &LoopCtx,
    s: &TcpStream,
    req: usize,
    resp: &[u8],
    rbuf: &mut [u8],
    mut got: usize,
) -> io::Result<()> {
    use crate::sys::net::{self, AsSock, Recv};
    // The request nearly always arrived with the stream hello and the response fits the
    // empty send buffer of a new connection: both are tried without waiting first, so that
    // a transaction needs no time-outs (each a system call per transaction).
    if got < req {
        let first = (req - got).min(rbuf.len());
        match net::recv(s.as_sock(), &mut rbuf[..first], Recv::Now) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed early")),
            Ok(k) => {
                ctx.read(k);
                got += k;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    if got < req {
        s.set_read_timeout(Some(POLL))?;
        // A client gets 5 s to send its request; then the connection is dropped.
        let deadline = Instant::now() + Duration::from_secs(5);
        if !read_n(ctx, s, req - got, rbuf, Some(deadline), "closed early")? {
            return Ok(());
        }
    }
    if !write_all_now_first(ctx, s, resp)? {
        return Ok(());
    }
    ctx.completed(1, ctx.now_ns());
    // The caller drops the connection: the server closes first. The whole request was
    // read, so the close sends a FIN, not a reset. An older client that closes without
    // reading to the FIN is no matter: whichever FIN goes first, no data is lost.
    Ok(())
}

/// UDP_RR responder on one connected socket.
pub fn udp(ctx: &LoopCtx, u: &UdpSocket) -> io::Result<()> {
    u.set_read_timeout(Some(POLL))?;
    let mut resp = pattern((ctx.spec.response_bytes as usize).max(probe::LEN));
    let mut rbuf = vec![0u8; 65_536];
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let k = match u.recv(&mut rbuf) {
            Ok(k) => k,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        // A late copy of the stream's UDP hello (sent until the start) is not a request.
        if linerate_wire::stream_hello::is_hello_datagram(&rbuf[..k]) {
            continue;
        }
        ctx.read(k);
        if k < probe::LEN {
            continue;
        }
        resp[..probe::LEN].copy_from_slice(&rbuf[..probe::LEN]);
        match u.send(&resp) {
            Ok(_) => {
                ctx.wrote(resp.len());
                super::bump(&ctx.counters.transactions, 1);
            }
            Err(e)
                if is_timeout(&e)
                    || e.raw_os_error() == Some(crate::sys::net::errno::ENOBUFS)
                    || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rr::{CrrListener, LoopCtx};
    use linerate_wire::stream_hello::StreamHello;
    use std::io::Write;
    use std::sync::Arc;

    fn conversation(addr: std::net::SocketAddr, token: [u8; 16]) -> Vec<u8> {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut msg = StreamHello {
            token,
            stream_index: 0,
        }
        .to_bytes()
        .to_vec();
        msg.extend([7u8; 3]);
        c.write_all(&msg).unwrap();
        let mut got = Vec::new();
        // To the server's close: a FIN, or a reset when it closed unread bytes.
        let _ = c.read_to_end(&mut got);
        got
    }

    #[test]
    fn the_tests_own_port_answers_its_token_only_bounds_a_silent_peer_and_ends_on_shutdown() {
        let token = [0x42; 16];
        let l = Arc::new(CrrListener {
            listener: crate::sys::listen::test_listener(
                "127.0.0.1:0".parse().unwrap(),
                &SockOpts::default(),
            )
            .unwrap(),
            token,
        });
        let addr = l.listener.local_addr().unwrap();
        let ctx = LoopCtx::crr_for_test(3, 5);
        let (counters, stop) = (ctx.counters.clone(), ctx.stop.clone());
        let dog = crate::rr::watch::Watchdog::start(vec![ctx.watch.clone()], stop.clone()).unwrap();
        let responder = {
            let l = l.clone();
            std::thread::spawn(move || crr_listen(&ctx, &l))
        };
        // Another test's token: closed unanswered, and not counted.
        assert!(conversation(addr, [0x43; 16]).is_empty());
        // The test's: one response of 5 bytes, then the server's close.
        assert_eq!(conversation(addr, token), pattern(5));
        assert!(conversation(addr, [0; 16]).is_empty());
        // A peer that never sends its hello holds the responder a second, no longer: the
        // watchdog shuts its connection down, and the next is served.
        let t0 = Instant::now();
        let silent = TcpStream::connect(addr).unwrap();
        assert_eq!(conversation(addr, token), pattern(5));
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_secs(1), "{waited:?}");
        assert!(waited < Duration::from_secs(4), "{waited:?}");
        assert_eq!((&silent).read(&mut [0u8; 4]).unwrap(), 0);
        // The engine's stop: the flag, then the listener shut down.
        stop.store(true, Relaxed);
        use crate::sys::net::AsSock;
        crate::sys::net::shutdown(l.listener.as_sock(), std::net::Shutdown::Read).unwrap();
        responder.join().unwrap().unwrap();
        dog.join();
        let c = &counters;
        assert_eq!(c.connections.load(Relaxed), 2);
        assert_eq!(c.transactions.load(Relaxed), 2);
        assert_eq!(c.rx_bytes.load(Relaxed), 6);
        assert_eq!(c.tx_bytes.load(Relaxed), 10);
        assert_eq!(c.errors.load(Relaxed), 0);
    }
}
