//! Host facts: name, kernel release, online CPUs, and `/proc/sys` values.

use std::path::{Path, PathBuf};

use linerate_wire::report::HostInfo;

use super::{cpu, read_text, system, SysError, SysParseError};

/// Where sysctl values live.
pub const PROC_SYS: &str = "/proc/sys";

/// Host name and kernel release from uname(2), online CPUs from [`cpu_count`], and the
/// given `software` string ("linerate x.y.z"). Fields uname cannot supply are absent.
pub fn host_info(software: &str) -> HostInfo {
    let (hostname, kernel) = system::uname();
    HostInfo {
        hostname,
        kernel,
        cpu_count: Some(cpu_count()),
        software: software.to_string(),
        boot_id: boot_id(),
    }
}

/// Where the kernel publishes its boot id.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The kernel's boot id: the same for every process (and network namespace) of one boot, so
/// two ends with equal boot ids share `CLOCK_MONOTONIC`. Absent if it cannot be read.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string(BOOT_ID_PATH)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The host's memory (`MemTotal` of `/proc/meminfo`), bytes; `None` when unreadable.
pub fn mem_total_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&text)
}

/// `MemTotal` of a `/proc/meminfo` text, bytes.
pub fn parse_mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Online CPUs in the whole host (not limited by this process's affinity mask, unlike
/// `std::thread::available_parallelism`).
///
/// Sources, first that answers: `sysconf(_SC_NPROCESSORS_ONLN)`; the number of `cpuN`
/// lines in `/proc/stat`; `available_parallelism`; finally 1 (this code is running on at
/// least one CPU).
pub fn cpu_count() -> u32 {
    if let Some(n) = system::online_cpu_count() {
        return n;
    }
    if let Ok(t) = cpu::read_proc_stat() {
        if let Ok(n) = u32::try_from(t.per_cpu.len()) {
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok())
        .unwrap_or(1)
}

/// Parses a sysctl file holding one unsigned integer (surrounding whitespace allowed).
pub fn parse_sysctl_u64(text: &str) -> Result<u64, SysParseError> {
    let t = text.trim();
    t.parse().map_err(|_| {
        SysParseError::new(
            "sysctl value",
            Some(1),
            format!("{t:?} is not a single unsigned integer"),
        )
    })
}

/// Parses a sysctl file holding whitespace-separated unsigned integers, such as
/// `net/ipv4/tcp_rmem` ("4096 131072 6291456").
pub fn parse_sysctl_u64s(text: &str) -> Result<Vec<u64>, SysParseError> {
    text.split_whitespace()
        .map(|w| {
            w.parse().map_err(|_| {
                SysParseError::new(
                    "sysctl value",
                    Some(1),
                    format!("{w:?} is not an unsigned integer"),
                )
            })
        })
        .collect()
}

/// The file for a sysctl name: relative names ("net/core/rmem_max") are under
/// `/proc/sys`; absolute paths are used as given.
pub fn sysctl_path(name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(PROC_SYS).join(p)
    }
}

/// Reads a one-integer sysctl, e.g. `read_sysctl("net/core/rmem_max")`; errors name the file.
pub fn read_sysctl(name: &str) -> Result<u64, SysError> {
    let path = sysctl_path(name);
    let text = read_text(&path)?;
    parse_sysctl_u64(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// Reads a multi-integer sysctl, e.g. `net/ipv4/tcp_rmem`; errors name the file.
pub fn read_sysctl_u64s(name: &str) -> Result<Vec<u64>, SysError> {
    let path = sysctl_path(name);
    let text = read_text(&path)?;
    parse_sysctl_u64s(&text).map_err(|e| SysError::Parse(e.with_file(path)))
}

/// [`read_sysctl`] for callers that only want the value: `None` if it is missing
/// (e.g. no permission, other network namespace without it) or not an integer.
pub fn read_sysctl_u64(name: &str) -> Option<u64> {
    read_sysctl(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let text = "MemTotal:       24570612 kB\nMemFree:         1000 kB\n";
        assert_eq!(parse_mem_total(text), Some(24_570_612 * 1024));
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn host_info_is_filled() {
        let h = host_info("linerate 0.1.0");
        assert_eq!(h.software, "linerate 0.1.0");
        assert!(h.cpu_count.is_some_and(|n| n >= 1));
        // uname -r: the same string the kernel exposes in /proc/sys/kernel/osrelease.
        let osrelease = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(h.kernel.as_deref(), Some(osrelease.trim()));
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(h.hostname.as_deref(), Some(hostname.trim()));
    }

    #[test]
    fn cpu_count_matches_proc_stat() {
        // Online CPUs = cpuN lines of /proc/stat (both list online CPUs only).
        let lines = cpu::read_proc_stat().unwrap().per_cpu.len();
        assert_eq!(cpu_count() as usize, lines);
    }

    #[test]
    fn parse_sysctl_values() {
        assert_eq!(parse_sysctl_u64("212992\n"), Ok(212_992));
        assert_eq!(
            parse_sysctl_u64s("4096\t131072\t6291456\n"),
            Ok(vec![4096, 131_072, 6_291_456])
        );
        let e = parse_sysctl_u64("4096 131072\n").unwrap_err();
        assert!(e.reason.contains("not a single"), "{e}");
        assert!(parse_sysctl_u64("").is_err());
        assert!(parse_sysctl_u64("-1").is_err());
        assert!(parse_sysctl_u64s("1 x").is_err());
    }

    #[test]
    fn sysctl_paths() {
        assert_eq!(
            sysctl_path("net/core/rmem_max"),
            PathBuf::from("/proc/sys/net/core/rmem_max")
        );
        assert_eq!(sysctl_path("/tmp/x"), PathBuf::from("/tmp/x"));
    }

    #[test]
    fn read_live_and_missing_sysctls() {
        // pid_max exists on every Linux and is at least 301 (kernel minimum).
        assert!(read_sysctl_u64("kernel/pid_max").unwrap() >= 301);
        assert_eq!(read_sysctl_u64("net/core/no_such_sysctl"), None);
        let msg = read_sysctl("net/core/no_such_sysctl")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("/proc/sys/net/core/no_such_sysctl"), "{msg}");
        // A file with a non-integer names the file in the error.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        std::fs::write(&path, "cubic\n").unwrap();
        let msg = read_sysctl(path.to_str().unwrap()).unwrap_err().to_string();
        assert!(
            msg.contains(path.to_str().unwrap()) && msg.contains("cubic"),
            "{msg}"
        );
    }
}
