//! Creating and configuring data sockets, on both ends.
//!
//! Options that shape the TCP handshake (buffer sizes for the window scale, MSS) are set
//! before `connect` on the client. The server's data connections are accepted on the shared
//! listener before the test is known, so its options are set right after the hello; Linux
//! still honours a smaller receive buffer then (the advertised window is clamped to it).

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

use super::net::{errno, opt};

use linerate_wire::control::{TestSpec, Transport};

/// Options for one end's data sockets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SockOpts {
    /// SO_SNDBUF request.
    pub sndbuf: Option<u32>,
    /// SO_RCVBUF request.
    pub rcvbuf: Option<u32>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// TCP_MAXSEG.
    pub mss: Option<u32>,
    /// TCP_CONGESTION.
    pub congestion: Option<String>,
    /// IP_TOS / IPV6_TCLASS.
    pub tos: Option<u8>,
}

impl SockOpts {
    /// The options of the server's data sockets for `spec`: what the client asked for, and
    /// for a UDP receiver that asked for no receive buffer, [`UDP_DEFAULT_RCVBUF`].
    pub fn server(spec: &TestSpec) -> SockOpts {
        SockOpts {
            sndbuf: spec.server_sndbuf,
            rcvbuf: spec.server_rcvbuf.or_else(|| {
                (spec.transport == Transport::Udp && spec.direction.client_sends())
                    .then_some(UDP_DEFAULT_RCVBUF)
            }),
            nodelay: spec.nodelay,
            mss: spec.mss,
            congestion: spec.congestion.clone(),
            tos: spec.tos,
        }
    }
}

/// Default receive buffer requested for UDP receivers when the user asked for none, so that
/// the receiving socket is not what limits a UDP test (the kernel caps it at rmem_max).
pub const UDP_DEFAULT_RCVBUF: u32 = 4 * 1024 * 1024;

/// Applies `opts` to a socket. An option the kernel refuses is an error naming the option.
pub fn apply(s: &SockRef<'_>, opts: &SockOpts, tcp: bool, v6: bool) -> io::Result<()> {
    let ctx = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    if let Some(b) = opts.sndbuf {
        s.set_send_buffer_size(b as usize)
            .map_err(|e| ctx("SO_SNDBUF", e))?;
    }
    if let Some(b) = opts.rcvbuf {
        s.set_recv_buffer_size(b as usize)
            .map_err(|e| ctx("SO_RCVBUF", e))?;
    }
    if let Some(t) = opts.tos {
        if v6 {
            opt::set_tclass_v6(s, u32::from(t)).map_err(|e| ctx("IPV6_TCLASS", e))?;
        } else {
            s.set_tos(u32::from(t)).map_err(|e| ctx("IP_TOS", e))?;
        }
    }
    if tcp {
        if opts.nodelay {
            s.set_nodelay(true).map_err(|e| ctx("TCP_NODELAY", e))?;
        }
        if let Some(m) = opts.mss {
            opt::set_mss(s, m).map_err(|e| ctx("TCP_MAXSEG", e))?;
        }
        if let Some(cc) = &opts.congestion {
            opt::set_congestion(s, cc.as_bytes()).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "congestion control '{cc}' is not available ({e}); see /proc/sys/net/ipv4/tcp_available_congestion_control"
                    ),
                )
            })?;
        }
    }
    Ok(())
}

/// Connects a TCP data or control connection with options set before the handshake.
pub fn connect_tcp(addr: SocketAddr, opts: &SockOpts, timeout: Duration) -> io::Result<TcpStream> {
    let s = connect_tcp_with(addr, opts, timeout, None)?;
    s.set_write_timeout(None)?;
    Ok(s)
}

/// [`connect_tcp`] that leaves `read_timeout` as the socket's read time-out, and the connect
/// time-out as its write time-out (a caller that wants another sets it).
///
/// The connect is a blocking one bounded by SO_SNDTIMEO (Linux gives up with EINPROGRESS
/// when it passes), not a non-blocking connect and a poll: two system calls (the time-outs,
/// set before) where the non-blocking way costs six. (TCP_CRR, which connects once per
/// transaction, sets no time-out at all: [`tcp_socket`] and the `rr::watch` watchdog.)
pub fn connect_tcp_with(
    addr: SocketAddr,
    opts: &SockOpts,
    timeout: Duration,
    read_timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let sock = new_tcp(addr, opts)?;
    // A zero time-out would mean "none" to the kernel; the caller meant "at once".
    let timeout = timeout.max(Duration::from_millis(1));
    sock.set_write_timeout(Some(timeout))?;
    if read_timeout.is_some() {
        sock.set_read_timeout(read_timeout)?;
    }
    if let Err(e) = sock.connect(&addr.into()) {
        return Err(match e.raw_os_error() {
            Some(errno::EINPROGRESS) | Some(errno::EAGAIN) => io::Error::new(
                io::ErrorKind::TimedOut,
                format!("connecting to {addr} timed out after {timeout:?}"),
            ),
            _ => e,
        });
    }
    Ok(sock.into())
}

