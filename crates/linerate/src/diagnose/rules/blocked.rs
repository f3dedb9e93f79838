//! `sender_blocked`: a TCP sender spent a large share of its window unable to hand the
//! kernel a byte, its socket buffer full because nothing was acknowledged: the path carried
//! nothing (a link down, a route gone) or the receiver took nothing (a zero window). Its rate
//! covers the whole window it was asked to send, so the stall is in the figure; this verdict
//! says where the time went.

use super::*;

/// `sender_blocked` for each TCP flow whose sender measured its blocked time.
pub(super) fn sender_blocked(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    if !ctx.tcp {
        return;
    }
    for f in &ctx.flows {
        let Some(blocked) = f.sender.and_then(|s| s.totals.tx_blocked_ns) else {
            continue;
        };
        let window = f.summary.sender_duration_ns;
        if window == 0 {
            continue;
        }
        let share = blocked as f64 / window as f64;
        if share < BLOCKED_SHARE {
            continue;
        }
        out.push(verdict(f, blocked, window, share));
    }
}

fn verdict(f: &Flow<'_>, blocked: u64, window: u64, share: f64) -> Verdict {
    let who = role_name(f.sender_role);
    let s = tcp_sums(&f.tx_streams());
    let rto = s.as_ref().and_then(|s| s.total_rto).filter(|&n| n > 0);
    let probes = s.as_ref().and_then(|s| s.probes).filter(|&n| n > 0);
    let mut evidence = vec![
        ev("sender_blocked_us", blocked as f64 / 1e3, "us", None),
        ev("sender_window_us", window as f64 / 1e3, "us", None),
        ev(
            "sender_blocked_share",
            share,
            "ratio",
            Some(&format!(">= {BLOCKED_SHARE}")),
        ),
    ];
    if let Some(n) = rto {
        evidence.push(ev("retransmission_timeouts", n as f64, "count", None));
    }
    if let Some(n) = probes {
        evidence.push(ev("zero_window_probes", f64::from(n), "count", None));
    }
    let cause = match (rto, probes) {
        (_, Some(_)) => "the receiver advertised a zero window (it stopped reading)",
        (Some(_), None) => {
            "nothing was acknowledged and TCP's retransmission timer fired: the path carried \
             nothing (a link down, a route gone) or the receiving host stopped answering"
        }
        _ => "the path or the receiver took no data (a link down, a receiver that stopped reading)",
    };
    Verdict {
        kind: VerdictKind::SenderBlocked,
        side: None,
        flow: Some(f.direction()),
        confidence: if share >= BLOCKED_HIGH_SHARE {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        message: format!(
            "the sender ({who}) was blocked {:.1} s of {:.1} s ({:.0}% of its window): its \
             socket buffer stayed full because {cause}; its rate covers the whole window, \
             the stall included",
            blocked as f64 / 1e9,
            window as f64 / 1e9,
            share * 100.0
        ),
        suggestion: "Look at the path and the receiver for the time of the stall (the interval \
                     reports show when: tx_blocked_ns per interval): link state, routes, the \
                     receiving host's load; then run the test again."
            .to_string(),
    }
}
