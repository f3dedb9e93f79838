//! The next hop towards a peer and its MAC address, for the raw-frame generator.
//!
//! Read with iproute2's JSON output (`ip -j route get`, `ip -j neigh show`, `ip -j link
//! show`), run as a child so it sees the calling thread's network namespace, as `tc` does in
//! [`super::qdisc`]. The neighbour table is asked first; when the next hop (the route's
//! gateway, or the destination itself when it is on-link) has no usable entry, one empty UDP
//! datagram to its discard port (9) makes the kernel resolve it, and the table is asked again
//! for up to [`RESOLVE_WAIT`]. The parsers are pure and tested on captured output.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::qdisc::{program, run_with_timeout};

/// A 48-bit MAC address.
pub type Mac = [u8; 6];

/// How long to wait for address resolution of the next hop.
pub const RESOLVE_WAIT: Duration = Duration::from_secs(1);
const IP_TIMEOUT: Duration = Duration::from_secs(2);
const IP_FALLBACKS: &[&str] = &["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"];

/// The route to a destination, as `ip -j route get` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteHop {
    /// Outgoing interface.
    pub dev: String,
    /// The gateway, when the destination is not on-link.
    pub gateway: Option<IpAddr>,
}

impl RouteHop {
    /// The address whose MAC the frames go to: the gateway, else the destination.
    pub fn next_hop(&self, dst: IpAddr) -> IpAddr {
        self.gateway.unwrap_or(dst)
    }
}

/// An interface's link-layer facts, from `ip -j link show dev`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// Interface index.
    pub ifindex: u32,
    /// `ether`, `loopback`, `none` (tun), ...
    pub link_type: String,
    /// Its MAC address, if it has one.
    pub address: Option<Mac>,
    /// MTU, bytes.
    pub mtu: Option<u32>,
}

/// Everything the generator needs to put frames on the wire towards one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHop {
    /// Outgoing interface name.
    pub dev: String,
    /// Its index.
    pub ifindex: u32,
    /// Its MAC (the frames' source).
    pub src_mac: Mac,
    /// The next hop's MAC (the frames' destination).
    pub dst_mac: Mac,
    /// The next hop's address (gateway or destination).
    pub via: IpAddr,
    /// The interface's MTU.
    pub mtu: Option<u32>,
}

#[derive(Deserialize)]
struct RouteJson {
    dev: Option<String>,
    gateway: Option<String>,
}

#[derive(Deserialize)]
struct NeighJson {
    dst: Option<String>,
    lladdr: Option<String>,
    #[serde(default)]
    state: Vec<String>,
}

#[derive(Deserialize)]
struct LinkJson {
    ifindex: u32,
    link_type: Option<String>,
    address: Option<String>,
    mtu: Option<u32>,
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<Mac> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Parses `ip -j route get DST`.
pub fn parse_route_get(json: &str) -> Result<RouteHop, String> {
    let v: Vec<RouteJson> = serde_json::from_str(json).map_err(|e| format!("ip route get: {e}"))?;
    let r = v
        .into_iter()
        .next()
        .ok_or_else(|| "ip route get: no route".to_string())?;
    let dev = r
        .dev
        .ok_or_else(|| "ip route get: the route has no device".to_string())?;
    let gateway = match r.gateway {
        Some(g) => Some(
            g.parse()
                .map_err(|_| format!("ip route get: bad gateway '{g}'"))?,
        ),
        None => None,
    };
    Ok(RouteHop { dev, gateway })
}

/// The MAC of `ip` in `ip -j neigh show` output, if the entry is usable (it has an
/// address and is not FAILED or INCOMPLETE; STALE and DELAY entries still hold the right
/// address and are refreshed by the kernel as traffic flows).
pub fn parse_neigh(json: &str, ip: IpAddr) -> Result<Option<Mac>, String> {
    let v: Vec<NeighJson> = serde_json::from_str(json).map_err(|e| format!("ip neigh: {e}"))?;
    Ok(v.into_iter()
        .filter(|n| n.dst.as_deref().and_then(|d| d.parse::<IpAddr>().ok()) == Some(ip))
        .filter(|n| !n.state.iter().any(|s| s == "FAILED" || s == "INCOMPLETE"))
        .find_map(|n| n.lladdr.as_deref().and_then(parse_mac)))
}

/// Parses `ip -j link show dev DEV`.
pub fn parse_link(json: &str) -> Result<LinkInfo, String> {
    let v: Vec<LinkJson> = serde_json::from_str(json).map_err(|e| format!("ip link: {e}"))?;
    let l = v
        .into_iter()
        .next()
        .ok_or_else(|| "ip link: no such interface".to_string())?;
    Ok(LinkInfo {
        ifindex: l.ifindex,
        link_type: l.link_type.unwrap_or_default(),
        address: l.address.as_deref().and_then(parse_mac),
        mtu: l.mtu,
    })
}

fn ip(args: &[&str]) -> Result<String, String> {
    let prog = program("ip", IP_FALLBACKS)
        .ok_or_else(|| "iproute2's `ip` is not installed".to_string())?;
    run_with_timeout(&prog, args, IP_TIMEOUT).ok_or_else(|| ip_failed(&prog, args))
}

/// Why `ip ARGS` gave nothing, in one line: busybox's `ip` (a board's) has no JSON output.
fn ip_failed(prog: &std::path::Path, args: &[&str]) -> String {
    let real = std::fs::canonicalize(prog).unwrap_or_else(|_| prog.to_path_buf());
    if real.file_name().is_some_and(|n| n == "busybox") {
        return format!(
            "`ip {}` failed: {} is busybox's ip, which has no JSON output (-j); install iproute2's ip",
            args.join(" "),
            prog.display()
        );
    }
    format!("`ip {}` failed", args.join(" "))
}

fn family(a: IpAddr) -> &'static str {
    if a.is_ipv4() {
        "-4"
    } else {
        "-6"
    }
}

