//! Helpers shared by the `it` and `lab` test binaries: an in-process server on 127.0.0.1:0
//! that stops when dropped, the CLI as a subprocess, `linerate serve` in a lab host, and
//! Debian's iperf3 as a server or client with its `-J` output. Each binary uses a part of
//! them.

#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate::model::plan::{Debug, StreamPlan};
use linerate::session::protocol::client;
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

    /// The server's process id (`ip netns exec` runs it in its own place).
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// Starts `linerate serve` in `host` of `lab`, bound to the host's address.
#[cfg(feature = "lab")]
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
#[cfg(feature = "chart")]
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

/// `iperf3` (Debian's 3.12 in CI) as a command. The interoperability tests need it: they
/// fail, not skip, without it.
pub fn iperf3() -> Command {
    let ok = Command::new("iperf3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "iperf3 is not installed: the interoperability tests need it (apt-get install iperf3; scripts/test.sh installs it)"
    );
    Command::new("iperf3")
}

/// A port free for TCP and UDP on 127.0.0.1 (`iperf3 -s` takes no port 0).
pub fn free_port() -> u16 {
    loop {
        let t = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = t.local_addr().expect("addr").port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Whether something listens on TCP `port` (from /proc/net/tcp and tcp6): looking costs an
/// iperf3 server no connection, so a one-test server's one test is not taken by the probe
/// and a server is never busy with one.
pub fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&hex) && cols[3] == "0A"
            })
        })
    })
}

/// Waits for `child` at most `secs`, killing it after (and failing); returns its stdout,
/// read while it runs (a `-J` output longer than the pipe would stall it otherwise).
pub fn wait_output(mut child: Child, secs: u64, what: &str) -> String {
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match child.try_wait().expect("wait") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not end within {secs} s");
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    reader.join().expect("stdout reader")
}

/// `iperf3 -c 127.0.0.1 -p PORT -J ARGS`, started.
pub fn iperf3_client(port: u16, args: &[&str]) -> Child {
    iperf3()
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-J"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start iperf3 -c")
}

/// An iperf3 `-J` output, parsed; one that does not parse or holds an `error` fails.
#[track_caller]
pub fn iperf3_json(out: &str, what: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out)
        .unwrap_or_else(|e| panic!("{what}: -J output does not parse ({e}): {out}"));
    assert!(v.get("error").is_none(), "{what}: {}", v["error"]);
    v
}

/// `end.KEY.bytes` of an iperf3 `-J` output (`sum_sent`, `sum_received`, and with
/// `--bidir` `sum_sent_bidir_reverse`, `sum_received_bidir_reverse`).
#[track_caller]
pub fn iperf3_bytes(v: &serde_json::Value, key: &str) -> u64 {
    v["end"][key]["bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no end.{key}.bytes in {}", v["end"]))
}

/// linerate's byte count within `tol` (a share) of iperf3's.
#[track_caller]
pub fn within(ours: u64, iperf3: u64, tol: f64, what: &str) {
    let rel = (ours as f64 - iperf3 as f64).abs() / (iperf3 as f64).max(1.0);
    assert!(
        rel <= tol,
        "{what}: linerate {ours} bytes, iperf3 {iperf3} bytes ({:.1}% apart, {:.0}% allowed)",
        rel * 100.0,
        tol * 100.0
    );
}

/// `iperf3 -s` on a free port of 127.0.0.1, killed when dropped: [`Iperf3Server::start`]
/// serves tests until then, [`Iperf3Server::one_test`] (`-s -1 -J`) serves one and prints
/// its own `-J` output ([`Iperf3Server::output`]).
pub struct Iperf3Server {
    pub port: u16,
    child: Option<Child>,
}

impl Iperf3Server {
    pub fn start() -> Iperf3Server {
        Self::spawn(false)
    }

    pub fn one_test() -> Iperf3Server {
        Self::spawn(true)
    }

    fn spawn(one: bool) -> Iperf3Server {
        let port = free_port();
        let mut cmd = iperf3();
        cmd.args(["-s", "-p", &port.to_string()]);
        if one {
            cmd.args(["-1", "-J"]).stdout(Stdio::piped());
        } else {
            cmd.stdout(Stdio::null());
        }
        let child = cmd.stderr(Stdio::null()).spawn().expect("start iperf3 -s");
        let server = Iperf3Server {
            port,
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !listening(port) {
            assert!(Instant::now() < deadline, "iperf3 -s is not listening");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// iperf3's own client run against it with `-J` (at most 30 s), its output parsed;
    /// run again while the server says it is busy.
    #[track_caller]
    pub fn client(&self, args: &[&str]) -> serde_json::Value {
        for _ in 0..20 {
            let out = wait_output(iperf3_client(self.port, args), 30, "iperf3 -c");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| {
                panic!("iperf3 -c {args:?}: -J output does not parse ({e}): {out}")
            });
            match v.get("error").and_then(serde_json::Value::as_str) {
                Some(e) if e.contains("busy") => std::thread::sleep(Duration::from_millis(200)),
                Some(e) => panic!("iperf3 -c {args:?}: {e}"),
                None => return v,
            }
        }
        panic!("iperf3 -s stayed busy");
    }

    /// A one-test server's own `-J` output once its test is over (at most 30 s), parsed.
    #[track_caller]
    pub fn output(mut self) -> serde_json::Value {
        let child = self.child.take().expect("the server runs");
        let out = wait_output(child, 30, "iperf3 -s -1");
        iperf3_json(&out, "iperf3 -s -1")
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The first line a child wrote to `stderr` (its banner), read byte by byte so that nothing
/// after it is taken from the pipe.
pub fn first_line(stderr: &mut impl Read) -> String {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while stderr.read_exact(&mut b).is_ok() && b[0] != b'\n' {
        line.push(b[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

/// The port of "linerate serve: listening on 127.0.0.1:PORT (TCP and UDP)".
pub fn banner_port(line: &str) -> u16 {
    line.split("127.0.0.1:")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// What a child writes to `stderr` from now on, collected by a thread as it comes.
pub fn collect(mut stderr: impl Read + Send + 'static) -> std::sync::Arc<std::sync::Mutex<String>> {
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let l = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            l.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    log
}

/// Peak resident memory of a child, KiB: the largest VmHWM read while it ran.
pub fn run_measuring_peak(mut cmd: Command) -> (std::process::Output, u64) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (p2, d2) = (peak.clone(), done.clone());
    let poller = std::thread::spawn(move || {
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok(s) = std::fs::read_to_string(&status) {
                if let Some(kb) = s
                    .lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    p2.fetch_max(kb, std::sync::atomic::Ordering::Relaxed);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    poller.join().unwrap();
    (out, peak.load(std::sync::atomic::Ordering::Relaxed))
}
