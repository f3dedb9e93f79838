//! The per-stream data loops: one thread per stream, sending or receiving.
//!
//! Loops publish what they did through [`StreamCounters`] (relaxed atomics, read by the meter)
//! and return a [`StreamOutcome`] when they end. Every blocking call is bounded by a socket
//! time-out so that a loop notices its stop flag within [`POLL`].

use crate::sys::net::{self, errno, AsSock};
use crate::sys::process;
use portable_atomic::AtomicU64;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_stats::{JitterEstimator, SeqTracker};
use linerate_wire::probe::{self, Probe};
use linerate_wire::report::{ProcessCpu, UdpRxReport};
use linerate_wire::stream_hello;

use super::meter::ThreadCpu;
use super::pacing::{self, Pacer};
use super::rawgen::RawSender;
use crate::sys;
use crate::sys::afpacket::Completed;
use crate::sys::mmsg::{self, RecvBatch};
use linerate_wire::control::{RecvMode, SendMode};
use linerate_wire::report::{TxPath, ZerocopyReport};

/// How often a blocked loop wakes to look at its stop flag.
pub const POLL: Duration = Duration::from_millis(100);

/// Counters one stream publishes while it runs.
#[derive(Debug, Default)]
pub struct StreamCounters {
    /// Payload bytes.
    pub bytes: AtomicU64,
    /// I/O calls.
    pub calls: AtomicU64,
    /// Datagrams (UDP).
    pub packets: AtomicU64,
    /// UDP receiver: lost so far.
    pub lost: AtomicU64,
    /// UDP receiver: duplicates so far.
    pub duplicates: AtomicU64,
    /// UDP receiver: reordered so far.
    pub reordered: AtomicU64,
    /// Nanoseconds after the engine epoch of the last byte moved, plus one (0 = none yet).
    pub last_ns: AtomicU64,
    /// TCP senders: nanoseconds spent in sends that timed out ([`POLL`]) having taken no
    /// byte: the socket buffer stayed full, because the path or the peer took no data.
    pub blocked_ns: AtomicU64,
    /// Set when the loop has ended.
    pub done: AtomicBool,
    /// Thread CPU at the warm-up boundary.
    pub cpu_at_baseline: ThreadCpu,
}

/// The socket a stream runs on.
#[derive(Debug, Clone)]
pub enum DataSocket {
    /// A TCP connection.
    Tcp(Arc<TcpStream>),
    /// A connected UDP socket.
    Udp(Arc<UdpSocket>),
    /// A QUIC stream (feature `quic`; none can exist without it).
    Quic(Arc<super::quic::QuicStream>),
}

/// What a stream loop returns.
#[derive(Debug, Default)]
pub struct StreamOutcome {
    /// UDP receiver accounting (receivers only).
    pub udp_rx: Option<UdpRxReport>,
    /// UDP senders: the sequence number of the next datagram, i.e. all datagrams sent.
    pub udp_seq_end: Option<u64>,
    /// The thread's CPU time over the measured window.
    pub cpu: Option<ProcessCpu>,
    /// Why the loop ended early, if it did.
    pub error: Option<String>,
    /// Warnings (e.g. GSO turned off).
    pub warnings: Vec<String>,
    /// How a UDP sender put its datagrams on the wire.
    pub tx_path: Option<linerate_wire::report::TxPath>,
    /// Raw-frame senders: the kernel path of the frames.
    pub raw_tx: Option<linerate_wire::report::RawTx>,
    /// `MSG_ZEROCOPY` senders: the kernel's completions.
    pub zerocopy: Option<ZerocopyReport>,
}

/// Everything a loop needs.
pub struct StreamCtx {
    /// Shared counters.
    pub counters: Arc<StreamCounters>,
    /// Engine epoch.
    pub epoch: Instant,
    /// Stop flag for this loop.
    pub stop: Arc<AtomicBool>,
    /// Set by the meter at the warm-up boundary.
    pub baseline: Arc<AtomicBool>,
    /// Bytes to send before stopping (fixed-size tests).
    pub quota: Option<u64>,
    /// Paced rate of this stream.
    pub rate_bps: Option<u64>,
    /// Write / datagram size.
    pub write_size: usize,
    /// UDP GSO on send, GRO on receive.
    pub udp_offload: bool,
    /// CPU to pin to.
    pub cpu: Option<u32>,
    /// UDP receivers: measure the one-way delay of the probes (shared clock only).
    pub one_way_delay: Option<linerate_wire::control::DelaySpec>,
    /// UDP senders: never burst to catch up after a stall ([`Pacer::smooth`]).
    pub smooth_pacing: bool,
    /// UDP senders: write complete frames with an AF_PACKET ring ([`super::rawgen`]),
    /// falling back to `sendmmsg` without GSO.
    pub raw_frames: bool,
    /// The raw-frame sender opened for this stream before the engine's clock started, or
    /// why it could not be (`raw_frames` senders only; opened here when absent).
    pub raw: Option<Result<RawSender, String>>,
    /// Raw-frame senders: the kernel path asked for (`--raw-tx`).
    pub raw_tx: linerate_wire::control::RawTxChoice,
    /// How TCP senders hand data to the kernel.
    pub send_mode: SendMode,
    /// How TCP receivers take data.
    pub recv_mode: RecvMode,
    /// Datagrams carry iperf3's header, not linerate's probe ([`super::EngineConfig::iperf3`]).
    pub iperf3: bool,
}

