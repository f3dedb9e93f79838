//! The socket calls of engine/, rr/ and session/ beyond `std::net` and socket2: readiness,
//! non-blocking sends and receives, peeks, shutdown of a descriptor, UDP segmentation
//! offload, and the error numbers the loops tell apart. The Windows backend has the same
//! functions over Winsock.

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, MsgFlags};

/// A borrowed socket (a file descriptor here, a SOCKET on Windows).
pub type Sock<'a> = BorrowedFd<'a>;
/// A socket's raw handle, for a watchdog that shuts it down from another thread.
pub type RawSock = RawFd;

/// What owns or borrows a socket: std's and socket2's sockets.
pub trait AsSock {
    /// The socket, borrowed.
    fn as_sock(&self) -> Sock<'_>;
    /// The socket's raw handle.
    fn raw_sock(&self) -> RawSock {
        self.as_sock().as_raw_fd()
    }
}

impl<T: AsFd> AsSock for T {
    fn as_sock(&self) -> Sock<'_> {
        self.as_fd()
    }
}

/// The error numbers (`io::Error::raw_os_error`) the data loops tell apart.
pub mod errno {
    /// No buffer space (a full qdisc or socket buffer).
    pub const ENOBUFS: i32 = libc::ENOBUFS;
    /// A bad address (zero-copy receive of a buffer the kernel would not map).
    pub const EFAULT: i32 = libc::EFAULT;
    /// An I/O error (a driver refusing UDP GSO).
    pub const EIO: i32 = libc::EIO;
    /// An invalid argument.
    pub const EINVAL: i32 = libc::EINVAL;
    /// Not permitted.
    pub const EPERM: i32 = libc::EPERM;
    /// A non-blocking connect still under way.
    pub const EINPROGRESS: i32 = libc::EINPROGRESS;
    /// Nothing there now (a non-blocking call or a time-out).
    pub const EAGAIN: i32 = libc::EAGAIN;
}

