//! The checks of `linerate doctor`: pure functions from values read on a host
//! ([`HostInputs`]) to [`Finding`]s, each with the command that would change the setting.

use linerate_wire::doctor::{Finding, Severity};
use linerate_wire::host::InterfaceFacts;

use crate::model::units::{format_bps, format_bytes};

/// The sysctls doctor reads; each `None` when it could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sysctls {
    /// net.core.rmem_max: the largest SO_RCVBUF a process may request.
    pub rmem_max: Option<u64>,
    /// net.core.wmem_max: the largest SO_SNDBUF a process may request.
    pub wmem_max: Option<u64>,
    /// net.core.rmem_default.
    pub rmem_default: Option<u64>,
    /// net.core.wmem_default.
    pub wmem_default: Option<u64>,
    /// net.core.netdev_max_backlog: the per-CPU input queue.
    pub netdev_max_backlog: Option<u64>,
    /// net.ipv4.tcp_rmem: min, default, max of autotuned receive buffers.
    pub tcp_rmem: Option<Vec<u64>>,
    /// net.ipv4.tcp_wmem: min, default, max of autotuned send buffers.
    pub tcp_wmem: Option<Vec<u64>>,
    /// net.ipv4.tcp_congestion_control.
    pub congestion_control: Option<String>,
    /// net.ipv4.tcp_available_congestion_control.
    pub available_congestion_control: Option<Vec<String>>,
    /// net.ipv4.tcp_window_scaling.
    pub window_scaling: Option<u64>,
    /// net.ipv4.tcp_timestamps.
    pub timestamps: Option<u64>,
    /// net.ipv4.tcp_sack.
    pub sack: Option<u64>,
}

/// Everything read on one host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostInputs {
    /// The sysctls.
    pub sysctls: Sysctls,
    /// Scaling governor per CPU (cpu number, governor); `None` when the host has no cpufreq.
    pub governors: Option<Vec<(u32, String)>>,
    /// Online CPUs.
    pub cpu_count: u32,
    /// The interface toward the peer (or of the default route).
    pub interface: Option<InterfaceFacts>,
    /// Each IRQ of the interface with the CPUs it may run on (`smp_affinity_list`).
    pub irq_affinity: Vec<(String, Option<Vec<u32>>)>,
    /// The kernel's path-MTU estimate toward the peer (IPv4 `IP_MTU`).
    pub path_mtu: Option<u32>,
    /// Connection tracking's table; `None` when the host does not track connections.
    pub conntrack: Option<crate::sys::conntrack::Facts>,
}

/// What the checks compare with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The socket buffer the user means to request, bytes.
    pub buffer_bytes: u32,
    /// RTT to the peer, microseconds, when measured.
    pub rtt_us: Option<u32>,
    /// The TCP_CRR rate (connections per second) the conntrack table is checked against.
    pub crr_tps: Option<u64>,
}

fn finding(
    severity: Severity,
    check: &str,
    what: String,
    value: Option<String>,
    fix: Option<String>,
) -> Finding {
    Finding {
        severity,
        check: check.to_string(),
        what,
        value,
        fix,
    }
}

