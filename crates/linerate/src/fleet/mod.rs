//! The fleet coordinator (`linerate fleet run`) and the engines' objects (`linerate fleet
//! manifests`). A fleet is a set of agents (`linerate serve --fleet-agent`); the
//! coordinator plans every ordered pair into rounds of disjoint pairs ([`plan`]) and has
//! one agent of each pair run the test towards the other (a third-party test, the
//! `fleet_order` message of the control protocol). The agent's side is in the core
//! (`session::server::order`); this module needs the store, where every pair is kept.

pub mod coordinator;
pub mod manifests;
pub mod plan;
pub mod record;
