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
    /// A version of a layout this build does not read.
    UnsupportedVersion {
        /// What the version is of, e.g. "frame layout".
        what: &'static str,
        /// The version found.
        found: u8,
        /// The version this build reads.
        reads: u8,
    },
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
            WireErrorKind::UnsupportedVersion { what, found, reads } => write!(
                f,
                "{what} version {found}, and this linerate reads version {reads} (the peer runs a linerate with another {what}: use linerate versions with the same {what} on both ends)"
            ),
            WireErrorKind::ReservedBitsSet => write!(f, "reserved bits set"),
            WireErrorKind::TooLong { len, max } => {
                write!(f, "length {len} exceeds the limit of {max}")
            }
            WireErrorKind::BadBody(m) => write!(f, "invalid body: {m}"),
        }
    }
}

impl std::error::Error for WireError {}
