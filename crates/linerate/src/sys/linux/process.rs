//! This process's dealings with the OS beyond sockets: the interrupt (SIGINT, SIGTERM)
//! that ends a test with its partial result, timer slack, the open-files limit, and whether
//! a file is private to its owner.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Sets `flag` on SIGINT or SIGTERM; with `second_exits`, a second signal (the flag already
/// set) exits at once with status 130.
pub fn on_interrupt(flag: &Arc<AtomicBool>, second_exits: bool) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        if second_exits {
            signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())?;
        }
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(())
}

/// Asks for the finest timer slack (1 ns) for this thread, so that short sleeps of a
/// paced or coalescing loop end on time. Best effort.
pub fn fine_timer_slack() {
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// Raises this process's soft limit of open files to its hard limit (an unlimited hard
/// limit: to the kernel's `fs.nr_open`); returns the soft limit now in force (`u64::MAX`
/// if unknown).
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 here, u32 on 32-bit targets
pub fn raise_open_files() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return u64::MAX;
    };
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse::<libc::rlim_t>().ok()) // 32 bits on 32-bit targets
        .unwrap_or(libc::rlim_t::MAX);
    let want = hard.min(nr_open);
    if soft < want && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
        return want as u64;
    }
    soft as u64
}

/// True if the group or others may read or write the file (its mode has bits in 0o077):
/// a file of secrets must not be so.
pub fn readable_by_others(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o077 != 0
}

/// A signal [`signal`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: end, cleanly.
    Term,
    /// SIGKILL: end now.
    Kill,
}

/// Sends `sig` to process `pid`.
pub fn signal(pid: i32, sig: Signal) -> std::io::Result<()> {
    use nix::sys::signal::{kill, Signal as S};
    let sig = match sig {
        Signal::Term => S::SIGTERM,
        Signal::Kill => S::SIGKILL,
    };
    Ok(kill(nix::unistd::Pid::from_raw(pid), sig)?)
}

/// True if process `pid` exists (a signal could be sent to it).
pub fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Replaces this process with `cmd` (execvp); returns only on failure, with the error.
pub fn exec(cmd: &mut std::process::Command) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    cmd.exec()
}

/// Puts the command's process in a process group of its own (before it starts), so that
/// [`kill_group`] ends whatever it started too.
pub fn own_group(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// SIGKILL to the process group [`own_group`] made for `child`.
pub fn kill_group(child: &std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
