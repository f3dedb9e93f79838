//! Pinning the calling thread to one CPU (sched_setaffinity(2)).
//!
//! CPU lists in sysfs (`/sys/devices/system/cpu/online`) use the kernel's "cpulist"
//! format, e.g. `0-3,8,10-11`; [`parse_cpu_list`] and [`format_cpu_list`] read and write it.

use std::io;
use std::path::Path;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use super::{cpu, read_text, SysError, SysParseError};

/// The sysfs file listing online CPUs.
pub const SYS_CPU_ONLINE: &str = "/sys/devices/system/cpu/online";

/// Parses a kernel cpulist such as `0-3,8,10-11` into ascending, de-duplicated indices.
/// An empty list (only whitespace) is empty.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, SysParseError> {
    const WHAT: &str = "CPU list";
    let bad = |part: &str| SysParseError::new(WHAT, Some(1), format!("{part:?} is not N or N-M"));
    let mut cpus = Vec::new();
    let text = text.trim();
    if text.is_empty() {
        return Ok(cpus);
    }
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
            None => (part.parse::<u32>(), part.parse::<u32>()),
        };
        let (lo, hi) = (lo.map_err(|_| bad(part))?, hi.map_err(|_| bad(part))?);
        if lo > hi {
            return Err(SysParseError::new(
                WHAT,
                Some(1),
                format!("range {part:?} is backwards"),
            ));
        }
        // CpuSet holds at most CpuSet::count() CPUs; refuse absurd ranges instead of
        // allocating for them.
        if hi as usize >= CpuSet::count().max(1 << 16) {
            return Err(SysParseError::new(
                WHAT,
                Some(1),
                format!("CPU {hi} is beyond any supported CPU count"),
            ));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats ascending CPU indices as a cpulist: `[0, 1, 2, 5]` → `"0-2,5"`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && end.checked_add(1) == Some(cpus[i + 1]) {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Online CPUs: `/sys/devices/system/cpu/online`, or the `cpuN` lines of `/proc/stat` when
/// sysfs is not mounted.
pub fn online_cpus() -> Result<Vec<u32>, SysError> {
    let path = Path::new(SYS_CPU_ONLINE);
    match read_text(path) {
        Ok(text) => parse_cpu_list(&text).map_err(|e| SysError::Parse(e.with_file(path))),
        Err(sys_err) => match cpu::read_proc_stat() {
            Ok(t) => Ok(t.per_cpu.iter().map(|(i, _)| *i).collect()),
            Err(_) => Err(sys_err),
        },
    }
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> io::Result<Vec<u32>> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)?;
    Ok((0..CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .filter_map(|i| u32::try_from(i).ok())
        .collect())
}

fn no_such_cpu(cpu: u32, online: Option<&[u32]>) -> io::Error {
    let msg = match online {
        Some(list) => format!(
            "CPU {cpu} does not exist: this host has CPUs {}",
            format_cpu_list(list)
        ),
        None => format!("CPU {cpu} does not exist"),
    };
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Restricts the calling thread to CPU `cpu`.
///
/// Errors (`InvalidInput`): a CPU that is not online ("CPU 7 does not exist: this host has
/// CPUs 0-1"), or one outside this process's allowed set (cgroup cpuset, `taskset`), which
/// the kernel refuses with `EINVAL`; the message lists the allowed CPUs.
pub fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let online = online_cpus().ok();
    if let Some(list) = &online {
        if !list.contains(&cpu) {
            return Err(no_such_cpu(cpu, Some(list)));
        }
    }
    let mut set = CpuSet::new();
    let index = usize::try_from(cpu).map_err(|_| no_such_cpu(cpu, online.as_deref()))?;
    set.set(index)
        .map_err(|_| no_such_cpu(cpu, online.as_deref()))?;
    match sched_setaffinity(Pid::from_raw(0), &set) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EINVAL) => {
            let allowed = current_affinity()
                .map(|a| format_cpu_list(&a))
                .unwrap_or_else(|_| "unknown".to_string());
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot pin to CPU {cpu}: not in this process's allowed CPUs ({allowed})"),
            ))
        }
        Err(e) => Err(io::Error::other(format!(
            "cannot pin to CPU {cpu}: sched_setaffinity: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            [0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_cpu_list("0\n").unwrap(), [0]);
        assert_eq!(parse_cpu_list(" \n").unwrap(), Vec::<u32>::new());
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[0, 1]), "0-1");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(parse_cpu_list("3,1-2,2").unwrap(), [1, 2, 3]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("0-").is_err());
        assert!(parse_cpu_list("0-4294967295").is_err());
    }

    #[test]
    fn pin_to_first_allowed_cpu() {
        // On a fresh thread so the test harness's threads keep their affinity. CPU 0 on
        // this 2-core host; the first allowed CPU in general (a cpuset may exclude 0).
        let result = std::thread::spawn(|| {
            let allowed = current_affinity().unwrap();
            let target = if allowed.contains(&0) { 0 } else { allowed[0] };
            pin_current_thread(target).unwrap();
            (target, current_affinity().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(result.1, vec![result.0]);
    }

    #[test]
    fn nonexistent_cpu_is_a_clear_error() {
        let online = online_cpus().unwrap();
        let missing = online.iter().max().copied().unwrap_or(0) + 1;
        let err = pin_current_thread(missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            err.to_string(),
            format!(
                "CPU {missing} does not exist: this host has CPUs {}",
                format_cpu_list(&online)
            )
        );
        // Far beyond CpuSet's capacity: same error, no panic.
        let err = pin_current_thread(u32::MAX).unwrap_err();
        assert!(
            err.to_string().starts_with("CPU 4294967295 does not exist"),
            "{err}"
        );
    }
}
