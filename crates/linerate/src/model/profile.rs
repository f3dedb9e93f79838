//! `--profile`: from one end's raw samples ([`crate::sys::perf::RawSamples`]) and the kernel's
//! symbols to the [`ProfileReport`] it reports: which function each sample was in, its
//! category by the rules of [`categorize`], the top functions, the categories overall and
//! per CPU, and folded stacks when call chains were recorded.
//!
//! Idle: a sample of the idle task (pid 0) in an idle function ([`is_idle`]) found its CPU
//! idle. It counts in `samples` and `idle_samples` and nowhere else; every share is of the
//! busy samples (all less idle), so shares add up to at most 100 % and a test on a mostly
//! idle host still shows where its busy time went. Work the idle task does for others
//! (softirqs and interrupts that arrive while it runs) is busy time, in its own category.

use std::collections::HashMap;

use linerate_wire::profile::{
    Category, CategoryShare, CpuProfile, FoldedStack, FunctionShare, ProcessShare, ProfileReport,
    ProfileSpec, MAX_FOLDED, MAX_NAME, MAX_PROCESSES, MAX_STACK, MAX_TOP,
};

use crate::sys::kallsyms::Kallsyms;
use crate::sys::perf::{RawSample, RawSamples};

/// How many functions a profile's top list keeps.
pub const TOP_FUNCTIONS: usize = 20;

/// Functions that are a CPU's idle loop (the idle task's time in them is idle time).
const IDLE: &[&str] = &[
    "default_idle",
    "default_idle_call",
    "do_idle",
    "cpu_idle_poll",
    "poll_idle",
    "arch_cpu_idle",
    "native_safe_halt",
    "pv_native_safe_halt",
    "cpuidle_enter_state",
    "cpuidle_enter",
    "cpuidle_idle_call",
    "acpi_idle_do_entry",
    "acpi_idle_enter",
    "acpi_safe_halt",
    "intel_idle",
    "intel_idle_irq",
    "mwait_idle",
    "mwait_idle_with_hints",
    "amd_e400_idle",
    "cpu_startup_entry",
    "psci_cpu_suspend_enter",
    "cpu_do_idle",
];

/// Whether `name` (a kernel function) is an idle loop.
pub fn is_idle(name: &str) -> bool {
    IDLE.contains(&strip_module(name))
}

fn strip_module(name: &str) -> &str {
    name.split(' ').next().unwrap_or(name)
}

