//! Read-only views of a [`RunRecord`] that the rules share: who sent and received each flow,
//! TCP_INFO sums over a flow's sending streams, SNMP deltas by name, whether the test ran
//! over loopback, and an estimate of the on-the-wire rate.

use std::net::{IpAddr, SocketAddr};

use linerate_wire::control::Transport;
use linerate_wire::report::{CpuReport, Role, SideReport, StreamReport, StreamRole};

use crate::model::{EndSummary, FlowDirection, FlowSummary, RunRecord};

/// Ethernet framing per frame on the wire, bytes: header 14 + FCS 4 + preamble 8 +
/// inter-frame gap 12. A link's speed counts these; a payload rate does not.
pub const ETHERNET_FRAMING_BYTES: f64 = 38.0;
/// TCP header with the timestamp option Linux uses by default, bytes.
pub const TCP_HEADER_BYTES: f64 = 32.0;
/// UDP header, bytes.
pub const UDP_HEADER_BYTES: f64 = 8.0;

/// One end of the test.
pub struct End<'a> {
    pub role: Role,
    pub report: &'a SideReport,
    pub summary: &'a EndSummary,
}

impl End<'_> {
    pub fn cpu(&self) -> Option<&CpuReport> {
        self.report.cpu.as_ref()
    }
}

/// One direction of data with its two ends.
pub struct Flow<'a> {
    pub summary: &'a FlowSummary,
    pub sender_role: Role,
    pub receiver_role: Role,
    /// The sender's report (absent when the server sent none and the server sends).
    pub sender: Option<&'a SideReport>,
    /// The receiver's report.
    pub receiver: Option<&'a SideReport>,
}

impl<'a> Flow<'a> {
    pub fn direction(&self) -> FlowDirection {
        self.summary.direction
    }

    /// The payload rate to judge: the receiver's, else the sender's.
    pub fn payload_bps(&self) -> Option<f64> {
        self.summary.receiver_bps.or(self.summary.sender_bps)
    }

