//! A multicast test (`linerate udp GROUP --receivers A,B,C`): each receiver's `linerate
//! serve` is ordered to join the group over its own control session (authenticated where
//! it asks), this host sends to the group, then each receiver reports what it counted.
//! A receiver that cannot be reached or refuses is a row that says why; the others go on.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;

use linerate_wire::multicast::McastJoin;

use crate::engine::multicast as sender;
use crate::model::multicast::{McastPlan, MulticastRecord, ReceiverRow};
use crate::session::protocol::client::{self, Connection, Target};

/// A receiver that joined: its name, its session, the interface it joined on, whether it
/// shares this host's clock.
struct Joined {
    name: String,
    conn: Connection,
    interface: Option<String>,
    same_clock: bool,
}

/// Connects to one receiver and orders the join.
fn join_one(plan: &McastPlan, host: &str, port: u16, j: &McastJoin) -> anyhow::Result<Joined> {
    let target = Target {
        addr: client::resolve(host, port)?,
        server: format!("{host}:{port}"),
        connect_timeout: plan.connect_timeout,
        debug: plan.debug,
        auth: plan.auth.clone(),
    };
    let mut conn = client::connect(&target)?;
    let joined = conn.mcast_join(j.clone())?;
    let here = crate::sys::host::boot_id();
    Ok(Joined {
        name: target.server,
        conn,
        interface: joined.interface,
        same_clock: here.is_some() && here == joined.boot_id,
    })
}

/// Runs the test: the sender's socket first (a bad interface is the error before any
/// traffic), the joins, the datagrams, the reports.
pub fn run(plan: &McastPlan, interrupt: &AtomicBool) -> anyhow::Result<MulticastRecord> {
    let sock = crate::sys::multicast::sender(plan.group, plan.ttl, plan.interface.as_deref())
        .map_err(|e| anyhow::anyhow!("cannot send to {}: {e}", plan.group))?;
    let j = McastJoin {
        group: plan.group,
        port: plan.port,
        source: plan.source,
        duration_ms: u64::try_from(plan.duration.as_millis()).unwrap_or(u64::MAX),
        len: plan.len,
    };
    let mut rows: Vec<Option<ReceiverRow>> = Vec::new();
    let mut joined = Vec::new();
    for (host, port) in &plan.receivers {
        match join_one(plan, host, *port, &j) {
            Ok(r) => {
                rows.push(None);
                joined.push((rows.len() - 1, r));
            }
            Err(e) => rows.push(Some(ReceiverRow::not_joined(
                &format!("{host}:{port}"),
                format!("{e:#}"),
            ))),
        }
    }
    if !plan.receivers.is_empty() && joined.is_empty() {
        let why: Vec<String> = rows
            .iter()
            .flatten()
            .map(|r| format!("{}: {}", r.name, r.error.as_deref().unwrap_or("?")))
            .collect();
        anyhow::bail!("no receiver joined {}: {}", plan.group, why.join("; "));
    }
    let to = SocketAddr::new(plan.group, plan.port);
    let sent = sender::send(&sock, to, plan.len, plan.rate_bps, plan.duration, interrupt);
    for (i, r) in joined {
        let row = match r.conn.mcast_stop(sent.datagrams) {
            Ok(rep) => {
                ReceiverRow::from_report(&r.name, r.interface, &rep, sent.datagrams, r.same_clock)
            }
            Err(e) => ReceiverRow::no_report(&r.name, r.interface, format!("{e:#}")),
        };
        rows[i] = Some(row);
    }
    let mut rec = MulticastRecord {
        tool_version: crate::software(),
        group: plan.group.to_string(),
        port: plan.port,
        source: plan.source.map(|s| s.to_string()),
        ttl: plan.ttl,
        interface: plan.interface.clone(),
        len_bytes: plan.len,
        rate_bps: plan.rate_bps,
        sender: sent,
        receivers: rows.into_iter().flatten().collect(),
        warnings: Vec::new(),
    };
    if plan.receivers.is_empty() {
        rec.warnings.push(
            "no --receivers: only the sender's figures (name each receiving `linerate serve` with --receivers HOST[:PORT],...)".into(),
        );
    }
    rec.warnings.extend(rec.receiver_warnings());
    Ok(rec)
}
