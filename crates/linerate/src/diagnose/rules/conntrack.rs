//! `conntrack_drops`: the host's connection tracking threw packets away for want of an
//! entry. A TCP_CRR test makes a connection per transaction and conntrack keeps each closed
//! one for its TIME_WAIT time (120 s by default), so at thousands of transactions a second
//! the table fills and every new connection's SYN is dropped before TCP sees it: the
//! connect waits a retransmission time-out or times out, while the server is fine.

use super::*;
use linerate_wire::host::ConntrackCounters;
use linerate_wire::report::SideReport;

/// conntrack's default TIME_WAIT time (`nf_conntrack_tcp_timeout_time_wait`), seconds: the
/// record does not carry the host's value.
const TIME_WAIT_S: u64 = crate::sys::conntrack::DEFAULT_TIME_WAIT_S;

fn counters(side: &SideReport) -> Option<&ConntrackCounters> {
    side.host_counters.as_ref()?.conntrack.as_ref()
}

/// `conntrack_drops`: an end whose conntrack dropped at least [`MIN_CONNTRACK_DROPS`]
/// packets or failed an insert in the window. On one host (same boot id) with the same
/// figures at both ends (one namespace) it is named once, without a side.
pub(super) fn conntrack_drops(ctx: &Ctx<'_>, out: &mut Vec<Verdict>) {
    let client = counters(&ctx.rec.client);
    let server = ctx.rec.server.as_ref().and_then(counters);
    let one = ctx.same_host && client.is_some() && client == server;
    let ends = [(Role::Client, client), (Role::Server, server)];
    for (role, c) in ends {
        let Some(c) = c else { continue };
        if one && role == Role::Server {
            continue;
        }
        let side = ctx.rec.server.as_ref().filter(|_| role == Role::Server);
        let side = side.unwrap_or(&ctx.rec.client);
        if let Some(v) = verdict(ctx, role, side, c, one) {
            out.push(v);
        }
    }
}

fn verdict(
    ctx: &Ctx<'_>,
    role: Role,
    side: &SideReport,
    c: &ConntrackCounters,
    one_host: bool,
) -> Option<Verdict> {
    let drops = c.drops.unwrap_or(0);
    let failed = c.insert_failed.unwrap_or(0);
    if drops < MIN_CONNTRACK_DROPS && failed == 0 {
        return None;
    }
    let mut evidence = vec![ev("conntrack_drops", drops as f64, "count", Some(">= 1"))];
    if failed > 0 {
        evidence.push(ev(
            "conntrack_insert_failed",
            failed as f64,
            "count",
            Some(">= 1"),
        ));
    }
    let full = match (c.entries, c.max_entries) {
        (Some(n), Some(m)) if m > 0 => {
            evidence.push(ev("conntrack_entries", n as f64, "count", None));
            evidence.push(ev("conntrack_max_entries", m as f64, "count", None));
            n * 10 >= m * 9
        }
        _ => false,
    };
    let syn = snmp(side, "TcpExt.TCPSynRetrans");
    if let Some(s) = syn.filter(|&s| s > 0) {
        evidence.push(ev("tcp_syn_retransmits", s as f64, "count", None));
    }
    let who = if one_host {
        "this host".to_string()
    } else {
        format!("the {}", role_name(role))
    };
    let fill = match (c.entries, c.max_entries) {
        (Some(n), Some(m)) => format!(" with {n} of {m} entries in use (nf_conntrack_max)"),
        _ => String::new(),
    };
    let mut message =
        format!("Connection tracking on {who} dropped {drops} packets for want of an entry{fill}");
    if failed > 0 {
        message.push_str(&format!(" and failed {failed} inserts"));
    }
    message.push_str(
        " (/proc/net/stat/nf_conntrack): a full table drops the SYNs of new connections, which \
         then wait a retransmission time-out (1 s at first) or time out while the server is fine",
    );
    if let Some(s) = syn.filter(|&s| s > 0) {
        message.push_str(&format!("; TCP sent {s} SYNs again (TcpExt.TCPSynRetrans)"));
    }
    message.push('.');
    // What the test's own rate needs: a connection per transaction, each kept TIME_WAIT_S.
    let rate = ctx.rec.rr.as_ref().and_then(|r| {
        let conns = r.connections?;
        (r.duration_ns > 0).then(|| (conns as f64 * 1e9 / r.duration_ns as f64).ceil() as u64)
    });
    let need = match rate {
        Some(tps) if tps > 0 => format!(
            " above {} (this test's {tps} connections per second × {TIME_WAIT_S} s that \
             conntrack keeps a closed connection by default)",
            crate::sys::conntrack::entries_needed(tps, TIME_WAIT_S)
        ),
        _ => String::new(),
    };
    let place = if one_host {
        "On this host".to_string()
    } else {
        format!("On the {}", role_name(role))
    };
    Some(Verdict {
        kind: VerdictKind::ConntrackDrops,
        side: (!one_host).then_some(role),
        flow: None,
        confidence: if full || failed > 0 {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        message,
        suggestion: format!(
            "{place}: `sysctl -w net.netfilter.nf_conntrack_max=N` with N{need}, or leave the \
             test's traffic untracked (an nftables `notrack` rule for its ports); \
             `linerate doctor` compares the table with a TCP_CRR rate."
        ),
    })
}
