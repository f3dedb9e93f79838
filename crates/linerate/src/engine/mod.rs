//! Test engines: run the data streams of one end of a test and measure them.
//!
//! One thread per stream runs the loop in [`stream`]; a [`meter`] thread samples the
//! streams' counters, TCP_INFO and /proc/stat once per interval and pushes
//! [`IntervalReport`]s into a channel (push model: the caller decides whether they go to the
//! console, to a JSON stream, or over the control connection). The warm-up (`omit`) ends with
//! a baseline snapshot; the totals in the final [`SideReport`] are "end minus baseline". The
//! meter is shared with the request/response engine: this engine is one [`SampleSource`].
//!
//! Life cycle: [`Engine::start`] → (intervals flow) → [`Engine::stop_senders`] (ends the
//! measured window for CPU) → [`Engine::finish`] (drains receivers, joins, builds the report).

pub mod buf;
pub mod delay;
pub mod frame;
pub mod meter;
pub mod multicast;
pub mod pacing;
pub mod profile;
pub mod quic;
pub mod rawgen;
pub mod stream;

use crate::sys::net::AsSock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_wire::control::Transport;
use linerate_wire::report::{
    HostInfo, IntervalReport, ProcessCpu, Role, SideReport, StreamReport, StreamRole, Totals,
    UdpRxReport,
};

use crate::sys;
use meter::{Meter, SampleSource, Window};
pub use stream::{DataSocket, StreamCounters, StreamOutcome};

/// One stream to run.
pub struct StreamSetup {
    /// Index within the test.
    pub index: u16,
    /// Send or receive at this end.
    pub role: StreamRole,
    /// The socket.
    pub socket: DataSocket,
    /// Bytes to send (fixed-size tests).
    pub quota: Option<u64>,
    /// Paced rate for this stream.
    pub rate_bps: Option<u64>,
    /// A raw-frame sender opened ahead of time (or why it could not be), for a UDP sender
    /// of a `raw_frames` test; [`Engine::start`] opens one when absent.
    pub raw: Option<Result<rawgen::RawSender, String>>,
}

/// Engine settings common to all streams of one end.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Client or server.
    pub role: Role,
    /// TCP or UDP.
    pub transport: Transport,
    /// Write / datagram size.
    pub write_size: u32,
    /// Interval length.
    pub interval: Duration,
    /// Warm-up left out of totals.
    pub omit: Duration,
    /// CPU to pin data threads to.
    pub cpu: Option<u32>,
    /// UDP GSO/GRO.
    pub udp_offload: bool,
    /// Host facts for the report.
    pub host: HostInfo,
    /// UDP receivers measure one-way delay (protocol 1.1, `one_way_delay`).
    pub one_way_delay: Option<linerate_wire::control::DelaySpec>,
    /// UDP senders never burst to catch up (protocol 1.1, `smooth_pacing`).
    pub smooth_pacing: bool,
    /// The test's control connection, whose own segments over the measured window are
    /// counted (`SideReport::control_segments`) because they cross the same interface.
    pub control: Option<Arc<std::net::TcpStream>>,
    /// UDP senders write raw frames (protocol 1.3, `raw_frames`).
    pub raw_frames: bool,
    /// The kernel path raw frames go through (`--raw-tx`).
    pub raw_tx: linerate_wire::control::RawTxChoice,
    /// Host counters taken before the peer could start sending (the client of a raw-frame
    /// test with receivers takes them before `streams_ready`): used as the baseline instead
    /// of a snapshot at the engine's start, so every frame this end receives falls inside
    /// its interface counters' window. Ignored with a warm-up.
    pub early_host: Option<sys::hostsnap::HostSnapshot>,
    /// Profile every CPU over the measured window (`--profile`).
    pub profile: Option<linerate_wire::profile::ProfileSpec>,
    /// How TCP senders hand data to the kernel (feature `copy_modes`).
    pub send_mode: linerate_wire::control::SendMode,
    /// How TCP receivers take data (feature `copy_modes`).
    pub recv_mode: linerate_wire::control::RecvMode,
    /// The peer is an iperf3 server (`--iperf3`): UDP datagrams carry iperf3's 12-byte header
    /// (wall-clock send time, sequence number from 1) instead of linerate's probe, and TCP
    /// receivers end their drain when quiet, as UDP ones do (iperf3 closes its data
    /// connections only after the results, so no end of stream comes first).
    pub iperf3: bool,
}