/// How far behind its schedule a smooth-paced sender of `datagram` bytes at `rate_bps` may
/// fall before it skips ahead instead of catching up: the time of 64 datagrams (one GSO
/// batch, which goes out back to back anyway), kept within 1 to 4 ms. Catching up after a
/// short stall therefore never sends a longer burst than a normal batch, while a tester that
/// waits a few milliseconds for a CPU does not lose those frames.
pub fn smooth_slack_ns(rate_bps: u64, datagram: usize) -> u64 {
    let interval_ns = (datagram as u128 * 8 * 1_000_000_000) / u128::from(rate_bps.max(1));
    let batch_ns = u64::try_from(interval_ns * 64).unwrap_or(u64::MAX);
    batch_ns.clamp(1_000_000, 4_000_000)
}

impl StreamCtx {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn record(&self, bytes: u64, calls: u64, packets: u64) {
        let c = &self.counters;
        c.bytes.fetch_add(bytes, Relaxed);
        c.calls.fetch_add(calls, Relaxed);
        if packets > 0 {
            c.packets.fetch_add(packets, Relaxed);
        }
        c.last_ns.store(self.now_ns() + 1, Relaxed);
    }

    /// A send that began at `t0` (engine ns) timed out having taken nothing: its time
    /// counts as blocked.
    fn blocked_since(&self, t0: u64) {
        let c = &self.counters;
        c.blocked_ns
            .fetch_add(self.now_ns().saturating_sub(t0), Relaxed);
    }

    /// Saves the thread's CPU once the warm-up is over (cheap check per loop turn).
    #[inline]
    fn check_baseline(&self, taken: &mut bool) {
        self.counters
            .cpu_at_baseline
            .save_once(&self.baseline, taken);
    }
}

/// True for the errors of a socket time-out (or an interrupted call): try again.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Runs the loop for `socket` in the given role; called on the stream's own thread.
pub fn run(mut ctx: StreamCtx, socket: DataSocket, send: bool) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Some(cpu) = ctx.cpu {
        if let Err(e) = sys::affinity::pin_current_thread(cpu) {
            out.warnings
                .push(format!("could not pin a data thread: {e}"));
        }
    }
    let res = match (&socket, send) {
        (DataSocket::Tcp(s), true) => match ctx.send_mode {
            SendMode::Copy => tcp_send(&ctx, s),
            SendMode::Zerocopy => tcp_send_zerocopy(&ctx, s, &mut out.zerocopy),
            SendMode::Sendfile => tcp_send_sendfile(&ctx, s),
        },
        (DataSocket::Tcp(s), false) => tcp_recv(&ctx, s),
        (DataSocket::Udp(s), true) => udp_send(
            &mut ctx,
            s,
            &mut out.warnings,
            &mut out.udp_seq_end,
            (&mut out.tx_path, &mut out.raw_tx),
        ),
        (DataSocket::Udp(s), false) => udp_recv(&ctx, s, &mut out.udp_rx),
        (DataSocket::Quic(q), true) => super::quic::send(&mut QuicDriver::new(&ctx), q),
        (DataSocket::Quic(q), false) => super::quic::recv(&mut QuicDriver::new(&ctx), q),
    };
    if let Err(e) = res {
        out.error = Some(e.to_string());
    } else if let DataSocket::Tcp(s) = &socket {
        // A byte count sent in full (not cut by the stop) to an iperf3 server.
        let counted_out = send && ctx.quota.is_some() && !ctx.stop.load(Relaxed);
        if ctx.iperf3 && counted_out {
            if let Some(w) = await_acks(&ctx, s) {
                out.warnings.push(w);
            }
        }
    }
    out.cpu = ctx.counters.cpu_at_baseline.since_baseline();
    ctx.counters.done.store(true, Relaxed);
    out
}

/// A QUIC stream's loop on this thread: the stop flag, the warm-up boundary, the quota and
/// the pace of a TCP sender, the same counters.
struct QuicDriver<'a> {
    ctx: &'a StreamCtx,
    pacer: Option<Pacer>,
    sent: u64,
    base: bool,
}

