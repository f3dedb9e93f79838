//! UDP datagrams: `datagram_loss` (datagrams that never arrived and that no counter at the
//! receiver accounts for), and the notes that say what the packet and datagram figures
//! count when segmentation offload puts several datagrams in one packet.

use super::*;
use crate::model::units::format_per_sec;

/// `datagram_loss`: a UDP flow lost at least [`UDP_LOSS_MIN_PERCENT`] of its datagrams
/// (sequence gaps plus those sent after the last one that arrived: the sender's count
/// against the receiver's) and no more specific verdict (`receiver_drops`, `link_bound`)
/// explains it for that flow. Confidence: high from [`DATAGRAM_LOSS_HIGH_PERCENT`], medium
/// from [`DATAGRAM_LOSS_PERCENT`], low below.
pub(super) fn datagram_loss(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    if ctx.tcp {
        return;
    }
    for f in &ctx.flows {
        let s = f.summary;
        let (Some(udp), Some(lost), Some(loss)) =
            (s.udp.as_ref(), s.lost_datagrams, s.loss_percent)
        else {
            continue;
        };
        if lost == 0 || loss < UDP_LOSS_MIN_PERCENT {
            continue;
        }
        let explained = out.iter().any(|v| {
            v.flow == Some(f.direction())
                && matches!(v.kind, VerdictKind::ReceiverDrops | VerdictKind::LinkBound)
        });
        if explained {
            continue;
        }
        let received = udp.packets.saturating_sub(udp.duplicates);
        let sent = received.saturating_add(lost);
        let at_end = s.lost_at_end.unwrap_or(0);
        let mut evidence = vec![
            ev("datagrams_sent", sent as f64, "count", None),
            ev("datagrams_received", received as f64, "count", None),
            ev("datagrams_lost", lost as f64, "count", None),
            ev("udp_loss_percent", loss, "percent", Some(">= 0.1")),
        ];
        if at_end > 0 {
            evidence.push(ev("datagrams_lost_at_end", at_end as f64, "count", None));
        }
        let end_part = if at_end > 0 {
            format!(
                ", {at_end} of them after the last datagram that arrived (the sender's count \
                 against the receiver's)"
            )
        } else {
            String::new()
        };
        let confidence = if loss >= DATAGRAM_LOSS_HIGH_PERCENT {
            Confidence::High
        } else if loss >= DATAGRAM_LOSS_PERCENT {
            Confidence::Medium
        } else {
            Confidence::Low
        };
        out.push(Verdict {
            kind: VerdictKind::DatagramLoss,
            side: None,
            flow: Some(f.direction()),
            confidence,
            evidence,
            message: format!(
                "{lost} of {sent} datagrams ({loss:.2}%) never arrived{end_part}; no counter at \
                 the {} (socket buffer, backlog, interface) accounts for them.",
                role_name(f.receiver_role)
            ),
            suggestion: "Find where they were dropped: `ip -s link` and `tc -s qdisc` on every \
                hop of the path and `nstat -az | grep -i -e udp -e drop` on the receiver; lower \
                the rate (-b) to find what the path carries without loss. Loss only at the end \
                means the receiver stopped getting the stream's datagrams (its socket closed, or \
                another socket took them)."
                .to_string(),
        });
    }
}

/// Datagrams per packet from which the note on segmentation offload is given.
pub const OFFLOAD_NOTE_RATIO: f64 = 1.5;

/// What the packet and datagram figures count, one note per UDP flow where they differ
/// (datagrams per packet ≥ [`OFFLOAD_NOTE_RATIO`] at either end), e.g. "client->server: 64
/// datagrams per packet at lo: UDP GSO/GRO super-packets on loopback; ...". Also says when
/// loopback carried both directions, so per-flow packet counts could not be split.
pub(crate) fn packet_notes(ctx: &Ctx<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    if ctx.tcp {
        return notes;
    }
    for f in &ctx.flows {
        let s = f.summary;
        let label = crate::model::labels::flow_label(f.direction());
        let detail = s.interface_packets.as_ref();
        let iface = |sender: bool| {
            detail
                .and_then(|d| {
                    if sender {
                        d.sender_interface.clone()
                    } else {
                        d.receiver_interface.clone()
                    }
                })
                .unwrap_or_else(|| "the interface".to_string())
        };
        let shared_lo = detail.is_some_and(|d| {
            d.sender_interface.as_deref() == Some("lo") && s.sender_interface_pps.is_none()
        });
        if shared_lo && ctx.rec.plan.direction == linerate_wire::control::Direction::Both {
            notes.push(format!(
                "{label}: loopback carried both directions, so its packets are not split per \
                 flow; `client.host_counters.interface_stats` has the interface's total"
            ));
            continue;
        }
        let ends = [
            (
                s.sender_datagrams_per_packet,
                s.sender_interface_pps,
                s.sender_pps,
                iface(true),
                "sent",
            ),
            (
                s.receiver_datagrams_per_packet,
                s.receiver_interface_pps,
                s.receiver_pps,
                iface(false),
                "received",
            ),
        ];
        let Some((ratio, pps, dps, name, what)) = ends
            .into_iter()
            .find(|e| e.0.is_some_and(|r| r >= OFFLOAD_NOTE_RATIO))
        else {
            continue;
        };
        let (Some(ratio), Some(pps), Some(dps)) = (ratio, pps, dps) else {
            continue;
        };
        let why = if name == "lo" {
            "UDP GSO/GRO super-packets on loopback".to_string()
        } else {
            format!("UDP GSO/GRO super-packets crossed {name} whole")
        };
        notes.push(format!(
            "{label}: {ratio:.1} datagrams per packet at {name}: {why}. The datagram figures \
             (sent/recv dgram/s) count what linerate's sockets {what}: {}; the interface \
             carried {}, and per-packet work (routing, filtering, a device under \
             test) was done at that rate. --no-offload sends one datagram per packet.",
            format_per_sec(dps, "datagrams/s"),
            format_per_sec(pps, "packets/s")
        ));
    }
    notes
}
