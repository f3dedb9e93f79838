//! Which interface carries traffic to a peer, and what sysfs says about an interface.
//!
//! **Route to a peer** ([`route_interface`]): a UDP socket is connected to the peer —
//! `connect` on UDP only chooses a route and a source address, no packet is sent — and the
//! source address is looked up among the interfaces' addresses (`getifaddrs`). A peer that
//! is one of this host's own addresses is reached over loopback, so the answer is then
//! `lo` whatever interface holds the address. Both run in the calling thread's network
//! namespace.
//!
//! **sysfs and network namespaces.** `/sys/class/net` shows the namespace sysfs was mounted
//! in (`ip netns exec` remounts it), not the calling thread's. [`sysfs_net_dir`] therefore
//! trusts `/sys/class/net/IF` only when its `ifindex` equals the index the thread's own
//! namespace gives the name; otherwise callers fall back to namespace-correct sources
//! (`/proc/thread-self/net`, ioctls). Two namespaces holding the same name at the same
//! index (loopback is 1 everywhere) cannot be told apart this way, which is why interface
//! statistics of loopback come from `/proc/net/dev` regardless (see `hostsnap`).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use super::net;

/// Where network interfaces appear in sysfs.
pub const SYS_CLASS_NET: &str = "/sys/class/net";

/// The kernel's limit of an interface name, its NUL included (`IFNAMSIZ`).
const IFNAMSIZ: usize = 16;

/// Checks an interface name as the kernel's `dev_valid_name` does: 1 to 15 bytes, not "."
/// or "..", no '/', ':', NUL or whitespace. Names are used in paths and ioctls only after
/// this check.
pub fn validate_ifname(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() < IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not an interface name (1 to 15 characters, no '/', ':' or spaces)"
        ))
    }
}

/// The interface holding `local` among `addrs` (name, address), or `lo` when `peer` is
/// itself one of the addresses (traffic to one's own address goes over loopback).
/// IPv4-mapped IPv6 addresses compare as IPv4.
pub fn interface_for(addrs: &[(String, IpAddr)], local: IpAddr, peer: IpAddr) -> Option<String> {
    let (local, peer) = (local.to_canonical(), peer.to_canonical());
    if peer.is_loopback() || addrs.iter().any(|(_, a)| a.to_canonical() == peer) {
        return Some("lo".to_string());
    }
    addrs
        .iter()
        .find(|(_, a)| a.to_canonical() == local)
        .map(|(n, _)| n.clone())
}

/// The interface that carries traffic from this host to `peer` (see the module docs).
pub fn route_interface(peer: IpAddr) -> io::Result<String> {
    let bind = match peer {
        IpAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        IpAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
    };
    let sock = UdpSocket::bind(bind)?;
    // Port 9 (discard); connect on UDP sends nothing, it only picks the route.
    sock.connect(SocketAddr::new(peer, 9))
        .map_err(|e| io::Error::new(e.kind(), format!("no route to {peer}: {e}")))?;
    let local = sock.local_addr()?.ip();
    let addrs = net::interface_addresses()?;
    interface_for(&addrs, local, peer).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface holds {local}, the source address towards {peer}"),
        )
    })
}

/// `/sys/class/net/NAME` if it shows the interface of the calling thread's network
/// namespace (same ifindex), else `None`.
pub fn sysfs_net_dir(name: &str) -> Option<PathBuf> {
    validate_ifname(name).ok()?;
    let index = if_index(name).ok()?;
    let dir = Path::new(SYS_CLASS_NET).join(name);
    let text = std::fs::read_to_string(dir.join("ifindex")).ok()?;
    (text.trim().parse::<u32>().ok()? == index).then_some(dir)
}

/// The index of interface `name` in this thread's network namespace; the error says why
/// there is none.
pub fn if_index(name: &str) -> Result<u32, String> {
    net::if_index(name)
}

