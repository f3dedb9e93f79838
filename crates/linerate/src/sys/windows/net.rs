//! The socket calls of engine/, rr/ and session/ beyond `std::net` and socket2, over
//! Winsock: readiness (WSAPoll), non-blocking sends and receives, peeks, shutdown, and the
//! error numbers the loops tell apart (WSAE* codes). UDP segmentation offload is Linux's.

use std::io;
use std::net::{IpAddr, Shutdown, TcpStream};
use std::os::windows::io::{AsRawSocket, AsSocket, BorrowedSocket, RawSocket};
use std::time::Duration;

use windows_sys::Win32::Networking::WinSock as ws;

/// A borrowed socket (a SOCKET here, a file descriptor on Linux).
pub type Sock<'a> = BorrowedSocket<'a>;
/// A socket's raw handle, for a watchdog that shuts it down from another thread.
pub type RawSock = RawSocket;

/// What owns or borrows a socket: std's and socket2's sockets.
pub trait AsSock {
    /// The socket, borrowed.
    fn as_sock(&self) -> Sock<'_>;
    /// The socket's raw handle.
    fn raw_sock(&self) -> RawSock {
        self.as_sock().as_raw_socket()
    }
}

impl<T: AsSocket> AsSock for T {
    fn as_sock(&self) -> Sock<'_> {
        self.as_socket()
    }
}

/// The error numbers (`io::Error::raw_os_error`) the data loops tell apart: Winsock's.
pub mod errno {
    /// No buffer space (WSAENOBUFS).
    pub const ENOBUFS: i32 = 10055;
    /// A bad address (WSAEFAULT).
    pub const EFAULT: i32 = 10014;
    /// An I/O error (ERROR_IO_DEVICE; Winsock has none of its own).
    pub const EIO: i32 = 1117;
    /// An invalid argument (WSAEINVAL).
    pub const EINVAL: i32 = 10022;
    /// Not permitted (WSAEACCES).
    pub const EPERM: i32 = 10013;
    /// A non-blocking connect still under way (WSAEINPROGRESS).
    pub const EINPROGRESS: i32 = 10036;
    /// Nothing there now (WSAEWOULDBLOCK).
    pub const EAGAIN: i32 = 10035;
}

fn last_error() -> io::Error {
    // SAFETY: WSAGetLastError only reads this thread's last Winsock error.
    io::Error::from_raw_os_error(unsafe { ws::WSAGetLastError() })
}

fn millis(timeout: Duration, round_up: bool) -> i32 {
    let ms = timeout.as_millis() + u128::from(round_up && timeout.subsec_nanos() % 1_000_000 != 0);
    i32::try_from(ms).unwrap_or(i32::MAX)
}

fn poll(socks: &[Sock<'_>], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut fds: Vec<ws::WSAPOLLFD> = socks
        .iter()
        .map(|s| ws::WSAPOLLFD {
            fd: s.as_raw_socket() as ws::SOCKET,
            events: ws::POLLRDNORM,
            revents: 0,
        })
        .collect();
    let n = u32::try_from(fds.len()).unwrap_or(u32::MAX);
    // SAFETY: `fds` holds `n` initialised entries of open sockets (borrowed for the call).
    if unsafe { ws::WSAPoll(fds.as_mut_ptr(), n, timeout_ms) } < 0 {
        return Err(last_error());
    }
    Ok(fds.iter().map(|f| f.revents != 0).collect())
}

/// Which of `socks` are readable (or closed, or in error) within `timeout` (whole
/// milliseconds).
pub fn poll_readable(socks: &[Sock<'_>], timeout: Duration) -> io::Result<Vec<bool>> {
    poll(socks, millis(timeout, false))
}

/// Waits up to `timeout` (rounded up to a millisecond) for `s` to become readable; true if
/// it did.
pub fn wait_readable(s: Sock<'_>, timeout: Duration) -> io::Result<bool> {
    Ok(poll(&[s], millis(timeout, true))?[0])
}

/// How [`recv`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// What is there now, without waiting.
    Now,
    /// A look at what is there now, left in the socket.
    PeekNow,
    /// A look at the whole buffer's worth, waiting up to the socket's read time-out.
    PeekAll,
}

/// Winsock has no MSG_DONTWAIT: a call "now" waits for nothing, with a zero-time poll
/// first. Nothing there is a `WouldBlock` error.
fn ready_now(s: Sock<'_>, write: bool) -> io::Result<()> {
    let mut fd = ws::WSAPOLLFD {
        fd: s.as_raw_socket() as ws::SOCKET,
        events: if write {
            ws::POLLWRNORM
        } else {
            ws::POLLRDNORM
        },
        revents: 0,
    };
    // SAFETY: one initialised entry of an open socket, borrowed for the call.
    match unsafe { ws::WSAPoll(&mut fd, 1, 0) } {
        n if n < 0 => Err(last_error()),
        0 => Err(io::ErrorKind::WouldBlock.into()),
        _ => Ok(()),
    }
}

/// One receive of `s` into `buf`. Nothing there is a `WouldBlock` error; the socket's read
/// time-out a `WouldBlock` or `TimedOut` one.
pub fn recv(s: Sock<'_>, buf: &mut [u8], how: Recv) -> io::Result<usize> {
    let flags = match how {
        Recv::Now => 0,
        Recv::PeekNow => ws::MSG_PEEK,
        Recv::PeekAll => ws::MSG_PEEK | ws::MSG_WAITALL,
    };
    if how != Recv::PeekAll {
        ready_now(s, false)?;
    }
    let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
    // SAFETY: `buf` is writable for `len` bytes; the socket is open for the call.
    let n = unsafe {
        ws::recv(
            s.as_raw_socket() as ws::SOCKET,
            buf.as_mut_ptr(),
            len,
            flags,
        )
    };
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => {
            let e = last_error();
            // WSAETIMEDOUT: the read time-out, as EAGAIN on Linux.
            Err(if e.raw_os_error() == Some(10060) {
                io::ErrorKind::WouldBlock.into()
            } else {
                e
            })
        }
    }
}