/// Which of `socks` are readable (or closed, or in error) within `timeout` (whole
/// milliseconds). An interrupted wait is an `Interrupted` error.
pub fn poll_readable(socks: &[Sock<'_>], timeout: Duration) -> io::Result<Vec<bool>> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let timeout = PollTimeout::try_from(timeout.as_millis()).unwrap_or(PollTimeout::MAX);
    let mut fds: Vec<PollFd> = socks
        .iter()
        .map(|s| PollFd::new(*s, PollFlags::POLLIN))
        .collect();
    poll(&mut fds, timeout)?;
    Ok(fds
        .iter()
        .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
        .collect())
}

/// Waits up to `timeout` (nanosecond resolution) for `s` to become readable; true if it
/// did, false at the time-out or when a signal interrupted the wait.
pub fn wait_readable(s: Sock<'_>, timeout: Duration) -> io::Result<bool> {
    use nix::poll::{ppoll, PollFd, PollFlags};
    use nix::sys::time::TimeSpec;
    let mut fds = [PollFd::new(s, PollFlags::POLLIN)];
    match ppoll(&mut fds, Some(TimeSpec::from_duration(timeout)), None) {
        Ok(n) => Ok(n > 0),
        Err(Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// How [`recv`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// What is there now, without waiting (`MSG_DONTWAIT`).
    Now,
    /// A look at what is there now, left in the socket (`MSG_PEEK | MSG_DONTWAIT`).
    PeekNow,
    /// A look at the whole buffer's worth, waiting up to the socket's read time-out
    /// (`MSG_PEEK | MSG_WAITALL`).
    PeekAll,
}

/// One receive of `s` into `buf`. Nothing there is a `WouldBlock` error, a signal an
/// `Interrupted` one.
pub fn recv(s: Sock<'_>, buf: &mut [u8], how: Recv) -> io::Result<usize> {
    let flags = match how {
        Recv::Now => MsgFlags::MSG_DONTWAIT,
        Recv::PeekNow => MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
        Recv::PeekAll => MsgFlags::MSG_PEEK | MsgFlags::MSG_WAITALL,
    };
    Ok(socket::recv(s.as_raw_fd(), buf, flags)?)
}

/// Sends what of `buf` fits the send buffer now, without waiting and without SIGPIPE. A
/// full buffer is a `WouldBlock` error.
pub fn send_now(s: Sock<'_>, buf: &[u8]) -> io::Result<usize> {
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    Ok(socket::send(s.as_raw_fd(), buf, flags)?)
}

/// shutdown(2) of a socket (a listener's `Read` side too, which wakes its `accept`).
pub fn shutdown(s: Sock<'_>, how: Shutdown) -> io::Result<()> {
    shutdown_raw(s.as_raw_fd(), how)
}

/// Whether a shutdown ends a `recv`, `accept` or `connect` that another thread is blocked
/// in, and leaves what the reading side had queued readable. Linux: yes (the call returns
/// 0 or EINVAL at once), so the loops block with no time-out (a kernel timer on each
/// blocking call) and whoever ends the test shuts their sockets down.
pub const SHUTDOWN_WAKES: bool = true;

/// shutdown(2) of a raw socket handle that its owner keeps open meanwhile.
pub fn shutdown_raw(s: RawSock, how: Shutdown) -> io::Result<()> {
    let how = match how {
        Shutdown::Read => socket::Shutdown::Read,
        Shutdown::Write => socket::Shutdown::Write,
        Shutdown::Both => socket::Shutdown::Both,
    };
    Ok(socket::shutdown(s, how)?)
}

/// UDP GSO: the kernel splits each send into datagrams of `segment` bytes (0 turns it off).
pub fn set_udp_gso(s: &impl AsFd, segment: usize) -> io::Result<()> {
    let segment = i32::try_from(segment).unwrap_or(i32::MAX);
    Ok(socket::setsockopt(s, sockopt::UdpGsoSegment, &segment)?)
}

/// TCP_QUICKACK: the ACKs now due leave at once instead of after the delayed-ACK timer. The
/// kernel clears it again by itself, so a loop sets it after every read.
pub fn set_quickack(s: &impl AsFd) -> io::Result<()> {
    socket2::SockRef::from(s).set_quickack(true)
}

/// UDP GRO: the kernel may hand over several datagrams coalesced in one receive. True if
/// the socket took it.
pub fn enable_udp_gro(s: &impl AsFd) -> bool {
    socket::setsockopt(s, sockopt::UdpGroSegment, &true).is_ok()
}

/// This thread's namespace's interface addresses (name, address), from `getifaddrs`.
pub fn interface_addresses() -> io::Result<Vec<(String, std::net::IpAddr)>> {
    use std::net::IpAddr;
    let mut out = Vec::new();
    for ifa in nix::ifaddrs::getifaddrs().map_err(io::Error::from)? {
        let Some(addr) = ifa.address else { continue };
        let ip = if let Some(v4) = addr.as_sockaddr_in() {
            IpAddr::V4(v4.ip())
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            IpAddr::V6(v6.ip())
        } else {
            continue;
        };
        out.push((ifa.interface_name, ip));
    }
    Ok(out)
}

/// The index of interface `name` (if_nametoindex(3)); the error says why there is none.
pub fn if_index(name: &str) -> Result<u32, String> {
    nix::net::if_::if_nametoindex(name).map_err(|e| e.to_string())
}

/// Makes an accepted connection what the server expects: blocking, as Linux's accept(2)
/// returns it whatever the listener's mode (nothing to do here; Windows's accepted sockets
/// inherit the listener's non-blocking mode).
#[inline]
pub fn after_accept(_stream: &std::net::TcpStream) {}

/// The TCP socket options socket2 offers on Linux only: the MSS (TCP_MAXSEG), the
/// congestion control (TCP_CONGESTION), the IPv6 traffic class and SO_REUSEPORT.
pub mod opt {
    use socket2::{SockRef, Socket};
    use std::io;

    /// TCP_MAXSEG.
    pub fn mss(s: &SockRef<'_>) -> io::Result<u32> {
        s.mss()
    }
    /// Sets TCP_MAXSEG.
    pub fn set_mss(s: &SockRef<'_>, mss: u32) -> io::Result<()> {
        s.set_mss(mss)
    }
    /// TCP_CONGESTION (the kernel's 16-byte buffer).
    pub fn congestion(s: &SockRef<'_>) -> io::Result<Vec<u8>> {
        s.tcp_congestion()
    }
    /// Sets TCP_CONGESTION.
    pub fn set_congestion(s: &SockRef<'_>, name: &[u8]) -> io::Result<()> {
        s.set_tcp_congestion(name)
    }
    /// Sets IPV6_TCLASS.
    pub fn set_tclass_v6(s: &SockRef<'_>, tclass: u32) -> io::Result<()> {
        s.set_tclass_v6(tclass)
    }
    /// Sets SO_REUSEPORT.
    pub fn set_reuse_port(s: &Socket, on: bool) -> io::Result<()> {
        s.set_reuse_port(on)
    }
}
