//! Lab topologies, planned (pure): what a lab of a name and a topology consists of. Building
//! and tearing it down is [`crate::lab`].
//!
//! Invariants:
//! * [`plan`] is pure: the namespace names, interface names and addresses of
//!   a lab depend only on its name and topology. Namespaces are
//!   `lr-NAME-HOST`; veth names are `lr` + 8 hex digits of the name's hash
//!   ([`name_hash`]: FNV-1a and murmur3's finalizer) + the letters of the two
//!   hosts they join (`lr1a2b3c4dab` is the end in `a` facing `b`), 12
//!   characters, within the 15-character limit.
//! * IPv4: link `i` of a lab uses `198.19.(Y+i).0/24` with even `Y` from the hash:
//!   198.18.0.0/15 is the range RFC 2544 (and RFC 6815) sets aside for benchmark
//!   tests, never routed on the Internet; its lower half, 198.18.0.0/16, is left to
//!   tests that build their own networks beside a lab; host `a` is `.1`, host `b` is `.2` and
//!   the router `r` is `.254` on both of its links. IPv6 mirrors it in the ULA
//!   prefix `fd6c:72HH:HHHH:i::/64` (`::1`, `::2`, `::fe`), added `nodad` so it
//!   is usable at once.
//! * Veths are created directly inside their namespaces, never in the root
//!   namespace, so interface names of different labs cannot clash and the
//!   host's own interfaces are never touched.
//! * The *path* interface of a host is the one test traffic from `a` to `b`
//!   leaves or enters it through: `a`'s and `b`'s only interface, and for `r`
//!   the interface facing `b`. Shaping from [`LabOptions`] goes on the egress
//!   of the link towards `b` (`a`'s veth in a pair, `r`'s `b`-facing veth in a
//!   router); loss from [`LabOptions`] drops packets going towards `b`
//!   (arriving at `b` in a pair, forwarded by `r` towards `b` in a router).
//! * Each namespace's `lo` carries an alias that is unique to the
//!   [`crate::Lab`] value that created it ([`parse_ifalias`] reads it back).

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::error::{LabError, Result};
use crate::shape::{self, Shaping};

/// Prefix of every lab namespace name.
pub const NS_PREFIX: &str = "lr-";
/// Longest lab name.
pub const MAX_NAME_LEN: usize = 12;
/// Smallest MTU accepted (IPv6 needs 1280).
pub const MIN_MTU: u32 = 1280;
/// Largest MTU accepted.
pub const MAX_MTU: u32 = 65535;

/// Host names, in topology order.
const HOST_ORDER: [&str; 3] = ["a", "r", "b"];

/// The shape of a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// `a` — `b` on one link.
    Pair,
    /// `a` — `r` — `b`, `r` forwarding, `a` and `b` routing via `r`.
    Router,
}

/// Which directions [`LabOptions::rate_limit`] shapes: a shaper is a qdisc on an egress,
/// so each direction has its own (towards `b`: `a`'s veth in a pair, `r`'s `b`-facing veth
/// in a router; towards `a`: `b`'s veth in a pair, `r`'s `a`-facing veth in a router).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShapedWays {
    /// Only traffic towards `b` (the default of the library, as before).
    #[default]
    TowardB,
    /// Only traffic towards `a`.
    TowardA,
    /// Both directions, each at the rate.
    Both,
}

impl ShapedWays {
    /// Whether traffic towards `b` is shaped.
    pub fn toward_b(self) -> bool {
        matches!(self, ShapedWays::TowardB | ShapedWays::Both)
    }

    /// Whether traffic towards `a` is shaped.
    pub fn toward_a(self) -> bool {
        matches!(self, ShapedWays::TowardA | ShapedWays::Both)
    }
}

/// Impairments and settings applied when a lab is created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabOptions {
    /// MTU of every veth (default: the kernel's, 1500); `1280..=65535`.
    pub mtu: Option<u32>,
    /// Rate limit on the egress of the link towards `b` (and/or `a`: [`Self::rate_ways`]).
    pub rate_limit: Option<Shaping>,
    /// Which directions `rate_limit` shapes.
    pub rate_ways: ShapedWays,
    /// Fraction (`0..=1`) of packets towards `b` dropped by nftables.
    pub loss: Option<f64>,
}

