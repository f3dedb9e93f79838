//! The Windows backend of [`crate::sys`]: Winsock, the IP Helper API, and the process and
//! system calls of Win32 (through windows-sys). Chosen by `cfg` in sys/mod.rs alone; it
//! exports the modules of the Linux backend (sys/linux/) with the same signatures. What is
//! Linux by nature (AF_PACKET capture and TX rings, perf events, MSG_ZEROCOPY, ethtool,
//! rseq, the fork supervisor) is here too, as modules whose calls fail with an error that
//! says it needs Linux: callers refuse the option before any traffic.

use std::io;

// Audited unsafe: SetThreadAffinityMask; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod affinity;
// Audited unsafe: GetTcpStatisticsEx(2), GetUdpStatisticsEx(2), GetModuleHandleW and
// GetProcAddress; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
mod counters;
mod linux_only;
pub mod mmsg;
// Audited unsafe: the Winsock calls (WSAPoll, recv, send, shutdown, ioctlsocket); every
// block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod net;
pub mod pmtu;
// Audited unsafe: SetConsoleCtrlHandler and process handles; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod process;
// Audited unsafe: GetThreadTimes, GetProcessTimes, QueryPerformanceCounter, GetComputerNameExW;
// every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod system;
// Audited unsafe: WSAIoctl(SIO_TCP_INFO); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod tcp_info;

#[cfg(any(test, panic = "abort"))]
pub use linux_only::supervise;
pub use linux_only::{afpacket, capture, ethtool, perf, rseq, tun, xdp, zerocopy};

/// The error of what only Linux can do: `what` "needs Linux".
pub(crate) fn needs_linux(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("{what} needs Linux"))
}
