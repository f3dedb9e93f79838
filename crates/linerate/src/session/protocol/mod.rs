//! linerate's control protocol: the two state machines without I/O ([`machine`]), the
//! framed control connection ([`conn`]), the optional authentication ([`auth`]), the
//! client's driver ([`client`]), and what both ends share: a test's streams as the engine
//! takes them ([`stream_setup`]), the engine a test runs ([`engine_select`]) and whether a
//! peer's figures can be true ([`plausible`]).

pub mod auth;
pub mod client;
pub mod conn;
pub mod engine_select;
pub mod machine;
pub mod plausible;
pub mod stream_setup;
