//! `receiver_drops`: the receiving host threw data away.

use super::*;

/// What the drop checks found at one receiver: evidence, the sentences of the message and
/// of the suggestion.
#[derive(Default)]
struct Found {
    evidence: Vec<Evidence>,
    what: Vec<String>,
    fixes: Vec<String>,
}

/// `receiver_drops`: evidence that the receiving host threw data away, from its host
/// counters: UDP socket-buffer overflows (`Udp.RcvbufErrors`, `Udp6.RcvbufErrors`) that
/// account for at least a tenth of the datagrams lost (loss ≥ [`UDP_LOSS_MIN_PERCENT`]);
/// softnet backlog drops; TCP receive-queue, backlog and prune drops; NIC drops — each of
/// the last three at least [`MIN_DROPS`].
pub(super) fn receiver_drops(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    for f in &ctx.flows {
        let Some(r) = f.receiver else { continue };
        let Some(hc) = r.host_counters.as_ref() else {
            nj.push(format!(
                "receiver drops, delayed ACKs: the {} (receiver) reported no host counters",
                role_name(f.receiver_role)
            ));
            continue;
        };
        let mut found = Found::default();
        let mut confidence = Confidence::Medium;
        if let (false, Some(udp)) = (ctx.tcp, f.summary.udp.as_ref()) {
            if let Some(c) = udp_socket_drops(ctx, f, r, udp, &mut found) {
                confidence = c;
            }
        }
        if let Some(d) = hc
            .softnet
            .as_ref()
            .map(|s| s.dropped.total)
            .filter(|&d| d >= MIN_DROPS)
        {
            found.evidence.push(ev(
                "softnet_backlog_drops",
                d as f64,
                "count",
                Some(">= 10"),
            ));
            found.what.push(format!(
                "{d} packets dropped from full per-CPU input backlogs (softnet)"
            ));
            found
                .fixes
                .push("`sysctl -w net.core.netdev_max_backlog=10000`".to_string());
        }
        if ctx.tcp {
            tcp_queue_drops(r, &mut found);
        }
        if let Some(st) = hc.interface_stats.as_ref() {
            let d = st.rx_dropped + st.rx_fifo_errors;
            if d >= MIN_DROPS && d as f64 >= 1e-4 * st.rx_packets as f64 {
                let iface = hc.interface.as_deref().unwrap_or("IF");
                found
                    .evidence
                    .push(ev("nic_rx_drops", d as f64, "count", Some(">= 10")));
                found.what.push(format!(
                    "the interface {iface} dropped {d} received packets"
                ));
                found.fixes.push(format!(
                    "a larger receive ring: `ethtool -G {iface} rx 4096`"
                ));
            }
        }
        if found.what.is_empty() {
            continue;
        }
        out.push(Verdict {
            kind: VerdictKind::ReceiverDrops,
            side: Some(f.receiver_role),
            flow: Some(f.direction()),
            confidence,
            message: format!(
                "The {} dropped data it received: {}.",
                role_name(f.receiver_role),
                found.what.join("; ")
            ),
            suggestion: format!(
                "On the {}: {}.",
                role_name(f.receiver_role),
                found.fixes.join("; ")
            ),
            evidence: found.evidence,
        });
    }
}

