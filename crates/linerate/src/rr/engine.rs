//! The request/response engine of either end: one thread per stream running the client
//! loop ([`super::client`]) or a responder ([`super::server`]), the meter both engines share
//! ([`crate::engine::meter`]) over the streams' [`RrCounters`], and the end's report.

use crate::sys::net::AsSock;
use portable_atomic::AtomicU64;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use linerate_wire::control::RrSpec;
use linerate_wire::report::{
    HostInfo, IntervalReport, ProcessCpu, Role, SideReport, StreamReport, StreamRole, Totals,
};

use super::counters::{total_since, CounterSnapshot, LoopCtx, RrCounters, Snap};
use super::watch::{Watch, Watchdog};
use super::{client, latency, server};
use crate::engine::meter::{self, Meter, SampleSource, Window};
use crate::engine::socket_bufs;
use crate::model::plan::SockOpts;
use crate::sys;

/// TCP_CRR connections waiting for a stream's responder on the server.
pub const CRR_QUEUE: usize = 64;

/// The longest a client's stop waits for the transactions under way to finish (their
/// responses, a TCP_CRR connection's close; a UDP_RR request is lost after its own
/// time-out): a round trip on any path a test runs on, and what a server that stopped
/// answering costs the stop. After it, the waits are cut and those transactions are not
/// counted.
pub const DRAIN: Duration = Duration::from_secs(1);

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
    /// The server closes each connection first, after its response (feature
    /// `crr_server_closes`): the client reads to its FIN before closing. An older server
    /// waits for the client to close first.
    pub server_closes: bool,
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
    /// Server TCP_CRR: connections arrive through [`RrEngine::add_connection`]; each gets
    /// these options (the test's server-side socket options) before it is served.
    Accept(SockOpts),
    /// Server TCP_CRR on the test's own port (feature `crr_port`): every stream thread
    /// accepts on the listener itself; the connections inherit the test's options from it.
    Listen(Arc<CrrListener>),
}

/// The listener of a server TCP_CRR test with a port of its own, and the token each of its
/// connections must present in its stream hello.
#[derive(Debug)]
pub struct CrrListener {
    /// Listening, with the test's server-side options, which its connections inherit
    /// ([`crate::sys::listen::test_listener`]).
    pub listener: std::net::TcpListener,
    /// The test's token.
    pub token: [u8; 16],
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
    /// Profile every CPU over the measured window (`--profile`).
    pub profile: Option<linerate_wire::profile::ProfileSpec>,
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

struct Shared {
    window: Window<Snap>,
    counters: Vec<Arc<RrCounters>>,
    /// TCP_CRR: the host figures a connection per transaction can exhaust, at the warm-up
    /// boundary (see [`CrrHost`]).
    crr_base: Option<std::sync::Mutex<Option<CrrHost>>>,
}

/// What a TCP_CRR test reads of its host before and after the window: conntrack's fill and
/// drops (a full table drops new connections' SYNs) and the SYNs TCP sent again
/// (`TcpExt.TCPSynRetrans`), a few small /proc reads at each end of the window.
#[derive(Debug, Clone)]
struct CrrHost {
    at: std::time::Instant,
    conntrack: Option<sys::conntrack::Snapshot>,
    syn_retrans: Option<u64>,
}

impl CrrHost {
    fn read() -> CrrHost {
        let syn_retrans = sys::snmp::read_snmp()
            .ok()
            .and_then(|(m, _)| m.get("TcpExt.TCPSynRetrans").copied())
            .and_then(|v| u64::try_from(v).ok());
        CrrHost {
            at: std::time::Instant::now(),
            conntrack: sys::conntrack::Snapshot::read(),
            syn_retrans,
        }
    }