/// Every stream's counters at one instant (index = stream position).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    bytes: Vec<u64>,
    calls: Vec<u64>,
    packets: Vec<u64>,
    lost: Vec<u64>,
    dups: Vec<u64>,
    reordered: Vec<u64>,
    retrans: Vec<Option<u32>>,
    blocked: Vec<u64>,
}

struct Shared {
    window: Window<Snapshot>,
    streams: Vec<(StreamSetup, Arc<StreamCounters>)>,
    /// Local and peer address of each stream, read at start (a closed socket has no peer).
    addrs: Vec<(Option<String>, Option<String>)>,
    transport: Transport,
    warnings: Mutex<Vec<String>>,
    /// The interface that carries the test (from the route to the peer), if found.
    iface: Option<String>,
    /// Host counters at the warm-up boundary.
    host_base: Mutex<Option<sys::hostsnap::HostSnapshot>>,
    /// The control connection, and its segment counts at the warm-up boundary.
    control: Option<Arc<std::net::TcpStream>>,
    control_base: Mutex<Option<(u32, u32)>>,
    /// Host counters taken before the engine started ([`EngineConfig::early_host`]).
    early_host: Mutex<Option<sys::hostsnap::HostSnapshot>>,
}

impl Shared {
    fn warn(&self, w: String) {
        if let Ok(mut v) = self.warnings.lock() {
            if !v.contains(&w) {
                v.push(w);
            }
        }
    }

    /// The control connection's (segments sent, received) now; `None` without one, with a
    /// warning when TCP_INFO cannot tell.
    fn control_segments_now(&self) -> Option<(u32, u32)> {
        let c = self.control.as_ref()?;
        match sys::tcp_info::read_tcp_segments(c.as_sock()) {
            Ok(v) => Some(v),
            Err(e) => {
                self.warn(format!(
                    "the control connection's packets are not counted ({e}): interface packet counts include them"
                ));
                None
            }
        }
    }
}

impl SampleSource for Shared {
    type Counters = Snapshot;

    fn window(&self) -> &Window<Snapshot> {
        &self.window
    }

    fn read(&self) -> Snapshot {
        let mut s = Snapshot::default();
        for (setup, c) in &self.streams {
            s.bytes.push(c.bytes.load(Relaxed));
            s.calls.push(c.calls.load(Relaxed));
            s.packets.push(c.packets.load(Relaxed));
            s.lost.push(c.lost.load(Relaxed));
            s.dups.push(c.duplicates.load(Relaxed));
            s.reordered.push(c.reordered.load(Relaxed));
            s.blocked.push(c.blocked_ns.load(Relaxed));
            s.retrans.push(match (&setup.socket, setup.role) {
                (DataSocket::Tcp(t), StreamRole::Tx) => sys::tcp_info::read_tcp_info(t.as_sock())
                    .ok()
                    .and_then(|i| i.total_retrans),
                _ => None,
            });
        }
        s
    }

    fn interval(&self, a: &Snapshot, b: &Snapshot) -> IntervalReport {
        interval_report(self, a, b)
    }

    /// Warns when /proc/stat cannot be read, and takes the host counters' baseline.
    fn at_baseline(
        &self,
        cpu: Result<sys::cpu::CpuTimes, sys::SysError>,
    ) -> Option<sys::cpu::CpuTimes> {
        let cpu = match cpu {
            Ok(c) => Some(c),
            Err(e) => {
                self.warn(format!("CPU utilisation not measured: {e}"));
                None
            }
        };
        let early = self
            .early_host
            .lock()
            .ok()
            .and_then(|mut e| e.take())
            .filter(|e| e.interface.as_deref() == self.iface.as_deref());
        let host = match early {
            Some(h) => h,
            None => {
                let (host, host_warnings) =
                    sys::hostsnap::HostSnapshot::take(self.iface.as_deref());
                for w in host_warnings {
                    self.warn(w);
                }
                host
            }
        };
        if let Ok(mut h) = self.host_base.lock() {
            *h = Some(host);
        }
        let control = self.control_segments_now();
        if let Ok(mut c) = self.control_base.lock() {
            *c = control;
        }
        cpu
    }

