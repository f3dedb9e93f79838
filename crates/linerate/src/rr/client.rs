//! Client loops: send requests, time the responses.
//!
//! * TCP_RR: up to `burst` requests are written at once (one call), responses are read as
//!   they come; a transaction completes when its last response byte has arrived. Responses
//!   are matched to requests in order, as TCP delivers them.
//! * TCP_CRR: connect, write the stream hello and the request in one call, read the whole
//!   response, read to the server's FIN, close. The server closes first, as netperf's
//!   netserver does, so that TIME_WAIT stays on the server: a server's TIME_WAIT costs it
//!   no port (a new SYN with a later timestamp reuses the entry), while on the client it
//!   holds an ephemeral port for 60 s, and off loopback (where `tcp_tw_reuse` is 2, its
//!   default, lets none be reused) about 28,000 ports last 60 s at only ~470 connections
//!   per second. An older server (without feature `crr_server_closes`) waits for the
//!   client to close first; then the client does.
//! * UDP_RR: each request carries a probe header (sequence number); the response echoes it.
//!   A request unanswered after `timeout_ms` is lost; a response that arrives later is
//!   counted as late and ignored.
//!
//! With a target rate each request has an intended send time from a strict schedule
//! ([`Schedule`]); latency is measured from it, and from the actual write into a second
//! histogram. Without one, the two are the same and only one histogram is kept.

use crate::sys::net::AsSock;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use linerate_wire::probe::{self, Probe};
use linerate_wire::stream_hello::StreamHello;

use super::io::{idle_read_timeout, is_timeout, pattern, read_n, write_all, write_all_now_first};
use super::latency::new_histogram;
use super::{wait_for_slot, Connector, LoopCtx, RrOutcome, RrSocket, Schedule, POLL};
use crate::sys::sockets;

/// Latency histograms of one stream.
struct Recorder {
    latency: Histogram<u64>,
    actual: Option<Histogram<u64>>,
}

impl Recorder {
    fn new(paced: bool) -> Recorder {
        Recorder {
            latency: new_histogram(),
            actual: paced.then(new_histogram),
        }
    }

    fn record(&mut self, intended_ns: u64, actual_ns: u64, done_ns: u64) {
        self.latency
            .saturating_record(done_ns.saturating_sub(intended_ns).max(1));
        if let Some(a) = self.actual.as_mut() {
            a.saturating_record(done_ns.saturating_sub(actual_ns).max(1));
        }
    }

    fn into_outcome(self, out: &mut RrOutcome) {
        out.latency = Some(self.latency);
        out.actual = self.actual;
    }
}

/// Waits up to `ns` for `fd` to become readable; true if it did.
fn readable(fd: &impl AsSock, ns: u64) -> io::Result<bool> {
    crate::sys::net::wait_readable(fd.as_sock(), Duration::from_nanos(ns).min(POLL))
}

/// Runs the client loop for `socket` on the calling thread.
pub fn run(ctx: &LoopCtx, socket: &RrSocket, out: &mut RrOutcome) -> io::Result<()> {
    match socket {
        RrSocket::Tcp(s) => tcp_rr(ctx, s, out),
        RrSocket::Udp(u) => udp_rr(ctx, u, out),
        RrSocket::Connect(c) => tcp_crr(ctx, c, out),
        RrSocket::Accept(_) | RrSocket::Listen(..) => Err(io::Error::other(
            "a client stream cannot accept connections",
        )),
    }
}

