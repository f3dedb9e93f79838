//! Docker Swarm for real: the FROM scratch image (scripts/image.sh), 6 agents and the
//! coordinator deployed from `linerate fleet manifests --engine swarm` on an overlay network
//! in 198.18.0.0/15, the credentials from Docker secrets, the results database on a bind
//! mount. Witnesses: the agents' own logs (`fleet: test ID start/end at=TIME role=source
//! target=...` from the agent that ran a test, `role=destination peer=...` from the one its
//! data went to), read with `docker logs` from each agent's container, for "no agent in two
//! tests at once" (each agent's own log alone),
//! the store the coordinator wrote for the pairs and their rounds, Docker's task states for
//! the coordinator's exit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::engine::Engine;

const AGENTS: usize = 6;
/// 30 ordered pairs of 6 agents in 2(N-1) = 10 rounds of 3 disjoint pairs.
const PAIRS: usize = AGENTS * (AGENTS - 1);
const ROUNDS: usize = 2 * (AGENTS - 1);
const PORT: u16 = 5301;
/// The overlay network's subnet (RFC 2544's benchmark range).
const SUBNET: &str = "198.18.0.0/24";

/// One fleet test as an agent logged it: as its source (the agent that ran it) or as its
/// destination.
#[derive(Debug, Clone)]
struct Logged {
    id: String,
    /// The agent whose log this is (its overlay address).
    agent: String,
    /// `source` or `destination`.
    role: String,
    /// The agent that ran it and the one it tested.
    source: String,
    target: String,
    start: SystemTime,
    end: Option<SystemTime>,
    status: Option<String>,
}

/// The value of `key=` in a log line (up to the next space).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

/// The fleet tests in one agent's log (`agent` is its address), as source or destination,
/// in the order they started; an end line closes the latest test of its id and role.
fn parse_log(agent: &str, log: &str) -> Vec<Logged> {
    let mut tests: Vec<Logged> = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.split("fleet: test ").nth(1) else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(id), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let at = field(rest, "at")
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
            .unwrap_or_else(|| panic!("no at=TIME in {line:?}"));
        let role = field(rest, "role")
            .unwrap_or_else(|| panic!("no role= in {line:?}"))
            .to_string();
        let (source, target) = if role == "destination" {
            let peer = field(rest, "peer").unwrap_or_else(|| panic!("no peer= in {line:?}"));
            (peer.to_string(), agent.to_string())
        } else {
            let target = field(rest, "target")
                .and_then(|t| t.rsplit_once(':'))
                .map(|(h, _)| h.trim_matches(['[', ']']).to_string())
                .unwrap_or_else(|| panic!("no target= in {line:?}"));
            (agent.to_string(), target)
        };
        match what {
            "start" => tests.push(Logged {
                id: id.to_string(),
                agent: agent.to_string(),
                role,
                source,
                target,
                start: at,
                end: None,
                status: None,
            }),
            "end" => {
                let t = tests
                    .iter_mut()
                    .rev()
                    .find(|t| t.id == id && t.role == role)
                    .unwrap_or_else(|| panic!("an end without a start: {line:?}"));
                t.end = Some(at);
                t.status = rest.split("status=").nth(1).map(str::to_string);
            }
            _ => {}
        }
    }
    tests
}

/// The agents' containers: (overlay address, container id), and every fleet test their
/// logs show: as source and as destination.
fn agents_and_logs(e: &Engine, service: &str) -> (BTreeMap<String, String>, Vec<Logged>) {
    let mut addrs = BTreeMap::new();
    let mut tests = Vec::new();
    for (id, _) in e.containers(service) {
        let ip = e
            .ok(&[
                "inspect",
                "--format",
                "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                &id,
            ])
            .split_whitespace()
            .next()
            .unwrap_or_else(|| panic!("container {id} has no address"))
            .to_string();
        let out = e.docker(&["logs", &id]);
        let log = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        tests.extend(parse_log(&ip, &log));
        addrs.insert(ip, id);
    }
    (addrs, tests)
}

/// The agents, and the tests they ran as source (one per ordered test).
fn agents_and_tests(e: &Engine, service: &str) -> (BTreeMap<String, String>, Vec<Logged>) {
    let (addrs, all) = agents_and_logs(e, service);
    (
        addrs,
        all.into_iter().filter(|t| t.role == "source").collect(),
    )
}

