//! iperf3's control protocol (3.x), as far as `linerate serve` speaks it to iperf3 clients.
//!
//! ```text
//!  client                                   server
//!  cookie (37 bytes: 36 of [a-z2-7], NUL) ->
//!                                        <- PARAM_EXCHANGE (one state byte)
//!  u32 BE length + params JSON           ->
//!                                        <- CREATE_STREAMS
//!  data connections, each: the cookie    ->   (UDP: a datagram "9876", answered "6789")
//!                                        <- TEST_START, TEST_RUNNING
//!  TEST_END                              ->
//!                                        <- EXCHANGE_RESULTS
//!  u32 BE length + results JSON          ->
//!                                        <- u32 BE length + results JSON
//!                                        <- DISPLAY_RESULTS
//!  IPERF_DONE                            ->
//! ```
//!
//! linerate speaks it both ways: `linerate serve` to iperf3 clients, and
//! `linerate tcp|udp HOST --iperf3` to iperf3 servers (the same messages, from the other
//! end: [`Params::to_json`] writes what [`Params::parse`] reads).
//!
//! Everything here is pure: the cookie, the state bytes, the length prefix of a JSON message
//! (with a cap on every length a peer announces, and 0 refused), the parameters a client sends
//! (type- and range-checked as iperf3's own server checks them), the results both ends
//! exchange (3.12 writes an unknown `retransmits` as 2^64 − 1 and may leave out the
//! `omitted_*` keys; both are read as absent), and the 12-byte header of a UDP datagram.

use serde_json::{Map, Value};

use crate::error::{WireError, WireErrorKind};

/// iperf3's default port (control, TCP data and UDP data all on it).
pub const DEFAULT_PORT: u16 = 5201;
/// Bytes of the cookie on the wire: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// The characters of a cookie.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Longest parameters JSON read, bytes (iperf3's own server refuses more: 8 KiB).
pub const MAX_PARAMS_JSON: u32 = 8 * 1024;
/// Longest results JSON a server reads from a client, bytes. A client's results hold one
/// small object per stream (about 200 bytes; at most 256 streams with `--bidir -P 128`), so
/// 256 KiB is ample; iperf3 itself reads this length without a limit.
pub const MAX_CLIENT_RESULTS_JSON: u32 = 256 * 1024;
/// Longest results JSON a client reads from a server, bytes: the server's results hold one
/// small object per stream, and its own output only when asked for (linerate's client does
/// not ask), so the same cap as a client's results serves.
pub const MAX_SERVER_RESULTS_JSON: u32 = MAX_CLIENT_RESULTS_JSON;
/// Most streams a client may ask for (`parallel`), as iperf3's server checks.
pub const MAX_PARALLEL: u64 = 128;
/// The datagram a UDP stream opens with ("9876" on the wire, 3.12 and later).
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's answer to [`UDP_CONNECT_MSG`].
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";
/// Bytes of the UDP datagram header with 32-bit sequence numbers.
pub const UDP_HEADER_LEN: usize = 12;
/// Bytes of the UDP datagram header with 64-bit sequence numbers (`udp_counters_64bit`).
pub const UDP_HEADER_LEN_64: usize = 16;

/// `i_errno` values the server sends after [`State::ServerError`] (iperf3's `IE*` codes,
/// so that an iperf3 client prints its usual message).
pub mod ierrno {
    /// "the server is busy running a test. try again later".
    pub const ACCESS_DENIED: i32 = 121;
    /// "unable to receive parameters from client".
    pub const RECV_PARAMS: i32 = 114;
    /// "total required bandwidth is larger than server limit".
    pub const TOTAL_RATE: i32 = 27;
    /// "client's requested duration exceeds the server's maximum permitted limit".
    pub const MAX_SERVER_TEST_DURATION_EXCEEDED: i32 = 37;
    /// "unable to receive results".
    pub const RECV_RESULTS: i32 = 115;
    /// "test control message out of order" (iperf3's IEMESSAGE).
    pub const MESSAGE: i32 = 100;
    /// "unable to accept stream connection".
    pub const ACCEPT_STREAM: i32 = 203;
    /// "control socket has closed unexpectedly".
    pub const CTRL_CLOSE: i32 = 107;
    /// "test duration on the server expired".
    pub const SERVER_TEST_DURATION_EXPIRED: i32 = 160;
    /// "test authorization failed" (iperf3's IEAUTHTEST): the server requires
    /// authentication that the client did not give.
    pub const AUTH_TEST: i32 = 142;

