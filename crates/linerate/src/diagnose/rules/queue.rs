//! `queueing_delay`: the load's packets queue on the path and light traffic waits behind
//! them (`--latency`).

use super::*;
use crate::model::latency::LatencyUnderLoad;
use crate::model::units::format_duration_ns;

/// `queueing_delay` when a probe's loaded median is at least [`QUEUE_DELAY_FACTOR`] × its
/// idle median and at least [`QUEUE_DELAY_MIN_NS`] longer. High confidence when the other
/// probe (TCP and UDP both ran) shows the same factor, else medium.
pub(super) fn queueing_delay(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    let Some(l) = ctx.rec.latency_under_load.as_ref() else {
        return;
    };
    let (Some(ratio), Some(added)) = (l.increase_ratio, l.added_delay_ns) else {
        return;
    };
    if ratio < QUEUE_DELAY_FACTOR || added < QUEUE_DELAY_MIN_NS {
        return;
    }
    let probe = l.increase_probe.as_deref().unwrap_or("tcp");
    let (idle, loaded) = match probe {
        "udp" => (l.idle_udp.as_ref(), l.loaded_udp.as_ref()),
        _ => (l.idle_tcp.as_ref(), l.loaded_tcp.as_ref()),
    };
    let (Some(idle), Some(loaded)) = (idle, loaded) else {
        return;
    };
    let mut evidence = vec![
        ev(
            format!("idle_{probe}_p50_ns"),
            idle.p50_ns as f64,
            "ns",
            None,
        ),
        ev(
            format!("loaded_{probe}_p50_ns"),
            loaded.p50_ns as f64,
            "ns",
            None,
        ),
        ev("loaded_over_idle", ratio, "factor", Some(">= 5")),
        ev("added_delay_ns", added as f64, "ns", Some(">= 10 ms")),
    ];
    let other = other_ratio(l, probe);
    if let Some(r) = other {
        let name = if probe == "udp" { "tcp" } else { "udp" };
        evidence.push(ev(
            format!("{name}_loaded_over_idle"),
            r,
            "factor",
            Some(">= 5"),
        ));
    }
    let srtt = l.loaded_srtt_p50_us.map_or(String::new(), |us| {
        evidence.push(ev("loaded_srtt_p50_us", us, "us", None));
        format!(
            "; the loaded flows' own smoothed RTT was {} (TCP_INFO)",
            format_duration_ns((us * 1e3) as u64)
        )
    });
    let rpm = l.responsiveness.as_ref().map_or(String::new(), |r| {
        evidence.push(ev("rpm", r.rpm, "count", None));
        format!(
            " Responsiveness under the load: {:.0} RPM ({})",
            r.rpm, r.rating
        ) + &r
            .idle_rpm
            .map_or(".".to_string(), |i| format!(", {i:.0} RPM idle."))
    });
    let flow = ctx.flows.first().map(|f| f.direction());
    out.push(Verdict {
        kind: VerdictKind::QueueingDelay,
        side: None,
        flow,
        confidence: if other.is_some_and(|r| r >= QUEUE_DELAY_FACTOR) {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        message: format!(
            "The load's packets queued on the path: the {} probe's median round trip went \
             from {} idle to {} under load ({ratio:.0}×, {} added){srtt}.{rpm}",
            probe.to_uppercase(),
            format_duration_ns(idle.p50_ns),
            format_duration_ns(loaded.p50_ns),
            format_duration_ns(added.unsigned_abs()),
        ),
        suggestion: "Every packet behind the bottleneck waits for the queue the load built \
                     (bufferbloat): shorten the bottleneck's queue (a tbf or bfifo limit of a \
                     few milliseconds at its rate), use an AQM (fq_codel, cake) where the \
                     kernel has one, or a delay-based congestion control (-C bbr), and \
                     measure again with --latency."
            .to_string(),
    });
}

/// The other probe's loaded-over-idle median ratio, when both ran.
fn other_ratio(l: &LatencyUnderLoad, probe: &str) -> Option<f64> {
    let (idle, loaded) = if probe == "udp" {
        (l.idle_tcp.as_ref()?, l.loaded_tcp.as_ref()?)
    } else {
        (l.idle_udp.as_ref()?, l.loaded_udp.as_ref()?)
    };
    crate::model::latency::increase(idle, loaded).map(|(r, _)| r)
}
