//! Request/response tests (netperf TCP_RR, TCP_CRR, UDP_RR): the client loops that send
//! requests and time the responses ([`client`]), the server's responders ([`server`]), and
//! the engine both ends run around them.
//!
//! One thread per stream, pinned with `-A` like the stream engine's. Each thread publishes
//! counters through relaxed atomics ([`RrCounters`]) and keeps its own latency histogram
//! ([`latency`]), merged when the test ends, so the data path takes no lock. The meter both
//! engines share ([`crate::engine::meter`]) takes the warm-up baseline (`-O`) and pushes one
//! [`IntervalReport`] per interval with the transactions completed in it. The measured
//! window ends at [`RrEngine::stop`], where /proc/stat is read for both ends' CPU
//! utilisation.
//!
//! TCP_CRR on the server: every transaction is a new connection routed to the session by
//! its token (like any data connection); the session hands it to the stream's responder
//! through a bounded queue ([`CRR_QUEUE`]); a connection that finds the queue full is closed
//! and counted, so a client cannot make the server hold more than that per stream.

pub mod client;
pub mod io;
pub mod latency;
pub mod server;
mod summary;

pub use summary::{kind, summarize};

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use linerate_wire::control::RrSpec;
use linerate_wire::report::{
    HostInfo, IntervalReport, ProcessCpu, Role, SideReport, StreamReport, StreamRole, Totals,
};

use crate::engine::meter::{self, Meter, SampleSource, ThreadCpu, Window};
use crate::engine::pacing::{self, Pacer};
use crate::engine::socket_bufs;
use crate::model::plan::SockOpts;
use crate::sys;

/// How often a blocked loop wakes to look at its stop flag.
pub const POLL: Duration = Duration::from_millis(100);
/// TCP_CRR connections waiting for a stream's responder on the server.
pub const CRR_QUEUE: usize = 64;

/// Counters one stream publishes while it runs.
#[derive(Debug, Default)]
pub struct RrCounters {
    /// Completed transactions (client: full response received; server: response sent).
    pub transactions: AtomicU64,
    /// Payload bytes written.
    pub tx_bytes: AtomicU64,
    /// Payload bytes read.
    pub rx_bytes: AtomicU64,
    /// Write calls.
    pub tx_calls: AtomicU64,
    /// Read calls.
    pub rx_calls: AtomicU64,
    /// UDP client: requests whose response did not arrive within the time-out.
    pub lost: AtomicU64,
    /// UDP client: responses that came after their request had timed out.
    pub late: AtomicU64,
    /// TCP_CRR: connections opened (client) or served (server).
    pub connections: AtomicU64,
    /// Failed connects or connections closed early (TCP_CRR).
    pub errors: AtomicU64,
    /// Nanoseconds after the epoch of the last completed transaction, plus one.
    pub last_ns: AtomicU64,
    /// The loop has ended.
    pub done: AtomicBool,
    /// Thread CPU at the warm-up boundary.
    pub cpu_at_baseline: ThreadCpu,
}

/// Where a client stream sends TCP_CRR connections.
#[derive(Debug, Clone)]
pub struct Connector {
    /// The server's address.
    pub addr: SocketAddr,
    /// The test's token, sent in the stream hello of every connection.
    pub token: [u8; 16],
    /// Stream index for the hello.
    pub index: u16,
    /// Socket options for each connection.
    pub opts: SockOpts,
    /// Connect time-out.
    pub timeout: Duration,
}

/// The socket (or source of sockets) of one RR stream.
#[derive(Debug)]
pub enum RrSocket {
    /// TCP_RR: one connection.
    Tcp(TcpStream),
    /// UDP_RR: a connected UDP socket.
    Udp(UdpSocket),
    /// Client TCP_CRR: a new connection per transaction.
    Connect(Connector),
    /// Server TCP_CRR: connections arrive through [`RrEngine::add_connection`].
    Accept,
}

