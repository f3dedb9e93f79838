//! The server's figures for monitoring (`serve --metrics ADDR`): counters and gauges the
//! sessions update as tests start, report intervals and end, read as a [`Snapshot`] that
//! `export::prom` renders in the Prometheus text format. Every figure is one a session
//! measured (its engine's intervals and final report); nothing is estimated.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use linerate_wire::report::{IntervalReport, SideReport};

/// Most running tests whose current figures are kept (the server's own `--max-tests` is
/// far lower; this only bounds the map if a session were never to end).
const MAX_CURRENT: usize = 4096;

/// The latest interval of a running test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Current {
    rx_bps: f64,
    tx_bps: f64,
    cpu_percent: Option<f64>,
}

/// The figures of the last test that finished, from its final report at this end.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LastTest {
    /// Received payload over the receiving window, bits per second (absent if nothing came).
    pub rx_bps: Option<f64>,
    /// Sent payload over the sending window, bits per second (absent if nothing was sent).
    pub tx_bps: Option<f64>,
    /// System-wide CPU over the measured window, percent of all CPUs.
    pub cpu_percent: Option<f64>,
    /// The busiest CPU's utilisation, percent of that CPU.
    pub busiest_cpu_percent: Option<f64>,
}

#[derive(Debug, Default)]
struct State {
    current: BTreeMap<String, Current>,
    last: Option<LastTest>,
}

/// What the sessions update (all of a server's sessions share one).
#[derive(Debug, Default)]
pub struct ServerMetrics {
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    errors: AtomicU64,
    rx_bytes: AtomicU64,
    tx_bytes: AtomicU64,
    state: Mutex<State>,
}

/// The figures at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Tests admitted (past the limits) since the server started.
    pub tests_started: u64,
    /// Tests that ran to their results.
    pub tests_completed: u64,
    /// Admitted tests that ended with an error.
    pub tests_failed: u64,
    /// Control sessions that ended with an error, refused ones included.
    pub errors: u64,
    /// Tests running now.
    pub tests_running: u64,
    /// Payload bytes received by all tests' streams, warm-up included.
    pub rx_bytes: u64,
    /// Payload bytes sent by all tests' streams, warm-up included.
    pub tx_bytes: u64,
    /// Received rate of the running tests' latest intervals together, bits per second.
    pub current_rx_bps: f64,
    /// Sent rate of the running tests' latest intervals together, bits per second.
    pub current_tx_bps: f64,
    /// System-wide CPU in a running test's latest interval (the highest if several run);
    /// absent when no test runs or none measured it.
    pub current_cpu_percent: Option<f64>,
    /// The last test that finished.
    pub last: Option<LastTest>,
}

fn rate(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0 && bytes > 0).then(|| bytes as f64 * 8e9 / ns as f64)
}

impl ServerMetrics {
    /// A test was admitted.
    pub fn test_started(&self) {
        self.started.fetch_add(1, Relaxed);
    }

    /// A running test's interval at this end.
    pub fn interval(&self, id: &str, iv: &IntervalReport) {
        self.rx_bytes.fetch_add(iv.rx_bytes, Relaxed);
        self.tx_bytes.fetch_add(iv.tx_bytes, Relaxed);
        let ns = iv.end_ns.saturating_sub(iv.start_ns);
        let cur = Current {
            rx_bps: rate(iv.rx_bytes, ns).unwrap_or(0.0),
            tx_bps: rate(iv.tx_bytes, ns).unwrap_or(0.0),
            cpu_percent: iv.cpu_percent,
        };
        if let Ok(mut s) = self.state.lock() {
            if s.current.len() < MAX_CURRENT || s.current.contains_key(id) {
                s.current.insert(id.to_string(), cur);
            }
        }
    }

    /// A test's final report at this end.
    pub fn test_finished(&self, report: &SideReport) {
        let t = &report.totals;
        let last = LastTest {
            rx_bps: rate(t.rx_bytes, t.rx_duration_ns),
            tx_bps: rate(t.tx_bytes, t.tx_duration_ns),
            cpu_percent: report.cpu.as_ref().map(|c| c.util_percent),
            busiest_cpu_percent: report.cpu.as_ref().map(|c| c.busiest_cpu_util_percent),
        };
        if let Ok(mut s) = self.state.lock() {
            s.last = Some(last);
        }
    }

    /// A control session ended: `test` when it was an admitted test, `ok` when it ended
    /// without an error.
    pub fn session_ended(&self, id: &str, test: bool, ok: bool) {
        if let Ok(mut s) = self.state.lock() {
            s.current.remove(id);
        }
        if !ok {
            self.errors.fetch_add(1, Relaxed);
        }
        if test {
            let c = if ok { &self.completed } else { &self.failed };
            c.fetch_add(1, Relaxed);
        }
    }

    /// The figures now.
    pub fn snapshot(&self) -> Snapshot {
        let (current, last) = match self.state.lock() {
            Ok(s) => (s.current.values().copied().collect::<Vec<_>>(), s.last),
            Err(_) => (Vec::new(), None),
        };
        let started = self.started.load(Relaxed);
        let completed = self.completed.load(Relaxed);
        let failed = self.failed.load(Relaxed);
        Snapshot {
            tests_started: started,
            tests_completed: completed,
            tests_failed: failed,
            errors: self.errors.load(Relaxed),
            tests_running: started.saturating_sub(completed + failed),
            rx_bytes: self.rx_bytes.load(Relaxed),
            tx_bytes: self.tx_bytes.load(Relaxed),
            current_rx_bps: current.iter().map(|c| c.rx_bps).sum(),
            current_tx_bps: current.iter().map(|c| c.tx_bps).sum(),
            current_cpu_percent: current
                .iter()
                .filter_map(|c| c.cpu_percent)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
            last,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_move_the_counters_and_gauges() {
        let m = ServerMetrics::default();
        m.test_started();
        m.test_started();
        let iv = IntervalReport {
            start_ns: 0,
            end_ns: 500_000_000,
            rx_bytes: 1_000_000,
            cpu_percent: Some(12.5),
            ..IntervalReport::default()
        };
        m.interval("a", &iv);
        m.interval("b", &iv);
        let s = m.snapshot();
        assert_eq!(s.tests_running, 2);
        assert_eq!(s.rx_bytes, 2_000_000);
        assert_eq!(s.current_rx_bps, 2.0 * 16e6);
        assert_eq!(s.current_cpu_percent, Some(12.5));
        m.session_ended("a", true, true);
        m.session_ended("b", true, false);
        m.session_ended("c", false, false);
        let s = m.snapshot();
        assert_eq!(
            (s.tests_running, s.tests_completed, s.tests_failed, s.errors),
            (0, 1, 1, 2)
        );
        assert_eq!(s.current_rx_bps, 0.0);
        assert_eq!(s.current_cpu_percent, None);
        // Bytes are counters: they stay.
        assert_eq!(s.rx_bytes, 2_000_000);
    }
}