/// The rules, in order: the first category with a pattern that matches wins. A pattern
/// ending in `*` matches a prefix (after leading underscores are removed), one starting
/// with `*` matches anywhere in the name, any other the whole name.
const RULES: &[(Category, &[&str])] = &[
    (
        Category::DataCopy,
        &[
            "*copy_user*",
            "*copy_to_user*",
            "*copy_from_user*",
            "*copy_to_iter*",
            "*copy_from_iter*",
            "*copy_page*",
            "*memcpy*",
            "*memmove*",
            "rep_movs_alternative",
            "*csum_partial_copy*",
            "*csum_and_copy*",
            "skb_copy_datagram*",
            "skb_copy_bits",
            "copyin",
            "copyout",
        ],
    ),
    (
        Category::Locking,
        &[
            "*spin_lock*",
            "*spin_unlock*",
            "*spin_trylock*",
            "*read_lock*",
            "*write_lock*",
            "*read_unlock*",
            "*write_unlock*",
            "*mutex_*",
            "*rwsem*",
            "lock_sock*",
            "release_sock",
            "osq_lock",
            "*rt_mutex*",
        ],
    ),
    (
        Category::Softirq,
        &[
            "do_softirq*",
            "handle_softirqs",
            "net_rx_action",
            "net_tx_action",
            "*irq_exit*",
            "run_ksoftirqd",
            "local_bh_enable*",
            "tasklet*",
            "softirq*",
        ],
    ),
    (
        Category::DriverNapi,
        &[
            "*napi*",
            "netif_*",
            "dev_*",
            "net_dev*",
            "*_gro_*",
            "gro_*",
            "*gso_*",
            "skb_gso*",
            "loopback_xmit",
            "veth_*",
            "virtnet*",
            "virtqueue*",
            "vring*",
            "*qdisc*",
            "sch_direct_xmit",
            "pfifo*",
            "validate_xmit*",
            "eth_type_trans",
            "e1000*",
            "igb_*",
            "ixgbe*",
            "i40e*",
            "ice_*",
            "mlx*",
            "bnxt*",
            "ena_*",
            "tun_*",
            "tpacket*",
            "packet_*",
        ],
    ),
    // Before the scheduler's `*schedule*`: `__udp_enqueue_schedule_skb` is UDP's receive
    // queue, not the scheduler.
    (Category::Udp, &["*udp*"]),
    (
        Category::Interrupts,
        &["*irq*", "*interrupt*", "*apic*", "*sysvec*", "*_nmi*"],
    ),
    (
        Category::Scheduler,
        &[
            "*schedule*",
            "*sched*",
            "*switch_to*",
            "finish_task_switch*",
            "pick_next*",
            "pick_task*",
            "enqueue_*",
            "dequeue_*",
            "try_to_wake_up",
            "*wake_up*",
            "ttwu*",
            "update_curr*",
            "update_load*",
            "update_cfs*",
            "update_rq*",
            "*hrtimer*",
            "*timer*",
            "tick_*",
            "ktime_get*",
            "rcu_*",
            "load_balance",
            "select_task_rq*",
            "psi_*",
            "cpuacct*",
            "*cgroup_rstat*",
            "set_next_entity",
            "put_prev*",
            "*task_tick*",
            "newidle*",
            "prepare_task_switch",
            "*futex*",
            "do_nanosleep",
            "*clockevent*",
            "*idle*",
            "*ep_poll*",
            "*poll_schedule*",
            "do_sys_poll",
            "do_select",
        ],
    ),
    (
        Category::Syscall,
        &[
            "entry_SYSCALL*",
            "entry_SYSRETQ*",
            "do_syscall*",
            "syscall_*",
            "x64_sys_*",
            "x64_sys_call",
            "sys_*",
            "se_sys_*",
            "ksys_*",
            "*exit_to_user_mode*",
            "*fdget*",
            "fput*",
            "fget*",
            "sockfd_lookup*",
            "audit*",
            "restore_regs*",
            "*entry_from_user_mode*",
            "security_*",
            "apparmor*",
            "selinux*",
            "import_*",
            "rw_verify_area",
            "vfs_*",
            "fsnotify*",
        ],
    ),
    (
        Category::Memory,
        &[
            "*kmem_cache*",
            "*kmalloc*",
            "kfree*",
            "*slab*",
            "*slub*",
            "*alloc_pages*",
            "*free_pages*",
            "*free_unref*",
            "get_page_from_freelist",
            "page_frag*",
            "rmqueue*",
            "*memcg*",
            "*mem_cgroup*",
            "*alloc_skb*",
            "*kfree_skb*",
            "consume_skb",
            "skb_release*",
            "skb_free_head",
            "*build_skb*",
            "page_counter*",
            "memset*",
            "clear_page*",
            "folio_*",
            "put_page",
            "get_page",
            "*page_pool*",
            "skb_attempt_defer_free",
            "napi_skb_cache*",
        ],
    ),
    (
        Category::TcpIp,
        &[
            "*tcp*",
            "ip_*",
            "ip6*",
            "ipv4*",
            "ipv6*",
            "*inet*",
            "*sock_*",
            "sock*",
            "sk_*",
            "skb_*",
            "csum*",
            "icmp*",
            "nf_*",
            "nft_*",
            "ipt_*",
            "dst_*",
            "fib*",
            "rt_*",
            "raw_*",
            "neigh*",
            "ip_finish*",
            "netfilter*",
            "bpf_skb*",
            "sock_def*",
            "sockfs*",
        ],
    ),
];

