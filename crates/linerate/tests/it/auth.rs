//! `serve --auth-users`: clients with the right secret run tests, others get one clear line.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use linerate::model::plan::Credentials;
use linerate::session::protocol::auth::Users;
use linerate_wire::control::{Direction, Transport};

use crate::common::{bin, plan, spec, TestServer};

fn auth_server() -> TestServer {
    let users = Users::parse("alice:s3cret\n# bob is gone\n").unwrap();
    TestServer::with(|c| c.users = Some(Arc::new(users)))
}

fn try_run(
    server: &TestServer,
    auth: Option<Credentials>,
) -> anyhow::Result<linerate::model::RunRecord> {
    let mut s = spec(Transport::Tcp, Direction::Send);
    s.duration_ms = Some(300);
    let mut p = plan(server.addr, s);
    p.auth = auth;
    let never = std::sync::atomic::AtomicBool::new(false);
    linerate::session::protocol::client::run(
        &p,
        &mut linerate::session::protocol::client::Quiet,
        &never,
    )
}

#[test]
fn right_secret_runs_the_test() {
    let server = auth_server();
    let rec = try_run(&server, Some(Credentials::new("alice", "s3cret").unwrap())).unwrap();
    let f = &rec.summary.flows[0];
    assert!(f.receiver_bps.is_some_and(|b| b > 0.0), "{f:?}");
}

#[test]
fn no_credentials_wrong_secret_or_unknown_user_are_refused() {
    let server = auth_server();
    let e = try_run(&server, None).unwrap_err().to_string();
    assert!(
        e.contains("requires authentication") && e.contains("--auth-user"),
        "{e}"
    );
    for (user, secret) in [("alice", "wrong"), ("mallory", "s3cret")] {
        let e = try_run(&server, Some(Credentials::new(user, secret).unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("authentication failed"), "{user}: {e}");
        // Unknown users and wrong secrets get the same answer.
        assert!(!e.contains(user), "{e}");
    }
    // The server is still serving after refusals.
    try_run(&server, Some(Credentials::new("alice", "s3cret").unwrap())).unwrap();
}

#[test]
fn credentials_for_an_open_server_are_unused_with_a_warning() {
    let server = TestServer::start();
    let rec = try_run(&server, Some(Credentials::new("alice", "s3cret").unwrap())).unwrap();
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("does not ask for authentication")),
        "{:?}",
        rec.warnings
    );
}

#[test]
fn cli_clients_authenticate_with_a_secret_file_or_the_environment() {
    let server = auth_server();
    let port = server.addr.port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret\n").unwrap();
    let secret = secret.to_str().unwrap();
    let common = ["127.0.0.1", "-p", &port, "--auth-user", "alice"];
    // tcp with --auth-secret-file, rr and doctor with LINERATE_AUTH_SECRET.
    let o = bin()
        .arg("tcp")
        .args(common)
        .args(["--auth-secret-file", secret, "-t", "0.3", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for cmd in [
        &["rr", "-t", "0.3", "--json"][..],
        &["doctor", "--json"][..],
    ] {
        let o = bin()
            .arg(cmd[0])
            .args(common)
            .args(&cmd[1..])
            .env("LINERATE_AUTH_SECRET", "s3cret")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            cmd[0],
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v.is_object());
    }
    // Wrong secret: exit 2 and one line on stderr.
    let o = bin()
        .arg("tcp")
        .args(common)
        .args(["-t", "0.3"])
        .env("LINERATE_AUTH_SECRET", "nope")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("authentication failed"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // A user without a secret is a usage error before anything is sent.
    let o = bin()
        .arg("tcp")
        .args(common)
        .env_remove("LINERATE_AUTH_SECRET")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("LINERATE_AUTH_SECRET"));
}

#[test]
fn serve_refuses_a_users_file_others_can_read_or_with_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "alice:s3cret\n").unwrap();
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o644)).unwrap();
    let serve = |path: &std::path::Path| {
        bin()
            .args(["serve", "--bind", "127.0.0.1", "-p", "0", "--auth-users"])
            .arg(path)
            .timeout_output(Duration::from_secs(10))
    };
    let (code, err) = serve(&users);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    std::fs::write(&users, "alice:s3cret\nbob\n").unwrap();
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, err) = serve(&users);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

trait TimeoutOutput {
    /// Runs the command; kills it if it runs past `t` (a server that wrongly started).
    fn timeout_output(&mut self, t: Duration) -> (Option<i32>, String);
}

impl TimeoutOutput for std::process::Command {
    fn timeout_output(&mut self, t: Duration) -> (Option<i32>, String) {
        let mut child = self
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > t {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}