impl LabOptions {
    /// Checks all values are in range.
    pub fn validate(&self) -> Result<()> {
        if let Some(mtu) = self.mtu {
            if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
                return Err(LabError::InvalidOption(format!(
                    "mtu must be within {MIN_MTU}..={MAX_MTU}, got {mtu}"
                )));
            }
        }
        if let Some(s) = &self.rate_limit {
            s.validate()?;
        }
        if let Some(loss) = self.loss {
            shape::validate_loss(loss)?;
        }
        Ok(())
    }
}

/// One interface of a lab host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Interface name inside the host's namespace.
    pub name: String,
    /// The host at the other end of the veth.
    pub peer: String,
    /// IPv4 address (prefix length 24).
    pub addr: Ipv4Addr,
    /// IPv6 ULA address (prefix length 64).
    pub addr6: Ipv6Addr,
}

/// IPv4 prefix length of every lab link.
pub const PREFIX_LEN_V4: u8 = 24;
/// IPv6 prefix length of every lab link.
pub const PREFIX_LEN_V6: u8 = 64;

/// One host of a planned lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// `a`, `b` or `r`.
    pub name: String,
    /// Namespace name, `lr-LAB-HOST`.
    pub ns: String,
    /// Interfaces, in link order.
    pub ifaces: Vec<Interface>,
    /// Index into `ifaces` of the path interface.
    pub path_iface: usize,
    /// Whether the host forwards (the router).
    pub forwarding: bool,
    /// Default gateways (v4, v6), for hosts behind a router.
    pub gateway: Option<(Ipv4Addr, Ipv6Addr)>,
}

/// A veth pair of a planned lab: (host index, interface index) of each end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkPlan {
    /// First end.
    pub left: (usize, usize),
    /// Second end.
    pub right: (usize, usize),
}

/// Everything about a lab that follows from its name and topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Lab name.
    pub name: String,
    /// Topology.
    pub topology: Topology,
    /// Hosts in topology order (`a`, then `r` if any, then `b`).
    pub hosts: Vec<HostPlan>,
    /// Veth pairs in creation order.
    pub links: Vec<LinkPlan>,
    /// (host index, interface index) whose egress gets [`LabOptions::rate_limit`].
    pub shaped: (usize, usize),
    /// (host index, interface index) whose egress carries traffic towards `a`: where
    /// [`ShapedWays::TowardA`] puts the shaper.
    pub shaped_back: (usize, usize),
    /// Host index whose namespace gets [`LabOptions::loss`].
    pub lossy: usize,
}