impl<'a> QuicDriver<'a> {
    fn new(ctx: &'a StreamCtx) -> QuicDriver<'a> {
        QuicDriver {
            ctx,
            pacer: ctx.rate_bps.map(|r| Pacer::new(r, ctx.now_ns())),
            sent: 0,
            base: false,
        }
    }
}

impl super::quic::Driver for QuicDriver<'_> {
    fn now_ns(&self) -> u64 {
        self.ctx.now_ns()
    }
    fn stopped(&self) -> bool {
        self.ctx.stop.load(Relaxed)
    }
    fn turn(&mut self) {
        self.ctx.check_baseline(&mut self.base);
    }
    fn write_size(&self) -> usize {
        self.ctx.write_size
    }
    fn next_len(&mut self) -> Option<usize> {
        next_write(
            self.ctx,
            &mut self.pacer,
            self.sent,
            self.ctx.write_size.max(1),
        )
    }
    fn moved(&mut self, n: usize) {
        self.sent += n as u64;
        self.ctx.record(n as u64, 1, 0);
        if let Some(p) = self.pacer.as_mut() {
            p.sent(n as u64);
        }
    }
    fn blocked_since(&self, t0: u64) {
        self.ctx.blocked_since(t0);
    }
}

/// How long a sender to an iperf3 server waits for its bytes to be acknowledged.
const ACK_WAIT: Duration = Duration::from_secs(10);

/// A TCP sender of a byte count to an iperf3 server, after its last byte and its
/// shutdown: waits until the server's kernel has acknowledged everything (at most
/// [`ACK_WAIT`], or until stopped), since this end's end of the test tells the server to
/// stop, and an iperf3 server stops reading at once. `Some(warning)` when the wait ended
/// first.
fn await_acks(ctx: &StreamCtx, sock: &TcpStream) -> Option<String> {
    let t0 = Instant::now();
    loop {
        match sys::tcp_info::all_acked_after_shutdown(sock.as_sock()) {
            Ok(true) => return None,
            Ok(false) => {}
            Err(e) => {
                return Some(format!(
                    "could not tell whether the iperf3 server acknowledged every byte ({e})"
                ))
            }
        }
        // The same words from every stream, so that `-P N` streams that all waited in vain
        // give one warning, not N (a thread's warnings are folded without repeats).
        if ctx.stop.load(Relaxed) {
            return Some(
                "the test stopped before the iperf3 server had acknowledged every byte; it may count fewer"
                    .into(),
            );
        }
        if t0.elapsed() >= ACK_WAIT {
            return Some(format!(
                "the iperf3 server had not acknowledged every byte {} s after the last was written; it may count fewer",
                ACK_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn fill_pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
}

fn tcp_send(ctx: &StreamCtx, sock: &TcpStream) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let mut buf = super::buf::PageBuf::zeroed(ctx.write_size.max(1));
    fill_pattern(&mut buf);
    let mut pacer = ctx.rate_bps.map(|r| Pacer::new(r, ctx.now_ns()));
    let mut sent: u64 = 0;
    let mut base = false;
    let mut w = sock;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let Some(len) = next_write(ctx, &mut pacer, sent, buf.len()) else {
            break;
        };
        if len == 0 {
            continue;
        }
        let t0 = ctx.now_ns();
        match w.write(&buf[..len]) {
            Ok(0) => break,
            Ok(n) => {
                sent += n as u64;
                ctx.record(n as u64, 1, 0);
                if let Some(p) = pacer.as_mut() {
                    p.sent(n as u64);
                }
            }
            Err(e) if is_timeout(&e) => ctx.blocked_since(t0),
            Err(e) => return Err(e),
        }
    }
    // Let the receiver see the end of the stream; it may already be gone.
    let _ = sock.shutdown(Shutdown::Write);
    Ok(())
}

/// The next write of a sender: `None` when its quota is sent, else how many bytes (at most
/// `len`), after waiting for its pace. `Some(0)` means "look at the stop flag again".
fn next_write(ctx: &StreamCtx, pacer: &mut Option<Pacer>, sent: u64, len: usize) -> Option<usize> {
    let mut len = len;
    if let Some(q) = ctx.quota {
        let left = q.saturating_sub(sent);
        if left == 0 {
            return None;
        }
        len = len.min(usize::try_from(left).unwrap_or(len));
    }
    if let Some(p) = pacer.as_mut() {
        let d = p.delay(ctx.now_ns());
        if !d.is_zero() {
            pacing::wait(d.min(POLL));
            return Some(0);
        }
    }
    Some(len)
}

/// Sends from one memfd with `sendfile(2)` (netperf TCP_SENDFILE, iperf3 -Z): the file holds
/// one write of the pattern, filled once; every call sends it from offset 0. No user buffer.
fn tcp_send_sendfile(ctx: &StreamCtx, sock: &TcpStream) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let len = ctx.write_size.max(1);
    let file = sys::zerocopy::memfd_with(len, fill_pattern).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("--sendfile: cannot create the memfd ({e})"),
        )
    })?;
    let mut pacer = ctx.rate_bps.map(|r| Pacer::new(r, ctx.now_ns()));
    let mut sent: u64 = 0;
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let Some(n) = next_write(ctx, &mut pacer, sent, len) else {
            break;
        };
        if n == 0 {
            continue;
        }
        let t0 = ctx.now_ns();
        match sys::zerocopy::sendfile(sock.as_sock(), file.as_sock(), n) {
            Ok(0) => break,
            Ok(n) => {
                sent += n as u64;
                ctx.record(n as u64, 1, 0);
                if let Some(p) = pacer.as_mut() {
                    p.sent(n as u64);
                }
            }
            Err(e) if is_timeout(&e) => ctx.blocked_since(t0),
            Err(e) => return Err(e),
        }
    }
    let _ = sock.shutdown(Shutdown::Write);
    Ok(())
}

