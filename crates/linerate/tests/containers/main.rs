//! The tests that run linerate in containers placed by a real orchestrator: a Docker engine
//! in Swarm mode on this host (started by the test when none runs, and stopped by it). All
//! are `#[ignore = "needs root: ..."]`; scripts/test.sh runs them LAST, after the lab tests,
//! because Docker loads nf_conntrack, whose table the lab's TCP_CRR tests would then fill.

mod engine;
mod swarm;
