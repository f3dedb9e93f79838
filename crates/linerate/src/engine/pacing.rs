//! Pacing a sender to a target rate.
//!
//! [`Pacer`] is a pure schedule: it answers "how long until I may send `n` more bytes" from a
//! time it is given, so it is tested without sleeping. The schedule is anchored at the start
//! (`due = start + sent_bits / rate`), not at the last send, so short stalls are made up
//! instead of accumulating, while a long stall (more than `max_catch_up`) re-anchors the
//! schedule so that the sender never bursts far above the rate to "catch up".

use std::time::Duration;

/// A rate schedule over a monotonic clock expressed in nanoseconds since an origin.
#[derive(Debug, Clone)]
pub struct Pacer {
    rate_bps: u64,
    anchor_ns: u64,
    bits_since_anchor: u128,
    max_catch_up_ns: u64,
}

impl Pacer {
    /// A pacer at `rate_bps` bits per second, starting at `now_ns`.
    pub fn new(rate_bps: u64, now_ns: u64) -> Pacer {
        Pacer {
            rate_bps: rate_bps.max(1),
            anchor_ns: now_ns,
            bits_since_anchor: 0,
            max_catch_up_ns: 50_000_000,
        }
    }

    /// A pacer that never re-anchors: every send keeps its slot in the original schedule, so
    /// that a stall shows up as latency measured from the intended send time instead of being
    /// forgiven (request/response tests with a target rate; no coordinated omission).
    pub fn strict(rate_bps: u64, now_ns: u64) -> Pacer {
        Pacer {
            max_catch_up_ns: u64::MAX,
            ..Pacer::new(rate_bps, now_ns)
        }
    }

    /// A pacer that never bursts to make up for a stall: a sender more than `slack_ns` behind
    /// the schedule starts a fresh one, so the sends it missed are skipped and show as a lower
    /// achieved rate. RFC 2544 trials use it: a tester must not exceed the offered rate to
    /// catch up, or the device is blamed for the tester's burst.
    pub fn smooth(rate_bps: u64, now_ns: u64, slack_ns: u64) -> Pacer {
        Pacer {
            max_catch_up_ns: slack_ns,
            ..Pacer::new(rate_bps, now_ns)
        }
    }

    /// When the next send is due in the schedule, nanoseconds (it may be in the past).
    pub fn next_due_ns(&self) -> u64 {
        self.due_ns()
    }

