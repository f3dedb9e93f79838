//! When a client stream sends its next request: at once, or on the slots of a target rate
//! (`--rate`), keeping each request's intended send time so that stalls show in the latency.

use std::time::Duration;

use super::POLL;
use crate::engine::pacing::{self, Pacer};

/// The send schedule of one client stream: with a target rate, a strict [`Pacer`] (one
/// "byte" per transaction at 8 × tps bit/s) that never forgives a stall; without, "now".
pub struct Schedule {
    pacer: Option<Pacer>,
}

impl Schedule {
    /// A schedule for `rate_tps` (none: send as soon as allowed), starting at `now_ns`.
    pub fn new(rate_tps: Option<u64>, now_ns: u64) -> Schedule {
        Schedule {
            pacer: rate_tps.map(|r| Pacer::strict(r.saturating_mul(8).max(1), now_ns)),
        }
    }

    /// True with a target rate.
    pub fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// The intended send time of the next request if it may go at `now_ns` (and takes its
    /// slot), or `None` when it is not due yet.
    pub fn next(&mut self, now_ns: u64) -> Option<u64> {
        match self.pacer.as_mut() {
            None => Some(now_ns),
            Some(p) => {
                let due = p.next_due_ns();
                (due <= now_ns).then(|| {
                    p.sent(1);
                    due
                })
            }
        }
    }

    /// Nanoseconds until the next request is due (0 when due or unpaced).
    pub fn wait_ns(&self, now_ns: u64) -> u64 {
        self.pacer
            .as_ref()
            .map_or(0, |p| p.next_due_ns().saturating_sub(now_ns))
    }
}

/// Sleeps until the schedule's next slot, at most [`POLL`].
pub fn wait_for_slot(sched: &Schedule, now_ns: u64) {
    let w = Duration::from_nanos(sched.wait_ns(now_ns)).min(POLL);
    if !w.is_zero() {
        pacing::wait(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_keeps_slots_through_stalls() {
        // 1000 tps: slots every 1 ms from 0. A stall until 5.5 ms leaves slots 0..=5 due at
        // once, each with its own intended time; the next is due at 6 ms.
        let mut s = Schedule::new(Some(1000), 0);
        let due: Vec<u64> = std::iter::from_fn(|| s.next(5_500_000)).collect();
        assert_eq!(
            due,
            vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000]
        );
        assert_eq!(s.wait_ns(5_500_000), 500_000);
        let mut free = Schedule::new(None, 0);
        assert_eq!(free.next(42), Some(42));
        assert_eq!(free.wait_ns(42), 0);
    }
}
