//! Control frame header.
//!
//! ```text
//!  0      2        3       4                8
//!  +------+--------+-------+----------------+----------------------+
//!  | "LR" | fver=1 | flags |  len (u32 BE)  |  len bytes of JSON   |
//!  +------+--------+-------+----------------+----------------------+
//! ```
//!
//! `flags` is reserved and must be 0. `len` is checked against [`MAX_CONTROL_FRAME`] by
//! [`FrameHeader::parse`] before a reader allocates the body, so a peer cannot make us
//! allocate more than that cap.

use crate::control::message::Message;
use crate::error::{WireError, WireErrorKind};

/// The two magic bytes that start every control frame.
pub const MAGIC: [u8; 2] = *b"LR";
/// Version of the frame header layout (not of the protocol; see [`super::version`]).
pub const FRAME_VERSION: u8 = 1;
/// Length of the frame header in bytes.
pub const FRAME_HEADER_LEN: usize = 8;
/// Largest body accepted, in bytes (4 MiB). Results of a long test with many intervals fit.
pub const MAX_CONTROL_FRAME: u32 = 4 * 1024 * 1024;
/// Largest body a server reads before the peer has said who it is (`hello`, and `auth`
/// when the server requires it), in bytes (4 KiB): a hello with every feature and an auth
/// with the longest user name take a few hundred.
pub const MAX_HANDSHAKE_FRAME: u32 = 4 * 1024;
/// Largest body a server with hooks or fleet orders reads before a test is accepted, in
/// bytes (128 KiB): a `fleet_order` of 64 words of 256 characters, each escaped in JSON.
/// Other servers keep [`MAX_HANDSHAKE_FRAME`] until then; only `results` is read under
/// [`MAX_CONTROL_FRAME`].
pub const MAX_REQUEST_FRAME: u32 = 128 * 1024;

/// The name of this format in a [`WireError`].
const LAYER: &str = "control frame";

/// A parsed, validated frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Length of the JSON body that follows, already checked against the cap.
    pub len: u32,
}

impl FrameHeader {
    /// Parses and validates a header. `max_len` is the caller's cap (at most
    /// [`MAX_CONTROL_FRAME`] is sensible); a longer body is refused here.
    pub fn parse(bytes: &[u8], max_len: u32) -> Result<FrameHeader, WireError> {
        if bytes.len() < FRAME_HEADER_LEN {
            return Err(WireError::new(
                LAYER,
                0,
                WireErrorKind::Truncated {
                    need: FRAME_HEADER_LEN,
                    have: bytes.len(),
                },
            ));
        }
        if bytes[0..2] != MAGIC {
            return Err(WireError::new(LAYER, 0, WireErrorKind::BadMagic));
        }
        if bytes[2] != FRAME_VERSION {
            return Err(WireError::new(
                LAYER,
                2,
                WireErrorKind::UnsupportedVersion {
                    what: "frame layout",
                    found: bytes[2],
                    reads: FRAME_VERSION,
                },
            ));
        }
        if bytes[3] != 0 {
            return Err(WireError::new(LAYER, 3, WireErrorKind::ReservedBitsSet));
        }
        let len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        if len > max_len {
            return Err(WireError::new(
                LAYER,
                4,
                WireErrorKind::TooLong {
                    len: u64::from(len),
                    max: u64::from(max_len),
                },
            ));
        }
        Ok(FrameHeader { len })
    }

    /// Writes the header into the first [`FRAME_HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`FRAME_HEADER_LEN`]; callers size it.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..2].copy_from_slice(&MAGIC);
        buf[2] = FRAME_VERSION;
        buf[3] = 0;
        buf[4..8].copy_from_slice(&self.len.to_be_bytes());
    }
}

/// Encodes a message as one complete frame (header and body).
///
/// Fails only if the body would exceed [`MAX_CONTROL_FRAME`].
pub fn encode(msg: &Message) -> Result<Vec<u8>, WireError> {
    let body = serde_json::to_vec(msg).map_err(|e| {
        WireError::new(
            LAYER,
            FRAME_HEADER_LEN,
            WireErrorKind::BadBody(e.to_string()),
        )
    })?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| *l <= MAX_CONTROL_FRAME)
        .ok_or_else(|| {
            WireError::new(
                LAYER,
                4,
                WireErrorKind::TooLong {
                    len: body.len() as u64,
                    max: u64::from(MAX_CONTROL_FRAME),
                },
            )
        })?;
    let mut out = vec![0u8; FRAME_HEADER_LEN + body.len()];
    FrameHeader { len }.emit(&mut out);
    out[FRAME_HEADER_LEN..].copy_from_slice(&body);
    Ok(out)
}

