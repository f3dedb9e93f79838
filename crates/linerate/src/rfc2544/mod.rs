//! RFC 2544 benchmarks of a device under test: throughput, latency, frame loss rate and
//! back-to-back frames, with linerate's UDP engine as the tester.
//!
//! The benchmarks ([`throughput`], [`latency`], [`frame_loss`], [`back_to_back`]) are pure
//! search logic over the [`trial::Trial`] trait: they are tested against
//! [`sim::SimulatedDut`] and run for real through `app::rfc2544::net::NetTrial`, which turns
//! each trial into a UDP stream test against `linerate serve` on the far side of the device.
//! [`run`] runs them over the frame sizes into a [`record::Rfc2544Record`], which
//! `export::rfc2544` renders. See docs/rfc2544.md for the method and its deviations from the
//! RFC.

pub mod back_to_back;
pub mod compare;
pub mod frame_loss;
pub mod frame_sizes;
pub mod latency;
pub mod record;
pub mod run;
pub mod sim;
#[cfg(test)]
pub(crate) mod tests;
pub mod throughput;
pub mod trial;
