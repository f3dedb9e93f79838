//! One TCP connection, packet by packet: Wireshark's per-segment flags (so that counts can
//! be checked against `tshark`), tcptrace's RTT samples (checked against `tcptrace -r`),
//! and linerate's own detectors (delayed-ACK stalls, receive-window-limited time,
//! application-limited time, loss recovery).
//!
//! Both directions are tracked by [`Dir`]. A direction's *data* facts (retransmissions, RTT
//! of its segments, where its transfer time went) are updated from its own packets and from
//! the ACKs the other direction sends; a direction's *ACK* facts (duplicate ACKs, SACK blocks,
//! windows it advertised) from its own packets.

use linerate_wire::capture::{tcp_flags as F, TcpSegment};

use super::{AnalyzeOptions, GraphEvent, GraphKind, Period, PeriodKind};
use crate::model::trace::{
    AckDelayStats, Evidence, Finding, Rfc6349, RttStats, TcpConnection, TcpDirection, TimeShares,
    WindowStats,
};

/// An ACK that finally covers a segment after this much more than the minimum RTT is a
/// candidate delayed ACK (Linux delays at least 40 ms, `TCP_DELACK_MIN`; other stacks 100 to
/// 200 ms; the PowerBook ttcp report's receiver about 10 ms). 5 ms is far above scheduling noise on a LAN.
pub const DELAYED_ACK_MIN_MS: f64 = 5.0;
/// ... and this fraction of the minimum RTT, so that the jitter of a long path is not taken
/// for a delayed ACK.
pub const DELAYED_ACK_MIN_RTT_FRACTION: f64 = 0.25;
/// The sender must send new data within this much (plus two minimum RTTs, for a capture at
/// the receiver) of the delayed ACK for the wait to count as a stall: it had data to send.
pub const STALL_RESUME_MS: f64 = 2.0;
/// Findings: a delayed-ACK finding needs at least this many stalls or this share of time.
pub const DELAYED_ACK_MIN_STALLS: u64 = 3;
/// Share of the transfer time (percent) above which a delayed-ACK finding is reported.
pub const DELAYED_ACK_MIN_SHARE: f64 = 1.0;
/// Receive-window-limited finding: share of the transfer time, percent.
pub const RWND_LIMITED_MIN_SHARE: f64 = 20.0;
/// Application-limited finding: share of the transfer time, percent.
pub const APP_LIMITED_MIN_SHARE: f64 = 50.0;
/// Zero-window finding: share of the transfer time the window stayed closed, percent.
pub const ZERO_WINDOW_MIN_SHARE: f64 = 1.0;
/// Loss-recovery finding: share of the transfer time, percent.
pub const LOSS_RECOVERY_MIN_SHARE: f64 = 5.0;
/// Wireshark's out-of-order threshold when the handshake's RTT is unknown, ns.
const OOO_DEFAULT_NS: u64 = 3_000_000;
/// Wireshark's window for a fast retransmission after the last duplicate ACK, ns.
const FAST_RETRANS_NS: u64 = 20_000_000;
/// RFC 6349's metrics need a transfer: at least this many data segments in the direction.
pub const RFC6349_MIN_DATA_PACKETS: u64 = 10;
/// Cap of the per-direction records kept for graphs and series.
pub const GRAPH_EVENTS_CAP: usize = 200_000;
const WINDOW_CHANGES_CAP: usize = 65_536;
const ACK_DELAYS_CAP: usize = 1_000_000;
const PERIODS_CAP: usize = 20_000;
const MS: f64 = 1e6;

// Wireshark's per-segment analysis flags (subset).
const TA_RETRANS: u32 = 0x1;
const TA_LOST: u32 = 0x2;
const TA_ACK_LOST: u32 = 0x4;
const TA_KEEP_ALIVE: u32 = 0x8;
const TA_DUP_ACK: u32 = 0x10;
const TA_ZERO_WINDOW: u32 = 0x20;
const TA_ZWP: u32 = 0x40;
const TA_ZWP_ACK: u32 = 0x80;
const TA_KEEP_ALIVE_ACK: u32 = 0x100;
const TA_OOO: u32 = 0x200;
const TA_FAST_RETRANS: u32 = 0x400;
const TA_WINDOW_UPDATE: u32 = 0x800;
const TA_SPURIOUS: u32 = 0x1000;

fn gt_seq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
fn lt_seq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
fn le_seq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

/// Turns 32-bit sequence numbers of one direction into 64-bit offsets from its first one.
#[derive(Debug, Clone, Copy, Default)]
struct Unwrap {
    base: Option<(u32, u64)>,
}

impl Unwrap {
    fn rel(&mut self, seq: u32) -> u64 {
        match self.base {
            None => {
                // The first number seen is offset 1: room for a SYN before it.
                self.base = Some((seq, 1));
                1
            }
            Some((abs, rel)) => {
                let d = i64::from(seq.wrapping_sub(abs) as i32);
                let r = (rel as i64 + d).max(0) as u64;
                if r > rel {
                    self.base = Some((seq, r));
                }
                r
            }
        }
    }
    fn set_syn(&mut self, isn: u32) {
        if self.base.is_none() {
            self.base = Some((isn, 0));
        }
    }
}

/// A segment in tcptrace's list: [start, end) of sequence space, last (re)send time.
#[derive(Debug, Clone, Copy)]
struct TraceSeg {
    start: u64,
    end: u64,
    time: u64,
    retrans: u32,
    acked: bool,
    /// A SYN or FIN without data: its sample is not a data RTT (RFC 6349's baseline).
    ctl: bool,
}

/// Wireshark's state for one direction (`tcp_analyze_seq_info` and friends).
#[derive(Debug, Clone, Copy)]
struct WsState {
    nextseq: u32,
    nextseq_time: u64,
    maxseqtobeacked: u32,
    lastack: u32,
    lastack_time: u64,
    window: u32,
    dupacknum: i32,
    lastsegmentflags: u32,
}