/// How long a `MSG_ZEROCOPY` sender waits at the end for the completions of its last sends.
const ZC_DRAIN: Duration = Duration::from_secs(2);
/// Buffer memory of a `MSG_ZEROCOPY` sender: this many bytes of writes in flight at most
/// (between [`ZC_MIN_BUFFERS`] and [`ZC_MAX_BUFFERS`] buffers of the write size).
const ZC_BUFFER_BYTES: usize = 4 << 20;
const ZC_MIN_BUFFERS: usize = 4;
const ZC_MAX_BUFFERS: usize = 256;

/// The buffers of a `MSG_ZEROCOPY` sender and the sends in flight on them. A buffer goes back
/// to the free list only when the kernel has reported the completion of the send that used
/// it, so no page the kernel still refers to is ever written (the pattern never changes,
/// but the rule holds for any data).
struct ZcPool {
    bufs: Vec<Vec<u8>>,
    free: Vec<usize>,
    /// Sends in flight, oldest first: (send number, buffer, completed).
    inflight: std::collections::VecDeque<(u32, usize, bool)>,
    next_id: u32,
    report: ZerocopyReport,
    scratch: Vec<sys::zerocopy::Completion>,
}

impl ZcPool {
    fn new(len: usize) -> ZcPool {
        let n = (ZC_BUFFER_BYTES / len.max(1)).clamp(ZC_MIN_BUFFERS, ZC_MAX_BUFFERS);
        let bufs = (0..n)
            .map(|_| {
                let mut b = vec![0u8; len];
                fill_pattern(&mut b);
                b
            })
            .collect();
        ZcPool {
            bufs,
            free: (0..n).rev().collect(),
            inflight: Default::default(),
            next_id: 0,
            report: ZerocopyReport::default(),
            scratch: Vec::new(),
        }
    }

    /// A send on buffer `b` took bytes: the kernel numbered it.
    fn sent(&mut self, b: usize) {
        self.inflight.push_back((self.next_id, b, false));
        self.next_id = self.next_id.wrapping_add(1);
        self.report.sends += 1;
    }

    /// Applies one completion range; returns the buffers it frees to the free list.
    fn complete(&mut self, c: sys::zerocopy::Completion) {
        let Some(&(base, _, _)) = self.inflight.front() else {
            return;
        };
        let mut id = c.lo;
        for _ in 0..c.len().min(self.inflight.len() as u64) {
            let k = id.wrapping_sub(base) as usize;
            if let Some(e) = self.inflight.get_mut(k) {
                if !e.2 {
                    e.2 = true;
                    self.report.completed += 1;
                    if c.copied {
                        self.report.copied += 1;
                    }
                }
            }
            id = id.wrapping_add(1);
        }
        while let Some(&(_, b, true)) = self.inflight.front() {
            self.free.push(b);
            self.inflight.pop_front();
        }
    }

    /// With every buffer in flight: reads the completions queued now and, if none freed a
    /// buffer, waits up to `poll_ms` for more. A wait that saw none counts as blocked:
    /// nothing was acknowledged in it.
    fn await_free(&mut self, ctx: &StreamCtx, fd: net::Sock<'_>, poll_ms: i32) -> io::Result<()> {
        let t0 = ctx.now_ns();
        self.reap(fd)?;
        if self.free.is_empty() && !sys::zerocopy::wait(fd, false, poll_ms)? {
            ctx.blocked_since(t0);
        }
        Ok(())
    }

    /// Reads the completions queued now.
    fn reap(&mut self, fd: net::Sock<'_>) -> io::Result<()> {
        let mut comps = std::mem::take(&mut self.scratch);
        comps.clear();
        self.report.notifications += sys::zerocopy::read_completions(fd, &mut comps)?;
        for c in comps.iter().copied() {
            self.complete(c);
        }
        self.scratch = comps;
        Ok(())
    }
}