fn tcp_rr(ctx: &LoopCtx, s: &TcpStream, out: &mut RrOutcome) -> io::Result<()> {
    let mut sched = Schedule::new(ctx.rate_tps, ctx.now_ns());
    // Unpaced, the read for a response blocks with no time-out: a time-out arms a kernel
    // timer on every blocking read (about 5% of TCP_RR's transactions per second on
    // loopback), and RrEngine::stop wakes the read by shutting the socket's reading side.
    // Paced, readiness is polled with a time-out before each read. At the stop, the
    // requests already sent are waited for (RrEngine::stop's drain), none is sent after.
    s.set_read_timeout(sched.paced().then_some(POLL).or_else(idle_read_timeout))?;
    s.set_write_timeout(Some(POLL))?;
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = ctx.spec.response_bytes.max(1) as usize;
    let burst = ctx.spec.burst.max(1) as usize;
    let sendbuf = pattern(req * burst);
    let mut rbuf = vec![0u8; (resp * burst).clamp(64, 1 << 20)];
    let mut inflight: VecDeque<(u64, u64)> = VecDeque::with_capacity(burst);
    let mut got = 0usize;
    let mut rec = Recorder::new(sched.paced());
    let mut base = false;
    let mut r = s;
    let result = loop {
        let stopping = ctx.stop.load(Relaxed);
        if ctx.cut.load(Relaxed) || (stopping && inflight.is_empty()) {
            break Ok(());
        }
        ctx.check_baseline(&mut base);
        let now = ctx.now_ns();
        let mut n = 0;
        while !stopping && inflight.len() < burst {
            match sched.next(now) {
                Some(intended) => {
                    inflight.push_back((intended, now));
                    n += 1;
                }
                None => break,
            }
        }
        if n > 0 {
            match write_all(ctx, s, &sendbuf[..n * req]) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        }
        if inflight.is_empty() {
            wait_for_slot(&sched, now);
            continue;
        }
        if sched.paced() && inflight.len() < burst {
            // More requests may become due while these are out: wake for either.
            let w = sched.wait_ns(ctx.now_ns());
            match readable(s, w) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => break Err(e),
            }
        }
        match r.read(&mut rbuf) {
            // The reading side shut at the stop's end (see above).
            Ok(0) if ctx.cut.load(Relaxed) => break Ok(()),
            Ok(0) => {
                break Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ))
            }
            Ok(k) => {
                ctx.read(k);
                let done = ctx.now_ns();
                got += k;
                while got >= resp {
                    got -= resp;
                    if let Some((intended, actual)) = inflight.pop_front() {
                        if ctx.measuring() {
                            rec.record(intended, actual, done);
                        }
                        ctx.completed(1, done);
                    }
                }
            }
            Err(e) if is_timeout(&e) => continue,
            Err(e) => break Err(e),
        }
    };
    rec.into_outcome(out);
    result
}

fn tcp_crr(ctx: &LoopCtx, c: &Connector, out: &mut RrOutcome) -> io::Result<()> {
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = ctx.spec.response_bytes.max(1) as usize;
    let mut msg = StreamHello {
        token: c.token,
        stream_index: c.index,
    }
    .to_bytes()
    .to_vec();
    msg.extend(pattern(req));
    let mut rbuf = vec![0u8; resp.clamp(64, 1 << 20)];
    // TCP_NODELAY only where Nagle could hold something back: the hello and the request go
    // in one write, and a write that fits one segment leaves with nothing unacknowledged
    // before it, so Nagle never delays it (536 bytes: the least MSS a path gives in
    // practice, RFC 1122). One system call less per transaction.
    let mut opts = c.opts.clone();
    let segment = opts.mss.map_or(536, |m| m.min(536) as usize);
    if msg.len() <= segment {
        opts.nodelay = false;
    }
    let mut sched = Schedule::new(ctx.rate_tps, ctx.now_ns());
    let mut rec = Recorder::new(sched.paced());
    let mut base = false;
    let mut first_error = true;
    // Conntrack's figures at the start, for the first connect that times out (a full
    // table drops SYNs while the server is fine): one small read per stream.
    let conntrack_start = crate::sys::conntrack::Snapshot::read();
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let now = ctx.now_ns();
        let Some(intended) = sched.next(now) else {
            wait_for_slot(&sched, now);
            continue;
        };
        match crr_once(ctx, c, &opts, &msg, resp, &mut rbuf) {
            Ok(true) => {
                let done = ctx.now_ns();
                if ctx.measuring() {
                    rec.record(intended, now, done);
                }
                ctx.completed(1, done);
            }
            Ok(false) => break,
            // Cut by the end of the test (the server stops taking connections once this end
            // stopped): not a failure.
            Err(_) if ctx.cut.load(Relaxed) => break,
            Err(e) => {
                super::bump(&ctx.counters.errors, 1);
                if first_error {
                    first_error = false;
                    let mut w = format!("a TCP_CRR transaction failed: {e}");
                    if e.kind() == io::ErrorKind::TimedOut {
                        if let Some(ct) = crate::sys::conntrack::explain(conntrack_start.as_ref()) {
                            w.push_str(&format!(" ({ct})"));
                        }
                    }
                    out.warnings.push(w);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    rec.into_outcome(out);
    Ok(())
}

/// One TCP_CRR transaction; Ok(false) when stopped half way.
///
/// The connection has no read time-out (a kernel timer on every read that sleeps): the
/// engine's watchdog ([`super::watch`]) ends the wait for the response at the test's stop,
/// and the wait for the server's FIN at the stop or after the connect time-out.
fn crr_once(
    ctx: &LoopCtx,
    c: &Connector,
    opts: &sockets::SockOpts,
    msg: &[u8],
    resp: usize,
    rbuf: &mut [u8],
) -> io::Result<bool> {
    let s = sockets::tcp_socket(c.addr, opts)?;
    // Where the watchdog's shutdown does not end a read, the reads wake on their own (no
    // system call otherwise).
    if let Some(t) = idle_read_timeout() {
        s.set_read_timeout(Some(t))?;
    }
    // The watchdog bounds the connect (no SO_SNDTIMEO): a shutdown ends it.
    let Some(held) = ctx
        .watch
        .hold(&s, Some(Instant::now() + c.timeout), &ctx.stop)
    else {
        return Ok(false);
    };
    if let Err(e) = socket2::SockRef::from(&s).connect(&c.addr.into()) {
        if ctx.cut.load(Relaxed) {
            return Ok(false);
        }
        return Err(if held.was_cut() {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("connecting to {} timed out after {:?}", c.addr, c.timeout),
            )
        } else {
            e
        });
    }
    held.deadline(None);
    super::bump(&ctx.counters.connections, 1);
    // The hello and the request nearly always go in one write that does not wait; a rest
    // that must wait gets a write time-out of its own (write_all_now_first).
    if !write_all_now_first(ctx, &s, msg)? {
        return Ok(false);
    }
    // The hello is framing, not payload.
    super::bump(
        &ctx.counters.tx_bytes,
        (linerate_wire::stream_hello::LEN as u64).wrapping_neg(),
    );
    // The wait for the response has no deadline; the stop's shutdown ends it early.
    match read_n(
        ctx,
        &s,
        resp,
        rbuf,
        None,
        "the server closed the connection before the whole response",
    ) {
        Ok(true) => {}
        Ok(false) => return Ok(false),
        Err(_) if ctx.cut.load(Relaxed) => return Ok(false),
        Err(e) => return Err(e),
    }
    if c.server_closes {
        // The server's FIN follows its response at once; a server that sends more than the
        // response, or no FIN within the connect time-out, is an error.
        let fin_deadline = Instant::now() + c.timeout;
        held.deadline(Some(fin_deadline));
        let mut r = &s;
        loop {
            match r.read(rbuf) {
                // The stop's shutdown reads as a FIN too: a transaction cut by the stop
                // is not counted, as before it.
                Ok(0) if ctx.cut.load(Relaxed) => return Ok(false),
                Ok(0) if held.was_cut() => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the server did not close the connection after its response",
                    ))
                }
                Ok(0) => break,
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the server sent more than the response",
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A time-out where a shutdown does not wake the read (idle_read_timeout).
                Err(e) if is_timeout(&e) && ctx.cut.load(Relaxed) => return Ok(false),
                Err(e) if is_timeout(&e) && Instant::now() >= fin_deadline => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the server did not close the connection after its response",
                    ))
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(true)
}