impl Default for WsState {
    fn default() -> Self {
        WsState {
            nextseq: 0,
            nextseq_time: 0,
            maxseqtobeacked: 0,
            lastack: 0,
            lastack_time: 0,
            window: u32::MAX,
            dupacknum: 0,
            lastsegmentflags: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Welford {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Welford {
    fn add(&mut self, x: f64) {
        self.n += 1;
        if self.n == 1 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }
}

/// The flags Wireshark sets from a segment's own direction `fw` and the reverse one `rev`
/// (zero window and its probes, lost segment, keep-alive, window update, duplicate ACK),
/// the first of the exclusive ones winning; `fw`'s duplicate ACK count follows.
fn forward_flags(s: &TcpSegment, window: u32, fw: &mut WsState, rev: &WsState) -> u32 {
    let (seq, ack, seglen, flags) = (s.seq, s.ack, s.payload_len, s.flags);
    let mut ta = 0u32;
    let sfr = flags & (F::SYN | F::FIN | F::RST);
    if seglen == 1 && seq == fw.nextseq && rev.window == 0 {
        ta |= TA_ZWP;
        return ta;
    }
    if window == 0 && sfr == 0 {
        ta |= TA_ZERO_WINDOW;
    }
    if fw.nextseq != 0 && gt_seq(seq, fw.nextseq) && flags & F::RST == 0 {
        ta |= TA_LOST;
    }
    if seglen <= 1 && seq == fw.nextseq.wrapping_sub(1) && flags & (F::SYN | F::FIN | F::RST) == 0 {
        ta |= TA_KEEP_ALIVE;
    }
    if seglen == 0
        && window != 0
        && window != fw.window
        && seq == fw.nextseq
        && ack == fw.lastack
        && sfr == 0
    {
        ta |= TA_WINDOW_UPDATE;
    }
    if seglen == 0
        && window != 0
        && window == fw.window
        && seq == fw.nextseq
        && ack == fw.lastack
        && rev.lastsegmentflags & TA_KEEP_ALIVE != 0
        && sfr == 0
    {
        ta |= TA_KEEP_ALIVE_ACK;
        return ta;
    }
    if seglen == 0
        && window == 0
        && window == fw.window
        && seq == fw.nextseq
        && ack == fw.lastack
        && rev.lastsegmentflags & TA_ZWP != 0
        && sfr == 0
    {
        ta |= TA_ZWP_ACK;
        return ta;
    }
    if seglen == 0
        && window != 0
        && window == fw.window
        && seq == fw.nextseq
        && ack == fw.lastack
        && sfr == 0
    {
        fw.dupacknum = if fw.dupacknum == -1 {
            1
        } else {
            fw.dupacknum + 1
        };
        ta |= TA_DUP_ACK;
    }
    ta
}

/// The ACK delays' percentiles and histogram (bounds in ms; the last, infinite, written
/// as -1), of `v`, not empty.
fn ack_delay_stats(mut v: Vec<f64>) -> AckDelayStats {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let bounds = [
        1.0,
        2.0,
        5.0,
        10.0,
        20.0,
        50.0,
        100.0,
        200.0,
        500.0,
        f64::INFINITY,
    ];
    let mut hist: Vec<(f64, u64)> = bounds.iter().map(|b| (*b, 0)).collect();
    for x in &v {
        if let Some(h) = hist.iter_mut().find(|h| *x <= h.0) {
            h.1 += 1;
        }
    }
    // JSON has no infinity: the last bucket's bound is written as -1.
    if let Some(last) = hist.last_mut() {
        last.0 = -1.0;
    }
    AckDelayStats {
        samples: v.len() as u64,
        p50_ms: q(0.5),
        p90_ms: q(0.9),
        max_ms: v[v.len() - 1],
        histogram: hist,
    }
}

/// One figure behind a finding.
fn ev(metric: &str, value: f64, unit: &str) -> Evidence {
    Evidence {
        metric: metric.to_string(),
        value,
        unit: unit.to_string(),
    }
}

/// The counters of one direction (what [`TcpDirection`] reports without derivation).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    packets: u64,
    data_packets: u64,
    pure_acks: u64,
    bytes: u64,
    retransmissions: u64,
    fast_retransmissions: u64,
    spurious_retransmissions: u64,
    retransmitted_bytes: u64,
    out_of_order: u64,
    lost_segments: u64,
    duplicate_acks: u64,
    sack_packets: u64,
    sack_blocks: u64,
    zero_windows: u64,
    window_probes: u64,
    mss: Option<u16>,
    window_scale: Option<u8>,
}

impl Counters {
    /// Counts one segment of this direction with the Wireshark flags `ta` it got.
    fn count(&mut self, s: &TcpSegment, ta: u32) {
        let len = s.payload_len;
        self.packets += 1;
        if len > 0 {
            self.data_packets += 1;
            self.bytes += u64::from(len);
        } else if s.flags & (F::SYN | F::FIN | F::RST) == 0 {
            self.pure_acks += 1;
        }
        if ta & (TA_RETRANS | TA_FAST_RETRANS | TA_SPURIOUS) != 0 {
            self.retransmissions += 1;
            self.retransmitted_bytes += u64::from(len);
        }
        let flagged = [
            (TA_FAST_RETRANS, &mut self.fast_retransmissions),
            (TA_SPURIOUS, &mut self.spurious_retransmissions),
            (TA_OOO, &mut self.out_of_order),
            (TA_LOST, &mut self.lost_segments),
            (TA_DUP_ACK, &mut self.duplicate_acks),
            (TA_ZERO_WINDOW, &mut self.zero_windows),
            (TA_ZWP, &mut self.window_probes),
        ];
        for (flag, n) in flagged {
            if ta & flag != 0 {
                *n += 1;
            }
        }
        let sacks = s.options.sack_blocks().len() as u64;
        if sacks > 0 {
            self.sack_packets += 1;
            self.sack_blocks += sacks;
        }
    }
}

/// One direction of a connection: what every direction needs (counters, Wireshark's and
/// tcptrace's state, the window it advertised). What only a direction that sends data
/// needs is [`Data`], allocated at its first payload byte.
#[derive(Debug, Default)]
pub(crate) struct Dir {
    out: Counters,
    ws: WsState,
    seq: Unwrap,
    syn_seen: bool,
    ws_offer: Option<u8>,
    // tcptrace RTT
    segs: std::collections::VecDeque<TraceSeg>,
    acked_max_time: u64,
    /// Highest acknowledgement of this direction's sequence space: a segment below it is
    /// a retransmission of acknowledged data (Karn: no sample from it).
    acked_high: u64,
    rtt: Welford,
    ambiguous: u64,
    // window this direction advertised
    win_last: Option<(u64, u64)>,
    win_area: f64,
    win_time: u64,
    win_min: u64,
    win_max: u64,
    win_changes: Vec<(u64, u64)>,
    large_segments: u64,
    data: Option<Box<Data>>,
}

/// Most gaps in a direction's sequence space remembered (to count bytes that fill them
/// later once); beyond it the lowest gap is forgotten and bytes that fill it later are not
/// counted as seen.
const HOLES_CAP: usize = 1024;

/// The state of a direction that carried data: its sequence space, the detectors.
#[derive(Debug, Default)]
struct Data {
    rtt_data_min: Option<f64>,
    rtt_by_second: std::collections::BTreeMap<u64, (f64, u64)>,
    // data and ACK state in this direction's sequence space (relative)
    data_low: u64,
    data_high: u64,
    /// Distinct payload bytes seen (each sequence number once).
    seen_bytes: u64,
    /// Gaps below `data_high` no segment has covered yet, in order.
    holes: Vec<(u64, u64)>,
    snd_una: u64,
    right_edge: Option<u64>,
    first_data_ns: u64,
    last_data_ns: u64,
    last_new_data_ns: u64,
    max_in_flight_bytes: u64,
    // detectors
    recovery: Option<(u64, u64)>,
    loss_episodes: u64,
    t_rwnd: u64,
    t_app: u64,
    t_app_pending: u64,
    t_loss: u64,
    t_send: u64,
    t_stall: u64,
    stalls: u64,
    stall_excess_ms: Vec<f64>,
    pending_stall: Option<(u64, u64, f64)>,
    ack_delays: Vec<f64>,
    zero_window_since: Option<u64>,
    t_zero_window: u64,
    zero_windows_seen: u64,
    last_event_ns: Option<u64>,
    rwnd_open: Option<u64>,
    mss: u64,
    graph: Vec<GraphEvent>,
    graph_full: bool,
    /// The smallest RTT sample so far (any segment's, the handshake's too), ms.
    rtt_min_ms: f64,
    periods: Vec<Period>,
}

/// What a direction's time-sequence graph needs, at the end.
#[derive(Debug, Default)]
pub(crate) struct DirGraph {
    /// Events in capture order.
    pub(crate) events: Vec<GraphEvent>,
    /// Detector periods.
    pub(crate) periods: Vec<Period>,
    /// Events were dropped at a cap.
    pub(crate) truncated: bool,
}

/// A TCP connection being analysed. Its first packet is kept as it came; the state is
/// allocated at the second (or at the end), so that a capture of a million single SYNs
/// costs a few hundred bytes per connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) a: (std::net::IpAddr, u16),
    pub(crate) b: (std::net::IpAddr, u16),
    index: u32,
    first_ns: u64,
    graph: bool,
    first: Option<(u64, bool, TcpSegment)>,
    state: Option<Box<ConnState>>,
}

impl Conn {
    pub(crate) fn new(
        index: u32,
        a: (std::net::IpAddr, u16),
        b: (std::net::IpAddr, u16),
        t: u64,
        graph: bool,
    ) -> Conn {
        Conn {
            a,
            b,
            index,
            first_ns: t,
            graph,
            first: None,
            state: None,
        }
    }

    /// The full state, with the first packet fed to it.
    fn take_state(&mut self, budget: &mut usize) -> Box<ConnState> {
        let mut st = match self.state.take() {
            Some(st) => st,
            None => Box::new(ConnState::new(
                self.index,
                self.a,
                self.b,
                self.first_ns,
                self.graph,
            )),
        };
        if let Some((t, from_a, seg)) = self.first.take() {
            st.packet(t, from_a, &seg, budget);
        }
        st
    }

    fn state(&mut self, budget: &mut usize) -> &mut ConnState {
        let st = self.take_state(budget);
        self.state.insert(st)
    }

    /// Feeds one segment; `from_a` says which way it went.
    pub(crate) fn packet(&mut self, t: u64, from_a: bool, s: &TcpSegment, budget: &mut usize) {
        if self.state.is_none() && self.first.is_none() {
            self.first = Some((t, from_a, *s));
            return;
        }
        self.state(budget).packet(t, from_a, s, budget);
    }

    /// A SYN (without ACK) that opens a new connection on the same ports.
    pub(crate) fn is_new_syn(
        &mut self,
        from_a: bool,
        seg: &TcpSegment,
        budget: &mut usize,
    ) -> bool {
        seg.has(F::SYN) && !seg.has(F::ACK) && self.state(budget).is_new_syn(from_a, seg)
    }

    /// The connection's number.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// What orders connections by size: payload bytes, then packets (both directions).
    pub(crate) fn size(&self) -> (u64, u64) {
        match (&self.state, &self.first) {
            (Some(st), _) => (
                st.dirs[0].out.bytes + st.dirs[1].out.bytes,
                st.dirs[0].out.packets + st.dirs[1].out.packets,
            ),
            (None, Some((_, _, s))) => (u64::from(s.payload_len), 1),
            (None, None) => (0, 0),
        }
    }

    /// The connection's record, the graphs' data, and its segments larger than the MSS.
    pub(crate) fn finish(
        mut self,
        capture_start_ns: u64,
        opts: &AnalyzeOptions,
        v6: bool,
        budget: &mut usize,
    ) -> (TcpConnection, [DirGraph; 2], u64) {
        let st = self.take_state(budget);
        let large = st.large_segments();
        let (rec, g) = st.finish(capture_start_ns, opts, v6);
        (rec, g, large)
    }
}

/// The full state of a connection.
#[derive(Debug)]
pub(crate) struct ConnState {
    pub(crate) index: u32,
    pub(crate) a: (std::net::IpAddr, u16),
    pub(crate) b: (std::net::IpAddr, u16),
    first_ns: u64,
    last_ns: u64,
    idle_max_ns: u64,
    syn_ns: Option<u64>,
    synack_seen: bool,
    first_rtt_ns: Option<u64>,
    fin: [bool; 2],
    rst: bool,
    pub(crate) dirs: [Dir; 2],
    graph: bool,
    pub(crate) closed_at: Option<u64>,
}

impl ConnState {
    fn new(
        index: u32,
        a: (std::net::IpAddr, u16),
        b: (std::net::IpAddr, u16),
        t: u64,
        graph: bool,
    ) -> ConnState {
        ConnState {
            index,
            a,
            b,
            first_ns: t,
            last_ns: t,
            idle_max_ns: 0,
            syn_ns: None,
            synack_seen: false,
            first_rtt_ns: None,
            fin: [false; 2],
            rst: false,
            dirs: [Dir::default(), Dir::default()],
            graph,
            closed_at: None,
        }
    }

    /// True once both FINs or a RST were seen.
    pub(crate) fn is_closed(&self) -> bool {
        self.rst || (self.fin[0] && self.fin[1])
    }

    /// A SYN (without ACK) whose ISN differs from the one this connection started with: a
    /// new connection on the same ports.
    pub(crate) fn is_new_syn(&self, from_a: bool, seg: &TcpSegment) -> bool {
        seg.has(F::SYN) && !seg.has(F::ACK) && {
            let d = &self.dirs[usize::from(!from_a)];
            match d.seq.base {
                Some((abs, 0)) => abs != seg.seq,
                _ => self.is_closed(),
            }
        }
    }

    fn scale_of(&self, i: usize) -> u32 {
        let (d, o) = (&self.dirs[i], &self.dirs[1 - i]);
        match (d.ws_offer, o.ws_offer) {
            (Some(s), Some(_)) => u32::from(s.min(14)),
            _ => 0,
        }
    }

    /// Feeds one segment; `from_a` says which way it went. `budget` is what is left of the
    /// capture's graph events.
    pub(crate) fn packet(&mut self, raw_t: u64, from_a: bool, s: &TcpSegment, budget: &mut usize) {
        // Wireshark's flags use the capture's own times, even when they go back (its time
        // differences are unsigned: a segment from before the last one is then no
        // out-of-order or fast retransmission); durations and detectors take them as equal.
        let t = raw_t.max(self.last_ns);
        let f = usize::from(!from_a);
        let r = 1 - f;
        if t > self.last_ns {
            self.idle_max_ns = self.idle_max_ns.max(t - self.last_ns);
        }
        self.last_ns = t;
        self.dirs[0].advance(t);
        self.dirs[1].advance(t);

        let window = self.handshake(t, f, s);
        let ta = self.wireshark(raw_t, f, s, window);
        let syn = s.has(F::SYN);
        let ack = s.has(F::ACK);
        let len = s.payload_len;
        let d = &mut self.dirs[f];
        d.out.count(s, ta);
        // The window this direction advertises (for its own receiving).
        if !syn || ack {
            d.window_sample(t, u64::from(window));
        }

        // Sequence space of this direction's data.
        let start = d.seq.rel(s.seq);
        let occupies = u64::from(len) + u64::from(syn) + u64::from(s.has(F::FIN));
        let retrans = ta & (TA_RETRANS | TA_FAST_RETRANS) != 0;
        if occupies > 0 {
            d.trace_segment(t, start, start + occupies, len == 0);
        }
        if len > 0 {
            let data_start = start;
            let data_end = start + u64::from(len);
            let peer_mss = self.dirs[r].out.mss;
            let d = &mut self.dirs[f];
            if let Some(m) = peer_mss {
                if len > u32::from(m) {
                    d.large_segments += 1;
                }
            }
            d.data_sent(t, data_start, data_end, retrans, ta & TA_SPURIOUS != 0);
        }

        // The ACK and window this packet carries are about the other direction's data.
        if ack {
            let acked = self.dirs[r].seq.rel(s.ack);
            let pure = len == 0 && s.flags & (F::SYN | F::FIN | F::RST) == 0;
            let mss = self.sender_mss(r);
            let rd = &mut self.dirs[r];
            rd.trace_ack(t, acked);
            rd.ack_received(t, acked, u64::from(window), pure, mss);
        }
        if self.graph {
            self.graph_events(t, f, s, ta, start, budget);
        }
    }

    /// The connection's state from the segment's flags (SYN and its options, the first
    /// RTT, RST, FIN, the close) and the window it advertises, scaled; `f` is its direction.
    fn handshake(&mut self, t: u64, f: usize, s: &TcpSegment) -> u32 {
        let syn = s.has(F::SYN);
        let ack = s.has(F::ACK);
        if syn {
            self.dirs[f].syn_seen = true;
            self.dirs[f].seq.set_syn(s.seq);
            if s.options.mss.is_some() {
                self.dirs[f].out.mss = s.options.mss;
            }
            self.dirs[f].ws_offer = s.options.window_scale;
            if !ack {
                self.syn_ns = Some(t);
            } else {
                self.synack_seen = true;
            }
        }
        if ack && !syn && self.first_rtt_ns.is_none() && self.synack_seen {
            if let Some(sn) = self.syn_ns {
                self.first_rtt_ns = Some(t.saturating_sub(sn));
            }
        }
        if s.has(F::RST) {
            self.rst = true;
        }
        if s.has(F::FIN) {
            self.fin[f] = true;
        }
        if self.is_closed() && self.closed_at.is_none() {
            self.closed_at = Some(t);
        }
        let shift = if syn { 0 } else { self.scale_of(f) };
        let window = u32::from(s.window) << shift;
        if self.dirs[0].syn_seen && self.dirs[1].syn_seen {
            let sc = self.scale_of(f);
            self.dirs[f].out.window_scale = Some(sc as u8);
        }
        window
    }

    /// The graph's events of one segment in direction `f` whose data starts at `start`:
    /// its data (or retransmission), and the ACK and SACK blocks it carries for the other
    /// direction.
    fn graph_events(
        &mut self,
        t: u64,
        f: usize,
        s: &TcpSegment,
        ta: u32,
        start: u64,
        budget: &mut usize,
    ) {
        let r = 1 - f;
        let len = s.payload_len;
        let retrans = ta & (TA_RETRANS | TA_FAST_RETRANS) != 0;
        let d = &mut self.dirs[f];
        if len > 0 {
            d.graph_push(
                budget,
                GraphEvent {
                    t_ns: t,
                    kind: if retrans {
                        GraphKind::Retransmission
                    } else {
                        GraphKind::Data
                    },
                    a: start,
                    b: start + u64::from(len),
                },
            );
        }
        if let (true, Some(rdata)) = (s.has(F::ACK), self.dirs[r].data.as_ref()) {
            let rd_edge = rdata.right_edge.unwrap_or(0);
            let una = rdata.snd_una;
            let kind = if ta & TA_DUP_ACK != 0 {
                GraphKind::DupAck
            } else {
                GraphKind::Ack
            };
            self.dirs[r].graph_push(
                budget,
                GraphEvent {
                    t_ns: t,
                    kind,
                    a: una,
                    b: rd_edge,
                },
            );
            for &(l, rr) in s.options.sack_blocks() {
                let rd = &mut self.dirs[r];
                let (l, rr) = (rd.seq.rel(l), rd.seq.rel(rr));
                rd.graph_push(
                    budget,
                    GraphEvent {
                        t_ns: t,
                        kind: GraphKind::Sack,
                        a: l,
                        b: rr,
                    },
                );
            }
        }
    }

    /// The largest segment the sender of direction `i` may send: the peer's MSS option less
    /// 12 bytes of timestamps, or 1448.
    fn sender_mss(&self, i: usize) -> u64 {
        let peer = self.dirs[1 - i].out.mss.map(u64::from);
        let own = self.dirs[i].out.mss.map(u64::from);
        match (peer, own) {
            (Some(p), Some(o)) => p.min(o).saturating_sub(12).max(1),
            (Some(p), None) | (None, Some(p)) => p.saturating_sub(12).max(1),
            (None, None) => 1448,
        }
    }

    /// Wireshark 4.0's `tcp_analyze_sequence_number`, returning the flags it would set.
    fn wireshark(&mut self, t: u64, f: usize, s: &TcpSegment, window: u32) -> u32 {
        let r = 1 - f;
        let (seq, ack, seglen, flags) = (s.seq, s.ack, s.payload_len, s.flags);
        let rev = self.dirs[r].ws;
        let mut fw = self.dirs[f].ws;
        let mut ta = forward_flags(s, window, &mut fw, &rev);
        if ack != fw.lastack {
            fw.dupacknum = 0;
        }
        let mut rev_upd = rev;
        if rev.maxseqtobeacked != 0 && gt_seq(ack, rev.maxseqtobeacked) && flags & F::ACK != 0 {
            if gt_seq(rev.maxseqtobeacked, rev.nextseq) || rev.maxseqtobeacked != rev.nextseq {
                rev_upd.maxseqtobeacked = rev.nextseq;
                ta |= TA_ACK_LOST;
            } else {
                if rev.dupacknum == 0 {
                    ta |= TA_ACK_LOST;
                }
                rev_upd.dupacknum = -1;
            }
        }
        ta = self.retransmission_flags(t, s, &fw, &rev, ta);
        let mut nextseq = seq.wrapping_add(seglen);
        if flags & (F::SYN | F::FIN) != 0 {
            nextseq = nextseq.wrapping_add(1);
        }
        if (gt_seq(nextseq, fw.nextseq) || fw.nextseq == 0) && ta & TA_ZWP == 0 {
            fw.nextseq = nextseq;
            fw.nextseq_time = t;
        }
        if (seq == fw.maxseqtobeacked || fw.maxseqtobeacked == 0) && ta & TA_ZWP == 0 {
            fw.maxseqtobeacked = fw.nextseq;
        }
        fw.window = window;
        fw.lastack = ack;
        fw.lastack_time = t;
        fw.lastsegmentflags = ta;
        self.dirs[f].ws = fw;
        self.dirs[r].ws.maxseqtobeacked = rev_upd.maxseqtobeacked;
        self.dirs[r].ws.dupacknum = rev_upd.dupacknum;
        ta
    }

    /// The retransmission flags of a segment (spurious, fast, out of order, plain), added
    /// to `ta`: Wireshark's checks in its order, the first that holds wins.
    fn retransmission_flags(
        &self,
        t: u64,
        s: &TcpSegment,
        fw: &WsState,
        rev: &WsState,
        mut ta: u32,
    ) -> u32 {
        let (seq, seglen, flags) = (s.seq, s.payload_len, s.flags);
        if !(seglen > 0 || flags & (F::SYN | F::FIN) != 0) {
            return ta;
        }
        let mut not_advanced = fw.nextseq != 0 && lt_seq(seq, fw.nextseq);
        if ta & TA_KEEP_ALIVE != 0 {
            return ta;
        }
        if seglen > 1 && fw.nextseq.wrapping_sub(1) == seq {
            not_advanced = false;
        }
        // Wireshark 4.0 checks for a spurious retransmission first: data the receiver
        // has already acknowledged.
        if seglen > 0 && rev.lastack != 0 && le_seq(seq.wrapping_add(seglen), rev.lastack) {
            ta |= TA_SPURIOUS;
            return ta;
        }
        // Wireshark's time differences are unsigned: a clock that went back makes them
        // huge, never below a threshold.
        let since_ack = t.wrapping_sub(rev.lastack_time);
        if not_advanced && rev.dupacknum >= 2 && rev.lastack == seq && since_ack < FAST_RETRANS_NS {
            ta |= TA_FAST_RETRANS;
            return ta;
        }
        let since_next = t.wrapping_sub(fw.nextseq_time);
        let thres = self
            .first_rtt_ns
            .filter(|&x| x > 0)
            .unwrap_or(OOO_DEFAULT_NS);
        // The next expected sequence number counts a SYN or FIN as one.
        let next = seq
            .wrapping_add(seglen)
            .wrapping_add(u32::from(flags & (F::SYN | F::FIN) != 0));
        if not_advanced && since_next < thres && fw.nextseq != next {
            ta |= TA_OOO;
            return ta;
        }
        if not_advanced {
            ta |= TA_RETRANS;
        }
        ta
    }

    /// The connection's record and findings.
    pub(crate) fn finish(
        mut self,
        capture_start_ns: u64,
        opts: &AnalyzeOptions,
        v6: bool,
    ) -> (TcpConnection, [DirGraph; 2]) {
        let end = self.last_ns;
        for d in &mut self.dirs {
            d.advance(end);
            d.close_state(end);
        }
        let mut conn = TcpConnection {
            index: self.index,
            a: super::endpoint(self.a),
            b: super::endpoint(self.b),
            start_s: self.first_ns.saturating_sub(capture_start_ns) as f64 / 1e9,
            duration_s: (self.last_ns - self.first_ns) as f64 / 1e9,
            handshake_seen: self.dirs[0].syn_seen && self.dirs[1].syn_seen,
            closed: self.is_closed(),
            reset: self.rst,
            handshake_rtt_ms: self.first_rtt_ns.map(|x| x as f64 / MS),
            idle_max_ms: (self.last_ns > self.first_ns).then(|| self.idle_max_ns as f64 / MS),
            ..TcpConnection::default()
        };
        let duration_ns = self.last_ns - self.first_ns;
        let mut findings = Vec::new();
        let names = ["a_to_b", "b_to_a"];
        let mut outs = [TcpDirection::default(), TcpDirection::default()];
        for (i, name) in names.iter().enumerate() {
            let mss = self.sender_mss(i);
            let d = &mut self.dirs[i];
            outs[i] = d.fill(duration_ns, capture_start_ns, mss, opts, v6);
            if let Some(data) = &d.data {
                findings.extend(data.findings(name, &outs[i], &d.rtt));
            }
        }
        let [o0, o1] = outs;
        conn.a_to_b = o0;
        conn.b_to_a = o1;
        conn.findings = findings;
        let [d0, d1] = self.dirs;
        (conn, [d0.into_graph(), d1.into_graph()])
    }

    /// Segments longer than the peer's MSS: the capture was taken above segmentation
    /// offload (TSO/GSO at a sender, GRO at a receiver).
    pub(crate) fn large_segments(&self) -> u64 {
        self.dirs[0].large_segments + self.dirs[1].large_segments
    }
}

impl Dir {
    /// Draws an event on this direction's graph (only a direction that carried data has
    /// one).
    fn graph_push(&mut self, budget: &mut usize, e: GraphEvent) {
        let Some(d) = self.data.as_mut() else {
            return;
        };
        if d.graph.len() < GRAPH_EVENTS_CAP && *budget > 0 {
            *budget -= 1;
            d.graph.push(e);
        } else {
            d.graph_full = true;
        }
    }

    fn into_graph(self) -> DirGraph {
        match self.data {
            Some(d) => DirGraph {
                events: d.graph,
                periods: d.periods,
                truncated: d.graph_full,
            },
            None => DirGraph::default(),
        }
    }

    fn advance(&mut self, t: u64) {
        if let Some(d) = self.data.as_mut() {
            d.advance(t);
        }
    }

    fn close_state(&mut self, t: u64) {
        if let Some(d) = self.data.as_mut() {
            d.close_state(t);
        }
    }

    fn window_sample(&mut self, t: u64, w: u64) {
        if let Some((t0, w0)) = self.win_last {
            let dt = t.saturating_sub(t0);
            self.win_area += w0 as f64 * dt as f64;
            self.win_time += dt;
            self.win_min = self.win_min.min(w);
            self.win_max = self.win_max.max(w);
        } else {
            self.win_min = w;
            self.win_max = w;
        }
        if self.win_last.map(|x| x.1) != Some(w) && self.win_changes.len() < WINDOW_CHANGES_CAP {
            if self.win_changes.capacity() == 0 {
                // Most connections change their window a few times: no room for more.
                self.win_changes.reserve_exact(2);
            }
            self.win_changes.push((t, w));
        }
        self.win_last = Some((t, w));
    }

    /// tcptrace's `rexmit`/`addseg`: record [start, end) sent at `t`.
    fn trace_segment(&mut self, t: u64, start: u64, end: u64, ctl: bool) {
        if end <= self.acked_high {
            // Everything in it was acknowledged already (a SYN or FIN sent again after its
            // ACK): a retransmission, whose ACK gives no sample (Karn's rule).
            self.acked_max_time = self.acked_max_time.max(t);
            return;
        }
        let mut start = start;
        let mut first = true;
        if start < self.acked_high {
            self.acked_max_time = self.acked_max_time.max(t);
            start = self.acked_high;
            first = false;
        }
        let tail_end = self.segs.back().map_or(0, |s| s.end);
        if self.segs.is_empty() || start >= tail_end {
            if start < self.segs.front().map_or(u64::MAX, |s| s.start) && !self.segs.is_empty() {
                // below everything kept: already acknowledged data sent again
                self.acked_max_time = self.acked_max_time.max(t);
            }
            if self.segs.capacity() == 0 {
                // A connection that never sends data holds one SYN or FIN here.
                self.segs.reserve_exact(1);
            }
            self.segs.push_back(TraceSeg {
                start,
                end,
                time: t,
                retrans: 0,
                acked: false,
                ctl,
            });
            return;
        }
        let front = self.segs.front().map_or(start, |s| s.start);
        if start < front {
            // Retransmits data already acknowledged (and dropped from the list).
            self.acked_max_time = self.acked_max_time.max(t);
            first = false;
        }
        let mut cur = start.max(front);
        let mut new_segs = Vec::new();
        let mut i = self.segs.partition_point(|s| s.end <= cur);
        while cur < end {
            match self.segs.get_mut(i) {
                Some(s) if s.start <= cur => {
                    s.retrans += 1;
                    if first {
                        s.time = t;
                        first = false;
                    }
                    cur = s.end;
                    i += 1;
                }
                Some(s) => {
                    let gap_end = s.start.min(end);
                    new_segs.push(TraceSeg {
                        start: cur,
                        end: gap_end,
                        time: t,
                        retrans: 0,
                        acked: false,
                        ctl,
                    });
                    cur = gap_end;
                }
                None => {
                    new_segs.push(TraceSeg {
                        start: cur,
                        end,
                        time: t,
                        retrans: 0,
                        acked: false,
                        ctl,
                    });
                    cur = end;
                }
            }
        }
        for s in new_segs {
            let at = self.segs.partition_point(|x| x.start < s.start);
            self.segs.insert(at, s);
        }
    }

    /// tcptrace's `ack_in`: an ACK for this direction's data arrived at `t`.
    fn trace_ack(&mut self, t: u64, ack: u64) {
        let mut last_xmit = self.acked_max_time;
        for s in self.segs.iter_mut() {
            if ack <= s.start {
                break;
            }
            last_xmit = last_xmit.max(s.time);
            if s.acked {
                continue;
            }
            s.acked = true;
            if ack == s.end {
                if last_xmit > s.time {
                    // an earlier segment was sent again after this one: no sample
                } else if s.retrans == 0 {
                    let rtt = (t.saturating_sub(s.time)) as f64 / MS;
                    self.rtt.add(rtt);
                    if let (false, Some(d)) = (s.ctl, self.data.as_mut()) {
                        d.rtt_data_min = Some(d.rtt_data_min.map_or(rtt, |m: f64| m.min(rtt)));
                        let sec = t / 1_000_000_000;
                        let e = d.rtt_by_second.entry(sec).or_insert((0.0, 0));
                        e.0 += rtt;
                        e.1 += 1;
                    }
                } else {
                    self.ambiguous += 1;
                }
            }
        }
        while let Some(s) = self.segs.front() {
            if s.end <= ack {
                self.acked_max_time = self.acked_max_time.max(s.time);
                self.segs.pop_front();
            } else {
                break;
            }
        }
        if self.segs.is_empty() && (self.segs.capacity() > 4 || self.segs.capacity() == 1) {
            // A handshake or a transfer that ended: give back what it needed.
            self.segs = std::collections::VecDeque::new();
        }
        self.acked_high = self.acked_high.max(ack);
    }

    fn data_sent(&mut self, t: u64, start: u64, end: u64, retrans: bool, spurious: bool) {
        let d = self.data.get_or_insert_with(|| {
            Box::new(Data {
                data_low: start,
                data_high: start,
                snd_una: start,
                first_data_ns: t,
                last_event_ns: Some(t),
                ..Data::default()
            })
        });
        d.rtt_min_ms = if self.rtt.n > 0 { self.rtt.min } else { 0.0 };
        d.data_sent(t, start, end, retrans, spurious);
    }

    fn ack_received(&mut self, t: u64, ack: u64, window: u64, pure: bool, mss: u64) {
        let rtt_min = (self.rtt.n > 0).then_some(self.rtt.min);
        if let Some(d) = self.data.as_mut() {
            d.ack_received(t, ack, window, pure, mss, rtt_min);
        }
    }

    /// The record of this direction at the end of the capture.
    fn fill(
        &mut self,
        conn_ns: u64,
        capture_start_ns: u64,
        mss: u64,
        opts: &AnalyzeOptions,
        v6: bool,
    ) -> TcpDirection {
        let c = &self.out;
        let mut o = TcpDirection {
            packets: c.packets,
            data_packets: c.data_packets,
            pure_acks: c.pure_acks,
            bytes: c.bytes,
            retransmissions: c.retransmissions,
            fast_retransmissions: c.fast_retransmissions,
            spurious_retransmissions: c.spurious_retransmissions,
            retransmitted_bytes: c.retransmitted_bytes,
            out_of_order: c.out_of_order,
            lost_segments: c.lost_segments,
            duplicate_acks: c.duplicate_acks,
            sack_packets: c.sack_packets,
            sack_blocks: c.sack_blocks,
            zero_windows: c.zero_windows,
            window_probes: c.window_probes,
            mss: c.mss,
            window_scale: c.window_scale,
            ..TcpDirection::default()
        };
        if self.rtt.n > 0 {
            o.rtt = Some(RttStats {
                samples: self.rtt.n,
                min_ms: self.rtt.min,
                avg_ms: self.rtt.mean,
                max_ms: self.rtt.max,
                stddev_ms: (self.rtt.m2 / self.rtt.n as f64).sqrt(),
                ambiguous_acks: self.ambiguous,
            });
        } else if self.ambiguous > 0 {
            o.rtt = Some(RttStats {
                ambiguous_acks: self.ambiguous,
                ..RttStats::default()
            });
        }
        if self.win_last.is_some() {
            o.window = Some(WindowStats {
                min_bytes: self.win_min,
                max_bytes: self.win_max,
                mean_bytes: if self.win_time > 0 {
                    self.win_area / self.win_time as f64
                } else {
                    self.win_max as f64
                },
            });
            let n = self.win_changes.len();
            let step = n.div_ceil(256).max(1);
            o.window_series = self
                .win_changes
                .iter()
                .step_by(step)
                .map(|&(t, w)| (t.saturating_sub(capture_start_ns) as f64 / 1e9, w))
                .collect();
        }
        if let Some(d) = self.data.as_mut() {
            d.fill(&mut o, conn_ns, mss, opts, v6);
        }
        o
    }
}

impl Data {
    fn data_sent(&mut self, t: u64, start: u64, end: u64, retrans: bool, spurious: bool) {
        self.last_data_ns = t;
        self.count_seen(start, end);
        let new_data = end > self.data_high;
        if new_data {
            // Data resumed: the idle time before it was the application's.
            self.t_app += self.t_app_pending;
            self.t_app_pending = 0;
            if let Some((t_ack, _, excess)) = self.pending_stall.take() {
                let min_rtt = self.rtt_min_ms;
                let window_ms = STALL_RESUME_MS + 2.0 * min_rtt;
                if (t.saturating_sub(t_ack)) as f64 / MS <= window_ms {
                    self.stalls += 1;
                    self.t_stall += (excess * MS) as u64;
                    self.stall_excess_ms.push(excess);
                    let start_ns = t_ack.saturating_sub((excess * MS) as u64);
                    self.push_period(PeriodKind::DelayedAck, start_ns, t_ack);
                }
            }
            self.last_new_data_ns = t;
            self.data_high = end;
        }
        if retrans && !spurious && self.recovery.is_none() {
            self.recovery = Some((t, self.data_high));
            self.loss_episodes += 1;
        }
        self.max_in_flight_bytes = self
            .max_in_flight_bytes
            .max(self.data_high.saturating_sub(self.snd_una));
    }

    /// Counts the bytes of [start, end) no earlier segment covered.
    fn count_seen(&mut self, start: u64, end: u64) {
        let start = start.max(self.data_low);
        if end <= start {
            return;
        }
        // Below the highest byte: only what fills a gap is new.
        let below_end = end.min(self.data_high);
        if start < below_end && !self.holes.is_empty() {
            let mut i = self.holes.partition_point(|h| h.1 <= start);
            while i < self.holes.len() {
                let (hs, he) = self.holes[i];
                if hs >= below_end {
                    break;
                }
                let (os, oe) = (hs.max(start), he.min(below_end));
                self.seen_bytes += oe - os;
                match (hs < os, oe < he) {
                    (false, false) => {
                        self.holes.remove(i);
                    }
                    (true, false) => {
                        self.holes[i].1 = os;
                        i += 1;
                    }
                    (false, true) => {
                        self.holes[i].0 = oe;
                        i += 1;
                    }
                    (true, true) => {
                        self.holes[i].1 = os;
                        self.holes.insert(i + 1, (oe, he));
                        i += 2;
                    }
                }
            }
        }
        if end > self.data_high {
            let from = start.max(self.data_high);
            if from > self.data_high {
                if self.holes.len() >= HOLES_CAP {
                    self.holes.remove(0);
                }
                self.holes.push((self.data_high, from));
            }
            self.seen_bytes += end - from;
        }
    }

    fn ack_received(
        &mut self,
        t: u64,
        ack: u64,
        window: u64,
        pure: bool,
        mss: u64,
        rtt_min: Option<f64>,
    ) {
        self.mss = mss;
        self.rtt_min_ms = rtt_min.unwrap_or(0.0);
        let advanced = ack > self.snd_una;
        let covered = ack.saturating_sub(self.snd_una);
        if advanced {
            self.snd_una = ack;
        }
        self.right_edge = Some(ack + window);
        if let Some((start, point)) = self.recovery {
            if self.snd_una >= point {
                self.recovery = None;
                self.push_period(PeriodKind::LossRecovery, start, t);
            }
        }
        if window > 0 {
            if let Some(z) = self.zero_window_since.take() {
                self.t_zero_window += t.saturating_sub(z);
            }
        } else if self.zero_window_since.is_none() {
            self.zero_window_since = Some(t);
            self.zero_windows_seen += 1;
        }
        // A delayed ACK is the receiver holding the ACK of a lone segment (one that does not
        // complete two full ones): the ACK covers at most one MSS and everything outstanding.
        if advanced && pure && self.snd_una >= self.data_high && covered <= mss {
            let min_rtt = self.rtt_min_ms;
            let delay = t.saturating_sub(self.last_data_ns) as f64 / MS;
            let excess = (delay - min_rtt).max(0.0);
            if self.ack_delays.len() < ACK_DELAYS_CAP {
                self.ack_delays.push(excess);
            }
            let thres = DELAYED_ACK_MIN_MS.max(DELAYED_ACK_MIN_RTT_FRACTION * min_rtt);
            self.pending_stall = (excess >= thres).then_some((t, self.last_data_ns, excess));
        }
    }

    /// What held this direction's data during the time since the last packet.
    fn current_state(&self) -> PeriodKind {
        let in_flight = self.data_high.saturating_sub(self.snd_una);
        if self.recovery.is_some() {
            return PeriodKind::LossRecovery;
        }
        if in_flight == 0 {
            return PeriodKind::ApplicationLimited;
        }
        match self.right_edge {
            Some(edge) if edge < self.data_high + self.mss.max(1) => PeriodKind::ReceiveWindow,
            _ => PeriodKind::Sending,
        }
    }

    /// Attributes the time since the last packet to the state the direction was in.
    fn advance(&mut self, t: u64) {
        let Some(last) = self.last_event_ns else {
            self.last_event_ns = Some(t);
            return;
        };
        let dt = t.saturating_sub(last);
        let k = self.current_state();
        match k {
            PeriodKind::LossRecovery => self.t_loss += dt,
            PeriodKind::ReceiveWindow => self.t_rwnd += dt,
            PeriodKind::ApplicationLimited => self.t_app_pending += dt,
            PeriodKind::Sending => self.t_send += dt,
            PeriodKind::DelayedAck => {}
        }
        if k == PeriodKind::ReceiveWindow {
            self.rwnd_open.get_or_insert(last);
        } else if let Some(open) = self.rwnd_open.take() {
            self.push_period(PeriodKind::ReceiveWindow, open, last);
        }
        self.last_event_ns = Some(t);
    }

    fn close_state(&mut self, t: u64) {
        if let Some(open) = self.rwnd_open.take() {
            self.push_period(PeriodKind::ReceiveWindow, open, t);
        }
        if let Some((start, _)) = self.recovery.take() {
            self.push_period(PeriodKind::LossRecovery, start, t);
        }
        if let Some(z) = self.zero_window_since.take() {
            self.t_zero_window += t.saturating_sub(z);
        }
    }

    fn push_period(&mut self, kind: PeriodKind, start_ns: u64, end_ns: u64) {
        if self.periods.len() < PERIODS_CAP && end_ns > start_ns {
            self.periods.push(Period {
                kind,
                start_ns,
                end_ns,
            });
        }
    }

    /// Fills the data figures of `o` at the end of the capture.
    fn fill(
        &mut self,
        o: &mut TcpDirection,
        conn_ns: u64,
        mss: u64,
        opts: &AnalyzeOptions,
        v6: bool,
    ) {
        o.unique_bytes = self.seen_bytes;
        o.sequence_span_bytes = self.data_high.saturating_sub(self.data_low);
        o.max_in_flight_bytes = self.max_in_flight_bytes;
        if o.data_packets > 0 {
            o.data_duration_s =
                Some(self.last_data_ns.saturating_sub(self.first_data_ns) as f64 / 1e9);
        }
        if conn_ns > 0 && o.unique_bytes > 0 {
            o.throughput_bps = Some(o.unique_bytes as f64 * 8.0 / (conn_ns as f64 / 1e9));
        }
        if !self.ack_delays.is_empty() {
            o.ack_delay = Some(ack_delay_stats(std::mem::take(&mut self.ack_delays)));
        }
        let total = self.t_rwnd + self.t_app + self.t_loss + self.t_send;
        if total > 0 {
            let pct = |x: u64| x as f64 * 100.0 / total as f64;
            o.time = Some(TimeShares {
                total_s: total as f64 / 1e9,
                receive_window_limited_percent: pct(self.t_rwnd),
                application_limited_percent: pct(self.t_app),
                loss_recovery_percent: pct(self.t_loss),
                delayed_ack_stall_percent: pct(self.t_stall.min(total)),
                sending_percent: pct(self.t_send),
            });
        }
        if let Some(bb) = opts.link_rate_bps {
            if o.data_packets >= RFC6349_MIN_DATA_PACKETS && bb > 0 {
                o.rfc6349 = Some(self.rfc6349(o, bb, mss, opts, v6));
            }
        }
    }

    /// RFC 6349's figures of this direction's transfer over a bottleneck of `bb` bit/s.
    fn rfc6349(
        &self,
        o: &TcpDirection,
        bb: u64,
        mss: u64,
        opts: &AnalyzeOptions,
        v6: bool,
    ) -> Rfc6349 {
        let overhead = if v6 { 60 } else { 40 };
        let mtu = opts
            .mtu
            .or_else(|| {
                // The MSS in use plus the timestamp option's 12 bytes and headers.
                (mss != 1448 || o.mss.is_some()).then(|| mss as u32 + 12 + overhead)
            })
            .unwrap_or(1500)
            .max(overhead + 1);
        let ideal = bb as f64 / (f64::from(mtu + 38) * 8.0) * f64::from(mtu - 40) * 8.0;
        let actual_s = o.time.as_ref().map(|t| t.total_s).or(o.data_duration_s);
        let ideal_s = o.unique_bytes as f64 * 8.0 / ideal;
        let eff = (o.bytes > 0).then(|| {
            (o.bytes - o.retransmitted_bytes.min(o.bytes)) as f64 * 100.0 / o.bytes as f64
        });
        let base = self.rtt_data_min;
        let per_second: Vec<f64> = self
            .rtt_by_second
            .values()
            .map(|(s, n)| s / *n as f64)
            .collect();
        let avg = (!per_second.is_empty())
            .then(|| per_second.iter().sum::<f64>() / per_second.len() as f64);
        Rfc6349 {
            bottleneck_bps: bb,
            mtu,
            ideal_bps: ideal,
            transfer_time_ratio: actual_s.filter(|a| *a > 0.0).map(|a| a / ideal_s),
            tcp_efficiency_percent: eff,
            buffer_delay_percent: match (avg, base) {
                (Some(a), Some(b)) if b > 0.0 => Some((a - b) / b * 100.0),
                _ => None,
            },
            bdp_bytes: base.map(|b| bb as f64 * b / 1e3 / 8.0),
        }
    }

    /// The detectors' verdicts for this direction's data.
    fn findings(&self, dir: &str, o: &TcpDirection, rtt: &Welford) -> Vec<Finding> {
        let mut out = Vec::new();
        let Some(time) = &o.time else {
            return out;
        };
        let total_ms = time.total_s * 1e3;
        if self.stalls > 0
            && (self.stalls >= DELAYED_ACK_MIN_STALLS
                || time.delayed_ack_stall_percent >= DELAYED_ACK_MIN_SHARE)
        {
            out.push(self.delayed_ack_finding(dir, time, rtt));
        }
        if time.receive_window_limited_percent >= RWND_LIMITED_MIN_SHARE {
            let w = o.max_in_flight_bytes as f64;
            out.push(Finding {
                kind: "receive_window_limited".into(),
                direction: dir.into(),
                message: format!(
                    "the receiver's advertised window held the sender {:.0}% of the transfer (at most {:.0} KiB in flight)",
                    time.receive_window_limited_percent,
                    w / 1024.0
                ),
                count: self.periods.iter().filter(|p| p.kind == PeriodKind::ReceiveWindow).count() as u64,
                time_ms: time.receive_window_limited_percent * total_ms / 100.0,
                share_percent: time.receive_window_limited_percent,
                evidence: vec![
                    ev("receive_window_limited", time.receive_window_limited_percent, "%"),
                    ev("max_in_flight", w, "bytes"),
                    ev("threshold", RWND_LIMITED_MIN_SHARE, "%"),
                ],
            });
        }
        let zero_ms = self.t_zero_window as f64 / MS;
        if self.zero_windows_seen > 0 && zero_ms >= ZERO_WINDOW_MIN_SHARE / 100.0 * total_ms {
            let ms = zero_ms;
            out.push(Finding {
                kind: "zero_window".into(),
                direction: dir.into(),
                message: format!(
                    "the receiver closed its window {} time{} ({:.1} ms in all): it did not read fast enough",
                    self.zero_windows_seen,
                    if self.zero_windows_seen == 1 { "" } else { "s" },
                    ms
                ),
                count: self.zero_windows_seen,
                time_ms: ms,
                share_percent: if total_ms > 0.0 { (ms / total_ms * 100.0).min(100.0) } else { 0.0 },
                evidence: vec![ev("zero_window_time", ms, "ms")],
            });
        }
        if time.loss_recovery_percent >= LOSS_RECOVERY_MIN_SHARE {
            out.push(Finding {
                kind: "loss_recovery".into(),
                direction: dir.into(),
                message: format!(
                    "{} loss recover{} ({} retransmitted segments) took {:.0}% of the transfer",
                    self.loss_episodes,
                    if self.loss_episodes == 1 { "y" } else { "ies" },
                    o.retransmissions,
                    time.loss_recovery_percent
                ),
                count: self.loss_episodes,
                time_ms: time.loss_recovery_percent * total_ms / 100.0,
                share_percent: time.loss_recovery_percent,
                evidence: vec![
                    ev("retransmissions", o.retransmissions as f64, "count"),
                    ev("retransmitted_bytes", o.retransmitted_bytes as f64, "bytes"),
                    ev("threshold", LOSS_RECOVERY_MIN_SHARE, "%"),
                ],
            });
        }
        if time.application_limited_percent >= APP_LIMITED_MIN_SHARE {
            out.push(Finding {
                kind: "application_limited".into(),
                direction: dir.into(),
                message: format!(
                    "nothing was in flight {:.0}% of the transfer: the application (or its send buffer) gave TCP nothing to send",
                    time.application_limited_percent
                ),
                count: 0,
                time_ms: time.application_limited_percent * total_ms / 100.0,
                share_percent: time.application_limited_percent,
                evidence: vec![
                    ev("application_limited", time.application_limited_percent, "%"),
                    ev("threshold", APP_LIMITED_MIN_SHARE, "%"),
                ],
            });
        }
        out
    }

    /// The delayed-ACK stall finding: how often and how long the sender waited for ACKs.
    fn delayed_ack_finding(&self, dir: &str, time: &TimeShares, rtt: &Welford) -> Finding {
        let mut v = self.stall_excess_ms.clone();
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        let stall_ms = self.t_stall as f64 / MS;
        Finding {
            kind: "delayed_ack_stall".into(),
            direction: dir.into(),
            message: format!(
                "delayed ACKs stalled the sender {} time{} for {:.0} ms (median): {:.0}% of the transfer",
                self.stalls,
                if self.stalls == 1 { "" } else { "s" },
                median,
                time.delayed_ack_stall_percent
            ),
            count: self.stalls,
            time_ms: stall_ms,
            share_percent: time.delayed_ack_stall_percent,
            evidence: vec![
                ev("stalls", self.stalls as f64, "count"),
                ev("median_ack_delay", median, "ms"),
                ev("max_ack_delay", v[v.len() - 1], "ms"),
                ev("min_rtt", if rtt.n > 0 { rtt.min } else { 0.0 }, "ms"),
                ev("threshold", DELAYED_ACK_MIN_MS, "ms"),
            ],
        }
    }
}
