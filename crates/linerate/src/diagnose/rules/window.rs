//! `window_limited` and `window_oversized`: socket buffers against the bandwidth-delay product.

use super::*;

/// `window_limited` and `window_oversized` for each TCP flow.
///
/// BDP per stream = achieved rate ÷ streams × smoothed RTT (TCP_INFO `rtt`). The window
/// limits when TCP spent ≥ [`WINDOW_LIMITED_SHARE`] of its busy time rwnd- or
/// sndbuf-limited and the buffer behind the larger share (the receiver's SO_RCVBUF, or the
/// peer's advertised window when that end did not report; the sender's SO_SNDBUF) is ≤
/// [`WINDOW_BDP_FACTOR`] × BDP. A buffer that was requested and is ≥
/// [`WINDOW_OVERSIZED_FACTOR`] × the BDP at the larger of the achieved and link rates and
/// the *minimum* RTT is oversized.
pub(super) fn window(ctx: &Ctx<'_>, out: &mut Vec<Verdict>, nj: &mut Vec<String>) {
    if !ctx.tcp {
        return;
    }
    for f in &ctx.flows {
        let Some(s) = tcp_sums(&f.tx_streams()) else {
            nj.push(format!(
                "window ({}): the sender reported no TCP_INFO",
                crate::export::flow_label(f.direction())
            ));
            continue;
        };
        let Some(bps) = f.payload_bps().filter(|b| *b > 0.0) else {
            continue;
        };
        if s.srtt_us <= 0.0 {
            continue;
        }
        let n = s.streams as f64;
        let bdp = bps / 8.0 / n * s.srtt_us / 1e6;
        let limited = match (s.busy_us, s.rwnd_limited_us, s.sndbuf_limited_us) {
            (Some(b), Some(rw), Some(sb)) if b > 0 => {
                window_limited(ctx, f, &s, bps, bdp, (b, rw, sb))
            }
            _ => {
                nj.push(
                    "window limited: TCP_INFO has no busy/rwnd/sndbuf-limited times (Linux 4.10+)"
                        .to_string(),
                );
                None
            }
        };
        match limited {
            Some(v) => out.push(v),
            None => {
                if let Some(v) = oversized(ctx, f, &s, bps) {
                    out.push(v);
                }
            }
        }
    }
}

fn window_limited(
    ctx: &Ctx<'_>,
    f: &Flow<'_>,
    s: &facts::TcpSums,
    bps: f64,
    bdp: f64,
    (busy, rw, sb): (u64, u64, u64),
) -> Option<Verdict> {
    let rw_share = rw as f64 / busy as f64;
    let sb_share = sb as f64 / busy as f64;
    let share = (rw_share + sb_share).min(1.0);
    // How full the peer's advertised window was: bytes in flight at the achieved rate
    // (rate × RTT per stream) over the window (TCP_INFO snd_wnd, Linux 5.4+).
    let fill = s
        .snd_wnd_bytes
        .filter(|&w| w > 0)
        .map(|w| bdp / f64::from(w));
    let confidence = if share >= 0.8 {
        Confidence::High
    } else if share >= WINDOW_LIMITED_SHARE
        || (share >= WINDOW_SOME_SHARE && fill.is_some_and(|x| x >= WINDOW_FILL))
    {
        Confidence::Medium
    } else {
        return None;
    };
    let by_sender = sb_share >= rw_share;
    let buffer = if by_sender {
        f.tx_streams().iter().filter_map(|st| st.sndbuf_bytes).min()
    } else {
        f.rx_streams()
            .iter()
            .filter_map(|st| st.rcvbuf_bytes)
            .min()
            .or(s.snd_wnd_bytes)
    }?;
    if f64::from(buffer) > WINDOW_BDP_FACTOR * bdp {
        return None;
    }
    let (req_snd, req_rcv) = requested(ctx, f);
    let (end, what, flag, sysctl, was_requested) = if by_sender {
        (
            f.sender_role,
            "send buffer (SO_SNDBUF)",
            sndbuf_flag(f.sender_role),
            "net.core.wmem_max and net.ipv4.tcp_wmem",
            req_snd.is_some(),
        )
    } else {
        (
            f.receiver_role,
            "receive buffer (SO_RCVBUF)",
            rcvbuf_flag(f.receiver_role),
            "net.core.rmem_max and net.ipv4.tcp_rmem",
            req_rcv.is_some(),
        )
    };
    let mut evidence = vec![
        ev("rwnd_limited_share", rw_share, "ratio", None),
        ev("sndbuf_limited_share", sb_share, "ratio", None),
        ev(
            "window_limited_share",
            share,
            "ratio",
            Some(">= 0.5, or >= 0.25 with window_fill >= 0.5"),
        ),
        ev("srtt_us", s.srtt_us, "us", None),
        ev("payload_bps", bps, "bps", None),
        ev("bdp_bytes_per_stream", bdp, "bytes", None),
        ev(
            "limiting_buffer_bytes",
            f64::from(buffer),
            "bytes",
            Some("<= 4 x bdp"),
        ),
    ];
    if let Some(x) = fill {
        evidence.push(ev("window_fill", x, "ratio", None));
    }
    let target = capacity(ctx, f).map(|(cap, _)| cap / 8.0 / s.streams as f64 * s.srtt_us / 1e6);
    if let Some(t) = target {
        evidence.push(ev("bdp_bytes_at_link_rate", t, "bytes", None));
    }
    let size_hint = match target {
        Some(t) => format!(
            "at least 2 × the BDP at the link rate, {}",
            format_bytes((2.0 * t) as u64)
        ),
        None => format!("several times {}", format_bytes(u64::from(buffer))),
    };
    let how = if was_requested {
        format!("request a larger buffer ({flag}) of {size_hint}")
    } else {
        format!("autotuning stopped at {}: raise the maximum of {sysctl} on the {}, or request {size_hint} ({flag})", format_bytes(u64::from(buffer)), role_name(end))
    };
    Some(Verdict {
        kind: VerdictKind::WindowLimited,
        side: Some(end),
        flow: Some(f.direction()),
        confidence,
        evidence,
        message: format!(
            "The sender was limited by the {} {:.0}% of its busy time; the {}'s {what} of {} is about \
             the bandwidth-delay product {} = {} × {} RTT per stream, and throughput = window ÷ RTT.",
            if by_sender { "send buffer" } else { "receive window" },
            share * 100.0,
            role_name(end),
            format_bytes(u64::from(buffer)),
            format_bytes(bdp as u64),
            format_bps(bps / s.streams as f64),
            us(s.srtt_us),
        ),
        suggestion: format!("A larger window: {how}; the kernel caps requests at {sysctl}."),
    })
}