    /// The window's host counters (conntrack and the SYN retransmissions only), and the
    /// warning of [`crr_warning`] (`failed`: the test's connections that failed).
    fn delta(
        &self,
        later: &CrrHost,
        failed: u64,
    ) -> (linerate_wire::host::HostCounters, Option<String>) {
        let conntrack = self
            .conntrack
            .as_ref()
            .zip(later.conntrack.as_ref())
            .map(|(e, l)| l.delta(e));
        let syn = self
            .syn_retrans
            .zip(later.syn_retrans)
            .and_then(|(e, l)| sys::counter::delta_u64(e, l));
        let hc = linerate_wire::host::HostCounters {
            duration_ns: u64::try_from(later.at.saturating_duration_since(self.at).as_nanos())
                .unwrap_or(u64::MAX),
            snmp: syn.map(|n| [("TcpExt.TCPSynRetrans".to_string(), n)].into()),
            conntrack: conntrack.clone(),
            ..Default::default()
        };
        (hc, crr_warning(syn, conntrack.as_ref(), failed))
    }
}

/// The warning of a TCP_CRR window in which conntrack was in the way, or SYNs were sent
/// again while some of the test's connections failed, naming conntrack's figures (or
/// saying the host does not track connections). `TcpExt.TCPSynRetrans` counts the whole
/// namespace's SYNs: without a failed connection of the test they may be anyone's, and
/// only the record keeps them.
fn crr_warning(
    syn_retrans: Option<u64>,
    conntrack: Option<&linerate_wire::host::ConntrackCounters>,
    failed: u64,
) -> Option<String> {
    let in_the_way = conntrack.is_some_and(sys::conntrack::in_the_way);
    let syn = syn_retrans.unwrap_or(0);
    let syn = if failed > 0 || in_the_way { syn } else { 0 };
    if syn == 0 && !in_the_way {
        return None;
    }
    let ct = match conntrack {
        Some(c) => {
            let mut t = sys::conntrack::describe(c, "in the window");
            if in_the_way {
                t.push_str(": ");
                t.push_str(sys::conntrack::FIX);
            }
            t
        }
        None => "the host does not track connections (no nf_conntrack)".to_string(),
    };
    Some(if syn > 0 {
        format!("TCP sent {syn} SYNs again in the measured window (TcpExt.TCPSynRetrans): connections waited a retransmission time-out (1 s at first) to open; {ct}")
    } else {
        ct
    })
}

impl SampleSource for Shared {
    type Counters = Snap;

    fn window(&self) -> &Window<Snap> {
        &self.window
    }

    fn read(&self) -> Snap {
        self.counters.iter().map(|c| c.snapshot()).collect()
    }

    fn at_baseline(
        &self,
        cpu: Result<sys::cpu::CpuTimes, sys::SysError>,
    ) -> Option<sys::cpu::CpuTimes> {
        if let Some(m) = &self.crr_base {
            if let Ok(mut b) = m.lock() {
                *b = Some(CrrHost::read());
            }
        }
        cpu.ok()
    }

    fn interval(&self, prev: &Snap, now: &Snap) -> IntervalReport {
        let d = total_since(now, prev);
        IntervalReport {
            tx_bytes: d.tx_bytes,
            rx_bytes: d.rx_bytes,
            rx_lost: Some(d.lost).filter(|l| *l > 0),
            transactions: Some(d.transactions),
            ..IntervalReport::default()
        }
    }
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
    /// Ends the waits of the transactions under way ([`LoopCtx::cut`]): the stop flag
    /// itself on a server, a flag of its own on a client, set after its drain.
    cut: Arc<AtomicBool>,
    threads: Vec<JoinHandle<RrOutcome>>,
    meter: Meter,
    end: Option<(u64, Option<sys::cpu::CpuTimes>)>,
    /// TCP_CRR: the host figures at the end of the window.
    crr_end: Option<CrrHost>,
    inbox: CrrInbox,
    info: Vec<StreamInfo>,
    profiling: Option<crate::engine::profile::Profiling>,
    /// A server TCP_CRR test's own listener, shut down to end the blocked accepts.
    listener: Option<Arc<CrrListener>>,
    /// Ends the TCP_CRR loops' waits at their deadlines and at the stop.
    watchdog: Option<Watchdog>,
}

/// Where a server's TCP_CRR connections go: the responder queue of each stream. Cloned into
/// the server's token registry so that a new connection goes from the accept thread straight
/// to its responder, without a hop through the session thread.
#[derive(Clone, Default)]
pub struct CrrInbox {
    queues: Arc<Vec<(u16, SyncSender<TcpStream>)>>,
    /// Connections closed because their stream's queue was full.
    full: Arc<AtomicU64>,
    /// Connections closed because their hello named a stream the test does not have.
    unknown: Arc<AtomicU64>,
}

impl CrrInbox {
    fn new(queues: Vec<(u16, SyncSender<TcpStream>)>) -> CrrInbox {
        CrrInbox {
            queues: Arc::new(queues),
            ..CrrInbox::default()
        }
    }

    /// Whether this engine takes connections (a server TCP_CRR engine).
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Hands a new connection of stream `index` to its responder, or closes it: counted
    /// when the stream is unknown or its queue is full, not when its responder has ended
    /// (the test is stopping, and the client's last connection may be cut by the stop).
    pub fn deliver(&self, index: u16, s: TcpStream) {
        use std::sync::mpsc::TrySendError;
        match self.queues.iter().find(|(i, _)| *i == index) {
            None => {
                self.unknown.fetch_add(1, Relaxed);
            }
            Some((_, q)) => match q.try_send(s) {
                Ok(()) | Err(TrySendError::Disconnected(_)) => {}
                Err(TrySendError::Full(_)) => {
                    self.full.fetch_add(1, Relaxed);
                }
            },
        }
    }

