//! A Docker engine in Swarm mode for one test, and everything the test makes in it, removed
//! when dropped (a failed assertion included).
//!
//! When no engine answers on the default socket, the guard starts its own `dockerd` with a
//! data root, an exec root and a socket under a temporary directory, and stops it at the
//! end. That dockerd leaves the host's firewall alone (`--iptables=false`, no IP
//! forwarding, no docker0 bridge): containers on a Swarm overlay reach each other and
//! Docker's DNS without it. The bridge Swarm makes for the overlay's containers
//! (docker_gwbridge) takes its subnet from the address pool given here, in 198.18.0.0/15
//! like every network of the tests, and is removed at the end when it was not there before.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The subnet of the daemon's local networks (docker_gwbridge).
const LOCAL_POOL: &str = "198.19.128.0/17";
/// The pool Swarm's own networks (ingress) take theirs from.
const SWARM_POOL: &str = "198.19.0.0/17";

pub struct Engine {
    /// DOCKER_HOST for every docker command.
    pub host: String,
    tmp: tempfile::TempDir,
    dockerd: Option<Child>,
    swarm_joined: bool,
    gwbridge_was_there: bool,
    stacks: Vec<String>,
    secrets: Vec<String>,
    images: Vec<String>,
}

impl Engine {
    /// An engine in Swarm mode: the running one if one answers, else a dockerd of its own.
    pub fn start() -> Engine {
        let tmp = tempfile::Builder::new()
            .prefix("linerate-swarm-")
            .tempdir()
            .expect("a temporary directory");
        let gwbridge_was_there = Path::new("/sys/class/net/docker_gwbridge").exists();
        let mut e = Engine {
            host: std::env::var("DOCKER_HOST")
                .unwrap_or_else(|_| "unix:///var/run/docker.sock".into()),
            tmp,
            dockerd: None,
            swarm_joined: false,
            gwbridge_was_there,
            stacks: Vec::new(),
            secrets: Vec::new(),
            images: Vec::new(),
        };
        if !e
            .docker(&["info", "--format", "{{.ServerVersion}}"])
            .status
            .success()
        {
            e.start_dockerd();
        }
        let state = e.ok(&["info", "--format", "{{.Swarm.LocalNodeState}}"]);
        if state.trim() != "active" {
            e.ok(&[
                "swarm",
                "init",
                "--advertise-addr",
                "127.0.0.1",
                "--default-addr-pool",
                SWARM_POOL,
                "--default-addr-pool-mask-length",
                "24",
            ]);
            e.swarm_joined = true;
        }
        e
    }