fn lookup_neigh(via: IpAddr, dev: &str) -> Result<Option<Mac>, String> {
    let out = ip(&[
        "-j",
        family(via),
        "neigh",
        "show",
        "to",
        &via.to_string(),
        "dev",
        dev,
    ])?;
    parse_neigh(&out, via)
}

/// Finds the interface, both MACs and the next hop for frames from `src` to `dst` in the
/// calling thread's namespace, resolving the next hop if the neighbour table lacks it.
pub fn resolve(src: SocketAddr, dst: SocketAddr) -> Result<NextHop, String> {
    let route = parse_route_get(&ip(&[
        "-j",
        family(dst.ip()),
        "route",
        "get",
        &dst.ip().to_string(),
    ])?)?;
    let link = parse_link(&ip(&["-j", "link", "show", "dev", &route.dev])?)?;
    if link.link_type != "ether" {
        return Err(format!(
            "interface {} is not Ethernet (link type {})",
            route.dev,
            if link.link_type.is_empty() {
                "unknown"
            } else {
                &link.link_type
            }
        ));
    }
    let src_mac = link
        .address
        .ok_or_else(|| format!("interface {} has no MAC address", route.dev))?;
    let via = route.next_hop(dst.ip());
    let mut mac = lookup_neigh(via, &route.dev)?;
    if mac.is_none() {
        // Make the kernel resolve it: one empty datagram to the discard port.
        let any: SocketAddr = match src {
            SocketAddr::V4(_) => "0.0.0.0:0".parse().map_err(|_| "address".to_string())?,
            SocketAddr::V6(_) => "[::]:0".parse().map_err(|_| "address".to_string())?,
        };
        if let Ok(s) = UdpSocket::bind(any) {
            let _ = s.send_to(&[], SocketAddr::new(via, 9));
        }
        let until = Instant::now() + RESOLVE_WAIT;
        while mac.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            mac = lookup_neigh(via, &route.dev)?;
        }
    }
    let dst_mac = mac.ok_or_else(|| {
        format!(
            "the next hop {via} on {} did not resolve within {} ms",
            route.dev,
            RESOLVE_WAIT.as_millis()
        )
    })?;
    Ok(NextHop {
        dev: route.dev,
        ifindex: link.ifindex,
        src_mac,
        dst_mac,
        via,
        mtu: link.mtu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from iproute2 6.1.0 on Debian 12 in a `linerate lab` router topology.
    const ROUTE_V4: &str = r#"[{"dst":"10.71.113.2","gateway":"10.71.112.254","dev":"lrefae493bar","prefsrc":"10.71.112.1","flags":[],"uid":0,"cache":[]}]"#;
    const ROUTE_V6: &str = r#"[{"dst":"fd6c:72ae:493b:1::2","from":"::","gateway":"fd6c:72ae:493b::fe","dev":"lrefae493bar","prefsrc":"fd6c:72ae:493b::1","metric":1024,"flags":[],"pref":"medium"}]"#;
    const ROUTE_ONLINK: &str = r#"[{"dst":"10.71.112.254","dev":"lrefae493bar","prefsrc":"10.71.112.1","flags":[],"uid":0,"cache":[]}]"#;
    const NEIGH: &str = r#"[{"dst":"10.71.112.254","dev":"lrefae493bar","lladdr":"5e:7c:8e:60:a7:b5","state":["STALE"]},{"dst":"10.71.112.9","dev":"lrefae493bar","state":["FAILED"]},{"dst":"10.71.112.8","dev":"lrefae493bar","lladdr":"00:00:00:00:00:08","state":["INCOMPLETE"]}]"#;
    const LINK: &str = r#"[{"ifindex":2,"link_index":2,"ifname":"lrefae493bar","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"noqueue","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"b2:f5:2c:cf:eb:3c","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0}]"#;
    const LO: &str = r#"[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00"}]"#;

    #[test]
    fn busybox_ip_is_named_with_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let busybox = dir.path().join("busybox");
        std::fs::write(&busybox, "").unwrap();
        let ip = dir.path().join("ip");
        std::os::unix::fs::symlink(&busybox, &ip).unwrap();
        let m = ip_failed(&ip, &["-j", "link", "show"]);
        assert!(
            m.contains("busybox's ip") && m.contains("install iproute2"),
            "{m}"
        );
        assert!(!m.contains('\n'), "{m}");
        let plain = dir.path().join("ip2");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(
            ip_failed(&plain, &["-j", "link", "show"]),
            "`ip -j link show` failed"
        );
    }

    #[test]
    fn route_gateway_is_the_next_hop() {
        let r = parse_route_get(ROUTE_V4).unwrap();
        assert_eq!(r.dev, "lrefae493bar");
        let dst: IpAddr = "10.71.113.2".parse().unwrap();
        assert_eq!(r.next_hop(dst), "10.71.112.254".parse::<IpAddr>().unwrap());
        let r6 = parse_route_get(ROUTE_V6).unwrap();
        assert_eq!(
            r6.gateway,
            Some("fd6c:72ae:493b::fe".parse::<IpAddr>().unwrap())
        );
        // On-link: the destination itself.
        let on = parse_route_get(ROUTE_ONLINK).unwrap();
        let d: IpAddr = "10.71.112.254".parse().unwrap();
        assert_eq!(on.next_hop(d), d);
        assert!(parse_route_get("[]").is_err());
        assert!(parse_route_get("not json").is_err());
    }

    #[test]
    fn neighbour_entries_without_a_usable_address_are_skipped() {
        let gw: IpAddr = "10.71.112.254".parse().unwrap();
        assert_eq!(
            parse_neigh(NEIGH, gw).unwrap(),
            Some([0x5e, 0x7c, 0x8e, 0x60, 0xa7, 0xb5])
        );
        for failed in ["10.71.112.9", "10.71.112.8", "10.71.112.7"] {
            assert_eq!(parse_neigh(NEIGH, failed.parse().unwrap()).unwrap(), None);
        }
        assert_eq!(parse_neigh("[]", gw).unwrap(), None);
    }

    #[test]
    fn link_type_and_address() {
        let l = parse_link(LINK).unwrap();
        assert_eq!(l.ifindex, 2);
        assert_eq!(l.link_type, "ether");
        assert_eq!(l.address, Some([0xb2, 0xf5, 0x2c, 0xcf, 0xeb, 0x3c]));
        assert_eq!(l.mtu, Some(1500));
        assert_eq!(parse_link(LO).unwrap().link_type, "loopback");
    }

    #[test]
    fn macs() {
        assert_eq!(parse_mac("0a:1B:ff:00:00:01"), Some([10, 27, 255, 0, 0, 1]));
        assert_eq!(parse_mac("0a:1b:ff:00:00"), None);
        assert_eq!(parse_mac("0a:1b:ff:00:00:01:02"), None);
        assert_eq!(parse_mac("zz:1b:ff:00:00:01"), None);
    }
}
