//! Packet-trace analysis (`linerate analyze`, and the capture a test takes with
//! `--capture`): per-connection TCP figures and detectors, UDP flows.
//!
//! The analysis is a pure function of the packets fed to [`Analyzer::packet`] in capture
//! order: no I/O, no clock. [`read`] turns a pcap or pcapng stream into those packets without
//! loading the file and [`analyze_reader`] feeds them to an [`Analyzer`];
//! [`crate::model::trace`] is the result, rendered by `export::analyze` (table, CSV) and
//! `export::tsg` (time-sequence graphs as SVG).

use std::collections::HashMap;
use std::net::IpAddr;

use linerate_wire::capture::{Packet, Transport};

pub mod read;
mod tcp;
#[cfg(test)]
mod tests;

use crate::model::trace::{self, AnalysisRecord, Endpoint, OtherFlows, TcpConnection, UdpFlow};

/// Most connections and flows tracked at once; packets of further ones are counted as
/// other and a warning says so (a hostile file cannot make the analysis allocate without
/// bound).
pub const MAX_FLOWS: usize = 1_000_000;
/// Most graph events kept for the whole capture (32 bytes each): the graphs of the largest
/// connections are drawn from them; beyond it graphs are cut and a warning says so.
pub const GRAPH_EVENTS_TOTAL_CAP: usize = 4_000_000;
/// A UDP flow that pauses longer than this counts a gap, ns.
const UDP_GAP_NS: u64 = 10_000_000;

/// What the analysis needs besides the packets.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// The path's bottleneck rate, for RFC 6349's metrics.
    pub link_rate_bps: Option<u64>,
    /// The path MTU for RFC 6349's ideal rate (default: from the MSS seen, else 1500).
    pub mtu: Option<u32>,
    /// Keep what the time-sequence graphs need.
    pub graphs: bool,
    /// Show the N largest connections and the N largest UDP flows in full, the rest summed
    /// (None: all).
    pub top: Option<usize>,
}

/// One thing drawn on a time-sequence graph, in a direction's relative sequence space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphEvent {
    /// Capture time, ns.
    pub t_ns: u64,
    /// What it is.
    pub kind: GraphKind,
    /// Data: first byte; ACK: acknowledged up to; SACK: left edge.
    pub a: u64,
    /// Data: end; ACK: right edge of the window; SACK: right edge.
    pub b: u64,
}

/// Kinds of [`GraphEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphKind {
    /// A data segment.
    Data,
    /// A retransmitted data segment.
    Retransmission,
    /// An ACK (with the window's right edge).
    Ack,
    /// A duplicate ACK.
    DupAck,
    /// A SACK block.
    Sack,
}

/// A stretch of time a detector marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// What held the sender.
    pub kind: PeriodKind,
    /// Start, capture time ns.
    pub start_ns: u64,
    /// End, capture time ns.
    pub end_ns: u64,
}

/// Kinds of [`Period`] (and the states of a direction's transfer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodKind {
    /// Waiting for a delayed ACK.
    DelayedAck,
    /// Data in flight filled the advertised window.
    ReceiveWindow,
    /// Nothing in flight.
    ApplicationLimited,
    /// Recovering from a loss.
    LossRecovery,
    /// Sending within the window.
    Sending,
}

/// What a graph of one direction needs.
#[derive(Debug, Clone)]
pub struct DirectionGraph {
    /// Connection number.
    pub connection: u32,
    /// "a_to_b" or "b_to_a".
    pub direction: &'static str,
    /// "10.0.0.1:40000 -> 10.0.0.2:5301".
    pub title: String,
    /// Capture time of the connection's first packet, ns.
    pub start_ns: u64,
    /// Events in capture order.
    pub events: Vec<GraphEvent>,
    /// Detector periods.
    pub periods: Vec<Period>,
    /// Events were dropped at the cap.
    pub truncated: bool,
}