    /// Per interval: the test interface's packets, NET_RX/NET_TX softirqs and softnet
    /// drops (a few small /proc reads on the meter thread, nothing on the data path).
    fn host_sampler(&self) -> Option<sys::hostsnap::IntervalSampler> {
        Some(sys::hostsnap::IntervalSampler::new(self.iface.as_deref()))
    }
}

fn diff(a: &[u64], b: &[u64], pick: impl Fn(usize) -> bool) -> u64 {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| pick(*i))
        .map(|(_, (x, y))| x.saturating_sub(*y))
        .sum()
}

/// What a QUIC test's own CPU time leaves out.
pub const QUIC_OWN_CPU: &str = "linerate's own CPU time counts its stream threads only: quinn's packet building, crypto and UDP system calls run on its runtime's threads (lr-quic), which the host's CPU figures and service demand include";

/// A running engine.
pub struct Engine {
    cfg: EngineConfig,
    shared: Arc<Shared>,
    tx_stop: Arc<AtomicBool>,
    rx_stop: Arc<AtomicBool>,
    threads: Vec<(usize, JoinHandle<StreamOutcome>)>,
    meter: Meter,
    end: Option<(u64, Option<sys::cpu::CpuTimes>)>,
    /// When the senders were told to stop (engine ns), and which streams still ran then:
    /// a sender stopped by the end of the test sent over the window up to that moment,
    /// however long ago its last write went through.
    stop: Option<(u64, Vec<bool>)>,
    host_end: Option<sys::hostsnap::HostSnapshot>,
    control_end: Option<(u32, u32)>,
    interface: Option<linerate_wire::host::InterfaceFacts>,
    profiling: Option<profile::Profiling>,
}

impl Engine {
    /// Starts one thread per stream and the meter. Each interval is pushed into `sink`.
    pub fn start(
        cfg: EngineConfig,
        streams: Vec<StreamSetup>,
        sink: impl FnMut(IntervalReport) + Send + 'static,
    ) -> std::io::Result<Engine> {
        // Raw-frame senders are opened before the clock starts: resolving the next hop runs
        // `ip` and `tc` (tens of milliseconds), which must not count as sending time.
        let mut streams = streams;
        let mut raw = open_raw_senders(&cfg, &mut streams);
        let epoch = Instant::now();
        let profiling = profile::Profiling::start(cfg.profile, epoch);
        let tx_stop = Arc::new(AtomicBool::new(false));
        let rx_stop = Arc::new(AtomicBool::new(false));
        // The interface toward the peer, for host counters and interface facts. Read once,
        // before the data threads start: neither is cheap enough for the data path.
        let mut early_warnings = Vec::new();
        let iface = peer_interface(&streams, &mut early_warnings);
        let addrs = stream_addrs(&streams);
        let shared = Arc::new(Shared {
            addrs,
            window: Window::new(epoch),
            streams: streams
                .into_iter()
                .map(|s| (s, Arc::new(StreamCounters::default())))
                .collect(),
            transport: cfg.transport,
            warnings: Mutex::new(early_warnings),
            iface,
            host_base: Mutex::new(None),
            control: cfg.control.clone(),
            control_base: Mutex::new(None),
            early_host: Mutex::new(if cfg.omit.is_zero() {
                cfg.early_host.clone()
            } else {
                None
            }),
        });
        if cfg.omit.is_zero() {
            shared.take_baseline();
        }

        let baseline_flag = shared.window.baseline_flag();
        let mut threads = Vec::new();
        for (i, (setup, counters)) in shared.streams.iter().enumerate() {
            let send = setup.role == StreamRole::Tx;
            let ctx = stream::StreamCtx {
                counters: counters.clone(),
                epoch,
                stop: if send {
                    tx_stop.clone()
                } else {
                    rx_stop.clone()
                },
                baseline: baseline_flag.clone(),
                quota: setup.quota,
                rate_bps: setup.rate_bps,
                write_size: cfg.write_size as usize,
                udp_offload: cfg.udp_offload,
                cpu: cfg.cpu,
                one_way_delay: cfg.one_way_delay.clone(),
                smooth_pacing: cfg.smooth_pacing,
                raw_frames: cfg.raw_frames,
                raw: raw.get_mut(i).and_then(Option::take),
                raw_tx: cfg.raw_tx,
                send_mode: cfg.send_mode,
                recv_mode: cfg.recv_mode,
                iperf3: cfg.iperf3,
            };
            let socket = setup.socket.clone();
            let h = std::thread::Builder::new()
                .name(format!("lr-stream-{}", setup.index))
                .spawn(move || stream::run(ctx, socket, send))?;
            threads.push((i, h));
        }
        let meter = Meter::start("lr-meter", shared.clone(), cfg.interval, cfg.omit, sink)?;
        // The interface's facts (ethtool, `tc`: milliseconds) once the streams run, so that
        // neither the baseline nor the first send waits for them.
        let interface = shared.iface.as_deref().map(|name| {
            let (facts, w) = sys::hostsnap::interface_facts(name);
            for w in w {
                shared.warn(w);
            }
            facts
        });
        Ok(Engine {
            cfg,
            shared,
            tx_stop,
            rx_stop,
            threads,
            meter,
            end: None,
            stop: None,
            host_end: None,
            control_end: None,
            interface,
            profiling,
        })
    }