/// No agent in two tests at once, from each agent's own log alone: the tests it logged (as
/// source or destination), sorted by start, each starting after the one before ended. And
/// every test a source logged as ok its destination logged too, under the same id.
fn assert_no_overlap(all: &[Logged]) {
    let mut per_agent: BTreeMap<&str, Vec<&Logged>> = BTreeMap::new();
    for t in all {
        per_agent.entry(&t.agent).or_default().push(t);
    }
    for t in all
        .iter()
        .filter(|t| t.role == "source" && t.status.as_deref() == Some("ok"))
    {
        assert!(
            all.iter().any(|d| d.role == "destination"
                && d.id == t.id
                && d.agent == t.target
                && d.source == t.source
                && d.status.as_deref() == Some("ok")),
            "{} ({} -> {}) is not in its destination's own log; logged under that id: {:?}",
            t.id,
            t.source,
            t.target,
            all.iter().filter(|d| d.id == t.id).collect::<Vec<_>>()
        );
    }
    for (agent, mut ts) in per_agent {
        ts.sort_by_key(|t| t.start);
        for w in ts.windows(2) {
            // A test its agent was killed in has no end line: it ended at the kill, before
            // the agent's next start (its container's log goes on after its restart).
            let Some(end) = w[0].end else {
                continue;
            };
            assert!(
                w[1].start >= end,
                "agent {agent} was in two tests at once: {} ({} -> {}, until {}) and {} ({} -> {}, from {})",
                w[0].id,
                w[0].source,
                w[0].target,
                humantime::format_rfc3339_millis(end),
                w[1].id,
                w[1].source,
                w[1].target,
                humantime::format_rfc3339_millis(w[1].start),
            );
        }
    }
}

/// One stored pair: (source address, destination address) -> (round, ok).
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    round: u64,
    ok: bool,
    error: Option<String>,
}

/// The pairs of the fleet run `name` in the database the coordinator wrote: the latest
/// stored result of each ordered pair of the mesh phase.
fn stored_pairs(db: &Path, name: &str) -> BTreeMap<(String, String), Stored> {
    let store = linerate::store::Store::open(db).expect("open the coordinator's database");
    let mut out = BTreeMap::new();
    let mut each =
        |r: linerate::store::fleet::FleetRun<'_>| -> Result<(), linerate::store::StoreError> {
            let p: serde_json::Value = serde_json::from_str(r.point).expect("a pair's point");
            if p["phase"].as_str() != Some("mesh") {
                return Ok(());
            }
            let host = |k: &str| {
                let v = p[k].as_str().unwrap_or_else(|| panic!("no {k} in {p}"));
                v.rsplit_once(':')
                    .map(|(h, _)| h.trim_matches(['[', ']']).to_string())
                    .unwrap_or_else(|| panic!("{k} {v} is not HOST:PORT"))
            };
            let error = p["error"].as_str().map(str::to_string);
            out.insert(
                (host("source"), host("destination")),
                Stored {
                    round: p["round"].as_u64().expect("round"),
                    ok: error.is_none() && r.kind == "run",
                    error,
                },
            );
            Ok(())
        };
    store
        .each_fleet_run(name, &mut each)
        .expect("the fleet run's pairs");
    out
}

/// Every ordered pair of `agents`.
fn all_pairs(agents: &BTreeSet<String>) -> BTreeSet<(String, String)> {
    let mut v = BTreeSet::new();
    for a in agents {
        for b in agents {
            if a != b {
                v.insert((a.clone(), b.clone()));
            }
        }
    }
    v
}

struct Fleet<'a> {
    e: &'a mut Engine,
    stack: String,
    image: String,
    results: PathBuf,
    bin: &'static str,
}