/// Checks a lab name: 1..=12 characters from `[a-z0-9-]`.
pub fn validate_name(name: &str) -> Result<()> {
    let bad_char = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'));
    let reason = if name.is_empty() {
        Some("must not be empty".to_string())
    } else if let Some(c) = bad_char {
        Some(format!("character {c:?} is not one of [a-z0-9-]"))
    } else if name.len() > MAX_NAME_LEN {
        Some(format!("must be at most {MAX_NAME_LEN} characters"))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(LabError::InvalidName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// 64-bit FNV-1a.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// MurmurHash3's 64-bit finalizer: spreads every input bit over all output
/// bits (FNV-1a alone mixes the last byte poorly into bits 32..40).
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// Hash of a lab name that addresses and interface names derive from:
/// FNV-1a followed by the murmur3 finalizer, stable across Rust versions
/// and platforms.
pub fn name_hash(name: &str) -> u64 {
    fmix64(fnv1a64(name.as_bytes()))
}

/// The two IPv4 /24 networks of lab `name` (link 0 and link 1), as their
/// `.0` addresses.
pub fn subnets_v4(name: &str) -> [Ipv4Addr; 2] {
    let h = name_hash(name);
    let y = (((h >> 38) & 0x7f) as u8) * 2;
    [
        Ipv4Addr::new(198, 19, y, 0),
        Ipv4Addr::new(198, 19, y + 1, 0),
    ]
}

/// The two IPv6 /64 networks of lab `name` (link 0 and link 1), as their
/// `::` addresses.
pub fn subnets_v6(name: &str) -> [Ipv6Addr; 2] {
    let h = name_hash(name);
    let seg1 = 0x7200 | ((h >> 16) & 0xff) as u16;
    let seg2 = (h & 0xffff) as u16;
    [0u16, 1].map(|link| Ipv6Addr::new(0xfd6c, seg1, seg2, link, 0, 0, 0, 0))
}

/// Namespace name of `host` in lab `name`.
pub fn ns_name_for(name: &str, host: &str) -> String {
    format!("{NS_PREFIX}{name}-{host}")
}

/// Splits a namespace name `lr-NAME-HOST` into (NAME, HOST) if it is one of
/// a lab's (valid NAME, HOST one of `a`, `b`, `r`).
pub fn parse_ns_name(ns: &str) -> Option<(&str, &str)> {
    let rest = ns.strip_prefix(NS_PREFIX)?;
    let (name, host) = rest.rsplit_once('-')?;
    if validate_name(name).is_err() || !HOST_ORDER.contains(&host) {
        return None;
    }
    Some((name, host))
}

/// Veth name for the end in `host` facing `peer`.
fn veth_name(name: &str, host: &str, peer: &str) -> String {
    format!("lr{:08x}{host}{peer}", name_hash(name) as u32)
}

fn host_addr(host: &str, net: Ipv4Addr, net6: Ipv6Addr) -> (Ipv4Addr, Ipv6Addr) {
    let last = match host {
        "a" => 1,
        "b" => 2,
        _ => 254,
    };
    let o = net.octets();
    let mut s = net6.segments();
    s[7] = u16::from(last);
    (Ipv4Addr::new(o[0], o[1], o[2], last), Ipv6Addr::from(s))
}

/// Plans lab `name` of `topology` (pure; validates the name).
pub fn plan(name: &str, topology: Topology) -> Result<Plan> {
    validate_name(name)?;
    let nets = subnets_v4(name);
    let nets6 = subnets_v6(name);
    let host_names: &[&str] = match topology {
        Topology::Pair => &["a", "b"],
        Topology::Router => &["a", "r", "b"],
    };
    let mut hosts: Vec<HostPlan> = host_names
        .iter()
        .map(|h| HostPlan {
            name: h.to_string(),
            ns: ns_name_for(name, h),
            ifaces: Vec::new(),
            path_iface: 0,
            forwarding: *h == "r",
            gateway: None,
        })
        .collect();
    let mut links = Vec::new();
    for (link, pair) in host_names.windows(2).enumerate() {
        let (li, ri) = (link, link + 1);
        for (idx, (host, peer)) in [(li, (pair[0], pair[1])), (ri, (pair[1], pair[0]))] {
            let (addr, addr6) = host_addr(host, nets[link], nets6[link]);
            hosts[idx].ifaces.push(Interface {
                name: veth_name(name, host, peer),
                peer: peer.to_string(),
                addr,
                addr6,
            });
        }
        links.push(LinkPlan {
            left: (li, hosts[li].ifaces.len() - 1),
            right: (ri, hosts[ri].ifaces.len() - 1),
        });
    }
    let b = hosts.len() - 1;
    if topology == Topology::Router {
        // r's path interface faces b; a and b route via r.
        hosts[1].path_iface = 1;
        let gw_a = (hosts[1].ifaces[0].addr, hosts[1].ifaces[0].addr6);
        let gw_b = (hosts[1].ifaces[1].addr, hosts[1].ifaces[1].addr6);
        hosts[0].gateway = Some(gw_a);
        hosts[b].gateway = Some(gw_b);
    }
    let (shaped, shaped_back, lossy) = match topology {
        Topology::Pair => ((0, 0), (b, 0), b),
        Topology::Router => ((1, 1), (1, 0), 1),
    };
    Ok(Plan {
        name: name.to_string(),
        topology,
        hosts,
        links,
        shaped,
        shaped_back,
        lossy,
    })
}

/// A lab found on the machine by [`crate::Lab::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabInfo {
    /// Lab name.
    pub name: String,
    /// Hosts whose namespaces exist, in topology order.
    pub hosts: Vec<String>,
}

/// Groups namespace names into labs (pure; ignores non-lab namespaces).
pub fn group_labs<S: AsRef<str>>(namespaces: &[S]) -> Vec<LabInfo> {
    let mut labs: Vec<LabInfo> = Vec::new();
    for ns in namespaces {
        let Some((name, host)) = parse_ns_name(ns.as_ref()) else {
            continue;
        };
        match labs.iter_mut().find(|l| l.name == name) {
            Some(lab) => lab.hosts.push(host.to_string()),
            None => labs.push(LabInfo {
                name: name.to_string(),
                hosts: vec![host.to_string()],
            }),
        }
    }
    for lab in &mut labs {
        lab.hosts
            .sort_by_key(|h| HOST_ORDER.iter().position(|o| o == h));
    }
    labs.sort_by(|x, y| x.name.cmp(&y.name));
    labs
}

/// Extracts `ifalias` from `ip -j link show dev lo` output.
pub fn parse_ifalias(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    value
        .as_array()?
        .first()?
        .get("ifalias")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "x1", "my-lab", "abcdefghijkl", "0-0"] {
            validate_name(ok).unwrap();
        }
        for bad in ["", "ABC", "a_b", "a.b", "abcdefghijklm", "é", "a b", "a/b"] {
            let err = validate_name(bad).unwrap_err();
            assert!(matches!(err, LabError::InvalidName { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn hash_is_stable() {
        // FNV-1a reference vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        // Pinned: changing these renumbers every lab.
        assert_eq!(fmix64(0), 0);
        assert_eq!(name_hash("demo"), fmix64(fnv1a64(b"demo")));
        assert_eq!(format!("{:016x}", name_hash("a")), "82a2a958a9bece5b");
    }

    #[test]
    fn subnets_are_deterministic_private_and_adjacent() {
        let s = subnets_v4("demo");
        assert_eq!(s, subnets_v4("demo"));
        let o0 = s[0].octets();
        let o1 = s[1].octets();
        assert_eq!((o0[0], o0[1]), (198, 19));
        assert_eq!(o0[2] % 2, 0);
        assert_eq!((o1[1], o1[2]), (o0[1], o0[2] + 1));
        assert_eq!(o0[3], 0);
        let s6 = subnets_v6("demo");
        assert_eq!(s6[0].segments()[0], 0xfd6c);
        assert_eq!(s6[0].segments()[3], 0);
        assert_eq!(s6[1].segments()[3], 1);
        assert_eq!(s6[0].segments()[..3], s6[1].segments()[..3]);
    }

    #[test]
    fn different_names_mostly_get_different_subnets() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..50 {
            seen.insert(subnets_v4(&format!("t{i}"))[0]);
        }
        // 128 slots: 50 names share some (about 9 collisions expected); labs that share
        // a subnet are still apart, each in its own namespaces.
        assert!(seen.len() >= 35, "only {} distinct subnets", seen.len());
    }

    #[test]
    fn pair_plan() {
        let p = plan("demo", Topology::Pair).unwrap();
        let net = subnets_v4("demo")[0].octets();
        let hosts: Vec<_> = p.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(hosts, ["a", "b"]);
        assert_eq!(p.hosts[0].ns, "lr-demo-a");
        assert_eq!(p.hosts[1].ns, "lr-demo-b");
        let a = &p.hosts[0].ifaces[0];
        let b = &p.hosts[1].ifaces[0];
        assert_eq!(a.addr, Ipv4Addr::new(198, 19, net[2], 1));
        assert_eq!(b.addr, Ipv4Addr::new(198, 19, net[2], 2));
        assert_eq!(a.addr6.segments()[7], 1);
        assert_eq!(b.addr6.segments()[7], 2);
        let h = name_hash("demo") as u32;
        assert_eq!(a.name, format!("lr{h:08x}ab"));
        assert_eq!(b.name, format!("lr{h:08x}ba"));
        assert!(a.name.len() <= 15);
        assert_eq!(a.peer, "b");
        assert_eq!(
            p.links,
            vec![LinkPlan {
                left: (0, 0),
                right: (1, 0)
            }]
        );
        assert_eq!(p.shaped, (0, 0));
        // Towards a: b's veth.
        assert_eq!(p.shaped_back, (1, 0));
        assert_eq!(p.hosts[1].ifaces[0].peer, "a");
        assert_eq!(p.lossy, 1);
        assert!(p.hosts.iter().all(|h| h.gateway.is_none() && !h.forwarding));
    }

    #[test]
    fn router_plan() {
        let p = plan("edge-1", Topology::Router).unwrap();
        let [n0, n1] = subnets_v4("edge-1").map(|n| n.octets());
        let hosts: Vec<_> = p.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(hosts, ["a", "r", "b"]);
        let (a, r, b) = (&p.hosts[0], &p.hosts[1], &p.hosts[2]);
        assert!(r.forwarding && !a.forwarding && !b.forwarding);
        assert_eq!(a.ifaces[0].addr, Ipv4Addr::new(198, 19, n0[2], 1));
        assert_eq!(r.ifaces[0].addr, Ipv4Addr::new(198, 19, n0[2], 254));
        assert_eq!(r.ifaces[1].addr, Ipv4Addr::new(198, 19, n1[2], 254));
        assert_eq!(b.ifaces[0].addr, Ipv4Addr::new(198, 19, n1[2], 2));
        assert_eq!(r.ifaces[0].peer, "a");
        assert_eq!(r.ifaces[1].peer, "b");
        assert_eq!(r.path_iface, 1);
        assert_eq!(a.gateway.map(|g| g.0), Some(r.ifaces[0].addr));
        assert_eq!(b.gateway.map(|g| g.0), Some(r.ifaces[1].addr));
        assert_eq!(b.gateway.map(|g| g.1), Some(r.ifaces[1].addr6));
        assert_eq!(r.ifaces[1].addr6.segments()[7], 0xfe);
        assert_eq!(p.shaped, (1, 1));
        // Towards a: r's a-facing veth.
        assert_eq!(p.shaped_back, (1, 0));
        assert_eq!(p.hosts[1].ifaces[0].peer, "a");
        assert_eq!(p.lossy, 1);
        let names: std::collections::HashSet<_> = p
            .hosts
            .iter()
            .flat_map(|h| h.ifaces.iter().map(|i| i.name.clone()))
            .collect();
        assert_eq!(names.len(), 4);
        assert!(names.iter().all(|n| n.len() <= 15));
        assert_eq!(p.links.len(), 2);
    }

    #[test]
    fn plan_rejects_bad_names() {
        assert!(plan("Bad", Topology::Pair).is_err());
    }

    #[test]
    fn ns_names_round_trip() {
        assert_eq!(ns_name_for("my-lab", "r"), "lr-my-lab-r");
        assert_eq!(parse_ns_name("lr-my-lab-r"), Some(("my-lab", "r")));
        assert_eq!(parse_ns_name("lr-x-a"), Some(("x", "a")));
        assert_eq!(parse_ns_name("lr-x-c"), None);
        assert_eq!(parse_ns_name("lr-a"), None);
        assert_eq!(parse_ns_name("other-x-a"), None);
        assert_eq!(parse_ns_name("lr--a"), None);
        assert_eq!(parse_ns_name("lr-abcdefghijklm-a"), None);
    }

    #[test]
    fn groups_labs() {
        let ns = [
            "lr-two-b", "docker-1", "lr-one-b", "lr-two-r", "lr-one-a", "lr-two-a", "lr-bad-z",
        ];
        assert_eq!(
            group_labs(&ns),
            vec![
                LabInfo {
                    name: "one".into(),
                    hosts: vec!["a".into(), "b".into()]
                },
                LabInfo {
                    name: "two".into(),
                    hosts: vec!["a".into(), "r".into(), "b".into()]
                },
            ]
        );
        assert!(group_labs::<&str>(&[]).is_empty());
    }

    #[test]
    fn option_validation() {
        assert!(LabOptions::default().validate().is_ok());
        let bad_mtu = LabOptions {
            mtu: Some(1000),
            ..Default::default()
        };
        assert!(bad_mtu.validate().is_err());
        let bad_loss = LabOptions {
            loss: Some(2.0),
            ..Default::default()
        };
        assert!(bad_loss.validate().is_err());
        let bad_rate = LabOptions {
            rate_limit: Some(Shaping::tbf(0)),
            ..Default::default()
        };
        assert!(bad_rate.validate().is_err());
    }

    #[test]
    fn parses_alias() {
        let j = r#"[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"ifalias":"linerate-lab:1:2:3"}]"#;
        assert_eq!(parse_ifalias(j).as_deref(), Some("linerate-lab:1:2:3"));
        assert_eq!(parse_ifalias(r#"[{"ifname":"lo"}]"#), None);
        assert_eq!(parse_ifalias("garbage"), None);
    }
}
