//! `retransmission_bound` and `delayed_ack_stalls`: what TCP's own counters say.

use super::window::TINY_WINDOW_METRIC;
use super::*;

/// `retransmission_bound`: TCP retransmitted ≥ [`RETRANS_SHARE`] of its data segments,
/// both counts from the sender's TCP_INFO at the end (`total_retrans ÷ data_segs_out`, the
/// connections' lives; retransmissions are data segments too, so the share is at most 1).
/// The Mathis bound `MSS × 8 ÷ RTT × 1.22 ÷ √p` (per stream, times the streams) says
/// whether that loss explains the rate: a flow below [`MATHIS_EXPLAINS_FRACTION`] of it was
/// held back by something else and gets no verdict; confidence is high within 1.5× of it,
/// low above 3× (a loss-tolerant congestion control). Not given for a flow already
/// `link_bound` (a full link's queue drops packets; that is how TCP finds the link rate) or
/// `window_limited` by a tiny buffer (its retransmissions are the timers').
pub(super) fn retransmissions(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    if !ctx.tcp {
        return;
    }
    for f in &ctx.flows {
        let dir = f.direction();
        if out.iter().any(|v| {
            v.flow == Some(dir)
                && (v.kind == VerdictKind::LinkBound
                    || (v.kind == VerdictKind::WindowLimited
                        && v.evidence.iter().any(|e| e.metric == TINY_WINDOW_METRIC)))
        }) {
            continue;
        }
        let Some(s) = tcp_sums(&f.tx_streams()) else {
            continue;
        };
        let Some(retrans) = s.retrans.filter(|&r| r > 0) else {
            continue;
        };
        if f.sender.is_none() {
            continue;
        }
        let label = crate::model::labels::flow_label(dir);
        let Some(segments) = s.data_segs_out.filter(|&d| d > 0) else {
            nj.push(format!(
                "retransmissions ({label}): TCP_INFO has no data_segs_out (Linux 4.6+), so the \
                 share of segments retransmitted is unknown"
            ));
            continue;
        };
        if retrans > segments {
            nj.push(format!(
                "retransmissions ({label}): TCP_INFO counts more retransmissions ({retrans}) than \
                 data segments sent ({segments})"
            ));
            continue;
        }
        let p = retrans as f64 / segments as f64;
        if p < RETRANS_SHARE {
            continue;
        }
        let Some(bps) = f.payload_bps() else { continue };
        let mathis = (s.srtt_us > 0.0 && s.mss > 0.0)
            .then(|| s.mss * 8.0 / (s.srtt_us / 1e6) * 1.22 / p.sqrt() * s.streams as f64);
        let reach = mathis.map(|m| bps / m);
        if reach.is_some_and(|r| r < MATHIS_EXPLAINS_FRACTION) {
            continue;
        }
        let mut evidence = vec![
            ev("retransmitted_segments", retrans as f64, "count", None),
            ev("data_segments_sent", segments as f64, "count", None),
            ev("retransmit_share", p, "ratio", Some(">= 0.01")),
            ev("payload_bps", bps, "bps", None),
        ];
        if let (Some(m), Some(r)) = (mathis, reach) {
            evidence.push(ev("mathis_bound_bps", m, "bps", None));
            evidence.push(ev("rate_over_mathis_bound", r, "factor", Some(">= 0.333")));
        }
        if let Some(t) = f
            .sender
            .and_then(|r| snmp(r, "TcpExt.TCPTimeouts"))
            .filter(|&t| t > 0)
        {
            evidence.push(ev("tcp_timeouts_host", t as f64, "count", None));
        }
        let confidence = match reach {
            Some(r) if (1.0 / 1.5..=1.5).contains(&r) => Confidence::High,
            Some(r) if r > 3.0 => Confidence::Low,
            _ => Confidence::Medium,
        };
        out.push(Verdict {
            kind: VerdictKind::RetransmissionBound,
            side: None,
            flow: Some(dir),
            confidence,
            evidence,
            message: format!(
                "{:.2}% of data segments were retransmitted ({retrans} of {segments}, TCP_INFO){}.",
                p * 100.0,
                mathis.map_or(String::new(), |m| format!(
                    "; with that loss Reno-style TCP is bounded near {} (MSS/RTT × 1.22/√p) and the flow reached {}",
                    format_bps(m),
                    format_bps(bps)
                )),
            ),
            suggestion: "Find where packets are lost: drop counters along the path (`ip -s link`, \
                `ethtool -S`), a policer or shaper, a bad cable or a duplex mismatch. A \
                loss-tolerant congestion control (-C bbr) shows what the path carries despite loss."
                .to_string(),
        });
    }
}

