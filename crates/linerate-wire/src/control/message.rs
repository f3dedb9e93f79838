//! Control messages.
//!
//! Every message is one JSON object `{"type": "<snake_case name>", "data": {...}}`. Fields added
//! in later minor versions carry `#[serde(default)]`; unknown fields are ignored (never
//! `deny_unknown_fields`), so an older peer keeps working with a newer one.
//!
//! A normal session (client `C`, server `S`):
//!
//! ```text
//! C: hello            S: welcome | reject
//! C: test_request     S: accept | error
//! C: (opens data connections, each starting with a StreamHello carrying the token)
//! C: streams_ready    S: start            -- both ends start their engines
//! S: interval*        (optional, when the client listed "interval_events")
//! S: finished         (only when the server's senders ended by byte count)
//! C: stop             S: results
//! C: results          S: done
//! ```
//!
//! A server started with `--auth-users` (protocol 1.2, feature `auth`) puts a challenge in
//! `welcome`; the client must then answer `auth` before anything else, and the server proves
//! it knows the same secret in `auth_ok`:
//! `C: hello  S: welcome{auth}  C: auth  S: auth_ok | error(auth_failed)  C: test_request ...`.
//!
//! `linerate doctor HOST` (protocol 1.1, feature `doctor`) asks for the server's settings
//! instead of a test: `C: hello  S: welcome  C: doctor_request  S: doctor_report, done`.
//!
//! `linerate rfc2544|tcp|udp --dut HOST` (feature `device_counters`) opens a counters-only
//! session to the device under test: `C: hello  S: welcome  (C: counters_request
//! S: counters_snapshot)*`, then the client closes (see [`crate::device`]).
//!
//! `linerate fleet run` (feature `fleet_orders`) orders an agent started with `serve
//! --fleet-agent` to run a test towards another server, in an authenticated session:
//! `... C: auth  S: auth_ok  C: fleet_order  S: fleet_report, done` (see [`crate::fleet`]).
//!
//! `linerate udp GROUP --receivers A,B` (feature `multicast`) orders each receiver to join
//! the group: `... C: mcast_join  S: mcast_joined  C: mcast_stop  S: mcast_report, done`
//! (see [`crate::multicast`]).
//!
//! Any message out of this order is a protocol error: the receiver answers `error` with code
//! `protocol` and closes; it never waits for something that cannot come.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::modes::{RecvMode, SendMode};
use super::version::{Features, ProtocolVersion};
use crate::report::{IntervalReport, SideReport};

/// A control message, the body of one frame.
///
/// Written by serde's adjacently tagged derive; read by [`Message`]'s own `Deserialize`
/// (below), which reads the same objects.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Message {
    /// Client → server, first message: who I am and what I speak.
    Hello(Hello),
    /// Server → client: the session is open.
    Welcome(Welcome),
    /// Server → client: the session is refused (e.g. incompatible major version); the server closes.
    Reject(Reject),
    /// Client → server: the test to run.
    TestRequest(TestRequest),
    /// Server → client: the test is accepted; data connections must present `token`.
    Accept(Accept),
    /// Client → server: all TCP data connections are open; UDP ports are listed.
    StreamsReady(StreamsReady),
    /// Server → client: both ends start now.
    Start(Start),
    /// Server → client: one interval of the server's measurements.
    Interval(IntervalMsg),
    /// Server → client: the server's senders finished their byte count.
    Finished(Finished),
    /// Client → server: the client's senders stopped; stop yours and report.
    Stop(Stop),
    /// Either way: one end's measurements.
    Results(Box<Results>),
    /// Server → client: the session is over; the server closes.
    Done(Done),
    /// Either way: a fatal error; the sender closes after it.
    Error(ErrorMsg),
    /// Client → server, instead of `test_request` (protocol 1.1, feature `doctor`): send
    /// your host's settings.
    DoctorRequest(crate::doctor::DoctorRequest),
    /// Server → client (protocol 1.1, feature `doctor`): the server's findings; `done`
    /// follows and the server closes.
    DoctorReport(crate::doctor::DoctorReport),
    /// Client → server, right after a `welcome` that carried a challenge (protocol 1.2,
    /// feature `auth`): who I am and the proof that I know my secret.
    Auth(AuthResponse),
    /// Server → client (protocol 1.2, feature `auth`): the client is authenticated, and the
    /// server's proof that it knows the same secret.
    AuthOk(AuthOk),
    /// Client → server, instead of `test_request` and again after each `hook_result`
    /// (feature `hooks`): run a hook the server's operator declared.
    HookRequest(crate::hooks::HookRequest),
    /// Server → client (feature `hooks`): how the hook ran.
    HookResult(crate::hooks::HookResult),
    /// Client → server, instead of `test_request` and again after each
    /// `counters_snapshot` (feature `device_counters`): send a snapshot of your counters.
    CountersRequest(crate::device::CountersRequest),
    /// Server → client (feature `device_counters`): the device's counters now.
    CountersSnapshot(Box<crate::device::DeviceSnapshot>),
    /// Client → agent, instead of `test_request`, in an authenticated session (feature
    /// `fleet_orders`): run this test towards another server (see [`crate::fleet`]).
    FleetOrder(crate::fleet::FleetOrder),
    /// Agent → client (feature `fleet_orders`): the ordered test's record; `done` follows.
    FleetReport(Box<crate::fleet::FleetReport>),
    /// Client → server, instead of `test_request` (feature `multicast`): join this group
    /// and count what arrives (see [`crate::multicast`]).
    McastJoin(crate::multicast::McastJoin),
    /// Server → client (feature `multicast`): the group is joined.
    McastJoined(crate::multicast::McastJoined),
    /// Client → server (feature `multicast`): the sender stopped; report.
    McastStop(crate::multicast::McastStop),
    /// Server → client (feature `multicast`): what the receiver counted; `done` follows.
    McastReport(Box<crate::multicast::McastReport>),
}

