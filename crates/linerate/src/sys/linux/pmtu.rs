//! The kernel's path-MTU estimate toward a peer, IPv4 or IPv6, without probing.
//!
//! A UDP socket is connected to the peer (`connect` on UDP only picks a route; nothing is
//! sent) and asked for the MTU of the route it got: `IP_MTU` for IPv4 (through nix) and
//! `IPV6_MTU` for IPv6. That is the route's MTU unless an ICMP "fragmentation needed" /
//! "packet too big" has lowered it for that destination. nix 0.29 has no `IPV6_MTU`
//! option, so its `getsockopt` is the one unsafe call here.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// The path-MTU estimate toward `peer` (an IPv4-mapped IPv6 address counts as IPv4).
/// Errors: no IPv6 on this host (binding `[::]` fails), no route to `peer`, or the
/// `getsockopt` error.
pub fn path_mtu(peer: IpAddr) -> io::Result<u32> {
    let (bind, peer) = match peer.to_canonical() {
        IpAddr::V4(v4) => (SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), IpAddr::V4(v4)),
        IpAddr::V6(v6) => (SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)), IpAddr::V6(v6)),
    };
    let sock = UdpSocket::bind(bind)
        .map_err(|e| io::Error::new(e.kind(), format!("UDP socket on {bind}: {e}")))?;
    // Port 9 (discard); connect on UDP sends nothing, it only picks the route.
    sock.connect(SocketAddr::new(peer, 9))
        .map_err(|e| io::Error::new(e.kind(), format!("no route to {peer}: {e}")))?;
    let mtu = match peer {
        IpAddr::V4(_) => nix::sys::socket::getsockopt(&sock, nix::sys::socket::sockopt::IpMtu)
            .map_err(io::Error::from)?,
        IpAddr::V6(_) => ipv6_mtu(sock.as_fd())?,
    };
    u32::try_from(mtu).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the kernel gave a path MTU of {mtu}"),
        )
    })
}

/// `getsockopt(IPPROTO_IPV6, IPV6_MTU)` on a connected IPv6 socket.
fn ipv6_mtu(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is an open socket for the lifetime of the borrow; `val` is a live,
    // writable c_int and `len` holds its size, so the kernel writes at most that many bytes
    // into it and stores the length written in `len`. No reference to `val` is alive
    // during the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU,
            std::ptr::addr_of_mut!(val).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if usize::try_from(len).ok() != Some(std::mem::size_of::<libc::c_int>()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("IPV6_MTU: the kernel wrote {len} bytes, not an int"),
        ));
    }
    Ok(val)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback's MTU as this namespace's sysfs reports it.
    fn lo_mtu() -> u32 {
        std::fs::read_to_string("/sys/class/net/lo/mtu")
            .expect("/sys/class/net/lo/mtu")
            .trim()
            .parse()
            .expect("an MTU")
    }

    #[test]
    fn ipv6_loopback_path_mtu_is_lo_mtu() {
        let mtu = path_mtu("::1".parse().unwrap()).unwrap_or_else(|e| {
            panic!(
                "IPV6_MTU toward ::1 failed ({e}): this test needs IPv6 on loopback; \
                 is it disabled (sysctl net.ipv6.conf.lo.disable_ipv6)?"
            )
        });
        // IPv6 routes carry lo's full MTU (65536); IPv4 caps a route's at 65535.
        assert_eq!(mtu, lo_mtu());
    }

    #[test]
    fn ipv4_and_mapped_loopback() {
        let want = lo_mtu().min(65_535);
        assert_eq!(path_mtu("127.0.0.1".parse().unwrap()).unwrap(), want);
        assert_eq!(path_mtu("::ffff:127.0.0.1".parse().unwrap()).unwrap(), want);
    }
}
