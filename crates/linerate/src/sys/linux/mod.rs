//! The Linux backend of [`crate::sys`]: the kernel's own interfaces (system calls, ioctls,
//! socket options, AF_PACKET, perf events). Chosen by `cfg` in sys/mod.rs alone; the
//! Windows backend (sys/windows/) exports the same modules with the same signatures.

// The portable modules the backend's files reach as `super::x`.
use super::{bpf, cpu, iface, read_text, samples, SysError, SysParseError};

pub mod affinity;
// Audited unsafe: the PACKET_TX_RING mapping and its tp_status hand-over; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod afpacket;
// Audited unsafe: socket(AF_PACKET), bind and SO_ATTACH_FILTER; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod capture;
// Audited unsafe: SIOCETHTOOL and SIOCGIFMTU ioctls; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod ethtool;
// Audited unsafe: sendmmsg/recvmmsg; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod mmsg;
pub mod net;
pub mod process;
// Audited unsafe: getsockopt(IP_MTU / IPV6_MTU); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod pmtu;
// Audited unsafe: perf_event_open, its ring buffer mapping and ioctls; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod perf;
// Audited unsafe: dlsym of glibc's rseq variables and rseq(2) unregistration; every block
// has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod rseq;
// Audited unsafe: fork, in the board build's serve supervisor; every block has a `// SAFETY:` comment.
#[cfg(any(test, panic = "abort"))]
#[allow(unsafe_code)]
pub mod supervise;
pub mod system;
// Audited unsafe: the TUNSETIFF ioctl of the lab's delay line; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod tun;
// Audited unsafe: getsockopt(TCP_INFO); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod tcp_info;
// Audited unsafe: the AF_XDP socket's UMEM, its ring mappings and their producer/consumer
// hand-over; every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod xdp;
// Audited unsafe: SO_ZEROCOPY, MSG_ZEROCOPY sends and MSG_ERRQUEUE completions, memfd and
// sendfile, recv(MSG_TRUNC); every block has a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod zerocopy;
