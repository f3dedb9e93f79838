//! A fleet among hostile peers (issue 38): fake agents that send what a real one never
//! would (a report built to cost memory, figures outside physics, a 3 MiB error, no
//! authentication) against the real coordinator, and a real agent ordered by a fake
//! coordinator towards hosts that are not agents (an SSH banner, a closed port, a plain
//! server), with words that name files, above its `--max-rate`, from a user who is not one
//! of its coordinators.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate::model::plan::{Credentials, Debug, Key};
use linerate::session::protocol::auth::{self, Prover};
use linerate::session::protocol::client::{self, Target};
use linerate_wire::control::{
    AuthChallenge, AuthOk, Message, ProtocolVersion, ServerLimits, Welcome, MAX_CONTROL_FRAME,
};
use linerate_wire::fleet::FleetOrder;

use super::common::{banner_port, bin, collect, first_line, run_measuring_peak, TestServer};
use super::fake::Peer;

const USER: &str = "coord";
const SECRET: &str = "coordinator-secret";

/// What a fake agent answers an order with: the `data` of its `fleet_report`, as JSON
/// text (so it can be what no encoder writes).
type Reply = Arc<dyn Fn(&FleetOrder) -> String + Send + Sync>;

/// A fake agent on 127.0.0.1: welcomes (asking for authentication when `auth`), proves it
/// knows the coordinator's key, takes one order per connection and answers it with `reply`.
struct FakeAgent {
    port: u16,
}

impl FakeAgent {
    fn start(auth: bool, reply: Reply) -> FakeAgent {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let reply = reply.clone();
                std::thread::spawn(move || serve_one(Peer::new(s), auth, &reply));
            }
        });
        FakeAgent { port }
    }

    fn name(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

fn serve_one(mut p: Peer, auth: bool, reply: &Reply) {
    let Some(Message::Hello(h)) = p.recv() else {
        return;
    };
    let server_nonce = [7u8; auth::NONCE_LEN];
    let _ = p.send(&Message::Welcome(Welcome {
        protocol: h.protocol.min(ProtocolVersion::CURRENT),
        session_id: "fake-agent".into(),
        features: h.features.clone(),
        software: "fake agent".into(),
        limits: ServerLimits {
            max_duration_ms: 3_600_000,
            max_streams: 128,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 64 << 20,
        },
        auth: auth.then(|| AuthChallenge {
            method: auth::METHOD.into(),
            nonce: auth::hex(&server_nonce),
        }),
    }));
    if auth {
        let Some(Message::Auth(a)) = p.recv() else {
            return;
        };
        let cn = auth::unhex(&a.nonce).unwrap_or_default();
        let mac = Key::derive(USER, SECRET).proof(Prover::Server, &server_nonce, &cn, &a.user);
        let _ = p.send(&Message::AuthOk(AuthOk { mac }));
    }
    let Some(Message::FleetOrder(o)) = p.recv() else {
        return;
    };
    let body = format!("{{\"type\":\"fleet_report\",\"data\":{}}}", reply(&o));
    assert!(body.len() <= MAX_CONTROL_FRAME as usize, "{}", body.len());
    let mut frame = vec![b'L', b'R', 1, 0];
    frame.extend((body.len() as u32).to_be_bytes());
    frame.extend(body.as_bytes());
    let _ = p.send_raw(&frame);
    let _ = p.send(&Message::Done(linerate_wire::control::Done {}));
    let _ = p.recv_within(Duration::from_secs(2));
}

/// A report's `data` with `record` (JSON text) and `error`.
fn report(o: &FleetOrder, record: Option<&str>, error: Option<&str>) -> String {
    let mut d = format!(
        "{{\"id\":\"{}\",\"started_at\":\"2026-11-28T12:00:00Z\",\"ended_at\":\"2026-11-28T12:00:01Z\"",
        o.id
    );
    if let Some(r) = record {
        d.push_str(&format!(",\"record\":{r}"));
    }
    if let Some(e) = error {
        d.push_str(&format!(",\"error\":{}", serde_json::to_string(e).unwrap()));
    }
    d.push('}');
    d
}

/// A real test's record (a short tcp test on loopback), as JSON.
fn real_record() -> serde_json::Value {
    let srv = TestServer::start();
    let mut spec = super::common::spec(
        linerate_wire::control::Transport::Tcp,
        linerate_wire::control::Direction::Send,
    );
    spec.duration_ms = Some(300);
    let rec = super::common::run(&super::common::plan(srv.addr, spec));
    serde_json::to_value(&rec).unwrap()
}

struct Coordinator {
    dir: tempfile::TempDir,
}

impl Coordinator {
    fn new() -> Coordinator {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), format!("{SECRET}\n")).unwrap();
        Coordinator { dir }
    }

    fn command(&self, agents: &[String], name: &str) -> std::process::Command {
        let mut c = bin();
        c.args(["fleet", "run", "--auth-user", USER, "--auth-secret-file"])
            .arg(self.dir.path().join("secret"))
            .arg("--db")
            .arg(self.dir.path().join("results.db"))
            .args(["--agents", &agents.join(","), "--name", name])
            .args(["--interference", "0", "--json", "--", "tcp", "-t", "1"])
            .env_remove("LINERATE_AUTH_SECRET")
            .env_remove("LINERATE_AUTH_USER");
        c
    }
}

