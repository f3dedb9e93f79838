//! Reading what the checks need on this host: sysctls under `/proc/sys` (the calling
//! thread's network namespace for `net.*`), cpufreq governors in sysfs, the interface
//! toward a peer with its facts and IRQ affinity, and the kernel's path-MTU estimate.
//! Nothing is written.

use std::net::{IpAddr, Ipv4Addr};

use super::checks::{parse_cpu_list, HostInputs, Sysctls};
use crate::sys::host::{read_sysctl_u64, read_sysctl_u64s, sysctl_path};

/// Where cpufreq puts the governors.
const CPU_SYSFS: &str = "/sys/devices/system/cpu";

/// A peer address used only to find the default route when no host is given (TEST-NET-1,
/// RFC 5737); `connect` on UDP sends nothing.
const DEFAULT_ROUTE_PROBE: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));

fn text(name: &str) -> Option<String> {
    std::fs::read_to_string(sysctl_path(name))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Reads the sysctls doctor checks.
pub fn sysctls() -> Sysctls {
    Sysctls {
        rmem_max: read_sysctl_u64("net/core/rmem_max"),
        wmem_max: read_sysctl_u64("net/core/wmem_max"),
        rmem_default: read_sysctl_u64("net/core/rmem_default"),
        wmem_default: read_sysctl_u64("net/core/wmem_default"),
        netdev_max_backlog: read_sysctl_u64("net/core/netdev_max_backlog"),
        tcp_rmem: read_sysctl_u64s("net/ipv4/tcp_rmem").ok(),
        tcp_wmem: read_sysctl_u64s("net/ipv4/tcp_wmem").ok(),
        congestion_control: text("net/ipv4/tcp_congestion_control"),
        available_congestion_control: text("net/ipv4/tcp_available_congestion_control")
            .map(|s| s.split_whitespace().map(str::to_string).collect()),
        window_scaling: read_sysctl_u64("net/ipv4/tcp_window_scaling"),
        timestamps: read_sysctl_u64("net/ipv4/tcp_timestamps"),
        sack: read_sysctl_u64("net/ipv4/tcp_sack"),
    }
}

/// `(cpu, governor)` for every CPU with cpufreq; `None` when none has it.
pub fn governors() -> Option<Vec<(u32, String)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(CPU_SYSFS).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let path = e.path().join("cpufreq/scaling_governor");
        if let Ok(g) = std::fs::read_to_string(path) {
            out.push((n, g.trim().to_string()));
        }
    }
    out.sort();
    (!out.is_empty()).then_some(out)
}

/// The CPUs an IRQ may run on, from `/proc/irq/N/smp_affinity_list`. Only numeric IRQs.
fn irq_affinity(irq: &str) -> Option<Vec<u32>> {
    if irq.is_empty() || !irq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let t = std::fs::read_to_string(format!("/proc/irq/{irq}/smp_affinity_list")).ok()?;
    parse_cpu_list(&t)
}

/// The kernel's path-MTU estimate toward `peer`, IPv4 or IPv6 (`IP_MTU` / `IPV6_MTU` on a
/// connected UDP socket, see [`crate::sys::pmtu`]): the route's MTU unless an ICMP message
/// has lowered it. No probing. `None` when it cannot be read.
pub fn path_mtu(peer: IpAddr) -> Option<u32> {
    crate::sys::pmtu::path_mtu(peer).ok()
}

/// Reads everything on this host; `peer` picks the interface (the default route's when
/// absent). Warnings say what could not be read.
pub fn host_inputs(peer: Option<IpAddr>) -> (HostInputs, Vec<String>) {
    let mut warnings = Vec::new();
    let target = peer.unwrap_or(DEFAULT_ROUTE_PROBE);
    let interface = match crate::sys::iface::route_interface(target) {
        Ok(name) => {
            let (facts, w) = crate::sys::hostsnap::interface_facts(&name);
            // Loopback has no driver, link, coalescing or rings: saying so is noise.
            if name != "lo" {
                warnings.extend(w);
            }
            Some(facts)
        }
        Err(e) => {
            warnings.push(match peer {
                Some(_) => format!("interface: {e}"),
                None => format!("interface: no default route ({e}); name a HOST to check the interface toward it"),
            });
            None
        }
    };
    let irq_affinity = interface
        .as_ref()
        .map(|i| {
            i.irqs
                .iter()
                .map(|irq| (irq.clone(), irq_affinity(irq)))
                .collect()
        })
        .unwrap_or_default();
    let inputs = HostInputs {
        sysctls: sysctls(),
        governors: governors(),
        cpu_count: crate::sys::host::cpu_count(),
        interface,
        irq_affinity,
        path_mtu: peer.and_then(path_mtu),
        conntrack: crate::sys::conntrack::facts(),
    };
    (inputs, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_reads_on_this_host() {
        let s = sysctls();
        // Present on every Linux with IPv4 (values differ between hosts).
        assert!(s.rmem_max.is_some() && s.tcp_rmem.as_ref().is_some_and(|v| v.len() == 3));
        assert!(s.congestion_control.is_some());
        let (inp, _) = host_inputs(Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(inp.interface.as_ref().map(|i| i.name.as_str()), Some("lo"));
        // The route MTU toward 127.0.0.1 is loopback's MTU, capped at IPv4's 65535.
        let lo_mtu = inp.interface.as_ref().and_then(|i| i.mtu).unwrap();
        assert_eq!(inp.path_mtu, Some(lo_mtu.min(65_535)));
        // Over IPv6 the route keeps loopback's full MTU.
        let (inp6, _) = host_inputs(Some("::1".parse().unwrap()));
        assert_eq!(inp6.interface.as_ref().map(|i| i.name.as_str()), Some("lo"));
        assert_eq!(inp6.path_mtu, Some(lo_mtu), "IPv6 on ::1 is needed here");
        assert_eq!(irq_affinity("LOC"), None);
        assert_eq!(irq_affinity("../1"), None);
    }
}
