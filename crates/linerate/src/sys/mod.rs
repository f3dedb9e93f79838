//! Linux system probes: CPU ticks, TCP_INFO, rusage, host facts, thread affinity, and the
//! host counters and interface facts of [`hostsnap`] (interrupts, softirqs, softnet, SNMP,
//! interface and driver statistics, ethtool).
//!
//! Every source comes in two halves:
//!
//! * `parse_*` functions are pure: they take the text or bytes (`&str`, `&[u8]`) and return
//!   the decoded value or a [`SysParseError`] saying what was being parsed, at which line,
//!   and why. They are unit-tested on fixtures under `tests/fixtures/proc/`.
//! * `read_*` functions (and the few small helpers built on them) do the I/O — read a
//!   `/proc` file, call `getsockopt`/`getrusage`/`sched_setaffinity` — and put the path
//!   into their errors ([`SysError::Io`], or [`SysParseError::file`] set).
//!
//! Linux only; the crate builds only for Linux.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub mod affinity;
// Audited unsafe: the PACKET_TX_RING mapping and its tp_status hand-over; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod afpacket;
pub mod bpf;
// Audited unsafe: socket(AF_PACKET), bind and SO_ATTACH_FILTER; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod capture;
pub mod command;
pub mod conntrack;
pub mod counter;
pub mod cpu;
pub mod devsnap;
pub mod files;
// Audited unsafe: SIOCETHTOOL and SIOCGIFMTU ioctls; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod ethtool;
pub mod host;
pub mod hostsnap;
pub mod iface;
pub mod interrupts;
pub mod kallsyms;
pub mod listen;
pub mod neigh;
pub mod netdev;
// Audited unsafe: getsockopt(IP_MTU / IPV6_MTU); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod pmtu;
// Audited unsafe: perf_event_open, its ring buffer mapping and ioctls; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod perf;
pub mod qdisc;
pub mod resolve;
// Audited unsafe: dlsym of glibc's rseq variables and rseq(2) unregistration; every block
// has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod rseq;
pub mod rusage;
pub mod snmp;
pub mod sockets;
pub mod softirqs;
pub mod softnet;
// Audited unsafe: fork, in the board build's serve supervisor; every block has a `// SAFETY:` comment.
#[cfg(any(test, panic = "abort"))]
#[allow(unsafe_code)]
pub mod supervise;
// Audited unsafe: getsockopt(TCP_INFO); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod tcp_info;
// Audited unsafe: SO_ZEROCOPY, MSG_ZEROCOPY sends and MSG_ERRQUEUE completions, memfd and
// sendfile, recv(MSG_TRUNC); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod zerocopy;

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
