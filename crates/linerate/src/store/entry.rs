//! What each kind of record is stored with: the columns `history` filters and lists by
//! (server, host names, headline), the flat parameters and both ends' host facts, derived
//! from the record itself so that nothing stored is not in the record or on this host.

use serde_json::{json, Map, Value};

use super::NewRun;
use crate::model::doctor::DoctorRecord;
use crate::model::repeat::{metrics_of, primary_metric};
use crate::model::sweep::SweepRecord;
use crate::model::units::format_metric;
use crate::model::{RunRecord, RunSetRecord};
use crate::rfc2544::record::Rfc2544Record;

/// Who ran it and how: the parts of a stored run that are not in its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// The command: tcp, udp, rr, rfc2544, doctor, sweep.
    pub command: String,
    /// The command line.
    pub argv: Vec<String>,
    /// `--tag` labels.
    pub tags: Vec<String>,
    /// The command's exit code.
    pub exit_code: Option<i32>,
}

/// A plan (any JSON object) as flat parameters: nested objects joined with `.`, arrays
/// kept as JSON text.
pub fn flatten(v: &Value) -> Value {
    fn walk(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, out);
                }
            }
            Value::Array(_) => {
                out.insert(prefix.to_string(), Value::String(v.to_string()));
            }
            Value::Null => {}
            _ => {
                out.insert(prefix.to_string(), v.clone());
            }
        }
    }
    let mut out = Map::new();
    walk("", v, &mut out);
    Value::Object(out)
}

/// This host's sysctls that matter for throughput (doctor reads the same), as facts.
pub fn local_sysctls() -> Value {
    let s = crate::doctor::read::sysctls();
    json!({
        "net.core.rmem_max": s.rmem_max,
        "net.core.wmem_max": s.wmem_max,
        "net.core.rmem_default": s.rmem_default,
        "net.core.wmem_default": s.wmem_default,
        "net.core.netdev_max_backlog": s.netdev_max_backlog,
        "net.ipv4.tcp_rmem": s.tcp_rmem,
        "net.ipv4.tcp_wmem": s.tcp_wmem,
        "net.ipv4.tcp_congestion_control": s.congestion_control,
        "net.ipv4.tcp_window_scaling": s.window_scaling,
        "net.ipv4.tcp_timestamps": s.timestamps,
        "net.ipv4.tcp_sack": s.sack,
    })
}

/// Both ends' host facts of a test: host (kernel, CPUs, boot id), the interface toward the
/// peer (driver, firmware, MTU, speed, offloads, coalescing, rings, qdisc), and this host's
/// sysctls. The server's sysctls are not in a test's record: `linerate doctor HOST` stores
/// them.
pub fn hosts_of(rec: &RunRecord) -> Value {
    let side =
        |s: &linerate_wire::report::SideReport| json!({ "host": s.host, "interface": s.interface });
    json!({
        "client": side(&rec.client),
        "server": rec.server.as_ref().map(side),
        "client_sysctls": local_sysctls(),
    })
}

fn headline_of(rec: &RunRecord) -> (Option<String>, Option<String>, Option<f64>) {
    let p = primary_metric(rec);
    match metrics_of(rec).into_iter().find(|(d, _)| d.name == p.name) {
        Some((d, v)) => (
            Some(format!("{} {}", d.label, format_metric(d.name, v))),
            Some(d.name.to_string()),
            Some(v),
        ),
        None => (None, Some(p.name.to_string()), None),
    }
}

/// A single test (tcp, udp, rr).
pub fn run(rec: &RunRecord, ctx: &Context) -> NewRun {
    NewRun {
        record: linerate_wire::json::to_value(rec).unwrap_or(Value::Null),
        ..run_meta(rec, ctx)
    }
}

/// [`run`] without the record (`Value::Null`): for a caller that stores the record's text
/// itself ([`crate::store::Store::insert_with_record`]).
pub fn run_meta(rec: &RunRecord, ctx: &Context) -> NewRun {
    let (headline, metric, value) = headline_of(rec);
    NewRun {
        command: ctx.command.clone(),
        kind: "run".into(),
        started_at: rec.started_at.clone(),
        server: Some(rec.plan.server.clone()),
        client_host: rec.client.host.hostname.clone(),
        server_host: rec.server.as_ref().and_then(|s| s.host.hostname.clone()),
        tool_version: rec.tool_version.clone(),
        argv: ctx.argv.clone(),
        params: flatten(&linerate_wire::json::to_value(&rec.plan).unwrap_or(Value::Null)),
        hosts: hosts_of(rec),
        headline,
        primary_metric: metric,
        primary_value: value,
        exit_code: ctx.exit_code,
        record: Value::Null,
        tags: ctx.tags.clone(),
        sweep_id: None,
        point: None,
    }
}