/// The virtio device behind an interface ("virtio2"): the last component of the
/// `device` link of its sysfs directory, when it starts with `virtio`.
pub fn virtio_device(sysfs_dir: &Path) -> Option<String> {
    let target = std::fs::read_link(sysfs_dir.join("device")).ok()?;
    let last = target.file_name()?.to_str()?;
    (last.starts_with("virtio") && last.len() > 6).then(|| last.to_string())
}

/// Counts `rx-N` and `tx-N` names among the entries of a sysfs `queues` directory.
pub fn count_queues<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> (u32, u32) {
    let mut rx = 0u32;
    let mut tx = 0u32;
    for e in entries {
        let e = e.as_ref();
        let numbered = |p: &str| {
            e.strip_prefix(p)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        if numbered("rx-") {
            rx += 1;
        } else if numbered("tx-") {
            tx += 1;
        }
    }
    (rx, tx)
}

/// (rx, tx) queue counts from `DIR/queues`.
pub fn read_sysfs_queues(sysfs_dir: &Path) -> io::Result<(u32, u32)> {
    let dir = sysfs_dir.join("queues");
    let names = std::fs::read_dir(&dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    Ok(count_queues(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifname_rules() {
        for ok in ["lo", "eth0", "enp3s0f1np1", "veth-a.100", "x23456789012345"] {
            assert!(validate_ifname(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "eth0:1",
            "a b",
            "x234567890123456",
            "a\0",
        ] {
            assert!(validate_ifname(bad).is_err(), "{bad:?}");
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn picks_interface_by_source_address() {
        let addrs = vec![
            ("lo".to_string(), ip("127.0.0.1")),
            ("eth0".to_string(), ip("10.0.0.5")),
            ("eth1".to_string(), ip("192.168.7.2")),
            ("eth1".to_string(), ip("fd00::2")),
        ];
        let pick = |local: &str, peer: &str| interface_for(&addrs, ip(local), ip(peer));
        assert_eq!(pick("192.168.7.2", "192.168.7.9").as_deref(), Some("eth1"));
        assert_eq!(pick("fd00::2", "fd00::9").as_deref(), Some("eth1"));
        assert_eq!(pick("10.0.0.5", "8.8.8.8").as_deref(), Some("eth0"));
        // A peer that is our own address, or loopback, is reached over lo.
        assert_eq!(pick("10.0.0.5", "10.0.0.5").as_deref(), Some("lo"));
        assert_eq!(pick("127.0.0.1", "127.0.0.2").as_deref(), Some("lo"));
        assert_eq!(pick("::1", "::1").as_deref(), Some("lo"));
        // IPv4-mapped source and peer.
        assert_eq!(
            pick("::ffff:10.0.0.5", "::ffff:10.0.0.77").as_deref(),
            Some("eth0")
        );
        assert_eq!(pick("10.9.9.9", "10.9.9.1"), None);
    }

    #[test]
    fn loopback_routes_to_lo() {
        assert_eq!(route_interface(ip("127.0.0.1")).unwrap(), "lo");
        assert_eq!(route_interface(ip("::1")).unwrap(), "lo");
    }

    #[test]
    fn queue_names() {
        assert_eq!(
            count_queues(["rx-0", "tx-0", "tx-1", "tx-x", "rx-", "foo"]),
            (1, 2)
        );
        assert_eq!(count_queues(Vec::<String>::new()), (0, 0));
    }

    #[test]
    fn sysfs_of_this_namespace() {
        let lo = sysfs_net_dir("lo").unwrap();
        assert_eq!(lo, PathBuf::from("/sys/class/net/lo"));
        assert_eq!(read_sysfs_queues(&lo).unwrap(), (1, 1));
        assert_eq!(virtio_device(&lo), None);
        assert_eq!(sysfs_net_dir("nosuch0"), None);
        assert_eq!(sysfs_net_dir("../lo"), None);
    }
}
