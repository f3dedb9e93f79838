//! Helpers shared by the `it` and `lab` test binaries: an in-process server on 127.0.0.1:0
//! that stops when dropped, the CLI as a subprocess, and `linerate serve` in a lab host.
//! Each binary uses a part of them.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use linerate::model::plan::{Debug, StreamPlan};
use linerate::session::client;
use linerate::session::server::{Server, ServerConfig};
use linerate_wire::control::{Direction, TestSpec, Transport};

pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::with(|_| {})
    }

    pub fn with(f: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut cfg = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            log: false,
            handshake_timeout: Duration::from_secs(2),
            ..ServerConfig::default()
        };
        f(&mut cfg);
        let server = Server::bind(cfg).expect("bind test server");
        let addr = server.local_addr().unwrap();
        let stop = server.shutdown_handle();
        let handle = Some(std::thread::spawn(move || server.run()));
        TestServer { addr, stop, handle }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn spec(transport: Transport, direction: Direction) -> TestSpec {
    let len = if transport == Transport::Tcp {
        65536
    } else {
        1200
    };
    let mut s = linerate::model::plan::default_spec(transport, direction, len, 600);
    s.interval_ms = 200;
    s
}

pub fn plan(addr: SocketAddr, spec: TestSpec) -> StreamPlan {
    StreamPlan {
        host: addr.ip().to_string(),
        port: addr.port(),
        spec,
        local: Default::default(),
        client_cpu: None,
        connect_timeout: Duration::from_secs(3),
        debug: Debug(false),
        auth: None,
        max_time: None,
    }
}

pub fn run(p: &StreamPlan) -> linerate::model::RunRecord {
    let never = AtomicBool::new(false);
    client::run(p, &mut client::Quiet, &never).expect("test run")
}

/// The binary, with the results database off: a test never writes to the real XDG data
/// directory (the store tests take this off and give `--db` a temporary file).
pub fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"));
    c.env("LINERATE_NO_STORE", "1").env_remove("LINERATE_DB");
    c
}

/// The binary storing into `db` (and nowhere else).
pub fn bin_with_db(db: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"));
    c.env_remove("LINERATE_NO_STORE").env("LINERATE_DB", db);
    c
}

/// Runs `linerate ARGS...`, asserts that it exits 0, and returns its stdout.
#[track_caller]
pub fn run_ok(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "linerate {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `linerate CMD 127.0.0.1 -p PORT ARGS...` against `srv` as [`run_ok`] does.
#[track_caller]
pub fn run_against(srv: &TestServer, cmd: &str, args: &[&str]) -> String {
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let mut argv = vec![cmd, host.as_str(), "-p", port.as_str()];
    argv.extend_from_slice(args);
    run_ok(&argv)
}

/// [`run_against`] with output that must be JSON (the caller passes `--json`), parsed.
#[track_caller]
pub fn run_json(srv: &TestServer, cmd: &str, args: &[&str]) -> serde_json::Value {
    let out = run_against(srv, cmd, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// Runs `linerate ARGS...`, asserts that it exits 2 (bad input), and returns its stderr.
#[track_caller]
pub fn run_usage_error(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "linerate {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A unique lab name for this test process: `prefix`, the pid, `tag`.
pub fn lab_name(prefix: &str, tag: &str) -> String {
    format!("{prefix}{}{tag}", std::process::id() % 100_000)
}

/// A `linerate serve` on the default port in lab host `host`, killed when dropped.
pub struct LabServer(std::process::Child);

impl Drop for LabServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl LabServer {
    /// Spawns `cmd` (a `linerate serve` made with `Lab::command`) and gives it a moment.
    pub fn spawn(mut cmd: std::process::Command) -> LabServer {
        let child = cmd.spawn().expect("spawn server in namespace");
        std::thread::sleep(Duration::from_millis(300));
        LabServer(child)
    }
}

/// Starts `linerate serve` in `host` of `lab`, bound to the host's address.
pub fn serve_in(lab: &linerate_lab::Lab, host: &str) -> LabServer {
    let addr = lab.addr(host).unwrap().to_string();
    let mut cmd = lab
        .command(host, env!("CARGO_BIN_EXE_linerate"))
        .expect("lab host");
    cmd.args(["serve", "--bind", &addr, "-q"]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().expect("spawn server in namespace");
    std::thread::sleep(Duration::from_millis(300));
    LabServer(child)
}

/// Checks a flame graph `--profile-out` wrote (DIR/NAME.svg) against the folded stacks
/// beside it (DIR/NAME.folded), read as XML by roxmltree and as an image by usvg: the `all`
/// frame's samples are the folded file's total (plus the frame that stands for the stacks the
/// profile did not keep), and so are the process frames' on it. Returns that total.
#[track_caller]
pub fn check_flame_graph(dir: &std::path::Path, name: &str) -> u64 {
    let folded = std::fs::read_to_string(dir.join(format!("{name}.folded"))).unwrap();
    let folded_total: u64 = folded
        .lines()
        .map(|l| {
            l.rsplit_once(' ')
                .expect("stack count")
                .1
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
    resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .expect("the flame graph is an SVG image");
    let doc = roxmltree::Document::parse(&svg).expect("the flame graph is XML");
    // Each frame: <g><title>NAME (KIND): N samples, P%</title><rect y=.. width=../>...</g>
    let mut frames = Vec::new();
    for g in doc.descendants().filter(|n| n.has_tag_name("g")) {
        let title = g
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|t| t.text())
            .expect("a title per frame");
        let rect = g.children().find(|n| n.has_tag_name("rect")).unwrap();
        let (head, tail) = title.rsplit_once("): ").unwrap();
        let samples: u64 = tail.split(' ').next().unwrap().parse().unwrap();
        let y: f64 = rect.attribute("y").unwrap().parse().unwrap();
        let width: f64 = rect.attribute("width").unwrap().parse().unwrap();
        frames.push((head.to_string(), samples, y, width));
    }
    let all = frames
        .iter()
        .find(|f| f.0 == "all (all busy samples")
        .expect("the all frame");
    // The widest frame at the foot: every sample.
    assert!(
        frames.iter().all(|f| f.3 <= all.3 && f.2 <= all.2),
        "{frames:?}"
    );
    // The notes under the title say how many samples stand for stacks not kept (drawn as
    // one frame when it is wide enough).
    let left_out: u64 = svg
        .split_once(" samples of stacks the profile did not keep")
        .map_or(0, |(before, _)| {
            let digits = before.rsplit(|c: char| !c.is_ascii_digit()).next();
            digits.unwrap().parse().unwrap()
        });
    assert_eq!(
        all.1,
        folded_total + left_out,
        "{name}: all against the folded stacks"
    );
    // The frames on `all` (processes and the left-out stacks) share its samples out, up to
    // the ones too narrow to draw (under 0.1 % each).
    let row: u64 = frames
        .iter()
        .filter(|f| (f.2 - (all.2 - 17.0)).abs() < 0.5)
        .map(|f| f.1)
        .sum();
    assert!(
        row <= all.1 && row * 100 >= all.1 * 95,
        "{row} of {}",
        all.1
    );
    all.1
}
