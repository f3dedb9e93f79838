//! One integration-test binary (ripgrep's layout): real clients and servers on 127.0.0.1
//! with port 0, the CLI as a subprocess, and lab tests in network namespaces.

mod analyze;
mod auth;
mod cli;
mod common;
mod compare;
mod counters;
mod diagnose;
mod fake;
mod lab;
mod packets;
mod results;
mod rfc2544;
mod robustness;
mod rr;
mod stream;
mod udp_ports;