/// Decodes a frame body. Unknown fields are ignored; an unknown message type is an error.
pub fn decode_body(body: &[u8]) -> Result<Message, WireError> {
    serde_json::from_slice(body).map_err(|e| {
        WireError::new(
            LAYER,
            FRAME_HEADER_LEN,
            WireErrorKind::BadBody(e.to_string()),
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_real_hello_and_auth_fit_the_handshake_cap_four_times_over() {
        use crate::control::{AuthResponse, Hello, Message, ProtocolVersion, FEATURES};
        let hello = Message::Hello(Hello {
            protocol: ProtocolVersion::CURRENT,
            software: format!("linerate {}", "9".repeat(40)),
            features: FEATURES.iter().map(|f| f.to_string()).collect(),
        });
        let auth = Message::Auth(AuthResponse {
            user: "u".repeat(64),
            nonce: "a".repeat(64),
            mac: "b".repeat(64),
        });
        for m in [hello, auth] {
            let body = encode(&m).unwrap().len() - FRAME_HEADER_LEN;
            assert!(body * 4 <= MAX_HANDSHAKE_FRAME as usize, "{body}");
        }
    }

    #[test]
    fn the_largest_fleet_order_and_hook_request_fit_the_request_cap() {
        use crate::control::Message;
        use crate::fleet::{FleetOrder, MAX_HOST_LEN, MAX_ID_LEN, MAX_TEST_WORDS, MAX_WORD_LEN};
        use crate::hooks::{HookRequest, MAX_PARAMS, MAX_TEXT};
        // Control characters: each is six bytes in JSON, the worst case.
        let word = |n: usize| "\u{1}".repeat(n);
        let order = Message::FleetOrder(FleetOrder {
            id: word(MAX_ID_LEN),
            test: vec![word(MAX_WORD_LEN); MAX_TEST_WORDS],
            target: word(MAX_HOST_LEN),
            port: 65535,
        });
        let hook = Message::HookRequest(HookRequest {
            name: word(MAX_TEXT),
            params: (0..MAX_PARAMS)
                .map(|i| (format!("{i:0>128}"), word(MAX_TEXT)))
                .collect(),
        });
        for m in [order, hook] {
            let body = encode(&m).unwrap().len() - FRAME_HEADER_LEN;
            assert!(body <= MAX_REQUEST_FRAME as usize, "{body}");
            assert!(body > MAX_HANDSHAKE_FRAME as usize, "{body}");
        }
    }

    use super::*;

    const HEADER: [u8; 8] = [b'L', b'R', 1, 0, 0, 0, 0x01, 0x02];

    #[test]
    fn test_parse() {
        let h = FrameHeader::parse(&HEADER, MAX_CONTROL_FRAME).unwrap();
        assert_eq!(h.len, 0x0102);
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xa5u8; 10];
        FrameHeader { len: 0x0102 }.emit(&mut buf);
        assert_eq!(&buf[..8], &HEADER);
        assert_eq!(&buf[8..], &[0xa5, 0xa5]);
    }

    #[test]
    fn test_truncated() {
        let e = FrameHeader::parse(&HEADER[..5], MAX_CONTROL_FRAME).unwrap_err();
        assert_eq!(e.kind, WireErrorKind::Truncated { need: 8, have: 5 });
    }

    #[test]
    fn rejects_bad_magic_version_flags_and_oversize() {
        let mut h = HEADER;
        h[0] = b'X';
        assert_eq!(
            FrameHeader::parse(&h, MAX_CONTROL_FRAME).unwrap_err().kind,
            WireErrorKind::BadMagic
        );
        let mut h = HEADER;
        h[2] = 9;
        assert_eq!(
            FrameHeader::parse(&h, MAX_CONTROL_FRAME).unwrap_err().kind,
            WireErrorKind::UnsupportedVersion {
                what: "frame layout",
                found: 9,
                reads: 1
            }
        );
        // Another layout version is named as such, with this build's, in one line.
        let text = FrameHeader::parse(&h, MAX_CONTROL_FRAME)
            .unwrap_err()
            .to_string();
        assert_eq!(
            text,
            "malformed control frame at byte 2: frame layout version 9, and this linerate reads version 1 (the peer runs a linerate with another frame layout: use linerate versions with the same frame layout on both ends)"
        );
        let mut h = HEADER;
        h[3] = 1;
        assert_eq!(
            FrameHeader::parse(&h, MAX_CONTROL_FRAME).unwrap_err().kind,
            WireErrorKind::ReservedBitsSet
        );
        let h = [b'L', b'R', 1, 0, 0xff, 0xff, 0xff, 0xff];
        let e = FrameHeader::parse(&h, MAX_CONTROL_FRAME).unwrap_err();
        assert!(matches!(e.kind, WireErrorKind::TooLong { .. }));
        assert_eq!(e.offset, 4);
    }

    #[test]
    fn round_trip_message() {
        let msg = Message::Stop(Default::default());
        let bytes = encode(&msg).unwrap();
        let h = FrameHeader::parse(&bytes, MAX_CONTROL_FRAME).unwrap();
        assert_eq!(h.len as usize, bytes.len() - FRAME_HEADER_LEN);
        assert_eq!(decode_body(&bytes[FRAME_HEADER_LEN..]).unwrap(), msg);
    }

    #[test]
    fn garbage_body_is_an_error_not_a_panic() {
        for body in [
            &b"{"[..],
            b"null",
            b"\xff\xfe",
            b"{\"type\":\"no_such\"}",
            b"[]",
        ] {
            assert!(decode_body(body).is_err());
        }
    }
}