impl Fleet<'_> {
    /// Writes the stack with `linerate fleet manifests` (these extra flags) and deploys it:
    /// the coordinator's job runs (again, when its command changed).
    fn deploy(&mut self, extra: &[&str]) {
        let out_dir = self.e.dir().join(format!(
            "stack-{}",
            extra.join("-").replace(['/', ','], "_")
        ));
        let mut cmd = std::process::Command::new(self.bin);
        cmd.args(["fleet", "manifests", "--engine", "swarm", "--out"])
            .arg(&out_dir)
            .args(["--image", &self.image, "--agents", &AGENTS.to_string()])
            .args(["--subnet", SUBNET, "--port", &PORT.to_string()])
            .args(["--auth-secret-name", &self.stack, "--wait", "120"])
            .arg("--results-dir")
            .arg(&self.results)
            .args(["--interference", "0"])
            .args(extra)
            .args(["--", "tcp", "-t", "1"]);
        let out = cmd.output().expect("run linerate fleet manifests");
        assert!(
            out.status.success(),
            "fleet manifests: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stack = self.stack.clone();
        self.e.deploy(&out_dir.join("stack.yaml"), &stack);
    }

    fn coordinator(&self) -> String {
        format!("{}_coordinator", self.stack)
    }

    fn agent_service(&self) -> String {
        format!("{}_agent", self.stack)
    }

    fn coordinator_logs(&self) -> String {
        let out = self
            .e
            .docker(&["service", "logs", "--raw", &self.coordinator()]);
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    /// Waits until the coordinator's job has run `runs` times; the state of its latest
    /// task ("complete" or "failed").
    fn wait_job(&self, runs: usize) -> String {
        let mut state = String::new();
        self.e.wait_for(
            "the coordinator's job ends",
            Duration::from_secs(300),
            || {
                let ids = self
                    .e
                    .ok(&["service", "ps", "-q", "--no-trunc", &self.coordinator()]);
                let ids: Vec<&str> = ids.split_whitespace().collect();
                if ids.len() < runs {
                    return false;
                }
                let mut args = vec!["inspect", "--format", "{{.CreatedAt}} {{.Status.State}}"];
                args.extend(&ids);
                let out = self.e.ok(&args);
                let mut tasks: Vec<(String, String)> = out
                    .lines()
                    .filter_map(|l| l.rsplit_once(' '))
                    .map(|(t, s)| (t.to_string(), s.to_string()))
                    .collect();
                tasks.sort();
                let ended = tasks
                    .iter()
                    .filter(|(_, s)| matches!(s.as_str(), "complete" | "failed" | "rejected"))
                    .count();
                match tasks.last() {
                    Some((_, s)) if ended >= runs => {
                        state = s.clone();
                        true
                    }
                    _ => false,
                }
            },
            || self.coordinator_logs(),
        );
        state
    }
}

#[test]
#[ignore = "needs root: starts dockerd and a Docker Swarm, builds an image"]
fn a_swarm_of_six_agents_runs_all_thirty_pairs_in_ten_rounds_and_resumes_after_a_killed_agent() {
    let mut e = Engine::start();
    let image = e.build_image();
    let stack = format!("lrt{}", std::process::id());
    let mut key = [0u8; 16];
    getrandom::getrandom(&mut key).expect("random bytes");
    let secret: String = key.iter().map(|b| format!("{b:02x}")).collect();
    e.secret(&format!("{stack}-users"), &format!("fleet:{secret}\n"));
    e.secret(&format!("{stack}-secret"), &format!("{secret}\n"));
    let results = e.dir().join("results");
    std::fs::create_dir_all(&results).expect("the results directory");
    let db = results.join("fleet.db");
    let mut f = Fleet {
        e: &mut e,
        stack,
        image,
        results,
        bin: env!("CARGO_BIN_EXE_linerate"),
    };

    // 1. A clean run: every ordered pair once, in 10 rounds of 3, each agent in one test
    //    at a time, every pair in the store.
    f.deploy(&["--run-name", "clean"]);
    let state = f.wait_job(1);
    let logs = f.coordinator_logs();
    assert_eq!(state, "complete", "the coordinator's job: {logs}");
    let (addrs, tests) = agents_and_tests(f.e, &f.agent_service());
    assert_eq!(addrs.len(), AGENTS, "agents: {addrs:?}");
    let agents: BTreeSet<String> = addrs.keys().cloned().collect();
    for a in &agents {
        let ip: std::net::Ipv4Addr = a.parse().expect("an IPv4 address");
        assert_eq!(ip.octets()[..3], [198, 18, 0], "{a} is not in {SUBNET}");
    }
    assert_eq!(
        tests.len(),
        PAIRS,
        "ordered tests in the agents' logs: {tests:#?}"
    );
    let logged: BTreeSet<(String, String)> = tests
        .iter()
        .map(|t| (t.source.clone(), t.target.clone()))
        .collect();
    assert_eq!(logged, all_pairs(&agents), "the pairs the agents ran");
    for t in &tests {
        assert_eq!(t.status.as_deref(), Some("ok"), "{t:?}");
    }
    assert_no_overlap(&agents_and_logs(f.e, &f.agent_service()).1);
    let stored = stored_pairs(&db, "clean");
    assert_eq!(
        stored.keys().cloned().collect::<BTreeSet<_>>(),
        all_pairs(&agents),
        "the pairs in the store"
    );
    let mut per_round: BTreeMap<u64, Vec<&(String, String)>> = BTreeMap::new();
    for (pair, s) in &stored {
        assert!(s.ok, "{pair:?} failed: {:?}", s.error);
        per_round.entry(s.round).or_default().push(pair);
    }
    assert_eq!(
        per_round.keys().copied().collect::<Vec<_>>(),
        (1..=ROUNDS as u64).collect::<Vec<_>>(),
        "rounds"
    );
    for (round, pairs) in &per_round {
        assert_eq!(pairs.len(), AGENTS / 2, "round {round}: {pairs:?}");
        let busy: BTreeSet<&String> = pairs.iter().flat_map(|(a, b)| [a, b]).collect();
        assert_eq!(
            busy.len(),
            AGENTS,
            "round {round}: pairs not disjoint: {pairs:?}"
        );
    }

    // 2. An agent killed mid-run (restart condition none: it stays dead): only its pairs
    //    fail, with a reason; the others all run.
    f.deploy(&["--run-name", "killed"]);
    // The service's logs hold the first run's rounds too: the agents' logs name the run
    // and the round in each test's id (killed-mesh-rR-...).
    let agent_service = f.agent_service();
    f.e.wait_for(
        "the second run's third round",
        Duration::from_secs(120),
        || {
            agents_and_tests(f.e, &agent_service)
                .1
                .iter()
                .filter(|t| t.id.starts_with("killed-mesh-r3-") && t.end.is_some())
                .count()
                == AGENTS / 2
        },
        || f.coordinator_logs(),
    );
    let (victim, victim_id) = addrs
        .iter()
        .next()
        .map(|(a, i)| (a.clone(), i.clone()))
        .expect("an agent");
    f.e.ok(&["kill", &victim_id]);
    let state = f.wait_job(2);
    let logs = f.coordinator_logs();
    assert_eq!(
        state, "failed",
        "the coordinator exits 1 when a pair failed: {logs}"
    );
    let stored = stored_pairs(&db, "killed");
    assert_eq!(
        stored.keys().cloned().collect::<BTreeSet<_>>(),
        all_pairs(&agents),
        "every pair stored, failed ones too"
    );
    let failed: Vec<&(String, String)> = stored
        .iter()
        .filter(|(_, s)| !s.ok)
        .map(|(p, _)| p)
        .collect();
    assert!(!failed.is_empty(), "no pair failed after the kill: {logs}");
    for (pair, s) in &stored {
        let involved = pair.0 == victim || pair.1 == victim;
        if !involved {
            assert!(
                s.ok,
                "{pair:?} does not involve the killed agent {victim} but failed: {:?}",
                s.error
            );
        }
        if !s.ok {
            assert!(involved, "{pair:?} failed without the killed agent");
            assert!(
                s.error.as_deref().is_some_and(|e| !e.is_empty()),
                "{pair:?}: no reason"
            );
        }
    }
    // Its pairs of the rounds before the kill ran: it took part until it was killed.
    assert!(
        stored
            .iter()
            .filter(|(p, s)| s.ok && (p.0 == victim || p.1 == victim))
            .count()
            >= 3,
        "the killed agent's first rounds: {stored:?}"
    );

    // 3. The agent comes back (its container started again, at its address; Swarm's DNS
    //    names running tasks only, so the coordinator is given it besides tasks.agent) and
    //    --resume runs exactly the failed pairs.
    f.e.ok(&["start", &victim_id]);
    let key = |t: &Logged| (t.source.clone(), t.id.clone(), t.start);
    let before: BTreeSet<_> = agents_and_tests(f.e, &f.agent_service())
        .1
        .iter()
        .map(key)
        .collect();
    f.deploy(&[
        "--resume",
        "killed",
        "--extra-agents",
        &format!("{victim}:{PORT}"),
    ]);
    let state = f.wait_job(3);
    let logs = f.coordinator_logs();
    assert_eq!(state, "complete", "the resumed coordinator: {logs}");
    let stored_after = stored_pairs(&db, "killed");
    for (pair, s) in &stored_after {
        assert!(s.ok, "{pair:?} still failed after --resume: {:?}", s.error);
    }
    assert_eq!(stored_after.len(), PAIRS);
    let (_, tests) = agents_and_tests(f.e, &f.agent_service());
    let rerun: BTreeSet<(String, String)> = tests
        .iter()
        .filter(|t| !before.contains(&key(t)))
        .map(|t| (t.source.clone(), t.target.clone()))
        .collect();
    let failed: BTreeSet<(String, String)> = failed.into_iter().cloned().collect();
    assert_eq!(rerun, failed, "--resume ran exactly the failed pairs");
    assert_no_overlap(&agents_and_logs(f.e, &f.agent_service()).1);
}