    /// Warnings for the connections closed unserved.
    fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let full = self.full.load(Relaxed);
        if full > 0 {
            w.push(format!("{full} TCP_CRR connections were closed unserved: more than {CRR_QUEUE} were waiting for one stream"));
        }
        let unknown = self.unknown.load(Relaxed);
        if unknown > 0 {
            w.push(format!("{unknown} TCP_CRR connections were closed unserved: their hello named a stream the test does not have"));
        }
        w
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
        let profiling = crate::engine::profile::Profiling::start(cfg.profile, epoch);
        let stop = Arc::new(AtomicBool::new(false));
        let cut = match cfg.role {
            Role::Client => Arc::new(AtomicBool::new(false)),
            Role::Server => stop.clone(),
        };
        let n = u16::try_from(sockets.len()).unwrap_or(u16::MAX).max(1);
        let counters: Vec<Arc<RrCounters>> = sockets.iter().map(|_| Arc::default()).collect();
        let crr = cfg.spec.connect_per_transaction && !cfg.spec.udp;
        let shared = Arc::new(Shared {
            window: Window::new(epoch),
            counters: counters.clone(),
            crr_base: crr.then(|| std::sync::Mutex::new(None)),
        });
        if cfg.omit.is_zero() {
            shared.take_baseline();
        }
        let baseline_flag = shared.window.baseline_flag();
        let mut threads = Vec::new();
        let mut queues = Vec::new();
        let mut info = Vec::new();
        let listener = sockets.iter().find_map(|(_, s)| match s {
            RrSocket::Listen(l) => Some(l.clone()),
            _ => None,
        });
        let mut watches = Vec::new();
        for (k, ((index, socket), c)) in sockets.into_iter().zip(counters).enumerate() {
            info.push(stream_info(index, &socket));
            let watch = Arc::new(Watch::default());
            if matches!(socket, RrSocket::Connect(_) | RrSocket::Listen(_)) {
                watches.push(watch.clone());
            }
            let ctx = LoopCtx {
                epoch,
                counters: c,
                stop: stop.clone(),
                cut: cut.clone(),
                baseline: baseline_flag.clone(),
                spec: cfg.spec.clone(),
                rate_tps: cfg
                    .spec
                    .target_tps
                    .map(|t| crate::model::plan::split(t, n, k as u16).max(1)),
                watch,
            };
            let mut queue = None;
            if matches!(socket, RrSocket::Accept(_)) {
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
        let watchdog = if watches.is_empty() {
            None
        } else {
            Some(Watchdog::start(watches, cut.clone())?)
        };
        let meter = Meter::start("lr-rr-meter", shared.clone(), cfg.interval, cfg.omit, sink)?;
        Ok(RrEngine {
            cfg,
            shared,
            stop,
            cut,
            threads,
            meter,
            end: None,
            crr_end: None,
            inbox: CrrInbox::new(queues),
            info,
            profiling,
            listener,
            watchdog,
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

    /// Ends the measured window (reads CPU) and tells the loops to stop. A client's loops
    /// start no transaction after it but finish those under way ([`DRAIN`]): so each
    /// request sent has its response, both ends count the same bytes and transactions, and
    /// a response queued in the socket is not lost to the shutdown below. The client tells
    /// the server to stop only after this returns.
    pub fn stop(&mut self) {
        if self.end.is_some() {
            return;
        }
        self.end = Some(self.shared.window.end_now());
        if self.shared.crr_base.is_some() {
            self.crr_end = Some(CrrHost::read());
        }
        self.stop.store(true, Relaxed);
        if self.cfg.role == Role::Client {
            let deadline = Instant::now() + DRAIN;
            while Instant::now() < deadline && !self.threads.iter().all(|h| h.is_finished()) {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.cut.store(true, Relaxed);
        }
        // TCP_RR loops block in reads with no time-out (where a shutdown wakes them,
        // sys::net::SHUTDOWN_WAKES): shutting the reading side ends them (the read returns
        // 0 and the loop sees the flag). Nothing is sent to the peer.
        for t in self.info.iter().filter_map(|i| i.tcp.as_ref()) {
            let _ = t.shutdown(std::net::Shutdown::Read);
        }
        // Server TCP_CRR responders block in accept on the test's listener: shutting it
        // down ends those calls (EINVAL).
        if let Some(l) = &self.listener {
            let _ = sys::net::shutdown(l.listener.as_sock(), std::net::Shutdown::Read);
        }
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
        if let Some(w) = self.watchdog.take() {
            w.join();
        }
        self.meter.join();
        let profiling = self.profiling.take();
        self.build(outcomes, warnings, profiling)
    }

    fn build(
        &self,
        outcomes: Vec<RrOutcome>,
        mut warnings: Vec<String>,
        profiling: Option<crate::engine::profile::Profiling>,
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
            let d = fin[k].since(&base[k]);
            // Server responders keep no timestamps: their active time is the window.
            let dur = match sh.counters[k].last_ns.load(Relaxed) {
                0 => end_ns.saturating_sub(base_ns),
                l => (l - 1).saturating_sub(base_ns),
            };
            last = last.max(dur);
            streams.push(stream_report(info, role, &d, dur, &mut warnings));
        }
        let total = total_since(fin, base);
        data.transactions = total.transactions;
        data.lost = total.lost;
        data.late = total.late;
        data.connections = total.connections;
        data.errors = total.errors;
        warnings.extend(self.inbox.warnings());
        let udp = self.info.iter().any(|i| i.udp);
        let totals = Totals {
            duration_ns: end_ns.saturating_sub(base_ns),
            tx_bytes: total.tx_bytes,
            rx_bytes: total.rx_bytes,
            tx_calls: Some(total.tx_calls),
            rx_calls: Some(total.rx_calls),
            tx_duration_ns: last,
            rx_duration_ns: last,
            tx_blocked_ns: None,
            tx_packets: udp.then_some(total.tx_calls),
            rx_packets: udp.then_some(total.rx_calls),
            retransmits: None,
            udp_rx: None,
        };
        let cpu = meter::window_cpu(base_cpu.as_ref(), end_cpu.as_ref(), &mut warnings);
        let base_host = sh.crr_base.as_ref().and_then(|m| m.lock().ok()?.clone());
        let host_counters = match (base_host, &self.crr_end) {
            (Some(b), Some(e)) => {
                let (hc, w) = b.delta(e, total.errors);
                warnings.extend(w);
                Some(hc)
            }
            _ => None,
        };
        let profile = profiling.and_then(|p| {
            p.finish(base_ns, end_ns, base_cpu.as_ref().zip(end_cpu.as_ref()))
                .map_err(|w| warnings.push(w))
                .ok()
        });
        let report = SideReport {
            role: self.cfg.role,
            host: self.cfg.host.clone(),
            streams,
            intervals: Vec::new(),
            totals,
            cpu,
            process_cpu: proc_cpu,
            host_counters,
            interface: None,
            control_segments: None,
            profile,
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
        RrSocket::Accept(_) | RrSocket::Listen(..) => StreamInfo {
            index,
            local: None,
            remote: None,
            tcp: None,
            udp: false,
            bufs: (None, None),
        },
    }
}

/// One stream's report: its counters over the window (`d`) and its active time `dur`.
fn stream_report(
    info: &StreamInfo,
    role: StreamRole,
    d: &CounterSnapshot,
    dur: u64,
    warnings: &mut Vec<String>,
) -> StreamReport {
    let facts = info.tcp.as_ref().map(|t| tcp_facts(t, warnings));
    StreamReport {
        index: info.index,
        role,
        bytes: d.tx_bytes + d.rx_bytes,
        io_calls: Some(d.tx_calls + d.rx_calls),
        packets: info.udp.then(|| d.tx_calls + d.rx_calls),
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
        raw_tx: None,
        send_mode: None,
        recv_mode: None,
        zerocopy: None,
        quic: None,
    }
}

/// The connection's MSS and TCP_INFO; TCP_INFO that cannot be read is absent with one
/// warning for all the streams (the same words as the stream engine's).
fn tcp_facts(
    t: &TcpStream,
    warnings: &mut Vec<String>,
) -> (Option<u32>, Option<linerate_wire::report::TcpInfoReport>) {
    let info = sys::tcp_info::read_tcp_info(t.as_sock())
        .map_err(|e| {
            let w = format!("TCP_INFO not readable: {e}");
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        })
        .ok();
    (sys::net::opt::mss(&socket2::SockRef::from(t)).ok(), info)
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
    let bounceback = ctx.spec.bounceback.as_deref().copied();
    if ctx.rate_tps.is_some() || bounceback.is_some() {
        // Paced sends (and bounceback's bursts and holds) sleep until their slot; the default 50 µs timer slack would make every
        // one of them late by that much, which the latency from the intended send would show.
        sys::process::fine_timer_slack();
    }
    // Each transaction switches this thread out and back in; without rseq the kernel has
    // no area to update on each return (see sys::rseq). Failing that, it only costs speed.
    let _ = sys::rseq::leave();
    let r = match (role, &socket, queue) {
        (Role::Client, s, _) => match (s, &bounceback) {
            (RrSocket::Tcp(t), Some(bb)) => super::bounceback::client(&ctx, t, bb, &mut out),
            _ => client::run(&ctx, s, &mut out),
        },
        (Role::Server, RrSocket::Tcp(t), _) => match &bounceback {
            Some(bb) => super::bounceback::server(&ctx, t, bb),
            None => server::tcp(&ctx, t),
        },
        (Role::Server, RrSocket::Udp(u), _) => server::udp(&ctx, u),
        (Role::Server, RrSocket::Accept(opts), Some(q)) => server::crr(&ctx, &q, opts),
        (Role::Server, RrSocket::Listen(l), _) => server::crr_listen(&ctx, l),
        (Role::Server, _, Some(_)) => Ok(()),
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

    #[test]
    fn crr_warning_names_syn_retransmissions_and_conntrack() {
        use linerate_wire::host::ConntrackCounters;
        let full = ConntrackCounters {
            entries: Some(300),
            max_entries: Some(300),
            drops: Some(12),
            insert_failed: Some(0),
            early_drops: Some(0),
        };
        let w = crr_warning(Some(12), Some(&full), 0).unwrap();
        assert!(
            w.starts_with("TCP sent 12 SYNs again in the measured window"),
            "{w}"
        );
        assert!(w.contains("conntrack: 300 of 300 entries in use (nf_conntrack_max 300); 12 packets dropped for want of an entry and 0 failed inserts in the window"), "{w}");
        assert!(w.contains("nf_conntrack_max=N"), "{w}");
        // SYNs again without conntrack, connections of the test failed: the warning says
        // the host tracks none.
        let w = crr_warning(Some(3), None, 2).unwrap();
        assert!(
            w.ends_with("the host does not track connections (no nf_conntrack)"),
            "{w}"
        );
        // Drops without a SYN counted (another namespace's TCP): conntrack alone.
        let w = crr_warning(Some(0), Some(&full), 0).unwrap();
        assert!(w.starts_with("conntrack: 300 of 300"), "{w}");
        // Neither: no warning.
        let quiet = ConntrackCounters {
            entries: Some(5),
            drops: Some(0),
            insert_failed: Some(0),
            ..full
        };
        assert_eq!(crr_warning(Some(0), Some(&quiet), 0), None);
        assert_eq!(crr_warning(None, None, 0), None);
        // SYNs again on a host whose test lost no connection: someone else's, no warning.
        assert_eq!(crr_warning(Some(5), Some(&quiet), 0), None);
        assert_eq!(crr_warning(Some(5), None, 0), None);
        let w = crr_warning(Some(5), Some(&quiet), 1).unwrap();
        assert!(w.ends_with("0 packets dropped and 0 failed inserts in the window (/proc/net/stat/nf_conntrack)"), "{w}");
    }

    /// `n` connected TCP sockets (the client ends; the listener's backlog holds the rest).
    fn sockets(n: usize) -> (std::net::TcpListener, Vec<TcpStream>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let s = (0..n).map(|_| TcpStream::connect(a).unwrap()).collect();
        (l, s)
    }

    #[test]
    fn an_inbox_counts_full_queues_and_unknown_streams_but_not_ended_responders() {
        let (_l, mut s) = sockets(CRR_QUEUE + 3);
        let (tx, rx) = std::sync::mpsc::sync_channel(CRR_QUEUE);
        let (gone_tx, gone_rx) = std::sync::mpsc::sync_channel(CRR_QUEUE);
        drop(gone_rx);
        let inbox = CrrInbox::new(vec![(0, tx), (1, gone_tx)]);
        for c in s.drain(..CRR_QUEUE) {
            inbox.deliver(0, c);
        }
        assert!(inbox.warnings().is_empty());
        inbox.deliver(0, s.remove(0)); // the queue is full
        inbox.deliver(1, s.remove(0)); // the responder has ended: no warning
        inbox.deliver(7, s.remove(0)); // no stream 7
        assert_eq!(
            inbox.warnings(),
            [
                format!("1 TCP_CRR connections were closed unserved: more than {CRR_QUEUE} were waiting for one stream"),
                "1 TCP_CRR connections were closed unserved: their hello named a stream the test does not have".to_string(),
            ]
        );
        assert_eq!(rx.try_iter().count(), CRR_QUEUE);
    }
}
