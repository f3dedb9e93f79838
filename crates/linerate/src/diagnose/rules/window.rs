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
                window_limited(ctx, f, &s, bps, bdp, (b, rw, sb), nj)
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

/// Why the receiver may have been a slow reader: its CPUs were all busy, or its linerate
/// threads each used a whole CPU. A window that fills then says nothing about the buffer's
/// size (on one busy host the smoothed RTT inflates with scheduling delay, and with it the
/// apparent BDP), so an autotuned buffer is not blamed.
///
/// Over loopback the path's RTT is microseconds, so an autotuned buffer always covers its
/// BDP: a full window there is the reader too.
fn slow_reader(ctx: &Ctx<'_>, f: &Flow<'_>) -> Option<String> {
    if ctx.loopback {
        return Some("the test ran over loopback, where autotuned buffers cover the path".into());
    }
    let end = ctx.end(f.receiver_role)?;
    if let Some(c) = end.cpu().filter(|c| c.util_percent >= CPU_ALL_BUSY_PERCENT) {
        return Some(format!(
            "the receiver's CPUs were {} busy",
            pct(c.util_percent)
        ));
    }
    threads_saturated(end).map(|t| {
        format!(
            "the receiver's linerate threads used {} of a CPU each",
            pct(t)
        )
    })
}

/// What [`window_limited`] established: the chrono shares, which buffer binds, and how
/// strongly.
struct Bound {
    rw_share: f64,
    sb_share: f64,
    share: f64,
    fill: Option<f64>,
    confidence: Confidence,
    by_sender: bool,
    buffer: u32,
    was_requested: bool,
}

fn window_limited(
    ctx: &Ctx<'_>,
    f: &Flow<'_>,
    s: &facts::TcpSums,
    bps: f64,
    bdp: f64,
    (busy, rw, sb): (u64, u64, u64),
    nj: &mut Vec<String>,
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
    let was_requested = if by_sender {
        req_snd.is_some()
    } else {
        req_rcv.is_some()
    };
    if !was_requested {
        if let Some(why) = slow_reader(ctx, f) {
            nj.push(format!(
                "window ({}): {why}, so a full autotuned window may be a slow reader rather \
                 than a small buffer",
                crate::export::flow_label(f.direction())
            ));
            return None;
        }
    }
    let b = Bound {
        rw_share,
        sb_share,
        share,
        fill,
        confidence,
        by_sender,
        buffer,
        was_requested,
    };
    Some(window_verdict(ctx, f, s, bps, bdp, &b))
}

fn window_verdict(
    ctx: &Ctx<'_>,
    f: &Flow<'_>,
    s: &facts::TcpSums,
    bps: f64,
    bdp: f64,
    b: &Bound,
) -> Verdict {
    let (end, what, flag, sysctl) = if b.by_sender {
        (
            f.sender_role,
            "send buffer (SO_SNDBUF)",
            sndbuf_flag(f.sender_role),
            "net.core.wmem_max and net.ipv4.tcp_wmem",
        )
    } else {
        (
            f.receiver_role,
            "receive buffer (SO_RCVBUF)",
            rcvbuf_flag(f.receiver_role),
            "net.core.rmem_max and net.ipv4.tcp_rmem",
        )
    };
    let buffer = u64::from(b.buffer);
    let target = capacity(ctx, f).map(|(cap, _)| cap / 8.0 / s.streams as f64 * s.srtt_us / 1e6);
    let evidence = window_evidence(s, bps, bdp, b, target);
    let size_hint = match target {
        Some(t) => format!(
            "at least 2 × the BDP at the link rate, {}",
            format_bytes((2.0 * t) as u64)
        ),
        None => format!("several times {}", format_bytes(buffer)),
    };
    let how = if b.was_requested {
        format!("request a larger buffer ({flag}) of {size_hint}")
    } else {
        format!(
            "autotuning stopped at {}: raise the maximum of {sysctl} on the {}, or request \
             {size_hint} ({flag})",
            format_bytes(buffer),
            role_name(end)
        )
    };
    Verdict {
        kind: VerdictKind::WindowLimited,
        side: Some(end),
        flow: Some(f.direction()),
        confidence: b.confidence,
        evidence,
        message: format!(
            "The sender was limited by the {} {:.0}% of its busy time; the {}'s {what} of {} is \
             about the bandwidth-delay product {} = {} × {} RTT per stream, and throughput = \
             window ÷ RTT.",
            if b.by_sender {
                "send buffer"
            } else {
                "receive window"
            },
            b.share * 100.0,
            role_name(end),
            format_bytes(buffer),
            format_bytes(bdp as u64),
            format_bps(bps / s.streams as f64),
            us(s.srtt_us),
        ),
        suggestion: format!("A larger window: {how}; the kernel caps requests at {sysctl}."),
    }
}

/// The figures behind a `window_limited` verdict.
fn window_evidence(
    s: &facts::TcpSums,
    bps: f64,
    bdp: f64,
    b: &Bound,
    target: Option<f64>,
) -> Vec<Evidence> {
    let mut evidence = vec![
        ev("rwnd_limited_share", b.rw_share, "ratio", None),
        ev("sndbuf_limited_share", b.sb_share, "ratio", None),
        ev(
            "window_limited_share",
            b.share,
            "ratio",
            Some(">= 0.5, or >= 0.25 with window_fill >= 0.5"),
        ),
        ev("srtt_us", s.srtt_us, "us", None),
        ev("payload_bps", bps, "bps", None),
        ev("bdp_bytes_per_stream", bdp, "bytes", None),
        ev(
            "limiting_buffer_bytes",
            f64::from(b.buffer),
            "bytes",
            Some("<= 4 x bdp"),
        ),
    ];
    if let Some(x) = b.fill {
        evidence.push(ev("window_fill", x, "ratio", None));
    }
    if let Some(t) = target {
        evidence.push(ev("bdp_bytes_at_link_rate", t, "bytes", None));
    }
    evidence
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
