//! The counters an RR stream publishes while it runs ([`RrCounters`], relaxed atomics that
//! only the stream's own thread writes), what its loop writes them through ([`LoopCtx`]),
//! and a reading of them at one instant ([`CounterSnapshot`]) that the meter and the final
//! report subtract.

use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use linerate_wire::control::RrSpec;

use crate::engine::meter::ThreadCpu;

/// Counters one stream publishes while it runs.
#[derive(Debug, Default)]
pub struct RrCounters {
    /// Completed transactions (client: full response received; server: response sent).
    pub transactions: AtomicU64,
    /// Payload bytes written.
    pub tx_bytes: AtomicU64,
    /// Payload bytes read.
    pub rx_bytes: AtomicU64,
    /// Write calls.
    pub tx_calls: AtomicU64,
    /// Read calls.
    pub rx_calls: AtomicU64,
    /// UDP client: requests whose response did not arrive within the time-out.
    pub lost: AtomicU64,
    /// UDP client: responses that came after their request had timed out.
    pub late: AtomicU64,
    /// TCP_CRR: connections opened (client) or served (server).
    pub connections: AtomicU64,
    /// Failed connects or connections closed early (TCP_CRR).
    pub errors: AtomicU64,
    /// Nanoseconds after the epoch of the last completed transaction, plus one.
    pub last_ns: AtomicU64,
    /// The loop has ended.
    pub done: AtomicBool,
    /// Thread CPU at the warm-up boundary.
    pub cpu_at_baseline: ThreadCpu,
}

impl RrCounters {
    /// Every counter now.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            transactions: self.transactions.load(Relaxed),
            tx_bytes: self.tx_bytes.load(Relaxed),
            rx_bytes: self.rx_bytes.load(Relaxed),
            tx_calls: self.tx_calls.load(Relaxed),
            rx_calls: self.rx_calls.load(Relaxed),
            lost: self.lost.load(Relaxed),
            late: self.late.load(Relaxed),
            connections: self.connections.load(Relaxed),
            errors: self.errors.load(Relaxed),
        }
    }
}

/// The counters of [`RrCounters`] at one instant (or the difference of two readings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Completed transactions.
    pub transactions: u64,
    /// Payload bytes written.
    pub tx_bytes: u64,
    /// Payload bytes read.
    pub rx_bytes: u64,
    /// Write calls.
    pub tx_calls: u64,
    /// Read calls.
    pub rx_calls: u64,
    /// Lost transactions (UDP client).
    pub lost: u64,
    /// Late responses (UDP client).
    pub late: u64,
    /// TCP_CRR connections.
    pub connections: u64,
    /// Failed or cut TCP_CRR connections.
    pub errors: u64,
}

impl CounterSnapshot {
    /// What each counter grew by since `earlier` (0 where it did not).
    pub fn since(&self, earlier: &CounterSnapshot) -> CounterSnapshot {
        CounterSnapshot {
            transactions: self.transactions.saturating_sub(earlier.transactions),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_calls: self.tx_calls.saturating_sub(earlier.tx_calls),
            rx_calls: self.rx_calls.saturating_sub(earlier.rx_calls),
            lost: self.lost.saturating_sub(earlier.lost),
            late: self.late.saturating_sub(earlier.late),
            connections: self.connections.saturating_sub(earlier.connections),
            errors: self.errors.saturating_sub(earlier.errors),
        }
    }

    fn add(&self, o: &CounterSnapshot) -> CounterSnapshot {
        CounterSnapshot {
            transactions: self.transactions + o.transactions,
            tx_bytes: self.tx_bytes + o.tx_bytes,
            rx_bytes: self.rx_bytes + o.rx_bytes,
            tx_calls: self.tx_calls + o.tx_calls,
            rx_calls: self.rx_calls + o.rx_calls,
            lost: self.lost + o.lost,
            late: self.late + o.late,
            connections: self.connections + o.connections,
            errors: self.errors + o.errors,
        }
    }
}

/// Every stream's counters at one instant, in stream order.
pub type Snap = Vec<CounterSnapshot>;

/// What all streams' counters grew by from `earlier` to `now`, each stream on its own (a
/// stream's counter never counts against another's).
pub fn total_since(now: &[CounterSnapshot], earlier: &[CounterSnapshot]) -> CounterSnapshot {
    now.iter()
        .zip(earlier)
        .fold(CounterSnapshot::default(), |acc, (n, e)| {
            acc.add(&n.since(e))
        })
}

