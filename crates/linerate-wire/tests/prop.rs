//! Property tests: nothing a peer sends can make a parser panic, and what we emit parses back.
//! (A stand-in for the cargo-fuzz targets, which need a nightly toolchain this project does
//! not require.)

use linerate_wire::control::{self, FrameHeader, MAX_CONTROL_FRAME};
use linerate_wire::probe::Probe;
use linerate_wire::stream_hello::StreamHello;
use proptest::prelude::*;

proptest! {
    #[test]
    fn frame_header_never_panics_and_respects_the_cap(bytes in proptest::collection::vec(any::<u8>(), 0..16), cap in 0u32..2_000_000) {
        if let Ok(h) = FrameHeader::parse(&bytes, cap) {
            prop_assert!(h.len <= cap);
            prop_assert!(bytes.len() >= 8);
        }
    }

    #[test]
    fn body_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = control::decode_body(&bytes);
    }

    #[test]
    fn json_shaped_garbage_never_panics(s in "\\{\"type\":\"[a-z_]{0,14}\",\"data\":\\{[a-z\":0-9,\\[\\]{}]{0,80}\\}\\}") {
        let _ = control::decode_body(s.as_bytes());
    }

    #[test]
    fn stream_hello_round_trips(token in any::<[u8; 16]>(), index in any::<u16>()) {
        let h = StreamHello { token, stream_index: index };
        prop_assert_eq!(StreamHello::parse(&h.to_bytes()).unwrap(), h);
    }

    #[test]
    fn stream_hello_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = StreamHello::parse(&bytes);
    }

    #[test]
    fn probe_round_trips(seq in any::<u64>(), tx_ns in any::<u64>(), extra in 0usize..64) {
        let p = Probe { seq, tx_ns };
        let mut buf = vec![0u8; linerate_wire::probe::LEN + extra];
        p.emit(&mut buf);
        prop_assert_eq!(Probe::parse(&buf).unwrap(), p);
    }

    #[test]
    fn encoded_messages_decode_to_themselves(minor in any::<u16>(), software in ".{0,40}", features in proptest::collection::vec("[a-z_]{1,12}", 0..6)) {
        let m = control::Message::Hello(control::Hello {
            protocol: control::ProtocolVersion { major: 1, minor },
            software,
            features,
        });
        let frame = control::encode(&m).unwrap();
        let h = FrameHeader::parse(&frame, MAX_CONTROL_FRAME).unwrap();
        prop_assert_eq!(h.len as usize, frame.len() - control::FRAME_HEADER_LEN);
        prop_assert_eq!(control::decode_body(&frame[control::FRAME_HEADER_LEN..]).unwrap(), m);
    }
}
