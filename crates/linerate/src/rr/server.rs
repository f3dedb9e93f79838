//! Server responders: answer every complete request with one response.
//!
//! * TCP_RR: read what arrives, count complete requests, write one response for each (all
//!   that are due in one call), so pipelined requests (`burst`) are answered in order.
//! * TCP_CRR: take connections from the stream's queue one at a time; read one request,
//!   write one response, then wait (at most 1 s) for the client to close first.
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

use super::io::{is_timeout, pattern, read_n, write_all};
use super::{LoopCtx, POLL};
use crate::sys::sockets::{self, SockOpts};

/// Most response bytes written in one call.
const MAX_WRITE: usize = 1 << 20;

/// TCP_RR responder on one connection.
pub fn tcp(ctx: &LoopCtx, s: &TcpStream) -> io::Result<()> {
    // No read time-out (a kernel timer on every blocking read): RrEngine::stop shuts the
    // socket's reading side, which ends the read with 0.
    s.set_read_timeout(None)?;
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

/// TCP_CRR responder: connections of one stream, one after another.
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
        // The test's options on every connection, as the client sets them on its end (the
        // address family matters for the TOS option only: no getsockname otherwise).
        let v6 = opts.tos.is_some() && s.local_addr().is_ok_and(|a| a.is_ipv6());
        if sockets::apply(&SockRef::from(&s), opts, true, v6).is_err()
            || crr_serve(ctx, &s, req, &resp, &mut rbuf).is_err()
        {
            super::bump(&ctx.counters.errors, 1);
        }
    }
    Ok(())
}

fn crr_serve(
    ctx: &LoopCtx,
    s: &TcpStream,
    req: usize,
    resp: &[u8],
    rbuf: &mut [u8],
) -> io::Result<()> {
    use nix::sys::socket::{recv, send, MsgFlags};
    use std::os::fd::AsRawFd;
    // The request nearly always arrived with the stream hello and the response fits the
    // empty send buffer of a new connection: both are tried without waiting first, so that
    // a transaction needs no write time-out and the read time-out only for the close (each
    // a system call per transaction).
    let mut got = 0;
    let first = req.min(rbuf.len());
    match recv(s.as_raw_fd(), &mut rbuf[..first], MsgFlags::MSG_DONTWAIT) {
        Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed early")),
        Ok(k) => {
            ctx.read(k);
            got = k;
        }
        Err(nix::errno::Errno::EAGAIN) => {}
        Err(e) => return Err(e.into()),
    }
    s.set_read_timeout(Some(POLL))?;
    // A client gets 5 s to send its request; then the connection is dropped.
    let deadline = Instant::now() + Duration::from_secs(5);
    if got < req && !read_n(ctx, s, req - got, rbuf, Some(deadline), "closed early")? {
        return Ok(());
    }
    let sent = match send(
        s.as_raw_fd(),
        resp,
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
    ) {
        Ok(k) => k,
        Err(nix::errno::Errno::EAGAIN) => 0,
        Err(e) => return Err(e.into()),
    };
    ctx.wrote(sent);
    if sent < resp.len() {
        s.set_write_timeout(Some(POLL))?;
        if !write_all(ctx, s, &resp[sent..])? {
            return Ok(());
        }
    }
    ctx.completed(1, ctx.now_ns());
    // Let the client close first, so that TIME_WAIT stays on the client, not on a server
    // that serves many (netserver closes first instead), without waiting long for it.
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut r = s;
    while Instant::now() < deadline && !ctx.stop.load(Relaxed) {
        match r.read(rbuf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if is_timeout(&e) => continue,
            Err(_) => break,
        }
    }
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
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                    || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
