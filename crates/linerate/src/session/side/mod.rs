//! Side sessions: users of the protocol's client rather than parts of it. [`dut`] reads a
//! device's counters through a second linerate server (`--dut`); [`latency`] measures
//! request/response latency beside a stream test (`--latency`).

pub mod dut;
pub mod latency;
pub mod multicast;