/// Sends what of `buf` fits the send buffer now, without waiting. A full buffer is a
/// `WouldBlock` error.
pub fn send_now(s: Sock<'_>, buf: &[u8]) -> io::Result<usize> {
    ready_now(s, true)?;
    let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
    // SAFETY: `buf` is readable for `len` bytes; the socket is open for the call.
    let n = unsafe { ws::send(s.as_raw_socket() as ws::SOCKET, buf.as_ptr(), len, 0) };
    usize::try_from(n).map_err(|_| last_error())
}

/// shutdown of a socket.
pub fn shutdown(s: Sock<'_>, how: Shutdown) -> io::Result<()> {
    shutdown_raw(s.as_raw_socket(), how)
}

/// Whether a shutdown ends a `recv`, `accept` or `connect` that another thread is blocked
/// in, and leaves what the reading side had queued readable. Winsock: no. Under Wine a
/// `recv` blocked in another thread waits on through `shutdown` (SD_RECEIVE or SD_BOTH)
/// until data comes, and a `recv` after SD_RECEIVE fails (WSAESHUTDOWN) even with data
/// queued; Windows's documentation promises neither. So the loops that block wait with
/// time-outs here and look at their stop flags between them.
pub const SHUTDOWN_WAKES: bool = false;

/// shutdown of a raw socket handle that its owner keeps open meanwhile.
pub fn shutdown_raw(s: RawSock, how: Shutdown) -> io::Result<()> {
    let how = match how {
        Shutdown::Read => ws::SD_RECEIVE,
        Shutdown::Write => ws::SD_SEND,
        Shutdown::Both => ws::SD_BOTH,
    };
    // SAFETY: shutdown takes a socket handle by value; a stale one fails with WSAENOTSOCK.
    if unsafe { ws::shutdown(s as ws::SOCKET, how) } != 0 {
        return Err(last_error());
    }
    Ok(())
}

/// UDP GSO is Linux's: refused here (the sender falls back to one datagram per call).
pub fn set_udp_gso(_s: &impl AsSocket, segment: usize) -> io::Result<()> {
    if segment == 0 {
        return Ok(());
    }
    Err(super::needs_linux("UDP GSO"))
}

/// TCP_QUICKACK is Linux's: refused here.
pub fn set_quickack(_s: &impl AsSocket) -> io::Result<()> {
    Err(super::needs_linux("TCP_QUICKACK"))
}

/// UDP GRO is Linux's: never on here.
pub fn enable_udp_gro(_s: &impl AsSocket) -> bool {
    false
}

/// This host's interface addresses (name, address): the IP Helper API's adapters.
pub fn interface_addresses() -> io::Result<Vec<(String, IpAddr)>> {
    super::system::adapter_addresses()
}

/// The index of interface `name` (an adapter's friendly name or its LUID name).
pub fn if_index(name: &str) -> Result<u32, String> {
    super::system::adapter_index(name).ok_or_else(|| format!("no adapter named {name:?}"))
}

/// Makes an accepted connection blocking: Windows's accepted sockets inherit the
/// listener's non-blocking mode, Linux's do not.
pub fn after_accept(stream: &TcpStream) {
    let _ = stream.set_nonblocking(false);
}

/// The TCP socket options that are Linux's: the MSS, the congestion control (its
/// algorithm is the system's on Windows), the IPv6 traffic class and SO_REUSEPORT.
pub mod opt {
    use socket2::{SockRef, Socket};
    use std::io;

    fn linux<T>(what: &str) -> io::Result<T> {
        Err(super::super::needs_linux(what))
    }

    /// TCP_MAXSEG is not read here.
    pub fn mss(_s: &SockRef<'_>) -> io::Result<u32> {
        linux("reading TCP_MAXSEG")
    }
    /// Refused.
    pub fn set_mss(_s: &SockRef<'_>, _mss: u32) -> io::Result<()> {
        linux("--mss (TCP_MAXSEG)")
    }
    /// Refused.
    pub fn congestion(_s: &SockRef<'_>) -> io::Result<Vec<u8>> {
        linux("TCP_CONGESTION")
    }
    /// Refused.
    pub fn set_congestion(_s: &SockRef<'_>, _name: &[u8]) -> io::Result<()> {
        linux("--congestion (TCP_CONGESTION)")
    }
    /// Refused.
    pub fn set_tclass_v6(_s: &SockRef<'_>, _tclass: u32) -> io::Result<()> {
        linux("--tos over IPv6 (IPV6_TCLASS)")
    }
    /// SO_REUSEPORT is Linux's: Windows's SO_REUSEADDR lets sockets share a UDP port
    /// the same way (the server's test sockets and its iperf3 port).
    pub fn set_reuse_port(s: &Socket, on: bool) -> io::Result<()> {
        s.set_reuse_address(on)
    }
}