fn matches(pattern: &str, name: &str) -> bool {
    if let Some(inner) = pattern.strip_prefix('*') {
        let inner = inner.strip_suffix('*').unwrap_or(inner);
        return name.contains(inner);
    }
    let bare = name.trim_start_matches('_');
    match pattern.strip_suffix('*') {
        Some(prefix) => bare.starts_with(prefix),
        None => bare == pattern,
    }
}

/// The category of a kernel function (`name` or `name [module]`; compiler suffixes such
/// as `.isra.0` or `.cold` are ignored). Idle functions are not here: [`is_idle`].
pub fn categorize(name: &str) -> Category {
    let base = strip_module(name);
    let base = base.split('.').next().unwrap_or(base);
    for (cat, patterns) in RULES {
        if patterns.iter().any(|p| matches(p, base)) {
            return *cat;
        }
    }
    Category::Other
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 100.0 / whole as f64).min(100.0)
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn shares(counts: &HashMap<Category, u64>, busy: u64) -> Vec<CategoryShare> {
    let mut v: Vec<CategoryShare> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| CategoryShare {
            category: *c,
            samples: *n,
            busy_percent: pct(*n, busy),
        })
        .collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.category.cmp(&b.category)));
    v
}

#[derive(Default)]
struct CpuTally {
    samples: u64,
    idle: u64,
    categories: HashMap<Category, u64>,
    functions: HashMap<String, u64>,
}

/// The counts of the samples in the measured window, before they are ranked.
#[derive(Default)]
struct Tally<'a> {
    samples: u64,
    idle: u64,
    kernel: u64,
    user: u64,
    unresolved: u64,
    functions: HashMap<String, (Category, u64)>,
    categories: HashMap<Category, u64>,
    cpus: HashMap<u32, CpuTally>,
    folded: HashMap<String, u64>,
    processes: HashMap<&'a str, u64>,
}

impl<'a> Tally<'a> {
    /// Counts one sample: an idle one only as idle; any other under its function, category,
    /// process and CPU, and its folded stack when `callchains`.
    fn add(&mut self, raw: &'a RawSamples, syms: &Kallsyms, s: &RawSample, callchains: bool) {
        self.samples += 1;
        let tally = self.cpus.entry(s.cpu).or_default();
        tally.samples += 1;
        let comm = raw.comms.get(&s.pid).map_or("?", String::as_str);
        let (name, category) = if s.user {
            (format!("[user] {comm}"), Category::UserSpace)
        } else {
            match syms.resolve(s.ip) {
                Some(n) if s.pid == 0 && is_idle(n) => {
                    self.idle += 1;
                    tally.idle += 1;
                    return;
                }
                Some(n) => (n.to_string(), categorize(n)),
                None => {
                    self.unresolved += 1;
                    ("[unknown kernel]".to_string(), Category::Other)
                }
            }
        };
        if s.user {
            self.user += 1;
        } else {
            self.kernel += 1;
        }
        *self.processes.entry(comm).or_default() += 1;
        *self.categories.entry(category).or_default() += 1;
        *tally.categories.entry(category).or_default() += 1;
        *tally.functions.entry(name.clone()).or_default() += 1;
        if callchains {
            *self
                .folded
                .entry(folded_stack(raw, syms, s, comm, &name))
                .or_default() += 1;
        }
        self.functions.entry(name).or_insert((category, 0)).1 += 1;
    }
}

/// A sample's stack in the folded format: the process, then its frames outermost first (a
/// user-space sample's one frame, a kernel sample's call chain or its own function).
fn folded_stack(
    raw: &RawSamples,
    syms: &Kallsyms,
    s: &RawSample,
    comm: &str,
    name: &str,
) -> String {
    let mut stack = comm.to_string();
    if s.user {
        stack.push(';');
        stack.push_str(name);
    } else {
        let chain = raw.chain(s);
        let frames: Vec<&str> = if chain.is_empty() {
            vec![name]
        } else {
            chain
                .iter()
                .rev()
                .map(|ip| syms.resolve(*ip).unwrap_or("[unknown kernel]"))
                .collect()
        };
        for f in frames {
            stack.push(';');
            stack.push_str(f);
        }
    }
    stack
}