/// Sends with `MSG_ZEROCOPY` (`--zerocopy`), reading completions from the error queue.
fn tcp_send_zerocopy(
    ctx: &StreamCtx,
    sock: &TcpStream,
    report: &mut Option<ZerocopyReport>,
) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let fd = sock.as_sock();
    sys::zerocopy::enable(fd).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("--zerocopy: the kernel refuses SO_ZEROCOPY ({e}); drop --zerocopy"),
        )
    })?;
    let len = ctx.write_size.max(1);
    let mut pool = ZcPool::new(len);
    let poll_ms = i32::try_from(POLL.as_millis()).unwrap_or(100);
    let mut pacer = ctx.rate_bps.map(|r| Pacer::new(r, ctx.now_ns()));
    let mut sent: u64 = 0;
    let mut base = false;
    let mut result = Ok(());
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        if pool.free.is_empty() {
            // Every buffer is in flight: wait for the kernel to release one.
            if let Err(e) = pool.await_free(ctx, fd, poll_ms) {
                result = Err(e);
                break;
            }
            continue;
        }
        let Some(n) = next_write(ctx, &mut pacer, sent, len) else {
            break;
        };
        if n == 0 {
            continue;
        }
        let Some(b) = pool.free.pop() else {
            continue;
        };
        let t0 = ctx.now_ns();
        match sys::zerocopy::send_zerocopy(fd, &pool.bufs[b][..n]) {
            Ok(0) => {
                pool.free.push(b);
                break;
            }
            Ok(n) => {
                pool.sent(b);
                sent += n as u64;
                ctx.record(n as u64, 1, 0);
                if let Some(p) = pacer.as_mut() {
                    p.sent(n as u64);
                }
            }
            Err(e) if is_timeout(&e) => {
                pool.free.push(b);
                ctx.blocked_since(t0);
            }
            Err(e) if e.raw_os_error() == Some(errno::ENOBUFS) => {
                // The notifications filled the socket's option memory: read them first.
                pool.free.push(b);
                pool.report.enobufs += 1;
                if let Err(e) = pool.reap(fd) {
                    result = Err(e);
                    break;
                }
                let _ = sys::zerocopy::wait(fd, false, 1);
            }
            Err(e) => {
                pool.free.push(b);
                result = Err(e);
                break;
            }
        }
    }
    let _ = sock.shutdown(Shutdown::Write);
    // The last completions come when the peer has acknowledged the data.
    let until = Instant::now() + ZC_DRAIN;
    while !pool.inflight.is_empty() && Instant::now() < until {
        if pool.reap(fd).is_err() {
            break;
        }
        if !pool.inflight.is_empty() && sys::zerocopy::wait(fd, false, 20).is_err() {
            break;
        }
    }
    pool.report.outstanding = pool.inflight.len() as u64;
    *report = Some(pool.report);
    result
}

