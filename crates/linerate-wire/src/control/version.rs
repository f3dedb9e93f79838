//! Protocol version numbers, features and negotiation.
//!
//! Rules (quinn's, for transport parameters):
//! * peers with the same major version must interoperate; the session runs at the lower minor;
//! * a new field is optional (`#[serde(default)]`) and unknown fields are ignored;
//! * a new message type is sent only to a peer that listed the matching feature in its hello;
//! * removing, renaming or changing the meaning of anything bumps the major version.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Major version of the control protocol this build speaks.
pub const PROTOCOL_MAJOR: u16 = 1;
/// Minor version of the control protocol this build speaks.
pub const PROTOCOL_MINOR: u16 = 3;

/// Optional capabilities this build offers. A session uses the intersection of both lists.
pub const FEATURES: &[&str] = &[
    "tcp_stream",
    "udp_stream",
    "bidir",
    "udp_gso",
    "cpu_pin",
    "interval_events",
    "rr",
    "one_way_delay",
    "smooth_pacing",
    "doctor",
    "auth",
    "udp_stream_hello",
    "raw_frames",
    "capture",
];

/// A `major.minor` protocol version.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct ProtocolVersion {
    /// Incompatible changes bump this.
    pub major: u16,
    /// Compatible additions bump this.
    pub minor: u16,
}

impl ProtocolVersion {
    /// The version this build speaks.
    pub const CURRENT: ProtocolVersion = ProtocolVersion {
        major: PROTOCOL_MAJOR,
        minor: PROTOCOL_MINOR,
    };
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Picks the version a session runs at, or `None` when the majors differ.
pub fn negotiate(ours: ProtocolVersion, theirs: ProtocolVersion) -> Option<ProtocolVersion> {
    (ours.major == theirs.major).then(|| ProtocolVersion {
        major: ours.major,
        minor: ours.minor.min(theirs.minor),
    })
}

/// The features both sides listed, in our order.
pub fn common_features(theirs: &[String]) -> Vec<String> {
    FEATURES
        .iter()
        .filter(|f| theirs.iter().any(|t| t == *f))
        .map(|f| (*f).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_major_takes_lower_minor() {
        let a = ProtocolVersion { major: 1, minor: 3 };
        let b = ProtocolVersion { major: 1, minor: 1 };
        assert_eq!(negotiate(a, b), Some(b));
        assert_eq!(negotiate(b, a), Some(b));
    }

    #[test]
    fn different_major_is_incompatible() {
        let a = ProtocolVersion { major: 1, minor: 0 };
        let b = ProtocolVersion { major: 2, minor: 0 };
        assert_eq!(negotiate(a, b), None);
    }

    #[test]
    fn features_intersect() {
        let theirs = vec!["udp_stream".to_string(), "teleport".to_string()];
        assert_eq!(common_features(&theirs), vec!["udp_stream".to_string()]);
    }
}