/// The analysis of one capture, fed packet by packet.
pub struct Analyzer {
    opts: AnalyzeOptions,
    first_ns: Option<u64>,
    last_ns: u64,
    packets: u64,
    analysed: u64,
    other: u64,
    undecodable: u64,
    tcp_index: HashMap<FlowKey, u32>,
    tcp: Vec<tcp::Conn>,
    finished_tcp: Vec<Finished>,
    /// Connections counted in `tcp` and `finished_tcp` and before.
    tcp_seen: u32,
    udp_index: HashMap<(IpAddr, u16, IpAddr, u16), u32>,
    udp: Vec<UdpState>,
    others: OtherFlows,
    graph_budget: usize,
    flows_capped: bool,
    large_segments: u64,
    undecodable_example: Option<String>,
    time_went_back: u64,
    ip_len_beyond_frame: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey(IpAddr, u16, IpAddr, u16);

impl FlowKey {
    /// The same key for both directions; the bool says whether (src, dst) is (lo, hi).
    fn of(src: IpAddr, sp: u16, dst: IpAddr, dp: u16) -> (FlowKey, bool) {
        if (src, sp) <= (dst, dp) {
            (FlowKey(src, sp, dst, dp), true)
        } else {
            (FlowKey(dst, dp, src, sp), false)
        }
    }
}

#[derive(Debug)]
struct UdpState {
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    index: u32,
    packets: u64,
    bytes: u64,
    gaps: u64,
    first_ns: u64,
    last_ns: u64,
    max_gap_ns: u64,
}

/// A connection that ended (its ports were reused) or the capture did.
struct Finished {
    rec: TcpConnection,
    graph: Option<[DirectionGraph; 2]>,
}

impl Finished {
    fn size(&self) -> (u64, u64) {
        let (a, b) = (&self.rec.a_to_b, &self.rec.b_to_a);
        (a.bytes + b.bytes, a.packets + b.packets)
    }
}

/// Larger first: more bytes, then more packets, then the earlier one.
fn bigger(x: ((u64, u64), u32), y: ((u64, u64), u32)) -> std::cmp::Ordering {
    y.0.cmp(&x.0).then(x.1.cmp(&y.1))
}

/// Analyses a capture read from `input`.
pub fn analyze_reader<R: std::io::Read + Send>(
    input: R,
    name: &str,
    opts: &AnalyzeOptions,
) -> anyhow::Result<(AnalysisRecord, Vec<DirectionGraph>)> {
    let mut an = Analyzer::new(opts.clone());
    let summary: read::ReadSummary = read::read_capture(input, |frame| {
        match linerate_wire::capture::decode_frame(
            frame.link_type,
            frame.data,
            Some(frame.orig_len),
        ) {
            Ok(Some(p)) => an.packet(frame.ts_ns, &p),
            Ok(None) => an.other(frame.ts_ns),
            Err(e) => an.undecodable(frame.ts_ns, &e.to_string()),
        }
    })?;
    let (mut rec, graphs) = an.finish(name, summary.format);
    if let Some(t) = summary.truncated {
        rec.warnings.insert(0, t);
    }
    Ok((rec, graphs))
}

pub(crate) fn endpoint(e: (IpAddr, u16)) -> Endpoint {
    Endpoint {
        addr: e.0.to_string(),
        port: e.1,
    }
}

impl Analyzer {
    /// A new analysis.
    pub fn new(opts: AnalyzeOptions) -> Analyzer {
        Analyzer {
            opts,
            first_ns: None,
            last_ns: 0,
            packets: 0,
            analysed: 0,
            other: 0,
            undecodable: 0,
            tcp_index: HashMap::new(),
            tcp: Vec::new(),
            finished_tcp: Vec::new(),
            tcp_seen: 0,
            udp_index: HashMap::new(),
            udp: Vec::new(),
            others: OtherFlows::default(),
            graph_budget: GRAPH_EVENTS_TOTAL_CAP,
            flows_capped: false,
            large_segments: 0,
            undecodable_example: None,
            time_went_back: 0,
            ip_len_beyond_frame: 0,
        }
    }

    /// A record that was not TCP or UDP over IP.
    pub fn other(&mut self, t_ns: u64) {
        self.tick(t_ns);
        self.other += 1;
    }

    /// A record whose headers could not be decoded.
    pub fn undecodable(&mut self, t_ns: u64, why: &str) {
        self.tick(t_ns);
        self.undecodable += 1;
        if self.undecodable_example.is_none() {
            self.undecodable_example = Some(format!("packet {}: {why}", self.packets));
        }
    }

    fn tick(&mut self, t_ns: u64) {
        self.packets += 1;
        if self.first_ns.is_none() {
            self.first_ns = Some(t_ns);
        }
        if t_ns < self.last_ns {
            self.time_went_back += 1;
        }
        self.last_ns = self.last_ns.max(t_ns);
    }

