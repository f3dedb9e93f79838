//! Multicast sockets: a receiver joined to a group (any source, or one source: SSM) on the
//! interface that holds a given local address, and a sender's TTL / hop limit and
//! outgoing interface. Portable: socket2's options and the backend's interface list.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::net;

/// A receiving socket joined to a group, and the interface it joined on.
pub struct Joined {
    /// The socket, bound to the group's port, with a short read time-out.
    pub socket: UdpSocket,
    /// The interface's name, when one holds the local address.
    pub interface: Option<String>,
}

/// How long a receiver's read waits before it looks at its stop flag.
pub const READ_TICK: Duration = Duration::from_millis(50);

/// The interface holding `local` (name and index), if any.
fn interface_of(local: IpAddr) -> Option<(String, u32)> {
    let local = local.to_canonical();
    let addrs = net::interface_addresses().ok()?;
    let name = addrs
        .iter()
        .find(|(_, a)| a.to_canonical() == local)
        .map(|(n, _)| n.clone())?;
    let index = net::if_index(&name).ok()?;
    Some((name, index))
}

/// Joins `group` on the interface that holds `local` (the address this host's control
/// connection arrived on), receiving datagrams sent to `port`; with `source`, only those of
/// that source (SSM). The error says what the kernel refused.
pub fn join(group: IpAddr, port: u16, source: Option<IpAddr>, local: IpAddr) -> io::Result<Joined> {
    let local = local.to_canonical();
    let iface = interface_of(local);
    let domain = if group.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    // A bigger queue than the default, so a burst is not lost in this socket (the kernel
    // caps it at net.core.rmem_max).
    let _ = s.set_recv_buffer_size(4 << 20);
    // Bound to the group itself where the kernel allows it (Linux), so that only the
    // group's datagrams to this port arrive here.
    let bind_ip = if cfg!(target_os = "linux") {
        group
    } else if group.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    };
    if group.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&SockAddr::from(SocketAddr::new(bind_ip, port)))?;
    match (group, source, local) {
        (IpAddr::V4(g), None, IpAddr::V4(l)) => s.join_multicast_v4(&g, &l),
        (IpAddr::V4(g), Some(IpAddr::V4(src)), IpAddr::V4(l)) => s.join_ssm_v4(&src, &g, &l),
        (IpAddr::V6(g), None, _) => {
            let index = iface.as_ref().map_or(0, |(_, i)| *i);
            s.join_multicast_v6(&g, index)
        }
        (IpAddr::V6(_), Some(_), _) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "source-specific multicast over IPv6 is not supported by this linerate yet: leave out the source",
        )),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the group {group} and this server's address {local} are not of the same IP version: reach the receiver over the group's IP version"),
        )),
    }?;
    s.set_read_timeout(Some(READ_TICK))?;
    Ok(Joined {
        socket: s.into(),
        interface: iface.map(|(n, _)| n),
    })
}

/// A socket that sends to `group`: TTL (IPv4) or hop limit (IPv6) `ttl`, out of the
/// interface named `iface` when given (else the route's), looping back to this host's own
/// receivers (as iperf2 does).
pub fn sender(group: IpAddr, ttl: u32, iface: Option<&str>) -> io::Result<UdpSocket> {
    let domain = if group.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_send_buffer_size(4 << 20);
    let index = match iface {
        Some(name) => Some(net::if_index(name).map_err(|e| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {name:?} here ({e}): give one that `ip link` lists"),
            )
        })?),
        None => None,
    };
    match group {
        IpAddr::V4(_) => {
            s.set_multicast_ttl_v4(ttl)?;
            s.set_multicast_loop_v4(true)?;
            if let Some(name) = iface {
                s.set_multicast_if_v4(&ipv4_of(name)?)?;
            }
            s.bind(&SockAddr::from(SocketAddr::from((
                Ipv4Addr::UNSPECIFIED,
                0,
            ))))?;
        }
        IpAddr::V6(_) => {
            s.set_multicast_hops_v6(ttl)?;
            s.set_multicast_loop_v6(true)?;
            if let Some(i) = index {
                s.set_multicast_if_v6(i)?;
            }
            s.bind(&SockAddr::from(SocketAddr::from((
                Ipv6Addr::UNSPECIFIED,
                0,
            ))))?;
        }
    }
    Ok(s.into())
}

/// The first IPv4 address of interface `name` (IP_MULTICAST_IF takes an address).
fn ipv4_of(name: &str) -> io::Result<Ipv4Addr> {
    net::interface_addresses()?
        .into_iter()
        .find_map(|(n, a)| match a {
            IpAddr::V4(v4) if n == name => Some(v4),
            _ => None,
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("interface {name:?} has no IPv4 address to send an IPv4 group from"),
            )
        })
}