    /// True once every sending stream has ended by itself (fixed-size tests) or failed.
    pub fn senders_done(&self) -> bool {
        let mut any = false;
        for (setup, c) in &self.shared.streams {
            if setup.role == StreamRole::Tx {
                any = true;
                if !c.done.load(Relaxed) {
                    return false;
                }
            }
        }
        any
    }

    /// True once every receiving stream has seen the end of its data (TCP) or failed.
    pub fn receivers_done(&self) -> bool {
        self.shared
            .streams
            .iter()
            .filter(|(s, _)| s.role == StreamRole::Rx)
            .all(|(_, c)| c.done.load(Relaxed))
    }

    /// True if this end has sending streams.
    pub fn has_senders(&self) -> bool {
        self.shared
            .streams
            .iter()
            .any(|(s, _)| s.role == StreamRole::Tx)
    }

    /// Bytes all receiving streams have received so far (warm-up included).
    pub fn rx_bytes_now(&self) -> u64 {
        self.shared
            .streams
            .iter()
            .filter(|(s, _)| s.role == StreamRole::Rx)
            .map(|(_, c)| c.bytes.load(Relaxed))
            .sum()
    }

    /// Stops the senders and ends the measured window (CPU is read now).
    pub fn stop_senders(&mut self) {
        if self.end.is_some() {
            return;
        }
        let running = self
            .shared
            .streams
            .iter()
            .map(|(s, c)| s.role == StreamRole::Tx && !c.done.load(Relaxed))
            .collect();
        self.stop = Some((self.shared.window.now_ns(), running));
        self.tx_stop.store(true, Relaxed);
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.senders_done() && self.has_senders() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.end = Some(self.shared.window.end_now());
        let (host, w) = sys::hostsnap::HostSnapshot::take(self.shared.iface.as_deref());
        for w in w {
            self.shared.warn(w);
        }
        self.host_end = Some(host);
        self.control_end = self.shared.control_segments_now();
    }

