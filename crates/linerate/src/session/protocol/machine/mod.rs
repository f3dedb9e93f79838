//! The control protocol as state machines without I/O, in the manner of quinn-proto and
//! smoltcp: a [`client::ClientMachine`] and a [`server::ServerMachine`], each an enum of
//! phases fed what the connection delivered ([`Incoming`]), what its driver did, and the
//! current time (an [`Instant`] passed in), returning actions (send this message, open the
//! data streams, start the engine, stop, finish, fail with a code and a text) and the next
//! deadline (`poll_timeout`).
//!
//! No socket, thread, clock or sleep lives here: the drivers (`session::protocol::client` and
//! `session::server::connection`) read the sockets, run the engines, wait until the next event
//! or deadline, and feed the machine. So every phase, time-out and out-of-order message is
//! tested here with fake instants (`client_tests.rs`, `server_tests.rs`), and the driver is
//! a loop of "perform the actions, wait, feed".
//!
//! Conventions both machines share:
//! * `handle(now, input)` feeds one input; `handle_timeout(now)` is called at or after
//!   `poll_timeout()` (calling it early does nothing);
//! * `poll_action()` returns the actions in order; the driver performs each before it feeds
//!   the next input, and reports a failed send with `SendFailed`;
//! * a failure clears the actions not yet taken (they belong to a session that is over) and
//!   queues what ending needs: the `error` message where the protocol sends one, `Close`,
//!   and the engine's end if one was started.

pub mod client;
pub mod server;

#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod server_tests;

use std::time::{Duration, Instant};

use linerate_wire::control::Message;

/// Something the control connection delivered.
// One at a time, moved once from the reader to the state machine: a message's size in place
// costs less than an allocation for each (the large ones, results and reports, are boxed
// inside `Message`).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A well-formed message.
    Msg(Message),
    /// The peer closed the connection cleanly.
    Closed,
    /// A malformed frame or an I/O error; the connection is unusable.
    Broken(String),
}

/// How long the client waits for each answer of the handshake (welcome, auth_ok, accept,
/// start, doctor_report).
pub const CLIENT_HANDSHAKE: Duration = Duration::from_secs(10);
/// How long the client waits for the server's results after `stop` (it drains first).
pub const CLIENT_RESULTS: Duration = Duration::from_secs(15);
/// How long the client waits for a `hook_result`: the longest hook time-out a server may
/// declare, and the handshake's margin.
pub const HOOK_RESULT_WAIT: Duration = Duration::from_secs(310);
/// How long the client waits for a `counters_snapshot` from the device under test
/// (`--dut`): reading its counters takes milliseconds, so a device that has not answered in
/// this time is taken as gone, and the run goes on without it.
pub const DUT_ANSWER_WAIT: Duration = Duration::from_secs(5);
/// How long the client waits for `done` after its own results.
pub const CLIENT_DONE: Duration = Duration::from_secs(2);
/// How often the client repeats each UDP stream's hello until `start` (protocol 1.3).
pub const UDP_HELLO_PERIOD: Duration = Duration::from_millis(10);
/// How long the server waits for the client's results after its own.
pub const SERVER_RESULTS: Duration = Duration::from_secs(10);
/// Pause before a server answers a failed authentication, so that guessing is slow.
pub const AUTH_FAIL_DELAY: Duration = Duration::from_millis(500);
/// A test may run this much past its own duration (or, for a byte count, the server's
/// `--max-duration`) before the server ends it, whether or not the client said `stop`.
pub const HARD_STOP_GRACE: Duration = Duration::from_secs(5);
/// The slowest transfer a byte-count test (`-n`) waits for unless `--max-time` says
/// otherwise, bits per second: its deadline is the byte count at this rate plus
/// [`BYTE_DEADLINE_SLACK`].
pub const MIN_BYTE_RATE_BPS: u64 = 1_000_000;
/// Added to a byte-count test's derived deadline (connection set-up, slow start).
pub const BYTE_DEADLINE_SLACK: Duration = Duration::from_secs(10);
/// The server's intervals may run this far ahead of the time since `start` (they arrive in
/// bursts after a stall); beyond it, and beyond twice the rate the interval allows, a flood
/// of intervals ends the test.
pub const INTERVAL_BURST: Duration = Duration::from_secs(5);

/// The earlier of two optional deadlines.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
