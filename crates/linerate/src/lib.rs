//! linerate: network performance tests with both ends' CPU cost.
//!
//! The binary's `main` parses [`cli::args::Args`] and calls [`app::run`]. See
//! `docs/ARCHITECTURE.md` for the parts and how data flows through them.
//!
//! No `unsafe` outside the few modules that call the kernel through raw pointers; each is
//! allowed by name where it is declared (`sys::afpacket`, `sys::capture`, `sys::ethtool`,
//! `sys::tcp_info`, `engine::mmsg`), and every block in them has a `// SAFETY:` comment.

//! Cargo features (`Cargo.toml`): every build has the core a board runs; `store`, `chart`,
//! `analyze`, `report`, `sweep` and `lab` add the workstation's tools (all by default).

#![deny(unsafe_code)]

#[cfg(feature = "analyze")]
pub mod analyze;
pub mod app;
pub mod cli;
pub mod diagnose;
pub mod doctor;
pub mod engine;
pub mod export;
#[cfg(feature = "fleet")]
pub mod fleet;
pub mod model;
pub mod repeat;
pub mod rfc2544;
pub mod rr;
pub mod session;
#[cfg(feature = "store")]
pub mod store;
pub mod sys;

/// "linerate x.y.z", as sent in hellos and recorded in results.
pub fn software() -> String {
    format!("linerate {}", env!("CARGO_PKG_VERSION"))
}