    fn start_dockerd(&mut self) {
        let dir = self.tmp.path();
        for d in ["root", "exec"] {
            std::fs::create_dir_all(dir.join(d)).expect("make dockerd's directories");
        }
        let sock = dir.join("docker.sock");
        self.host = format!("unix://{}", sock.display());
        let log = std::fs::File::create(dir.join("dockerd.log")).expect("dockerd's log");
        let child = Command::new("dockerd")
            .arg("--data-root")
            .arg(dir.join("root"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("--pidfile")
            .arg(dir.join("docker.pid"))
            .arg("--host")
            .arg(&self.host)
            .args(["--bridge", "none", "--iptables=false", "--ip-forward=false"])
            .args(["--ip-masq=false", "--default-address-pool"])
            .arg(format!("base={LOCAL_POOL},size=24"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dockerd's log"))
            .stderr(log)
            .spawn()
            .expect("start dockerd (apt-get install docker.io)");
        self.dockerd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self
            .docker(&["info", "--format", "{{.ServerVersion}}"])
            .status
            .success()
        {
            if let Some(Ok(Some(status))) = self.dockerd.as_mut().map(|c| c.try_wait()) {
                panic!("dockerd exited ({status}): {}", self.dockerd_log());
            }
            assert!(
                Instant::now() < deadline,
                "dockerd did not answer within 60 s: {}",
                self.dockerd_log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn dockerd_log(&self) -> String {
        let text = std::fs::read_to_string(self.tmp.path().join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// A temporary directory of the test's own, removed with the engine.
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `docker ARGS`, whatever its outcome.
    pub fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .args(args)
            .env("DOCKER_HOST", &self.host)
            .env("DOCKER_BUILDKIT", "0")
            .stdin(Stdio::null())
            .output()
            .expect("run docker (apt-get install docker.io)")
    }

    /// `docker ARGS`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.docker(args);
        assert!(
            out.status.success(),
            "docker {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Builds the image with scripts/image.sh (the static binary of LINERATE_STATIC_BIN when
    /// set, else scripts/static.sh builds it) and returns its tag.
    pub fn build_image(&mut self) -> String {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut cmd = Command::new("bash");
        cmd.arg(root.join("scripts/image.sh"))
            .env("DOCKER_HOST", &self.host)
            .stderr(Stdio::inherit());
        if let Ok(bin) = std::env::var("LINERATE_STATIC_BIN") {
            cmd.args(["--binary", &bin]);
        }
        let out = cmd.output().expect("run scripts/image.sh");
        assert!(out.status.success(), "scripts/image.sh failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let tag = stdout.lines().last().expect("a tag").trim().to_string();
        assert!(
            tag.starts_with("linerate:"),
            "scripts/image.sh printed '{tag}'"
        );
        self.images.push(tag.clone());
        tag
    }

    /// A Swarm secret NAME holding `value`.
    pub fn secret(&mut self, name: &str, value: &str) {
        let file = self.tmp.path().join(format!("secret-{name}"));
        std::fs::write(&file, value).expect("write the secret's file");
        self.ok(&["secret", "create", name, &file.to_string_lossy()]);
        let _ = std::fs::remove_file(&file);
        self.secrets.push(name.to_string());
    }

    /// `docker stack deploy -c FILE NAME` (again: the services whose spec changed update).
    pub fn deploy(&mut self, file: &Path, name: &str) {
        self.ok(&["stack", "deploy", "-c", &file.to_string_lossy(), name]);
        if !self.stacks.iter().any(|s| s == name) {
            self.stacks.push(name.to_string());
        }
    }

    /// The containers of a service, oldest first: (id, state).
    pub fn containers(&self, service: &str) -> Vec<(String, String)> {
        let out = self.ok(&[
            "ps",
            "-a",
            "--no-trunc",
            "--filter",
            &format!("label=com.docker.swarm.service.name={service}"),
            "--format",
            "{{.ID}} {{.State}}",
        ]);
        let mut v: Vec<(String, String)> = out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(id, st)| (id.to_string(), st.to_string()))
            .collect();
        v.reverse();
        v
    }

    /// Waits until `f` holds, at most `limit`; panics with `what` and `detail()` if not.
    pub fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut() -> bool,
        detail: impl Fn() -> String,
    ) {
        let deadline = Instant::now() + limit;
        while !f() {
            assert!(
                Instant::now() < deadline,
                "{what}: not within {limit:?}: {}",
                detail()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Each step is tried whatever the one before did; what fails is said, not fatal.
        let say = |what: &str, out: &Output| {
            if !out.status.success() {
                eprintln!(
                    "cleanup: docker {what}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        };
        for s in std::mem::take(&mut self.stacks) {
            say("stack rm", &self.docker(&["stack", "rm", &s]));
            // The stack's network goes only once its containers are gone.
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let out = self.docker(&[
                    "ps",
                    "-aq",
                    "--filter",
                    &format!("label=com.docker.stack.namespace={s}"),
                ]);
                let left = String::from_utf8_lossy(&out.stdout).trim().to_string();
                let nets = self.docker(&[
                    "network",
                    "ls",
                    "-q",
                    "--filter",
                    &format!("label=com.docker.stack.namespace={s}"),
                ]);
                let nets = String::from_utf8_lossy(&nets.stdout).trim().to_string();
                if (left.is_empty() && nets.is_empty()) || Instant::now() > deadline {
                    if !left.is_empty() {
                        eprintln!("cleanup: containers of stack {s} still there: {left}");
                    }
                    if !nets.is_empty() {
                        say("network rm", &self.docker(&["network", "rm", &nets]));
                    }
                    break;
                }
                if !left.is_empty() {
                    let ids: Vec<&str> = left.split_whitespace().collect();
                    let mut args = vec!["rm", "-f"];
                    args.extend(ids);
                    let _ = self.docker(&args);
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        for s in std::mem::take(&mut self.secrets) {
            say("secret rm", &self.docker(&["secret", "rm", &s]));
        }
        for i in std::mem::take(&mut self.images) {
            say("image rm", &self.docker(&["image", "rm", "-f", &i]));
        }
        if self.swarm_joined {
            say("swarm leave", &self.docker(&["swarm", "leave", "--force"]));
        }
        if let Some(mut child) = self.dockerd.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(200))
                    }
                    _ => {
                        eprintln!("cleanup: dockerd did not stop within 30 s: killed");
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
            // What dockerd mounted under its data root (overlay2 layers, the secrets'
            // tmpfs) must be gone before the directory can be removed.
            let root = self.tmp.path().to_string_lossy().into_owned();
            if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
                let mut points: Vec<&str> = mounts
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(1))
                    .filter(|p| p.starts_with(&root))
                    .collect();
                points.sort_by_key(|p| std::cmp::Reverse(p.len()));
                for p in points {
                    let _ = Command::new("umount").args(["-l", p]).status();
                }
            }
        }
        if !self.gwbridge_was_there && Path::new("/sys/class/net/docker_gwbridge").exists() {
            let _ = Command::new("ip")
                .args(["link", "del", "docker_gwbridge"])
                .status();
        }
    }
}
