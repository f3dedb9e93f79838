//! The header at the front of every UDP test datagram.
//!
//! ```text
//!  0               8               16
//!  +---------------+---------------+------------------+
//!  | seq (u64 BE)  | tx_ns (u64 BE)|  filler payload  |
//!  +---------------+---------------+------------------+
//! ```
//!
//! 16 bytes, so that a minimum Ethernet frame (64 bytes with FCS, 18 bytes of UDP payload over
//! IPv4) still carries it. The stream is identified by the connected socket pair, not by the
//! header. `seq` starts at 0 per stream and is always 64-bit (no wrap in any realistic test);
//! `tx_ns` is the sender's monotonic clock in nanoseconds. Jitter (RFC 3550) uses only its
//! differences. Since protocol 1.1 it is `CLOCK_MONOTONIC` itself (1.0 senders used time since
//! their engine started), so a receiver on the same machine can subtract it from its own
//! `CLOCK_MONOTONIC` for the one-way delay (feature `one_way_delay`); across hosts it is never
//! compared as an absolute time.

use crate::error::{WireError, WireErrorKind};

/// Length of the probe header in bytes; the smallest UDP payload linerate sends.
pub const LEN: usize = 16;
const LAYER: &str = "probe";

/// A probe header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Per-stream sequence number, from 0.
    pub seq: u64,
    /// Sender's `CLOCK_MONOTONIC` at the send call, nanoseconds.
    pub tx_ns: u64,
}

impl Probe {
    /// Parses the header from the front of a datagram.
    pub fn parse(bytes: &[u8]) -> Result<Probe, WireError> {
        if bytes.len() < LEN {
            return Err(WireError::new(
                LAYER,
                0,
                WireErrorKind::Truncated {
                    need: LEN,
                    have: bytes.len(),
                },
            ));
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&bytes[0..8]);
        let mut tx = [0u8; 8];
        tx.copy_from_slice(&bytes[8..16]);
        Ok(Probe {
            seq: u64::from_be_bytes(seq),
            tx_ns: u64::from_be_bytes(tx),
        })
    }

    /// Writes the header into `buf[..LEN]`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..8].copy_from_slice(&self.seq.to_be_bytes());
        buf[8..16].copy_from_slice(&self.tx_ns.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_emit() {
        let p = Probe {
            seq: 0x0102_0304_0506_0708,
            tx_ns: 42,
        };
        let mut buf = [0xa5u8; 18];
        p.emit(&mut buf);
        assert_eq!(&buf[0..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&buf[8..16], &[0, 0, 0, 0, 0, 0, 0, 42]);
        assert_eq!(&buf[16..], &[0xa5, 0xa5]);
        assert_eq!(Probe::parse(&buf).unwrap(), p);
    }

    #[test]
    fn test_truncated() {
        assert!(matches!(
            Probe::parse(&[0u8; 15]).unwrap_err().kind,
            WireErrorKind::Truncated { need: 16, have: 15 }
        ));
    }
}
