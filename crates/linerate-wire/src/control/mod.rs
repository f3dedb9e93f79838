//! The control protocol.
//!
//! A control connection carries frames: an 8-byte [`frame`] header followed by a UTF-8 JSON
//! body holding one [`message::Message`]. The phases and the versioning rules are documented in
//! `docs/protocol.md`; [`version`] holds the numbers and the negotiation.

mod compat;
#[cfg(test)]
mod envelopes;
pub mod frame;
pub mod message;
pub(crate) mod modes;
pub mod version;

pub use frame::{
    decode_body, encode, FrameHeader, FRAME_HEADER_LEN, MAX_CONTROL_FRAME, MAX_HANDSHAKE_FRAME,
    MAX_REQUEST_FRAME,
};
pub use message::*;
pub use version::{
    negotiate, Feature, Features, ProtocolVersion, FEATURES, PROTOCOL_MAJOR, PROTOCOL_MINOR,
};
