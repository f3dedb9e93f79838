//! `SeqTracker`: UDP receiver sequence accounting with iperf semantics.
//!
//! Reference: iperf3's receiver accounting (`iperf_udp_recv` in `src/iperf_udp.c` of
//! esnet/iperf): a datagram whose sequence number is below the highest seen so far is
//! counted as out of order and is *not* lost, so the loss count is
//! `highest sequence seen + 1 − distinct sequence numbers received`.
//! Unlike iperf3, duplicates are detected (and neither counted as reordered nor allowed to
//! cancel a loss).
//!
//! Sequence numbers start at 0. Duplicate detection uses a sliding bitmap of the
//! [`SEQ_WINDOW`] sequence numbers ending at the highest one seen (8 KiB per stream), so
//! memory is fixed whatever a peer sends — `seq = u64::MAX` included, with no overflow.
//! A datagram older than that window cannot be checked: it is counted as reordered and as
//! a distinct sequence number (so a very late *duplicate* would be miscounted as reordered
//! and would lower the loss count by one). At a 10 Gbit/s line rate of 64-byte datagrams
//! the window still spans several milliseconds of reordering.

use std::ops::{Add, AddAssign};

/// How many sequence numbers behind the highest one [`SeqTracker`] can check for
/// duplicates (a power of two, so the bitmap index survives `u64` wrap-around).
pub const SEQ_WINDOW: u64 = 1 << 16;

const WORDS: usize = (SEQ_WINDOW / 64) as usize;

/// A copy of a [`SeqTracker`]'s counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqCounts {
    /// Datagrams received, duplicates included.
    pub received: u64,
    /// Highest sequence seen + 1 − distinct sequence numbers received.
    pub lost: u64,
    /// Datagrams whose sequence number had already been received.
    pub duplicates: u64,
    /// Datagrams that arrived after a higher sequence number and were not duplicates.
    pub reordered: u64,
}

impl Add for SeqCounts {
    type Output = SeqCounts;

    /// Field-wise saturating sum, for totals over several streams.
    fn add(self, rhs: SeqCounts) -> SeqCounts {
        SeqCounts {
            received: self.received.saturating_add(rhs.received),
            lost: self.lost.saturating_add(rhs.lost),
            duplicates: self.duplicates.saturating_add(rhs.duplicates),
            reordered: self.reordered.saturating_add(rhs.reordered),
        }
    }
}

impl AddAssign for SeqCounts {
    fn add_assign(&mut self, rhs: SeqCounts) {
        *self = *self + rhs;
    }
}

/// Per-stream UDP receiver accounting; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// Highest sequence number seen; `None` before the first datagram.
    highest: Option<u64>,
    received: u64,
    /// Distinct sequence numbers received (within the limits of the window).
    distinct: u64,
    duplicates: u64,
    reordered: u64,
    /// Bit `s % SEQ_WINDOW` is set when `s` in `(highest − SEQ_WINDOW, highest]` was received.
    window: Box<[u64]>,
}