/// A repeated test (`--repeat`, `--confidence`): its first run gives the plan and hosts, the
/// mean of the primary metric the headline.
pub fn run_set(set: &RunSetRecord, ctx: &Context) -> NewRun {
    let mut base = match set.runs.first() {
        Some(first) => run(first, ctx),
        None => NewRun {
            command: ctx.command.clone(),
            argv: ctx.argv.clone(),
            tags: ctx.tags.clone(),
            exit_code: ctx.exit_code,
            tool_version: set.tool_version.clone(),
            params: json!({}),
            hosts: json!({}),
            ..NewRun::default()
        },
    };
    base.kind = "trials".into();
    let m = set.metrics.iter().find(|m| m.name == set.primary_metric);
    base.primary_metric = Some(set.primary_metric.clone());
    base.primary_value = m.map(|m| m.mean);
    base.headline = m.map(|m| {
        format!(
            "mean {} over {} runs",
            format_metric(&m.name, m.mean),
            set.runs.len()
        )
    });
    base.record = linerate_wire::json::to_value(set).unwrap_or(Value::Null);
    base
}

/// An RFC 2544 run: the headline is the throughput of the smallest frame size that has
/// one.
pub fn rfc2544(rec: &Rfc2544Record, ctx: &Context) -> NewRun {
    let tput = rec.frame_sizes.iter().find_map(|f| {
        let fps = f
            .throughput
            .as_ref()?
            .goals
            .iter()
            .find_map(|g| g.throughput_fps)?;
        Some((f.frame_size, fps))
    });
    NewRun {
        command: ctx.command.clone(),
        kind: "rfc2544".into(),
        started_at: rec.started_at.clone(),
        server: Some(rec.plan.server.clone()),
        client_host: crate::sys::host::host_info(&crate::software()).hostname,
        server_host: None,
        tool_version: rec.tool_version.clone(),
        argv: ctx.argv.clone(),
        params: flatten(&linerate_wire::json::to_value(&rec.plan).unwrap_or(Value::Null)),
        hosts: json!({
            "client": { "host": crate::sys::host::host_info(&crate::software()) },
            "client_sysctls": local_sysctls(),
        }),
        headline: tput.map(|(size, fps)| format!("throughput {size} B: {fps:.0} frames/s")),
        primary_metric: tput.map(|_| "throughput_fps".to_string()),
        primary_value: tput.map(|t| t.1),
        exit_code: ctx.exit_code,
        record: linerate_wire::json::to_value(rec).unwrap_or(Value::Null),
        tags: ctx.tags.clone(),
        sweep_id: None,
        point: None,
    }
}

/// A doctor report: its findings are the host facts of both ends.
pub fn doctor(rec: &DoctorRecord, started_at: &str, ctx: &Context) -> NewRun {
    let warn = |r: &linerate_wire::doctor::DoctorReport| {
        r.findings
            .iter()
            .filter(|f| !matches!(f.severity, linerate_wire::doctor::Severity::Ok))
            .count()
    };
    let issues = warn(&rec.local) + rec.server.as_ref().map_or(0, warn);
    NewRun {
        command: ctx.command.clone(),
        kind: "doctor".into(),
        started_at: started_at.to_string(),
        server: rec.server_address.clone(),
        client_host: rec.local.host.as_ref().and_then(|h| h.hostname.clone()),
        server_host: rec
            .server
            .as_ref()
            .and_then(|s| s.host.as_ref())
            .and_then(|h| h.hostname.clone()),
        tool_version: rec.tool_version.clone(),
        argv: ctx.argv.clone(),
        params: json!({}),
        hosts: json!({ "client": rec.local, "server": rec.server }),
        headline: Some(format!("{issues} findings to look at")),
        primary_metric: None,
        primary_value: None,
        exit_code: ctx.exit_code,
        record: linerate_wire::json::to_value(rec).unwrap_or(Value::Null),
        tags: ctx.tags.clone(),
        sweep_id: None,
        point: None,
    }
}

/// A sweep: its record holds every point (each point's runs are stored as runs of their
/// own that name the sweep); the headline is the best point's sentence.
pub fn sweep(rec: &SweepRecord, ctx: &Context) -> NewRun {
    let server = rec.points.iter().find_map(|p| {
        p.runs
            .as_ref()
            .and_then(|s| s.runs.first())
            .map(|r| r.plan.server.clone())
    });
    NewRun {
        command: ctx.command.clone(),
        kind: "sweep".into(),
        started_at: rec.started_at.clone(),
        server,
        client_host: crate::sys::host::host_info(&crate::software()).hostname,
        server_host: None,
        tool_version: rec.tool_version.clone(),
        argv: ctx.argv.clone(),
        params: json!({
            "test": rec.test.join(" "),
            "points": rec.points.len(),
            "best_by": rec.best_by,
        }),
        hosts: json!({
            "client": { "host": crate::sys::host::host_info(&crate::software()) },
            "client_sysctls": local_sysctls(),
        }),
        headline: rec
            .best
            .as_ref()
            .map(|b| format!("best point {} of {}", b.point, rec.points.len())),
        primary_metric: rec.best.as_ref().map(|b| b.metric.clone()),
        primary_value: rec.best.as_ref().map(|b| b.mean),
        exit_code: ctx.exit_code,
        record: linerate_wire::json::to_value(rec).unwrap_or(Value::Null),
        tags: ctx.tags.clone(),
        sweep_id: None,
        point: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatten_joins_nested_keys_and_drops_nulls() {
        let v = json!({"a": 1, "b": {"c": "x", "d": null}, "e": [1, 2]});
        assert_eq!(flatten(&v), json!({"a": 1, "b.c": "x", "e": "[1,2]"}));
    }
}
