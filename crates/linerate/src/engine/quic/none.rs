//! The board's core: no QUIC stack, and no QUIC stream can exist.

use std::io;
use std::net::SocketAddr;

use linerate_wire::report::QuicReport;

use super::Driver;

/// A QUIC stream: none in a build without the `quic` feature.
#[derive(Debug)]
pub enum QuicStream {}

impl QuicStream {
    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match *self {}
    }
    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match *self {}
    }
    /// The connection's figures now.
    pub fn report(&self) -> QuicReport {
        match *self {}
    }
}

/// A sender's loop.
pub fn send(_d: &mut dyn Driver, q: &QuicStream) -> io::Result<()> {
    match *q {}
}

/// A receiver's loop.
pub fn recv(_d: &mut dyn Driver, q: &QuicStream) -> io::Result<()> {
    match *q {}
}

/// Why this build runs no QUIC test.
const NO_QUIC: &str =
    "this build of linerate has no QUIC (the board's core, without the `quic` feature): use the full build";

/// Hands each stream of a test to the session, by its stream index.
pub type Deliver = std::sync::Arc<dyn Fn(u16, QuicStream) + Send + Sync>;

/// What a test's endpoint accepts.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    /// The test's token.
    pub token: [u8; 16],
    /// The test's connections.
    pub connections: u16,
    /// The test's streams, both directions together.
    pub streams: u16,
}

/// A test's QUIC endpoint at the server: never opened in this build.
#[derive(Debug)]
pub struct QuicServer;

impl QuicServer {
    /// Refuses: no QUIC in this build.
    pub fn open(
        _ip: std::net::IpAddr,
        _adm: Admission,
        _deliver: Deliver,
    ) -> Result<(QuicServer, linerate_wire::control::QuicOffer), String> {
        Err(NO_QUIC.into())
    }
}

/// Refuses: no QUIC in this build.
pub fn prepare() -> Result<String, String> {
    Err(NO_QUIC.into())
}

/// Where the client's streams go.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's address with the QUIC port.
    pub addr: SocketAddr,
    /// The client's address for its endpoints.
    pub local_ip: std::net::IpAddr,
    /// The certificate's SHA-256, 64 hex digits.
    pub cert_sha256: String,
    /// Longest wait for each handshake and each stream.
    pub timeout: std::time::Duration,
}

/// Refuses: no QUIC in this build.
pub fn connect(
    _t: &Target,
    _token: [u8; 16],
    _connections: u16,
    _indices: &[u16],
) -> Result<Vec<QuicStream>, String> {
    Err(NO_QUIC.into())
}