/// The UDP half of `receiver_drops`: lost datagrams explained by receive-buffer overflows.
/// Without GRO each error is one datagram and the share of the loss they explain is
/// `errors ÷ lost` (high confidence ≥ 0.9). With GRO allowed (`udp_offload`) an error is up
/// to [`UDP_GRO_MAX_SEGMENTS`] datagrams, so the errors can explain at most
/// `errors × 64 ÷ lost` and confidence is at most medium.
fn udp_socket_drops(
    ctx: &Ctx<'_>,
    f: &Flow<'_>,
    r: &linerate_wire::report::SideReport,
    udp: &linerate_wire::report::UdpRxReport,
    out: &mut Found,
) -> Option<Confidence> {
    let evidence = &mut out.evidence;
    let loss = f.summary.loss_percent.unwrap_or(0.0);
    // Sequence gaps and datagrams lost after the last one that arrived.
    let lost = f.summary.lost_datagrams.unwrap_or(udp.lost);
    let errors = snmp_sum(r, &["Udp.RcvbufErrors", "Udp6.RcvbufErrors"]).unwrap_or(0);
    if lost == 0 || errors == 0 || loss < UDP_LOSS_MIN_PERCENT {
        return None;
    }
    let gro = ctx.rec.plan.udp_offload;
    let per_error = if gro { UDP_GRO_MAX_SEGMENTS } else { 1 };
    let share = errors.saturating_mul(per_error).min(lost) as f64 / lost as f64;
    if share < 0.1 {
        return None;
    }
    let confidence = match share {
        s if s >= 0.9 && !gro => Confidence::High,
        s if s >= 0.5 => Confidence::Medium,
        _ => Confidence::Low,
    };
    evidence.push(ev("udp_lost", lost as f64, "count", None));
    evidence.push(ev("udp_loss_percent", loss, "percent", Some(">= 0.1")));
    evidence.push(ev("udp_rcvbuf_errors", errors as f64, "count", Some("> 0")));
    evidence.push(ev(
        "lost_explained_by_rcvbuf_errors",
        share,
        "ratio",
        Some(">= 0.1"),
    ));
    let granted = f.rx_streams().iter().filter_map(|s| s.rcvbuf_bytes).min();
    if let Some(g) = granted {
        evidence.push(ev("rcvbuf_bytes", f64::from(g), "bytes", None));
    }
    out.what.push(format!(
        "the receiving socket buffer{} overflowed {errors} times (Udp.RcvbufErrors{}) against \
         {} datagrams lost ({loss:.2}%)",
        granted.map_or(String::new(), |g| format!(
            " (granted {})",
            format_bytes(u64::from(g))
        )),
        if gro {
            ", each up to 64 datagrams with GRO"
        } else {
            ""
        },
        lost
    ));
    out.fixes.push(format!(
        "raise the receive buffer ({}; the kernel caps it at net.core.rmem_max: \
         `sysctl -w net.core.rmem_max=16777216` on the {}) or receive on more streams (-P)",
        rcvbuf_flag(f.receiver_role),
        role_name(f.receiver_role)
    ));
    Some(confidence)
}

/// TCP receive-memory drops (`TCPRcvQDrop`, `TCPBacklogDrop`, `RcvPruned`, `OfoPruned`,
/// `TCPZeroWindowDrop`): at least [`MIN_DROPS`] and one per 10,000 segments received.
fn tcp_queue_drops(r: &linerate_wire::report::SideReport, out: &mut Found) {
    const NAMES: [&str; 5] = [
        "TcpExt.TCPRcvQDrop",
        "TcpExt.TCPBacklogDrop",
        "TcpExt.RcvPruned",
        "TcpExt.OfoPruned",
        "TcpExt.TCPZeroWindowDrop",
    ];
    let drops = snmp_sum(r, &NAMES).unwrap_or(0);
    let segs = snmp(r, "Tcp.InSegs").unwrap_or(0);
    if drops >= MIN_DROPS && drops as f64 >= 1e-4 * segs as f64 {
        out.evidence.push(ev(
            "tcp_receive_queue_drops",
            drops as f64,
            "count",
            Some(">= 10"),
        ));
        out.what.push(format!(
            "{drops} TCP segments dropped for lack of receive memory (TCPRcvQDrop, \
             TCPBacklogDrop, RcvPruned, OfoPruned, TCPZeroWindowDrop)"
        ));
        out.fixes.push(
            "more receive memory: raise net.ipv4.tcp_rmem's maximum and net.ipv4.tcp_mem"
                .to_string(),
        );
    }
}