    /// The sender's sending streams.
    pub fn tx_streams(&self) -> Vec<&'a StreamReport> {
        self.sender
            .map(|s| {
                s.streams
                    .iter()
                    .filter(|st| st.role == StreamRole::Tx)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The receiver's receiving streams.
    pub fn rx_streams(&self) -> Vec<&'a StreamReport> {
        self.receiver
            .map(|s| {
                s.streams
                    .iter()
                    .filter(|st| st.role == StreamRole::Rx)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// TCP_INFO of a flow's sending streams, summed or averaged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpSums {
    /// Streams with TCP_INFO.
    pub streams: usize,
    /// Σ busy_time, µs (absent when any stream lacks it: kernel before 4.10).
    pub busy_us: Option<u64>,
    /// Σ rwnd_limited, µs.
    pub rwnd_limited_us: Option<u64>,
    /// Σ sndbuf_limited, µs.
    pub sndbuf_limited_us: Option<u64>,
    /// Mean smoothed RTT, µs.
    pub srtt_us: f64,
    /// Smallest min_rtt, µs (absent before Linux 4.6).
    pub min_rtt_us: Option<u32>,
    /// Mean sender MSS, bytes.
    pub mss: f64,
    /// Σ total_retrans (the connections' lives; absent when any stream lacks it: Windows
    /// counts retransmitted bytes, not segments).
    pub retrans: Option<u64>,
    /// Σ data_segs_out, retransmissions included (the connections' lives; absent when any
    /// stream lacks it: kernel before 4.6).
    pub data_segs_out: Option<u64>,
    /// Largest MSS of the path: the larger of a stream's `snd_mss` and `advmss` (Linux caps
    /// `snd_mss` at half the largest window the peer offered, so a tiny window hides the
    /// path's MSS from it).
    pub path_mss: f64,
    /// Smallest peer-advertised window, bytes (Linux 5.4+).
    pub snd_wnd_bytes: Option<u32>,
    /// Σ retransmission time-outs (Linux 6.7+; absent when any stream lacks it).
    pub total_rto: Option<u64>,
    /// Σ time in recoveries that began with a time-out, ms (Linux 6.7+).
    pub total_rto_time_ms: Option<u64>,
    /// Most unanswered zero-window (persist) probes of a stream at the end.
    pub probes: Option<u8>,
}

/// Sums TCP_INFO over `streams`; `None` when none has it.
pub fn tcp_sums(streams: &[&StreamReport]) -> Option<TcpSums> {
    let infos: Vec<_> = streams.iter().filter_map(|s| s.tcp_info.as_ref()).collect();
    if infos.is_empty() {
        return None;
    }
    let n = infos.len();
    let sum_opt = |f: &dyn Fn(&linerate_wire::report::TcpInfoReport) -> Option<u64>| {
        infos.iter().map(|i| f(i)).sum::<Option<u64>>()
    };
    Some(TcpSums {
        streams: n,
        busy_us: sum_opt(&|i| i.busy_time_us),
        rwnd_limited_us: sum_opt(&|i| i.rwnd_limited_us),
        sndbuf_limited_us: sum_opt(&|i| i.sndbuf_limited_us),
        srtt_us: infos.iter().map(|i| f64::from(i.rtt_us)).sum::<f64>() / n as f64,
        min_rtt_us: infos.iter().filter_map(|i| i.min_rtt_us).min(),
        mss: infos.iter().map(|i| f64::from(i.snd_mss)).sum::<f64>() / n as f64,
        retrans: sum_opt(&|i| i.total_retrans.map(u64::from)),
        data_segs_out: sum_opt(&|i| i.data_segs_out.map(u64::from)),
        path_mss: infos
            .iter()
            .map(|i| i.snd_mss.max(i.advmss_bytes.unwrap_or(0)))
            .max()
            .map_or(0.0, f64::from),
        snd_wnd_bytes: infos.iter().filter_map(|i| i.snd_wnd_bytes).min(),
        total_rto: sum_opt(&|i| i.total_rto.map(u64::from)),
        total_rto_time_ms: sum_opt(&|i| i.total_rto_time_ms.map(u64::from)),
        probes: infos.iter().filter_map(|i| i.probes).max(),
    })
}

/// An SNMP counter delta of one end (`Group.Name`), when its host counters have it.
pub fn snmp(side: &SideReport, name: &str) -> Option<u64> {
    side.host_counters
        .as_ref()?
        .snmp
        .as_ref()?
        .get(name)
        .copied()
}

/// The sum of SNMP deltas that exist among `names`; `None` when none exists.
pub fn snmp_sum(side: &SideReport, names: &[&str]) -> Option<u64> {
    names
        .iter()
        .filter_map(|n| snmp(side, n))
        .fold(None, |acc, v| Some(acc.unwrap_or(0) + v))
}

/// Everything the rules need, computed once.
pub struct Ctx<'a> {
    pub rec: &'a RunRecord,
    pub ends: Vec<End<'a>>,
    pub flows: Vec<Flow<'a>>,
    /// Client and server run on one kernel (same boot id).
    pub same_host: bool,
    /// The test ran over loopback.
    pub loopback: bool,
    pub tcp: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(rec: &'a RunRecord) -> Ctx<'a> {
        let mut ends = vec![End {
            role: Role::Client,
            report: &rec.client,
            summary: &rec.summary.client,
        }];
        if let (Some(r), Some(s)) = (rec.server.as_ref(), rec.summary.server.as_ref()) {
            ends.push(End {
                role: Role::Server,
                report: r,
                summary: s,
            });
        }
        let flows = rec.summary.flows.iter().map(|f| flow_of(rec, f)).collect();
        let same_host = match (&rec.client.host.boot_id, rec.server.as_ref()) {
            (Some(a), Some(s)) => s.host.boot_id.as_ref() == Some(a),
            _ => false,
        };
        Ctx {
            rec,
            ends,
            flows,
            same_host,
            loopback: over_loopback(rec),
            tcp: rec.plan.transport == Transport::Tcp,
        }
    }

    pub fn end(&self, role: Role) -> Option<&End<'a>> {
        self.ends.iter().find(|e| e.role == role)
    }
}

fn flow_of<'a>(rec: &'a RunRecord, f: &'a FlowSummary) -> Flow<'a> {
    let (sender_role, receiver_role) = match f.direction {
        FlowDirection::ClientToServer => (Role::Client, Role::Server),
        FlowDirection::ServerToClient => (Role::Server, Role::Client),
    };
    let side = |r: Role| match r {
        Role::Client => Some(&rec.client),
        Role::Server => rec.server.as_ref(),
    };
    Flow {
        summary: f,
        sender_role,
        receiver_role,
        sender: side(sender_role),
        receiver: side(receiver_role),
    }
}

/// The test ran over loopback: an end's interface is `lo`, or a stream's peer (or the
/// server address) is a loopback address.
pub fn over_loopback(rec: &RunRecord) -> bool {
    let sides = std::iter::once(&rec.client).chain(rec.server.as_ref());
    for s in sides {
        let iface = s.interface.as_ref().map(|i| i.name.as_str()).or_else(|| {
            s.host_counters
                .as_ref()
                .and_then(|h| h.interface.as_deref())
        });
        if iface == Some("lo") {
            return true;
        }
        if s.streams
            .iter()
            .filter_map(|st| st.remote_addr.as_deref())
            .filter_map(parse_ip)
            .any(|ip| ip.to_canonical().is_loopback())
        {
            return true;
        }
    }
    let (host, _) = crate::model::labels::split_host_port(&rec.plan.server);
    host.parse::<IpAddr>()
        .is_ok_and(|ip| ip.to_canonical().is_loopback())
        || host.eq_ignore_ascii_case("localhost")
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<SocketAddr>()
        .map(|a| a.ip())
        .or_else(|_| s.parse::<IpAddr>())
        .ok()
}

/// Whether the flow's streams run over IPv6 (IPv4-mapped addresses count as IPv4); IPv4
/// when unknown.
pub fn ipv6(flow: &Flow<'_>) -> bool {
    flow.tx_streams()
        .iter()
        .chain(flow.rx_streams().iter())
        .filter_map(|s| s.remote_addr.as_deref())
        .filter_map(parse_ip)
        .next()
        .is_some_and(|ip| ip.to_canonical().is_ipv6())
}

/// Estimated rate on the wire, bits per second, for a payload rate:
/// `payload_bps + packets_per_sec × (IP + TCP/UDP headers + Ethernet framing) × 8`.
///
/// Packets per second: the receiver's datagram rate for UDP (every datagram is a frame,
/// GSO or not); payload ÷ MSS for TCP (full-sized segments, what a bulk sender writes).
/// IP header 20 bytes (IPv4) or 40 (IPv6); TCP 32 with timestamps; UDP 8; Ethernet 38
/// ([`ETHERNET_FRAMING_BYTES`]). Absent when the packet rate cannot be known.
pub fn wire_bps(
    payload_bps: f64,
    pps: Option<f64>,
    mss: Option<f64>,
    tcp: bool,
    v6: bool,
) -> Option<f64> {
    let ip = if v6 { 40.0 } else { 20.0 };
    let l4 = if tcp {
        TCP_HEADER_BYTES
    } else {
        UDP_HEADER_BYTES
    };
    let pps = if tcp {
        let mss = mss.filter(|m| *m > 0.0)?;
        payload_bps / 8.0 / mss
    } else {
        pps?
    };
    Some(payload_bps + pps * (ip + l4 + ETHERNET_FRAMING_BYTES) * 8.0)
}

/// Interval throughputs (bits per second) of an end's received data, warm-up left out.
pub fn rx_interval_bps(side: &SideReport) -> Vec<f64> {
    side.intervals
        .iter()
        .filter(|iv| !iv.omitted && iv.end_ns > iv.start_ns)
        .map(|iv| iv.rx_bytes as f64 * 8e9 / (iv.end_ns - iv.start_ns) as f64)
        .collect()
}

/// The median of `v` (empty: `None`).
pub use crate::model::latency::median;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_rate_of_full_tcp_segments_over_ethernet() {
        // 1448-byte segments over IPv4: 1448 + 20 + 32 + 38 = 1538 bytes on the wire, so
        // 941.5 Mbit/s of payload fill 1 Gbit/s (1448/1538 = 0.9415).
        let w = wire_bps(941.5e6, None, Some(1448.0), true, false).unwrap();
        assert!((w - 1e9).abs() < 1e6, "{w}");
        assert_eq!(wire_bps(1e6, None, None, true, false), None);
    }

    #[test]
    fn wire_rate_of_small_udp_datagrams() {
        // 64-byte payloads: 64 + 20 + 8 + 38 = 130 bytes per frame; 1 Mpps = 1.04 Gbit/s.
        let w = wire_bps(512e6, Some(1e6), None, false, false).unwrap();
        assert!((w - 1.04e9).abs() < 1.0, "{w}");
        let w6 = wire_bps(512e6, Some(1e6), None, false, true).unwrap();
        assert!((w6 - 1.2e9).abs() < 1.0, "{w6}");
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
