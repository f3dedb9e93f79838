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

/// What a QUIC stream's loop needs of the engine's stream thread, which
/// `engine::stream` gives it (so that this module does not import the stream loops' file,
/// which imports it).
pub trait Driver {
    /// Nanoseconds since the engine's epoch.
    fn now_ns(&self) -> u64;
    /// The loop's stop flag is set.
    fn stopped(&self) -> bool;
    /// Once per turn of a loop: the thread's CPU at the warm-up boundary.
    fn turn(&mut self);
    /// The write size of the test.
    fn write_size(&self) -> usize;
    /// A sender's next write: `None` when its quota is sent, `Some(0)` to look at the stop
    /// flag again (after waiting for the pace), else how many bytes.
    fn next_len(&mut self) -> Option<usize>;
    /// `n` bytes were written, or read, in one call.
    fn moved(&mut self, n: usize);
    /// A write that began at `t0` (engine ns) took nothing before the poll time-out.
    fn blocked_since(&self, t0: u64);
}

/// How long a loop waits in one call before it looks at its stop flag again (the
/// engine's `stream::POLL`).
pub const POLL: std::time::Duration = std::time::Duration::from_millis(100);

#[cfg(feature = "quic")]
mod imp;
#[cfg(feature = "quic")]
pub use imp::*;

#[cfg(not(feature = "quic"))]
mod none;
#[cfg(not(feature = "quic"))]
pub use none::*;
