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

/// Declares [`Feature`], [`Feature::ALL`] and [`FEATURES`] from one list, so that the enum
/// and the names on the wire cannot drift apart.
macro_rules! features {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// An optional capability of the control protocol, listed in `hello` and `welcome`.
        ///
        /// On the wire a feature is its name (`"tcp_stream"`, ...): [`Feature::name`], and
        /// serde gives the same string. The lists in [`crate::control::Hello::features`] and
        /// [`crate::control::Welcome::features`] stay strings, so a name this build does not
        /// know (from a newer peer) is kept and ignored; [`Features`] is the set this build
        /// understands.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            JsonSchema,
        )]
        pub enum Feature {
            $( $(#[$doc])* #[serde(rename = $name)] $variant, )*
        }

        impl Feature {
            /// Every feature this build offers, in the order it lists them.
            pub const ALL: &'static [Feature] = &[$(Feature::$variant,)*];

            /// The feature's name on the wire.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Feature::$variant => $name,)*
                }
            }

            /// The feature called `name`, if this build knows it.
            pub fn from_name(name: &str) -> Option<Feature> {
                match name {
                    $($name => Some(Feature::$variant),)*
                    _ => None,
                }
            }
        }

        /// The names of [`Feature::ALL`], as a client lists them in `hello`.
        pub const FEATURES: &[&str] = &[$($name,)*];
    };
}

features! {
    /// TCP stream tests (1.0).
    TcpStream = "tcp_stream",
    /// UDP stream tests (1.0).
    UdpStream = "udp_stream",
    /// Both directions at once (1.0).
    Bidir = "bidir",
    /// UDP GSO/GRO (1.0).
    UdpGso = "udp_gso",
    /// Pinning the server's data threads to a CPU (1.0).
    CpuPin = "cpu_pin",
    /// The server streams its intervals as `interval` messages during the test (1.0).
    IntervalEvents = "interval_events",
    /// Request/response tests (1.1).
    Rr = "rr",
    /// One-way delay of UDP datagrams (1.1).
    OneWayDelay = "one_way_delay",
    /// Paced UDP senders that skip ahead instead of bursting (1.1).
    SmoothPacing = "smooth_pacing",
    /// `doctor_request` / `doctor_report` (1.1).
    Doctor = "doctor",
    /// Authentication of clients by the server (1.2).
    Auth = "auth",
    /// Each UDP stream's client port proves the test's token before the start (1.3).
    UdpStreamHello = "udp_stream_hello",
    /// UDP senders write complete Ethernet frames (1.3).
    RawFrames = "raw_frames",
    /// The server captures a test's packets and returns them with its results (1.3).
    Capture = "capture",
    /// `hook_request` / `hook_result`: the server runs hooks its operator declared
    /// (`serve --hooks FILE`) between a sweep's points, and restores them at the end.
    Hooks = "hooks",
    /// `counters_request` / `counters_snapshot`: the server is the device under test and
    /// sends snapshots of its CPU, interrupt and interface counters (`--dut`).
    DeviceCounters = "device_counters",
    /// `TestSpec::profile`: the server samples its CPUs during the test and returns the
    /// profile in its report (`--profile`).
    Profile = "profile",
    /// `TestSpec::send_mode` and `TestSpec::recv_mode`: TCP senders with `MSG_ZEROCOPY` or
    /// `sendfile`, receivers with `MSG_TRUNC`, and the modes and zero-copy completions in
    /// the stream reports.
    CopyModes = "copy_modes",
    /// TCP_CRR: the server closes each connection first, right after its response (as
    /// netperf's netserver does), so that TIME_WAIT stays on the server; the client reads
    /// to the server's FIN before it closes.
    CrrServerCloses = "crr_server_closes",
    /// TCP_CRR: the server may take a test's connections on a port of the test's own,
    /// given in [`super::Accept::crr_port`], where its responders accept them directly.
    CrrPort = "crr_port",
    /// `fleet_order` / `fleet_report`: third-party tests that an authenticated coordinator
    /// orders from an agent (`serve --fleet-agent`) towards another server.
    FleetOrders = "fleet_orders",
    /// `mcast_join` / `mcast_joined` / `mcast_stop` / `mcast_report`: the server joins a
    /// multicast group for a client that sends to it, and reports what it received.
    Multicast = "multicast",
    /// QUIC stream tests (`Transport::Quic`): the server opens a UDP port of the test's
    /// own with a self-signed certificate and gives both in [`super::Accept::quic`].
    Quic = "quic",
    /// `RrSpec::bounceback`: bursts of exchanges on a schedule, with a hold at the server
    /// and TCP_QUICKACK on or off.
    Bounceback = "bounceback",
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Feature`]s: what one end offers, or what both offer in a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Features(u32);

impl Features {
    /// No feature.
    pub const NONE: Features = Features(0);

    /// Every feature this build offers.
    pub fn all() -> Features {
        Feature::ALL.iter().copied().collect()
    }

    /// The features named in a peer's list; names this build does not know are ignored.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Features {
        names
            .iter()
            .filter_map(|n| Feature::from_name(n.as_ref()))
            .collect()
    }

    fn bit(f: Feature) -> u32 {
        1 << (f as u32)
    }

    /// Whether `f` is in the set.
    pub fn has(self, f: Feature) -> bool {
        self.0 & Self::bit(f) != 0
    }

    /// The set with `f` added.
    pub fn with(self, f: Feature) -> Features {
        Features(self.0 | Self::bit(f))
    }

    /// The features in both sets.
    pub fn intersection(self, other: Features) -> Features {
        Features(self.0 & other.0)
    }

    /// The features in the set, in [`Feature::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Feature> {
        Feature::ALL.iter().copied().filter(move |f| self.has(*f))
    }

    /// The names of the features in the set, as a `hello` or `welcome` lists them.
    pub fn names(self) -> Vec<String> {
        self.iter().map(|f| f.name().to_string()).collect()
    }
}

