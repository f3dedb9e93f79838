//! Client and server sessions of the control protocol, iperf3 in both roles, and the side
//! sessions that use the protocol. The folders are the plan:
//!
//! * [`protocol`]: linerate's control protocol. Two state machines without I/O
//!   ([`protocol::machine`]), the framed connection ([`protocol::conn`]), the optional
//!   HMAC-SHA256 challenge-response ([`protocol::auth`]), the client's driver
//!   ([`protocol::client`]) and what both ends share (a test's streams as the engine takes
//!   them, the engine a test runs, whether a peer's figures can be true);
//! * [`server`]: `linerate serve`: the accept loop, one driver per control connection, a
//!   test's data sockets, the capture, and its [`server::policy`] (limits, hooks, metrics):
//!   what it allows and reports, apart from how it serves;
//! * [`iperf3`]: iperf3 in both roles (`--iperf3` against an iperf3 server; iperf3 clients
//!   on `linerate serve`'s port) and what they share; the wire format stays in
//!   `linerate_wire::iperf3`;
//! * [`side`]: `--dut` and `--latency`, users of the protocol's client rather than parts
//!   of it.
//!
//! See `docs/protocol.md` for the message sequence. The drivers do the socket work, run the
//! engines and feed the machines what happened and when. Each session runs on its own
//! thread and waits on one channel of control events, data connections and engine
//! intervals, always with a deadline, so that no peer can make it wait forever.

pub mod iperf3;
pub mod protocol;
pub mod server;
pub mod side;

/// Documented default port for control and data, TCP and UDP.
pub const DEFAULT_PORT: u16 = 5301;
