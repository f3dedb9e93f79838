//! `delayed_ack_stalls` of a bounceback (`rr --bounceback`): exchanges that wait for the
//! delayed-ACK timer. With TCP_QUICKACK off, a request (or response) that leaves in more
//! than one segment, the last one held back by Nagle's algorithm until the first is ACKed,
//! waits for the peer's delayed ACK: Linux's minimum delayed-ACK time is 40 ms
//! (`TCP_DELACK_MIN`, HZ/25), so the exchanges' median, less the server's hold, sits at 40 ms
//! or more while the counters show the delayed-ACK timer firing about once an exchange.

use super::*;

/// Linux's minimum delayed-ACK time (`TCP_DELACK_MIN`), ns.
pub const DELACK_MIN_NS: u64 = 40_000_000;
/// Share of [`DELACK_MIN_NS`] the median exchange, hold left out, must reach: 0.9 (the timer
/// is a jiffy-granular timer, which may fire a little early against the exchange's clock).
pub const DELACK_MEDIAN_SHARE: f64 = 0.9;
/// Delayed ACKs per exchange (both ends' `TcpExt.DelayedACKs`) that corroborate the stall.
pub const DELACK_PER_EXCHANGE: f64 = 0.5;

/// A bounceback whose median exchange, less the hold, is at least 0.9 × 40 ms with
/// TCP_QUICKACK off and delayed ACKs counted for at least half of the exchanges.
pub(super) fn bounceback_stalls(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    let Some(rr) = ctx.rec.rr.as_ref() else {
        return;
    };
    let (Some(bb), Some(lat)) = (rr.bounceback, rr.latency.as_ref()) else {
        return;
    };
    if bb.quickack || rr.transactions == 0 {
        return;
    }
    let stall_ns = lat.p50_ns.saturating_sub(bb.hold_ns);
    if (stall_ns as f64) < DELACK_MEDIAN_SHARE * DELACK_MIN_NS as f64 {
        return;
    }
    let acks = [Some(&ctx.rec.client), ctx.rec.server.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|s| snmp(s, "TcpExt.DelayedACKs"))
        .max();
    let Some(acks) = acks else { return };
    // On one host both ends read the same counters: the larger is the host's.
    let per_exchange = acks as f64 / rr.transactions as f64;
    if per_exchange < DELACK_PER_EXCHANGE {
        return;
    }
    let nagle = !ctx.rec.plan.nodelay;
    out.push(Verdict {
        kind: VerdictKind::DelayedAckStalls,
        side: None,
        flow: None,
        confidence: if nagle {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence: vec![
            ev(
                "exchange_p50_less_hold_ns",
                stall_ns as f64,
                "ns",
                Some(">= 36000000"),
            ),
            ev("delayed_acks", acks as f64, "count", None),
            ev(
                "delayed_acks_per_exchange",
                per_exchange,
                "ratio",
                Some(">= 0.5"),
            ),
        ],
        message: format!(
            "The median exchange took {:.1} ms beyond the server's hold with TCP_QUICKACK off, \
             and the delayed-ACK timer fired {acks} times for {} exchanges: each exchange waits \
             for a delayed ACK (at least 40 ms on Linux){}.",
            stall_ns as f64 / 1e6,
            rr.transactions,
            if nagle {
                ", Nagle's algorithm holding the last segment of a message until then"
            } else {
                ""
            }
        ),
        suggestion: "Leave TCP_QUICKACK on (drop --bounceback-no-quickack) and Nagle off (drop \
                     --nagle), or write each message in one segment."
            .to_string(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::control::Bounceback;
    use linerate_wire::host::HostCounters;

    /// The TCP_RR fixture as a bounceback of 1000 exchanges held 1 ms, with `p50_ns` as its
    /// median and `acks` delayed ACKs at the server.
    fn record(quickack: bool, p50_ns: u64, acks: u64) -> crate::model::RunRecord {
        let mut rec = crate::model::fixtures::tcp_rr();
        rec.plan.nodelay = false;
        let rr = rec.rr.as_mut().unwrap();
        rr.transactions = 1000;
        rr.bounceback = Some(Bounceback {
            burst: 10,
            period_ns: 1_000_000_000,
            hold_ns: 1_000_000,
            quickack,
        });
        rr.latency.as_mut().unwrap().p50_ns = p50_ns;
        rec.server.as_mut().unwrap().host_counters = Some(HostCounters {
            snmp: Some([("TcpExt.DelayedACKs".to_string(), acks)].into()),
            ..HostCounters::default()
        });
        rec
    }

    fn verdicts(rec: &crate::model::RunRecord) -> Vec<Verdict> {
        let ctx = Ctx::new(rec);
        let mut out = Vec::new();
        bounceback_stalls(&ctx, &mut out);
        out
    }

    #[test]
    fn a_forty_ms_median_with_delayed_acks_is_a_stall() {
        let v = verdicts(&record(false, 42_000_000, 990));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, VerdictKind::DelayedAckStalls);
        assert_eq!(v[0].confidence, Confidence::High, "Nagle was on");
        assert!(
            v[0].message.contains("41.0 ms beyond the server's hold"),
            "{}",
            v[0].message
        );
        // Quick ACKs on, a short median, or no delayed ACKs counted: no stall claimed.
        assert!(verdicts(&record(true, 42_000_000, 990)).is_empty());
        assert!(verdicts(&record(false, 30_000_000, 990)).is_empty());
        assert!(verdicts(&record(false, 42_000_000, 100)).is_empty());
    }
}