/// Settings of one end.
#[derive(Debug, Clone)]
pub struct RrConfig {
    /// Client or server.
    pub role: Role,
    /// The test.
    pub spec: RrSpec,
    /// Interval report period.
    pub interval: Duration,
    /// Warm-up left out of the totals.
    pub omit: Duration,
    /// CPU to pin stream threads to.
    pub cpu: Option<u32>,
    /// Host facts for the report.
    pub host: HostInfo,
}

/// What a loop needs; built by the engine, one per stream.
pub struct LoopCtx {
    /// Engine epoch.
    pub epoch: Instant,
    /// This stream's counters.
    pub counters: Arc<RrCounters>,
    /// Set to stop.
    pub stop: Arc<AtomicBool>,
    /// Set by the meter when the warm-up is over.
    pub baseline: Arc<AtomicBool>,
    /// The test.
    pub spec: RrSpec,
    /// This stream's share of the target rate, transactions per second.
    pub rate_tps: Option<u64>,
}

impl LoopCtx {
    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// True once the warm-up is over (latencies are recorded from then on).
    pub fn measuring(&self) -> bool {
        self.baseline.load(Relaxed)
    }

    /// Saves the thread's CPU time once, at the warm-up boundary.
    #[inline]
    pub fn check_baseline(&self, taken: &mut bool) {
        self.counters
            .cpu_at_baseline
            .save_once(&self.baseline, taken);
    }

    /// Records `n` completed transactions, the last at `at_ns` (a time the loop already
    /// read, so that counting costs no extra clock read).
    pub fn completed(&self, n: u64, at_ns: u64) {
        bump(&self.counters.transactions, n);
        self.counters.last_ns.store(at_ns + 1, Relaxed);
    }

    /// Counts one write of `bytes`.
    pub fn wrote(&self, bytes: usize) {
        bump(&self.counters.tx_bytes, bytes as u64);
        bump(&self.counters.tx_calls, 1);
    }

    /// Counts one read of `bytes`.
    pub fn read(&self, bytes: usize) {
        bump(&self.counters.rx_bytes, bytes as u64);
        bump(&self.counters.rx_calls, 1);
    }
}

/// Adds `n` to a counter that only the calling thread writes: a plain load and store
/// (no locked read-modify-write on the data path); readers see whole values.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The send schedule of one client stream: with a target rate, a strict [`Pacer`] (one
/// "byte" per transaction at 8 × tps bit/s) that never forgives a stall; without, "now".
pub struct Schedule {
    pacer: Option<Pacer>,
}

impl Schedule {
    /// A schedule for `rate_tps` (none: send as soon as allowed), starting at `now_ns`.
    pub fn new(rate_tps: Option<u64>, now_ns: u64) -> Schedule {
        Schedule {
            pacer: rate_tps.map(|r| Pacer::strict(r.saturating_mul(8).max(1), now_ns)),
        }
    }

    /// True with a target rate.
    pub fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// The intended send time of the next request if it may go at `now_ns` (and takes its
    /// slot), or `None` when it is not due yet.
    pub fn next(&mut self, now_ns: u64) -> Option<u64> {
        match self.pacer.as_mut() {
            None => Some(now_ns),
            Some(p) => {
                let due = p.next_due_ns();
                (due <= now_ns).then(|| {
                    p.sent(1);
                    due
                })
            }
        }
    }

    /// Nanoseconds until the next request is due (0 when due or unpaced).
    pub fn wait_ns(&self, now_ns: u64) -> u64 {
        self.pacer
            .as_ref()
            .map_or(0, |p| p.next_due_ns().saturating_sub(now_ns))
    }
}

/// Sleeps until the schedule's next slot, at most [`POLL`].
pub fn wait_for_slot(sched: &Schedule, now_ns: u64) {
    let w = Duration::from_nanos(sched.wait_ns(now_ns)).min(POLL);
    if !w.is_zero() {
        pacing::wait(w);
    }
}

