//! Wire formats of linerate, with no I/O and no clock.
//!
//! Everything a linerate client and server put on the network is defined here:
//!
//! * [`capture`]: captured frames (pcap link types, IP, TCP, UDP) for the trace analysis;
//! * [`control`]: the framed control protocol (8-byte header, JSON body) and its messages;
//! * [`stream_hello`]: the fixed 24 bytes that open every TCP data connection and tie it to a test;
//! * [`probe`]: the header at the front of every UDP test datagram;
//! * [`report`]: the measurement records the two ends exchange at the end of a test;
//! * [`host`]: host counters and interface facts each end measures around a test;
//! * [`doctor`]: the findings `linerate doctor` reports for a host (and asks a server for);
//! * [`iperf3`]: iperf3's control protocol (cookie, state bytes, JSON messages), for its clients;
//! * [`text`]: strings from a peer made safe to print (escapes, length cuts).
//!
//! The contract follows smoltcp's `Packet`/`Repr` split: a view over bytes is checked once
//! (`new_checked`) and no accessor panics afterwards; `parse` turns a checked view into a plain
//! value and `emit` writes a value into a buffer that the caller sized with `buffer_len`.
//! Lengths from the network are compared with a cap before any allocation.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod capture;
pub mod control;
pub mod device;
pub mod doctor;
mod error;
pub mod fleet;
#[doc(hidden)]
pub mod fuzz;
pub mod hex;
pub mod hooks;
pub mod host;
pub mod iperf3;
pub mod json;
pub mod multicast;
pub mod probe;
pub mod profile;
pub mod report;
pub mod stream_hello;
pub mod text;

pub use error::{WireError, WireErrorKind};

/// Serializes `value` as pretty JSON Schema for `T`. Used to generate the documented schemas.
pub fn schema_for<T: schemars::JsonSchema>() -> schemars::schema::RootSchema {
    schemars::schema_for!(T)
}