/// The names of [`Message`]'s types, as [`Message::name`] gives them and the wire has them.
const MESSAGE_TYPES: &[&str] = &[
    "hello",
    "welcome",
    "reject",
    "test_request",
    "accept",
    "streams_ready",
    "start",
    "interval",
    "finished",
    "stop",
    "results",
    "done",
    "error",
    "doctor_request",
    "doctor_report",
    "auth",
    "auth_ok",
    "hook_request",
    "hook_result",
    "counters_request",
    "counters_snapshot",
    "fleet_order",
    "fleet_report",
    "mcast_join",
    "mcast_joined",
    "mcast_stop",
    "mcast_report",
];

/// Reads `{"type": NAME, "data": {...}}` (the keys in either order, unknown keys ignored) as
/// serde's adjacently tagged derive did, in two steps: the envelope, with `data` kept as raw
/// JSON text, then `data` as the named type with `serde_json::from_str`. The derive also
/// compiled every message type a second and a third time (for `data` buffered ahead of
/// `type`, and for `serde_json::Value`): about 0.5 MB of the board's binary
/// (docs/PERFORMANCE.md).
impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Envelope {
            #[serde(rename = "type")]
            ty: String,
            data: Box<serde_json::value::RawValue>,
        }
        fn data<T: serde::de::DeserializeOwned, E: Error>(
            raw: &serde_json::value::RawValue,
        ) -> Result<T, E> {
            serde_json::from_str(raw.get()).map_err(|e| E::custom(format_args!("data: {e}")))
        }
        let Envelope { ty, data: raw } = Envelope::deserialize(d)?;
        let raw = &*raw;
        Ok(match ty.as_str() {
            "hello" => Message::Hello(data(raw)?),
            "welcome" => Message::Welcome(data(raw)?),
            "reject" => Message::Reject(data(raw)?),
            "test_request" => Message::TestRequest(data(raw)?),
            "accept" => Message::Accept(data(raw)?),
            "streams_ready" => Message::StreamsReady(data(raw)?),
            "start" => Message::Start(data(raw)?),
            "interval" => Message::Interval(data(raw)?),
            "finished" => Message::Finished(data(raw)?),
            "stop" => Message::Stop(data(raw)?),
            "results" => Message::Results(data(raw)?),
            "done" => Message::Done(data(raw)?),
            "error" => Message::Error(data(raw)?),
            "doctor_request" => Message::DoctorRequest(data(raw)?),
            "doctor_report" => Message::DoctorReport(data(raw)?),
            "auth" => Message::Auth(data(raw)?),
            "auth_ok" => Message::AuthOk(data(raw)?),
            "hook_request" => Message::HookRequest(data(raw)?),
            "hook_result" => Message::HookResult(data(raw)?),
            "counters_request" => Message::CountersRequest(data(raw)?),
            "counters_snapshot" => Message::CountersSnapshot(data(raw)?),
            "fleet_order" => Message::FleetOrder(data(raw)?),
            "fleet_report" => Message::FleetReport(data(raw)?),
            "mcast_join" => Message::McastJoin(data(raw)?),
            "mcast_joined" => Message::McastJoined(data(raw)?),
            "mcast_stop" => Message::McastStop(data(raw)?),
            "mcast_report" => Message::McastReport(data(raw)?),
            other => return Err(D::Error::unknown_variant(other, MESSAGE_TYPES)),
        })
    }
}

