//! RFC 2544 benchmarks of a device under test: throughput, latency, frame loss rate and
//! back-to-back frames, with linerate's UDP engine as the tester.
//!
//! The benchmarks ([`throughput`], [`latency`], [`frame_loss`], [`back_to_back`]) are pure
//! search logic over the [`trial::Trial`] trait: they are tested against
//! [`sim::SimulatedDut`] and run for real through [`net::NetTrial`], which turns each trial
//! into a UDP stream test against `linerate serve` on the far side of the device. See
//! docs/rfc2544.md for the method and its deviations from the RFC.

pub mod back_to_back;
pub mod chart;
pub mod frame_loss;
pub mod frame_sizes;
pub mod latency;
pub mod net;
pub mod record;
pub mod report;
pub mod run;
pub mod sim;
#[cfg(test)]
mod tests;
pub mod throughput;
pub mod trial;
