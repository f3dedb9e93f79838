//! System probes behind one interface: CPU times, TCP_INFO, process CPU, host facts, thread
//! affinity, sockets, and the host counters and interface facts of [`hostsnap`]
//! (interrupts, softirqs, softnet, SNMP, interface and driver statistics, ethtool).
//!
//! **The OS seam.** This module is the only place that knows which operating system it runs
//! on: the modules declared here are portable (pure parsers of the kernel's text, and code
//! that reads files through `std`), and the operating system's own calls live in one
//! backend folder, chosen below by `cfg` and nowhere else:
//!
//! * `sys/linux/`: getsockopt(TCP_INFO), getrusage, sched_setaffinity, AF_PACKET capture and
//!   TX rings, perf_event_open, MSG_ZEROCOPY, ethtool ioctls, sendmmsg/recvmmsg, signals.
//! * `sys/windows/`: Winsock (WSAPoll, SIO_TCP_INFO), GetProcessTimes/GetThreadTimes,
//!   GetSystemTimes, the IP Helper API (GetBestInterfaceEx, GetIfEntry2, GetTcpStatistics),
//!   SetConsoleCtrlHandler; what is Linux by nature is refused there with an error that
//!   says it needs Linux.
//!
//! Both backends export the same module names with the same signatures ([`net`] for the
//! socket calls the engines make, [`tcp_info`], [`rusage`], [`iface`], ...), so engine/, rr/
//! and session/ compile unchanged for either. Adding an operating system is one folder
//! beside these two and one `cfg` line here.
//!
//! Every source comes in two halves:
//!
//! * `parse_*` functions are pure: they take the text or bytes (`&str`, `&[u8]`) and return
//!   the decoded value or a [`SysParseError`] saying what was being parsed, at which line,
//!   and why. They are unit-tested on fixtures under `tests/fixtures/proc/`.
//! * `read_*` functions (and the few small helpers built on them) do the I/O — read a
//!   `/proc` file, call `getsockopt`/`getrusage`/`sched_setaffinity` — and put the path
//!   into their errors ([`SysError::Io`], or [`SysParseError::file`] set).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

// The backend: the operating system's own calls (see above). One line per OS.
#[cfg(target_os = "linux")]
#[path = "linux/mod.rs"]
mod os;
#[cfg(windows)]
#[path = "windows/mod.rs"]
mod os;
pub use os::*;

pub mod bpf;
pub mod command;
pub mod conntrack;
pub mod counter;
pub mod cpu;
pub mod devsnap;
pub mod files;
pub mod host;
pub mod hostsnap;
pub mod iface;
pub mod interrupts;
pub mod kallsyms;
pub mod listen;
pub mod multicast;
pub mod neigh;
pub mod netdev;
pub mod nic;
pub mod qdisc;
pub mod resolve;
pub mod rusage;
pub mod samples;
pub mod snmp;
pub mod sockets;
pub mod softirqs;
pub mod softnet;
pub mod zc;

/// Text or bytes from the kernel that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SysParseError {
    /// What was being parsed, e.g. "/proc/stat".
    pub what: &'static str,
    /// The file it came from, when it was read from one (set by `read_*`).
    pub file: Option<PathBuf>,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// Why it could not be parsed.
    pub reason: String,
}

impl fmt::Display for SysParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot parse {}", self.what)?;
        if let Some(file) = &self.file {
            write!(f, " from {}", file.display())?;
        }
        if let Some(line) = self.line {
            write!(f, " at line {line}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl SysParseError {
    /// An error about `what`, optionally at a 1-based `line`.
    pub fn new(what: &'static str, line: Option<usize>, reason: impl Into<String>) -> Self {
        SysParseError {
            what,
            file: None,
            line,
            reason: reason.into(),
        }
    }

    /// The same error, naming the file the text was read from.
    pub fn with_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }
}

/// Failure of a `read_*` function.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file was read but its contents could not be parsed.
    #[error(transparent)]
    Parse(#[from] SysParseError),
}

/// Reads a whole text file, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, SysError> {
    std::fs::read_to_string(path).map_err(|source| SysError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_display_names_file_and_line() {
        let e = SysParseError::new("/proc/stat", Some(3), "bad number \"x\"").with_file("/tmp/s");
        assert_eq!(
            e.to_string(),
            "cannot parse /proc/stat from /tmp/s at line 3: bad number \"x\""
        );
        let e = SysParseError::new("sysctl value", None, "empty");
        assert_eq!(e.to_string(), "cannot parse sysctl value: empty");
    }

    #[test]
    fn io_error_names_path() {
        let err = read_text(Path::new("/nonexistent/linerate-test")).err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.starts_with("cannot read /nonexistent/linerate-test: "),
            "{msg}"
        );
    }
}