    /// One decoded packet captured at `t_ns`.
    pub fn packet(&mut self, t_ns: u64, p: &Packet) {
        self.tick(t_ns);
        self.ip_len_beyond_frame += u64::from(p.ip_len_beyond_frame);
        match &p.transport {
            Transport::Tcp(seg) => {
                let (key, src_lo) = FlowKey::of(p.src, seg.src_port, p.dst, seg.dst_port);
                let i = match self.tcp_index.get(&key) {
                    Some(&i) => {
                        let i = i as usize;
                        let c = &mut self.tcp[i];
                        let from_a = c.a == (p.src, seg.src_port);
                        if c.is_new_syn(from_a, seg, &mut self.graph_budget) {
                            // Ports reused by a new connection: the old one is complete.
                            let old = self.tcp.swap_remove(i);
                            if let Some(moved) = self.tcp.get(i) {
                                let k = FlowKey::of(moved.a.0, moved.a.1, moved.b.0, moved.b.1).0;
                                self.tcp_index.insert(k, i as u32);
                            }
                            self.tcp_index.remove(&key);
                            self.finish_conn(old);
                            self.new_conn(key, p, seg)
                        } else {
                            Some(i)
                        }
                    }
                    None => self.new_conn(key, p, seg),
                };
                let _ = src_lo;
                match i {
                    Some(i) => {
                        self.analysed += 1;
                        let c = &mut self.tcp[i];
                        let from_a = c.a == (p.src, seg.src_port);
                        c.packet(t_ns, from_a, seg, &mut self.graph_budget);
                    }
                    None => self.other += 1,
                }
            }
            Transport::Udp(d) => {
                let key = (p.src, d.src_port, p.dst, d.dst_port);
                let i = match self.udp_index.get(&key) {
                    Some(&i) => Some(i as usize),
                    None if self.flow_count() < MAX_FLOWS => {
                        let index = self.udp.len() as u32 + 1;
                        self.udp.push(UdpState {
                            src: (p.src, d.src_port),
                            dst: (p.dst, d.dst_port),
                            index,
                            packets: 0,
                            bytes: 0,
                            gaps: 0,
                            first_ns: t_ns,
                            last_ns: t_ns,
                            max_gap_ns: 0,
                        });
                        self.udp_index.insert(key, index - 1);
                        Some(self.udp.len() - 1)
                    }
                    None => {
                        self.flows_capped = true;
                        None
                    }
                };
                match i {
                    Some(i) => {
                        self.analysed += 1;
                        let u = &mut self.udp[i];
                        let t = t_ns.max(u.last_ns);
                        let gap = t - u.last_ns;
                        if u.packets > 0 {
                            u.max_gap_ns = u.max_gap_ns.max(gap);
                            if gap > UDP_GAP_NS {
                                u.gaps += 1;
                            }
                        }
                        u.last_ns = t;
                        u.packets += 1;
                        u.bytes += u64::from(d.payload_len);
                    }
                    None => self.other += 1,
                }
            }
        }
    }

    fn flow_count(&self) -> usize {
        self.tcp_seen as usize + self.udp.len()
    }

    fn new_conn(
        &mut self,
        key: FlowKey,
        p: &Packet,
        seg: &linerate_wire::capture::TcpSegment,
    ) -> Option<usize> {
        if self.flow_count() >= MAX_FLOWS {
            self.flows_capped = true;
            return None;
        }
        let src = (p.src, seg.src_port);
        let dst = (p.dst, seg.dst_port);
        // The opener is `a`: the sender of a SYN, or of a SYN/ACK's peer; else the first
        // packet's sender.
        let (a, b) = if seg.has(linerate_wire::capture::tcp_flags::SYN)
            && seg.has(linerate_wire::capture::tcp_flags::ACK)
        {
            (dst, src)
        } else {
            (src, dst)
        };
        self.tcp_seen += 1;
        let index = self.tcp_seen;
        self.tcp
            .push(tcp::Conn::new(index, a, b, self.last_ns, self.opts.graphs));
        self.tcp_index.insert(key, self.tcp.len() as u32 - 1);
        Some(self.tcp.len() - 1)
    }