fn pairs(out: &std::process::Output) -> Vec<serde_json::Value> {
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    rec["pairs"].as_array().unwrap().clone()
}

/// The pairs whose source is `agent`.
fn from<'a>(pairs: &'a [serde_json::Value], agent: &str) -> Vec<&'a serde_json::Value> {
    pairs.iter().filter(|p| p["source"] == agent).collect()
}

#[test]
fn an_agent_that_does_not_ask_for_authentication_fails_its_pairs() {
    let rec = real_record().to_string();
    let reply: Reply = Arc::new(move |o| report(o, Some(&rec), None));
    let agents = [
        FakeAgent::start(false, reply.clone()),
        FakeAgent::start(false, reply),
    ];
    let names: Vec<String> = agents.iter().map(FakeAgent::name).collect();
    let c = Coordinator::new();
    let out = c.command(&names, "noauth").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pairs = pairs(&out);
    assert_eq!(pairs.len(), 2);
    for p in &pairs {
        assert_eq!(p["status"], "failed", "{p}");
        let e = p["error"].as_str().unwrap();
        assert!(e.contains("does not ask for authentication"), "{e}");
        assert!(p.get("throughput_bps").is_none(), "{p}");
    }
}

/// A record of `[{"":0},...]` as long as a frame carries.
fn costly_record() -> String {
    let room = MAX_CONTROL_FRAME as usize - 512;
    let n = room / 7;
    let mut s = String::with_capacity(room);
    s.push('[');
    for _ in 0..n - 1 {
        s.push_str("{\"\":0},");
    }
    s.push_str("{}]");
    s
}