/// `delayed_ack_stalls`: the receiver's delayed-ACK timer (`TcpExt.DelayedACKs`) fired
/// at least [`MIN_DELAYED_ACKS`] times and for ≥ [`DELAYED_ACK_SHARE`] of the segments it
/// received (`Tcp.InSegs`). Confidence is high when Nagle's algorithm is in play (writes
/// smaller than the MSS without TCP_NODELAY) or the receiver's intervals show a gap (one
/// below [`GAP_FRACTION`] of the median).
pub(super) fn delayed_acks(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    if !ctx.tcp {
        return;
    }
    for f in &ctx.flows {
        let Some(r) = f.receiver else { continue };
        let (Some(d), Some(segs)) = (snmp(r, "TcpExt.DelayedACKs"), snmp(r, "Tcp.InSegs")) else {
            continue;
        };
        if d < MIN_DELAYED_ACKS || segs == 0 {
            continue;
        }
        if d > segs {
            nj.push(format!(
                "delayed ACKs ({}): the {}'s counters say more delayed ACKs ({d}) than segments                  received ({segs})",
                crate::model::labels::flow_label(f.direction()),
                role_name(f.receiver_role)
            ));
            continue;
        }
        let share = d as f64 / segs as f64;
        if share < DELAYED_ACK_SHARE {
            continue;
        }
        let secs = r.totals.duration_ns as f64 / 1e9;
        let mss = flow_mss(f);
        let p = &ctx.rec.plan;
        let nagle = !p.nodelay && mss.is_some_and(|m| f64::from(p.write_size) < m);
        let gap = throughput_gap(r);
        let mut evidence = vec![
            ev("delayed_acks", d as f64, "count", Some(">= 20")),
            ev("segments_received", segs as f64, "count", None),
            ev("delayed_ack_share", share, "ratio", Some(">= 0.01")),
        ];
        if secs > 0.0 {
            evidence.push(ev("delayed_acks_per_sec", d as f64 / secs, "per_sec", None));
        }
        let gapped = gap.is_some_and(|g| g < GAP_FRACTION);
        if let Some(g) = gap {
            let th = gapped.then_some("< 0.5");
            evidence.push(ev("lowest_interval_over_median", g, "ratio", th));
        }
        let suggestion = match mss.filter(|_| nagle) {
            Some(m) => format!(
                "Writes of {} B are smaller than the MSS ({m:.0} B), so Nagle's algorithm waits \
                 for the delayed ACK: use -N (TCP_NODELAY) or larger writes (-l).",
                p.write_size
            ),
            None => format!(
                "Make every ACK cover two segments (larger writes, -l; a larger window, -w) or \
                 ACK at once on the {}: `ip route change ROUTE quickack 1`.",
                role_name(f.receiver_role)
            ),
        };
        out.push(Verdict {
            kind: VerdictKind::DelayedAckStalls,
            side: Some(f.receiver_role),
            flow: Some(f.direction()),
            confidence: if nagle || gapped {
                Confidence::High
            } else {
                Confidence::Medium
            },
            evidence,
            message: format!(
                "The {}'s delayed-ACK timer fired {d} times ({:.1}% of the {segs} segments it \
                 received){}: each time the sender waits for the ACK (up to 40 ms on Linux){}.",
                role_name(f.receiver_role),
                share * 100.0,
                if secs > 0.0 {
                    format!(", {:.0}/s", d as f64 / secs)
                } else {
                    String::new()
                },
                if gapped {
                    ", and throughput dropped below half its median in some intervals"
                } else {
                    ""
                },
            ),
            suggestion,
        });
    }
}

/// The lowest interval throughput at an end over the median of its intervals (warm-up left
/// out); `None` with fewer than three intervals.
fn throughput_gap(r: &linerate_wire::report::SideReport) -> Option<f64> {
    let ivs = rx_interval_bps(r);
    (ivs.len() >= 3)
        .then(|| median(&ivs))
        .flatten()
        .filter(|m| *m > 0.0)
        .map(|m| ivs.iter().copied().fold(f64::INFINITY, f64::min) / m)
}
