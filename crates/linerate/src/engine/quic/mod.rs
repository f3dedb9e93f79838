//! QUIC streams for the stream engine (`linerate quic`, feature `quic`): quinn's
//! connections on a small tokio runtime of their own, each QUIC stream one
//! [`super::DataSocket::Quic`] that the engine's per-stream thread drives like a TCP
//! connection (its loops are [`send`] and [`recv`]).
//!
//! The server opens a QUIC endpoint of the test's own ([`QuicServer::open`]) on a port the
//! kernel picks, with the certificate made when `serve` started ([`prepare`]), and gives the
//! port and the certificate's SHA-256 in `accept`; the client ([`connect`]) pins that hash
//! and trusts nothing else. Every stream is bidirectional and starts with the 24-byte
//! stream hello (token and stream index), as a TCP data connection does; the half that
//! carries no data is finished at once.
//!
//! Without the `quic` feature (the board's core) [`QuicStream`] is a type without values,
//! so the engine's arms for it compile and never run.

/// The flow-control window of each QUIC stream, bytes: what a receiver may buffer in user
/// space per stream (the server's budget counts it).
pub const STREAM_WINDOW_BYTES: u64 = 8 << 20;
/// The flow-control window of each QUIC connection, bytes.
pub const CONN_WINDOW_BYTES: u64 = 32 << 20;

#[cfg(feature = "quic")]
mod imp;
#[cfg(feature = "quic")]
pub use imp::*;

#[cfg(not(feature = "quic"))]
mod none;
#[cfg(not(feature = "quic"))]
pub use none::*;