    /// iperf3's message for the codes above and a few more a server sends, or a general one.
    pub fn describe(i_errno: i32) -> &'static str {
        match i_errno {
            ACCESS_DENIED => "the server is busy running a test",
            RECV_PARAMS => "it could not use the test's parameters",
            TOTAL_RATE => "the total rate asked for is above the server's limit",
            MAX_SERVER_TEST_DURATION_EXCEEDED => {
                "the test is longer than the server's maximum duration"
            }
            RECV_RESULTS => "it could not receive the results",
            MESSAGE => "a control message came out of order",
            ACCEPT_STREAM => "it could not accept a stream",
            CTRL_CLOSE => "its control connection closed",
            SERVER_TEST_DURATION_EXPIRED => "the test ran past the server's maximum duration",
            AUTH_TEST => "the test is not authorized: the server requires authentication",
            _ => "an iperf3 error (see iperf3's iperf_api.h for the code)",
        }
    }
}

/// A state byte (iperf3's `signed char` states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// 1, server to client.
    TestStart,
    /// 2, server to client: streams start.
    TestRunning,
    /// 4, client to server: the client has stopped sending.
    TestEnd,
    /// 9, server to client: send the parameters.
    ParamExchange,
    /// 10, server to client: open the streams.
    CreateStreams,
    /// 11, server to client: the server is shutting down.
    ServerTerminate,
    /// 12, client to server: the client was interrupted.
    ClientTerminate,
    /// 13, server to client: results are exchanged next.
    ExchangeResults,
    /// 14, server to client: print the results.
    DisplayResults,
    /// 16, client to server: all done.
    IperfDone,
    /// −1 (0xFF), server to client: busy, or a data connection with a wrong cookie.
    AccessDenied,
    /// −2 (0xFE), server to client: followed by two BE int32 (`i_errno`, `errno`).
    ServerError,
}

const STATES: [(State, u8); 12] = [
    (State::TestStart, 1),
    (State::TestRunning, 2),
    (State::TestEnd, 4),
    (State::ParamExchange, 9),
    (State::CreateStreams, 10),
    (State::ServerTerminate, 11),
    (State::ClientTerminate, 12),
    (State::ExchangeResults, 13),
    (State::DisplayResults, 14),
    (State::IperfDone, 16),
    (State::AccessDenied, 0xFF),
    (State::ServerError, 0xFE),
];

impl State {
    /// The state a byte names; any other byte (including iperf3's unused ones) is an error.
    pub fn from_byte(b: u8) -> Result<State, WireError> {
        STATES
            .iter()
            .find(|(_, v)| *v == b)
            .map(|(s, _)| *s)
            .ok_or_else(|| bad("iperf3 state", 0, format!("unknown state byte {b}")))
    }

    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        STATES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or(0, |(_, v)| *v)
    }
}

/// Whether `b`, the first byte a server answers a linerate hello with, is one an iperf3
/// server sends after reading a cookie: `PARAM_EXCHANGE`, `ACCESS_DENIED` (busy) or
/// `SERVER_ERROR`. A linerate server's first byte is always `'L'` (its frame magic).
pub fn is_server_first_byte(b: u8) -> bool {
    [
        State::ParamExchange,
        State::AccessDenied,
        State::ServerError,
    ]
    .iter()
    .any(|s| s.byte() == b)
}

/// iperf3's id of the `i`th stream a client opens (0-based): 1, 3, 4, 5, ... (2 was once
/// the control connection's).
pub fn stream_id(i: usize) -> i64 {
    if i == 0 {
        1
    } else {
        i64::try_from(i).unwrap_or(i64::MAX - 2) + 2
    }
}