impl Message {
    /// The message's type name, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello(_) => "hello",
            Message::Welcome(_) => "welcome",
            Message::Reject(_) => "reject",
            Message::TestRequest(_) => "test_request",
            Message::Accept(_) => "accept",
            Message::StreamsReady(_) => "streams_ready",
            Message::Start(_) => "start",
            Message::Interval(_) => "interval",
            Message::Finished(_) => "finished",
            Message::Stop(_) => "stop",
            Message::Results(_) => "results",
            Message::Done(_) => "done",
            Message::Error(_) => "error",
            Message::DoctorRequest(_) => "doctor_request",
            Message::DoctorReport(_) => "doctor_report",
            Message::Auth(_) => "auth",
            Message::AuthOk(_) => "auth_ok",
            Message::HookRequest(_) => "hook_request",
            Message::HookResult(_) => "hook_result",
            Message::CountersRequest(_) => "counters_request",
            Message::CountersSnapshot(_) => "counters_snapshot",
            Message::FleetOrder(_) => "fleet_order",
            Message::FleetReport(_) => "fleet_report",
            Message::McastJoin(_) => "mcast_join",
            Message::McastJoined(_) => "mcast_joined",
            Message::McastStop(_) => "mcast_stop",
            Message::McastReport(_) => "mcast_report",
        }
    }
}

/// First message of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hello {
    /// The protocol version the client speaks.
    pub protocol: ProtocolVersion,
    /// Free text, e.g. "linerate 0.1.0".
    #[serde(default)]
    pub software: String,
    /// Features the client offers.
    #[serde(default)]
    pub features: Vec<String>,
}

impl Hello {
    /// The features of [`Hello::features`] this build knows.
    pub fn feature_set(&self) -> Features {
        Features::from_names(&self.features)
    }
}

/// Server limits, sent so a client can explain a refusal before asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServerLimits {
    /// Longest test accepted, milliseconds.
    pub max_duration_ms: u64,
    /// Most parallel streams per direction.
    pub max_streams: u16,
    /// Highest paced rate accepted per direction, bits per second; `None` for no limit.
    #[serde(default)]
    pub max_rate_bps: Option<u64>,
    /// Largest write or datagram size, bytes.
    pub max_write_size: u32,
    /// Largest socket buffer a client may ask the server to set, bytes.
    #[serde(default)]
    pub max_socket_buffer: u32,
}

/// Reply to a compatible hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    /// The version the session runs at (same major, lower minor of the two).
    pub protocol: ProtocolVersion,
    /// Server-chosen id of this session, for logs.
    pub session_id: String,
    /// Features both sides offer.
    #[serde(default)]
    pub features: Vec<String>,
    /// Free text, e.g. "linerate 0.1.0".
    #[serde(default)]
    pub software: String,
    /// The server's limits.
    pub limits: ServerLimits,
    /// Present when the server requires authentication (protocol 1.2, feature `auth`): the
    /// client must answer with `auth` before anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthChallenge>,
}

impl Welcome {
    /// The features of [`Welcome::features`] this build knows: what the session may use.
    pub fn feature_set(&self) -> Features {
        Features::from_names(&self.features)
    }
}

/// The server's authentication challenge, in `welcome`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuthChallenge {
    /// How the proof is computed; this build knows `hmac-sha256` (see docs/protocol.md).
    pub method: String,
    /// 32 random bytes, 64 hex digits, fresh for every session.
    pub nonce: String,
}