    fn finish_conn(&mut self, c: tcp::Conn) {
        let v6 = c.a.0.is_ipv6();
        let start = self.first_ns.unwrap_or(0);
        let title = format!("{} -> {}", endpoint(c.a), endpoint(c.b));
        let rtitle = format!("{} -> {}", endpoint(c.b), endpoint(c.a));
        let graphs = self.opts.graphs;
        let (rec, dirs, large) = c.finish(start, &self.opts, v6, &mut self.graph_budget);
        self.large_segments += large;
        let g = graphs.then(|| {
            let [d0, d1] = dirs;
            let mk = |d: tcp::DirGraph, direction: &'static str, title: String| DirectionGraph {
                connection: rec.index,
                direction,
                title,
                start_ns: start,
                truncated: d.truncated,
                events: d.events,
                periods: d.periods,
            };
            [mk(d0, "a_to_b", title), mk(d1, "b_to_a", rtitle)]
        });
        self.finished_tcp.push(Finished { rec, graph: g });
        if let Some(top) = self.opts.top.map(|t| t.max(1)) {
            if self.finished_tcp.len() >= 2 * top.max(64) {
                self.prune_finished(top);
            }
        }
    }

    /// Keeps the `top` largest finished connections, sums the rest into `others`.
    fn prune_finished(&mut self, top: usize) {
        if self.finished_tcp.len() <= top {
            return;
        }
        self.finished_tcp
            .sort_by(|x, y| bigger((x.size(), x.rec.index), (y.size(), y.rec.index)));
        for f in self.finished_tcp.drain(top..) {
            self.others.add_tcp(&f.rec);
            if let Some(g) = f.graph {
                self.graph_budget += g.iter().map(|d| d.events.len()).sum::<usize>();
            }
        }
    }

    /// Ends the analysis: the record, and the graphs' data when asked for.
    pub fn finish(mut self, file: &str, format: &str) -> (AnalysisRecord, Vec<DirectionGraph>) {
        self.tcp_index = HashMap::new();
        self.udp_index = HashMap::new();
        let mut conns = std::mem::take(&mut self.tcp);
        if let Some(top) = self.opts.top.map(|t| t.max(1)) {
            self.sum_open_beyond_top(&mut conns, top);
        }
        for c in conns {
            self.finish_conn(c);
        }
        if let Some(top) = self.opts.top.map(|t| t.max(1)) {
            self.prune_finished(top);
        }
        let mut finished = std::mem::take(&mut self.finished_tcp);
        finished.sort_by_key(|f| f.rec.index);
        let mut warnings = self.capture_warnings();
        let lost: u64 = finished
            .iter()
            .map(|f| f.rec.a_to_b.lost_segments + f.rec.b_to_a.lost_segments)
            .sum::<u64>()
            + self.others.tcp_lost_segments;
        if lost > 0 {
            warnings.push(format!(
                "the capture missed packets ({lost} segments came after data it never saw): counts and RTTs near those gaps are uncertain"
            ));
        }
        let mut graphs = Vec::new();
        let mut tcp = Vec::new();
        for f in finished {
            tcp.push(f.rec);
            if let Some(g) = f.graph {
                graphs.extend(g);
            }
        }
        if graphs.iter().any(|g| g.truncated) {
            warnings.push(format!(
                "graphs show the first {} events of each direction ({} in all for the capture)",
                tcp::GRAPH_EVENTS_CAP,
                GRAPH_EVENTS_TOTAL_CAP
            ));
        }
        let udp = self.finish_udp();
        if self.others.tcp_connections > 0 || self.others.udp_flows > 0 {
            warnings.push(format!(
                "{} TCP connections and {} UDP flows are summed under \"others\": only the {} largest of each (by payload bytes, then packets) are shown{} (--top changes the number)",
                self.others.tcp_connections,
                self.others.udp_flows,
                self.opts.top.unwrap_or(0),
                if self.opts.graphs { " and graphed" } else { "" }
            ));
        }
        let rec = AnalysisRecord {
            schema_version: trace::SCHEMA_VERSION,
            software: crate::software(),
            file: file.to_string(),
            format: format.to_string(),
            packets: self.packets,
            packets_analysed: self.analysed,
            packets_other: self.other,
            packets_undecodable: self.undecodable,
            duration_s: self
                .first_ns
                .map(|f| self.last_ns.saturating_sub(f) as f64 / 1e9),
            link_rate_bps: self.opts.link_rate_bps,
            tcp,
            udp,
            top: self.opts.top.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
            others: (self.others != OtherFlows::default()).then_some(self.others),
            warnings,
        };
        (rec, graphs)
    }