fn oversized(ctx: &Ctx<'_>, f: &Flow<'_>, s: &facts::TcpSums, bps: f64) -> Option<Verdict> {
    let (req_snd, req_rcv) = requested(ctx, f);
    let rtt_us = s.min_rtt_us.map_or(s.srtt_us, f64::from);
    if rtt_us <= 0.0 {
        return None;
    }
    let rate = capacity(ctx, f).map_or(bps, |(c, _)| c.max(bps));
    let bdp = rate / 8.0 / s.streams as f64 * rtt_us / 1e6;
    let granted_snd = f.tx_streams().iter().filter_map(|st| st.sndbuf_bytes).max();
    let granted_rcv = f.rx_streams().iter().filter_map(|st| st.rcvbuf_bytes).max();
    let candidates = [
        (req_snd, granted_snd, f.sender_role, "send buffer"),
        (req_rcv, granted_rcv, f.receiver_role, "receive buffer"),
    ];
    let (buffer, end, what) = candidates
        .into_iter()
        .filter_map(|(req, granted, end, what)| {
            Some((granted.or(req)?, end, what)).filter(|_| req.is_some())
        })
        .max_by_key(|c| c.0)?;
    let factor = f64::from(buffer) / bdp;
    if factor < WINDOW_OVERSIZED_FACTOR || u64::from(buffer) < WINDOW_OVERSIZED_MIN_BYTES {
        return None;
    }
    Some(Verdict {
        kind: VerdictKind::WindowOversized,
        side: Some(end),
        flow: Some(f.direction()),
        confidence: if factor >= 4.0 * WINDOW_OVERSIZED_FACTOR {
            Confidence::Medium
        } else {
            Confidence::Low
        },
        evidence: vec![
            ev("buffer_bytes", f64::from(buffer), "bytes", None),
            ev("min_rtt_us", rtt_us, "us", None),
            ev("rate_bps", rate, "bps", None),
            ev("bdp_bytes_per_stream", bdp, "bytes", None),
            ev("buffer_over_bdp", factor, "ratio", Some(">= 50")),
        ],
        message: format!(
            "The requested {what} on the {} ({}) is {factor:.0}× the bandwidth-delay product {} \
             ({} × {} minimum RTT per stream): it cannot raise throughput and lets queues, delay \
             and memory use grow.",
            role_name(end),
            format_bytes(u64::from(buffer)),
            format_bytes(bdp as u64),
            format_bps(rate / s.streams as f64),
            us(rtt_us),
        ),
        suggestion: format!(
            "Request about 2-4 × the BDP ({}), or leave the buffers to autotuning (no -w/-s/-S).",
            format_bytes((4.0 * bdp) as u64)
        ),
    })
}