/// The client's answer to an [`AuthChallenge`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuthResponse {
    /// The user name, as in the server's users file.
    pub user: String,
    /// 32 random bytes of the client's, 64 hex digits.
    pub nonce: String,
    /// HMAC-SHA256 proof, 64 hex digits.
    pub mac: String,
}

/// The server's acceptance of an [`AuthResponse`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuthOk {
    /// HMAC-SHA256 proof that the server knows the user's secret, 64 hex digits.
    pub mac: String,
}

/// Refusal of a hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reject {
    /// Machine-readable reason, e.g. `incompatible_version`.
    pub code: ErrorCode,
    /// The server's protocol version.
    pub server_protocol: ProtocolVersion,
    /// Human-readable explanation.
    pub message: String,
}

/// Transport of a stream test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// TCP byte streams.
    Tcp,
    /// UDP datagrams with a [`crate::probe`] header.
    Udp,
    /// QUIC streams (feature `quic`): `streams` QUIC streams per direction spread over
    /// [`TestSpec::quic_connections`] connections to the UDP port the server gives in
    /// [`Accept::quic`]; each stream starts with the 24-byte stream hello.
    Quic,
}

/// Which way data flows, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client sends, server receives (netperf TCP_STREAM).
    Send,
    /// Server sends, client receives (netperf TCP_MAERTS, iperf3 -R).
    Receive,
    /// Both at once, on separate streams.
    Both,
}

impl Direction {
    /// Whether the client sends data in this direction.
    pub fn client_sends(self) -> bool {
        matches!(self, Direction::Send | Direction::Both)
    }
    /// Whether the client receives data in this direction.
    pub fn client_receives(self) -> bool {
        matches!(self, Direction::Receive | Direction::Both)
    }
}