fn tcp_recv(ctx: &StreamCtx, sock: &TcpStream) -> io::Result<()> {
    sock.set_read_timeout(Some(POLL))?;
    let max = ctx.write_size.clamp(64 * 1024, 1 << 20);
    if ctx.recv_mode == RecvMode::Trunc {
        return tcp_recv_trunc(ctx, sock, max);
    }
    let mut buf = super::buf::PageBuf::zeroed(max);
    let mut base = false;
    let mut r = sock;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => ctx.record(n as u64, 1, 0),
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Receives with `recv(MSG_TRUNC)` and no buffer (`--no-rx-copy`): the kernel discards the
/// data without copying it out and returns how much it discarded.
fn tcp_recv_trunc(ctx: &StreamCtx, sock: &TcpStream, max: usize) -> io::Result<()> {
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        match sys::zerocopy::recv_trunc(sock.as_sock(), max) {
            Ok(0) => break,
            Ok(n) => ctx.record(n as u64, 1, 0),
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) if e.raw_os_error() == Some(errno::EFAULT) => {
                return Err(io::Error::other(
                    "--no-rx-copy: this kernel does not discard TCP data with recv(MSG_TRUNC); drop --no-rx-copy",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Most datagrams in one GSO send (the kernel's UDP_MAX_SEGMENTS is 64 on older kernels).
const GSO_MAX_SEGMENTS: usize = 64;
/// Largest GSO super-datagram payload.
const GSO_MAX_BYTES: usize = 65_000;

fn udp_send(
    ctx: &mut StreamCtx,
    sock: &UdpSocket,
    warnings: &mut Vec<String>,
    seq_end: &mut Option<u64>,
    (tx_path, raw_tx): (
        &mut Option<TxPath>,
        &mut Option<linerate_wire::report::RawTx>,
    ),
) -> io::Result<()> {
    let l = ctx.write_size.max(probe::LEN);
    if ctx.raw_frames {
        let opened = ctx
            .raw
            .take()
            .unwrap_or_else(|| RawSender::open(sock, l, ctx.raw_tx));
        match opened {
            Ok(mut raw) => {
                *tx_path = Some(TxPath::RawFrames);
                *raw_tx = Some(raw.raw_tx());
                if let Some(why) = raw.fallback.take() {
                    warnings.push(format!(
                        "AF_XDP not used ({why}): raw frames went out through the AF_PACKET ring"
                    ));
                }
                let mut end = 0;
                let r = udp_send_raw(ctx, raw, l, warnings, &mut end);
                *seq_end = Some(end);
                return r;
            }
            Err(why) => warnings.push(format!(
                "raw frames not sent ({why}): datagrams went out with sendmmsg, one per message"
            )),
        }
    }
    let mut seq: u64 = 0;
    let r = udp_send_loop(ctx, sock, warnings, tx_path, l, &mut seq);
    *seq_end = Some(seq);
    r
}

/// The socket send loop (GSO or sendmmsg); `seq` ends as the number of datagrams sent.
fn udp_send_loop(
    ctx: &StreamCtx,
    sock: &UdpSocket,
    warnings: &mut Vec<String>,
    tx_path: &mut Option<TxPath>,
    l: usize,
    seq: &mut u64,
) -> io::Result<()> {
    let mut gso = start_gso(ctx, sock, l, warnings);
    let max_batch = if gso {
        (GSO_MAX_BYTES / l).clamp(1, GSO_MAX_SEGMENTS)
    } else {
        64
    };
    *tx_path = Some(if gso { TxPath::Gso } else { TxPath::Sendmmsg });
    let mut pacer = start_pacer(ctx, l);
    let mut buf = vec![0u8; l * max_batch];
    fill_pattern(&mut buf);
    let quota_pkts = ctx.quota.map(|q| q.div_ceil(l as u64));
    let mut base = false;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let mut batch = pacer
            .as_ref()
            .map_or(max_batch, |p| p.batch_for(l as u32, max_batch));
        if let Some(q) = quota_pkts {
            let left = q.saturating_sub(*seq);
            if left == 0 {
                break;
            }
            batch = batch.min(usize::try_from(left).unwrap_or(batch));
        }
        if let Some(p) = pacer.as_mut() {
            let d = p.delay(ctx.now_ns());
            if !d.is_zero() {
                pacing::wait(d.min(POLL));
                continue;
            }
        }
        stamp_batch(ctx, &mut buf, l, batch, *seq);
        let res = if gso {
            sock.send(&buf[..batch * l]).map(|n| n / l)
        } else {
            let slices: Vec<&[u8]> = buf.chunks(l).take(batch).collect();
            mmsg::send_batch(sock.as_sock(), &slices)
        };
        match res {
            Ok(n) => {
                *seq += n as u64;
                ctx.record((n * l) as u64, 1, n as u64);
                if let Some(p) = pacer.as_mut() {
                    p.sent((n * l) as u64);
                }
            }
            Err(e) if is_timeout(&e) => continue,
            // A full queue or a port-unreachable from a receiver not yet listening: retry.
            Err(e)
                if e.raw_os_error() == Some(errno::ENOBUFS)
                    || e.kind() == io::ErrorKind::ConnectionRefused =>
            {
                std::thread::yield_now();
                continue;
            }
            Err(e) if gso && matches!(e.raw_os_error(), Some(errno::EIO | errno::EINVAL)) => {
                warnings.push(format!(
                    "UDP GSO refused by the kernel or driver ({e}); fell back to sendmmsg"
                ));
                gso = false;
                *tx_path = Some(TxPath::Sendmmsg);
                let _ = net::set_udp_gso(sock, 0);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Longest a raw sender waits at the end of a stream for the kernel to take its last frames.
const RAW_DRAIN: Duration = Duration::from_secs(1);

/// The raw-frame send loop: the same pacing, batches and probe numbering as the socket
/// sender; a frame counts as sent when the kernel has taken it from the ring.
fn udp_send_raw(
    ctx: &StreamCtx,
    mut raw: RawSender,
    l: usize,
    warnings: &mut Vec<String>,
    seq_end: &mut u64,
) -> io::Result<()> {
    const MAX_BATCH: usize = 64;
    let mut pacer = start_pacer(ctx, l);
    let quota_pkts = ctx.quota.map(|q| q.div_ceil(l as u64));
    // `queued` numbers the probes; `sent` counts frames the kernel took.
    let mut queued: u64 = 0;
    let mut lost = Completed::default();
    let mut base = false;
    let account = |c, lost: &mut Completed| account_raw(ctx, l, c, lost);
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let mut batch = pacer
            .as_ref()
            .map_or(MAX_BATCH, |p| p.batch_for(l as u32, MAX_BATCH));
        if let Some(q) = quota_pkts {
            let left = q.saturating_sub(queued);
            if left == 0 {
                break;
            }
            batch = batch.min(usize::try_from(left).unwrap_or(batch));
        }
        if let Some(p) = pacer.as_mut() {
            let d = p.delay(ctx.now_ns());
            if !d.is_zero() {
                raw.reap();
                pacing::wait(d.min(POLL));
                continue;
            }
        }
        let tx_ns = super::delay::mono_ns();
        let (q, res) = raw.send(queued, batch, tx_ns);
        queued += q as u64;
        *seq_end = queued;
        if let Some(p) = pacer.as_mut() {
            p.sent((q * l) as u64);
        }
        match res {
            Ok(c) => account(c, &mut lost),
            Err(e) if is_timeout(&e) || e.raw_os_error() == Some(errno::ENOBUFS) => {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
        if q == 0 {
            // The ring is full: frames wait in a queue on the path. Let it drain.
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    drain_raw(&mut raw, &mut |c| account(c, &mut lost))?;
    // Frames still queued carry the highest numbers: they never left, so they are not
    // part of the stream's numbering (the receiver would count them as lost).
    *seq_end = queued.saturating_sub(raw.unsent() as u64);
    if raw.unsent() > 0 {
        warnings.push(format!(
            "{} raw frames were still queued when the stream ended; they are not counted as sent",
            raw.unsent()
        ));
    }
    if lost.refused > 0 {
        warnings.push(format!(
            "the kernel refused {} raw frames as malformed; they are not counted as sent",
            lost.refused
        ));
    }
    if lost.dropped > 0 {
        warnings.push(format!(
            "the driver of {} dropped {} raw frames (its queue was full); they are not counted as sent",
            raw.hop.dev, lost.dropped
        ));
    }
    Ok(())
}

/// The pacer of a sending stream with a rate (`-b`), and a timer slack of 1 ns: sleeping
/// to a slot must not oversleep by the default 50 µs.
fn start_pacer(ctx: &StreamCtx, l: usize) -> Option<Pacer> {
    let pacer = ctx.rate_bps.map(|r| {
        if ctx.smooth_pacing {
            Pacer::smooth(r, ctx.now_ns(), smooth_slack_ns(r, l))
        } else {
            Pacer::new(r, ctx.now_ns())
        }
    });
    if pacer.is_some() {
        process::fine_timer_slack();
    }
    pacer
}

/// UDP GSO for datagrams of `l` bytes when offload is on and two fit a GSO send; false
/// (with a warning) when the socket refuses it.
fn start_gso(ctx: &StreamCtx, sock: &UdpSocket, l: usize, warnings: &mut Vec<String>) -> bool {
    let gso = ctx.udp_offload && !ctx.raw_frames && l * 2 <= GSO_MAX_BYTES;
    if gso {
        if let Err(e) = net::set_udp_gso(sock, l) {
            warnings.push(format!(
                "UDP GSO unavailable ({e}); sending with sendmmsg instead"
            ));
            return false;
        }
    }
    gso
}

/// Writes the header of each of the `batch` datagrams of `l` bytes in `buf`, numbered from
/// `seq`: iperf3's or linerate's probe.
fn stamp_batch(ctx: &StreamCtx, buf: &mut [u8], l: usize, batch: usize, seq: u64) {
    if ctx.iperf3 {
        // iperf3's header: the wall clock (its receiver takes jitter from differences
        // only) and a 32-bit sequence number from 1.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        for i in 0..batch {
            linerate_wire::iperf3::UdpHeader {
                sec: now.as_secs() as u32,
                usec: now.subsec_micros(),
                seq: seq + i as u64 + 1,
            }
            .emit(&mut buf[i * l..], false);
        }
    } else {
        // CLOCK_MONOTONIC, so that a receiver on the same machine can take the one-way
        // delay.
        let tx_ns = super::delay::mono_ns();
        for i in 0..batch {
            Probe {
                seq: seq + i as u64,
                tx_ns,
            }
            .emit(&mut buf[i * l..]);
        }
    }
}

/// Counts the frames the kernel took from the ring as sent (handed to the interface or its
/// qdisc), not when it frees them: a queue on the path may hold them; `lost` adds those
/// it refused and those the driver dropped.
fn account_raw(ctx: &StreamCtx, l: usize, c: Completed, lost: &mut Completed) {
    let n = c.sent as u64;
    lost.refused += c.refused;
    lost.dropped += c.dropped;
    if n > 0 {
        ctx.record(n * l as u64, 1, n);
    }
}

/// Sends a raw stream's last frames, at most [`RAW_DRAIN`]: until the kernel took them
/// all, then until it freed every slot (the mapping must outlive the frames in flight).
fn drain_raw(raw: &mut RawSender, account: &mut impl FnMut(Completed)) -> io::Result<()> {
    let until = Instant::now() + RAW_DRAIN;
    while (raw.unsent() > 0 || raw.in_ring() > 0) && Instant::now() < until {
        if raw.unsent() > 0 {
            match raw.flush() {
                Ok(c) => account(c),
                Err(e) if is_timeout(&e) || e.raw_os_error() == Some(errno::ENOBUFS) => {}
                Err(e) => return Err(e),
            }
        } else {
            raw.reap();
        }
        if raw.unsent() > 0 || raw.in_ring() > 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    Ok(())
}

/// One received datagram's header: its sequence number to the loss and reorder count, its
/// send time to the jitter and (when measured) the one-way delay; `rx` is the receive
/// time on the stream's clock and on CLOCK_MONOTONIC.
#[inline]
fn take_datagram(
    iperf3: bool,
    d: &[u8],
    (rx_ns, rx_mono_ns): (u64, u64),
    seq: &mut SeqTracker,
    jitter: &mut JitterEstimator,
    delay: Option<&mut super::delay::DelayRecorder>,
) {
    if iperf3 {
        // iperf3 numbers from 1; its send time is the wall clock, which jitter
        // compares with this end's clock by differences only.
        if let Ok(h) = linerate_wire::iperf3::UdpHeader::parse(d, false) {
            if let Some(s) = h.seq.checked_sub(1) {
                seq.on_packet(s);
                let tx_ns = u64::from(h.sec) * 1_000_000_000 + u64::from(h.usec) * 1000;
                jitter.on_packet(tx_ns, rx_ns);
            }
        }
    } else if let Ok(p) = Probe::parse(d) {
        seq.on_packet(p.seq);
        jitter.on_packet(p.tx_ns, rx_ns);
        if let Some(d) = delay {
            d.on_packet(p.seq, p.tx_ns, rx_mono_ns);
        }
    }
}

/// A receive call that returned fewer datagrams than this was woken for almost every one.
const RX_FEW: usize = 8;
/// How long a receiver without GRO lets datagrams gather after such a call: 50 µs is 50
/// datagrams at 1 Mpps, far below any receive buffer (64-byte datagrams cost about 1 KiB of
/// buffer each; the receivers ask for 4 MiB).
const RX_COALESCE: Duration = Duration::from_micros(50);

fn udp_recv(ctx: &StreamCtx, sock: &UdpSocket, report: &mut Option<UdpRxReport>) -> io::Result<()> {
    sock.set_read_timeout(Some(POLL))?;
    let l = ctx.write_size.max(probe::LEN);
    let gro = ctx.udp_offload && net::enable_udp_gro(sock);
    let mut batch = if gro {
        RecvBatch::new(8, 65_536)
    } else {
        RecvBatch::new(64, l + 1)
    };
    let mut seq = SeqTracker::new();
    let mut jitter = JitterEstimator::new();
    let mut delay = ctx
        .one_way_delay
        .as_ref()
        .map(|d| super::delay::DelayRecorder::new(d.tag_seq));
    let mut base = false;
    let c = &ctx.counters;
    let mut result = Ok(());
    // Without GRO a receiver that sleeps in recvmmsg is woken for nearly every datagram,
    // and each wake-up is paid by the *sender's* CPU (the softirq that delivers the datagram
    // runs there on one host, and on a namespace router's forwarding path): a plain receive
    // loop held a 64-byte sender to a third of its rate. So after a call that returned only a
    // few datagrams the receiver lets [`RX_COALESCE`] pass before the next one. Not when
    // one-way delay is measured: the delay is taken when the receive call returns.
    let coalesce = !gro && delay.is_none();
    if coalesce {
        process::fine_timer_slack();
    }
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let n = match batch.recv(sock.as_sock()) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        let rx_ns = ctx.now_ns();
        let rx_mono_ns = if delay.is_some() {
            super::delay::mono_ns()
        } else {
            0
        };
        let mut bytes = 0u64;
        let mut pkts = 0u64;
        for i in 0..n {
            let m = batch.msg(i);
            // A late copy of the stream's UDP hello (sent until the server's start) is not data.
            if stream_hello::is_hello_datagram(m) {
                continue;
            }
            // With GRO one message holds several datagrams of `l` bytes each.
            for d in m.chunks(l) {
                // With 24-byte datagrams GRO may have merged a late hello with data.
                if l == stream_hello::LEN && stream_hello::is_hello_datagram(d) {
                    continue;
                }
                bytes += d.len() as u64;
                pkts += 1;
                take_datagram(
                    ctx.iperf3,
                    d,
                    (rx_ns, rx_mono_ns),
                    &mut seq,
                    &mut jitter,
                    delay.as_mut(),
                );
            }
        }
        ctx.record(bytes, 1, pkts);
        if coalesce && n < RX_FEW {
            std::thread::sleep(RX_COALESCE);
        }
        let s = seq.snapshot();
        c.lost.store(s.lost, Relaxed);
        c.duplicates.store(s.duplicates, Relaxed);
        c.reordered.store(s.reordered, Relaxed);
    }
    let s = seq.snapshot();
    *report = Some(UdpRxReport {
        packets: s.received,
        lost: s.lost,
        duplicates: s.duplicates,
        reordered: s.reordered,
        highest_seq: seq.highest(),
        jitter_ns: jitter.jitter_ns(),
        one_way_delay: delay.and_then(|d| d.report()),
    });
    result
}

#[cfg(test)]
mod tests {
    use super::smooth_slack_ns;

    #[test]
    fn smooth_slack_is_one_batch_within_1_to_4_ms() {
        // 82-byte payloads (128-byte frames) at 20,000 fps: 50 µs apart, 64 of them 3.2 ms.
        assert_eq!(smooth_slack_ns(20_000 * 82 * 8, 82), 3_200_000);
        // 18-byte payloads at 1 Mpps: a batch is 64 µs, below the 1 ms floor.
        assert_eq!(smooth_slack_ns(1_000_000 * 18 * 8, 18), 1_000_000);
        // 978-byte payloads at 1,796 fps: 35.6 ms a batch, capped at 4 ms.
        assert_eq!(smooth_slack_ns(1_796 * 978 * 8, 978), 4_000_000);
    }
}
