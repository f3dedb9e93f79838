//! `window_limited` and `window_oversized`: socket buffers against the bandwidth-delay product.

use super::*;

/// `window_limited` and `window_oversized` for each TCP flow.
///
/// First a tiny buffer ([`tiny_window`]): a granted SO_SNDBUF or SO_RCVBUF under
/// [`WINDOW_MIN_SEGMENTS`] × the path's MSS limits whatever the RTT. Otherwise BDP per stream = achieved rate ÷ streams × smoothed RTT (TCP_INFO `rtt`). The window
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
        // A paced flow that met its pace was held back by the pace, not by its window.
        if flow_met_pace(ctx, f) {
            continue;
        }
        let Some(s) = tcp_sums(&f.tx_streams()) else {
            nj.push(format!(
                "window ({}): the sender reported no TCP_INFO",
                crate::model::labels::flow_label(f.direction())
            ));
            continue;
        };
        let Some(bps) = f.payload_bps().filter(|b| *b > 0.0) else {
            continue;
        };
        if let Some(v) = tiny_window(ctx, f, &s, bps) {
            out.push(v);
            continue;
        }
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
    /// `buffer` is the peer's advertised window (the receiver sent no report), not a
    /// granted SO_RCVBUF.
    buffer_is_window: bool,
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
    // TCP_INFO's busy time includes the rwnd- and sndbuf-limited times; sums that say
    // otherwise are not a kernel's.
    if rw.saturating_add(sb) > busy {
        nj.push(format!(
            "window ({}): TCP_INFO's rwnd- and sndbuf-limited times exceed its busy time",
            crate::model::labels::flow_label(f.direction())
        ));
        return None;
    }
    let rw_share = rw as f64 / busy as f64;
    let sb_share = sb as f64 / busy as f64;
    let share = rw_share + sb_share;
    // How full the peer's advertised window was: bytes in flight at the achieved rate
    // (rate × RTT per stream) over the window (TCP_INFO snd_wnd, Linux 5.4+). A window is
    // at most full: an estimate above (an RTT inflated by queueing, a window that shrank at
    // the end) counts as full.
    let fill = s
        .snd_wnd_bytes
        .filter(|&w| w > 0)
        .map(|w| (bdp / f64::from(w)).min(1.0));
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
    let granted = if by_sender {
        f.tx_streams().iter().filter_map(|st| st.sndbuf_bytes).min()
    } else {
        f.rx_streams().iter().filter_map(|st| st.rcvbuf_bytes).min()
    };
    let buffer_is_window = granted.is_none() && !by_sender;
    let buffer = if by_sender {
        granted
    } else {
        granted.or(s.snd_wnd_bytes)
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
                crate::model::labels::flow_label(f.direction())
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
        buffer_is_window,
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
    let floor = advice_floor(s.path_mss, b.by_sender);
    let target = capacity(ctx, f).map(|(cap, _)| cap / 8.0 / s.streams as f64 * s.srtt_us / 1e6);
    let evidence = window_evidence(s, bps, bdp, b, target);
    // Never advise less than the window had, WINDOW_MIN_SEGMENTS segments or the kernel's
    // minimum.
    let size_hint = match target {
        Some(t) if (2.0 * t) as u64 > buffer.max(floor) => format!(
            "at least 2 × the BDP at the link rate, {}",
            format_bytes((2.0 * t) as u64)
        ),
        _ => format!("several times {}", format_bytes(buffer.max(floor))),
    };
    let (req_snd, req_rcv) = requested(ctx, f);
    let asked = if b.by_sender { req_snd } else { req_rcv };
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
    // Name what the figure is: a granted buffer (with the request, if any), or the window
    // the receiver advertised when it sent no report.
    let holder = if b.buffer_is_window {
        format!(
            "window the {} advertised ({} at the end)",
            role_name(end),
            format_bytes(buffer)
        )
    } else {
        let requested = match asked {
            Some(r) => format!(", {} requested", format_bytes(u64::from(r))),
            None => ", autotuned".to_string(),
        };
        format!(
            "{}'s {what}, granted {}{requested},",
            role_name(end),
            format_bytes(buffer)
        )
    };
    Verdict {
        kind: VerdictKind::WindowLimited,
        side: Some(end),
        flow: Some(f.direction()),
        confidence: b.confidence,
        evidence,
        message: format!(
            "The sender was limited by the {} {:.0}% of its busy time; the {holder} is about \
             the bandwidth-delay product {} = {} × {} RTT per stream, and throughput = window \
             ÷ RTT.",
            if b.by_sender {
                "send buffer"
            } else {
                "receive window"
            },
            b.share * 100.0,
            format_bytes(bdp as u64),
            format_bps(bps / s.streams as f64),
            us(s.srtt_us),
        ),
        suggestion: format!("A larger window: {how}; the kernel caps requests at {sysctl}."),
    }
}