    /// The rate, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Time at which everything recorded so far is due, nanoseconds.
    fn due_ns(&self) -> u64 {
        let ns = self.bits_since_anchor * 1_000_000_000 / u128::from(self.rate_bps);
        self.anchor_ns
            .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// How long to wait at `now_ns` before the next send may go out. Zero means send now.
    pub fn delay(&mut self, now_ns: u64) -> Duration {
        let due = self.due_ns();
        if now_ns > due.saturating_add(self.max_catch_up_ns) {
            // Far behind (the sender or the machine stalled): start a fresh schedule.
            self.anchor_ns = now_ns;
            self.bits_since_anchor = 0;
            return Duration::ZERO;
        }
        Duration::from_nanos(due.saturating_sub(now_ns))
    }

    /// Records that `bytes` went out.
    pub fn sent(&mut self, bytes: u64) {
        self.bits_since_anchor += u128::from(bytes) * 8;
    }

    /// A batch size (in datagrams of `datagram_bytes`) that sends about one batch per
    /// millisecond at this rate, between 1 and `max`.
    pub fn batch_for(&self, datagram_bytes: u32, max: usize) -> usize {
        let per_ms = self.rate_bps / 8 / 1000 / u64::from(datagram_bytes.max(1));
        usize::try_from(per_ms).unwrap_or(max).clamp(1, max.max(1))
    }
}

/// Waits for `d`: sleeps for the bulk and spins for the last stretch, so that sub-millisecond
/// pacing stays accurate without burning a core on long waits.
pub fn wait(d: Duration) {
    const SPIN: Duration = Duration::from_micros(60);
    if d > SPIN {
        std::thread::sleep(d - SPIN);
    }
    let end = std::time::Instant::now() + d.min(SPIN);
    while std::time::Instant::now() < end {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_anchored_at_start() {
        // 8 Mbit/s = 1 byte per µs. After 1000 bytes the next send is due at t = 1000 µs.
        let mut p = Pacer::new(8_000_000, 0);
        assert_eq!(p.delay(0), Duration::ZERO);
        p.sent(1000);
        assert_eq!(p.delay(400_000), Duration::from_micros(600));
        assert_eq!(p.delay(1_000_000), Duration::ZERO);
        p.sent(1000);
        // Due at 2000 µs; at 1500 µs wait 500 µs.
        assert_eq!(p.delay(1_500_000), Duration::from_micros(500));
    }

    #[test]
    fn short_stall_is_made_up_long_stall_re_anchors() {
        let mut p = Pacer::new(8_000_000, 0);
        p.sent(1000); // due at 1 ms
                      // 10 ms late: within the 50 ms catch-up, so the sender may send at once and the
                      // schedule keeps its anchor (it will send back-to-back until caught up).
        assert_eq!(p.delay(11_000_000), Duration::ZERO);
        p.sent(5000); // due at 6 ms, still behind at 11 ms
        assert_eq!(p.delay(11_000_000), Duration::ZERO);
        // 1 s late: re-anchor at now; the next 1000 bytes are due 1 ms after now.
        assert_eq!(p.delay(1_011_000_000), Duration::ZERO);
        p.sent(1000);
        assert_eq!(p.delay(1_011_000_000), Duration::from_millis(1));
    }

    #[test]
    fn long_run_average_rate_is_exact() {
        // Send 1250-byte chunks at 100 Mbit/s for simulated time; the bytes sent by the
        // time the schedule says 1 s must be 12.5 MB (100e6 / 8).
        let mut p = Pacer::new(100_000_000, 0);
        let mut now = 0u64;
        let mut bytes = 0u64;
        while now < 1_000_000_000 {
            let d = p.delay(now);
            if d.is_zero() {
                p.sent(1250);
                bytes += 1250;
            } else {
                now += d.as_nanos() as u64;
            }
        }
        assert_eq!(bytes, 12_500_000);
    }

    #[test]
    fn strict_schedule_never_re_anchors() {
        // 8 bit/s = one "byte" (one transaction) per second. After a 10 s stall the next
        // send is still due at 1 s: nothing is forgiven.
        let mut p = Pacer::strict(8, 0);
        p.sent(1);
        assert_eq!(p.next_due_ns(), 1_000_000_000);
        assert_eq!(p.delay(10_000_000_000), Duration::ZERO);
        assert_eq!(p.next_due_ns(), 1_000_000_000);
    }

    #[test]
    fn smooth_schedule_skips_instead_of_bursting() {
        // 8 Mbit/s, 1 ms slack. 2 ms late: re-anchored, the next 1000 bytes wait 1 ms.
        let mut p = Pacer::smooth(8_000_000, 0, 1_000_000);
        p.sent(1000); // due at 1 ms
        assert_eq!(p.delay(3_000_001), Duration::ZERO);
        p.sent(1000);
        assert_eq!(p.delay(3_000_001), Duration::from_millis(1));
        // Within the slack the schedule is kept: 0.5 ms late, send at once, then wait.
        let mut p = Pacer::smooth(8_000_000, 0, 1_000_000);
        p.sent(1000);
        assert_eq!(p.delay(1_500_000), Duration::ZERO);
        p.sent(1000);
        assert_eq!(p.delay(1_500_000), Duration::from_micros(500));
    }

    #[test]
    fn batch_size_tracks_rate() {
        // 1 Gbit/s of 1000-byte datagrams = 125 per ms.
        let p = Pacer::new(1_000_000_000, 0);
        assert_eq!(p.batch_for(1000, 64), 64);
        assert_eq!(p.batch_for(1000, 200), 125);
        let slow = Pacer::new(1_000, 0);
        assert_eq!(slow.batch_for(1000, 64), 1);
    }

    #[test]
    fn rfc2544_generator_schedule_from_10_kpps_to_1_mpps() {
        // 64-byte frames carry 18-byte payloads; the rate is payload bits. A smooth-paced
        // sender that always sends on time sends exactly the offered frames per second, in
        // batches of about 1 ms (at most 64 frames).
        for (pps, batch) in [(10_000u64, 10usize), (100_000, 64), (1_000_000, 64)] {
            let rate = pps * 18 * 8;
            let mut p = Pacer::smooth(rate, 0, 1_000_000);
            assert_eq!(p.batch_for(18, 64), batch, "{pps} pps");
            let (mut now, mut frames) = (0u64, 0u64);
            while now < 1_000_000_000 {
                let d = p.delay(now);
                if d.is_zero() {
                    let n = p.batch_for(18, 64) as u64;
                    p.sent(n * 18);
                    frames += n;
                } else {
                    now += d.as_nanos() as u64;
                }
            }
            // Everything due by 1 s went out; the last batch may start just before it.
            assert!(
                frames >= pps && frames <= pps + batch as u64,
                "{pps}: {frames}"
            );
        }
    }
}