/// The test a client asks for. All sizes in bytes, all times in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestSpec {
    /// TCP or UDP.
    pub transport: Transport,
    /// Which way data flows.
    pub direction: Direction,
    /// Parallel streams per direction (1 or more).
    pub streams: u16,
    /// Fixed-time test: the client stops senders after this long. Exactly one of
    /// `duration_ms` and `bytes` is set.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Fixed-size test (ttcp): bytes to send per direction, split over the streams.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Size of each write (TCP) or of each datagram's payload (UDP).
    pub write_size: u32,
    /// SO_SNDBUF to request on the server's sockets.
    #[serde(default)]
    pub server_sndbuf: Option<u32>,
    /// SO_RCVBUF to request on the server's sockets.
    #[serde(default)]
    pub server_rcvbuf: Option<u32>,
    /// TCP_NODELAY on every data socket.
    #[serde(default)]
    pub nodelay: bool,
    /// TCP_MAXSEG on every data socket.
    #[serde(default)]
    pub mss: Option<u32>,
    /// TCP congestion control algorithm name (TCP_CONGESTION).
    #[serde(default)]
    pub congestion: Option<String>,
    /// IP TOS / traffic class byte (DSCP << 2 | ECN).
    #[serde(default)]
    pub tos: Option<u8>,
    /// Paced rate per direction, all streams together, bits per second of payload.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Interval report period.
    pub interval_ms: u64,
    /// Warm-up left out of the totals.
    #[serde(default)]
    pub omit_ms: u64,
    /// CPU to pin the server's data threads to.
    #[serde(default)]
    pub server_cpu: Option<u32>,
    /// Allow UDP GSO/GRO where the kernel has them.
    #[serde(default)]
    pub udp_offload: bool,
    /// Request/response test (protocol 1.1, feature `rr`): when present the server answers
    /// requests on its data streams instead of running the stream engine, and `direction`,
    /// `bytes`, `write_size` and `rate_bps` are not used. Sent only to a server that listed
    /// `rr` in its welcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrSpec>,
    /// One-way delay (protocol 1.1, feature `one_way_delay`): when present, UDP receivers
    /// compare each probe's `tx_ns` (the sender's `CLOCK_MONOTONIC`) with their own
    /// `CLOCK_MONOTONIC` and report the delays in [`crate::report::UdpRxReport::one_way_delay`].
    /// Meaningful only when both ends share the clock (one machine, e.g. network namespaces).
    /// Sent only to a server that listed `one_way_delay` in its welcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way_delay: Option<DelaySpec>,
    /// Constant-rate pacing (protocol 1.1, feature `smooth_pacing`): a paced UDP sender that
    /// falls behind its schedule skips ahead instead of sending a burst to catch up, so it
    /// never exceeds the rate (RFC 2544 trials). Sent only to a server that listed the feature.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub smooth_pacing: bool,
    /// Raw frames (protocol 1.3, feature `raw_frames`): UDP senders write complete
    /// Ethernet/IP/UDP frames with an AF_PACKET transmit ring, from their stream socket's own
    /// address and port, so every datagram is one packet on the wire whatever the offloads
    /// (RFC 2544 trials). A sender that cannot (no CAP_NET_RAW, not an Ethernet interface,
    /// next hop unresolved) sends one datagram per `sendmmsg` message instead and says so in
    /// [`crate::report::StreamReport::tx_path`] and its warnings. Sent only to a server that
    /// listed the feature.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw_frames: bool,
    /// Capture this test's packets at the server too, keeping this many bytes of each
    /// (protocol 1.3, feature `capture`; the server returns the capture with its results if
    /// it allows captures, `linerate serve --allow-capture`). Sent only to a server that
    /// listed the feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_snaplen: Option<u32>,
    /// Profile the server's CPUs over the measured window too (feature `profile`; the
    /// profile comes back in the server's report). Sent only to a server that listed the
    /// feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileSpec>,
    /// How every TCP sender of the test, at either end, hands its data to the kernel
    /// (feature `copy_modes`). Sent only to a server that listed the feature; a client
    /// whose server would have to send this way and does not list it refuses the test.
    #[serde(default, skip_serializing_if = "SendMode::is_copy")]
    pub send_mode: SendMode,
    /// How every TCP receiver of the test, at either end, takes its data (feature
    /// `copy_modes`), with the same rule as [`TestSpec::send_mode`].
    #[serde(default, skip_serializing_if = "RecvMode::is_copy")]
    pub recv_mode: RecvMode,
    /// Which kernel path the raw-frame senders of the test, at either end, write through
    /// (`--raw-tx`; with [`TestSpec::raw_frames`]). A server that does not know the field
    /// ignores it and uses its AF_PACKET ring.
    #[serde(default, skip_serializing_if = "RawTxChoice::is_auto")]
    pub raw_tx: RawTxChoice,
    /// The fleet order this test runs for (its id, `linerate_wire::fleet::FleetOrder::id`),
    /// set by an agent that runs a coordinator's order: a server that is a fleet agent logs
    /// the test's start and end under it, so each agent's own log shows when it was busy,
    /// as destination too. Free text to anyone else; a server logs at most
    /// [`MAX_FLEET_ORDER_LOGGED`] characters of it.
    /// (Boxed: the spec travels inside every control message's enum, kept small.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_order: Option<Box<String>>,
    /// QUIC (feature `quic`): the connections the streams are spread over (stream `i` on
    /// connection `i % n`, both directions' streams alike); absent = one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_connections: Option<u16>,
}

/// Which kernel path a raw-frame sender writes through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawTxChoice {
    /// An AF_XDP socket (zero-copy where the driver takes it, copy mode otherwise), the
    /// AF_PACKET ring when it cannot be opened (with a warning saying why) or when the
    /// interface's root qdisc shapes (AF_XDP would bypass it).
    #[default]
    Auto,
    /// An AF_XDP socket only: a sender that cannot open one sends no raw frames.
    Xdp,
    /// The AF_PACKET transmit ring only.
    Afpacket,
}

impl RawTxChoice {
    /// The default.
    pub fn is_auto(&self) -> bool {
        *self == RawTxChoice::Auto
    }
}

/// Most characters of [`TestSpec::fleet_order`] a server writes to its log.
pub const MAX_FLEET_ORDER_LOGGED: usize = 128;

/// What to measure of the one-way delay (protocol 1.1, feature `one_way_delay`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DelaySpec {
    /// Sequence number of the tagged datagram of each stream (RFC 2544 §26.2), whose delay is
    /// reported on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_seq: Option<u64>,
}