/// All checks, in a stable order.
pub fn checks(inp: &HostInputs, t: &Target) -> Vec<Finding> {
    let mut out = Vec::new();
    let s = &inp.sysctls;
    out.extend(buffer_max(
        "net.core.rmem_max",
        "SO_RCVBUF",
        s.rmem_max,
        t.buffer_bytes,
    ));
    out.extend(buffer_max(
        "net.core.wmem_max",
        "SO_SNDBUF",
        s.wmem_max,
        t.buffer_bytes,
    ));
    for (name, v) in [
        ("net.core.rmem_default", s.rmem_default),
        ("net.core.wmem_default", s.wmem_default),
    ] {
        out.push(match v {
            Some(v) => finding(
                Severity::Info,
                name,
                format!(
                    "sockets that request no buffer start with {}",
                    format_bytes(v)
                ),
                Some(v.to_string()),
                None,
            ),
            None => unreadable(name),
        });
    }
    let speed_bps = inp
        .interface
        .as_ref()
        .and_then(|i| i.speed_mbps)
        .filter(|&m| m > 0)
        .map(|m| f64::from(m) * 1e6);
    out.push(tcp_mem(
        "net.ipv4.tcp_rmem",
        "receive",
        s.tcp_rmem.as_deref(),
        speed_bps,
        t.rtt_us,
    ));
    out.push(tcp_mem(
        "net.ipv4.tcp_wmem",
        "send",
        s.tcp_wmem.as_deref(),
        speed_bps,
        t.rtt_us,
    ));
    out.push(congestion(s));
    out.push(flag("net.ipv4.tcp_window_scaling", s.window_scaling, Severity::Warn, "window scaling is off: TCP windows cannot exceed 64 KiB, so one stream gets at most 64 KiB per RTT"));
    out.push(flag(
        "net.ipv4.tcp_sack",
        s.sack,
        Severity::Warn,
        "SACK is off: after a loss TCP resends everything after it",
    ));
    out.push(flag(
        "net.ipv4.tcp_timestamps",
        s.timestamps,
        Severity::Info,
        "timestamps are off: RTT is sampled less often and sequence wrap protection is gone",
    ));
    out.push(backlog(s.netdev_max_backlog, speed_bps));
    out.push(governor(inp.governors.as_deref()));
    out.extend(conntrack(inp.conntrack.as_ref(), t.crr_tps));
    if let Some(i) = &inp.interface {
        out.extend(interface(inp, i));
    }
    out
}

/// Connection tracking against TCP_CRR: conntrack keeps an entry per connection for
/// `nf_conntrack_tcp_timeout_time_wait` seconds after it closed, so a test at R
/// connections per second needs R × that many entries beside those in use; a full table
/// drops new connections' SYNs (the connect retries, then times out). Without a rate the
/// finding gives the rate the table holds for good. `None` when nothing tracks connections
/// and no rate was given.
pub fn conntrack(
    c: Option<&crate::sys::conntrack::Facts>,
    crr_tps: Option<u64>,
) -> Option<Finding> {
    use crate::sys::conntrack::{entries_needed, sustained_tps};
    const NAME: &str = "net.netfilter.nf_conntrack_max";
    let Some(c) = c else {
        return crr_tps.map(|r| {
            finding(
                Severity::Ok,
                NAME,
                format!("this host does not track connections (no nf_conntrack): TCP_CRR at {r}/s cannot fill a table"),
                None,
                None,
            )
        });
    };
    let used = c.count.unwrap_or(0);
    let in_use = c.count.map(|n| format!(", {n} in use")).unwrap_or_default();
    let holds = sustained_tps(c.max, c.time_wait_s);
    Some(match crr_tps {
        Some(r) => {
            let need = entries_needed(r, c.time_wait_s);
            let what = format!(
                "a TCP_CRR test at {r} connections/s keeps {need} entries (one per closed connection for {} s, nf_conntrack_tcp_timeout_time_wait) against a table of {}{in_use}",
                c.time_wait_s, c.max
            );
            if need.saturating_add(used) > c.max {
                let fill_s = c.max.saturating_sub(used) as f64 / r.max(1) as f64;
                finding(
                    Severity::Warn,
                    NAME,
                    format!("{what}: it fills in {fill_s:.1} s, then its SYNs are dropped and connects time out while the server is fine"),
                    Some(c.max.to_string()),
                    Some(format!("sysctl -w {NAME}={}", need.saturating_add(used))),
                )
            } else {
                finding(Severity::Ok, NAME, what, Some(c.max.to_string()), None)
            }
        }
        None if used.saturating_mul(10) >= c.max.saturating_mul(9) => finding(
            Severity::Warn,
            NAME,
            format!(
                "the conntrack table is nearly full ({used} of {}): new connections' SYNs are dropped when it is",
                c.max
            ),
            Some(c.max.to_string()),
            Some(format!("sysctl -w {NAME}={}", c.max.saturating_mul(2))),
        ),
        None => finding(
            Severity::Info,
            NAME,
            format!(
                "connections are tracked (nf_conntrack): a table of {}{in_use} holds TCP_CRR up to {holds} connections/s for good (each closed one is kept {} s); faster tests fill it and lose SYNs (check a rate with --crr-rate)",
                c.max, c.time_wait_s
            ),
            Some(c.max.to_string()),
            None,
        ),
    })
}

