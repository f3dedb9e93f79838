//! `linerate fleet run` over a bridge (root): 6 hosts, each a namespace with one veth to a
//! switch namespace's bridge, each host's link shaped to 50 Mbit/s with tbf in both
//! directions (the host's egress and the switch port's egress towards it), an agent
//! (`serve --auth-users --fleet-agent`) in each host and the coordinator in the switch.
//! Addresses from 198.18.0.0/15. Everything is removed on drop.
//!
//! * The mesh: all 30 ordered pairs in 10 rounds of 3 pairs at once; every pair's TCP
//!   goodput is the shaped rate less the headers (tbf counts whole frames) within 5 %, and
//!   each host's interface byte counters (`/sys/class/net`, read by the test) agree with
//!   the bytes the records say its pairs sent; every pair is in the store; no agent ran
//!   two tests at once (its own log's times, as source and as destination); the
//!   interference check re-runs 3 pairs alone, each at the shaped rate (its verdicts are
//!   asserted by the next test).
//! * An agent killed mid-run fails only its pairs, and `--resume` completes them.
//! * Two agents in one host share its shaped link: the interference check flags the pairs
//!   that ran beside each other over that link, and not the pairs of the other hosts.

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use linerate_lab::Shaping;

use crate::common::collect;

const RATE_BPS: u64 = 50_000_000;
const HOSTS: usize = 6;

/// The namespaces of the bridge lab; removed on drop.
struct Bridge {
    prefix: String,
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect(args[0]);
    assert!(
        out.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Bridge {
    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    fn addr(i: usize) -> String {
        format!("198.18.50.{}", i + 1)
    }

    fn up(tag: &str) -> Bridge {
        let b = Bridge {
            prefix: format!("lrf{tag}{}", std::process::id() % 100_000),
        };
        let sw = b.ns("sw");
        sh(&["ip", "netns", "add", &sw]);
        sh(&["ip", "-n", &sw, "link", "add", "br0", "type", "bridge"]);
        sh(&[
            "ip",
            "-n",
            &sw,
            "addr",
            "add",
            "198.18.50.254/24",
            "dev",
            "br0",
        ]);
        sh(&["ip", "-n", &sw, "link", "set", "br0", "up"]);
        sh(&["ip", "-n", &sw, "link", "set", "lo", "up"]);
        let shaping = Shaping::tbf(RATE_BPS);
        for i in 0..HOSTS {
            let h = b.ns(&format!("h{}", i + 1));
            let port = format!("p{}", i + 1);
            sh(&["ip", "netns", "add", &h]);
            sh(&[
                "ip", "-n", &sw, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &h,
            ]);
            sh(&["ip", "-n", &sw, "link", "set", &port, "master", "br0", "up"]);
            sh(&[
                "ip",
                "-n",
                &h,
                "addr",
                "add",
                &format!("{}/24", Self::addr(i)),
                "dev",
                "eth0",
            ]);
            sh(&["ip", "-n", &h, "link", "set", "eth0", "up"]);
            sh(&["ip", "-n", &h, "link", "set", "lo", "up"]);
            // The host's link, both ways: its egress and the switch's port towards it.
            for (ns, dev) in [(&h, "eth0"), (&sw, port.as_str())] {
                for cmd in shaping.tc_commands(dev, 1500) {
                    let mut args = vec!["tc", "-n", ns.as_str()];
                    args.extend(cmd.iter().map(String::as_str));
                    sh(&args);
                }
            }
        }
        b
    }

    /// `CMD` in namespace `host`.
    fn command(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(host), program]);
        c
    }

    /// An interface counter of `eth0` in host `host`, read by the test.
    fn counter(&self, host: &str, name: &str) -> u64 {
        let out = self
            .command(host, "cat")
            .arg(format!("/sys/class/net/eth0/statistics/{name}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for h in (1..=HOSTS)
            .map(|i| format!("h{i}"))
            .chain(["sw".to_string()])
        {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(&h)])
                .output();
        }
    }
}