    /// Sums the connections still open that are not among the `top` largest (open and
    /// finished together) into `others`, one at a time, so that the end of a capture of
    /// many connections needs no more memory than its middle; `conns` keeps the rest.
    fn sum_open_beyond_top(&mut self, conns: &mut Vec<tcp::Conn>, top: usize) {
        self.prune_finished(top);
        // (size, connection number, position among the open ones or MAX: finished).
        let mut sizes: Vec<((u64, u64), u32, u32)> = conns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.size(), c.index(), i as u32))
            .chain(
                self.finished_tcp
                    .iter()
                    .map(|f| (f.size(), f.rec.index, u32::MAX)),
            )
            .collect();
        if sizes.len() <= top {
            return;
        }
        sizes.select_nth_unstable_by(top - 1, |x, y| bigger((x.0, x.1), (y.0, y.1)));
        let mut keep = vec![false; conns.len()];
        for &(_, _, i) in &sizes[..top] {
            if let Some(k) = keep.get_mut(i as usize) {
                *k = true;
            }
        }
        drop(sizes);
        let opts = self.opts.clone();
        let start = self.first_ns.unwrap_or(0);
        let all = std::mem::take(conns);
        for (c, k) in all.into_iter().zip(keep) {
            if k {
                conns.push(c);
            } else {
                let v6 = c.a.0.is_ipv6();
                let mut no_graph = 0;
                let (rec, _, large) = c.finish(start, &opts, v6, &mut no_graph);
                self.large_segments += large;
                self.others.add_tcp(&rec);
            }
        }
    }

    /// The warnings about the capture as a whole: empty, undecodable packets, too many
    /// flows, time going back, IP lengths beyond the frame, segments above the MSS.
    fn capture_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.packets == 0 {
            warnings.push("the capture holds no packets".to_string());
        }
        if self.undecodable > 0 {
            warnings.push(format!(
                "{} packets could not be decoded and were left out (first: {}); a snap length of at least 128 bytes keeps every header",
                self.undecodable,
                self.undecodable_example.as_deref().unwrap_or("?")
            ));
        }
        if self.flows_capped {
            warnings.push(format!(
                "more than {MAX_FLOWS} connections and flows: packets of further ones were counted as other"
            ));
        }
        if self.time_went_back > 0 {
            warnings.push(format!(
                "{} packets have an earlier time than the packet before them (merged or reordered capture): durations and the detectors take such a time as equal to the one before it; Wireshark's flags use the times as written, as tshark does (a segment from before its predecessor is a retransmission, not out of order)",
                self.time_went_back
            ));
        }
        if self.ip_len_beyond_frame > 0 {
            warnings.push(format!(
                "{} packets have an IP total length larger than their frame on the wire: their payload was taken as what the frame held (as tshark does), not as the header claims",
                self.ip_len_beyond_frame
            ));
        }
        if self.large_segments > 0 {
            warnings.push(format!(
                "{} TCP segments are larger than the MSS: the capture was taken above segmentation offload (TSO/GSO on a sender, GRO on a receiver), so packet counts are of those larger units, not of frames on the wire",
                self.large_segments
            ));
        }
        warnings
    }

    /// The UDP flows' records: the `top` largest kept (the rest summed into `others`), in
    /// the order they began.
    fn finish_udp(&mut self) -> Vec<UdpFlow> {
        let start = self.first_ns.unwrap_or(0);
        let mut udp_states = std::mem::take(&mut self.udp);
        if let Some(top) = self.opts.top.map(|t| t.max(1)) {
            if udp_states.len() > top {
                udp_states.sort_by(|x, y| {
                    bigger(
                        ((x.bytes, x.packets), x.index),
                        ((y.bytes, y.packets), y.index),
                    )
                });
                for u in udp_states.drain(top..) {
                    self.others.udp_flows += 1;
                    self.others.udp_packets += u.packets;
                    self.others.udp_bytes += u.bytes;
                }
                udp_states.sort_by_key(|u| u.index);
            }
        }
        udp_states
            .into_iter()
            .map(|u| {
                let mut f = UdpFlow {
                    index: u.index,
                    src: endpoint(u.src),
                    dst: endpoint(u.dst),
                    packets: u.packets,
                    bytes: u.bytes,
                    gaps_over_10ms: u.gaps,
                    ..UdpFlow::default()
                };
                let dur = u.last_ns - u.first_ns;
                f.start_s = u.first_ns.saturating_sub(start) as f64 / 1e9;
                f.duration_s = dur as f64 / 1e9;
                if dur > 0 {
                    f.throughput_bps = Some(f.bytes as f64 * 8.0 / f.duration_s);
                    f.packets_per_s = Some(f.packets as f64 / f.duration_s);
                }
                if f.packets > 1 {
                    f.max_gap_ms = Some(u.max_gap_ns as f64 / 1e6);
                }
                f
            })
            .collect()
    }
}