/// A request/response test (netperf TCP_RR, TCP_CRR, UDP_RR). Protocol 1.1, feature `rr`.
///
/// * TCP (`udp: false`, `connect_per_transaction: false`): one connection per stream; the
///   client writes `request_bytes`, the server answers each complete request with
///   `response_bytes`; up to `burst` requests are in flight per stream.
/// * TCP_CRR (`connect_per_transaction: true`): every transaction is a new connection that
///   starts with the 24-byte stream hello, then one request and one response; the client
///   closes. `burst` is 1.
/// * UDP (`udp: true`): each request and each response is one datagram that starts with the
///   16-byte probe header; the server copies the request's header into its response so the
///   client can match them. A response that does not arrive within `timeout_ms` is a lost
///   transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RrSpec {
    /// Bytes per request (UDP: at least 16, the probe header).
    pub request_bytes: u32,
    /// Bytes per response (UDP: at least 16).
    pub response_bytes: u32,
    /// Transactions in flight per stream (1 = one at a time, netperf's default).
    #[serde(default = "one")]
    pub burst: u32,
    /// Open and close a TCP connection for every transaction (netperf TCP_CRR).
    #[serde(default)]
    pub connect_per_transaction: bool,
    /// UDP datagrams instead of TCP (netperf UDP_RR).
    #[serde(default)]
    pub udp: bool,
    /// UDP: time after which an unanswered request counts as a lost transaction, ms.
    #[serde(default)]
    pub timeout_ms: u64,
    /// Target transactions per second over all streams (client-paced); absent = as fast as
    /// the responses come back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
    /// Bounceback (feature `bounceback`, TCP only): bursts of one-at-a-time exchanges on a
    /// schedule, with a hold at the server between each request's read and its response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounceback: Option<Box<Bounceback>>,
}

/// A bounceback test's shape (iperf2's `--bounceback`): `burst` exchanges one after another,
/// a burst every `period_ns`; the server holds each response `hold_ns` after reading its
/// request, and sets TCP_QUICKACK after each read when `quickack` is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Bounceback {
    /// Exchanges per burst.
    pub burst: u32,
    /// From one burst's start to the next's, ns (0: the next burst starts at once).
    pub period_ns: u64,
    /// The server's hold between reading a request and writing its response, ns.
    pub hold_ns: u64,
    /// Both ends set TCP_QUICKACK after every read (no delayed ACKs).
    pub quickack: bool,
}

fn one() -> u32 {
    1
}

/// Body of a test request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestRequest {
    /// What to run.
    pub spec: TestSpec,
}

/// Acceptance of a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Accept {
    /// 32 hex digits (128 random bits) each data connection must present.
    pub token: String,
    /// The server's CPU count, for service demand.
    #[serde(default)]
    pub server_cpu_count: u32,
    /// TCP_CRR (feature `crr_port`): the port on the server's address where the test's
    /// connections go, each still with its stream hello; absent: the server's one port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crr_port: Option<u16>,
    /// A QUIC test (feature `quic`): where its connections go and the certificate to pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicOffer>,
}

/// Where a QUIC test's connections go (feature `quic`), in [`Accept::quic`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuicOffer {
    /// The UDP port on the server's address (the control connection's) that the server
    /// opened for this test alone.
    pub port: u16,
    /// SHA-256 of the server's certificate (DER), 64 hex digits: the client accepts that
    /// certificate and no other (it is self-signed, made when the server started).
    pub cert_sha256: String,
}

/// The client's data sockets are ready.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamsReady {
    /// For UDP: the client's local port of each stream, by stream index.
    #[serde(default)]
    pub udp_ports: Vec<u16>,
}

/// Start signal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Start {}

/// One server interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntervalMsg {
    /// The interval.
    pub interval: IntervalReport,
}

/// The server's byte-count senders are done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finished {}

/// Stop request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stop {
    /// True when the client stops early (Ctrl-C), so the server logs it as interrupted.
    #[serde(default)]
    pub interrupted: bool,
}

/// One end's results.
///
/// Since protocol 1.3 a report's `intervals` do not travel here: a server whose intervals
/// went to the client as `interval` messages (feature `interval_events`) leaves them out and
/// says so with `intervals_streamed`, and a client leaves its own out (the server does not
/// use them). So the frame's size does not grow with the test's length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Results {
    /// The measurements.
    pub report: SideReport,
    /// The report's intervals were sent as `interval` messages during the test and are left
    /// out of it here: the receiver keeps those (protocol 1.3).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intervals_streamed: bool,
    /// Server → client (protocol 1.3, feature `capture`): the server's capture of the test,
    /// when the request asked for one (`TestSpec::capture_snaplen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<ReturnedCapture>,
}