/// An agent in a host, its log collected.
struct Agent {
    child: Child,
    host: String,
    name: String,
    log: Arc<Mutex<String>>,
}

impl Agent {
    fn start(b: &Bridge, i: usize, port: u16, users: &std::path::Path) -> Agent {
        let host = format!("h{}", i + 1);
        let mut child = b
            .command(&host, env!("CARGO_BIN_EXE_linerate"))
            .args(["serve", "--bind", &Bridge::addr(i), "-p", &port.to_string()])
            .arg("--auth-users")
            .arg(users)
            .args(["--fleet-agent", "--fleet-coordinators", "coord"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = collect(child.stderr.take().unwrap());
        let name = format!("{}:{port}", Bridge::addr(i));
        // Listening once its banner is out.
        for _ in 0..100 {
            if log.lock().unwrap().contains("listening on") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Agent {
            child,
            host,
            name,
            log,
        }
    }

    /// (start, end) of each ordered test it ran as source, from its log.
    fn ordered(&self) -> Vec<(String, String)> {
        self.tests(" role=source")
    }

    /// (start, end) of each fleet test whose data ran through it, as source or destination,
    /// from its own log.
    fn busy(&self) -> Vec<(String, String)> {
        self.tests(" role=")
    }

    fn tests(&self, role: &str) -> Vec<(String, String)> {
        let log = self.log.lock().unwrap().clone();
        let at = |l: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("at="))
                .unwrap()
                .to_string()
        };
        let starts: Vec<(String, String)> = log
            .lines()
            .filter(|l| l.contains(" start at=") && l.contains(role))
            .map(|l| (l.split_whitespace().nth(2).unwrap().to_string(), at(l)))
            .collect();
        starts
            .into_iter()
            .map(|(id, s)| {
                let end = log
                    .lines()
                    .find(|l| {
                        l.starts_with(&format!("fleet: test {id} end at=")) && l.contains(role)
                    })
                    .map(at)
                    .unwrap_or_else(|| panic!("no end of {id}: {log}"));
                (s, end)
            })
            .collect()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Coordinator<'a> {
    b: &'a Bridge,
    dir: &'a std::path::Path,
}

impl Coordinator<'_> {
    fn run(&self, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
        let out = self
            .b
            .command("sw", env!("CARGO_BIN_EXE_linerate"))
            .args(["fleet", "run", "--auth-user", "coord", "--auth-secret-file"])
            .arg(self.dir.join("secret"))
            .arg("--db")
            .arg(self.dir.join("results.db"))
            .args(args)
            .args(["--json", "--", "tcp", "-t", "2", "-i", "0.2"])
            .env_remove("LINERATE_AUTH_SECRET")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let rec = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
        (out.status.code(), rec, stderr)
    }
}

fn users(dir: &std::path::Path) -> std::path::PathBuf {
    let users = dir.join("users");
    std::fs::write(&users, "coord:lab-fleet-secret\n").unwrap();
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(dir.join("secret"), "lab-fleet-secret\n").unwrap();
    users
}

/// The goodput a TCP stream gets through a tbf of `RATE_BPS`: tbf counts whole Ethernet
/// frames (14 bytes of header + 1500 of IP), of which 1448 are payload (IPv4, TCP with
/// timestamps).
fn expected_goodput_bps() -> f64 {
    RATE_BPS as f64 * 1448.0 / 1514.0
}

#[test]
#[ignore = "needs root: network namespaces, a bridge, tbf"]
fn lab_fleet_mesh_on_a_shaped_bridge() {
    let b = Bridge::up("m");
    let dir = tempfile::tempdir().unwrap();
    let users = users(dir.path());
    let agents: Vec<Agent> = (0..HOSTS)
        .map(|i| Agent::start(&b, i, 5301, &users))
        .collect();
    let list: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    let c = Coordinator {
        b: &b,
        dir: dir.path(),
    };
    let tx_before: Vec<u64> = agents
        .iter()
        .map(|a| b.counter(&a.host, "tx_bytes"))
        .collect();
    let started = std::time::Instant::now();
    let (code, rec, stderr) = c.run(&[
        "--agents",
        &list.join(","),
        "--name",
        "mesh",
        "--interference",
        "0",
    ]);
    let took = started.elapsed();
    assert_eq!(code, Some(0), "{stderr}");
    eprintln!("lab fleet: the 30-pair mesh took {took:?}");
    let pairs = rec["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 30);
    assert_eq!(rec["rounds"], 10);
    let want = expected_goodput_bps();
    for p in pairs {
        assert_eq!(p["beside"], 2, "3 pairs at once: {p}");
        let got = p["throughput_bps"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 0.05 * want,
            "{} -> {}: {got:.0} bit/s, expected {want:.0} within 5 %",
            p["source"],
            p["destination"]
        );
    }
    // Each host's interface sent at least the payload its pairs sent with the frames' headers,
    // and no more than that plus its ACKs as a destination (1 ACK of 66 bytes per 2
    // segments of 1448), the control connections and the re-runs (bounded by 2 %).
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["history", "--db"])
        .arg(dir.path().join("results.db"))
        .args(["--json", "--tag", "fleet:mesh", "--limit", "100"])
        .output()
        .unwrap();
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<i64> = h["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    for p in pairs {
        assert!(
            ids.contains(&p["run_id"].as_i64().unwrap()),
            "{p} not stored"
        );
    }
    // Each host's interface carried at least the payload its pairs sent, and no more than
    // that in full frames (1514 bytes of 1448 payload: GSO packets that tbf passes whole
    // carry fewer headers) plus its ACKs as a destination (one of 66 bytes per 2 segments)
    // and 1 MB of control traffic: the figures are the bytes the wire carried.
    for (i, a) in agents.iter().enumerate() {
        let tx = (b.counter(&a.host, "tx_bytes") - tx_before[i]) as f64;
        let bytes = |side: &str| -> f64 {
            pairs
                .iter()
                .filter(|p| p[side] == a.name.as_str())
                .map(|p| p["received_bytes"].as_f64().unwrap())
                .sum()
        };
        let (sent, got) = (bytes("source"), bytes("destination"));
        let most = sent * 1514.0 / 1448.0 + got / 1448.0 / 2.0 * 66.0 + 1e6;
        assert!(
            tx >= sent && tx <= most,
            "{}: eth0 sent {tx:.0} bytes; its pairs' payload {sent:.0}, at most {most:.0}",
            a.name
        );
        assert_eq!(a.ordered().len(), 5, "{}", a.name);
    }
    // The interference check alone (the mesh is complete): 3 pairs re-run alone.
    let (code, rec, stderr) = c.run(&[
        "--agents",
        &list.join(","),
        "--resume",
        "mesh",
        "--interference",
        "3",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    eprintln!(
        "lab fleet: with the interference check {:?}",
        started.elapsed()
    );
    let reruns = rec["interference"].as_array().unwrap();
    for a in &agents {
        let again = |end: &str| reruns.iter().filter(|c| c[end] == a.name.as_str()).count();
        assert_eq!(a.ordered().len(), 5 + again("source"), "{}", a.name);
        // Its own log, as source and as destination: never in two tests at once.
        let mut t = a.busy();
        assert_eq!(
            t.len(),
            10 + again("source") + again("destination"),
            "{}",
            a.name
        );
        t.sort();
        for w in t.windows(2) {
            assert!(w[0].1 <= w[1].0, "{}: {w:?} overlap", a.name);
        }
    }
    // The check re-ran the 3 worst pairs alone: each alone at the shaped rate. (Whether it
    // flags them is not asserted here: the pairs of the first round ran 3-4 % below their
    // alone runs in every run so far, which the prediction interval flags; the shared-link
    // test below asserts the verdicts where a link is shared and where it is not.)
    assert_eq!(reruns.len(), 3, "{rec}");
    for r in reruns {
        let alone = r["alone_mean"].as_f64().unwrap();
        assert!((alone - want).abs() <= 0.05 * want, "{r}");
        eprintln!("lab fleet: interference check {r}");
    }
}

#[test]
#[ignore = "needs root: network namespaces, a bridge, tbf"]
fn lab_fleet_dead_agent_resume_and_a_shared_link() {
    let b = Bridge::up("k");
    let dir = tempfile::tempdir().unwrap();
    let users = users(dir.path());
    let mut agents: Vec<Agent> = (0..HOSTS)
        .map(|i| Agent::start(&b, i, 5301, &users))
        .collect();
    let list: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    let c = Coordinator {
        b: &b,
        dir: dir.path(),
    };
    // The agent of h6 dies after the first rounds.
    let victim = agents.pop().unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(6));
        drop(victim);
    });
    let (code, rec, stderr) = c.run(&[
        "--agents",
        &list.join(","),
        "--name",
        "kill",
        "--interference",
        "0",
    ]);
    killer.join().unwrap();
    assert_eq!(code, Some(1), "{stderr}");
    let dead = &list[HOSTS - 1];
    let pairs = rec["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 30);
    let failed: Vec<&serde_json::Value> =
        pairs.iter().filter(|p| p["status"] == "failed").collect();
    assert!(!failed.is_empty(), "{rec}");
    for p in &failed {
        assert!(
            p["source"] == dead.as_str() || p["destination"] == dead.as_str(),
            "a pair without the dead agent failed: {p}"
        );
    }
    // It comes back; --resume runs only the failed pairs.
    agents.push(Agent::start(&b, HOSTS - 1, 5301, &users));
    let before: usize = agents
        .iter()
        .take(HOSTS - 1)
        .map(|a| a.ordered().len())
        .sum();
    let (code, rec, stderr) = c.run(&[
        "--agents",
        &list.join(","),
        "--resume",
        "kill",
        "--interference",
        "0",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(rec["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["status"] == "ok"));
    let after: usize = agents
        .iter()
        .take(HOSTS - 1)
        .map(|a| a.ordered().len())
        .sum();
    let from_live_sources = failed
        .iter()
        .filter(|p| p["source"] != dead.as_str())
        .count();
    assert_eq!(
        after - before,
        from_live_sources,
        "resume re-ran only the failed pairs"
    );

    // Two agents in h1 share its shaped link: 4 agents, every pair re-run alone.
    let second = Agent::start(&b, 0, 5302, &users);
    let shared = [agents[0].name.clone(), second.name.clone()];
    let four = [
        shared[0].clone(),
        shared[1].clone(),
        list[1].clone(),
        list[2].clone(),
    ];
    let (code, rec, stderr) = c.run(&[
        "--agents",
        &four.join(","),
        "--name",
        "shared",
        "--interference",
        "12",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let pairs = rec["pairs"].as_array().unwrap();
    let checks = rec["interference"].as_array().unwrap();
    let in_h1 = |n: &serde_json::Value| shared.iter().any(|s| n == s.as_str());
    let mut flagged_shared = 0;
    for ch in checks {
        let p = pairs
            .iter()
            .find(|p| p["source"] == ch["source"] && p["destination"] == ch["destination"])
            .unwrap();
        let round_mates: Vec<&serde_json::Value> = pairs
            .iter()
            .filter(|q| q["round"] == p["round"] && *q != p)
            .collect();
        // Over h1's link with another pair over h1's link in its round.
        let crosses = |q: &serde_json::Value| in_h1(&q["source"]) != in_h1(&q["destination"]);
        let shared_link = crosses(p) && round_mates.iter().any(|q| crosses(q));
        let local = in_h1(&p["source"]) && in_h1(&p["destination"]);
        if shared_link {
            assert_eq!(
                ch["flagged"], true,
                "shared h1's link and was not flagged: {ch}"
            );
            flagged_shared += 1;
        } else if !local {
            // The pairs of h2 and h3 alone: not disturbed. (A pair inside h1 goes through
            // no link: its rate is the CPU's, which other processes move; not judged.)
            assert_eq!(ch["flagged"], false, "flagged without a shared link: {ch}");
        }
    }
    assert!(flagged_shared >= 4, "{rec}");
}
