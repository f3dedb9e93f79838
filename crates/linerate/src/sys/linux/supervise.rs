//! Keeps `linerate serve` serving across a panic in a build that aborts on panic.
//!
//! The board's core is built with `panic = "abort"` (Cargo.toml, [profile.board]): without
//! unwinding it has no unwind tables or landing pads to carry, about 0.45 MB of a 32-bit
//! PowerPC binary. A session's panic can then no longer be caught on its thread as the
//! workstation build does (session/server/accept.rs), so the server runs in a child
//! process and a small parent starts it again when it dies of a signal: SIGABRT from a
//! panic, or SIGKILL from the kernel's out-of-memory killer on a board with a few MB free.
//! The listening sockets were bound by the parent before the first fork, so the port stays
//! the same; the tests that were running in the dead child are lost, and the parent says so
//! in one line.
//!
//! Signals: the child runs in its own process group, so a terminal's Ctrl-C reaches the
//! parent alone, which passes SIGINT and SIGTERM on to the child (its server then stops as
//! it would unsupervised: the first signal gracefully, a second at once) and returns the
//! child's exit status. If the parent dies first, even of SIGKILL, the kernel sends the
//! child SIGTERM (`PR_SET_PDEATHSIG`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, getpid, getppid, setpgid, ForkResult, Pid};

/// Which process returned from [`fork_restarting`].
#[derive(Debug, PartialEq, Eq)]
pub enum Role {
    /// The child: serve. `restarts` counts the children that died before this one.
    Child { restarts: u32 },
    /// The parent, after its last child ended: exit with this status (the child's exit
    /// code, or 128 + the signal that ended it after the parent passed a signal on).
    Parent(u8),
}

/// A child that dies sooner than this after it started is started again only after this
/// long, so a server that fails at once does not spin.
const MIN_LIFETIME: Duration = Duration::from_secs(1);
/// How often the parent looks for its child's end and for a signal to pass on.
const POLL: Duration = Duration::from_millis(100);

/// Forks; in the child returns [`Role::Child`]; in the parent waits for the child and,
/// when it died of a signal the parent did not pass on, forks again. `log` gets one line
/// per restart. Call it before starting any thread: the child of a fork has only the
/// calling thread.
pub fn fork_restarting(log: &dyn Fn(&str)) -> anyhow::Result<Role> {
    let forward = [Signal::SIGINT, Signal::SIGTERM].map(|sig| {
        let flag = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(sig as i32, flag.clone()).map(|_| (sig, flag))
    });
    let forward = forward.into_iter().collect::<Result<Vec<_>, _>>()?;
    let parent = getpid();
    let mut restarts = 0u32;
    loop {
        let started = Instant::now();
        // SAFETY: the caller forks before it starts a thread (this function's contract), so
        // the child is a whole copy of a single-threaded process and may run any code; the
        // signal-hook handlers registered above only store to atomics.
        match unsafe { fork() }? {
            ForkResult::Child => {
                become_child(parent);
                return Ok(Role::Child { restarts });
            }
            ForkResult::Parent { child } => match wait_for(child, &forward)? {
                Ended::Exited(code) => return Ok(Role::Parent(code)),
                Ended::Died { sig, told: true } => {
                    return Ok(Role::Parent(128u8.saturating_add(sig as u8)));
                }
                Ended::Died { sig, told: false } => {
                    restarts += 1;
                    log(&format!(
                        "the serving process died of {sig} (a panic is SIGABRT, its message is above; out of memory is SIGKILL); tests it was running are lost; serving again on the same port (restart {restarts})"
                    ));
                    if let Some(rest) = MIN_LIFETIME.checked_sub(started.elapsed()) {
                        std::thread::sleep(rest);
                    }
                }
            },
        }
    }
}

enum Ended {
    Exited(u8),
    /// `told`: the parent had passed a signal on to the child.
    Died {
        sig: Signal,
        told: bool,
    },
}

/// Waits for `child` to end, passing on each signal of `forward` the parent receives.
fn wait_for(child: Pid, forward: &[(Signal, Arc<AtomicBool>)]) -> anyhow::Result<Ended> {
    let mut told = false;
    loop {
        for (sig, flag) in forward {
            if flag.swap(false, Ordering::SeqCst) {
                let _ = kill(child, *sig);
                told = true;
            }
        }
        match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(Ended::Exited(code as u8)),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Ended::Died { sig, told }),
            Ok(_) | Err(nix::errno::Errno::EINTR) => std::thread::sleep(POLL),
            Err(e) => anyhow::bail!("cannot wait for the serving process: {e}"),
        }
    }
}

/// The child's set-up: its own process group, and SIGTERM when the parent dies.
fn become_child(parent: Pid) {
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
    if getppid() != parent {
        // The parent died before the line above took effect.
        let _ = kill(getpid(), Signal::SIGTERM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_child_that_dies_of_a_signal_is_started_again_and_its_exit_code_is_returned() {
        let lines = Mutex::new(Vec::new());
        let log = |l: &str| lines.lock().unwrap().push(l.to_string());
        match fork_restarting(&log).unwrap() {
            Role::Child { restarts: 0 } => {
                // The first child dies as a panic does under panic = "abort", without a
                // core file.
                let _ =
                    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
                let _ = kill(getpid(), Signal::SIGABRT);
                std::thread::sleep(Duration::from_secs(60));
                // SAFETY: _exit ends the forked child of the test harness without running
                // the harness's exit handlers.
                unsafe { libc::_exit(99) }
            }
            Role::Child { restarts } => {
                // SAFETY: as above; the exit code says how many children died before.
                unsafe { libc::_exit(40 + restarts as i32) }
            }
            Role::Parent(code) => {
                assert_eq!(code, 41, "the second child's exit code");
                let lines = lines.lock().unwrap();
                assert_eq!(lines.len(), 1, "{lines:?}");
                assert!(lines[0].contains("died of SIGABRT"), "{}", lines[0]);
                assert!(lines[0].contains("restart 1"), "{}", lines[0]);
            }
        }
    }
}
