//! `link_bound`: the link (or a shaped rate) was full.

use super::*;

/// `link_bound`: the estimated wire rate ([`facts::wire_bps`]) ≥ [`LINK_BOUND_FRACTION`] of
/// the link's rate ([`capacity`]: hint, interface speeds, the sender's shaper). Never over
/// loopback. Without a known rate the rule is not judged.
pub(super) fn link_bound(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    if ctx.loopback {
        return;
    }
    for f in &ctx.flows {
        let Some(payload) = f.payload_bps() else {
            continue;
        };
        let Some((cap, source)) = capacity(ctx, f) else {
            nj.push(
                "link bound: no interface reported a line rate (virtual interfaces' speeds are nominal), no tbf/htb shapes the sender's interface, and no --link-rate was given"
                    .to_string(),
            );
            continue;
        };
        let pps = f.summary.receiver_pps.or(f.summary.sender_pps);
        let wire = wire_bps(payload, pps, flow_mss(f), ctx.tcp, facts::ipv6(f));
        // Without a packet rate the payload rate stands in: lower, so never a false alarm.
        let rate = wire.unwrap_or(payload);
        let estimate = rate / cap;
        if estimate < LINK_BOUND_FRACTION {
            continue;
        }
        // A link carries at most its rate: an estimate above it (headers a shaper does not
        // count, a token bucket's burst) means the link was full, not over-full.
        let ratio = estimate.min(1.0);
        let mut evidence = vec![
            ev("payload_bps", payload, "bps", None),
            ev("link_rate_bps", cap, "bps", None),
        ];
        if let Some(w) = wire {
            evidence.push(ev("wire_bps_estimate", w, "bps", None));
        }
        evidence.push(ev("link_utilisation", ratio, "ratio", Some(">= 0.9")));
        if let Some(r) = f.summary.retransmits.filter(|&r| r > 0) {
            evidence.push(ev("retransmits", r as f64, "count", None));
        }
        out.push(Verdict {
            kind: VerdictKind::LinkBound,
            side: None,
            flow: Some(f.direction()),
            confidence: if ratio >= 0.95 {
                Confidence::High
            } else {
                Confidence::Medium
            },
            evidence,
            message: format!(
                "{} of payload{} {} the link rate {} ({source}).",
                format_bps(payload),
                wire.map_or(String::new(), |w| format!(
                    " (about {} on the wire with headers and framing)",
                    format_bps(w)
                )),
                if estimate >= 1.0 {
                    "fills".to_string()
                } else {
                    format!("is {:.0}% of", ratio * 100.0)
                },
                format_bps(cap),
            ),
            suggestion: "The link is full: this is the path's capacity, not a limit of either \
                host. Only a faster link or a higher shaped rate gives more; to measure the \
                hosts themselves, test over a faster path."
                .to_string(),
        });
    }
}
