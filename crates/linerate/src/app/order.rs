//! `serve --fleet-agent`: the runner of ordered tests ([`crate::session::server::order`]). An
//! order's test is parsed once and checked like the same command line (`cli::order`: test
//! options only), then against this agent's own serve limits (`--max-duration`,
//! `--max-streams`, `--max-rate`, `--max-write-size`, `--max-socket-buffer`) and its
//! targets (`--fleet-allow`, or another agent of the fleet), and run as a client of the
//! order's target, quietly: the record goes back to the coordinator, nothing is printed
//! or stored here.
//!
//! What an agent tests: an address or network its operator listed (`--fleet-allow`), or
//! another agent of its fleet: a server that asks the ordering user to authenticate and
//! proves it knows the same key. Towards any other host the test does not start, and the
//! error sent back is one fixed sentence: nothing the host answered (an SSH or HTTP
//! banner, whether its port is open) goes back to the coordinator.
//!
//! `--max-rate` refuses, never clamps: an ordered test above it (or without `-b`, which
//! sends as fast as it can) is refused with the limit in the error, because a clamped test
//! would measure what the coordinator did not order and be read as the path's capacity.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use linerate_wire::control::ServerLimits;
use linerate_wire::fleet::FleetOrder;
use serde_json::value::RawValue;

use crate::cli::order::{order_length, order_plan, AllowedNet};
use crate::model::plan::{Credentials, StreamPlan};
use crate::session::protocol::client::{self, Quiet, Target};
use crate::session::server::order::{CheckedTest, OrderRunner};

/// Runs ordered tests within the agent's limits.
pub struct Runner {
    /// The agent's own limits (what its `serve` accepts from a client).
    pub limits: ServerLimits,
    /// Set by SIGINT/SIGTERM: a running ordered test ends early.
    pub interrupt: Arc<AtomicBool>,
    /// Addresses and networks this agent may test besides the fleet's agents
    /// (`--fleet-allow`).
    pub allow: Vec<AllowedNet>,
}

/// An order's test as [`Runner::check`] parsed it: the plan towards the target's address,
/// and whether the operator listed that address.
struct Checked {
    plan: StreamPlan,
    addr: SocketAddr,
    listed: bool,
}

/// The one error an ordered test towards a host that is neither listed nor a fleet agent
/// sends back, whatever that host answered.
fn not_an_agent(order: &FleetOrder) -> String {
    format!(
        "the test towards {}:{} did not start: no agent of this fleet answered there (one that asks the ordering user to authenticate and proves it knows the same key), and this agent's operator did not list it (serve --fleet-allow ADDR|CIDR)",
        linerate_wire::text::clip(&order.target, 64),
        order.port
    )
}

impl Runner {
    /// The test's duration, streams and rate within this agent's limits.
    fn within_limits(&self, plan: &StreamPlan) -> Result<(), String> {
        let Some(len) = order_length(plan) else {
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
        if let (Some(max), None) = (self.limits.max_rate_bps, &plan.spec.rr) {
            match plan.spec.rate_bps {
                Some(r) if r <= max => {}
                Some(r) => return Err(format!(
                    "the test's rate of {r} bit/s is above this agent's --max-rate ({max} bit/s): give -b at or below it (refused, not clamped: a clamped test would not be the one ordered)"
                )),
                None => return Err(format!(
                    "this agent's --max-rate is {max} bit/s and the test is not paced: give -b at or below it"
                )),
            }
        }
        // The rest of what this agent's serve accepts from a client (write sizes, socket
        // buffers, intervals), by the same rules.
        crate::session::server::policy::limits::validate_spec(&plan.spec, &self.limits)
            .map_err(|(_, why)| format!("beyond this agent's serve limits: {why}"))
    }

    /// The target's address (resolved once: the test goes to the address checked) and
    /// whether the operator listed it.
    fn target(&self, order: &FleetOrder) -> Result<(SocketAddr, bool), String> {
        let addr = client::resolve(&order.target, order.port).map_err(|_| {
            format!(
                "cannot resolve the target {}",
                linerate_wire::text::clip(&order.target, 64)
            )
        })?;
        let listed = self.allow.iter().any(|n| n.contains(addr.ip()));
        Ok((addr, listed))
    }
}

impl OrderRunner for Runner {
    fn check(&self, order: &FleetOrder) -> Result<CheckedTest, String> {
        let mut plan = order_plan(&order.test, &order.target, order.port).map_err(|e| e.0)?;
        self.within_limits(&plan)?;
        let (addr, listed) = self.target(order)?;
        plan.host = addr.ip().to_string();
        Ok(Box::new(Checked { plan, addr, listed }))
    }

    fn run(
        &self,
        test: CheckedTest,
        order: &FleetOrder,
        auth: Option<Credentials>,
    ) -> (Option<Box<RawValue>>, Option<String>) {
        let Ok(c) = test.downcast::<Checked>() else {
            return (None, Some("the agent lost its checked test".into()));
        };
        let Checked {
            mut plan,
            addr,
            listed,
        } = *c;
        // Towards a host the operator did not list, the ordering user's key must be known
        // there: the session must authenticate both ways before anything else is said.
        plan.auth = auth.map(|a| Credentials {
            required: !listed,
            ..a
        });
        if !listed {
            let Some(creds) = plan.auth.clone() else {
                return (None, Some(not_an_agent(order)));
            };
            let probe = Target {
                addr,
                server: format!("{addr}"),
                connect_timeout: plan.connect_timeout,
                debug: plan.debug,
                auth: Some(creds),
            };
            if client::connect(&probe).is_err() {
                return (None, Some(not_an_agent(order)));
            }
        }
        // The destination, a fleet agent too, logs the test under the order's id.
        plan.spec.fleet_order = Some(Box::new(order.id.clone()));
        match client::run(&plan, &mut Quiet, &self.interrupt) {
            Ok(rec) => {
                let error = rec.failure.clone();
                (serde_json::value::to_raw_value(&rec).ok(), error)
            }
            Err(e) => (None, Some(format!("{e:#}"))),
        }
    }
}
