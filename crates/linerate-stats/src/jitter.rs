//! `JitterEstimator`: RFC 3550 interarrival jitter.
//!
//! Reference: RFC 3550 (RTP), section 6.4.1 and Appendix A.8. For consecutive packets
//! *i* and *j* with send timestamps *S* and arrival times *R*,
//!
//! ```text
//! D(i,j) = (R_j − R_i) − (S_j − S_i)
//! J      = J + (|D(i,j)| − J) / 16
//! ```
//!
//! Differences of the sender's and the receiver's own clocks are taken separately, so
//! the two clocks need not be synchronised (a constant offset cancels). Times are
//! nanoseconds; `D` is computed in `i128` so any pair of `u64` timestamps is exact, and the
//! state `J` is an `f64` (RFC 3550 A.8 scales an integer by 16 instead; with `f64` no such
//! trick is needed). Packets are taken in arrival order, as in the RFC.

/// RFC 3550 interarrival jitter over one stream; see the [module docs](self).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JitterEstimator {
    /// (send, arrival) times of the previous packet.
    last: Option<(u64, u64)>,
    /// Current estimate, nanoseconds.
    jitter: f64,
    /// Packets seen, saturating.
    packets: u64,
}

impl JitterEstimator {
    /// An estimator that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accounts a packet sent at `tx_ns` (sender's clock) and received at `rx_ns`
    /// (receiver's clock).
    pub fn on_packet(&mut self, tx_ns: u64, rx_ns: u64) {
        if let Some((tx_i, rx_i)) = self.last {
            let d = (i128::from(rx_ns) - i128::from(rx_i)) - (i128::from(tx_ns) - i128::from(tx_i));
            // |d| < 2^65, exactly representable up to f64 rounding.
            let d = d.unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last = Some((tx_ns, rx_ns));
        self.packets = self.packets.saturating_add(1);
    }

    /// The jitter estimate in nanoseconds, rounded to the nearest; `None` before the second
    /// packet.
    pub fn jitter_ns(&self) -> Option<u64> {
        // `as` saturates on f64 → u64 and jitter is never negative or NaN.
        self.jitter_ns_f64().map(|j| j.round() as u64)
    }

    /// The unrounded estimate in nanoseconds; `None` before the second packet.
    pub fn jitter_ns_f64(&self) -> Option<f64> {
        (self.packets >= 2).then_some(self.jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn none_before_second_packet() {
        let mut j = JitterEstimator::new();
        assert_eq!(j.jitter_ns(), None);
        j.on_packet(0, 100);
        assert_eq!(j.jitter_ns(), None);
        j.on_packet(10, 110);
        assert_eq!(j.jitter_ns(), Some(0));
    }

    #[test]
    fn hand_computed_sequence() {
        // Sent every 10 ms; arrivals at 100, 112, 120, 135 ms (receiver clock offset 100 ms
        // cancels).
        // D2 = (112−100) − (10−0) =  2 ms → J = 0 + (2 − 0)/16            = 0.125 ms
        // D3 = (120−112) − (20−10) = −2 ms → J = 0.125 + (2 − 0.125)/16    = 0.2421875 ms
        // D4 = (135−120) − (30−20) =  5 ms → J = 0.2421875 + (5 − 0.2421875)/16
        //                                      = 0.2421875 + 0.29736328125 = 0.53955078125 ms
        // = 539 550.78125 ns → rounds to 539 551 ns.
        let mut j = JitterEstimator::new();
        let mut seen = Vec::new();
        for (tx, rx) in [(0, 100), (10, 112), (20, 120), (30, 135)] {
            j.on_packet(tx * MS, rx * MS);
            seen.push(j.jitter_ns_f64());
        }
        assert_eq!(
            seen,
            vec![None, Some(125_000.0), Some(242_187.5), Some(539_550.781_25)]
        );
        assert_eq!(j.jitter_ns(), Some(539_551));
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        // Receiver clock wraps from u64::MAX to 0 while the sender advances by u64::MAX:
        // D = (0 − u64::MAX) − (u64::MAX − 0) = −2·(2^64 − 1); |D|/16 = (2^64 − 1)/8.
        let mut j = JitterEstimator::new();
        j.on_packet(0, u64::MAX);
        j.on_packet(u64::MAX, 0);
        let expected = 2.0 * (u64::MAX as f64) / 16.0;
        assert_eq!(j.jitter_ns_f64(), Some(expected));
        // Rounded value saturates into u64 range (2^61 fits).
        assert_eq!(j.jitter_ns(), Some(expected as u64));
    }

    #[test]
    fn constant_delay_converges_to_zero() {
        // One outlier of 16 ms then perfectly regular arrivals: J decays by 15/16 each packet.
        // After the outlier: J = 16/16 = 1 ms; after the return to schedule D = −16 ms, so
        // J = 1 + (16 − 1)/16 = 1.9375 ms; then 10 packets with D = 0: J = 1.9375·(15/16)^10.
        let mut j = JitterEstimator::new();
        j.on_packet(0, 0);
        j.on_packet(10 * MS, 26 * MS);
        j.on_packet(20 * MS, 20 * MS);
        for k in 3..13u64 {
            j.on_packet(k * 10 * MS, k * 10 * MS);
        }
        let expected = 1.9375e6 * (15.0f64 / 16.0).powi(10);
        let got = j.jitter_ns_f64().unwrap_or(f64::NAN);
        assert!((got - expected).abs() < 1e-6, "{got} vs {expected}");
    }
}
