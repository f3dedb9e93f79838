//! Command line: raw arguments ([`args`]) and their validation into plans ([`plan`]).

pub mod args;
pub mod plan;
pub mod units;
