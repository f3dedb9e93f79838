//! This process's dealings with Windows beyond sockets: Ctrl-C and Ctrl-Break (which end a
//! test with its partial result, as SIGINT does on Linux), and the few process calls the
//! Linux backend has, answered in Windows's terms.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use windows_sys::Win32::System::Console::{
    SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT,
};

/// The flags the console handler sets, and how many of them exit on a second event.
static FLAGS: Mutex<Vec<(Arc<AtomicBool>, bool)>> = Mutex::new(Vec::new());
/// Console events seen so far.
static EVENTS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn on_ctrl(kind: u32) -> i32 {
    if kind != CTRL_C_EVENT && kind != CTRL_BREAK_EVENT && kind != CTRL_CLOSE_EVENT {
        return 0;
    }
    EVENTS.fetch_add(1, SeqCst);
    let flags = FLAGS.lock().unwrap_or_else(|e| e.into_inner());
    for (flag, second_exits) in flags.iter() {
        if *second_exits && flag.load(SeqCst) {
            std::process::exit(130);
        }
        flag.store(true, SeqCst);
    }
    1
}

/// Sets `flag` on Ctrl-C, Ctrl-Break or the console's closing; with `second_exits`, a
/// second event (the flag already set) exits at once with status 130.
pub fn on_interrupt(flag: &Arc<AtomicBool>, second_exits: bool) -> std::io::Result<()> {
    let mut flags = FLAGS.lock().unwrap_or_else(|e| e.into_inner());
    if flags.is_empty() {
        // SAFETY: `on_ctrl` is a valid handler for the process's lifetime (a plain function).
        if unsafe { SetConsoleCtrlHandler(Some(on_ctrl), 1) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    flags.push((flag.clone(), second_exits));
    Ok(())
}

/// Timer slack is Linux's; Windows's sleeps have their own resolution. Nothing to do.
pub fn fine_timer_slack() {}

/// Windows has no per-process limit of open sockets like RLIMIT_NOFILE: unknown.
pub fn raise_open_files() -> u64 {
    u64::MAX
}

/// Whether others may read a file: Windows keeps that in ACLs, which this does not read;
/// a file in the user's own profile is private by default. False.
pub fn readable_by_others(_meta: &std::fs::Metadata) -> bool {
    false
}

/// A signal [`signal`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// End, cleanly.
    Term,
    /// End now.
    Kill,
}

/// Signals are Linux's (the lab's namespaces too).
pub fn signal(_pid: i32, _sig: Signal) -> std::io::Result<()> {
    Err(super::needs_linux("signalling a process"))
}

/// Never: the processes of a lab's namespaces are Linux's.
pub fn alive(_pid: i32) -> bool {
    false
}

/// Windows cannot replace a process with another: runs `cmd` and exits with its status.
pub fn exec(cmd: &mut std::process::Command) -> std::io::Error {
    match cmd.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => e,
    }
}

/// Process groups are POSIX's: nothing to do (a time-out kills the command's own process).
pub fn own_group(_cmd: &mut std::process::Command) {}

/// Nothing beyond the child itself, which the caller kills.
pub fn kill_group(_child: &std::process::Child) {}