/// The 9 bytes of a server error: the state byte, `i_errno` and `errno` (BE int32).
pub fn server_error(i_errno: i32, errno: i32) -> [u8; 9] {
    let mut b = [0u8; 9];
    b[0] = State::ServerError.byte();
    b[1..5].copy_from_slice(&i_errno.to_be_bytes());
    b[5..9].copy_from_slice(&errno.to_be_bytes());
    b
}

fn bad(layer: &'static str, offset: usize, why: String) -> WireError {
    WireError::new(layer, offset, WireErrorKind::BadBody(why))
}

/// A test's cookie: 36 characters of [`COOKIE_ALPHABET`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; COOKIE_LEN - 1]);

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cookie({})", self.as_str())
    }
}

impl Cookie {
    /// Parses the 37 bytes a client sends: 36 characters of the alphabet and a NUL.
    pub fn parse(b: &[u8]) -> Result<Cookie, WireError> {
        const LAYER: &str = "iperf3 cookie";
        if b.len() < COOKIE_LEN {
            return Err(WireError::new(
                LAYER,
                0,
                WireErrorKind::Truncated {
                    need: COOKIE_LEN,
                    have: b.len(),
                },
            ));
        }
        if let Some(i) = b[..COOKIE_LEN - 1]
            .iter()
            .position(|c| !COOKIE_ALPHABET.contains(c))
        {
            return Err(bad(LAYER, i, "a character outside [a-z2-7]".into()));
        }
        if b[COOKIE_LEN - 1] != 0 {
            return Err(bad(LAYER, COOKIE_LEN - 1, "no NUL at the end".into()));
        }
        let mut c = [0u8; COOKIE_LEN - 1];
        c.copy_from_slice(&b[..COOKIE_LEN - 1]);
        Ok(Cookie(c))
    }

    /// Whether `b` (the first bytes of a connection) could begin a cookie. linerate's own
    /// connections begin with `"LR"`, whose bytes are not in the alphabet.
    pub fn could_start(b: &[u8]) -> bool {
        b.iter()
            .take(COOKIE_LEN - 1)
            .all(|c| COOKIE_ALPHABET.contains(c))
    }

    /// A cookie from 36 random bytes (each mapped onto the alphabet).
    pub fn from_random(r: [u8; COOKIE_LEN - 1]) -> Cookie {
        Cookie(r.map(|x| COOKIE_ALPHABET[usize::from(x) % COOKIE_ALPHABET.len()]))
    }

    /// The 37 bytes on the wire.
    pub fn to_bytes(&self) -> [u8; COOKIE_LEN] {
        let mut b = [0u8; COOKIE_LEN];
        b[..COOKIE_LEN - 1].copy_from_slice(&self.0);
        b
    }