/// What one stream loop returns.
#[derive(Debug, Default)]
pub struct RrOutcome {
    /// Latency histogram (client).
    pub latency: Option<Histogram<u64>>,
    /// Latency from the actual send (client, with a target rate).
    pub actual: Option<Histogram<u64>>,
    /// Thread CPU over the window.
    pub cpu: Option<ProcessCpu>,
    /// Why the loop ended early.
    pub error: Option<String>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// What the client learned beyond its [`SideReport`].
#[derive(Debug, Default)]
pub struct RrClientData {
    /// Merged latency histogram.
    pub latency: Option<Histogram<u64>>,
    /// Merged latency from the actual send.
    pub actual: Option<Histogram<u64>>,
    /// Completed transactions in the window.
    pub transactions: u64,
    /// Lost (UDP).
    pub lost: u64,
    /// Late responses (UDP).
    pub late: u64,
    /// Connections (TCP_CRR).
    pub connections: u64,
    /// Failed or cut TCP_CRR connections.
    pub errors: u64,
}

/// Every stream's counters at one instant, in the order of [`snap_counters`].
type Snap = Vec<[u64; 9]>;

fn snap_counters(c: &RrCounters) -> [u64; 9] {
    [
        c.transactions.load(Relaxed),
        c.tx_bytes.load(Relaxed),
        c.rx_bytes.load(Relaxed),
        c.tx_calls.load(Relaxed),
        c.rx_calls.load(Relaxed),
        c.lost.load(Relaxed),
        c.late.load(Relaxed),
        c.connections.load(Relaxed),
        c.errors.load(Relaxed),
    ]
}
const TRAN: usize = 0;
const TXB: usize = 1;
const RXB: usize = 2;
const TXC: usize = 3;
const RXC: usize = 4;
const LOST: usize = 5;
const LATE: usize = 6;
const CONN: usize = 7;
const ERR: usize = 8;

struct Shared {
    window: Window<Snap>,
    counters: Vec<Arc<RrCounters>>,
}

impl SampleSource for Shared {
    type Counters = Snap;

    fn window(&self) -> &Window<Snap> {
        &self.window
    }

    fn read(&self) -> Snap {
        self.counters.iter().map(|c| snap_counters(c)).collect()
    }

    fn interval(&self, prev: &Snap, now: &Snap) -> IntervalReport {
        IntervalReport {
            tx_bytes: sum(now, prev, TXB),
            rx_bytes: sum(now, prev, RXB),
            rx_lost: Some(sum(now, prev, LOST)).filter(|l| *l > 0),
            transactions: Some(sum(now, prev, TRAN)),
            ..IntervalReport::default()
        }
    }
}

fn sum(a: &Snap, b: &Snap, k: usize) -> u64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| x[k].saturating_sub(y[k]))
        .sum()
}

struct StreamInfo {
    index: u16,
    local: Option<String>,
    remote: Option<String>,
    tcp: Option<TcpStream>,
    udp: bool,
    /// SO_SNDBUF and SO_RCVBUF as granted.
    bufs: (Option<u32>, Option<u32>),
}

/// A running request/response engine (either end).
pub struct RrEngine {
    cfg: RrConfig,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<RrOutcome>>,
    meter: Meter,
    end: Option<(u64, Option<sys::cpu::CpuTimes>)>,
    inbox: CrrInbox,
    info: Vec<StreamInfo>,
}

/// Where a server's TCP_CRR connections go: the responder queue of each stream. Cloned into
/// the server's token registry so that a new connection goes from the accept thread straight
/// to its responder, without a hop through the session thread.
#[derive(Clone, Default)]
pub struct CrrInbox {
    queues: Arc<Vec<(u16, SyncSender<TcpStream>)>>,
    refused: Arc<AtomicU64>,
}