    /// Waits for receivers to drain, stops everything and builds this end's report.
    ///
    /// TCP receivers end at the peer's end of stream; UDP receivers when nothing arrived for
    /// `quiet`. Either way no longer than `max_drain`.
    pub fn finish(mut self, quiet: Duration, max_drain: Duration) -> SideReport {
        self.stop_senders();
        let deadline = Instant::now() + max_drain;
        let mut last = self.rx_bytes_now();
        let mut last_change = Instant::now();
        while !self.receivers_done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            let now_bytes = self.rx_bytes_now();
            if now_bytes != last {
                last = now_bytes;
                last_change = Instant::now();
            } else if (self.cfg.transport == Transport::Udp || self.cfg.iperf3)
                && last_change.elapsed() >= quiet
            {
                break;
            }
        }
        let has_receivers = self
            .shared
            .streams
            .iter()
            .any(|(s, _)| s.role == StreamRole::Rx);
        if self.cfg.transport == Transport::Udp && has_receivers {
            // A UDP receiver counts what arrived during the drain too (frames still in
            // flight when the senders stopped), so its host counters end after the drain:
            // RFC 2544 compares its frames with the interface's rx_packets.
            let (host, w) = sys::hostsnap::HostSnapshot::take(self.shared.iface.as_deref());
            for w in w {
                self.shared.warn(w);
            }
            self.host_end = Some(host);
        }
        self.rx_stop.store(true, Relaxed);
        self.meter.signal_stop();
        let mut outcomes: Vec<Option<StreamOutcome>> =
            (0..self.shared.streams.len()).map(|_| None).collect();
        for (i, h) in self.threads.drain(..) {
            match h.join() {
                Ok(o) => outcomes[i] = Some(o),
                Err(_) => self.shared.warn(format!(
                    "data thread of stream {i} panicked; its figures are partial"
                )),
            }
        }
        self.meter.join();
        let profiling = self.profiling.take();
        self.build_report(outcomes, profiling)
    }

    /// Host counter deltas over the measured window: warm-up boundary to senders' stop, or
    /// for an end with UDP receivers to the end of their drain (see [`Engine::finish`]).
    fn host_counters(&self) -> Option<linerate_wire::host::HostCounters> {
        let base = self.shared.host_base.lock().ok()?.clone()?;
        let end = self.host_end.as_ref()?;
        Some(base.delta(end))
    }

    /// The control connection's segments over the measured window. The kernel's counters
    /// are 32-bit and wrap.
    fn control_segments(&self) -> Option<linerate_wire::report::ControlSegments> {
        let base = (*self.shared.control_base.lock().ok()?)?;
        let end = self.control_end?;
        Some(linerate_wire::report::ControlSegments {
            sent: u64::from(end.0.wrapping_sub(base.0)),
            received: u64::from(end.1.wrapping_sub(base.1)),
        })
    }

    /// Stream `i`'s report over the window from `base` to `fin`, active for `dur` ns.
    fn stream_report(
        &self,
        i: usize,
        (fin, base): (&Snapshot, &Snapshot),
        dur: u64,
        outcome: StreamOutcome,
        warnings: &mut Vec<String>,
    ) -> StreamReport {
        let sh = &self.shared;
        let setup = &sh.streams[i].0;
        let udp = sh.transport == Transport::Udp;
        let bytes = fin.bytes[i].saturating_sub(base.bytes[i]);
        let udp_rx = outcome.udp_rx.map(|u| UdpRxReport {
            packets: fin.packets[i].saturating_sub(base.packets[i]),
            lost: fin.lost[i].saturating_sub(base.lost[i]),
            duplicates: fin.dups[i].saturating_sub(base.dups[i]),
            reordered: fin.reordered[i].saturating_sub(base.reordered[i]),
            highest_seq: u.highest_seq,
            jitter_ns: u.jitter_ns,
            one_way_delay: u.one_way_delay,
        });
        let (local, remote) = sh.addrs[i].clone();
        let facts = socket_facts(setup, warnings);
        StreamReport {
            index: setup.index,
            role: setup.role,
            bytes,
            io_calls: Some(fin.calls[i].saturating_sub(base.calls[i])),
            packets: udp.then(|| fin.packets[i].saturating_sub(base.packets[i])),
            duration_ns: dur,
            sndbuf_bytes: facts.sndbuf,
            rcvbuf_bytes: facts.rcvbuf,
            mss_bytes: facts.mss,
            congestion: facts.congestion,
            tcp_info: facts.tcp_info,
            udp_rx,
            udp_seq_end: outcome.udp_seq_end,
            local_addr: local,
            remote_addr: remote,
            tx_path: outcome.tx_path,
            raw_tx: outcome.raw_tx,
            send_mode: (sh.transport == Transport::Tcp && setup.role == StreamRole::Tx)
                .then_some(self.cfg.send_mode),
            recv_mode: (sh.transport == Transport::Tcp && setup.role == StreamRole::Rx)
                .then_some(self.cfg.recv_mode),
            zerocopy: outcome.zerocopy,
            quic: match &setup.socket {
                DataSocket::Quic(q) => Some(q.report()),
                _ => None,
            },
        }
    }

    /// Stream `i`'s active time in the window that began at `base_ns`: up to its last byte,
    /// and for a sender still running when the senders were told to stop, up to that
    /// moment: the window it was asked to send, time blocked on a full socket buffer at the
    /// end included.
    fn stream_duration(&self, i: usize, c: &StreamCounters, base_ns: u64) -> u64 {
        let last = c.last_ns.load(Relaxed).saturating_sub(1);
        let mut dur = last.saturating_sub(base_ns);
        if let Some((at, running)) = &self.stop {
            if running.get(i).copied().unwrap_or(false) {
                dur = dur.max(at.saturating_sub(base_ns));
            }
        }
        dur
    }

    fn build_report(
        &self,
        outcomes: Vec<Option<StreamOutcome>>,
        profiling: Option<profile::Profiling>,
    ) -> SideReport {
        let sh = &self.shared;
        let fin_sample = sh.sample();
        let (base_sample, base_cpu) = sh.window.baseline_or(&fin_sample, |w| sh.warn(w));
        let (fin, base) = (&fin_sample.counters, &base_sample.counters);
        let base_ns = base_sample.at_ns;
        let (end_ns, end_cpu) = self.end.clone().unwrap_or((fin_sample.at_ns, None));
        let mut warnings = sh.warnings.lock().map(|w| w.clone()).unwrap_or_default();
        let udp = sh.transport == Transport::Udp;
        let mut streams = Vec::new();
        let mut proc_cpu: Option<ProcessCpu> = None;
        let mut udp_total: Option<UdpRxReport> = None;
        let mut tx_last = 0u64;
        let mut rx_last = 0u64;
        let mut tx_blocked: Option<u64> = None;
        for (i, ((setup, c), outcome)) in sh.streams.iter().zip(outcomes).enumerate() {
            let outcome = outcome.unwrap_or_default();
            meter::fold_thread_end(
                setup.index,
                outcome.error.as_deref(),
                &outcome.warnings,
                outcome.cpu.as_ref(),
                &mut warnings,
                &mut proc_cpu,
            );
            let dur = self.stream_duration(i, c, base_ns);
            if setup.role == StreamRole::Tx {
                tx_last = tx_last.max(dur);
                if !udp {
                    let b = fin.blocked[i].saturating_sub(base.blocked[i]).min(dur);
                    tx_blocked = Some(tx_blocked.unwrap_or(0).max(b));
                }
            } else {
                rx_last = rx_last.max(dur);
            }
            let report = self.stream_report(i, (fin, base), dur, outcome, &mut warnings);
            if let Some(u) = &report.udp_rx {
                add_udp_rx(udp_total.get_or_insert_with(UdpRxReport::default), u);
            }
            streams.push(report);
        }
        let is_tx = |i: usize| sh.streams[i].0.role == StreamRole::Tx;
        let is_rx = |i: usize| !is_tx(i);
        let retransmits = if udp {
            None
        } else {
            retransmits(fin, base, is_tx)
        };
        let totals = Totals {
            duration_ns: end_ns.saturating_sub(base_ns),
            tx_bytes: diff(&fin.bytes, &base.bytes, is_tx),
            rx_bytes: diff(&fin.bytes, &base.bytes, is_rx),
            tx_calls: Some(diff(&fin.calls, &base.calls, is_tx)),
            rx_calls: Some(diff(&fin.calls, &base.calls, is_rx)),
            tx_duration_ns: tx_last,
            rx_duration_ns: rx_last,
            tx_blocked_ns: tx_blocked,
            tx_packets: udp.then(|| diff(&fin.packets, &base.packets, is_tx)),
            rx_packets: udp.then(|| diff(&fin.packets, &base.packets, is_rx)),
            retransmits,
            udp_rx: udp_total,
        };
        let cpu = meter::window_cpu(base_cpu.as_ref(), end_cpu.as_ref(), &mut warnings);
        if proc_cpu.is_none() {
            warnings.push(
                "linerate's own CPU time not measured: getrusage(RUSAGE_THREAD) failed".into(),
            );
        }
        if sh.transport == Transport::Quic {
            warnings.push(QUIC_OWN_CPU.into());
        }
        let profile = profiling.and_then(|p| {
            p.finish(base_ns, end_ns, base_cpu.as_ref().zip(end_cpu.as_ref()))
                .map_err(|w| warnings.push(w))
                .ok()
        });
        SideReport {
            role: self.cfg.role,
            host: self.cfg.host.clone(),
            streams,
            intervals: Vec::new(),
            totals,
            cpu,
            process_cpu: proc_cpu,
            host_counters: self.host_counters(),
            interface: self.interface.clone(),
            control_segments: self.control_segments(),
            profile,
            warnings,
        }
    }
}