    /// The 36 characters.
    pub fn as_str(&self) -> &str {
        // The alphabet is ASCII, so this never fails.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

/// The length a JSON message announces (its 4-byte BE prefix), checked against `max`: 0
/// and anything above `max` are errors (iperf3 before 3.14 added 1 to it in 32 bits and
/// allocated that: CVE-2023-38403).
pub fn json_len(prefix: [u8; 4], max: u32) -> Result<u32, WireError> {
    let len = u32::from_be_bytes(prefix);
    if len == 0 {
        return Err(bad("iperf3 JSON length", 0, "a length of 0".into()));
    }
    if len > max {
        return Err(WireError::new(
            "iperf3 JSON length",
            0,
            WireErrorKind::TooLong {
                len: u64::from(len),
                max: u64::from(max),
            },
        ));
    }
    Ok(len)
}

/// A JSON message as it goes on the wire: the BE length and the unformatted JSON.
pub fn encode_json(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = Vec::with_capacity(body.len() + 4);
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// Parses a JSON message body into an object.
fn object(body: &[u8], layer: &'static str) -> Result<Map<String, Value>, WireError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad(layer, 0, "not a JSON object".into())),
        Err(e) => Err(bad(layer, e.column().saturating_sub(1), format!("{e}"))),
    }
}

/// Transport of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// Who sends in an iperf3 test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The client sends (default).
    Forward,
    /// The server sends (`-R`).
    Reverse,
    /// Both send (`--bidir`): the client's first `parallel` streams send, the next receive.
    Bidir,
}

/// The parameters a client sends, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// TCP or UDP (SCTP is refused).
    pub protocol: Protocol,
    /// Who sends.
    pub direction: Direction,
    /// Streams per direction (`-P`).
    pub parallel: u32,
    /// Seconds of the test (`-t`; 0 when `-n`/`-k` bound it).
    pub time_s: u32,
    /// Seconds omitted at the start (`-O`).
    pub omit_s: u32,
    /// Bytes to send (`-n`), 0 for none.
    pub bytes: u64,
    /// Blocks to send (`-k`), 0 for none.
    pub blocks: u64,
    /// Block (write or datagram) size (`-l`), when given.
    pub len: Option<u32>,
    /// Socket buffer size (`-w`), when given.
    pub window: Option<u32>,
    /// Rate per stream, bit/s (`-b`); absent means unlimited.
    pub bandwidth_bps: Option<u64>,
    /// TCP_NODELAY (`-N`).
    pub nodelay: bool,
    /// TCP MSS (`-M`), when given.
    pub mss: Option<u32>,
    /// Congestion control (`-C`), when given.
    pub congestion: Option<String>,
    /// Whether the client asked for the server's output (`--get-server-output`).
    pub get_server_output: bool,
    /// 64-bit UDP sequence numbers (`--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
    /// The client's version string (3.12 sends it), cut to 64 characters.
    pub client_version: Option<String>,
    /// Whether the client sent an authentication token (linerate does not take them).
    pub has_authtoken: bool,
}

const PARAMS: &str = "iperf3 parameters";

fn num(m: &Map<String, Value>, key: &str) -> Result<Option<f64>, WireError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(bad(PARAMS, 0, format!("`{key}` is not a finite number"))),
        },
        Some(_) => Err(bad(PARAMS, 0, format!("`{key}` is not a number"))),
    }
}

/// A number in `lo..=hi`, whole (iperf3 reads them as integers).
fn ranged(m: &Map<String, Value>, key: &str, lo: f64, hi: f64) -> Result<Option<u64>, WireError> {
    match num(m, key)? {
        None => Ok(None),
        Some(f) if f >= lo && f <= hi => Ok(Some(f.trunc() as u64)),
        Some(f) => Err(bad(
            PARAMS,
            0,
            format!("`{key}` = {f} is outside {lo}..={hi}"),
        )),
    }
}

fn flag(m: &Map<String, Value>, key: &str) -> Result<bool, WireError> {
    match m.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(Value::Number(n)) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Some(_) => Err(bad(PARAMS, 0, format!("`{key}` is not a flag"))),
    }
}

fn string(m: &Map<String, Value>, key: &str, max: usize) -> Result<Option<String>, WireError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(crate::text::clip(s, max))),
        Some(_) => Err(bad(PARAMS, 0, format!("`{key}` is not a string"))),
    }
}

/// A congestion control name: 1 to 15 characters of `[A-Za-z0-9_-]` (Linux's
/// `TCP_CA_NAME_MAX` is 16 with the NUL).
fn congestion(m: &Map<String, Value>) -> Result<Option<String>, WireError> {
    match m.get("congestion") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s))
            if (1..16).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(bad(
            PARAMS,
            0,
            "`congestion` is not a congestion control name".into(),
        )),
    }
}