/// The smallest buffer any advice names: [`WINDOW_MIN_SEGMENTS`] segments of the path's MSS
/// and the kernel's minimum for that buffer (send or receive), in whole KiB.
fn advice_floor(path_mss: f64, send_buffer: bool) -> u64 {
    let kernel_min = if send_buffer {
        KERNEL_MIN_SNDBUF_BYTES
    } else {
        KERNEL_MIN_RCVBUF_BYTES
    };
    let want = (WINDOW_MIN_SEGMENTS * path_mss.max(0.0)).max(kernel_min as f64);
    (want / 1024.0).ceil() as u64 * 1024
}

/// The figures behind a `window_limited` verdict.
fn window_evidence(
    s: &facts::TcpSums,
    bps: f64,
    bdp: f64,
    b: &Bound,
    target: Option<f64>,
) -> Vec<Evidence> {
    // The share alone, or a lower share with a window at least half full.
    let by_share = b.share >= WINDOW_LIMITED_SHARE;
    let mut evidence = vec![
        ev("rwnd_limited_share", b.rw_share, "ratio", None),
        ev("sndbuf_limited_share", b.sb_share, "ratio", None),
        ev(
            "window_limited_share",
            b.share,
            "ratio",
            Some(if by_share { ">= 0.5" } else { ">= 0.25" }),
        ),
        ev("srtt_us", s.srtt_us, "us", None),
        ev("payload_bps", bps, "bps", None),
        ev("bdp_bytes_per_stream", bdp, "bytes", None),
        ev("limiting_buffer_bytes", f64::from(b.buffer), "bytes", None),
        ev(
            "buffer_over_bdp",
            f64::from(b.buffer) / bdp,
            "factor",
            Some("<= 4"),
        ),
    ];
    if let Some(x) = b.fill {
        let met = !by_share;
        evidence.push(ev("window_fill", x, "ratio", met.then_some(">= 0.5")));
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
        (req_snd, granted_snd, f.sender_role, "send buffer", true),
        (
            req_rcv,
            granted_rcv,
            f.receiver_role,
            "receive buffer",
            false,
        ),
    ];
    let (buffer, req, granted, end, what, send_buffer) = candidates
        .into_iter()
        .filter_map(|(req, granted, end, what, snd)| {
            let r = req?;
            Some((granted.unwrap_or(r), r, granted, end, what, snd))
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
            ev(
                "buffer_bytes",
                f64::from(buffer),
                "bytes",
                Some(">= 262144"),
            ),
            ev("min_rtt_us", rtt_us, "us", None),
            ev("rate_bps", rate, "bps", None),
            ev("bdp_bytes_per_stream", bdp, "bytes", None),
            ev("buffer_over_bdp", factor, "factor", Some(">= 50")),
        ],
        message: format!(
            "The {what} on the {} ({}) is {factor:.0}× the bandwidth-delay product {} ({} × {} \
             minimum RTT per stream): it cannot raise throughput and lets queues, delay and \
             memory use grow.",
            role_name(end),
            match granted {
                Some(g) => format!(
                    "{} requested, {} granted",
                    format_bytes(u64::from(req)),
                    format_bytes(u64::from(g))
                ),
                None => format!("{} requested", format_bytes(u64::from(req))),
            },
            format_bytes(bdp as u64),
            format_bps(rate / s.streams as f64),
            us(rtt_us),
        ),
        suggestion: format!(
            "Request about {} (2-4 × the BDP, and no less than {WINDOW_MIN_SEGMENTS:.0} segments \
             or the kernel's minimum), or leave the buffers to autotuning (no -w/-s/-S).",
            format_bytes(((4.0 * bdp) as u64).max(advice_floor(s.path_mss, send_buffer)))
        ),
    })
}

