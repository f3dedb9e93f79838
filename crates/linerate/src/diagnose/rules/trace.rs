//! Verdicts from the test's own packet capture (`--capture`, `RunRecord.trace`): what the
//! trace analysis (`crate::analyze`) found in the test's data connections, with its
//! evidence. Same kinds as the counter-based rules, told apart by "packet trace" in the
//! message and `trace_` metrics in the evidence.

use super::*;
use crate::model::trace::Finding;
use crate::model::FlowDirection;

/// One verdict per kind of finding and direction of data: the finding with the largest
/// share of the transfer time, its count summed over the test's connections.
pub(super) fn trace_findings(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    let Some(trace) = &ctx.rec.trace else {
        return;
    };
    let mut best: Vec<(VerdictKind, FlowDirection, &Finding, u64)> = Vec::new();
    for c in &trace.tcp {
        for f in &c.findings {
            let kind = match f.kind.as_str() {
                "delayed_ack_stall" => VerdictKind::DelayedAckStalls,
                "receive_window_limited" | "zero_window" => VerdictKind::WindowLimited,
                "loss_recovery" => VerdictKind::RetransmissionBound,
                _ => continue,
            };
            // The client opens every data connection: a is the client.
            let flow = if f.direction == "a_to_b" {
                FlowDirection::ClientToServer
            } else {
                FlowDirection::ServerToClient
            };
            match best.iter_mut().find(|b| b.0 == kind && b.1 == flow) {
                Some(b) => {
                    b.3 += f.count;
                    if f.share_percent > b.2.share_percent {
                        b.2 = f;
                    }
                }
                None => best.push((kind, flow, f, f.count)),
            }
        }
    }
    for (kind, flow, f, count) in best {
        let receiver = match flow {
            FlowDirection::ClientToServer => Role::Server,
            FlowDirection::ServerToClient => Role::Client,
        };
        let sender = match receiver {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        };
        let mut evidence: Vec<Evidence> = f
            .evidence
            .iter()
            .map(|e| ev(format!("trace_{}", e.metric), e.value, &e.unit, None))
            .collect();
        evidence.push(ev("trace_count", count as f64, "count", None));
        evidence.push(ev(
            "trace_share_of_transfer",
            f.share_percent,
            "percent",
            None,
        ));
        let (side, suggestion) = match kind {
            VerdictKind::DelayedAckStalls => (
                Some(receiver),
                format!(
                    "write each request or message in one call, or turn Nagle off at the {} (-N, TCP_NODELAY); the {} can ACK at once with TCP_QUICKACK",
                    role_name(sender),
                    role_name(receiver)
                ),
            ),
            VerdictKind::WindowLimited => (
                Some(receiver),
                format!(
                    "give the {} a larger receive buffer ({}) or let it autotune (no -w), and check that it reads fast enough",
                    role_name(receiver),
                    rcvbuf_flag(receiver)
                ),
            ),
            _ => (
                None,
                "find where the path drops packets (a shaper's queue, a lossy link): ip -s link and tc -s qdisc on each hop".to_string(),
            ),
        };
        let confidence = if f.share_percent >= 10.0 {
            Confidence::High
        } else {
            Confidence::Medium
        };
        out.push(Verdict {
            kind,
            side,
            flow: Some(flow),
            confidence,
            evidence,
            message: format!("packet trace: {}", f.message),
            suggestion,
        });
    }
}