impl FromIterator<Feature> for Features {
    fn from_iter<I: IntoIterator<Item = Feature>>(iter: I) -> Features {
        iter.into_iter().fold(Features::NONE, Features::with)
    }
}

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
    Features::all()
        .intersection(Features::from_names(theirs))
        .names()
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
    fn feature_names_are_the_wire_strings() {
        assert_eq!(Feature::ALL.len(), FEATURES.len());
        for (f, name) in Feature::ALL.iter().zip(FEATURES) {
            assert_eq!(f.name(), *name);
            assert_eq!(Feature::from_name(name), Some(*f));
            // serde writes and reads the same string.
            assert_eq!(serde_json::to_string(f).unwrap(), format!("\"{name}\""));
            let back: Feature = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(back, *f);
        }
        assert_eq!(Feature::from_name("teleport"), None);
        // Version 1.3 offers exactly these, in this order (what a hello lists).
        assert_eq!(
            FEATURES,
            [
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
                "hooks",
                "device_counters",
                "profile",
                "copy_modes",
                "crr_server_closes",
                "crr_port",
                "fleet_orders",
                "multicast",
                "quic",
                "bounceback",
            ]
        );
    }

    #[test]
    fn feature_sets() {
        let all = Features::all();
        assert_eq!(all.names(), FEATURES);
        let theirs = Features::from_names(&["rr", "teleport", "auth"]);
        assert!(theirs.has(Feature::Rr) && theirs.has(Feature::Auth));
        assert!(!theirs.has(Feature::Doctor));
        assert_eq!(all.intersection(theirs).names(), vec!["rr", "auth"]);
        assert_eq!(Features::NONE.names(), Vec::<String>::new());
    }

    #[test]
    fn features_intersect() {
        let theirs = vec!["udp_stream".to_string(), "teleport".to_string()];
        assert_eq!(common_features(&theirs), vec!["udp_stream".to_string()]);
    }
}
