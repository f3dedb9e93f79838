//! Where one end's CPU time went during a test's measured window (`--profile`, feature
//! `profile`): a sampled profile of every CPU of that end, kernel and user space, with the
//! top functions and the same samples grouped into categories. Each end builds its own; the
//! server's travels in its [`crate::report::SideReport`], so everything here is bounded
//! ([`ProfileReport::check`]) before a client keeps it.
//!
//! Shares: `idle_samples` are the samples that found a CPU in its idle loop. Every share of
//! a function or category is of the *busy* samples (`samples - idle_samples`), so they add
//! up to at most 100 % and idle does not dilute them; `idle_percent` is idle's share of all
//! samples.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most functions in a profile's top list.
pub const MAX_TOP: usize = 50;
/// Most processes in a profile's list.
pub const MAX_PROCESSES: usize = 32;
/// Most CPUs a profile describes.
pub const MAX_CPUS: usize = 1024;
/// Most folded stacks a profile carries (the largest; the rest are counted in
/// [`ProfileReport::folded_left_out_samples`]).
pub const MAX_FOLDED: usize = 1000;
/// Longest function name, bytes.
pub const MAX_NAME: usize = 256;
/// Longest folded stack, bytes.
pub const MAX_STACK: usize = 2048;
/// Most warnings of one profile.
pub const MAX_WARNINGS: usize = 16;
/// Longest warning, bytes.
pub const MAX_WARNING: usize = 512;
/// Highest sampling frequency a test may ask for, Hz.
pub const MAX_FREQUENCY_HZ: u32 = 10_000;

/// What a test asks each end to profile (`TestSpec::profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileSpec {
    /// Samples per second per CPU (1..=[`MAX_FREQUENCY_HZ`]).
    pub frequency_hz: u32,
    /// Record kernel call chains and return folded stacks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub callchains: bool,
}

/// What an engineer calls the work a function does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Copying data between user space and the kernel, or within the kernel.
    DataCopy,
    /// TCP and IP protocol processing (also sockets and the TCP/IP send and receive paths).
    TcpIp,
    /// UDP protocol processing.
    Udp,
    /// Network device drivers, NAPI polling, the device layer (`dev_*`, `netif_*`, GRO).
    DriverNapi,
    /// Softirq entry and handling (`__do_softirq`, `net_rx_action`, `ksoftirqd`).
    Softirq,
    /// Hardware interrupts and their entry.
    Interrupts,
    /// The scheduler: context switches, wake-ups, timers.
    Scheduler,
    /// Spinlocks, mutexes and other locking.
    Locking,
    /// Memory allocation and freeing (slab, pages, skb memory).
    Memory,
    /// System call entry and exit.
    Syscall,
    /// Code running in user space (grouped by process name).
    UserSpace,
    /// Anything else.
    Other,
}

impl Category {
    /// Every category, in the order tables print them.
    pub const ALL: [Category; 12] = [
        Category::DataCopy,
        Category::TcpIp,
        Category::Udp,
        Category::DriverNapi,
        Category::Softirq,
        Category::Interrupts,
        Category::Scheduler,
        Category::Locking,
        Category::Memory,
        Category::Syscall,
        Category::UserSpace,
        Category::Other,
    ];

    /// The name tables print.
    pub fn label(self) -> &'static str {
        match self {
            Category::DataCopy => "data copy",
            Category::TcpIp => "TCP/IP",
            Category::Udp => "UDP",
            Category::DriverNapi => "driver and NAPI",
            Category::Softirq => "softirq",
            Category::Interrupts => "interrupts",
            Category::Scheduler => "scheduler",
            Category::Locking => "locking",
            Category::Memory => "memory",
            Category::Syscall => "system calls",
            Category::UserSpace => "user space",
            Category::Other => "other",
        }
    }
}

/// One function's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionShare {
    /// The kernel symbol (`name [module]` for a module's), or `[user] COMM` for user-space
    /// samples of process COMM, or `[unknown kernel]` for an address no symbol covers.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// Samples whose instruction pointer was in it.
    pub samples: u64,
    /// `samples` as a share of the busy samples.
    pub busy_percent: f64,
}

/// One process's busy samples (by its name, `comm`; the idle task's work for others, such as
/// softirqs that arrive while a CPU idles, is `swapper`'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessShare {
    /// The process name.
    pub comm: String,
    /// Its busy samples, kernel and user space.
    pub samples: u64,
    /// `samples` as a share of the busy samples.
    pub busy_percent: f64,
}