/// The flow's sender reached at least [`PACE_ACHIEVED_FRACTION`] of a paced rate.
fn flow_met_pace(ctx: &Ctx<'_>, f: &Flow<'_>) -> bool {
    ctx.rec.plan.rate_bps.filter(|r| *r > 0).is_some_and(|r| {
        f.summary
            .sender_bps
            .is_some_and(|s| s >= PACE_ACHIEVED_FRACTION * r as f64)
    })
}

/// The evidence metric that marks a `window_limited` verdict as a tiny buffer (the
/// retransmission rule leaves such a flow alone: its retransmissions are the timers').
pub(super) const TINY_WINDOW_METRIC: &str = "buffer_in_segments";

/// One end's granted buffer against the path's MSS.
struct Tiny {
    by_sender: bool,
    granted: u32,
    requested: Option<u32>,
    segments: f64,
}

/// The smallest granted buffer under [`WINDOW_MIN_SEGMENTS`] × `mss`: the sender's
/// SO_SNDBUF or the receiver's SO_RCVBUF; both tiny, the one TCP_INFO's times (`chrono`:
/// busy, rwnd- and sndbuf-limited µs) say held the sender back longer, else the smaller.
fn tiny_buffer(
    ctx: &Ctx<'_>,
    f: &Flow<'_>,
    mss: f64,
    chrono: Option<(u64, u64, u64)>,
) -> Option<Tiny> {
    let (req_snd, req_rcv) = requested(ctx, f);
    let snd = f.tx_streams().iter().filter_map(|st| st.sndbuf_bytes).min();
    let rcv = f.rx_streams().iter().filter_map(|st| st.rcvbuf_bytes).min();
    let tiny = |by_sender: bool, granted: Option<u32>, requested: Option<u32>| {
        let granted = granted.filter(|&g| g > 0)?;
        let segments = f64::from(granted) / mss;
        (segments < WINDOW_MIN_SEGMENTS).then_some(Tiny {
            by_sender,
            granted,
            requested,
            segments,
        })
    };
    let t = match (tiny(true, snd, req_snd), tiny(false, rcv, req_rcv)) {
        (Some(a), Some(b)) => {
            // Both tiny: the one TCP_INFO says held the sender back longer, else the smaller.
            let sender_first = match chrono {
                Some((_, rw, sb)) if rw != sb => sb > rw,
                _ => a.segments <= b.segments,
            };
            if sender_first {
                a
            } else {
                b
            }
        }
        (a, b) => a.or(b)?,
    };
    Some(t)
}

/// The share of the busy time TCP_INFO counts as limited by the tiny buffer `t` (`chrono`:
/// busy, rwnd- and sndbuf-limited µs), added to `evidence`: the words for the message, and
/// whether it reaches [`WINDOW_LIMITED_SHARE`].
fn limited_share(
    t: &Tiny,
    (busy, rw, sb): (u64, u64, u64),
    evidence: &mut Vec<Evidence>,
) -> (String, bool) {
    let limited = if t.by_sender { sb } else { rw };
    let share = limited as f64 / busy as f64;
    let name = if t.by_sender { "sndbuf" } else { "rwnd" };
    evidence.push(ev(format!("{name}_limited_us"), limited as f64, "us", None));
    evidence.push(ev("busy_time_us", busy as f64, "us", None));
    let met = share >= WINDOW_LIMITED_SHARE;
    evidence.push(ev(
        format!("{name}_limited_share"),
        share,
        "ratio",
        met.then_some(">= 0.5"),
    ));
    let text = format!(
        "; TCP_INFO counts {} of its {} busy time ({:.0}%) as limited by the {}",
        secs(limited),
        secs(busy),
        share * 100.0,
        if t.by_sender {
            "send buffer"
        } else {
            "receive window"
        }
    );
    (text, met)
}

