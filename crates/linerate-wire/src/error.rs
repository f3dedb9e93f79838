use std::fmt;

/// An error found while reading bytes from the network.
///
/// It says which format failed, at which byte offset, and why; it never holds the input itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// The format being parsed, e.g. "control frame" or "probe".
    pub layer: &'static str,
    /// Byte offset within that format where the problem was found.
    pub offset: usize,
    /// What went wrong.
    pub kind: WireErrorKind,
}

/// The reason a [`WireError`] was raised.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireErrorKind {
    /// Fewer bytes than the format needs.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The magic bytes are not linerate's.
    BadMagic,
    /// A version this build does not understand.
    UnsupportedVersion(u8),
    /// Reserved bits that must be zero were set.
    ReservedBitsSet,
    /// A length field above the allowed cap.
    TooLong {
        /// The announced length.
        len: u64,
        /// The cap.
        max: u64,
    },
    /// A body that is not a valid message.
    BadBody(String),
}

impl WireError {
    pub(crate) fn new(layer: &'static str, offset: usize, kind: WireErrorKind) -> Self {
        WireError {
            layer,
            offset,
            kind,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {} at byte {}: ", self.layer, self.offset)?;
        match &self.kind {
            WireErrorKind::Truncated { need, have } => {
                write!(f, "truncated (need {need} bytes, have {have})")
            }
            WireErrorKind::BadMagic => write!(f, "bad magic (not a linerate peer?)"),
            WireErrorKind::UnsupportedVersion(v) if self.layer == crate::control::frame::LAYER => {
                write!(
                    f,
                    "frame layout version {v}, and this linerate reads version {} (the peer runs a linerate with another frame layout: use linerate versions with the same frame layout on both ends)",
                    crate::control::frame::FRAME_VERSION
                )
            }
            WireErrorKind::UnsupportedVersion(v) => write!(f, "unsupported version {v}"),
            WireErrorKind::ReservedBitsSet => write!(f, "reserved bits set"),
            WireErrorKind::TooLong { len, max } => {
                write!(f, "length {len} exceeds the limit of {max}")
            }
            WireErrorKind::BadBody(m) => write!(f, "invalid body: {m}"),
        }
    }
}

impl std::error::Error for WireError {}