#[test]
fn hostile_reports_cost_the_coordinator_little_and_fail_only_their_pairs() {
    let real = real_record();
    let good = real.to_string();
    let mut beyond = real.clone();
    beyond["summary"]["flows"][0]["receiver_bps"] = serde_json::json!(1.7e308);
    let beyond = beyond.to_string();
    let costly = costly_record();
    // 3 MiB of error with a terminal escape and a forged log line in it.
    let long_error = format!("boom\n2026 forged\x1b[2J{}", "x".repeat(3 << 20));
    let c = Coordinator::new();
    // First the same fleet with well-behaved agents: the coordinator's own peak.
    let g = good.clone();
    let polite: Reply = Arc::new(move |o| report(o, Some(&g), None));
    let base: Vec<FakeAgent> = (0..4)
        .map(|_| FakeAgent::start(true, polite.clone()))
        .collect();
    let names: Vec<String> = base.iter().map(FakeAgent::name).collect();
    let (out, base_kib) = run_measuring_peak(c.command(&names, "polite"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replies: [Reply; 4] = [
        Arc::new(move |o| report(o, Some(&costly), None)),
        Arc::new(move |o| report(o, Some(&beyond), None)),
        Arc::new(move |o| report(o, Some(&good), Some(&long_error))),
        polite,
    ];
    let agents: Vec<FakeAgent> = replies
        .into_iter()
        .map(|r| FakeAgent::start(true, r))
        .collect();
    let names: Vec<String> = agents.iter().map(FakeAgent::name).collect();
    let started = Instant::now();
    let (out, peak_kib) = run_measuring_peak(c.command(&names, "hostile"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Two pairs of a 4-agent round run at once; each report is its frame (4 MiB) a few
    // times over while it is read, escaped and decoded: 16 frames' worth above the
    // well-behaved run bounds it. The tree of such a report cost 767 MiB.
    let bound_kib = base_kib + 2 * 16 * u64::from(MAX_CONTROL_FRAME / 1024);
    assert!(
        peak_kib <= bound_kib,
        "coordinator peak {peak_kib} KiB, above {bound_kib} KiB (well-behaved run: {base_kib} KiB)"
    );
    eprintln!("coordinator peak: {peak_kib} KiB hostile, {base_kib} KiB well-behaved");
    assert!(started.elapsed() < Duration::from_secs(60));
    let pairs = pairs(&out);
    assert_eq!(pairs.len(), 12);
    for p in from(&pairs, &names[0]) {
        assert_eq!(p["status"], "failed", "{p}");
        assert!(
            p["error"].as_str().unwrap().contains("objects and arrays"),
            "{p}"
        );
    }
    for p in from(&pairs, &names[1]) {
        assert_eq!(p["status"], "failed", "{p}");
        let e = p["error"].as_str().unwrap();
        assert!(e.contains("throughput cannot be true"), "{e}");
        assert!(p.get("throughput_bps").is_none(), "{p}");
    }
    for p in from(&pairs, &names[2]) {
        assert_eq!(p["status"], "failed", "{p}");
        let e = p["error"].as_str().unwrap();
        // Cut to the agent's own limit of 1024 characters, escaped, with what was left out.
        assert!(e.chars().count() < 1200, "{} characters", e.chars().count());
        assert!(e.starts_with("boom\\n2026 forged\\u{1b}[2J"), "{e:.80}");
        assert!(e.ends_with("more characters)"), "{}", &e[e.len() - 40..]);
    }
    for p in from(&pairs, &names[3]) {
        assert_eq!(p["status"], "ok", "{p}");
        let stored = real["summary"]["flows"][0]["receiver_bps"]
            .as_f64()
            .unwrap();
        assert_eq!(p["throughput_bps"].as_f64(), Some(stored), "{p}");
    }
    // What the coordinator printed was clipped too: no line of megabytes.
    assert!(
        stderr.lines().all(|l| l.len() < 4096),
        "a line of {} bytes",
        stderr.lines().map(str::len).max().unwrap_or(0)
    );
}

/// A real agent with `extra` serve options; its users are `coord` (a coordinator) and
/// `bob` (not one).
struct RealAgent {
    child: std::process::Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    log: Arc<std::sync::Mutex<String>>,
}

impl RealAgent {
    fn start(extra: &[&str]) -> RealAgent {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users");
        std::fs::write(&users, format!("{USER}:{SECRET}\nbob:bob-secret\n")).unwrap();
        std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut child = bin()
            .args(["serve", "--bind", "127.0.0.1", "-p", "0", "--auth-users"])
            .arg(&users)
            .args(["--fleet-agent", "--fleet-coordinators", USER])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let port = banner_port(&first_line(&mut stderr));
        let log = collect(stderr);
        RealAgent {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _dir: dir,
            log,
        }
    }

    /// Orders `test` towards `port` on 127.0.0.1 as `user`: the report, or the refusal.
    fn order(
        &self,
        user: &str,
        secret: &str,
        test: &[&str],
        port: u16,
    ) -> Result<linerate_wire::fleet::FleetReport, String> {
        let target = Target {
            addr: self.addr,
            server: self.addr.to_string(),
            connect_timeout: Duration::from_secs(3),
            debug: Debug(false),
            auth: Some(Credentials::new(user, secret).unwrap()),
        };
        let conn = client::connect(&target).map_err(|e| format!("{e:#}"))?;
        let order = FleetOrder {
            id: format!("t-{port}"),
            test: test.iter().map(|w| w.to_string()).collect(),
            target: "127.0.0.1".into(),
            port,
        };
        conn.order(order, Duration::from_secs(30))
            .map_err(|e| format!("{e:#}"))
    }
}

impl Drop for RealAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A listener that answers every connection with an SSH banner, as sshd does.
fn ssh_banner() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            use std::io::Write;
            let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    port
}

#[test]
fn an_agent_tests_only_its_fleet_or_what_its_operator_lists() {
    let agent = RealAgent::start(&[]);
    let other = RealAgent::start(&[]);
    let plain = TestServer::start();
    let ssh = ssh_banner();
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let test = ["tcp", "-t", "0.3"];
    // Another agent of the fleet (it proves it knows coord's key): the test runs.
    let ok = agent.order(USER, SECRET, &test, other.addr.port()).unwrap();
    assert!(ok.error.is_none() && ok.record.is_some(), "{ok:?}");
    // An unauthenticated linerate server, an SSH server and a closed port: the test does
    // not start, and the three answers are the same sentence: nothing the host said (its
    // banner, whether its port is open) comes back.
    let mut answers = Vec::new();
    for port in [plain.addr.port(), ssh, closed] {
        let r = agent.order(USER, SECRET, &test, port).unwrap();
        assert!(r.record.is_none(), "{r:?}");
        let e = r.error.unwrap();
        assert!(e.contains("--fleet-allow"), "{e}");
        assert!(
            !e.contains("SSH") && !e.contains("0x53") && !e.contains("refused"),
            "{e}"
        );
        answers.push(e.replace(&port.to_string(), "PORT"));
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    // Listed by the operator: the plain server is tested.
    let listing = RealAgent::start(&["--fleet-allow", "127.0.0.1/32"]);
    let r = listing
        .order(USER, SECRET, &test, plain.addr.port())
        .unwrap();
    assert!(r.error.is_none() && r.record.is_some(), "{r:?}");
    // bob may test against the agent, not order it.
    let e = agent
        .order("bob", "bob-secret", &test, other.addr.port())
        .unwrap_err();
    assert!(e.contains("--fleet-coordinators"), "{e}");
    assert!(!agent.log.lock().unwrap().contains("by=bob"));
}

#[test]
fn an_agents_serve_limits_bound_its_ordered_tests() {
    let agent = RealAgent::start(&["--max-rate", "100M", "--max-write-size", "256K"]);
    let other = RealAgent::start(&[]);
    let port = other.addr.port();
    for (test, what) in [
        (&["tcp", "-b", "10G", "-t", "0.3"][..], "--max-rate"),
        (&["tcp", "-t", "0.3"][..], "not paced"),
        (
            &["tcp", "-b", "50M", "-l", "1M", "-t", "0.3"][..],
            "--max-write-size",
        ),
    ] {
        let e = agent.order(USER, SECRET, test, port).unwrap_err();
        assert!(e.contains(what), "{test:?}: {e}");
    }
    // Within them: it runs, paced at what was ordered (the receiver's figure, from the
    // record both ends reported, is at most the rate plus a tenth).
    let r = agent
        .order(USER, SECRET, &["tcp", "-b", "50M", "-t", "0.5"], port)
        .unwrap();
    let rec: serde_json::Value = serde_json::from_str(r.record.unwrap().get()).unwrap();
    let bps = rec["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap();
    assert!(bps > 0.0 && bps <= 55e6, "{bps}");
}

#[test]
fn an_order_naming_a_file_is_refused_at_once_and_never_opens_it() {
    let agent = RealAgent::start(&[]);
    let other = RealAgent::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let fifo = fifo.display().to_string();
    let port = other.addr.port();
    for words in [
        vec!["tcp", "--auth-secret-file", &fifo],
        vec!["tcp", "--auth-secret-file=/etc/shadow"],
        vec!["tcp", "--capture", &fifo],
        vec!["rr", "--profile-out", &fifo],
        vec!["tcp", "--db", &fifo],
        vec!["tcp", "--json", &fifo],
    ] {
        let started = Instant::now();
        let e = agent.order(USER, SECRET, &words, port).unwrap_err();
        assert!(e.contains("is not taken in a fleet test"), "{words:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
        // Refused before anything waits on the FIFO: well under the handshake's time-out.
        assert!(started.elapsed() < Duration::from_secs(3), "{words:?}");
    }
    // The agent's one order slot is free: the next order runs.
    let r = agent
        .order(USER, SECRET, &["tcp", "-t", "0.3"], port)
        .unwrap();
    assert!(r.error.is_none(), "{r:?}");
}