/// The tiny buffer's end, its name, the flag that asks for it, the sysctl that caps it and
/// the kernel's minimum for it.
fn buffer_words(t: &Tiny, f: &Flow<'_>) -> (Role, &'static str, &'static str, &'static str, u64) {
    if t.by_sender {
        (
            f.sender_role,
            "send buffer (SO_SNDBUF)",
            sndbuf_flag(f.sender_role),
            "net.core.wmem_max",
            KERNEL_MIN_SNDBUF_BYTES,
        )
    } else {
        (
            f.receiver_role,
            "receive buffer (SO_RCVBUF)",
            rcvbuf_flag(f.receiver_role),
            "net.core.rmem_max",
            KERNEL_MIN_RCVBUF_BYTES,
        )
    }
}

/// `window_limited` for a buffer under [`WINDOW_MIN_SEGMENTS`] × the path's MSS: the
/// sender's granted SO_SNDBUF or the receiver's granted SO_RCVBUF (the smallest over the
/// flow's streams). The timers then set the rate, so the BDP test does not apply, and a
/// slow reader cannot explain it away. Confidence is high when TCP_INFO says the window or
/// the send buffer held the sender back for ≥ [`WINDOW_LIMITED_SHARE`] of its busy time,
/// or when time-outs, zero-window advertisements or probes show the stalls; medium
/// otherwise.
fn tiny_window(ctx: &Ctx<'_>, f: &Flow<'_>, s: &facts::TcpSums, bps: f64) -> Option<Verdict> {
    let mss = s.path_mss;
    if mss <= 0.0 {
        return None;
    }
    let chrono = match (s.busy_us, s.rwnd_limited_us, s.sndbuf_limited_us) {
        (Some(b), Some(rw), Some(sb)) if b > 0 && rw.saturating_add(sb) <= b => Some((b, rw, sb)),
        _ => None,
    };
    let t = tiny_buffer(ctx, f, mss, chrono)?;
    let mut evidence = vec![
        ev("limiting_buffer_bytes", f64::from(t.granted), "bytes", None),
        ev("path_mss_bytes", mss, "bytes", None),
        ev(TINY_WINDOW_METRIC, t.segments, "factor", Some("< 4")),
        ev("payload_bps", bps, "bps", None),
    ];
    if let Some(r) = t.requested {
        evidence.push(ev("requested_buffer_bytes", f64::from(r), "bytes", None));
    }
    let (limited_text, mut corroborated) = chrono.map_or((String::new(), false), |c| {
        limited_share(&t, c, &mut evidence)
    });
    let stalls = stalls(f, s);
    corroborated |= !stalls.evidence.is_empty();
    evidence.extend(stalls.evidence);
    if let Some(r) = f.summary.retransmits.filter(|&r| r > 0) {
        evidence.push(ev("retransmits", r as f64, "count", None));
    }
    let (end, what, flag, sysctl, kernel_min) = buffer_words(&t, f);
    // The request to make: WINDOW_MIN_SEGMENTS segments at least, twice the BDP at the
    // link rate when that is known, never below the kernel's minimum; whole KiB.
    let at_link = capacity(ctx, f).map_or(0.0, |(cap, _)| {
        2.0 * cap / 8.0 / s.streams as f64 * s.srtt_us.max(0.0) / 1e6
    });
    let want = (WINDOW_MIN_SEGMENTS * mss)
        .max(at_link)
        .max(kernel_min as f64);
    let want = (want / 1024.0).ceil() as u64 * 1024;
    let requested_text = t.requested.map_or(String::new(), |r| {
        if u64::from(r) < kernel_min {
            format!(
                " ({} requested, raised to the kernel's minimum and doubled)",
                format_bytes(u64::from(r))
            )
        } else {
            format!(
                " ({} requested; the kernel doubles a request)",
                format_bytes(u64::from(r))
            )
        }
    });
    Some(Verdict {
        kind: VerdictKind::WindowLimited,
        side: Some(end),
        flow: Some(f.direction()),
        confidence: if corroborated {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        message: format!(
            "The {}'s {what} was granted {}{requested_text}, {:.2} segments of the path's MSS \
             ({}): with fewer than {WINDOW_MIN_SEGMENTS:.0} segments in flight the sender \
             stalls on zero windows and timers{} instead of being clocked by ACKs, and reached \
             {}{limited_text}.",
            role_name(end),
            format_bytes(u64::from(t.granted)),
            t.segments,
            format_bytes(mss as u64),
            stalls.text,
            format_bps(bps),
        ),
        suggestion: format!(
            "Request a buffer of at least {} ({flag}): {WINDOW_MIN_SEGMENTS:.0} × the MSS{}; \
             the kernel doubles a request, raises one below its minimum ({} for this buffer) \
             and caps it at {sysctl}. Or leave the buffers to autotuning (no -w/-s/-S).",
            format_bytes(want),
            if at_link > WINDOW_MIN_SEGMENTS * mss {
                " and twice the BDP at the link rate"
            } else {
                ""
            },
            format_bytes(kernel_min),
        ),
    })
}

/// Evidence that a flow stalled on timers: retransmission time-outs (TCP_INFO
/// `total_rto`, Linux 6.7+, else the sender's `TcpExt.TCPTimeouts`), zero-window probes
/// (the sender's `TcpExt.TCPWinProbe`, and TCP_INFO `probes` outstanding at the end) and
/// zero windows advertised (the receiver's `TcpExt.TCPToZeroWindowAdv`). The SNMP figures
/// are host-wide; only nonzero ones are given.
struct Stalls {
    evidence: Vec<Evidence>,
    text: String,
}

fn stalls(f: &Flow<'_>, s: &facts::TcpSums) -> Stalls {
    let mut evidence = Vec::new();
    let mut parts = Vec::new();
    let rto = s
        .total_rto
        .map(|n| (n, "rto_timeouts"))
        .or_else(|| {
            f.sender
                .and_then(|r| snmp(r, "TcpExt.TCPTimeouts"))
                .map(|n| (n, "tcp_timeouts_host"))
        })
        .filter(|(n, _)| *n > 0);
    if let Some((n, metric)) = rto {
        evidence.push(ev(metric, n as f64, "count", Some("> 0")));
        parts.push(format!("{n} retransmission time-outs"));
        if let Some(ms) = s.total_rto_time_ms.filter(|&m| m > 0) {
            evidence.push(ev("rto_recovery_us", ms as f64 * 1000.0, "us", None));
        }
    }
    if let Some(n) = f
        .sender
        .and_then(|r| snmp(r, "TcpExt.TCPWinProbe"))
        .filter(|&n| n > 0)
    {
        evidence.push(ev(
            "zero_window_probes_host",
            n as f64,
            "count",
            Some("> 0"),
        ));
        parts.push(format!("{n} zero-window probes"));
    } else if let Some(p) = s.probes.filter(|&p| p > 0) {
        evidence.push(ev(
            "persist_probes_at_end",
            f64::from(p),
            "count",
            Some("> 0"),
        ));
        parts.push(format!("{p} persist probes unanswered at the end"));
    }
    if let Some(n) = f
        .receiver
        .and_then(|r| snmp(r, "TcpExt.TCPToZeroWindowAdv"))
        .filter(|&n| n > 0)
    {
        evidence.push(ev(
            "zero_window_adverts_host",
            n as f64,
            "count",
            Some("> 0"),
        ));
        parts.push(format!("{n} zero windows advertised"));
    }
    let text = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    Stalls { evidence, text }
}

/// "4.83 s" or "120 ms" for a time in µs.
fn secs(us_: u64) -> String {
    if us_ >= 1_000_000 {
        format!("{:.2} s", us_ as f64 / 1e6)
    } else {
        format!("{:.0} ms", us_ as f64 / 1e3)
    }
}