/// Largest capture a server returns, bytes of pcap (sent as hex, so twice that in the frame).
pub const MAX_RETURNED_CAPTURE: usize = 1 << 20;

/// The server's capture of a test, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReturnedCapture {
    /// The pcap file, hex; at most [`MAX_RETURNED_CAPTURE`] bytes of it (packets past that
    /// are left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap_hex: Option<String>,
    /// Why the server did not capture, or what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// End of session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Done {}

/// Machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The peer's major protocol version differs.
    IncompatibleVersion,
    /// A message out of order or malformed.
    Protocol,
    /// The request asks for more than the server allows.
    LimitExceeded,
    /// The server runs as many tests as it allows; try again later.
    Busy,
    /// A request that cannot be honoured (e.g. an unknown congestion control).
    BadRequest,
    /// The peer did not answer in time.
    Timeout,
    /// The server is shutting down.
    ShuttingDown,
    /// The server requires authentication and the client sent none (protocol 1.2).
    AuthRequired,
    /// Unknown user or wrong proof (protocol 1.2).
    AuthFailed,
    /// Anything else.
    Internal,
    /// A code this build does not know (from a newer peer).
    #[serde(other)]
    Unknown,
}

/// A fatal error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorMsg {
    /// Machine-readable reason.
    pub code: ErrorCode,
    /// Human-readable explanation, including how to fix it where we know.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_shape() {
        let m = Message::Stop(Stop { interrupted: false });
        let v: serde_json::Value = serde_json::to_value(&m).unwrap();
        assert_eq!(v["type"], "stop");
        assert_eq!(v["data"]["interrupted"], false);
    }

    #[test]
    fn data_before_type_and_unknown_keys_read_as_before() {
        let m = Message::Stop(Stop { interrupted: true });
        for text in [
            r#"{"type":"stop","data":{"interrupted":true}}"#,
            r#"{"data":{"interrupted":true},"type":"stop"}"#,
            r#"{"extra":[1,{"a":2}],"data":{"interrupted":true,"new":1},"type":"stop"}"#,
        ] {
            assert_eq!(serde_json::from_str::<Message>(text).unwrap(), m, "{text}");
            assert_eq!(
                serde_json::from_slice::<Message>(text.as_bytes()).unwrap(),
                m
            );
        }
        let e = serde_json::from_str::<Message>(r#"{"type":"nope","data":{}}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `nope`"), "{e}");
        let e = serde_json::from_str::<Message>(r#"{"type":"stop"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `data`"), "{e}");
        let e = serde_json::from_str::<Message>(r#"{"data":{}}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `type`"), "{e}");
        let e = serde_json::from_str::<Message>(r#"{"type":"hello","data":{}}"#).unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
    }

    #[test]
    fn every_type_name_is_read_back() {
        for name in MESSAGE_TYPES {
            let e = serde_json::from_str::<Message>(&format!(r#"{{"type":"{name}","data":7}}"#))
                .unwrap_err();
            assert!(!e.to_string().contains("unknown variant"), "{name}: {e}");
        }
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body = br#"{"type":"hello","data":{"protocol":{"major":1,"minor":7},"software":"x","features":[],"future_field":42}}"#;
        let m: Message = serde_json::from_slice(body).unwrap();
        assert!(matches!(m, Message::Hello(h) if h.protocol.minor == 7));
    }

    #[test]
    fn unknown_error_code_decodes() {
        let body = br#"{"type":"error","data":{"code":"martians","message":"m"}}"#;
        let m: Message = serde_json::from_slice(body).unwrap();
        assert!(matches!(
            m,
            Message::Error(ErrorMsg {
                code: ErrorCode::Unknown,
                ..
            })
        ));
    }

    #[test]
    fn direction_helpers() {
        assert!(Direction::Send.client_sends() && !Direction::Send.client_receives());
        assert!(!Direction::Receive.client_sends() && Direction::Receive.client_receives());
        assert!(Direction::Both.client_sends() && Direction::Both.client_receives());
    }
}