impl Params {
    /// Parses and checks a parameters body (the JSON after its length prefix), with the
    /// ranges iperf3's server checks.
    pub fn parse(body: &[u8]) -> Result<Params, WireError> {
        if body.len() > MAX_PARAMS_JSON as usize {
            return Err(WireError::new(
                PARAMS,
                0,
                WireErrorKind::TooLong {
                    len: body.len() as u64,
                    max: u64::from(MAX_PARAMS_JSON),
                },
            ));
        }
        let m = object(body, PARAMS)?;
        let protocol = match (flag(&m, "tcp")?, flag(&m, "udp")?, flag(&m, "sctp")?) {
            (true, false, false) => Protocol::Tcp,
            (false, true, false) => Protocol::Udp,
            (false, false, true) => return Err(bad(PARAMS, 0, "SCTP is not served".into())),
            _ => return Err(bad(PARAMS, 0, "not exactly one of tcp/udp/sctp".into())),
        };
        let direction = match (flag(&m, "reverse")?, flag(&m, "bidirectional")?) {
            (_, true) => Direction::Bidir,
            (true, false) => Direction::Reverse,
            (false, false) => Direction::Forward,
        };
        let parallel = ranged(&m, "parallel", 1.0, MAX_PARALLEL as f64)?.unwrap_or(1) as u32;
        let time_s = ranged(&m, "time", 0.0, 86_400.0)?.unwrap_or(10) as u32;
        let omit_s = ranged(&m, "omit", 0.0, 600.0)?.unwrap_or(0) as u32;
        let bytes = ranged(&m, "num", 0.0, 9.0e18)?.unwrap_or(0);
        let blocks = ranged(&m, "blockcount", 0.0, 9.0e18)?.unwrap_or(0);
        let len = match protocol {
            Protocol::Tcp => ranged(&m, "len", 1.0, f64::from(1u32 << 20))?,
            Protocol::Udp => ranged(&m, "len", 16.0, 65_507.0)?,
        }
        .map(|l| l as u32);
        let window = ranged(&m, "window", 0.0, f64::from(512u32 << 20))?.map(|w| w as u32);
        let bandwidth_bps = ranged(&m, "bandwidth", 0.0, 1.0e15)?.filter(|b| *b > 0);
        let mss = ranged(&m, "MSS", 0.0, 32_767.0)?
            .filter(|v| *v > 0)
            .map(|v| v as u32);
        Ok(Params {
            protocol,
            direction,
            parallel,
            time_s,
            omit_s,
            bytes,
            blocks,
            len,
            window,
            bandwidth_bps,
            nodelay: flag(&m, "nodelay")?,
            mss,
            congestion: congestion(&m)?,
            get_server_output: flag(&m, "get_server_output")?,
            udp_counters_64bit: flag(&m, "udp_counters_64bit")?,
            client_version: string(&m, "client_version", 64)?,
            has_authtoken: m.contains_key("authtoken"),
        })
    }

    /// The parameters as a client sends them (what [`Params::parse`] reads back); keys
    /// iperf3 3.12 sends, absent options left out.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let proto = match self.protocol {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        };
        m.insert(proto.into(), true.into());
        m.insert("omit".into(), self.omit_s.into());
        m.insert("time".into(), self.time_s.into());
        m.insert("num".into(), self.bytes.into());
        m.insert("blockcount".into(), self.blocks.into());
        if let Some(mss) = self.mss {
            m.insert("MSS".into(), mss.into());
        }
        if self.nodelay {
            m.insert("nodelay".into(), true.into());
        }
        m.insert("parallel".into(), self.parallel.into());
        match self.direction {
            Direction::Forward => {}
            Direction::Reverse => {
                m.insert("reverse".into(), true.into());
            }
            Direction::Bidir => {
                m.insert("bidirectional".into(), true.into());
            }
        }
        if let Some(w) = self.window {
            m.insert("window".into(), w.into());
        }
        if let Some(l) = self.len {
            m.insert("len".into(), l.into());
        }
        if let Some(b) = self.bandwidth_bps {
            m.insert("bandwidth".into(), b.into());
        }
        m.insert("pacing_timer".into(), 1000.into());
        if let Some(c) = &self.congestion {
            m.insert("congestion".into(), c.clone().into());
        }
        if self.get_server_output {
            m.insert("get_server_output".into(), 1.into());
        }
        if self.udp_counters_64bit {
            m.insert("udp_counters_64bit".into(), 1.into());
        }
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), v.clone().into());
        }
        Value::Object(m)
    }

    /// Data connections (TCP) or UDP streams the client opens: `parallel`, twice that with
    /// `--bidir`.
    pub fn stream_count(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.parallel * 2,
            _ => self.parallel,
        }
    }

    /// Whether the server sends on its `i`th accepted stream (0-based): in `--bidir` the
    /// client's first `parallel` streams send, so the server receives on those.
    pub fn server_sends_on(&self, i: u32) -> bool {
        match self.direction {
            Direction::Forward => false,
            Direction::Reverse => true,
            Direction::Bidir => i >= self.parallel,
        }
    }
}

