//! Client and server sessions of the control protocol, and what both ends share.
//!
//! See `docs/protocol.md` for the message sequence. The protocol itself is two state
//! machines without I/O ([`machine`]); [`client`] and [`server`] are their drivers: they
//! do the socket work, run the engines ([`engine_select`]) and feed the machines what
//! happened and when. Each session runs on its own thread and waits on one channel of
//! control events, data connections and engine intervals, always with a deadline, so that
//! no peer can make it wait forever.
//!
//! * [`conn`]: framed control I/O and the reader thread;
//! * [`auth`]: the optional HMAC-SHA256 challenge-response (protocol 1.2);
//! * [`limits`]: what a server accepts, with the flag to change;
//! * [`order`]: `serve --fleet-agent`: third-party tests an authenticated coordinator orders;
//! * [`plausible`]: whether the figures a peer sends can be true;
//! * [`streams`]: a test's streams as the engine takes them, the same at both ends;
//! * [`iperf3`]: what both iperf3 roles share (timed, capped control reads; the drain);
//!   [`iperf3_client`] runs a test against an iperf3 server (`--iperf3`).

pub mod auth;
pub mod client;
pub mod conn;
pub mod dut;
pub mod engine_select;
pub mod hooks;
pub mod iperf3;
pub mod iperf3_client;
pub mod latency;
pub mod limits;
pub mod machine;
pub mod metrics;
pub mod order;
pub mod plausible;
pub mod server;
pub mod streams;

/// Documented default port for control and data, TCP and UDP.
pub const DEFAULT_PORT: u16 = 5301;