/// Builds one end's profile from the samples in `[from_ns, to_ns)` (`CLOCK_MONOTONIC`).
pub fn build(
    raw: &RawSamples,
    syms: &Kallsyms,
    spec: ProfileSpec,
    from_ns: u64,
    to_ns: u64,
) -> ProfileReport {
    let mut t = Tally {
        cpus: raw.cpus.iter().map(|c| (*c, CpuTally::default())).collect(),
        ..Tally::default()
    };
    for s in raw
        .samples
        .iter()
        .filter(|s| s.time_ns >= from_ns && s.time_ns < to_ns)
    {
        t.add(raw, syms, s, spec.callchains);
    }
    let busy = t.samples - t.idle;
    let (stacks, left_out) = top_stacks(t.folded);
    ProfileReport {
        event: "cpu-clock".into(),
        frequency_hz: spec.frequency_hz,
        duration_ns: to_ns.saturating_sub(from_ns),
        start_monotonic_ns: Some(from_ns),
        samples: t.samples,
        idle_samples: t.idle,
        idle_percent: pct(t.idle, t.samples),
        kernel_samples: t.kernel,
        user_samples: t.user,
        lost_samples: raw.lost,
        unresolved_samples: t.unresolved,
        top: top_functions(t.functions, busy),
        categories: shares(&t.categories, busy),
        processes: top_processes(t.processes, busy),
        per_cpu: per_cpu(t.cpus),
        folded: stacks,
        folded_left_out_samples: left_out,
        warnings: build_warnings(raw, t.samples),
    }
}

/// The functions by samples, most first, at most [`TOP_FUNCTIONS`].
fn top_functions(functions: HashMap<String, (Category, u64)>, busy: u64) -> Vec<FunctionShare> {
    let mut top: Vec<FunctionShare> = functions
        .into_iter()
        .map(|(name, (category, n))| FunctionShare {
            name: cut(&name, MAX_NAME),
            category,
            samples: n,
            busy_percent: pct(n, busy),
        })
        .collect();
    top.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
    top.truncate(TOP_FUNCTIONS.min(MAX_TOP));
    top
}

/// The processes by samples, most first, at most [`MAX_PROCESSES`].
fn top_processes(processes: HashMap<&str, u64>, busy: u64) -> Vec<ProcessShare> {
    let mut procs: Vec<ProcessShare> = processes
        .into_iter()
        .map(|(comm, n)| ProcessShare {
            comm: cut(comm, MAX_NAME),
            samples: n,
            busy_percent: pct(n, busy),
        })
        .collect();
    procs.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.comm.cmp(&b.comm)));
    procs.truncate(MAX_PROCESSES);
    procs
}

/// Each CPU's samples, categories and busiest function, by CPU number.
fn per_cpu(cpus: HashMap<u32, CpuTally>) -> Vec<CpuProfile> {
    let mut per_cpu: Vec<CpuProfile> = cpus
        .into_iter()
        .map(|(cpu, t)| {
            let b = t.samples - t.idle;
            CpuProfile {
                cpu,
                samples: t.samples,
                idle_samples: t.idle,
                categories: shares(&t.categories, b),
                top_function: t
                    .functions
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(n, _)| cut(n, MAX_NAME)),
            }
        })
        .collect();
    per_cpu.sort_by_key(|c| c.cpu);
    per_cpu.truncate(linerate_wire::profile::MAX_CPUS);
    per_cpu
}