fn unreadable(name: &str) -> Finding {
    finding(
        Severity::Info,
        name,
        "could not be read".to_string(),
        None,
        None,
    )
}

/// `rmem_max`/`wmem_max` against the buffer the user means to request: the kernel silently
/// caps a request at the limit (and doubles it for bookkeeping).
fn buffer_max(name: &str, opt: &str, v: Option<u64>, want: u32) -> Option<Finding> {
    let want = u64::from(want);
    Some(match v {
        None => unreadable(name),
        Some(v) if v < want => finding(
            Severity::Warn,
            name,
            format!(
                "{opt} requests are capped at {}: a request of {} gets {} instead of {}",
                format_bytes(v),
                format_bytes(want),
                format_bytes(2 * v),
                format_bytes(2 * want)
            ),
            Some(v.to_string()),
            Some(format!("sysctl -w {name}={want}")),
        ),
        Some(v) => finding(
            Severity::Ok,
            name,
            format!(
                "{opt} requests up to {} are granted (checked against {})",
                format_bytes(v),
                format_bytes(want)
            ),
            Some(v.to_string()),
            None,
        ),
    })
}

/// The largest RTT at which a window of `window` bytes carries `bps`, microseconds.
fn rtt_for(window: f64, bps: f64) -> f64 {
    window * 8.0 / bps * 1e6
}

/// `tcp_rmem`/`tcp_wmem`: autotuning grows buffers up to the third value; about half of a
/// receive buffer is window, so it should be at least twice the bandwidth-delay product at
/// the interface speed and the measured RTT.
fn tcp_mem(
    name: &str,
    dir: &str,
    v: Option<&[u64]>,
    speed_bps: Option<f64>,
    rtt_us: Option<u32>,
) -> Finding {
    let Some(&[min, def, max]) = v else {
        return match v {
            None => unreadable(name),
            Some(v) => finding(
                Severity::Info,
                name,
                "does not hold three values".into(),
                Some(join(v)),
                None,
            ),
        };
    };
    let value = Some(format!("{min} {def} {max}"));
    let window = max as f64 / 2.0;
    match (speed_bps, rtt_us.filter(|&r| r > 0)) {
        (Some(bps), Some(rtt)) => {
            let bdp = bps / 8.0 * f64::from(rtt) / 1e6;
            if (max as f64) < 2.0 * bdp {
                let want = round_up_mib(2.0 * bdp);
                finding(
                    Severity::Warn,
                    name,
                    format!(
                        "autotuned {dir} buffers stop at {}, a window of about {}: below the bandwidth-delay product {} ({} × {rtt} us RTT)",
                        format_bytes(max),
                        format_bytes(window as u64),
                        format_bytes(bdp as u64),
                        format_bps(bps)
                    ),
                    value,
                    Some(format!("sysctl -w {name}=\"{min} {def} {want}\"")),
                )
            } else {
                finding(
                    Severity::Ok,
                    name,
                    format!("autotuned {dir} buffers can reach {}, enough for {} at {rtt} us RTT (BDP {})", format_bytes(max), format_bps(bps), format_bytes(bdp as u64)),
                    value,
                    None,
                )
            }
        }
        _ => finding(
            Severity::Info,
            name,
            format!(
                "autotuned {dir} buffers can reach {} (a window of about {}): enough for 1 Gbit/s up to {:.1} ms RTT, 10 Gbit/s up to {:.2} ms",
                format_bytes(max),
                format_bytes(window as u64),
                rtt_for(window, 1e9) / 1000.0,
                rtt_for(window, 1e10) / 1000.0
            ),
            value,
            None,
        ),
    }
}

fn round_up_mib(bytes: f64) -> u64 {
    let mib = 1u64 << 20;
    ((bytes.max(1.0) as u64).div_ceil(mib)) * mib
}

fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

fn congestion(s: &Sysctls) -> Finding {
    let name = "net.ipv4.tcp_congestion_control";
    let Some(cc) = &s.congestion_control else {
        return unreadable(name);
    };
    let avail = s
        .available_congestion_control
        .as_ref()
        .map(|a| a.join(" "))
        .unwrap_or_default();
    let listed = if avail.is_empty() {
        String::new()
    } else {
        format!(" (available: {avail})")
    };
    if cc == "reno" {
        let to = if s
            .available_congestion_control
            .as_ref()
            .is_some_and(|a| a.iter().any(|c| c == "cubic"))
        {
            "cubic"
        } else {
            "cubic (modprobe tcp_cubic)"
        };
        finding(
            Severity::Info,
            name,
            format!("reno grows its window slowly after a loss; Linux's default is cubic{listed}"),
            Some(cc.clone()),
            Some(format!(
                "sysctl -w {name}={}",
                to.split(' ').next().unwrap_or("cubic")
            )),
        )
    } else {
        finding(
            Severity::Ok,
            name,
            format!("{cc}{listed}; a test can choose another with -C"),
            Some(cc.clone()),
            None,
        )
    }
}

fn flag(name: &str, v: Option<u64>, sev: Severity, off: &str) -> Finding {
    match v {
        None => unreadable(name),
        Some(0) => finding(
            sev,
            name,
            off.to_string(),
            Some("0".into()),
            Some(format!("sysctl -w {name}=1")),
        ),
        Some(v) => finding(
            Severity::Ok,
            name,
            "on".to_string(),
            Some(v.to_string()),
            None,
        ),
    }
}

/// `netdev_max_backlog`: the per-CPU queue between the driver and the stack; below 1000
/// (the kernel default) packets are dropped in bursts; at 10 Gbit/s and more, 10000 is the
/// usual advice.
fn backlog(v: Option<u64>, speed_bps: Option<f64>) -> Finding {
    let name = "net.core.netdev_max_backlog";
    match v {
        None => unreadable(name),
        Some(v) if v < 1000 => finding(
            Severity::Warn,
            name,
            format!("a per-CPU input queue of {v} packets drops bursts"),
            Some(v.to_string()),
            Some(format!("sysctl -w {name}=1000")),
        ),
        Some(v) if v < 10_000 && speed_bps.is_some_and(|s| s >= 1e10) => finding(
            Severity::Info,
            name,
            format!(
                "{v} packets per CPU is short for a link of {}",
                format_bps(speed_bps.unwrap_or(0.0))
            ),
            Some(v.to_string()),
            Some(format!("sysctl -w {name}=10000")),
        ),
        Some(v) => finding(
            Severity::Ok,
            name,
            format!("per-CPU input queue of {v} packets"),
            Some(v.to_string()),
            None,
        ),
    }
}

/// The CPU frequency governor: `performance` keeps clocks steady; `powersave` (outside
/// intel_pstate's active mode) slows packet processing; the others vary clocks with load, so
/// results vary between runs.
fn governor(g: Option<&[(u32, String)]>) -> Finding {
    let name = "cpu.governor";
    let fix = "for g in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance > $g; done";
    let Some(g) = g.filter(|g| !g.is_empty()) else {
        return finding(
            Severity::Info,
            name,
            "no cpufreq: governor not applicable (VM?)".into(),
            None,
            None,
        );
    };
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for (_, gov) in g {
        match kinds.iter_mut().find(|(k, _)| *k == gov.as_str()) {
            Some((_, n)) => *n += 1,
            None => kinds.push((gov.as_str(), 1)),
        }
    }
    let value = kinds
        .iter()
        .map(|(k, n)| format!("{k} on {n} of {} CPUs", g.len()))
        .collect::<Vec<_>>()
        .join(", ");
    if kinds.iter().all(|(k, _)| *k == "performance") {
        finding(
            Severity::Ok,
            name,
            "performance: steady clocks".into(),
            Some(value),
            None,
        )
    } else if kinds.iter().any(|(k, _)| *k == "powersave") {
        finding(
            Severity::Warn,
            name,
            "powersave can hold CPUs at low clocks: packet processing is slower and results vary"
                .into(),
            Some(value),
            Some(fix.into()),
        )
    } else {
        finding(Severity::Info, name, "clocks follow the load, so results can vary between runs; performance keeps them steady".into(), Some(value), Some(fix.into()))
    }
}

