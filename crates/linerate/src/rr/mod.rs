//! Request/response tests (netperf TCP_RR, TCP_CRR, UDP_RR): the client loops that send
//! requests and time the responses ([`client`]), the server's responders ([`server`]), and
//! the engine both ends run around them ([`engine`]).
//!
//! One thread per stream, pinned with `-A` like the stream engine's. Each thread publishes
//! counters through relaxed atomics ([`counters::RrCounters`]) and keeps its own latency
//! histogram ([`latency`]), merged when the test ends, so the data path takes no lock. The
//! meter both engines share ([`crate::engine::meter`]) takes the warm-up baseline (`-O`) and
//! pushes one `IntervalReport` per interval with the transactions completed in it. The
//! measured window ends at [`RrEngine::stop`], where /proc/stat is read for both ends' CPU
//! utilisation. A paced client ([`schedule`]) sends on the slots of its target rate.
//!
//! TCP_CRR on the server: every transaction is a new connection routed to the session by
//! its token (like any data connection); the session hands it to the stream's responder
//! through a bounded queue ([`CRR_QUEUE`]); a connection that finds the queue full is closed
//! and counted, so a client cannot make the server hold more than that per stream.

pub mod bounceback;
pub mod client;
pub mod counters;
pub mod engine;
pub mod io;
pub mod latency;
pub mod schedule;
pub mod server;
mod summary;
pub mod watch;

use std::time::Duration;

pub use counters::{bump, LoopCtx, RrCounters};
pub use engine::{
    Connector, CrrInbox, CrrListener, RrClientData, RrConfig, RrEngine, RrOutcome, RrSocket,
    CRR_QUEUE,
};
pub use schedule::{wait_for_slot, Schedule};
pub use summary::{kind, summarize};

/// How often a blocked loop wakes to look at its stop flag.
pub const POLL: Duration = Duration::from_millis(100);