fn udp_rr(ctx: &LoopCtx, u: &UdpSocket, out: &mut RrOutcome) -> io::Result<()> {
    let timeout_ns = ctx.spec.timeout_ms.max(1).saturating_mul(1_000_000);
    u.set_read_timeout(Some(Duration::from_nanos(timeout_ns).min(POLL)))?;
    let mut req = pattern((ctx.spec.request_bytes as usize).max(probe::LEN));
    let mut rbuf = vec![0u8; 65_536];
    let burst = ctx.spec.burst.max(1) as usize;
    // (seq, intended, actual)
    let mut outstanding: VecDeque<(u64, u64, u64)> = VecDeque::with_capacity(burst);
    let mut seq = 0u64;
    let mut sched = Schedule::new(ctx.rate_tps, ctx.now_ns());
    let mut rec = Recorder::new(sched.paced());
    let mut base = false;
    let c = &ctx.counters;
    let result = loop {
        // At the stop, the requests out are answered or lost (their time-out), none is
        // sent after.
        let stopping = ctx.stop.load(Relaxed);
        if ctx.cut.load(Relaxed) || (stopping && outstanding.is_empty()) {
            break Ok(());
        }
        ctx.check_baseline(&mut base);
        let now = ctx.now_ns();
        while outstanding
            .front()
            .is_some_and(|&(_, _, sent)| now.saturating_sub(sent) >= timeout_ns)
        {
            outstanding.pop_front();
            super::bump(&c.lost, 1);
        }
        while !stopping && outstanding.len() < burst {
            let Some(intended) = sched.next(now) else {
                break;
            };
            Probe { seq, tx_ns: now }.emit(&mut req);
            match u.send(&req) {
                Ok(_) => {
                    ctx.wrote(req.len());
                    outstanding.push_back((seq, intended, now));
                    seq += 1;
                }
                // A full queue or an ICMP error from an earlier datagram: this request
                // never left, so it is neither sent nor lost; retry on the next turn.
                Err(e)
                    if is_timeout(&e)
                        || e.raw_os_error() == Some(crate::sys::net::errno::ENOBUFS)
                        || e.kind() == io::ErrorKind::ConnectionRefused =>
                {
                    break
                }
                Err(e) => return Err(e),
            }
        }
        let Some(&(_, _, oldest)) = outstanding.front() else {
            wait_for_slot(&sched, now);
            continue;
        };
        if sched.paced() && outstanding.len() < burst {
            let deadline = (oldest + timeout_ns).saturating_sub(now);
            let w = sched.wait_ns(now).min(deadline);
            match readable(u, w) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => break Err(e),
            }
        }
        match u.recv(&mut rbuf) {
            Ok(k) => {
                ctx.read(k);
                let done = ctx.now_ns();
                let Ok(p) = Probe::parse(&rbuf[..k]) else {
                    continue;
                };
                match outstanding.iter().position(|o| o.0 == p.seq) {
                    Some(pos) => {
                        let (_, intended, actual) = outstanding.remove(pos).unwrap_or_default();
                        if done.saturating_sub(actual) >= timeout_ns {
                            super::bump(&c.lost, 1);
                            super::bump(&c.late, 1);
                        } else {
                            if ctx.measuring() {
                                rec.record(intended, actual, done);
                            }
                            ctx.completed(1, done);
                        }
                    }
                    None => super::bump(&c.late, 1),
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => break Err(e),
        }
    };
    rec.into_outcome(out);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rr::watch::Watchdog;
    use crate::rr::LoopCtx;
    use std::io::Write;
    use std::net::TcpListener;

    fn connector(addr: std::net::SocketAddr, timeout: Duration) -> Connector {
        Connector {
            addr,
            token: [1; 16],
            index: 0,
            opts: sockets::SockOpts::default(),
            timeout,
            server_closes: true,
        }
    }

    /// Asserts that a transaction failed as timed out, saying `words`, after the connect
    /// time-out `limit` and well before 3 s.
    fn assert_cut_after(r: io::Result<bool>, took: Duration, limit: Duration, words: &str) {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains(words), "{e}");
        assert!(took >= limit, "{took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    /// One transaction of `c` with the watchdog running: its result and how long it took.
    fn once(c: &Connector) -> (io::Result<bool>, Duration) {
        let ctx = LoopCtx::crr_for_test(1, 1);
        let dog = Watchdog::start(vec![ctx.watch.clone()], ctx.stop.clone()).unwrap();
        let t0 = Instant::now();
        let r = crr_once(&ctx, c, &c.opts, b"hello", 1, &mut [0u8; 64]);
        let took = t0.elapsed();
        dog.join();
        (r, took)
    }

    /// Without socket time-outs, the watchdog bounds the connect (a listener whose queue is
    /// full drops the SYN) and the wait for the server's FIN, each by the connect time-out.
    #[test]
    fn the_watchdog_bounds_the_connect_and_the_wait_for_the_fin() {
        // Backlog 0: one connection queues, the next SYNs are dropped.
        let full =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        full.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        full.listen(0).unwrap();
        let addr = full.local_addr().unwrap().as_socket().unwrap();
        let queued: Vec<_> = (0..3)
            .map(|_| {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .unwrap();
                s.set_nonblocking(true).unwrap();
                let _ = s.connect(&addr.into());
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let limit = Duration::from_millis(200);
        let (r, took) = once(&connector(addr, limit));
        assert_cut_after(r, took, limit, "connecting to");
        drop(queued);

        // A server that answers but never closes.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"r").unwrap();
            // Held open until the client gives up.
            let _ = s.read(&mut buf);
        });
        let (r, took) = once(&connector(addr, limit));
        assert_cut_after(r, took, limit, "did not close");
        server.join().unwrap();
    }

    /// The stop ends a transaction that waits for its response, uncounted and without an
    /// error.
    #[test]
    fn the_stop_ends_a_wait_for_the_response() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = connector(l.local_addr().unwrap(), Duration::from_secs(5));
        let ctx = LoopCtx::crr_for_test(1, 1);
        let dog = Watchdog::start(vec![ctx.watch.clone()], ctx.stop.clone()).unwrap();
        let stop = ctx.stop.clone();
        let client = std::thread::spawn(move || {
            let r = crr_once(&ctx, &c, &c.opts, b"hello", 1, &mut [0u8; 64]);
            (r.unwrap(), ctx.counters.transactions.load(Relaxed))
        });
        // Accepted, never answered.
        let (_s, _) = l.accept().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!client.is_finished());
        stop.store(true, Relaxed);
        assert_eq!(client.join().unwrap(), (false, 0));
        dog.join();
    }
}
