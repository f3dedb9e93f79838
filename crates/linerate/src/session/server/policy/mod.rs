//! What a server allows and reports, apart from how it serves: the limits it accepts
//! ([`limits`]), the commands it runs for a client ([`hooks`]) and the counters it exports
//! ([`metrics`]).

pub mod hooks;
pub mod limits;
pub mod metrics;
