//! The integration tests that need root: real clients and servers in network namespaces
//! built by linerate-lab (shaped and lossy links and routers, checked against `ip -s link`,
//! tshark, tcptrace, nftables counters), and packet capture. Every test is
//! `#[ignore = "needs root: ..."]`, so a plain `cargo test` passes without root; CI (as root)
//! runs them with `cargo test --test lab -- --ignored` (`scripts/test.sh`), and they fail
//! loudly without root rather than pass silently.

mod analyze;
mod board;
mod check;
#[path = "../common/mod.rs"]
mod common;
mod conntrack;
mod counters;
mod delay;
mod diagnose;
mod dut;
mod fleet;
mod latency;
mod multicast;
mod packets;
mod profile;
mod rawtx;
mod rfc2544;
mod rr;
mod soak;
mod stream;
mod sweep;