/// One stream's entry in a results message.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    /// iperf3's stream id (1, 3, 4, 5, ...).
    pub id: i64,
    /// Bytes sent (sender) or received (receiver).
    pub bytes: u64,
    /// TCP retransmits; `None` where unknown (a receiver, −1, or 3.12's 2^64 − 1).
    pub retransmits: Option<u64>,
    /// UDP jitter, seconds.
    pub jitter_s: f64,
    /// UDP datagrams lost.
    pub errors: i64,
    /// UDP datagrams sent or received.
    pub packets: i64,
    /// Lost datagrams in the omitted seconds; absent in 3.12.
    pub omitted_errors: Option<i64>,
    /// Datagrams in the omitted seconds; absent in 3.12.
    pub omitted_packets: Option<i64>,
    /// Seconds from the start to the stream's end.
    pub end_time_s: f64,
}

/// A results message (either end's).
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// CPU used by the process over the test, % of one CPU summed over user and system.
    pub cpu_util_total: f64,
    /// User share of it.
    pub cpu_util_user: f64,
    /// System share of it.
    pub cpu_util_system: f64,
    /// 1 if this end sent and knows its retransmits, 0 if it sent and does not, −1 if it
    /// only received (3.12 writes −1 as 2^64 − 1; read as −1).
    pub sender_has_retransmits: i64,
    /// Congestion control in use.
    pub congestion_used: Option<String>,
    /// The streams.
    pub streams: Vec<StreamResult>,
    /// The server's own output, when the client asked for it (as JSON).
    pub server_output_json: Option<Value>,
    /// The server's own output, when the client asked for it (as text).
    pub server_output_text: Option<String>,
}

const RESULTS: &str = "iperf3 results";

/// An integer that may be 3.12's 2^64 − 1 for −1.
fn signed(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_u64()
                    .map(|u| if u == u64::MAX { -1 } else { i64::MAX })
            })
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        _ => None,
    }
}

fn req<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a Value, WireError> {
    m.get(key)
        .ok_or_else(|| bad(RESULTS, 0, format!("no `{key}`")))
}

fn req_i64(m: &Map<String, Value>, key: &str) -> Result<i64, WireError> {
    signed(req(m, key)?).ok_or_else(|| bad(RESULTS, 0, format!("`{key}` is not an integer")))
}

fn req_f64(m: &Map<String, Value>, key: &str) -> Result<f64, WireError> {
    req(m, key)?
        .as_f64()
        .filter(|f| f.is_finite())
        .ok_or_else(|| bad(RESULTS, 0, format!("`{key}` is not a number")))
}

/// Most streams a results message may list (`--bidir -P 128`).
pub const MAX_RESULT_STREAMS: usize = 2 * MAX_PARALLEL as usize;

impl Results {
    /// Parses a results body. `cpu_util_*`, `sender_has_retransmits` and `streams` are
    /// required, and per stream `id`, `bytes`, `retransmits`, `jitter`, `errors`, `packets`.
    pub fn parse(body: &[u8]) -> Result<Results, WireError> {
        let m = object(body, RESULTS)?;
        let Value::Array(list) = req(&m, "streams")? else {
            return Err(bad(RESULTS, 0, "`streams` is not an array".into()));
        };
        if list.len() > MAX_RESULT_STREAMS {
            return Err(WireError::new(
                RESULTS,
                0,
                WireErrorKind::TooLong {
                    len: list.len() as u64,
                    max: MAX_RESULT_STREAMS as u64,
                },
            ));
        }
        let mut streams = Vec::with_capacity(list.len());
        for s in list {
            let Value::Object(s) = s else {
                return Err(bad(RESULTS, 0, "a stream is not an object".into()));
            };
            let bytes = req_i64(s, "bytes")?;
            let retransmits = req_i64(s, "retransmits")?;
            streams.push(StreamResult {
                id: req_i64(s, "id")?,
                bytes: u64::try_from(bytes)
                    .map_err(|_| bad(RESULTS, 0, "negative `bytes`".into()))?,
                retransmits: u64::try_from(retransmits).ok(),
                jitter_s: req_f64(s, "jitter")?,
                errors: req_i64(s, "errors")?,
                packets: req_i64(s, "packets")?,
                omitted_errors: s.get("omitted_errors").and_then(signed),
                omitted_packets: s.get("omitted_packets").and_then(signed),
                end_time_s: s.get("end_time").and_then(Value::as_f64).unwrap_or(0.0),
            });
        }
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        Ok(Results {
            cpu_util_total: req_f64(&m, "cpu_util_total")?,
            cpu_util_user: req_f64(&m, "cpu_util_user")?,
            cpu_util_system: req_f64(&m, "cpu_util_system")?,
            sender_has_retransmits: req_i64(&m, "sender_has_retransmits")?,
            congestion_used: text("congestion_used"),
            streams,
            server_output_json: m.get("server_output_json").cloned(),
            server_output_text: text("server_output_text"),
        })
    }