/// The raw-frame senders of the streams (`--raw-frames`, or one a stream brought), by
/// stream position; opened before the clock starts, since resolving the next hop runs `ip`
/// and `tc`.
#[allow(clippy::type_complexity)]
fn open_raw_senders(
    cfg: &EngineConfig,
    streams: &mut [StreamSetup],
) -> Vec<Option<Result<rawgen::RawSender, String>>> {
    streams
        .iter_mut()
        .map(|s| match (&s.socket, s.role) {
            _ if s.raw.is_some() => s.raw.take(),
            (DataSocket::Udp(u), StreamRole::Tx) if cfg.raw_frames => {
                Some(rawgen::RawSender::open(
                    u,
                    (cfg.write_size as usize).max(linerate_wire::probe::LEN),
                    cfg.raw_tx,
                ))
            }
            _ => None,
        })
        .collect()
}

/// The interface toward the peer of the first stream, for host counters and interface
/// facts; none (with a warning) when no route names one.
fn peer_interface(streams: &[StreamSetup], warnings: &mut Vec<String>) -> Option<String> {
    let s = streams.first()?;
    let peer = match &s.socket {
        DataSocket::Tcp(t) => t.peer_addr(),
        DataSocket::Udp(u) => u.peer_addr(),
        DataSocket::Quic(q) => q.peer_addr(),
    };
    match peer.and_then(|p| sys::iface::route_interface(p.ip())) {
        Ok(i) => Some(i),
        Err(e) => {
            warnings.push(format!(
                "interface toward the peer not found ({e}): no interface counters"
            ));
            None
        }
    }
}

