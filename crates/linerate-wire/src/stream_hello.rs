//! The first 24 bytes of every TCP data connection.
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
    fn hex_round_trip() {
        let t = sample().token;
        let h = token_to_hex(&t);
        assert_eq!(h, "000102030405060708090a0b0c0d0e0f");
        assert_eq!(token_from_hex(&h), Some(t));
        assert_eq!(token_from_hex("zz"), None);
        assert_eq!(token_from_hex(&"g".repeat(32)), None);
    }
}