/// The folded stacks by samples, most first, at most [`MAX_FOLDED`] of at most
/// [`MAX_STACK`] bytes, and the samples of those left out.
fn top_stacks(folded: HashMap<String, u64>) -> (Vec<FoldedStack>, u64) {
    let mut stacks: Vec<FoldedStack> = folded
        .into_iter()
        .map(|(stack, n)| FoldedStack { stack, samples: n })
        .collect();
    stacks.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.stack.cmp(&b.stack)));
    let left_out: u64 = stacks.iter().skip(MAX_FOLDED).map(|s| s.samples).sum();
    stacks.truncate(MAX_FOLDED);
    for s in &mut stacks {
        if s.stack.len() > MAX_STACK {
            s.stack = cut(&s.stack, MAX_STACK);
        }
    }
    (stacks, left_out)
}

/// The warnings of a profile: samples lost or not kept, none in the window.
fn build_warnings(raw: &RawSamples, samples: u64) -> Vec<String> {
    let mut warnings = Vec::new();
    if raw.lost > 0 {
        warnings.push(format!(
            "{} samples were lost (the profile's ring buffer was full); the shares are of the others",
            raw.lost
        ));
    }
    if raw.dropped > 0 {
        warnings.push(format!(
            "{} samples past the first {} were not kept",
            raw.dropped,
            crate::sys::perf::MAX_SAMPLES
        ));
    }
    if samples == 0 {
        warnings.push("no samples in the measured window".into());
    }
    warnings
}

/// A CPU gave fewer busy samples than half of what its busy time comes to at the profile's
/// rate (and that would be at least this many): its timer interrupts came late or not at all.
const UNEVEN_MIN_EXPECTED: f64 = 200.0;

/// The warning for CPUs whose busy samples fall well short of their busy time, or `None`.
///
/// The cpu-clock event samples on a timer interrupt per CPU. On a virtual machine a CPU that
/// halts between bursts of work (a receiver waiting for data) may get those interrupts late or
/// not at all: one loopback stream's receiver CPU gave 615 samples where its busy time in
/// `/proc/stat` came to some 2300, while the sender's CPU gave every one. Every share is of
/// the samples, so such a CPU's work is under-represented in them, and the shares are not of
/// the CPU time. `busy_fraction` is each CPU's busy share of its time in `/proc/stat` over the
/// measured window (cpu, 0..=1); `window_ns` is that window's length.
pub fn uneven_sampling(
    per_cpu: &[CpuProfile],
    busy_fraction: &[(u32, f64)],
    frequency_hz: u32,
    window_ns: u64,
) -> Option<String> {
    let window_s = window_ns as f64 / 1e9;
    let short: Vec<String> = per_cpu
        .iter()
        .filter_map(|c| {
            let (_, f) = busy_fraction.iter().find(|(cpu, _)| *cpu == c.cpu)?;
            let expected = f.clamp(0.0, 1.0) * f64::from(frequency_hz) * window_s;
            let busy = c.samples.saturating_sub(c.idle_samples);
            (expected >= UNEVEN_MIN_EXPECTED && (busy as f64) < expected * 0.5)
                .then(|| format!("CPU {} gave {busy} of about {expected:.0}", c.cpu))
        })
        .collect();
    if short.is_empty() {
        return None;
    }
    // A line, not a list of every CPU of a large host (MAX_WARNING bytes at most).
    let named = if short.len() > 3 {
        format!(
            "{} and {} other CPUs",
            short[..3].join(", "),
            short.len() - 3
        )
    } else {
        short.join(", ")
    };
    Some(format!(
        "uneven sampling: {named} busy samples, the number their busy time in /proc/stat comes to at {frequency_hz} Hz; timer interrupts that came late or never (common on virtual machines) leave that work under-represented in the shares: pin the test's threads (-A) or read the shares per CPU"
    ))
}

