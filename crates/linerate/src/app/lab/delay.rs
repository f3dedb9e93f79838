//! `linerate lab up --delay D`: a delay line of linerate's own in the router namespace (this
//! kernel may have no netem). A TUN device `lrdelay` in `r` takes every packet that enters
//! `r` from `a` or `b` (policy routing: `ip rule iif VETH lookup 100`, table 100's default
//! route is the device); the delay line reads each one, holds it `D` from the moment it read
//! it, and writes it back, whereupon the kernel routes it on by the main table. One queue in
//! arrival order with one constant delay: packets leave in the order they came, each at an
//! absolute deadline (a CLOCK_MONOTONIC timerfd with TFD_TIMER_ABSTIME, timer slack 1 ns),
//! so the delay never drifts with the time the loop takes. The queue is bounded (packets and
//! bytes); what does not fit is dropped and counted.
//!
//! The line runs as `linerate lab delay-line NAME` in `r` (spawned by `lab up`, hidden from
//! `--help`); it writes its counters to [`stats_path`] and ends by itself when the lab's
//! router namespace is deleted or re-created (`lab down` also stops it).

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use linerate_lab::topology::{self, Topology};
use serde::{Deserialize, Serialize};

use crate::sys::tun;

/// The delay line's TUN device in the router namespace.
pub const DEVICE: &str = "lrdelay";
/// The routing table that sends what enters `r` to [`DEVICE`].
const TABLE: &str = "100";
/// Bytes held at most, whatever the packet bound.
pub const MAX_QUEUE_BYTES: usize = 64 << 20;

/// The delay line's counters, as written to [`stats_path`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayStats {
    /// The delay each packet is held, in nanoseconds.
    pub delay_ns: u64,
    /// The queue bound, in packets.
    pub queue_limit_packets: usize,
    /// Packets read from the device.
    pub received: u64,
    /// Packets written back after their delay.
    pub forwarded: u64,
    /// Packets dropped because the queue was full.
    pub dropped: u64,
    /// The most packets held at once.
    pub queued_max: usize,
    /// How late the latest-leaving packet left after its deadline (scheduler wake-up).
    pub late_max_ns: u64,
    /// Mean lateness over the forwarded packets.
    pub late_mean_ns: u64,
    /// Sum of the lateness, for the mean.
    #[serde(skip)]
    late_sum_ns: u128,
}

/// Packets in arrival order, each with the instant it may leave.
#[derive(Debug)]
pub struct DelayQueue {
    delay_ns: u64,
    limit_packets: usize,
    bytes: usize,
    queue: VecDeque<(u64, Vec<u8>)>,
    stats: DelayStats,
}

impl DelayQueue {
    /// An empty queue holding each packet `delay_ns`, at most `limit_packets` at once.
    pub fn new(delay_ns: u64, limit_packets: usize) -> DelayQueue {
        DelayQueue {
            delay_ns,
            limit_packets,
            bytes: 0,
            queue: VecDeque::new(),
            stats: DelayStats {
                delay_ns,
                queue_limit_packets: limit_packets,
                ..DelayStats::default()
            },
        }
    }

    /// Takes `packet`, read at `now_ns`; false (and counted) when the queue is full.
    pub fn push(&mut self, now_ns: u64, packet: &[u8]) -> bool {
        self.stats.received += 1;
        if self.queue.len() >= self.limit_packets || self.bytes + packet.len() > MAX_QUEUE_BYTES {
            self.stats.dropped += 1;
            return false;
        }
        // Deadlines never decrease, so the queue stays in arrival order.
        let at = self
            .queue
            .back()
            .map_or(0, |(t, _)| *t)
            .max(now_ns + self.delay_ns);
        self.bytes += packet.len();
        self.queue.push_back((at, packet.to_vec()));
        self.stats.queued_max = self.stats.queued_max.max(self.queue.len());
        true
    }

    /// The next deadline, if any packet is held.
    pub fn next_deadline(&self) -> Option<u64> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// Removes the oldest packet if its deadline has passed at `now_ns`, counting it forwarded.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        if self.next_deadline()? > now_ns {
            return None;
        }
        let (at, packet) = self.queue.pop_front()?;
        self.bytes -= packet.len();
        let late = now_ns - at;
        let s = &mut self.stats;
        s.forwarded += 1;
        s.late_max_ns = s.late_max_ns.max(late);
        s.late_sum_ns += u128::from(late);
        s.late_mean_ns = (s.late_sum_ns / u128::from(s.forwarded)) as u64;
        Some(packet)
    }

    /// The counters so far.
    pub fn stats(&self) -> &DelayStats {
        &self.stats
    }
}

/// Where the delay line of lab `name` keeps its counters.
pub fn stats_path(name: &str) -> PathBuf {
    PathBuf::from(format!("/run/linerate-lab/{name}.delay.json"))
}