impl CrrInbox {
    /// Whether this engine takes connections (a server TCP_CRR engine).
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Hands a new connection of stream `index` to its responder, or closes it (and counts
    /// it) when the stream is unknown or its queue is full.
    pub fn deliver(&self, index: u16, s: TcpStream) {
        match self.queues.iter().find(|(i, _)| *i == index) {
            Some((_, q)) if q.try_send(s).is_ok() => {}
            _ => {
                self.refused.fetch_add(1, Relaxed);
            }
        }
    }
}

impl RrEngine {
    /// Starts one thread per stream and the meter; `target_tps` is split over the streams.
    pub fn start(
        cfg: RrConfig,
        sockets: Vec<(u16, RrSocket)>,
        sink: impl FnMut(IntervalReport) + Send + 'static,
    ) -> std::io::Result<RrEngine> {
        let epoch = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let n = u16::try_from(sockets.len()).unwrap_or(u16::MAX).max(1);
        let counters: Vec<Arc<RrCounters>> = sockets.iter().map(|_| Arc::default()).collect();
        let shared = Arc::new(Shared {
            window: Window::new(epoch),
            counters: counters.clone(),
        });
        if cfg.omit.is_zero() {
            shared.take_baseline();
        }
        let baseline_flag = shared.window.baseline_flag();
        let mut threads = Vec::new();
        let mut queues = Vec::new();
        let mut info = Vec::new();
        for (k, ((index, socket), c)) in sockets.into_iter().zip(counters).enumerate() {
            info.push(stream_info(index, &socket));
            let ctx = LoopCtx {
                epoch,
                counters: c,
                stop: stop.clone(),
                baseline: baseline_flag.clone(),
                spec: cfg.spec.clone(),
                rate_tps: cfg
                    .spec
                    .target_tps
                    .map(|t| crate::model::plan::split(t, n, k as u16).max(1)),
            };
            let mut queue = None;
            if matches!(socket, RrSocket::Accept) {
                let (tx, rx) = std::sync::mpsc::sync_channel(CRR_QUEUE);
                queues.push((index, tx));
                queue = Some(rx);
            }
            let (role, cpu) = (cfg.role, cfg.cpu);
            let h = std::thread::Builder::new()
                .name(format!("lr-rr-{index}"))
                .spawn(move || run_stream(ctx, socket, queue, role, cpu))?;
            threads.push(h);
        }
        let meter = Meter::start("lr-rr-meter", shared.clone(), cfg.interval, cfg.omit, sink)?;
        Ok(RrEngine {
            cfg,
            shared,
            stop,
            threads,
            meter,
            end: None,
            inbox: CrrInbox {
                queues: Arc::new(queues),
                refused: Arc::default(),
            },
            info,
        })
    }

    /// Server TCP_CRR: hands a new connection of stream `index` to its responder, or closes it
    /// when the stream is unknown or its queue is full.
    pub fn add_connection(&self, index: u16, s: TcpStream) {
        self.inbox.deliver(index, s);
    }

    /// The inbox for new TCP_CRR connections (empty unless this is a server TCP_CRR engine).
    pub fn crr_inbox(&self) -> CrrInbox {
        self.inbox.clone()
    }

    /// Ends the measured window (reads CPU) and tells the loops to stop.
    pub fn stop(&mut self) {
        if self.end.is_some() {
            return;
        }
        self.end = Some(self.shared.window.end_now());
        self.stop.store(true, Relaxed);
    }

    /// Stops everything, joins the threads and builds this end's report.
    pub fn finish(mut self) -> (SideReport, RrClientData) {
        self.stop();
        self.meter.signal_stop();
        // Responders end on the stop flag, or sooner when their queues close (the server's
        // registry holds a clone of the senders until the session ends).
        self.inbox.queues = Arc::default();
        let mut outcomes = Vec::new();
        let mut warnings = Vec::new();
        for (i, h) in self.threads.drain(..).enumerate() {
            match h.join() {
                Ok(o) => outcomes.push(o),
                Err(_) => {
                    warnings.push(format!(
                        "RR thread of stream {i} panicked; figures are partial"
                    ));
                    outcomes.push(RrOutcome::default());
                }
            }
        }
        self.meter.join();
        self.build(outcomes, warnings)
    }