/// The interface's MTU, path MTU, speed, offloads, coalescing, rings and IRQ affinity.
fn interface(inp: &HostInputs, i: &InterfaceFacts) -> Vec<Finding> {
    let name = &i.name;
    let mut out = Vec::new();
    let desc = [
        i.driver.as_ref().map(|d| format!("driver {d}")),
        i.mtu.map(|m| format!("MTU {m}")),
        i.speed_mbps.map(|s| format!("{} Mbit/s", s)),
        i.shaped_rate_bps.map(|r| {
            format!(
                "egress shaped by {} to {}",
                i.root_qdisc.as_deref().unwrap_or("a qdisc"),
                format_bps(r as f64)
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    out.push(finding(
        Severity::Info,
        "interface",
        if desc.is_empty() {
            "the driver reports nothing about it".to_string()
        } else {
            desc
        },
        Some(name.clone()),
        None,
    ));
    if let (Some(p), Some(m)) = (inp.path_mtu, i.mtu) {
        // IPv4 caps a route's MTU at 65535 (loopback's is 65536).
        out.push(if p < m.min(65_535) {
            finding(Severity::Info, "path.mtu", format!("the path MTU {p} is below {name}'s MTU {m}: a hop on the way has a smaller MTU"), Some(p.to_string()), None)
        } else {
            finding(Severity::Ok, "path.mtu", format!("the kernel's path MTU estimate equals {name}'s MTU"), Some(p.to_string()), None)
        });
    }
    if name == "lo" {
        out.push(finding(
            Severity::Info,
            "interface.hardware",
            "loopback: no link speed, interrupts, coalescing or rings to check".into(),
            None,
            None,
        ));
        out.push(offloads(i));
        return out;
    }
    if i.speed_mbps.filter(|&s| s > 0).is_none() && i.shaped_rate_bps.is_none() {
        out.push(finding(
            Severity::Info,
            "interface.speed",
            format!(
                "{name} reports no link speed: tell the diagnosis a known rate with --link-rate"
            ),
            None,
            None,
        ));
    }
    out.push(offloads(i));
    out.push(coalescing(i));
    if let Some(r) = i.rings.filter(|r| r.rx < r.rx_max) {
        out.push(finding(
            Severity::Info,
            "interface.rings",
            format!(
                "the receive ring has {} of {} descriptors: a larger ring absorbs bursts",
                r.rx, r.rx_max
            ),
            Some(format!("rx {} tx {}", r.rx, r.tx)),
            Some(format!("ethtool -G {name} rx {}", r.rx_max)),
        ));
    }
    out.extend(irq_affinity(inp, name));
    out
}

/// The offloads that cut per-packet CPU cost, by `ethtool -k` name and `ethtool -K` keyword.
const OFFLOADS: [(&str, &str); 6] = [
    ("tcp-segmentation-offload", "tso"),
    ("generic-segmentation-offload", "gso"),
    ("generic-receive-offload", "gro"),
    ("rx-checksumming", "rx"),
    ("tx-checksumming", "tx"),
    ("scatter-gather", "sg"),
];

fn offloads(i: &InterfaceFacts) -> Finding {
    let check = "interface.offloads";
    let Some(map) = &i.offloads else {
        return finding(
            Severity::Info,
            check,
            format!("{} reports no offload settings", i.name),
            None,
            None,
        );
    };
    let off: Vec<(&str, &str)> = OFFLOADS
        .iter()
        .copied()
        .filter(|(n, _)| map.get(*n) == Some(&false))
        .collect();
    let on: Vec<&str> = OFFLOADS
        .iter()
        .filter(|(n, _)| map.get(*n) == Some(&true))
        .map(|(_, k)| *k)
        .collect();
    if off.is_empty() {
        return finding(
            Severity::Ok,
            check,
            format!("on: {}", on.join(", ")),
            Some(on.join(" ")),
            None,
        );
    }
    let names: Vec<&str> = off.iter().map(|(n, _)| *n).collect();
    let keys: Vec<String> = off.iter().map(|(_, k)| format!("{k} on")).collect();
    finding(
        Severity::Warn,
        check,
        format!("off: {}: every packet costs the CPU more", names.join(", ")),
        Some(format!(
            "off: {}",
            off.iter().map(|(_, k)| *k).collect::<Vec<_>>().join(" ")
        )),
        Some(format!("ethtool -K {} {}", i.name, keys.join(" "))),
    )
}

fn coalescing(i: &InterfaceFacts) -> Finding {
    let check = "interface.coalescing";
    let Some(c) = &i.coalescing else {
        return finding(
            Severity::Info,
            check,
            format!(
                "{} reports no interrupt coalescing (virtual interface?)",
                i.name
            ),
            None,
            None,
        );
    };
    let get = |k: &str| c.get(k).copied().unwrap_or(0);
    let value = ["rx-usecs", "rx-frames", "adaptive-rx"]
        .iter()
        .map(|k| format!("{k} {}", get(k)))
        .collect::<Vec<_>>()
        .join(", ");
    if get("adaptive-rx") == 0 && get("rx-usecs") == 0 && get("rx-frames") <= 1 {
        finding(
            Severity::Warn,
            check,
            "no receive coalescing: an interrupt for every packet, which can leave a host completely interrupt bound".into(),
            Some(value),
            Some(format!("ethtool -C {} adaptive-rx on  # or: rx-usecs 50 rx-frames 64", i.name)),
        )
    } else {
        finding(
            Severity::Ok,
            check,
            "receive interrupts are coalesced".into(),
            Some(value),
            None,
        )
    }
}

/// IRQ affinity of the interface's interrupts: all queues on one CPU serialise receive
/// processing there.
fn irq_affinity(inp: &HostInputs, name: &str) -> Vec<Finding> {
    let check = "interface.irq_affinity";
    let known: Vec<(&String, &Vec<u32>)> = inp
        .irq_affinity
        .iter()
        .filter_map(|(irq, c)| Some((irq, c.as_ref()?)))
        .collect();
    if inp.irq_affinity.is_empty() {
        return vec![finding(
            Severity::Info,
            check,
            format!("no IRQ of {name} found in /proc/interrupts"),
            None,
            None,
        )];
    }
    let value = known
        .iter()
        .map(|(irq, c)| format!("{irq}:{}", cpu_list(c)))
        .collect::<Vec<_>>()
        .join(" ");
    let first = known.first().map(|(_, c)| (*c).clone());
    let all_one_cpu = known.len() >= 2
        && inp.cpu_count > 1
        && first.as_ref().is_some_and(|c| c.len() == 1)
        && known.iter().all(|(_, c)| Some(*c) == first.as_ref());
    if all_one_cpu {
        let cpu = first.as_ref().and_then(|c| c.first()).copied().unwrap_or(0);
        vec![finding(
            Severity::Warn,
            check,
            format!("all {} IRQs of {name} go to CPU {cpu}: receive processing cannot spread", known.len()),
            Some(value),
            Some("systemctl start irqbalance  # or: echo CPU > /proc/irq/N/smp_affinity_list per queue".into()),
        )]
    } else {
        vec![finding(
            Severity::Ok,
            check,
            format!(
                "{} IRQs of {name} and the CPUs they may run on",
                known.len()
            ),
            Some(value),
            None,
        )]
    }
}

/// Parses a kernel CPU list ("0-3,8,10-11") into CPU numbers; `None` on bad input.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let t = text.trim();
    if t.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for part in t.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// "0-3,8" from CPU numbers (sorted ranges).
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut c = cpus.to_vec();
    c.sort_unstable();
    c.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let start = c[i];
        let mut end = start;
        while i + 1 < c.len() && c[i + 1] == end + 1 {
            i += 1;
            end = c[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}