/// Each stream's local and remote address, as text.
fn stream_addrs(streams: &[StreamSetup]) -> Vec<(Option<String>, Option<String>)> {
    streams
        .iter()
        .map(|s| match &s.socket {
            DataSocket::Tcp(t) => (t.local_addr().ok(), t.peer_addr().ok()),
            DataSocket::Udp(u) => (u.local_addr().ok(), u.peer_addr().ok()),
            DataSocket::Quic(q) => (q.local_addr().ok(), q.peer_addr().ok()),
        })
        .map(|(l, p)| (l.map(|a| a.to_string()), p.map(|a| a.to_string())))
        .collect()
}

/// Adds one UDP receiver's figures to the side's total: counts summed, the worst jitter,
/// the one-way delays merged.
fn add_udp_rx(t: &mut UdpRxReport, u: &UdpRxReport) {
    t.packets += u.packets;
    t.lost += u.lost;
    t.duplicates += u.duplicates;
    t.reordered += u.reordered;
    t.jitter_ns = t.jitter_ns.max(u.jitter_ns);
    let delays: Vec<_> = t.one_way_delay.iter().chain(&u.one_way_delay).collect();
    t.one_way_delay = delay::merge(&delays);
}

/// The retransmissions of the sending streams (`is_tx`) over the window, from TCP_INFO;
/// none when no sending stream had it at both ends of the window.
fn retransmits(fin: &Snapshot, base: &Snapshot, is_tx: impl Fn(usize) -> bool) -> Option<u64> {
    let mut any = false;
    let mut total = 0u64;
    for i in (0..fin.retrans.len()).filter(|i| is_tx(*i)) {
        if let (Some(a), Some(b)) = (fin.retrans[i], base.retrans[i]) {
            any = true;
            total += u64::from(a.saturating_sub(b));
        }
    }
    any.then_some(total)
}

/// What the kernel says about a data socket at the end of the test.
struct SocketFacts {
    sndbuf: Option<u32>,
    rcvbuf: Option<u32>,
    tcp_info: Option<linerate_wire::report::TcpInfoReport>,
    mss: Option<u32>,
    congestion: Option<String>,
}

