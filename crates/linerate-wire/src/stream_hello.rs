//! The first 24 bytes of every TCP data connection, and (protocol 1.3, feature
//! `udp_stream_hello`) the datagram that proves a UDP stream's port belongs to its test.
//!
//! ```text
//!  0        4                      20            22          24
//!  +--------+----------------------+-------------+-----------+
//!  | "LRD1" | token (16 bytes)     | stream (BE) | reserved 0|
//!  +--------+----------------------+-------------+-----------+
//! ```
//!
//! The token is the 128-bit random value the server sent in `accept`; it ties the connection to
//! one test and cannot be guessed by another client. The magic differs from a control frame's
//! in byte 2 (`'D'` against frame version 1), so a server can tell the two apart on one port.
//!
//! A UDP stream (protocol 1.3, feature `udp_stream_hello`) sends the same 24 bytes as one
//! datagram from the client's socket of that stream, repeated until the server's `start`:
//! the server accepts the port listed in `streams_ready` only once a datagram from exactly
//! that address carries the test's token and the stream's index. A receiver that still finds
//! such a datagram in front of the data skips it ([`is_hello_datagram`]); a probe cannot be
//! mistaken for one, since its first four bytes would be a sequence number above 5.5 × 10^18.

use crate::error::{WireError, WireErrorKind};

/// Magic of a data-connection hello.
pub const MAGIC: [u8; 4] = *b"LRD1";
/// Length of the hello in bytes.
pub const LEN: usize = 24;
const LAYER: &str = "stream hello";

/// The parsed hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHello {
    /// The test's token.
    pub token: [u8; 16],
    /// Index of the stream within the test.
    pub stream_index: u16,
}

impl StreamHello {
    /// Parses a hello from exactly [`LEN`] or more bytes.
    pub fn parse(bytes: &[u8]) -> Result<StreamHello, WireError> {
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
        if bytes[0..4] != MAGIC {
            return Err(WireError::new(LAYER, 0, WireErrorKind::BadMagic));
        }
        if bytes[22..24] != [0, 0] {
            return Err(WireError::new(LAYER, 22, WireErrorKind::ReservedBitsSet));
        }
        let mut token = [0u8; 16];
        token.copy_from_slice(&bytes[4..20]);
        Ok(StreamHello {
            token,
            stream_index: u16::from_be_bytes([bytes[20], bytes[21]]),
        })
    }

    /// Writes the hello into `buf[..LEN]`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..20].copy_from_slice(&self.token);
        buf[20..22].copy_from_slice(&self.stream_index.to_be_bytes());
        buf[22..24].copy_from_slice(&[0, 0]);
    }

    /// The hello as bytes.
    pub fn to_bytes(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        self.emit(&mut b);
        b
    }
}

/// True when `datagram` is exactly a stream hello (a UDP stream's proof of its token), which
/// a receiver skips instead of counting it as data.
pub fn is_hello_datagram(datagram: &[u8]) -> bool {
    datagram.len() == LEN && datagram[0..4] == MAGIC
}

/// Formats a token as 32 lowercase hex digits.
pub fn token_to_hex(token: &[u8; 16]) -> String {
    crate::hex::encode(token)
}

/// Parses 32 hex digits into a token.
pub fn token_from_hex(s: &str) -> Option<[u8; 16]> {
    crate::hex::decode(s)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StreamHello {
        let mut token = [0u8; 16];
        for (i, t) in token.iter_mut().enumerate() {
            *t = i as u8;
        }
        StreamHello {
            token,
            stream_index: 0x0102,
        }
    }

    #[test]
    fn test_emit_and_parse() {
        let mut buf = [0xa5u8; LEN + 2];
        sample().emit(&mut buf);
        assert_eq!(&buf[0..4], b"LRD1");
        assert_eq!(&buf[20..24], &[1, 2, 0, 0]);
        assert_eq!(&buf[LEN..], &[0xa5, 0xa5]);
        assert_eq!(StreamHello::parse(&buf).unwrap(), sample());
    }

    #[test]
    fn test_truncated_and_bad() {
        let b = sample().to_bytes();
        assert!(matches!(
            StreamHello::parse(&b[..10]).unwrap_err().kind,
            WireErrorKind::Truncated { need: 24, have: 10 }
        ));
        let mut bad = b;
        bad[2] = 1;
        assert_eq!(
            StreamHello::parse(&bad).unwrap_err().kind,
            WireErrorKind::BadMagic
        );
        let mut bad = b;
        bad[23] = 1;
        assert_eq!(
            StreamHello::parse(&bad).unwrap_err().kind,
            WireErrorKind::ReservedBitsSet
        );
    }

    #[test]
    fn hello_datagrams_are_told_from_probes() {
        let b = sample().to_bytes();
        assert!(is_hello_datagram(&b));
        assert!(!is_hello_datagram(&b[..LEN - 1]));
        let mut longer = b.to_vec();
        longer.push(0);
        assert!(!is_hello_datagram(&longer));
        // A 24-byte datagram with a probe header: seq 7.
        let mut probe = [0u8; LEN];
        crate::probe::Probe { seq: 7, tx_ns: 1 }.emit(&mut probe);
        assert!(!is_hello_datagram(&probe));
    }

    #[test]
    fn hex_round_trip() {
        let t = sample().token;
        let h = token_to_hex(&t);
        assert_eq!(h, "000102030405060708090a0b0c0d0e0f");
        assert_eq!(token_from_hex(&h), Some(t));
        assert_eq!(token_from_hex("zz"), None);
        assert_eq!(token_from_hex(&"g".repeat(32)), None);
    }
}
