//! `linerate fleet run` against agents (`serve --auth-users --fleet-agent`) on 127.0.0.1:
//! every ordered pair in its round, each an agent's third-party test, every pair in the
//! store; a dead agent fails only its pairs and `--resume` runs just those; the refusals.

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use super::common::{banner_port, bin, collect, first_line};

/// An agent with its log collected as it comes.
struct Agent {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Agent {
    fn start(extra: &[&str], port: u16) -> Agent {
        let mut child = bin()
            .args(["serve", "--bind", "127.0.0.1", "-p", &port.to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let port = banner_port(&first_line(&mut stderr));
        let log = collect(stderr);
        Agent { child, port, log }
    }

    fn name(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// (id, start, end) of each ordered test this agent ran as source, from its own log
    /// lines.
    fn ordered(&self) -> Vec<(String, String, String)> {
        self.tests(" role=source")
    }

    /// (id, start, end) of each fleet test whose data ran through this agent, as source or
    /// as destination, from its own log lines.
    fn busy(&self) -> Vec<(String, String, String)> {
        self.tests(" role=")
    }

    fn tests(&self, role: &str) -> Vec<(String, String, String)> {
        let log = self.log.lock().unwrap().clone();
        let field = |l: &str, k: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or_default()
                .to_string()
        };
        let starts: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" start at=") && l.contains(role))
            .collect();
        starts
            .iter()
            .map(|s| {
                let id = s.split_whitespace().nth(2).unwrap().to_string();
                let end = log
                    .lines()
                    .find(|l| {
                        l.starts_with(&format!("fleet: test {id} end at=")) && l.contains(role)
                    })
                    .map(|l| field(l, "at="))
                    .unwrap_or_else(|| panic!("no end line for {id} in {log}"));
                (id, field(s, "at="), end)
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

struct Fleet {
    dir: tempfile::TempDir,
}

impl Fleet {
    fn new() -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users");
        std::fs::write(&users, "coord:coordinator-secret\n").unwrap();
        std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(dir.path().join("secret"), "coordinator-secret\n").unwrap();
        Fleet { dir }
    }

    fn users(&self) -> String {
        self.dir.path().join("users").display().to_string()
    }

    fn agent(&self) -> Agent {
        Agent::start(
            &[
                "--auth-users",
                &self.users(),
                "--fleet-agent",
                "--fleet-coordinators",
                "coord",
            ],
            0,
        )
    }

    /// Runs `fleet run` with the coordinator's credentials and this fleet's database.
    fn run(&self, args: &[&str]) -> std::process::Output {
        bin()
            .args(["fleet", "run", "--auth-user", "coord", "--auth-secret-file"])
            .arg(self.dir.path().join("secret"))
            .arg("--db")
            .arg(self.dir.path().join("results.db"))
            .args(args)
            .env_remove("LINERATE_AUTH_SECRET")
            .env_remove("LINERATE_AUTH_USER")
            .output()
            .unwrap()
    }
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// No two fleet tests of one agent overlap, as source or destination, from its own log's
/// wall-clock times.
fn assert_no_overlap(a: &Agent) {
    let mut t = a.busy();
    t.sort_by(|x, y| x.1.cmp(&y.1));
    for w in t.windows(2) {
        assert!(
            w[0].2 <= w[1].1,
            "{} overlaps {} at {}",
            w[0].0,
            w[1].0,
            a.name()
        );
    }
}

#[test]
fn fleet_runs_every_ordered_pair_in_disjoint_rounds() {
    let f = Fleet::new();
    let agents: Vec<Agent> = (0..4).map(|_| f.agent()).collect();
    let list: Vec<String> = agents.iter().map(Agent::name).collect();
    let out = f.run(&[
        "--agents",
        &list.join(","),
        "--name",
        "loop4",
        "--interference",
        "2",
        "--json",
        "--",
        "tcp",
        "-t",
        "0.6",
        "-i",
        "0.1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rec = json(&out);
    assert_eq!(rec["rounds"], 6);
    assert_eq!(rec["planned_pairs"], 12);
    let pairs = rec["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 12);
    // Every ordered pair once; 2 pairs a round, disjoint; each ran beside the other.
    let mut seen = std::collections::BTreeSet::new();
    for r in 1..=6 {
        let round: Vec<&serde_json::Value> = pairs.iter().filter(|p| p["round"] == r).collect();
        assert_eq!(round.len(), 2, "round {r}");
        let mut ends = std::collections::BTreeSet::new();
        for p in &round {
            assert_eq!(p["status"], "ok", "{p}");
            assert_eq!(p["beside"], 1);
            assert!(ends.insert(p["source"].as_str().unwrap()));
            assert!(ends.insert(p["destination"].as_str().unwrap()));
            assert!(seen.insert((p["source"].to_string(), p["destination"].to_string())));
            assert!(p["throughput_bps"].as_f64().unwrap() > 0.0, "{p}");
        }
    }
    // Each agent ran its 3 pairs as source (plus the interference re-runs), one at a time:
    // its own log says so.
    let reruns = rec["interference"].as_array().unwrap();
    assert_eq!(reruns.len(), 2, "{rec}");
    for a in &agents {
        let as_source = pairs.iter().filter(|p| p["source"] == a.name()).count();
        let again = reruns.iter().filter(|c| c["source"] == a.name()).count();
        assert_eq!(a.ordered().len(), as_source + again, "{}", a.name());
        // As destination too, its own log says when its data ran.
        let as_dest = pairs
            .iter()
            .filter(|p| p["destination"] == a.name())
            .count();
        let again_dest = reruns
            .iter()
            .filter(|c| c["destination"] == a.name())
            .count();
        assert_eq!(
            a.busy().len(),
            as_source + again + as_dest + again_dest,
            "{}",
            a.name()
        );
        assert_no_overlap(a);
    }
    // Every pair is in the store, with its round, and its record is the run the agent
    // measured: the receiving agent's bytes over its own time.
    let db = f.dir.path().join("results.db");
    let stored = stored_ids(&db, "loop4");
    assert_eq!(stored.len(), 12 + 2, "12 mesh pairs and 2 alone re-runs");
    for p in pairs {
        assert!(stored.contains(&p["run_id"].as_i64().unwrap()), "{p}");
    }
    #[cfg(feature = "report")]
    report_shows_the_stored_figures(&f, &rec, &db);
    // Resuming a complete run runs nothing more.
    let again = f.run(&[
        "--agents",
        &list.join(","),
        "--resume",
        "loop4",
        "--json",
        "--",
        "tcp",
        "-t",
        "0.6",
        "-i",
        "0.1",
    ]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(json(&again)["pairs"].as_array().unwrap().len(), 12);
    let total: usize = agents.iter().map(|a| a.ordered().len()).sum();
    assert_eq!(total, 12 + 2, "resume re-ran a finished pair");
}

/// `report --fleet NAME` of the run: every pair's cell sits in its source's row and its
/// destination's column, links to its stored run's section, and shows the throughput the
/// fleet's JSON record (built from the store) holds for it; the worst pair listed first is
/// the record's lowest. Then the page loads in Chromium without errors or requests.
#[cfg(feature = "report")]
fn report_shows_the_stored_figures(f: &Fleet, rec: &serde_json::Value, db: &std::path::Path) {
    let page = f.dir.path().join("fleet.html");
    let out = bin()
        .args(["report", "--fleet", "loop4", "--db"])
        .arg(db)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find("<table class=\"heat\">").expect("a heat map");
    let map = &html[start..start + html[start..].find("</table>").unwrap()];
    // Row i + 1 (after the header) is agent i as source; cell j is agent j as destination.
    let rows: Vec<&str> = map.split("<tr><th>").skip(2).collect();
    let agents: Vec<&str> = rec["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), agents.len());
    let pairs = rec["pairs"].as_array().unwrap();
    for p in pairs {
        let (s, d) = (
            p["source"].as_str().unwrap(),
            p["destination"].as_str().unwrap(),
        );
        let i = agents.iter().position(|a| *a == s).unwrap();
        let j = agents.iter().position(|a| *a == d).unwrap();
        assert!(rows[i].contains(s), "row {i} is not {s}");
        let cell = rows[i].split("<td").nth(j + 1).unwrap();
        let id = p["run_id"].as_i64().unwrap();
        let link = format!("<a href=\"#run-{id}\">");
        assert!(cell.contains(&link), "{s} -> {d}: {cell}");
        assert!(
            html.contains(&format!("<h2 id=\"run-{id}\">")),
            "no section for run {id}"
        );
        // The cell's figure, read back with its unit, is the stored throughput (4 digits).
        let text = cell.split(&link).nth(1).unwrap().split('<').next().unwrap();
        let (num, unit) = text.split_once(' ').unwrap();
        let scale = match unit {
            "bit/s" => 1.0,
            "kbit/s" => 1e3,
            "Mbit/s" => 1e6,
            "Gbit/s" => 1e9,
            u => panic!("unit {u:?} in {text:?}"),
        };
        let shown = num.parse::<f64>().unwrap() * scale;
        let stored = p["throughput_bps"].as_f64().unwrap();
        assert!(
            (shown - stored).abs() <= stored * 5e-4,
            "{s} -> {d}: the page says {text}, the store {stored}"
        );
    }
    let lowest = pairs
        .iter()
        .min_by(|a, b| {
            let f = |p: &serde_json::Value| p["throughput_bps"].as_f64().unwrap();
            f(a).total_cmp(&f(b))
        })
        .unwrap();
    let worst = html.split("<ol class=\"worst\">").nth(1).unwrap();
    assert!(
        worst.trim_start().starts_with(&format!(
            "<li><a href=\"#run-{}\">",
            lowest["run_id"].as_i64().unwrap()
        )),
        "{worst:.200}"
    );
    let sub = f.dir.path().join("chromium");
    std::fs::create_dir_all(&sub).unwrap();
    let (console, urls, dom, _) = super::report::load(&page, &sub);
    assert!(console.is_empty(), "console errors {console:?}");
    assert!(
        urls.iter().all(|u| u.starts_with("file://")),
        "the page requested {urls:?}"
    );
    assert_eq!(
        dom.matches("<table class=\"heat\">").count(),
        html.matches("<table class=\"heat\">").count()
    );
    // The summary, on the first screen, lists the worst pairs with the record's figures.
    let shown = super::report::summary_on_first_screen(&page, &sub, |key, metric| {
        let p = pairs
            .iter()
            .find(|p| p["run_id"].as_i64().unwrap().to_string() == key)?;
        p[metric].as_f64()
    });
    let lowest_id = lowest["run_id"].as_i64().unwrap().to_string();
    assert!(
        shown
            .iter()
            .any(|f| f.key == lowest_id && f.metric == "throughput_bps"),
        "{shown:?}"
    );
}

/// The ids of the fleet run's stored runs, as `linerate history` lists them.
fn stored_ids(db: &std::path::Path, name: &str) -> Vec<i64> {
    let out = bin()
        .args(["history", "--db"])
        .arg(db)
        .args([
            "--json",
            "--tag",
            &format!("fleet:{name}"),
            "--limit",
            "1000",
        ])
        .output()
        .unwrap();
    let h: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    h["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn a_dead_agent_fails_only_its_pairs_and_resume_runs_them() {
    let f = Fleet::new();
    let a = f.agent();
    let b = f.agent();
    // A port nothing listens on: the third agent is dead.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let dead_name = format!("127.0.0.1:{dead_port}");
    let list = format!("{},{},{dead_name}", a.name(), b.name());
    let test = ["--", "tcp", "-t", "0.3"];
    let mut args = vec![
        "--agents",
        &list,
        "--name",
        "dead1",
        "--interference",
        "0",
        "--json",
    ];
    args.extend(test);
    let out = f.run(&args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = json(&out);
    let pairs = rec["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 6);
    for p in pairs {
        let with_dead = p["source"] == dead_name.as_str() || p["destination"] == dead_name.as_str();
        assert_eq!(p["status"], if with_dead { "failed" } else { "ok" }, "{p}");
        if with_dead {
            let e = p["error"].as_str().unwrap();
            assert!(e.contains(&dead_name) || e.contains("cannot reach"), "{e}");
        }
    }
    // a->b, b->a, and a's and b's orders towards the dead one (which fail at the agent).
    assert_eq!(a.ordered().len() + b.ordered().len(), 2 + 2);
    // The dead agent comes back on its port; --resume runs only its 4 pairs.
    let c = Agent::start(
        &[
            "--auth-users",
            &f.users(),
            "--fleet-agent",
            "--fleet-coordinators",
            "coord",
        ],
        dead_port,
    );
    let mut args = vec![
        "--agents",
        &list,
        "--resume",
        "dead1",
        "--interference",
        "0",
        "--json",
    ];
    args.extend(test);
    let out = f.run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = json(&out);
    assert!(
        rec["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["status"] == "ok"),
        "{rec}"
    );
    // a and b each ran their pair towards c again; c ran its two.
    assert_eq!(a.ordered().len() + b.ordered().len(), 4 + 2);
    assert_eq!(c.ordered().len(), 2);
}

#[test]
fn orders_are_refused_without_the_agent_flag_or_credentials() {
    let f = Fleet::new();
    // --fleet-agent without --auth-users: a usage error.
    let out = bin()
        .args(["serve", "-p", "0", "--fleet-agent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A server that is not an agent refuses the order, and the pair says why.
    let plain = Agent::start(&["--auth-users", &f.users()], 0);
    let agent = f.agent();
    let list = format!("{},{}", plain.name(), agent.name());
    let out = f.run(&[
        "--agents",
        &list,
        "--name",
        "r1",
        "--interference",
        "0",
        "--json",
        "--",
        "tcp",
        "-t",
        "0.3",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let rec = json(&out);
    let from_plain = rec["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["source"] == plain.name())
        .unwrap()
        .clone();
    assert!(
        from_plain["error"]
            .as_str()
            .unwrap()
            .contains("--fleet-agent"),
        "{from_plain}"
    );
    // No credentials: refused before anything runs.
    let out = bin()
        .args(["fleet", "run", "--agents", &list, "--db"])
        .arg(f.dir.path().join("x.db"))
        .args(["--", "tcp", "-t", "1"])
        .env_remove("LINERATE_AUTH_SECRET")
        .env_remove("LINERATE_AUTH_USER")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auth-user"));
    // A test with a host or an option that acts elsewhere: refused before anything runs.
    for bad in [
        &["tcp", "--capture", "x.pcap"][..],
        &["ping"][..],
        &["tcp", "-n", "1M"][..],
    ] {
        let mut args = vec!["--agents", &list, "--name", "r2", "--"];
        args.extend(bad);
        let out = f.run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    // The wrong secret: every order is refused by the agent, with its reason.
    let ran_before = agent.ordered().len();
    std::fs::write(f.dir.path().join("secret"), "wrong\n").unwrap();
    let out = f.run(&[
        "--agents",
        &list,
        "--name",
        "r3",
        "--interference",
        "0",
        "--json",
        "--",
        "tcp",
        "-t",
        "0.3",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let rec = json(&out);
    assert!(rec["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["status"] == "failed"));
    assert_eq!(
        agent.ordered().len(),
        ran_before,
        "an order ran without authentication"
    );
}