/// What a loop needs; built by the engine, one per stream.
pub struct LoopCtx {
    /// Engine epoch.
    pub epoch: Instant,
    /// This stream's counters.
    pub counters: Arc<RrCounters>,
    /// Set to stop: no transaction starts after it.
    pub stop: Arc<AtomicBool>,
    /// Set to end the waits of the transactions under way (their reads and writes give
    /// up): on a server the stop flag itself; on a client set after the stop, once the
    /// transactions under way finished or [`super::engine::DRAIN`] passed.
    pub cut: Arc<AtomicBool>,
    /// Set by the meter when the warm-up is over.
    pub baseline: Arc<AtomicBool>,
    /// The test.
    pub spec: RrSpec,
    /// This stream's share of the target rate, transactions per second.
    pub rate_tps: Option<u64>,
    /// The TCP_CRR connection this loop waits on, for the engine's watchdog.
    pub watch: Arc<super::watch::Watch>,
}

#[cfg(test)]
impl LoopCtx {
    /// A TCP_CRR stream's context for unit tests of the loops: `request_bytes` and
    /// `response_bytes`, unpaced, measuring from the start, with its own watch.
    pub fn crr_for_test(request_bytes: u32, response_bytes: u32) -> LoopCtx {
        let stop = Arc::new(AtomicBool::new(false));
        LoopCtx {
            epoch: Instant::now(),
            counters: Arc::new(RrCounters::default()),
            cut: stop.clone(),
            stop,
            baseline: Arc::new(AtomicBool::new(true)),
            spec: RrSpec {
                request_bytes,
                response_bytes,
                burst: 1,
                connect_per_transaction: true,
                udp: false,
                timeout_ms: 0,
                target_tps: None,
                bounceback: None,
            },
            rate_tps: None,
            watch: Arc::default(),
        }
    }
}

impl LoopCtx {
    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// True once the warm-up is over (latencies are recorded from then on).
    pub fn measuring(&self) -> bool {
        self.baseline.load(Relaxed)
    }

    /// Saves the thread's CPU time once, at the warm-up boundary.
    #[inline]
    pub fn check_baseline(&self, taken: &mut bool) {
        self.counters
            .cpu_at_baseline
            .save_once(&self.baseline, taken);
    }

    /// Records `n` completed transactions, the last at `at_ns` (a time the loop already
    /// read, so that counting costs no extra clock read).
    pub fn completed(&self, n: u64, at_ns: u64) {
        bump(&self.counters.transactions, n);
        self.counters.last_ns.store(at_ns + 1, Relaxed);
    }

    /// Counts one write of `bytes`.
    pub fn wrote(&self, bytes: usize) {
        bump(&self.counters.tx_bytes, bytes as u64);
        bump(&self.counters.tx_calls, 1);
    }

    /// Counts one read of `bytes`.
    pub fn read(&self, bytes: usize) {
        bump(&self.counters.rx_bytes, bytes as u64);
        bump(&self.counters.rx_calls, 1);
    }
}

/// Adds `n` to a counter that only the calling thread writes: a plain load and store
/// (no locked read-modify-write on the data path); readers see whole values.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_subtract_per_stream_and_counter() {
        let c = RrCounters::default();
        bump(&c.transactions, 5);
        bump(&c.tx_bytes, 500);
        bump(&c.lost, 1);
        let a = c.snapshot();
        bump(&c.transactions, 3);
        bump(&c.rx_bytes, 70);
        bump(&c.errors, 2);
        let b = c.snapshot();
        let d = b.since(&a);
        assert_eq!(
            d,
            CounterSnapshot {
                transactions: 3,
                rx_bytes: 70,
                errors: 2,
                ..CounterSnapshot::default()
            }
        );
        // A counter that went backwards (a stream restarted) counts 0, and streams add up.
        assert_eq!(a.since(&b).transactions, 0);
        let other = CounterSnapshot {
            transactions: 10,
            ..CounterSnapshot::default()
        };
        let total = total_since(&[b, other], &[a, CounterSnapshot::default()]);
        assert_eq!(total.transactions, 13);
        assert_eq!(total.rx_bytes, 70);
    }
}
