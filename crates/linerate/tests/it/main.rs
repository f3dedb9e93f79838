//! One integration-test binary (ripgrep's layout): real clients and servers on 127.0.0.1
//! with port 0 and the CLI as a subprocess; nothing here needs root. The tests that do
//! (network namespaces, packet capture) are in `tests/lab/`.

#[cfg(feature = "analyze")]
mod analyze;
mod auth;
mod board;
#[cfg(feature = "store")]
mod check;
mod classic;
mod cli;
#[path = "../common/mod.rs"]
mod common;
mod compare;
mod copy_modes;
mod counters;
mod diagnose;
mod fake;
mod figures;
#[cfg(feature = "fleet")]
mod fleet;
#[cfg(feature = "fleet")]
mod fleet_peers;
#[cfg(feature = "generate")]
mod generate;
mod hardening;
mod iperf3;
mod iperf3_client;
mod latency;
mod metrics;
mod multicast;
mod profile;
#[cfg(feature = "quic")]
mod quic;
#[cfg(feature = "report")]
mod report;
mod results;
mod rfc2544;
mod robustness;
mod rr;
mod server_security;
#[cfg(feature = "store")]
mod store;
mod stream;
#[cfg(feature = "sweep")]
mod sweep;
mod udp_ports;
mod versions;