impl Default for SeqTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl SeqTracker {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        SeqTracker {
            highest: None,
            received: 0,
            distinct: 0,
            duplicates: 0,
            reordered: 0,
            window: vec![0u64; WORDS].into_boxed_slice(),
        }
    }

    fn slot(seq: u64) -> (usize, u64) {
        let idx = seq % SEQ_WINDOW;
        // idx < SEQ_WINDOW = 65536, so idx / 64 < WORDS and fits usize.
        ((idx / 64) as usize, 1u64 << (idx % 64))
    }

    fn test_and_set(&mut self, seq: u64) -> bool {
        let (w, bit) = Self::slot(seq);
        let was = self.window[w] & bit != 0;
        self.window[w] |= bit;
        was
    }

    /// Clears the bits of `count` sequence numbers starting at `start` (wrapping).
    fn clear_range(&mut self, start: u64, count: u64) {
        if count >= SEQ_WINDOW {
            self.window.iter_mut().for_each(|w| *w = 0);
            return;
        }
        let mut s = start;
        let mut left = count;
        while left > 0 {
            let idx = s % SEQ_WINDOW;
            let bit = idx % 64;
            let n = (64 - bit).min(left);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.window[(idx / 64) as usize] &= !mask;
            // SEQ_WINDOW divides 2^64, so wrapping keeps `s % SEQ_WINDOW` consistent.
            s = s.wrapping_add(n);
            left -= n;
        }
    }

    /// Accounts one datagram carrying sequence number `seq`.
    pub fn on_packet(&mut self, seq: u64) {
        self.received = self.received.saturating_add(1);
        let Some(highest) = self.highest else {
            self.highest = Some(seq);
            self.test_and_set(seq);
            self.distinct = 1;
            return;
        };
        if seq > highest {
            // Forget the slots that now fall out of the window: highest+1 ..= seq.
            // highest < seq <= u64::MAX, so highest + 1 does not overflow.
            self.clear_range(highest + 1, seq - highest);
            self.test_and_set(seq);
            self.highest = Some(seq);
            self.distinct = self.distinct.saturating_add(1);
        } else if highest - seq < SEQ_WINDOW {
            if self.test_and_set(seq) {
                self.duplicates = self.duplicates.saturating_add(1);
            } else {
                // seq == highest always has its bit set, so here seq < highest.
                self.reordered = self.reordered.saturating_add(1);
                self.distinct = self.distinct.saturating_add(1);
            }
        } else {
            // Older than the window: cannot tell a duplicate; documented as reordered.
            self.reordered = self.reordered.saturating_add(1);
            self.distinct = self.distinct.saturating_add(1);
        }
    }

    /// Datagrams received, duplicates included.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Highest sequence seen + 1 − distinct sequence numbers received; 0 before any datagram.
    pub fn lost(&self) -> u64 {
        match self.highest {
            None => 0,
            Some(h) => {
                // In u128 so that h = u64::MAX does not overflow; the result is at most
                // 2^64 − 1 because distinct >= 1 once a datagram has arrived.
                let expected = u128::from(h) + 1;
                let lost = expected.saturating_sub(u128::from(self.distinct));
                u64::try_from(lost).unwrap_or(u64::MAX)
            }
        }
    }

    /// Datagrams whose sequence number had already been received (within [`SEQ_WINDOW`]).
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Datagrams that arrived with a sequence number below the highest already seen and
    /// were not duplicates (including every datagram older than [`SEQ_WINDOW`]).
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// Highest sequence number seen, if any.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// All counters at once.
    pub fn snapshot(&self) -> SeqCounts {
        SeqCounts {
            received: self.received(),
            lost: self.lost(),
            duplicates: self.duplicates(),
            reordered: self.reordered(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(seqs: &[u64]) -> SeqCounts {
        let mut t = SeqTracker::new();
        for &s in seqs {
            t.on_packet(s);
        }
        t.snapshot()
    }

    #[test]
    fn empty_tracker_is_all_zero() {
        let t = SeqTracker::new();
        assert_eq!(t.snapshot(), SeqCounts::default());
        assert_eq!(t.highest(), None);
    }

    #[test]
    fn in_order_has_no_loss() {
        let c = feed(&[0, 1, 2, 3, 4]);
        assert_eq!(
            c,
            SeqCounts {
                received: 5,
                lost: 0,
                duplicates: 0,
                reordered: 0
            }
        );
    }

    #[test]
    fn gap_is_loss() {
        // Seen 0,1,4: highest 4 → expected 5, distinct 3 → lost 2 (seqs 2 and 3).
        let c = feed(&[0, 1, 4]);
        assert_eq!(c.lost, 2);
        assert_eq!(c.received, 3);
    }

    #[test]
    fn late_packet_is_reordered_and_not_lost() {
        // 0,2,1,3: 1 arrives after 2 → reordered 1; expected 4, distinct 4 → lost 0.
        let c = feed(&[0, 2, 1, 3]);
        assert_eq!(
            c,
            SeqCounts {
                received: 4,
                lost: 0,
                duplicates: 0,
                reordered: 1
            }
        );
    }

    #[test]
    fn duplicates_are_neither_reordered_nor_cancel_loss() {
        // 0,1,1,3,1,3: duplicates = second 1, third 1, second 3 → 3.
        // distinct {0,1,3} = 3, highest 3 → lost 4 − 3 = 1. reordered 0 (every older seq is
        // a duplicate).
        let c = feed(&[0, 1, 1, 3, 1, 3]);
        assert_eq!(
            c,
            SeqCounts {
                received: 6,
                lost: 1,
                duplicates: 3,
                reordered: 0
            }
        );
    }

    #[test]
    fn first_packet_not_zero_counts_earlier_as_lost() {
        // First seq 5: expected 6, distinct 1 → lost 5 (iperf counts from 0).
        let c = feed(&[5]);
        assert_eq!(c.lost, 5);
        // Then 2 arrives late: reordered, lost 6 − 2 = 4.
        let c = feed(&[5, 2]);
        assert_eq!(c.lost, 4);
        assert_eq!(c.reordered, 1);
    }

    #[test]
    fn u64_max_does_not_overflow_or_allocate() {
        // Highest u64::MAX, distinct 2 (0 and MAX) → lost = 2^64 − 2 = u64::MAX − 1.
        let c = feed(&[0, u64::MAX, u64::MAX]);
        assert_eq!(c.received, 3);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.lost, u64::MAX - 1);
        // A single u64::MAX: expected 2^64, distinct 1 → u64::MAX.
        assert_eq!(feed(&[u64::MAX]).lost, u64::MAX);
    }

    #[test]
    fn older_than_window_counts_as_reordered() {
        // 0 then SEQ_WINDOW + 10 pushes 0 out of the window; a repeated 0 can no longer be
        // recognised as a duplicate: documented as reordered and distinct.
        let far = SEQ_WINDOW + 10;
        let c = feed(&[0, far, 0]);
        assert_eq!(c.duplicates, 0);
        assert_eq!(c.reordered, 1);
        // distinct counted 3 → lost = far + 1 − 3.
        assert_eq!(c.lost, far + 1 - 3);
        // Just inside the window: highest − seq = SEQ_WINDOW − 1 is still checked.
        let edge = SEQ_WINDOW - 1;
        let c = feed(&[0, edge, 0]);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 0);
    }

    #[test]
    fn window_slots_are_cleared_when_advancing() {
        // Seq 3 is received, then the window slides by exactly SEQ_WINDOW so 3 + SEQ_WINDOW
        // reuses 3's slot: it must be new, not a duplicate.
        let c = feed(&[3, 3 + SEQ_WINDOW]);
        assert_eq!(c.duplicates, 0);
        // Small advance: 3 → 70 clears slots 4..=70 only; 3 is still there.
        let c = feed(&[3, 70, 3, 69]);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 1);
    }

    #[test]
    fn counts_add() {
        let a = SeqCounts {
            received: 1,
            lost: 2,
            duplicates: 3,
            reordered: 4,
        };
        let mut b = a + a;
        assert_eq!(
            b,
            SeqCounts {
                received: 2,
                lost: 4,
                duplicates: 6,
                reordered: 8
            }
        );
        b += SeqCounts {
            received: u64::MAX,
            ..SeqCounts::default()
        };
        assert_eq!(b.received, u64::MAX);
    }

    proptest! {
        #[test]
        fn matches_exact_model_within_window(seqs in proptest::collection::vec(0u64..2000, 0..400)) {
            prop_assert_eq!(feed(&seqs), model(&seqs));
        }

        #[test]
        fn matches_model_across_window_edges(seqs in proptest::collection::vec(
            prop_oneof![
                0u64..300,
                (SEQ_WINDOW - 200)..(SEQ_WINDOW + 300),
                (2 * SEQ_WINDOW + 100)..(2 * SEQ_WINDOW + 300),
            ],
            0..400,
        )) {
            prop_assert_eq!(feed(&seqs), model(&seqs));
        }

        #[test]
        fn matches_model_near_u64_max(seqs in proptest::collection::vec((u64::MAX - 300)..=u64::MAX, 1..200)) {
            prop_assert_eq!(feed(&seqs), model(&seqs));
        }

        #[test]
        fn arbitrary_input_never_panics(seqs in proptest::collection::vec(any::<u64>(), 0..200)) {
            let c = feed(&seqs);
            prop_assert_eq!(c.received, seqs.len() as u64);
            prop_assert!(c.duplicates + c.reordered < c.received.max(1));
        }
    }

    /// Reference model with plain sets and the documented window rule: a seq more than
    /// `SEQ_WINDOW − 1` below the highest counts as reordered and distinct, unchecked. The
    /// loss is computed in 128 bits so seqs near u64::MAX are exact.
    fn model(seqs: &[u64]) -> SeqCounts {
        let mut seen = std::collections::HashSet::new();
        let mut distinct: u128 = 0;
        let mut highest: Option<u64> = None;
        let mut c = SeqCounts::default();
        for &s in seqs {
            c.received += 1;
            match highest {
                Some(h) if h > s && h - s >= SEQ_WINDOW => {
                    c.reordered += 1;
                    distinct += 1;
                }
                _ => {
                    if !seen.insert(s) {
                        c.duplicates += 1;
                    } else {
                        distinct += 1;
                        if highest.is_some_and(|h| s < h) {
                            c.reordered += 1;
                        }
                    }
                }
            }
            highest = Some(highest.map_or(s, |h| h.max(s)));
        }
        let lost = highest.map_or(0u128, |h| (u128::from(h) + 1).saturating_sub(distinct));
        c.lost = u64::try_from(lost).unwrap();
        c
    }
}