/// SO_SNDBUF and SO_RCVBUF as the kernel granted them.
pub(crate) fn socket_bufs(s: &socket2::SockRef<'_>) -> (Option<u32>, Option<u32>) {
    (
        s.send_buffer_size()
            .ok()
            .and_then(|v| u32::try_from(v).ok()),
        s.recv_buffer_size()
            .ok()
            .and_then(|v| u32::try_from(v).ok()),
    )
}

fn socket_facts(setup: &StreamSetup, warnings: &mut Vec<String>) -> SocketFacts {
    match &setup.socket {
        DataSocket::Tcp(t) => {
            let s = socket2::SockRef::from(t.as_ref());
            let tcp_info = match sys::tcp_info::read_tcp_info(t.as_sock()) {
                Ok(i) => Some(i),
                Err(e) => {
                    let w = format!("TCP_INFO not readable: {e}");
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                    None
                }
            };
            let (sndbuf, rcvbuf) = socket_bufs(&s);
            SocketFacts {
                sndbuf,
                rcvbuf,
                tcp_info,
                mss: sys::net::opt::mss(&s).ok(),
                congestion: sys::net::opt::congestion(&s).ok().and_then(|c| {
                    sys::sockets::congestion_name(&c)
                        .map_err(|w| {
                            if !warnings.contains(&w) {
                                warnings.push(w);
                            }
                        })
                        .ok()
                }),
            }
        }
        DataSocket::Udp(u) => {
            let (sndbuf, rcvbuf) = socket_bufs(&socket2::SockRef::from(u.as_ref()));
            SocketFacts {
                sndbuf,
                rcvbuf,
                tcp_info: None,
                mss: None,
                congestion: None,
            }
        }
        DataSocket::Quic(_) => SocketFacts {
            sndbuf: None,
            rcvbuf: None,
            tcp_info: None,
            mss: None,
            congestion: Some("cubic".into()),
        },
    }
}

/// The stream figures of one interval; TCP_INFO gives the senders' RTT and window now.
fn interval_report(sh: &Shared, a: &Snapshot, b: &Snapshot) -> IntervalReport {
    let udp = sh.transport == Transport::Udp;
    let is_tx = |i: usize| sh.streams[i].0.role == StreamRole::Tx;
    let is_rx = |i: usize| !is_tx(i);
    let has_rx = (0..sh.streams.len()).any(is_rx);
    let mut retrans = None;
    let mut rtt_sum = 0u64;
    let mut rtt_n = 0u64;
    let mut cwnd = None;
    if !udp {
        for (i, (setup, _)) in sh.streams.iter().enumerate() {
            if setup.role != StreamRole::Tx {
                continue;
            }
            if let (Some(x), Some(y)) = (b.retrans[i], a.retrans[i]) {
                *retrans.get_or_insert(0u64) += u64::from(x.saturating_sub(y));
            }
            if let DataSocket::Tcp(t) = &setup.socket {
                if let Ok(info) = sys::tcp_info::read_tcp_info(t.as_sock()) {
                    rtt_sum += u64::from(info.rtt_us);
                    rtt_n += 1;
                    *cwnd.get_or_insert(0u64) += u64::from(info.snd_cwnd) * u64::from(info.snd_mss);
                }
            }
        }
    }
    IntervalReport {
        tx_bytes: diff(&b.bytes, &a.bytes, is_tx),
        rx_bytes: diff(&b.bytes, &a.bytes, is_rx),
        tx_packets: udp.then(|| diff(&b.packets, &a.packets, is_tx)),
        rx_packets: (udp && has_rx).then(|| diff(&b.packets, &a.packets, is_rx)),
        rx_lost: (udp && has_rx).then(|| diff(&b.lost, &a.lost, is_rx)),
        retransmits: retrans,
        rtt_us: (rtt_n > 0).then(|| u32::try_from(rtt_sum / rtt_n).unwrap_or(u32::MAX)),
        cwnd_bytes: cwnd,
        tx_blocked_ns: (!udp && (0..sh.streams.len()).any(is_tx)).then(|| {
            (0..sh.streams.len())
                .filter(|&i| is_tx(i))
                .map(|i| b.blocked[i].saturating_sub(a.blocked[i]))
                .max()
                .unwrap_or(0)
        }),
        ..IntervalReport::default()
    }
}
