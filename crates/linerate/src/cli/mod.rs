//! Command line: raw arguments ([`args`]) and their validation into plans ([`plan`]).

pub mod analyze;
pub mod args;
pub mod doctor;
pub mod lab;
pub mod plan;
pub mod rfc2544;
pub mod rr_args;
pub mod rr_plan;
pub mod units;