/// One category's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CategoryShare {
    /// The category.
    pub category: Category,
    /// Samples in it.
    pub samples: u64,
    /// `samples` as a share of the busy samples.
    pub busy_percent: f64,
}

/// One CPU's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuProfile {
    /// The CPU's number.
    pub cpu: u32,
    /// All samples on it.
    pub samples: u64,
    /// Samples that found it idle.
    pub idle_samples: u64,
    /// Its busy samples by category, largest first (categories without samples left out).
    pub categories: Vec<CategoryShare>,
    /// The function with most busy samples on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_function: Option<String>,
}

/// One folded call stack (`outer;...;inner`, the format of flamegraph.pl and inferno).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FoldedStack {
    /// Frames from the outermost to the sampled function, joined by `;`.
    pub stack: String,
    /// Samples with this stack.
    pub samples: u64,
}

/// One end's profile over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileReport {
    /// The perf event sampled (`cpu-clock`: a software timer, works without hardware
    /// counters).
    pub event: String,
    /// Samples per second per CPU that were asked for.
    pub frequency_hz: u32,
    /// Length of the window the samples are from, ns.
    pub duration_ns: u64,
    /// Where the window starts on this end's `CLOCK_MONOTONIC`, ns: the clock its samples
    /// are stamped with, and `perf record -k CLOCK_MONOTONIC`'s, so another tool's samples
    /// can be cut to the same window (`perf report --time`). Absent from older peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_monotonic_ns: Option<u64>,
    /// Samples in the window, all CPUs.
    pub samples: u64,
    /// Of those, samples that found their CPU idle.
    pub idle_samples: u64,
    /// Idle's share of all samples.
    pub idle_percent: f64,
    /// Busy samples in the kernel.
    pub kernel_samples: u64,
    /// Busy samples in user space.
    pub user_samples: u64,
    /// Samples the kernel could not write because the ring buffer was full
    /// (PERF_RECORD_LOST): they are in no figure here.
    pub lost_samples: u64,
    /// Kernel samples whose address no symbol covered (counted as `[unknown kernel]`).
    pub unresolved_samples: u64,
    /// The busiest functions, largest first (at most [`MAX_TOP`]).
    pub top: Vec<FunctionShare>,
    /// All busy samples by category, largest first (categories without samples left out).
    pub categories: Vec<CategoryShare>,
    /// Busy samples by process, largest first (at most [`MAX_PROCESSES`]): the profile is of
    /// the whole host, so this tells linerate's share from other work's.
    #[serde(default)]
    pub processes: Vec<ProcessShare>,
    /// Per CPU, by CPU number.
    pub per_cpu: Vec<CpuProfile>,
    /// With call chains: the largest folded stacks (kernel frames, user space as one frame
    /// `[user] COMM`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<FoldedStack>,
    /// Samples of the stacks left out of `folded` by its cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded_left_out_samples: u64,
    /// What is missing or doubtful in this profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl ProfileReport {
    /// Busy samples (all samples less idle ones).
    pub fn busy_samples(&self) -> u64 {
        self.samples.saturating_sub(self.idle_samples)
    }

    /// A category's busy share, 0 when it has no samples.
    pub fn category_percent(&self, c: Category) -> f64 {
        self.categories
            .iter()
            .find(|s| s.category == c)
            .map_or(0.0, |s| s.busy_percent)
    }

    /// Whether a peer's profile keeps every cap and its counts and shares can be true:
    /// `Err` says what is wrong (the receiver leaves the profile out).
    pub fn check(&self) -> Result<(), String> {
        let busy = self.busy_samples();
        let too_long = |what: &str, n: usize, cap: usize| {
            if n > cap {
                Err(format!("{n} {what} (at most {cap})"))
            } else {
                Ok(())
            }
        };
        too_long("functions", self.top.len(), MAX_TOP)?;
        too_long("CPUs", self.per_cpu.len(), MAX_CPUS)?;
        too_long("processes", self.processes.len(), MAX_PROCESSES)?;
        too_long("folded stacks", self.folded.len(), MAX_FOLDED)?;
        too_long("warnings", self.warnings.len(), MAX_WARNINGS)?;
        too_long("bytes of event name", self.event.len(), MAX_NAME)?;
        if self.idle_samples > self.samples
            || self.kernel_samples.saturating_add(self.user_samples) > busy
            || self.unresolved_samples > self.kernel_samples
        {
            return Err("sample counts that do not add up".into());
        }
        if self.frequency_hz == 0 || self.frequency_hz > MAX_FREQUENCY_HZ {
            return Err(format!("a frequency of {} Hz", self.frequency_hz));
        }
        let pct_ok = |p: f64| p.is_finite() && (0.0..=100.0 + 1e-6).contains(&p);
        if !pct_ok(self.idle_percent) {
            return Err(format!("an idle share of {}%", self.idle_percent));
        }
        for f in &self.top {
            too_long("bytes of function name", f.name.len(), MAX_NAME)?;
            if f.samples > busy || !pct_ok(f.busy_percent) {
                return Err(format!(
                    "function figures that cannot be true ({})",
                    f.samples
                ));
            }
        }
        let mut sum = 0u64;
        for c in &self.categories {
            sum = sum.saturating_add(c.samples);
            if !pct_ok(c.busy_percent) {
                return Err(format!("a category share of {}%", c.busy_percent));
            }
        }
        if sum > busy {
            return Err("categories with more samples than the busy ones".into());
        }
        for p in &self.processes {
            too_long("bytes of process name", p.comm.len(), MAX_NAME)?;
            if p.samples > busy || !pct_ok(p.busy_percent) {
                return Err(format!(
                    "process figures that cannot be true ({})",
                    p.samples
                ));
            }
        }
        for c in &self.per_cpu {
            if c.idle_samples > c.samples || c.categories.len() > Category::ALL.len() {
                return Err(format!("CPU {}'s figures that cannot be true", c.cpu));
            }
            if c.categories.iter().any(|s| !pct_ok(s.busy_percent)) {
                return Err(format!("CPU {}'s shares above 100%", c.cpu));
            }
            if let Some(t) = &c.top_function {
                too_long("bytes of function name", t.len(), MAX_NAME)?;
            }
        }
        for s in &self.folded {
            too_long("bytes of folded stack", s.stack.len(), MAX_STACK)?;
        }
        for w in &self.warnings {
            too_long("bytes of warning", w.len(), MAX_WARNING)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> ProfileReport {
        ProfileReport {
            event: "cpu-clock".into(),
            frequency_hz: 999,
            duration_ns: 1_000_000_000,
            start_monotonic_ns: Some(12_345_000_000),
            samples: 2000,
            idle_samples: 1000,
            idle_percent: 50.0,
            kernel_samples: 900,
            user_samples: 100,
            lost_samples: 0,
            unresolved_samples: 0,
            top: vec![FunctionShare {
                name: "copy_user_enhanced_fast_string".into(),
                category: Category::DataCopy,
                samples: 600,
                busy_percent: 60.0,
            }],
            categories: vec![CategoryShare {
                category: Category::DataCopy,
                samples: 600,
                busy_percent: 60.0,
            }],
            processes: vec![],
            per_cpu: vec![],
            folded: vec![],
            folded_left_out_samples: 0,
            warnings: vec![],
        }
    }

    #[test]
    fn a_real_profile_passes_and_bad_ones_do_not() {
        let p = sample();
        assert_eq!(p.check(), Ok(()));
        assert_eq!(p.busy_samples(), 1000);
        assert_eq!(p.category_percent(Category::DataCopy), 60.0);
        assert_eq!(p.category_percent(Category::Udp), 0.0);
        let mut q = p.clone();
        q.top[0].busy_percent = 160.0;
        assert!(q.check().is_err());
        let mut q = p.clone();
        q.idle_samples = 3000;
        assert!(q.check().is_err());
        let mut q = p.clone();
        q.top[0].name = "x".repeat(MAX_NAME + 1);
        assert!(q.check().is_err());
        let mut q = p.clone();
        q.categories[0].samples = 5000;
        assert!(q.check().is_err());
        let mut q = p;
        q.frequency_hz = 0;
        assert!(q.check().is_err());
    }

    #[test]
    fn categories_serialize_in_snake_case() {
        assert_eq!(
            serde_json::to_string(&Category::DriverNapi).unwrap(),
            "\"driver_napi\""
        );
        assert_eq!(Category::ALL.len(), 12);
    }

    #[test]
    fn the_windows_start_round_trips_and_an_older_peer_may_leave_it_out() {
        let p = sample();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["start_monotonic_ns"], 12_345_000_000u64);
        assert_eq!(
            serde_json::from_value::<ProfileReport>(v.clone()).unwrap(),
            p
        );
        let mut old = v;
        old.as_object_mut().unwrap().remove("start_monotonic_ns");
        let q: ProfileReport = serde_json::from_value(old).unwrap();
        assert_eq!(q.start_monotonic_ns, None);
        assert_eq!(q.check(), Ok(()));
    }
}