/// A TCP socket for `addr`'s family with `opts` set, not yet connected, without time-outs.
pub fn tcp_socket(addr: SocketAddr, opts: &SockOpts) -> io::Result<TcpStream> {
    Ok(new_tcp(addr, opts)?.into())
}

/// The socket of [`tcp_socket`] and [`connect_tcp_with`]: `addr`'s family, `opts` set.
fn new_tcp(addr: SocketAddr, opts: &SockOpts) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    apply(&SockRef::from(&sock), opts, true, addr.is_ipv6())?;
    Ok(sock)
}

/// Maps an IPv4-mapped IPv6 address back to IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A UDP socket bound to `local` and connected to `peer`. With `reuse_port` it may share the
/// server's port: Linux delivers a datagram to the connected socket whose 4-tuple matches
/// before any unconnected one, which is how many tests share one documented port.
pub fn udp_socket(
    local: SocketAddr,
    peer: SocketAddr,
    opts: &SockOpts,
    reuse_port: bool,
) -> io::Result<UdpSocket> {
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if reuse_port {
        opt::set_reuse_port(&sock, true)?;
    }
    apply(&SockRef::from(&sock), opts, false, local.is_ipv6())?;
    sock.bind(&local.into())?;
    sock.connect(&peer.into())?;
    Ok(sock.into())
}

/// Size of the name buffer of `TCP_CONGESTION` (`TCP_CA_NAME_MAX` in
/// include/net/tcp.h); the kernel always copies `min(optlen, 16)` bytes, NUL-padded.
pub const TCP_CA_NAME_MAX: usize = 16;

/// The congestion control's name from what `getsockopt(TCP_CONGESTION)` returned into a
/// 16-byte buffer (socket2's `tcp_congestion`): `Err(why)` when it cannot be the kernel's
/// answer: another length than the buffer's (qemu's user mode treats the option as an
/// `int` and returns 4 bytes, "bbr\0" or "cubi", byte-swapped on a big-endian guest:
/// "\0rbb"), or a name that is empty or not of the characters of kernel module names.
pub fn congestion_name(raw: &[u8]) -> Result<String, String> {
    let name = raw.split(|&b| b == 0).next().unwrap_or_default();
    let plausible = raw.len() == TCP_CA_NAME_MAX
        && !name.is_empty()
        && name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-');
    if plausible {
        Ok(String::from_utf8_lossy(name).into_owned())
    } else {
        Err(format!(
            "TCP_CONGESTION gave {} bytes ({:?}) where the kernel gives a NUL-padded name of {TCP_CA_NAME_MAX} (an emulator that does not translate it?): the congestion control is not reported",
            raw.len(),
            String::from_utf8_lossy(raw)
        ))
    }
}

#[cfg(test)]
mod tests {
    /// The kernel's answer, and what qemu's user mode gives instead (found running the
    /// board build under qemu-ppc-static and qemu-aarch64-static).
    #[test]
    fn congestion_names_only_from_the_kernels_answer() {
        let mut raw = [0u8; super::TCP_CA_NAME_MAX];
        raw[..5].copy_from_slice(b"cubic");
        assert_eq!(super::congestion_name(&raw).as_deref(), Ok("cubic"));
        raw[..].copy_from_slice(b"abcdefghijklmnop");
        assert_eq!(
            super::congestion_name(&raw).as_deref(),
            Ok("abcdefghijklmnop")
        );
        // qemu on a big-endian guest: "bbr\0" as an int, byte-swapped.
        let e = super::congestion_name(b"\0rbb").unwrap_err();
        assert!(e.contains("4 bytes") && e.contains("not reported"), "{e}");
        // qemu on a little-endian guest: four bytes of a longer name, or of a short one.
        assert!(super::congestion_name(b"cubi").is_err());
        assert!(super::congestion_name(b"bbr\0").is_err());
        assert!(super::congestion_name(&[0u8; 16]).is_err());
        let mut junk = [0u8; 16];
        junk[..3].copy_from_slice(&[0xff, b'a', 0x01]);
        assert!(super::congestion_name(&junk).is_err());
    }

    use super::*;

    #[test]
    fn canonical_unmaps_v4() {
        let m: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(canonical(m), "127.0.0.1".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }

    #[test]
    fn reuse_port_sockets_are_demultiplexed_by_peer() {
        let base = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = base.local_addr().unwrap().port();
        drop(base);
        let local: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let c1 = UdpSocket::bind("127.0.0.1:0").unwrap();
        let c2 = UdpSocket::bind("127.0.0.1:0").unwrap();
        let s1 = udp_socket(local, c1.local_addr().unwrap(), &SockOpts::default(), true).unwrap();
        let s2 = udp_socket(local, c2.local_addr().unwrap(), &SockOpts::default(), true).unwrap();
        c1.send_to(b"one", local).unwrap();
        c2.send_to(b"two", local).unwrap();
        for s in [&s1, &s2] {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        }
        let mut b = [0u8; 8];
        let n = s1.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"one");
        let n = s2.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"two");
    }
}