fn write_stats(name: &str, stats: &DelayStats) {
    let path = stats_path(name);
    let tmp = path.with_extension("tmp");
    let Ok(text) = serde_json::to_string(stats) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// Sends what enters the router namespace from `a` or `b` to the device, and lets what the
/// device gives back be routed (and not refused by the reverse-path filter).
fn route_through_device(name: &str) -> anyhow::Result<()> {
    let plan = topology::plan(name, Topology::Router)?;
    let r = plan
        .hosts
        .iter()
        .find(|h| h.name == "r")
        .context("the router topology has no host r")?;
    let ip = |args: &[&str]| linerate_lab::cmd::run("ip", args).map(drop);
    ip(&["link", "set", "dev", DEVICE, "mtu", "65535", "up"])?;
    for iface in ["all", "default", DEVICE]
        .into_iter()
        .chain(r.ifaces.iter().map(|i| i.name.as_str()))
    {
        let f = format!("/proc/sys/net/ipv4/conf/{iface}/rp_filter");
        std::fs::write(&f, "0").with_context(|| format!("writing 0 to {f}"))?;
    }
    for family in ["-4", "-6"] {
        for iface in &r.ifaces {
            ip(&[family, "rule", "add", "iif", &iface.name, "table", TABLE])?;
        }
        ip(&[
            family, "route", "add", "default", "dev", DEVICE, "table", TABLE,
        ])?;
    }
    Ok(())
}

/// The namespace this process is in, as its inode: the line ends when the lab's namespace
/// file no longer names it (deleted or re-created).
fn own_netns_inode() -> Option<u64> {
    crate::sys::tun::netns_inode()
}

/// `linerate lab delay-line NAME`: runs the delay line in the router namespace this process
/// was started in, until that namespace is deleted. Prints `ready` once packets flow
/// through it.
pub fn run(name: &str, delay: Duration, limit_packets: usize) -> anyhow::Result<()> {
    let ns = topology::ns_name_for(name, "r");
    let mine = own_netns_inode();
    if mine.is_none() || mine != linerate_lab::netns::inode(&ns) {
        anyhow::bail!("the delay line must run in the lab's router namespace {ns}");
    }
    // Best effort: without it, the kernel's default 50 µs slack delays each wake-up.
    let _ = tun::tighten_timer_slack();
    let mut dev = tun::Tun::open(DEVICE)?;
    let timer = tun::Deadline::new()?;
    route_through_device(name)?;
    let mut queue = DelayQueue::new(delay.as_nanos() as u64, limit_packets);
    write_stats(name, queue.stats());
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;
    forward(name, &ns, mine, &mut dev, &timer, &mut queue)
}

/// The loop: read what arrived, write what is due, re-arm the timer at the next deadline,
/// and every so often write the counters and check the namespace still exists.
fn forward(
    name: &str,
    ns: &str,
    mine: Option<u64>,
    dev: &mut tun::Tun,
    timer: &tun::Deadline,
    queue: &mut DelayQueue,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 65_536];
    let mut last_check = tun::now_ns();
    let mut written = queue.stats().clone();
    loop {
        let ready = tun::wait(dev, timer, 200)?;
        if ready.packets {
            while let Some(n) = dev.recv(&mut buf)? {
                queue.push(tun::now_ns(), &buf[..n]);
            }
        }
        let now = tun::now_ns();
        while let Some(p) = queue.pop_due(now) {
            // A packet the kernel refuses (no route any more) is dropped as a router would.
            let _ = dev.send(&p);
        }
        match queue.next_deadline() {
            Some(at) => timer.arm(at)?,
            None => timer.disarm()?,
        }
        if now.saturating_sub(last_check) >= 200_000_000 {
            last_check = now;
            if *queue.stats() != written {
                written = queue.stats().clone();
                write_stats(name, &written);
            }
            if linerate_lab::netns::inode(ns) != mine {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_each_packet_its_delay_in_order() {
        let mut q = DelayQueue::new(10_000_000, 100);
        assert!(q.push(1_000, b"one"));
        assert!(q.push(2_000, b"two"));
        assert_eq!(q.next_deadline(), Some(10_001_000));
        assert_eq!(q.pop_due(10_000_999), None);
        assert_eq!(q.pop_due(10_001_500).as_deref(), Some(&b"one"[..]));
        assert_eq!(q.pop_due(10_001_500), None);
        assert_eq!(q.pop_due(10_002_000).as_deref(), Some(&b"two"[..]));
        let s = q.stats();
        assert_eq!((s.received, s.forwarded, s.dropped), (2, 2, 0));
        assert_eq!((s.late_max_ns, s.late_mean_ns), (500, 250));
        assert_eq!(s.queued_max, 2);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let mut q = DelayQueue::new(1_000, 2);
        assert!(q.push(0, b"a"));
        assert!(q.push(0, b"b"));
        assert!(!q.push(0, b"c"));
        assert_eq!(q.stats().dropped, 1);
        assert_eq!(q.pop_due(1_000).as_deref(), Some(&b"a"[..]));
        assert!(q.push(1_000, b"d"));
        assert_eq!(q.stats().received, 4);
        let big = vec![0u8; MAX_QUEUE_BYTES];
        let mut q = DelayQueue::new(1_000, 10);
        assert!(q.push(0, &big));
        assert!(
            !q.push(0, b"x"),
            "the byte bound holds whatever the packet bound"
        );
    }

    #[test]
    fn a_clock_step_back_never_reorders() {
        let mut q = DelayQueue::new(100, 10);
        q.push(1_000, b"first");
        q.push(900, b"second");
        assert_eq!(q.pop_due(1_100).as_deref(), Some(&b"first"[..]));
        assert_eq!(q.pop_due(1_100).as_deref(), Some(&b"second"[..]));
    }
}