    fn build(
        &self,
        outcomes: Vec<RrOutcome>,
        mut warnings: Vec<String>,
    ) -> (SideReport, RrClientData) {
        let sh = &self.shared;
        let fin_sample = sh.sample();
        let (base_sample, base_cpu) = sh.window.baseline_or(&fin_sample, |w| warnings.push(w));
        let (fin, base) = (&fin_sample.counters, &base_sample.counters);
        let base_ns = base_sample.at_ns;
        let (end_ns, end_cpu) = self.end.clone().unwrap_or((fin_sample.at_ns, None));
        let mut data = RrClientData::default();
        let mut proc_cpu: Option<ProcessCpu> = None;
        let mut streams = Vec::new();
        let mut last = 0u64;
        let role = if self.cfg.role == Role::Client {
            StreamRole::Tx
        } else {
            StreamRole::Rx
        };
        for (k, (o, info)) in outcomes.into_iter().zip(&self.info).enumerate() {
            meter::fold_thread_end(
                info.index,
                o.error.as_deref(),
                &o.warnings,
                o.cpu.as_ref(),
                &mut warnings,
                &mut proc_cpu,
            );
            merge_opt(&mut data.latency, o.latency);
            merge_opt(&mut data.actual, o.actual);
            let d = |i: usize| fin[k][i].saturating_sub(base[k][i]);
            // Server responders keep no timestamps: their active time is the window.
            let dur = match sh.counters[k].last_ns.load(Relaxed) {
                0 => end_ns.saturating_sub(base_ns),
                l => (l - 1).saturating_sub(base_ns),
            };
            last = last.max(dur);
            let facts = info.tcp.as_ref().map(tcp_facts);
            streams.push(StreamReport {
                index: info.index,
                role,
                bytes: d(TXB) + d(RXB),
                io_calls: d(TXC) + d(RXC),
                packets: info.udp.then(|| d(TXC) + d(RXC)),
                duration_ns: dur,
                sndbuf_bytes: info.bufs.0,
                rcvbuf_bytes: info.bufs.1,
                mss_bytes: facts.as_ref().and_then(|f| f.0),
                congestion: None,
                tcp_info: facts.and_then(|f| f.1),
                udp_rx: None,
                udp_seq_end: None,
                local_addr: info.local.clone(),
                remote_addr: info.remote.clone(),
                tx_path: None,
            });
        }
        data.transactions = sum(fin, base, TRAN);
        data.lost = sum(fin, base, LOST);
        data.late = sum(fin, base, LATE);
        data.connections = sum(fin, base, CONN);
        data.errors = sum(fin, base, ERR);
        let refused = self.inbox.refused.load(Relaxed);
        if refused > 0 {
            warnings.push(format!("{refused} TCP_CRR connections were closed unserved: more than {CRR_QUEUE} were waiting for one stream"));
        }
        let udp = self.info.iter().any(|i| i.udp);
        let totals = Totals {
            duration_ns: end_ns.saturating_sub(base_ns),
            tx_bytes: sum(fin, base, TXB),
            rx_bytes: sum(fin, base, RXB),
            tx_calls: sum(fin, base, TXC),
            rx_calls: sum(fin, base, RXC),
            tx_duration_ns: last,
            rx_duration_ns: last,
            tx_packets: udp.then(|| sum(fin, base, TXC)),
            rx_packets: udp.then(|| sum(fin, base, RXC)),
            retransmits: None,
            udp_rx: None,
        };
        let cpu = meter::window_cpu(base_cpu.as_ref(), end_cpu.as_ref(), &mut warnings);
        let report = SideReport {
            role: self.cfg.role,
            host: self.cfg.host.clone(),
            streams,
            intervals: Vec::new(),
            totals,
            cpu,
            process_cpu: proc_cpu,
            host_counters: None,
            interface: None,
            control_segments: None,
            warnings,
        };
        (report, data)
    }
}

fn merge_opt(into: &mut Option<Histogram<u64>>, h: Option<Histogram<u64>>) {
    match (into.as_mut(), h) {
        (Some(a), Some(b)) => latency::merge(a, &b),
        (None, Some(b)) => *into = Some(b),
        _ => {}
    }
}

fn stream_info(index: u16, s: &RrSocket) -> StreamInfo {
    let fmt = |a: std::io::Result<SocketAddr>| a.ok().map(|a| a.to_string());
    match s {
        RrSocket::Tcp(t) => StreamInfo {
            index,
            local: fmt(t.local_addr()),
            remote: fmt(t.peer_addr()),
            tcp: t.try_clone().ok(),
            udp: false,
            bufs: socket_bufs(&socket2::SockRef::from(t)),
        },
        RrSocket::Udp(u) => StreamInfo {
            index,
            local: fmt(u.local_addr()),
            remote: fmt(u.peer_addr()),
            tcp: None,
            udp: true,
            bufs: socket_bufs(&socket2::SockRef::from(u)),
        },
        RrSocket::Connect(c) => StreamInfo {
            index,
            local: None,
            remote: Some(c.addr.to_string()),
            tcp: None,
            udp: false,
            bufs: (None, None),
        },
        RrSocket::Accept => StreamInfo {
            index,
            local: None,
            remote: None,
            tcp: None,
            udp: false,
            bufs: (None, None),
        },
    }
}

fn tcp_facts(t: &TcpStream) -> (Option<u32>, Option<linerate_wire::report::TcpInfoReport>) {
    (
        socket2::SockRef::from(t).mss().ok(),
        sys::tcp_info::read_tcp_info(t.as_fd()).ok(),
    )
}

fn run_stream(
    ctx: LoopCtx,
    socket: RrSocket,
    queue: Option<Receiver<TcpStream>>,
    role: Role,
    cpu: Option<u32>,
) -> RrOutcome {
    let mut out = RrOutcome::default();
    if let Some(c) = cpu {
        if let Err(e) = sys::affinity::pin_current_thread(c) {
            out.warnings
                .push(format!("could not pin an RR thread: {e}"));
        }
    }
    if ctx.rate_tps.is_some() {
        // Paced sends sleep until their slot; the default 50 µs timer slack would make every
        // one of them late by that much, which the latency from the intended send would show.
        let _ = nix::sys::prctl::set_timerslack(1);
    }
    let r = match (role, &socket, queue) {
        (Role::Client, s, _) => client::run(&ctx, s, &mut out),
        (Role::Server, RrSocket::Tcp(t), _) => server::tcp(&ctx, t),
        (Role::Server, RrSocket::Udp(u), _) => server::udp(&ctx, u),
        (Role::Server, _, Some(q)) => server::crr(&ctx, &q),
        (Role::Server, _, None) => Ok(()),
    };
    if let Err(e) = r {
        out.error = Some(e.to_string());
    }
    out.cpu = ctx.counters.cpu_at_baseline.since_baseline();
    ctx.counters.done.store(true, Relaxed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RrKind;

    #[test]
    fn schedule_keeps_slots_through_stalls() {
        // 1000 tps: slots every 1 ms from 0. A stall until 5.5 ms leaves slots 0..=5 due at
        // once, each with its own intended time; the next is due at 6 ms.
        let mut s = Schedule::new(Some(1000), 0);
        let due: Vec<u64> = std::iter::from_fn(|| s.next(5_500_000)).collect();
        assert_eq!(
            due,
            vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000]
        );
        assert_eq!(s.wait_ns(5_500_000), 500_000);
        let mut free = Schedule::new(None, 0);
        assert_eq!(free.next(42), Some(42));
        assert_eq!(free.wait_ns(42), 0);
    }

    #[test]
    fn kinds() {
        let mut spec = RrSpec {
            request_bytes: 1,
            response_bytes: 1,
            burst: 1,
            connect_per_transaction: false,
            udp: false,
            timeout_ms: 0,
            target_tps: None,
        };
        assert_eq!(kind(&spec), RrKind::TcpRr);
        spec.connect_per_transaction = true;
        assert_eq!(kind(&spec), RrKind::TcpCrr);
        spec.udp = true;
        assert_eq!(kind(&spec), RrKind::UdpRr);
    }
}