/// The folded stacks as text, one `stack count` per line (the input of flamegraph.pl and
/// inferno-flamegraph).
pub fn folded_text(p: &ProfileReport) -> String {
    let mut s = String::new();
    for f in &p.folded {
        s.push_str(&f.stack);
        s.push(' ');
        s.push_str(&f.samples.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::perf::RawSample;

    fn cpu(cpu: u32, samples: u64, idle_samples: u64) -> CpuProfile {
        CpuProfile {
            cpu,
            samples,
            idle_samples,
            categories: Vec::new(),
            top_function: None,
        }
    }

    #[test]
    fn uneven_sampling_is_warned_of() {
        // The loopback stream seen on this VM: CPU 0 (sender) gave all its 3000 ticks, CPU 1
        // (receiver, 78 % busy in /proc/stat) 615 at 999 Hz over 3 s.
        let per_cpu = [cpu(0, 3003, 11), cpu(1, 615, 0)];
        let busy = [(0, 0.99), (1, 0.78)];
        let w = uneven_sampling(&per_cpu, &busy, 999, 3_000_000_000).expect("a warning");
        assert!(w.contains("CPU 1 gave 615 of about 2338"), "{w}");
        assert!(!w.contains("CPU 0"), "{w}");
        assert!(w.contains("-A"), "{w}");
        assert!(!w.contains('\n'));
        // Two short CPUs: one line naming both.
        let per_cpu = [cpu(0, 900, 0), cpu(1, 615, 0)];
        let w = uneven_sampling(&per_cpu, &busy, 999, 3_000_000_000).expect("a warning");
        assert!(
            w.contains("CPU 0 gave 900 of about 2967, CPU 1 gave 615"),
            "{w}"
        );
        // A large host where every CPU fell short: three named, the rest counted, one
        // warning the wire accepts.
        let per_cpu: Vec<CpuProfile> = (0..1024).map(|c| cpu(c, 100_000, 0)).collect();
        let busy: Vec<(u32, f64)> = (0..1024).map(|c| (c, 1.0)).collect();
        let w = uneven_sampling(&per_cpu, &busy, 10_000, 100_000_000_000).expect("a warning");
        assert!(
            w.contains("CPU 2 gave 100000 of about 1000000 and 1021 other CPUs"),
            "{w}"
        );
        assert!(
            w.len() <= linerate_wire::profile::MAX_WARNING,
            "{}",
            w.len()
        );
    }

    #[test]
    fn even_or_idle_or_short_profiles_are_not_warned_of() {
        // Every CPU gave what its busy time comes to (idle samples are not busy ones).
        let per_cpu = [cpu(0, 3003, 11), cpu(1, 3000, 1500)];
        let busy = [(0, 0.99), (1, 0.5)];
        assert_eq!(uneven_sampling(&per_cpu, &busy, 999, 3_000_000_000), None);
        // An idle CPU that gave few samples: nothing was left out.
        let per_cpu = [cpu(0, 3003, 11), cpu(1, 38, 0)];
        let busy = [(0, 0.99), (1, 0.01)];
        assert_eq!(uneven_sampling(&per_cpu, &busy, 999, 3_000_000_000), None);
        // Too short a window to tell (under 200 expected samples).
        let per_cpu = [cpu(0, 50, 0)];
        assert_eq!(
            uneven_sampling(&per_cpu, &[(0, 1.0)], 999, 150_000_000),
            None
        );
        // No /proc/stat figure for the CPU: no claim.
        assert_eq!(
            uneven_sampling(&[cpu(3, 10, 0)], &busy, 999, 3_000_000_000),
            None
        );
        // At exactly half, no warning; just under, one.
        let per_cpu = [cpu(0, 500, 0)];
        assert_eq!(
            uneven_sampling(&per_cpu, &[(0, 1.0)], 1000, 1_000_000_000),
            None
        );
        let per_cpu = [cpu(0, 499, 0)];
        assert!(uneven_sampling(&per_cpu, &[(0, 1.0)], 1000, 1_000_000_000).is_some());
    }

    #[test]
    fn functions_fall_into_the_categories_an_engineer_uses() {
        let cases = [
            ("copy_user_enhanced_fast_string", Category::DataCopy),
            ("rep_movs_alternative", Category::DataCopy),
            ("_copy_to_iter", Category::DataCopy),
            ("__memcpy", Category::DataCopy),
            ("skb_copy_datagram_iter", Category::DataCopy),
            ("native_queued_spin_lock_slowpath", Category::Locking),
            ("_raw_spin_unlock_irqrestore", Category::Locking),
            ("lock_sock_nested", Category::Locking),
            ("__do_softirq", Category::Softirq),
            ("handle_softirqs", Category::Softirq),
            ("net_rx_action", Category::Softirq),
            ("__napi_poll", Category::DriverNapi),
            ("virtnet_poll [virtio_net]", Category::DriverNapi),
            ("loopback_xmit", Category::DriverNapi),
            ("__dev_queue_xmit", Category::DriverNapi),
            ("dev_gro_receive", Category::DriverNapi),
            ("tcp4_gro_receive", Category::DriverNapi),
            ("asm_common_interrupt", Category::Interrupts),
            ("__sysvec_apic_timer_interrupt", Category::Interrupts),
            ("__schedule", Category::Scheduler),
            ("try_to_wake_up", Category::Scheduler),
            ("finish_task_switch.isra.0", Category::Scheduler),
            ("entry_SYSCALL_64", Category::Syscall),
            ("__x64_sys_sendto", Category::Syscall),
            ("syscall_exit_to_user_mode", Category::Syscall),
            ("kmem_cache_alloc_node", Category::Memory),
            ("__alloc_skb", Category::Memory),
            ("kfree_skb_reason", Category::Memory),
            ("__udp4_lib_rcv", Category::Udp),
            ("udp_sendmsg", Category::Udp),
            ("udpv6_sendmsg", Category::Udp),
            ("__udp_enqueue_schedule_skb", Category::Udp),
            ("udp4_gro_receive", Category::DriverNapi),
            ("tcp_sendmsg_locked", Category::TcpIp),
            ("tcp_ack", Category::TcpIp),
            ("__ip_queue_xmit", Category::TcpIp),
            ("ip_finish_output2", Category::TcpIp),
            ("inet_recvmsg", Category::TcpIp),
            ("sock_recvmsg", Category::TcpIp),
            ("skb_release_data", Category::Memory),
            ("perf_event_task_tick", Category::Scheduler),
            ("strlen", Category::Other),
        ];
        for (name, want) in cases {
            assert_eq!(categorize(name), want, "{name}");
        }
        assert!(is_idle("pv_native_safe_halt"));
        assert!(is_idle("default_idle"));
        assert!(!is_idle("net_rx_action"));
    }

    const SYMS: &str = "\
ffffffff81000000 T pv_native_safe_halt
ffffffff81001000 T rep_movs_alternative
ffffffff81002000 T tcp_sendmsg_locked
ffffffff81003000 T net_rx_action
ffffffff81004000 T __x64_sys_sendto
";

    fn sample(t: u64, ip: u64, pid: u32, cpu: u32, user: bool, chain: (u32, u16)) -> RawSample {
        RawSample {
            time_ns: t,
            ip,
            pid,
            tid: pid,
            cpu,
            user,
            chain,
        }
    }

    fn fixture() -> RawSamples {
        let mut raw = RawSamples {
            cpus: vec![0, 1],
            ..Default::default()
        };
        raw.comms.insert(0, "swapper".into());
        raw.comms.insert(42, "linerate".into());
        // frames: sendto -> tcp_sendmsg_locked -> rep_movs (innermost first).
        raw.frames = vec![0xffffffff81001010, 0xffffffff81002010, 0xffffffff81004010];
        let copy = 0xffffffff81001010;
        let mut s = Vec::new();
        // CPU 0: 6 copy, 2 tcp, 2 user (of linerate); CPU 1: 8 idle, 1 softirq in the idle
        // task, 1 unknown kernel. One sample outside the window.
        for t in 0..6 {
            s.push(sample(100 + t, copy, 42, 0, false, (0, 3)));
        }
        for t in 0..2 {
            s.push(sample(200 + t, 0xffffffff81002100, 42, 0, false, (1, 2)));
            s.push(sample(300 + t, 0x5555_0000, 42, 0, true, (0, 0)));
        }
        for t in 0..8 {
            s.push(sample(100 + t, 0xffffffff81000010, 0, 1, false, (0, 0)));
        }
        s.push(sample(150, 0xffffffff81003010, 0, 1, false, (0, 0)));
        s.push(sample(160, 0x10, 0, 1, false, (0, 0)));
        s.push(sample(5000, copy, 42, 0, false, (0, 3)));
        raw.samples = s;
        raw
    }

    #[test]
    fn a_profile_counts_shares_of_busy_samples_and_idle_apart() {
        let syms = Kallsyms::parse(SYMS);
        let spec = ProfileSpec {
            frequency_hz: 999,
            callchains: true,
        };
        let p = build(&fixture(), &syms, spec, 0, 1000);
        assert_eq!(p.samples, 20);
        assert_eq!(p.idle_samples, 8);
        assert_eq!(p.busy_samples(), 12);
        assert_eq!(p.idle_percent, 40.0);
        assert_eq!((p.kernel_samples, p.user_samples), (10, 2));
        assert_eq!(p.unresolved_samples, 1);
        assert_eq!(p.top[0].name, "rep_movs_alternative");
        assert_eq!(p.top[0].samples, 6);
        assert_eq!(p.top[0].busy_percent, 50.0);
        assert_eq!(p.category_percent(Category::DataCopy), 50.0);
        assert!((p.category_percent(Category::UserSpace) - 100.0 * 2.0 / 12.0).abs() < 1e-9);
        let total: f64 = p.categories.iter().map(|c| c.busy_percent).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
        assert_eq!(p.processes.len(), 2);
        assert_eq!(
            (p.processes[0].comm.as_str(), p.processes[0].samples),
            ("linerate", 10)
        );
        assert_eq!(
            (p.processes[1].comm.as_str(), p.processes[1].samples),
            ("swapper", 2)
        );
        assert_eq!(p.per_cpu.len(), 2);
        assert_eq!(p.per_cpu[1].idle_samples, 8);
        assert_eq!(p.per_cpu[1].samples, 10);
        assert_eq!(
            p.per_cpu[0].top_function.as_deref(),
            Some("rep_movs_alternative")
        );
        assert_eq!(p.check(), Ok(()));
        // Folded: outermost first, the process name on top.
        let text = folded_text(&p);
        assert!(
            text.contains("linerate;__x64_sys_sendto;tcp_sendmsg_locked;rep_movs_alternative 6\n"),
            "{text}"
        );
        assert!(text.contains("linerate;[user] linerate 2\n"), "{text}");
        assert!(text.contains("swapper;net_rx_action 1\n"), "{text}");
        assert_eq!(p.folded.iter().map(|f| f.samples).sum::<u64>(), 12);
    }

    #[test]
    fn an_empty_window_has_no_shares_and_says_so() {
        let syms = Kallsyms::parse(SYMS);
        let spec = ProfileSpec {
            frequency_hz: 99,
            callchains: false,
        };
        let p = build(&fixture(), &syms, spec, 10_000, 20_000);
        assert_eq!(p.samples, 0);
        assert_eq!(
            (p.start_monotonic_ns, p.duration_ns),
            (Some(10_000), 10_000)
        );
        assert!(p.top.is_empty() && p.categories.is_empty() && p.folded.is_empty());
        assert_eq!(p.idle_percent, 0.0);
        assert!(p.warnings.iter().any(|w| w.contains("no samples")));
        assert_eq!(p.check(), Ok(()));
    }
}
