//! Running a program (no shell) with a time-out, keeping the start of its output: the
//! client-side commands of `linerate sweep`.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of stdout and of stderr kept; the rest is read and dropped so the child never
/// blocks on a full pipe.
pub const OUTPUT_CAP: usize = 16 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Exit status, when it exited by itself.
    pub exit_code: Option<i32>,
    /// Killed at the time-out.
    pub timed_out: bool,
    /// The start of its standard output.
    pub stdout: String,
    /// The start of its standard error, or why it did not start.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// How long to wait for the pipes to close after the command ended (a background child of
/// it may hold them open).
const PIPE_GRACE: Duration = Duration::from_secs(1);

fn drain(mut r: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// Runs `argv` (the program and its arguments) and waits at most `timeout`; a command still
/// running then is killed. Never fails: a program that cannot start is an outcome too.
pub fn run(argv: &[String], timeout: Duration) -> Outcome {
    let start = Instant::now();
    let failed = |why: String| Outcome {
        exit_code: None,
        timed_out: false,
        stdout: String::new(),
        stderr: why,
        elapsed: start.elapsed(),
    };
    let Some((prog, args)) = argv.split_first() else {
        return failed("an empty command".into());
    };
    let mut cmd = Command::new(prog);
    cmd.args(args);
    // Its own process group, so a time-out ends whatever it started too.
    super::process::own_group(&mut cmd);
    let mut child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot run {prog}: {e}")),
    };
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                timed_out = true;
                super::process::kill_group(&child);
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    let text = |h: Option<std::sync::mpsc::Receiver<Vec<u8>>>| {
        h.and_then(|h| h.recv_timeout(PIPE_GRACE).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Outcome {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        stdout: text(out),
        stderr: text(err),
        elapsed: start.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn output_status_and_time_out() {
        let o = run(&argv(&["echo", "a; b"]), Duration::from_secs(10));
        assert_eq!(o.exit_code, Some(0));
        assert_eq!(o.stdout, "a; b\n", "no shell: the ; is a character");
        let o = run(&argv(&["false"]), Duration::from_secs(10));
        assert_eq!(o.exit_code, Some(1));
        let o = run(&argv(&["sleep", "5"]), Duration::from_millis(200));
        assert!(o.timed_out);
        assert_eq!(o.exit_code, None);
        assert!(o.elapsed < Duration::from_secs(4));
        let o = run(&argv(&["/nonexistent/prog"]), Duration::from_secs(1));
        assert_eq!(o.exit_code, None);
        assert!(
            o.stderr.contains("cannot run /nonexistent/prog"),
            "{}",
            o.stderr
        );
        let o = run(
            &argv(&["head", "-c", "100000", "/dev/zero"]),
            Duration::from_secs(10),
        );
        assert_eq!(o.exit_code, Some(0));
        assert_eq!(o.stdout.len(), OUTPUT_CAP);
    }
}
