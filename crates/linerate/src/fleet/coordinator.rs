//! `linerate fleet run`: the agents, the rounds, each pair ordered from its source agent,
//! each result kept in the store as soon as it comes back, and the interference check.
//!
//! A round's pairs run at once, each on a thread of its own that holds one control session
//! to its source agent; the coordinator waits for the round, then starts the next. A pair
//! whose agent is dead or unreachable fails alone, with the reason; the other pairs of its
//! round go on. Every result (a failure too) is committed before the next one is looked
//! at, so a run interrupted at any point loses no finished pair, and `--resume NAME` runs
//! only the pairs that are missing or failed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linerate_wire::control::Feature;
use linerate_wire::fleet::FleetOrder;
use serde_json::json;

use super::plan::{rounds, Pair};
use super::record::{FleetRecord, PairPoint, PairRun, StoredPair};
use crate::model::plan::{Credentials, Debug};
use crate::model::RunRecord;
use crate::session::protocol::client::{self, Target};
use crate::store::entry::{self, Context};
use crate::store::{NewRun, Store};

/// An agent: how to reach its control port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AgentAddr {
    /// Host name or address.
    pub host: String,
    /// Control port.
    pub port: u16,
}

impl AgentAddr {
    /// `HOST:PORT` (`[ADDR]:PORT` for IPv6), as the records name it.
    pub fn name(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Every A and AAAA record of `name`, each at `port`, sorted; waits up to `wait` (one try a
/// second) until there are at least `expect`.
pub fn resolve_all(
    name: &str,
    port: u16,
    expect: Option<usize>,
    wait: Duration,
) -> anyhow::Result<Vec<AgentAddr>> {
    let until = Instant::now() + wait;
    loop {
        let found: BTreeSet<AgentAddr> = crate::sys::resolve::lookup(name, port)
            .map(|a| {
                a.into_iter()
                    .map(|s| AgentAddr {
                        host: crate::sys::sockets::canonical(s.ip()).to_string(),
                        port,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let enough = found.len() >= expect.unwrap_or(2).max(1);
        if enough || Instant::now() >= until {
            if !enough {
                anyhow::bail!(
                    "--agents-dns {name}: {} address(es) after {}, {} expected: check that the agents run (Swarm: tasks.SERVICE; Kubernetes: a headless Service) or raise --wait",
                    found.len(),
                    humantime::format_duration(wait),
                    expect.unwrap_or(2)
                );
            }
            return Ok(found.into_iter().collect());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// What a fleet run needs.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The fleet run's name.
    pub name: String,
    /// The agents, in plan order.
    pub agents: Vec<AgentAddr>,
    /// The test's words (`tcp -t 2 ...`).
    pub test: Vec<String>,
    /// The test's length (duration and warm-up).
    pub test_len: Duration,
    /// The coordinator's credentials.
    pub auth: Option<Credentials>,
    /// Pairs to re-run alone at the end.
    pub interference: usize,
    /// The command line, stored with each pair.
    pub argv: Vec<String>,
    /// Time to connect to an agent.
    pub connect_timeout: Duration,
}

/// How one pair went.
struct Outcome {
    pair: Pair,
    round: usize,
    beside: usize,
    record: Option<RunRecord>,
    error: Option<String>,
    phase: &'static str,
}

/// Progress lines on stderr.
fn say(line: &str) {
    eprintln!("linerate fleet: {line}");
}

/// Orders one pair's test from its source agent and waits for its record.
fn order_pair(cfg: &FleetConfig, pair: Pair, id: String) -> (Option<RunRecord>, Option<String>) {
    let (src, dst) = (&cfg.agents[pair.source], &cfg.agents[pair.destination]);
    let run = || -> anyhow::Result<(Option<RunRecord>, Option<String>)> {
        let target = Target {
            addr: client::resolve(&src.host, src.port)?,
            server: src.name(),
            connect_timeout: cfg.connect_timeout,
            debug: Debug(false),
            auth: cfg.auth.clone(),
        };
        let conn = client::connect(&target)?;
        if conn.welcome().is_some_and(|w| w.auth.is_none()) {
            anyhow::bail!(
                "the agent at {} does not ask for authentication, as every fleet agent (`serve --auth-users FILE --fleet-agent`) does: whatever answers there is not that agent, and nothing it says is taken",
                src.name()
            );
        }
        if !conn.features().has(Feature::FleetOrders) {
            let software = conn
                .welcome()
                .map(|w| linerate_wire::text::clip(&w.software, 64))
                .unwrap_or_default();
            anyhow::bail!(
                "the agent at {} ({software}) takes no fleet orders: it is older than the fleet_orders feature; run a newer linerate there with `serve --auth-users FILE --fleet-agent --fleet-coordinators USER`",
                src.name()
            );
        }
        let order = FleetOrder {
            id,
            test: cfg.test.clone(),
            target: dst.host.clone(),
            port: dst.port,
        };
        // The test's length, its connects and handshakes, and the results' time-outs.
        let wait = cfg.test_len + Duration::from_secs(45);
        let report = conn.order(order, wait)?;
        let record = match &report.record {
            Some(raw) => Some(
                agent_record(raw.get(), wait)
                    .map_err(|e| anyhow::anyhow!("the agent at {} {e}", src.name()))?,
            ),
            None => None,
        };
        Ok((record, report.error))
    };
    match run() {
        Ok((rec, err)) => {
            let err = err.or_else(|| {
                rec.is_none()
                    .then(|| format!("the agent at {} returned no record", src.name()))
            });
            (rec, err)
        }
        Err(e) => (None, Some(format!("{e:#}"))),
    }
}

/// An agent's record (JSON text, its strings already escaped and cut by the connection),
/// decoded straight into its type once its containers are counted, and refused when its
/// figures cannot be true of a test that ran at most `seen`; the error completes "the
/// agent at HOST:PORT ...".
pub fn agent_record(text: &str, seen: Duration) -> Result<RunRecord, String> {
    use linerate_wire::fleet::{containers, MAX_RECORD_CONTAINERS};
    let n = containers(text);
    if n > MAX_RECORD_CONTAINERS {
        return Err(format!(
            "sent a record of {n} objects and arrays, more than a test's record holds ({MAX_RECORD_CONTAINERS}): it is refused"
        ));
    }
    let rec: RunRecord = serde_json::from_str(text).map_err(|e| {
        format!(
            "sent a record that does not parse: {}",
            linerate_wire::text::clip(&e.to_string(), 200)
        )
    })?;
    if let Some(why) = super::record::PairFigures::of(&rec).implausible(seen) {
        return Err(format!("sent figures that are refused: {why}"));
    }
    Ok(rec)
}

/// Stores one pair at once (its own transaction); the run's id.
fn keep(store: &mut Store, cfg: &FleetConfig, o: &Outcome) -> anyhow::Result<i64> {
    let (src, dst) = (&cfg.agents[o.pair.source], &cfg.agents[o.pair.destination]);
    let point = PairPoint {
        fleet: cfg.name.clone(),
        phase: o.phase.to_string(),
        test: cfg.test.clone(),
        agents: cfg.agents.iter().map(AgentAddr::name).collect(),
        source: src.name(),
        destination: dst.name(),
        round: o.round,
        beside: o.beside,
        error: o.error.clone(),
    };
    let ctx = Context {
        command: cfg.test.first().cloned().unwrap_or_default(),
        argv: cfg.argv.clone(),
        tags: vec![format!("fleet:{}", cfg.name)],
        exit_code: Some(if o.error.is_some() { 2 } else { 0 }),
    };
    let mut run = match &o.record {
        Some(rec) => entry::run_meta(rec, &ctx),
        None => NewRun {
            command: ctx.command.clone(),
            kind: "fleet_failed".into(),
            started_at: crate::session::server::order::now_rfc3339(),
            server: Some(dst.name()),
            tool_version: crate::software(),
            argv: ctx.argv.clone(),
            params: json!({}),
            hosts: json!({}),
            headline: Some("failed".into()),
            exit_code: ctx.exit_code,
            record: json!({ "fleet_failure": o.error }),
            tags: ctx.tags.clone(),
            ..NewRun::default()
        },
    };
    if o.record.is_some() && o.error.is_some() {
        // Measured but failed (e.g. cut short): kept as a failure with what it measured.
        run.headline = Some(format!(
            "failed: {}",
            linerate_wire::text::clip(o.error.as_deref().unwrap_or(""), 80)
        ));
    }
    run.point = Some(linerate_wire::json::to_value(&point)?);
    // A record's text goes to the database as it is written, never as a tree.
    match &o.record {
        Some(rec) => Ok(store.insert_with_record(&run, &serde_json::to_string(rec)?)?),
        None => Ok(store.insert(&run)?),
    }
}

/// The stored pairs of the fleet run `name`, each with what its record gives
/// ([`PairRun`]): the rows are read one at a time and each record is dropped once read, so
/// what this holds is a few hundred bytes a pair, whatever the records' size.
pub fn stored_pairs(store: &Store, name: &str) -> anyhow::Result<Vec<StoredPair>> {
    let mut out = Vec::new();
    store.each_fleet_run(name, &mut |r| -> anyhow::Result<()> {
        let point: PairPoint = serde_json::from_str(r.point)?;
        let run = if r.kind == "run" {
            serde_json::from_str::<RunRecord>(r.record)
                .ok()
                .map(|rec| PairRun::of(&rec))
        } else {
            None
        };
        out.push(StoredPair {
            id: r.id,
            point,
            run,
        });
        Ok(())
    })?;
    Ok(out)
}

/// The record of the fleet run `name` as the store holds it (the agents of its latest
/// pair's plan, then any other agent its pairs name), and its stored pairs; `None` when the
/// store has no pair of that name.
pub fn stored_record(
    store: &Store,
    name: &str,
) -> anyhow::Result<Option<(FleetRecord, Vec<StoredPair>)>> {
    let stored = stored_pairs(store, name)?;
    let Some(last) = stored.last() else {
        return Ok(None);
    };
    let mut agents = last.point.agents.clone();
    for s in &stored {
        for a in [&s.point.source, &s.point.destination] {
            if !agents.contains(a) {
                agents.push(a.clone());
            }
        }
    }
    let test = last.point.test.clone();
    let rec = FleetRecord::from_runs(name, &test, &agents, rounds(agents.len()).len(), &stored);
    Ok(Some((rec, stored)))
}

/// The ordered pairs (source, destination) that a stored run of this fleet name already
/// ran (`--resume`); an error if that run's test differs from this one's.
fn already_done(
    cfg: &FleetConfig,
    store: &mut Store,
    names: &[String],
    rounds: usize,
) -> anyhow::Result<BTreeSet<(String, String)>> {
    let before = stored_pairs(store, &cfg.name)?;
    let done: BTreeSet<(String, String)> = {
        let rec = FleetRecord::from_runs(&cfg.name, &cfg.test, names, rounds, &before);
        rec.pairs
            .iter()
            .filter(|p| p.status == super::record::PairStatus::Ok)
            .map(|p| (p.source.clone(), p.destination.clone()))
            .collect()
    };
    if let Some(first) = before.first() {
        if first.point.test != cfg.test {
            anyhow::bail!(
                "--resume {}: that fleet run's test was `{}`, not `{}`: give the same test after `--`",
                cfg.name,
                first.point.test.join(" "),
                cfg.test.join(" ")
            );
        }
    }
    Ok(done)
}

/// The interference check: the pairs whose mesh result is lowest, among those that ran
/// beside others, run again alone, one at a time, and stored.
fn interference_check(
    cfg: &FleetConfig,
    store: &mut Store,
    interrupt: &AtomicBool,
    names: &[String],
    rec: &FleetRecord,
) -> anyhow::Result<()> {
    // The pairs whose mesh result is lowest, among those that ran beside others:
    // those are the ones a neighbour could have disturbed.
    let chosen: Vec<(usize, usize, Pair)> = rec
        .worst(rec.pairs.len())
        .into_iter()
        .filter(|p| p.beside > 0)
        .take(cfg.interference)
        .filter_map(|p| {
            let s = names.iter().position(|n| n == &p.source)?;
            let d = names.iter().position(|n| n == &p.destination)?;
            Some((
                p.round,
                p.beside,
                Pair {
                    source: s,
                    destination: d,
                },
            ))
        })
        .collect();
    for (round, beside, pair) in chosen {
        if interrupt.load(Ordering::SeqCst) {
            break;
        }
        say(&format!(
            "interference check: {} -> {} (round {round}) alone",
            names[pair.source], names[pair.destination]
        ));
        run_at_once(cfg, &[pair], round, beside, "alone", &mut |o| {
            keep(store, cfg, &o).map(|_| ())
        })?;
    }
    Ok(())
}

/// Runs the rounds (skipping the pairs `done` names as ran), then the interference check;
/// returns the fleet's record from the store.
pub fn run(
    cfg: &FleetConfig,
    store: &mut Store,
    interrupt: &AtomicBool,
) -> anyhow::Result<FleetRecord> {
    let plan = rounds(cfg.agents.len());
    let names: Vec<String> = cfg.agents.iter().map(AgentAddr::name).collect();
    let done = already_done(cfg, store, &names, plan.len())?;
    let total = plan.iter().map(Vec::len).sum::<usize>();
    say(&format!(
        "{}: {} agents, {} pairs in {} rounds{}",
        cfg.name,
        cfg.agents.len(),
        total,
        plan.len(),
        if done.is_empty() {
            String::new()
        } else {
            format!(", {} already done", done.len())
        }
    ));
    for (i, round) in plan.iter().enumerate() {
        if interrupt.load(Ordering::SeqCst) {
            break;
        }
        let todo: Vec<Pair> = round
            .iter()
            .copied()
            .filter(|p| !done.contains(&(names[p.source].clone(), names[p.destination].clone())))
            .collect();
        if todo.is_empty() {
            continue;
        }
        let beside = todo.len() - 1;
        let mut failed = 0;
        run_at_once(cfg, &todo, i + 1, beside, "mesh", &mut |o| {
            if o.error.is_some() {
                failed += 1;
                say(&format!(
                    "round {}: {} -> {} failed: {}",
                    i + 1,
                    names[o.pair.source],
                    names[o.pair.destination],
                    o.error.as_deref().unwrap_or("")
                ));
            }
            keep(store, cfg, &o).map(|_| ())
        })?;
        say(&format!(
            "round {}/{}: {} pairs, {} failed",
            i + 1,
            plan.len(),
            todo.len(),
            failed
        ));
    }
    let after = stored_pairs(store, &cfg.name)?;
    let rec = FleetRecord::from_runs(&cfg.name, &cfg.test, &names, plan.len(), &after);
    if cfg.interference > 0 && rec.interference.is_empty() && !interrupt.load(Ordering::SeqCst) {
        interference_check(cfg, store, interrupt, &names, &rec)?;
    }
    let after = stored_pairs(store, &cfg.name)?;
    Ok(FleetRecord::from_runs(
        &cfg.name,
        &cfg.test,
        &names,
        plan.len(),
        &after,
    ))
}

/// Runs `pairs` at once, one thread each, and hands each outcome to `done` on this thread
/// as soon as it ends (the pairs still running go on meanwhile).
fn run_at_once(
    cfg: &FleetConfig,
    pairs: &[Pair],
    round: usize,
    beside: usize,
    phase: &'static str,
    done: &mut dyn FnMut(Outcome) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for &pair in pairs {
            let tx = tx.clone();
            s.spawn(move || {
                let id = format!(
                    "{}-{phase}-r{round}-{}-{}",
                    cfg.name, pair.source, pair.destination
                );
                let (record, error) = order_pair(cfg, pair, id);
                let _ = tx.send(Outcome {
                    pair,
                    round,
                    beside,
                    record,
                    error,
                    phase,
                });
            });
        }
        drop(tx);
        let mut first_error = None;
        for o in rx {
            if let Err(e) = done(o) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}
