//! The system's clocks and names: `CLOCK_MONOTONIC` (the clock of perf samples, one-way
//! delay tags and device snapshots; one per boot, see `host::boot_id`), the tick of
//! /proc/stat's counters, the host name and kernel release, the online CPUs.

use linerate_wire::report::ProcessCpu;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;

/// `CLOCK_MONOTONIC` in nanoseconds; `None` if it cannot be read (Linux always can).
pub fn monotonic_ns() -> Option<u64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    let ns = i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec());
    u64::try_from(ns).ok()
}

/// Clock ticks per second of /proc/stat's CPU times (`sysconf(_SC_CLK_TCK)`); `None` if
/// unknown.
pub fn ticks_per_s() -> Option<u64> {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|t| u64::try_from(t).ok())
        .filter(|&t| t > 0)
}

/// The host name and kernel release (uname(2)); each absent if empty or unreadable.
pub fn uname() -> (Option<String>, Option<String>) {
    match nix::sys::utsname::uname() {
        Ok(u) => (
            Some(u.nodename().to_string_lossy().into_owned()).filter(|s| !s.is_empty()),
            Some(u.release().to_string_lossy().into_owned()).filter(|s| !s.is_empty()),
        ),
        Err(_) => (None, None),
    }
}

/// Online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`); `None` if it does not say.
pub fn online_cpu_count() -> Option<u32> {
    let n = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN).ok()??;
    u32::try_from(n).ok().filter(|&n| n > 0)
}

// The CPU time of this thread or process (sys::rusage), from getrusage(2).

/// Nanoseconds in a `timeval`; `None` if negative or out of range.
fn timeval_ns(tv: TimeVal) -> Option<u64> {
    let sec = u64::try_from(tv.tv_sec()).ok()?;
    let usec = u64::try_from(tv.tv_usec()).ok()?;
    sec.checked_mul(1_000_000_000)?
        .checked_add(usec.checked_mul(1_000)?)
}

fn usage(who: UsageWho) -> Option<ProcessCpu> {
    let u = getrusage(who).ok()?;
    Some(ProcessCpu {
        user_ns: timeval_ns(u.user_time())?,
        system_ns: timeval_ns(u.system_time())?,
    })
}

/// CPU time the calling thread has used so far (`RUSAGE_THREAD`); `None` if the call fails.
pub fn thread_cpu() -> Option<ProcessCpu> {
    usage(UsageWho::RUSAGE_THREAD)
}

/// CPU time the whole process has used so far (`RUSAGE_SELF`); `None` if the call fails.
pub fn process_cpu() -> Option<ProcessCpu> {
    usage(UsageWho::RUSAGE_SELF)
}

/// The CPU ticks when the OS has no /proc/stat: Linux has it, so none here (sys::cpu reads
/// the file).
#[inline]
pub fn cpu_ticks() -> Option<(
    linerate_wire::device::CpuTick,
    Vec<(u32, linerate_wire::device::CpuTick)>,
)> {
    None
}

/// Why `what` cannot run on this OS: never on Linux.
#[inline]
pub fn needs_linux(_what: &str) -> Option<String> {
    None
}

/// Opens `path` for reading without waiting for a writer when it is a FIFO (O_NONBLOCK at
/// open), then makes its reads blocking again, so a pipe whose writer is slow is waited
/// for and one without a writer reads as its end ([`crate::sys::files`]).
pub fn open_for_reading(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    nix::fcntl::fcntl(
        file.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
    )?;
    Ok(file)
}

/// The host's TCP and UDP counters where they come from elsewhere than /proc/net/snmp:
/// `None` here ([`crate::sys::snmp::read_snmp`] reads /proc).
pub fn protocol_counters() -> Option<std::io::Result<Vec<(String, i64)>>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeval_conversion() {
        // 2 s + 500 µs = 2 000 500 000 ns.
        assert_eq!(timeval_ns(TimeVal::new(2, 500)), Some(2_000_500_000));
        assert_eq!(timeval_ns(TimeVal::new(-1, 0)), None);
    }
}
