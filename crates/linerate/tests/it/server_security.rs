//! `linerate serve` against an attacker (issue 28): iperf3 clients and `--auth-users`, what
//! a peer that has not said who it is may cost, file descriptors, and the log lines of
//! the commands a server runs for its clients. The server runs as its own process (this
//! build's binary), so that its memory, threads, limits and log are its own.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{bin, iperf3};

/// `linerate serve --bind 127.0.0.1 -p 0 ARGS`, started, with its address and its log.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Serve {
    pub fn start(args: &[&str]) -> Serve {
        Self::start_with(bin(), args)
    }

    /// Starts `cmd` (the linerate binary, maybe with a `pre_exec`) as the server.
    pub fn start_with(mut cmd: Command, args: &[&str]) -> Serve {
        let mut child = cmd
            .args(["serve", "--bind", "127.0.0.1", "-p", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start linerate serve");
        let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
        let log = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        let mut line = String::new();
        while addr.is_none() {
            line.clear();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                panic!("linerate serve ended: {}", log.lock().unwrap());
            }
            log.lock().unwrap().push_str(&line);
            addr = line
                .split_once("listening on ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|a| a.parse::<SocketAddr>().ok());
        }
        let l = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                l.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Serve {
            child,
            addr: addr.expect("address"),
            log,
        }
    }

    pub fn port(&self) -> String {
        self.addr.port().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits up to `secs` for a log line containing `what`.
    #[track_caller]
    pub fn wait_log(&self, what: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let log = self.log();
            if log.contains(what) {
                return log;
            }
            assert!(Instant::now() < deadline, "no {what:?} in the log: {log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits up to `secs` until `what` occurs `n` times in the log (the server's stderr is
    /// read by a thread: a line logged before a refusal can reach the test after the client
    /// has seen the refusal).
    #[track_caller]
    pub fn wait_log_count(&self, what: &str, n: usize, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let log = self.log();
            if log.matches(what).count() >= n {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "{what:?} not {n} times in the log: {log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A field of /proc/PID/status (`VmRSS`, `VmHWM`, `Threads`): its number.
    pub fn status(&self, field: &str) -> u64 {
        proc_status(self.pid(), field)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn proc_status(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// A users file (mode 0600) in `dir` with alice's secret.
fn users_file(dir: &std::path::Path) -> String {
    let users = dir.join("users");
    std::fs::write(&users, "alice:s3cret\n").unwrap();
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
    users.to_str().unwrap().to_string()
}

/// Runs `cmd` to its end (killed and failed after `secs`): exit code, stdout + stderr.
fn output(mut cmd: Command, secs: u64) -> (Option<i32>, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
    (status.code(), text)
}

// ---- item 1: iperf3 clients and --auth-users ----

/// While users are configured, an iperf3 client is refused with iperf3's own "test
/// authorization failed" and a non-zero exit, linerate's iperf3 client role says the same,
/// the server logs each refusal, and no test runs; `--allow-iperf3-unauthenticated` lets
/// them in.
#[test]
fn iperf3_clients_are_refused_while_users_are_configured() {
    let dir = tempfile::tempdir().unwrap();
    let users = users_file(dir.path());
    let srv = Serve::start(&["--auth-users", &users]);
    let port = srv.port();

    let mut c = iperf3();
    c.args(["-c", "127.0.0.1", "-p", &port, "-R", "-t", "1"]);
    let t = Instant::now();
    let (code, out) = output(c, 20);
    assert_ne!(code, Some(0), "iperf3 -c must fail: {out}");
    assert!(
        out.contains("iperf3: error - test authorization failed"),
        "{out}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(!out.contains("receiver"), "no test ran: {out}");

    let mut c = bin();
    c.args(["tcp", "127.0.0.1", "-p", &port, "--iperf3", "-R", "-P", "4"])
        .args(["-t", "1"]);
    let (code, out) = output(c, 20);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("not authorized") && out.contains("iperf3 error 142"),
        "{out}"
    );
    srv.wait_log_count("iperf3 client refused", 2, 5);
    // Another refusal line would come from a retry the client must not make: give it the
    // time the first two took to arrive.
    std::thread::sleep(Duration::from_millis(200));
    let log = srv.log();
    assert_eq!(
        log.matches("iperf3 client refused").count(),
        2,
        "one line per refusal: {log}"
    );

    // The operator's opt-in.
    let srv = Serve::start(&["--auth-users", &users, "--allow-iperf3-unauthenticated"]);
    srv.wait_log("without authentication", 5);
    let mut c = iperf3();
    c.args(["-c", "127.0.0.1", "-p", &srv.port(), "-R", "-t", "1", "-J"]);
    let (code, out) = output(c, 20);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_default();
    let got = v["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(got > 0, "{out}");
}

/// The opt-in without users is a usage error.
#[test]
fn allow_iperf3_unauthenticated_needs_auth_users() {
    let out = bin()
        .args(["serve", "--allow-iperf3-unauthenticated"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--auth-users"), "{e}");
}

// ---- item 6: the commands a server runs for its clients are all logged ----

/// Every hook a client has the server run, and its restore, has its own log line, however
/// many come at once (the per-address log throttle lets 20 lines through in a burst); the
/// server warns at start that hooks without `--auth-users` are open to anyone.
#[test]
#[cfg(feature = "hooks")]
fn every_hook_and_restore_is_logged() {
    use linerate_wire::control::Message;
    use linerate_wire::hooks::HookRequest;
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.toml");
    std::fs::write(
        &hooks,
        "[hooks.mark]\ncommand = [\"true\"]\nrestore = [\"true\"]\nparams.n = { type = \"int\", min = 1, max = 1000 }\n",
    )
    .unwrap();
    let srv = Serve::start(&["--hooks", hooks.to_str().unwrap()]);
    let start = srv.wait_log("--hooks without --auth-users", 5);
    assert!(
        start.contains("warning") && start.contains("--hooks") && start.contains("--auth-users"),
        "{start}"
    );
    const N: usize = 60;
    let mut c = crate::fake::FakeClient::connect(srv.addr);
    c.hello(&crate::fake::all_features());
    for n in 1..=N {
        let q = HookRequest {
            name: "mark".into(),
            params: [("n".to_string(), n.to_string())].into(),
        };
        c.peer.send(&Message::HookRequest(q)).unwrap();
        let r = c.peer.expect("hook_result");
        assert!(
            matches!(r, Message::HookResult(ref h) if h.exit_code == Some(0)),
            "{r:?}"
        );
    }
    drop(c);
    let log = srv.wait_log(" restore mark: true (ok)", 10);
    assert_eq!(log.matches(" hook mark: true (exit 0)").count(), N, "{log}");
    assert_eq!(log.matches(" restore mark: ").count(), 1, "{log}");
}

// ---- item 2: what a peer that has not said who it is may cost ----

/// Raises this test process's open-file limit to `n` (its hard limit allowing).
fn allow_open_files(n: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    if soft < n {
        setrlimit(Resource::RLIMIT_NOFILE, n.min(hard), hard).expect("setrlimit");
    }
}

/// Connects to `addr` from `local`.
fn connect_from(addr: SocketAddr, local: std::net::IpAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SocketAddr::new(local, 0).into())?;
    s.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    Ok(s.into())
}

/// A 1 s TCP test against `port` with `linerate tcp --json`: it must complete within
/// `within`, and its figures agree with each other (the bytes received over the measured
/// time are the rate, the receiver got what the sender sent at most), the server's CPU
/// included. Returns the record.
#[track_caller]
fn real_test(port: &str, within: Duration) -> serde_json::Value {
    let t = Instant::now();
    let mut c = bin();
    c.args(["tcp", "127.0.0.1", "-p", port, "-t", "1", "--json"]);
    let (code, out) = output(c, 60);
    let took = t.elapsed();
    assert_eq!(code, Some(0), "{out}");
    assert!(took < within, "the test took {took:?}: {out}");
    let json = &out[..out.rfind('}').map_or(0, |i| i + 1)];
    let rec: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
    let f = &rec["summary"]["flows"][0];
    let rx = f["receiver_bytes"].as_u64().expect("receiver_bytes");
    let tx = f["sender_bytes"].as_u64().expect("sender_bytes");
    let bps = f["receiver_bps"].as_f64().expect("receiver_bps");
    let ns = rec["server"]["totals"]["duration_ns"]
        .as_u64()
        .expect("the server's measured time");
    assert!(rx > 0 && rx <= tx, "{f}");
    assert!(
        (900_000_000..2_000_000_000).contains(&ns),
        "measured {ns} ns of a 1 s test"
    );
    let expect = rx as f64 * 8.0 / (ns as f64 / 1e9);
    assert!(
        (bps - expect).abs() <= 0.05 * expect,
        "{bps} vs {expect}: {f}"
    );
    let cpu = &rec["summary"]["server"]["cpu_util_percent"];
    assert!(cpu.as_f64().is_some_and(|c| c > 0.0), "server CPU: {cpu}");
    rec
}

/// Peers at 127.0.0.2-9 that each open `n / 8` connections, send `prefix` and then a frame
/// header announcing the full 4 MiB and as much of its body as the socket takes, and hold
/// them. Returns the server's most threads meanwhile and its peak RSS (KiB), once the
/// server has closed every one of them.
fn big_frames(srv: &Serve, n: u32, prefix: &[u8]) -> (u64, u64) {
    allow_open_files(4096);
    let pid = srv.pid();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(proc_status(pid, "Threads"));
                std::thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let mut first = prefix.to_vec();
    first.extend_from_slice(&[b'L', b'R', 1, 0]);
    first.extend_from_slice(&linerate_wire::control::MAX_CONTROL_FRAME.to_be_bytes());
    let body = vec![b'{'; 256 << 10];
    let mut held = Vec::new();
    for k in 0..n {
        let local = std::net::IpAddr::from([127, 0, 0, 2 + (k % 8) as u8]);
        let mut s = connect_from(srv.addr, local).expect("connect");
        s.set_nonblocking(true).unwrap();
        let _ = s.write_all(&first);
        // As much of the body as the socket takes now; the server may have closed it.
        let mut sent = 0;
        while sent < 4 << 20 {
            match s.write(&body) {
                Ok(n) if n > 0 => sent += n,
                _ => break,
            }
        }
        held.push(s);
    }
    // The server closes them all (their frames are refused at the header).
    let mut closed = 0;
    for s in &mut held {
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 4096];
        loop {
            match s.read(&mut b) {
                Ok(0) => break closed += 1,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                // A reset: the server closed with the body unread.
                Err(_) => break closed += 1,
            }
        }
    }
    assert_eq!(closed, n);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let threads = sampler.join().unwrap();
    (threads, srv.status("VmHWM"))
}

/// Per address 16 sessions in their handshake, 64 busy answers in all, and the server's
/// own threads (main, accept, UDP port, ...): a second thread per connection would be
/// twice that.
const THREADS_BOUND: u64 = 16 * 8 + 64 + 8;

/// 1,000 connections that each announce a control frame of the full 4 MiB and send its
/// body: before `hello` a frame is capped at 4 KiB, so each is refused at its header, and
/// the server stays under 64 MiB of memory (its peak, VmHWM) without a thread per
/// connection; a real test then runs in its normal time with sane figures.
#[test]
fn a_thousand_big_first_frames_cost_the_server_little() {
    let srv = Serve::start(&[]);
    let (threads, hwm_kib) = big_frames(&srv, 1000, &[]);
    assert!(threads <= THREADS_BOUND, "{threads} threads");
    assert!(hwm_kib < 64 << 10, "peak RSS {hwm_kib} KiB");
    real_test(&srv.port(), Duration::from_secs(5));
    eprintln!("peak threads {threads}, peak RSS {hwm_kib} KiB");
}

/// With `--auth-users`, a valid `hello` and then an `auth` frame announced at 4 MiB: the
/// auth is capped as the hello is, so 1,000 of them cost the server as little.
#[test]
fn big_auth_frames_after_a_hello_cost_the_server_little() {
    use linerate_wire::control::{self, Hello, Message, ProtocolVersion};
    let dir = tempfile::tempdir().unwrap();
    let srv = Serve::start(&["--auth-users", &users_file(dir.path())]);
    let hello = control::encode(&Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: "attacker".into(),
        features: control::FEATURES.iter().map(|f| f.to_string()).collect(),
    }))
    .unwrap();
    let (threads, hwm_kib) = big_frames(&srv, 1000, &hello);
    assert!(threads <= THREADS_BOUND, "{threads} threads");
    assert!(hwm_kib < 64 << 10, "peak RSS {hwm_kib} KiB");
    eprintln!("auth: peak threads {threads}, peak RSS {hwm_kib} KiB");
}

// ---- item 5: file descriptors ----

/// A server started with a soft limit of 128 open files and a hard limit of 512 raises the
/// soft limit to 512, says at start which caps that lowers, and keeps descriptors for
/// running tests: 600 idle connections from three addresses (more than the limit) are
/// held or refused within the lowered caps, a real test still runs in its normal time with
/// the server's CPU figures, and no accept fails.
#[test]
fn idle_connections_over_the_open_file_limit_leave_room_for_tests() {
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "ulimit -S -n 128 && ulimit -H -n 512 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_linerate"),
    ])
    .env("LINERATE_NO_STORE", "1")
    .env_remove("LINERATE_DB");
    let srv = Serve::start_with(cmd, &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", srv.pid())).unwrap();
    let files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        files.split_whitespace().skip(3).take(2).collect::<Vec<_>>(),
        ["512", "512"],
        "the soft limit raised to the hard one: {files}"
    );
    let log = srv.wait_log("open-file limit of 512", 5);
    assert!(log.contains("--max-connections-per-address"), "{log}");

    let mut idle = Vec::new();
    for k in 0..600u32 {
        let local = std::net::IpAddr::from([127, 0, 0, 2 + (k % 3) as u8]);
        if let Ok(s) = connect_from(srv.addr, local) {
            idle.push(s);
        }
    }
    assert!(idle.len() > 512, "{} connected", idle.len());
    std::thread::sleep(Duration::from_millis(300));
    real_test(&srv.port(), Duration::from_secs(5));
    let log = srv.log();
    let failures = log.matches("accept failed").count();
    assert!(failures <= 1, "{failures} accept failures: {log}");
    drop(idle);
}

// ---- issue 38, item 5: the small frame cap until a test is accepted, idle budgets ----

/// Without `--auth-users`, a valid `hello` and then a frame announced at 4 MiB: until a
/// test is accepted only a request's few KiB are read (the full cap is for `results`), so
/// 1,000 of them are refused at their header and cost the server as little as before the
/// hello, where each held up to 4 MiB for the idle time-out. A session past its hello has
/// a reader thread too, hence twice the threads of [`THREADS_BOUND`] at most.
#[test]
fn big_frames_after_a_hello_without_auth_cost_the_server_little() {
    use linerate_wire::control::{self, Hello, Message, ProtocolVersion};
    let srv = Serve::start(&[]);
    let hello = control::encode(&Message::Hello(Hello {
        protocol: ProtocolVersion::CURRENT,
        software: "attacker".into(),
        features: control::FEATURES.iter().map(|f| f.to_string()).collect(),
    }))
    .unwrap();
    let (threads, hwm_kib) = big_frames(&srv, 1000, &hello);
    assert!(threads <= 2 * THREADS_BOUND, "{threads} threads");
    assert!(hwm_kib < 64 << 10, "peak RSS {hwm_kib} KiB");
    real_test(&srv.port(), Duration::from_secs(5));
    eprintln!("no auth: peak threads {threads}, peak RSS {hwm_kib} KiB");
}

/// A server whose open-file limit holds 416 connections: 8 addresses opening 104 idle
/// connections each (what one address could hold before, a quarter of them) are held to a
/// sixteenth each, so a real test from another address still runs in its normal time,
/// where 4 of them locked every test out.
#[test]
fn idle_connections_from_eight_addresses_leave_room_for_tests() {
    allow_open_files(2048);
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "ulimit -S -n 1024 && ulimit -H -n 1024 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_linerate"),
    ])
    .env("LINERATE_NO_STORE", "1")
    .env_remove("LINERATE_DB");
    let srv = Serve::start_with(cmd, &[]);
    let log = srv.wait_log("open-file limit of 1024", 5);
    assert!(log.contains("416 connections"), "{log}");
    let mut idle = Vec::new();
    for k in 0..8 * 104u32 {
        let local = std::net::IpAddr::from([127, 0, 0, 2 + (k % 8) as u8]);
        if let Ok(s) = connect_from(srv.addr, local) {
            idle.push(s);
        }
    }
    assert!(idle.len() >= 416, "{} connected", idle.len());
    std::thread::sleep(Duration::from_millis(300));
    real_test(&srv.port(), Duration::from_secs(5));
    let refused = srv.log().matches("its limit per address").count();
    assert!(refused > 0, "{}", srv.log());
    drop(idle);
}
