//! `serve --fleet-agent`: the runner of ordered tests ([`crate::session::server::order`]). An
//! order's test is parsed and checked like the same command line (`cli::order`), then
//! against this agent's limits (`--max-duration`, `--max-streams`), and run as a client of
//! the order's target, quietly: the record goes back to the coordinator, nothing is printed
//! or stored here.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use linerate_wire::control::ServerLimits;
use linerate_wire::fleet::FleetOrder;

use crate::cli::order::{order_length, order_plan};
use crate::model::plan::Credentials;
use crate::session::protocol::client::{self, Quiet};
use crate::session::server::order::OrderRunner;

/// Runs ordered tests within the agent's limits.
pub struct Runner {
    /// The agent's own limits (what its `serve` accepts from a client).
    pub limits: ServerLimits,
    /// Set by SIGINT/SIGTERM: a running ordered test ends early.
    pub interrupt: Arc<AtomicBool>,
}

impl OrderRunner for Runner {
    fn check(&self, order: &FleetOrder) -> Result<(), String> {
        let plan = order_plan(&order.test, &order.target, order.port).map_err(|e| e.0)?;
        let Some(len) = order_length(&plan) else {
            return Err("the test has no duration".into());
        };
        let len_ms = u64::try_from(len.as_millis()).unwrap_or(u64::MAX);
        if len_ms > self.limits.max_duration_ms {
            return Err(format!(
                "the test runs {} ms, longer than this agent's --max-duration ({} ms)",
                len_ms, self.limits.max_duration_ms
            ));
        }
        if plan.spec.streams > self.limits.max_streams {
            return Err(format!(
                "the test has {} streams, more than this agent's --max-streams ({})",
                plan.spec.streams, self.limits.max_streams
            ));
        }
        Ok(())
    }

    fn run(
        &self,
        order: &FleetOrder,
        auth: Option<Credentials>,
    ) -> (Option<serde_json::Value>, Option<String>) {
        let mut plan = match order_plan(&order.test, &order.target, order.port) {
            Ok(p) => p,
            Err(e) => return (None, Some(e.0)),
        };
        plan.auth = auth;
        // The destination, a fleet agent too, logs the test under the order's id.
        plan.spec.fleet_order = Some(Box::new(order.id.clone()));
        match client::run(&plan, &mut Quiet, &self.interrupt) {
            Ok(rec) => {
                let error = rec.failure.clone();
                (linerate_wire::json::to_value(&rec).ok(), error)
            }
            Err(e) => (None, Some(format!("{e:#}"))),
        }
    }
}