    /// The results as iperf3 writes them (keys in its order). An unknown retransmit count
    /// is written −1, as iperf3 after 3.12 does.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), finite(self.cpu_util_total));
        m.insert("cpu_util_user".into(), finite(self.cpu_util_user));
        m.insert("cpu_util_system".into(), finite(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            self.sender_has_retransmits.into(),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), c.clone().into());
        }
        let streams = self
            .streams
            .iter()
            .map(|s| {
                let mut o = Map::new();
                o.insert("id".into(), s.id.into());
                o.insert("bytes".into(), s.bytes.into());
                o.insert(
                    "retransmits".into(),
                    s.retransmits
                        .and_then(|r| i64::try_from(r).ok())
                        .unwrap_or(-1)
                        .into(),
                );
                o.insert("jitter".into(), finite(s.jitter_s));
                o.insert("errors".into(), s.errors.into());
                if let (Some(e), Some(p)) = (s.omitted_errors, s.omitted_packets) {
                    o.insert("omitted_errors".into(), e.into());
                    o.insert("packets".into(), s.packets.into());
                    o.insert("omitted_packets".into(), p.into());
                } else {
                    o.insert("packets".into(), s.packets.into());
                }
                o.insert("start_time".into(), 0.into());
                o.insert("end_time".into(), finite(s.end_time_s));
                Value::Object(o)
            })
            .collect();
        m.insert("streams".into(), Value::Array(streams));
        if let Some(j) = &self.server_output_json {
            m.insert("server_output_json".into(), j.clone());
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), t.clone().into());
        }
        Value::Object(m)
    }
}

/// A finite number, or `null` (as cJSON writes NaN and infinities).
fn finite(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// The header at the front of every iperf3 UDP datagram (network byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Send time, seconds.
    pub sec: u32,
    /// Send time, microseconds.
    pub usec: u32,
    /// Sequence number, from 1.
    pub seq: u64,
}

impl UdpHeader {
    /// Parses the header from a datagram (12 bytes, or 16 with 64-bit counters).
    pub fn parse(b: &[u8], counters_64bit: bool) -> Result<UdpHeader, WireError> {
        let need = if counters_64bit {
            UDP_HEADER_LEN_64
        } else {
            UDP_HEADER_LEN
        };
        if b.len() < need {
            return Err(WireError::new(
                "iperf3 datagram",
                0,
                WireErrorKind::Truncated {
                    need,
                    have: b.len(),
                },
            ));
        }
        let w = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let seq = if counters_64bit {
            (u64::from(w(8)) << 32) | u64::from(w(12))
        } else {
            u64::from(w(8))
        };
        Ok(UdpHeader {
            sec: w(0),
            usec: w(4),
            seq,
        })
    }

    /// Writes the header into the front of `buf`, which must hold it.
    ///
    /// # Panics
    /// If `buf` is shorter than the header.
    pub fn emit(&self, buf: &mut [u8], counters_64bit: bool) {
        buf[0..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
    }
}

#[cfg(test)]
#[path = "iperf3_tests.rs"]
mod tests;
