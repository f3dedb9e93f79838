//! `--profile` in the CPU verdicts: which categories and functions took the busy time of
//! the end a `cpu_bound` or `softirq_bound` verdict is about, as a sentence, the matching
//! advice and evidence that reads back from the profile (`profile_*` metrics, shares of the
//! busy samples, the same figures as the record's `profile` section).

use linerate_wire::profile::{Category, ProfileReport};

use super::{ev, pct, role_name};
use crate::diagnose::facts::End;
use crate::diagnose::Evidence;

/// A category must hold at least this share of the busy samples to be named as where the
/// time went.
pub const PROFILE_NAMED_PERCENT: f64 = 20.0;

/// What the profile adds to a CPU verdict.
pub(super) struct ProfileText {
    pub sentence: String,
    pub advice: String,
    pub evidence: Vec<Evidence>,
}

fn advice(c: Category) -> &'static str {
    match c {
        Category::DataCopy => {
            "The copy between user space and the kernel takes the time: try --zerocopy (TCP \
             send with MSG_ZEROCOPY) or --sendfile at the sender, --no-rx-copy at the \
             receiver, and larger writes (-l)."
        }
        Category::TcpIp | Category::Udp | Category::DriverNapi | Category::Softirq => {
            "Packet processing takes the time: keep GSO/GRO and TSO on, fewer larger packets \
             (jumbo frames), and spread it over CPUs (RSS/RPS, several streams -P)."
        }
        Category::Interrupts => {
            "Interrupts take the time: coalesce them (`ethtool -C IF rx-usecs N`) and spread \
             them (irqbalance, RSS)."
        }
        Category::Locking => {
            "Lock contention takes the time: fewer streams per socket and CPU, threads pinned \
             apart (-A)."
        }
        Category::Scheduler => {
            "Wake-ups and context switches take the time: larger writes (-l), threads pinned \
             (-A), or a busy-polling receive."
        }
        Category::Memory => {
            "Allocating and freeing buffers takes the time: larger writes (-l) and GRO make \
             fewer, larger buffers."
        }
        Category::Syscall => {
            "System call entry and exit take the time: larger writes (-l) make fewer calls."
        }
        Category::UserSpace | Category::Other => "",
    }
}

/// The profile's view of `e` for a CPU verdict; `cpu` narrows it to one CPU (a softirq-bound
/// CPU). `None` without a profile or busy samples.
pub(super) fn profile_text(e: &End<'_>, cpu: Option<u32>) -> Option<ProfileText> {
    let p: &ProfileReport = e.report.profile.as_ref()?;
    if p.busy_samples() == 0 {
        return None;
    }
    let who = role_name(e.role);
    let mut evidence = Vec::new();
    let (cats, scope) = match cpu.and_then(|c| p.per_cpu.iter().find(|x| x.cpu == c)) {
        Some(c) => (c.categories.clone(), format!("CPU {}'s", c.cpu)),
        None => (p.categories.clone(), format!("the {who}'s")),
    };
    let top = cats.first()?;
    let mut sentence = format!(
        " Profile: {} of {scope} busy samples were {}",
        pct(top.busy_percent),
        top.category.label()
    );
    evidence.push(ev(
        format!("profile_{}_percent", serde_name(top.category)),
        top.busy_percent,
        "percent_of_busy_samples",
        Some(">= 20"),
    ));
    if let Some(second) = cats.get(1) {
        sentence.push_str(&format!(
            ", {} {}",
            pct(second.busy_percent),
            second.category.label()
        ));
    }
    // The busiest function of the top category (overall list: per CPU there is one name).
    if let Some(f) = p.top.iter().find(|f| f.category == top.category) {
        sentence.push_str(&format!(
            " (top function {} with {} of all busy samples)",
            linerate_wire::text::escape(&f.name),
            pct(f.busy_percent)
        ));
        evidence.push(ev(
            "profile_top_function_percent",
            f.busy_percent,
            "percent_of_busy_samples",
            None,
        ));
    }
    sentence.push('.');
    // The profile covers the whole host: say how much was linerate's.
    let own: f64 = p
        .processes
        .iter()
        .filter(|s| s.comm.starts_with("linerate") || s.comm.starts_with("lr-"))
        .map(|s| s.busy_percent)
        .sum();
    if let Some(other) = p
        .processes
        .iter()
        .find(|s| {
            !(s.comm.starts_with("linerate") || s.comm.starts_with("lr-") || s.comm == "swapper")
        })
        .filter(|s| s.busy_percent >= PROFILE_NAMED_PERCENT)
    {
        sentence.push_str(&format!(
            " Other work on the host: {} took {} of the busy samples (linerate {}).",
            linerate_wire::text::escape(&other.comm),
            pct(other.busy_percent),
            pct(own)
        ));
        evidence.push(ev(
            "profile_other_process_percent",
            other.busy_percent,
            "percent_of_busy_samples",
            None,
        ));
    }
    let advice = if top.busy_percent >= PROFILE_NAMED_PERCENT {
        match top.category {
            Category::UserSpace if own < PROFILE_NAMED_PERCENT => {
                "Other processes' own code takes most of the time: stop them, or pin the test to other CPUs (-A)."
            }
            Category::UserSpace => {
                "linerate's own code takes most of the time: larger writes (-l) make fewer calls."
            }
            c => advice(c),
        }
    } else {
        ""
    };
    Some(ProfileText {
        sentence,
        advice: advice.to_string(),
        evidence,
    })
}

fn serde_name(c: Category) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".into())
}
