//! `serve --fleet-agent`: the agent's side of third-party tests (feature `fleet_orders`,
//! `linerate_wire::fleet`). An authenticated coordinator orders the agent to run a tcp,
//! udp or rr test towards another server; the agent runs it as a client (authenticated
//! there as the same user, with the key from its own `--auth-users` file) and returns the
//! test's record. One ordered test at a time: a second order while one runs is refused
//! as `busy`.
//!
//! The session drivers hand an order to [`Agent::take`]; what parses the test's words and
//! runs it is the application's [`OrderRunner`] (the command line is above this layer).
//! Every ordered test is logged on stderr as two lines, whatever `serve --quiet` says:
//! `fleet: test ID start at=TIME ...` and `fleet: test ID end at=TIME ... status=...`
//! (wall-clock times in RFC 3339), so that an engine's logs show which tests overlapped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use linerate_wire::control::{ErrorCode, MAX_CONTROL_FRAME};
use linerate_wire::fleet::{FleetOrder, FleetReport, MAX_ERROR_LEN, MAX_RECORD_CONTAINERS};
use serde_json::value::RawValue;

use crate::model::plan::Credentials;
use crate::session::protocol::auth::Users;

/// An order's test as [`OrderRunner::check`] parsed it, handed back to
/// [`OrderRunner::run`]: the words are parsed once.
pub type CheckedTest = Box<dyn std::any::Any + Send>;

/// What runs an ordered test: parses its words, checks them against the agent's caps and
/// runs it as a client of `order.target`.
pub trait OrderRunner: Send + Sync {
    /// Whether the agent takes this test (its words are test options it allows, its
    /// duration, streams, rate and target within the agent's caps), parsed; the error says
    /// which cap or word, in one line.
    fn check(&self, order: &FleetOrder) -> Result<CheckedTest, String>;
    /// Runs the checked test towards the target; the record (RunRecord as JSON text) if
    /// the test ran far enough to have one, and the error if it failed.
    fn run(
        &self,
        test: CheckedTest,
        order: &FleetOrder,
        auth: Option<Credentials>,
    ) -> (Option<Box<RawValue>>, Option<String>);
}

/// Room a `fleet_report` frame needs besides its record: its id, times and error (each at
/// most [`MAX_ERROR_LEN`] characters, up to 12 bytes each escaped) and the envelope.
const REPORT_ROOM: usize = 4 * 12 * MAX_ERROR_LEN + 1024;

/// The record and error to report: a record too large for a `fleet_report` frame, or with
/// more containers than a coordinator takes, is left out and the test fails with that
/// reason (the coordinator stores the pair as failed, and the agent logs it so).
fn fit_record(
    record: Option<Box<RawValue>>,
    error: Option<String>,
) -> (Option<Box<RawValue>>, Option<String>) {
    let Some(rec) = record else {
        return (None, error);
    };
    let room = MAX_CONTROL_FRAME as usize - REPORT_ROOM;
    let len = rec.get().len();
    let why = if len > room {
        format!("the test's record is {len} bytes, more than a fleet_report carries ({room}): a shorter -t or a longer -i keeps it smaller")
    } else if linerate_wire::fleet::containers(rec.get()) > MAX_RECORD_CONTAINERS {
        format!("the test's record holds more than the {MAX_RECORD_CONTAINERS} objects and arrays a coordinator takes: a shorter -t or a longer -i keeps it smaller")
    } else {
        return (Some(rec), error);
    };
    (
        None,
        Some(error.map_or(why.clone(), |e| format!("{e}; {why}"))),
    )
}

/// The agent: its runner, who may order, and the one ordered test it may run at a time.
pub struct Agent {
    runner: Arc<dyn OrderRunner>,
    /// The users who may order (`serve --fleet-coordinators`).
    coordinators: Vec<String>,
    /// The id of the ordered test running, if any.
    running: Mutex<Option<String>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").finish_non_exhaustive()
    }
}

/// Frees the agent's slot when the ordered test ends, however it ends.
struct Slot<'a>(&'a Mutex<Option<String>>);
impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut r) = self.0.lock() {
            *r = None;
        }
    }
}

/// Now, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

impl Agent {
    /// An agent that runs orders from the users `coordinators` with `runner`.
    pub fn new(runner: Arc<dyn OrderRunner>, coordinators: Vec<String>) -> Agent {
        Agent {
            runner,
            coordinators,
            running: Mutex::new(None),
        }
    }

    /// Takes an order from `peer`, authenticated as `user`: refuses it (the error code and
    /// text `error` carries) or runs it and reports. `users` is the agent's users file.
    pub fn take(
        &self,
        order: &FleetOrder,
        user: Option<&str>,
        users: Option<&Users>,
        peer: SocketAddr,
    ) -> Result<FleetReport, (ErrorCode, String)> {
        let Some(user) = user else {
            return Err((
                ErrorCode::AuthRequired,
                "fleet orders are taken only from an authenticated user: start the agent with --auth-users FILE and the coordinator with --auth-user".into(),
            ));
        };
        if !self.coordinators.iter().any(|c| c == user) {
            return Err((
                ErrorCode::BadRequest,
                format!(
                    "fleet orders are taken only from this agent's coordinators (serve --fleet-coordinators), and {} is not one",
                    linerate_wire::text::clip(user, 64)
                ),
            ));
        }
        order
            .check_sizes()
            .map_err(|e| (ErrorCode::BadRequest, format!("fleet order refused: {e}")))?;
        let checked = self
            .runner
            .check(order)
            .map_err(|e| (ErrorCode::BadRequest, format!("fleet order refused: {e}")))?;
        let _slot = {
            let mut running = self.running.lock().map_err(|_| {
                (
                    ErrorCode::Internal,
                    "the agent's order slot is unavailable".to_string(),
                )
            })?;
            if let Some(id) = running.as_ref() {
                return Err((
                    ErrorCode::Busy,
                    format!("busy: this agent runs ordered test {id}; it runs one at a time"),
                ));
            }
            *running = Some(order.id.clone());
            Slot(&self.running)
        };
        let auth = users.and_then(|u| u.key(user)).map(|k| Credentials {
            user: user.to_string(),
            key: k.clone(),
            required: false,
        });
        let target = linerate_wire::text::escape(&order.target).into_owned();
        let test = linerate_wire::text::clip(&order.test.join(" "), 200);
        let started_at = now_rfc3339();
        eprintln!(
            "fleet: test {} start at={started_at} role=source target={target}:{} by={} from={} test={test:?}",
            order.id,
            order.port,
            linerate_wire::text::escape(user),
            peer.ip(),
        );
        let (record, error) = self.runner.run(checked, order, auth);
        let (record, error) = fit_record(record, error);
        let error = error.map(|e| linerate_wire::text::clip(&e, MAX_ERROR_LEN));
        let ended_at = now_rfc3339();
        let status = match &error {
            None => "ok".to_string(),
            Some(e) => format!("failed: {}", linerate_wire::text::escape(e)),
        };
        eprintln!(
            "fleet: test {} end at={ended_at} role=source target={target}:{} status={status}",
            order.id, order.port
        );
        Ok(FleetReport {
            id: order.id.clone(),
            started_at,
            ended_at,
            record,
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    /// A runner that waits on a barrier (so a second order arrives while it runs).
    struct Waiting {
        inside: Barrier,
        leave: Barrier,
        ran: AtomicUsize,
    }
    impl OrderRunner for Waiting {
        fn check(&self, o: &FleetOrder) -> Result<CheckedTest, String> {
            if o.test[0] == "bad" {
                return Err("not a test".into());
            }
            Ok(Box::new(o.test.len()))
        }
        fn run(
            &self,
            test: CheckedTest,
            _: &FleetOrder,
            auth: Option<Credentials>,
        ) -> (Option<Box<RawValue>>, Option<String>) {
            // What check parsed comes back: the words are not parsed again.
            assert_eq!(test.downcast_ref::<usize>(), Some(&3));
            self.ran.fetch_add(1, Ordering::SeqCst);
            self.inside.wait();
            self.leave.wait();
            let rec = serde_json::json!({"user": auth.map(|c| c.user)});
            (serde_json::value::to_raw_value(&rec).ok(), None)
        }
    }

    fn order(id: &str) -> FleetOrder {
        FleetOrder {
            id: id.into(),
            test: vec!["tcp".into(), "-t".into(), "1".into()],
            target: "198.18.0.2".into(),
            port: 5301,
        }
    }

    #[test]
    fn one_order_at_a_time_and_only_authenticated() {
        let runner = Arc::new(Waiting {
            inside: Barrier::new(2),
            leave: Barrier::new(2),
            ran: AtomicUsize::new(0),
        });
        let agent = Arc::new(Agent::new(runner.clone(), vec!["coord".into()]));
        let users = Users::parse("coord:secret-of-coord\nother:secret-of-other\n").unwrap();
        let peer: SocketAddr = "198.18.0.9:40000".parse().unwrap();
        // Unauthenticated: refused before anything runs.
        let e = agent
            .take(&order("a"), None, Some(&users), peer)
            .unwrap_err();
        assert_eq!(e.0, ErrorCode::AuthRequired);
        // Authenticated, but not one of the agent's coordinators: refused, nothing runs.
        let e = agent
            .take(&order("a"), Some("other"), Some(&users), peer)
            .unwrap_err();
        assert_eq!(e.0, ErrorCode::BadRequest);
        assert!(e.1.contains("--fleet-coordinators"), "{}", e.1);
        // A test the runner refuses: bad_request, nothing runs.
        let mut bad = order("b");
        bad.test[0] = "bad".into();
        let e = agent
            .take(&bad, Some("coord"), Some(&users), peer)
            .unwrap_err();
        assert_eq!(e.0, ErrorCode::BadRequest);
        assert!(e.1.contains("not a test"), "{}", e.1);
        // Oversized: refused by the caps.
        let mut big = order("c");
        big.test = vec!["-t".into(); linerate_wire::fleet::MAX_TEST_WORDS + 1];
        assert_eq!(
            agent
                .take(&big, Some("coord"), Some(&users), peer)
                .unwrap_err()
                .0,
            ErrorCode::BadRequest
        );
        assert_eq!(runner.ran.load(Ordering::SeqCst), 0);
        // One runs; a second order meanwhile is busy.
        let (a2, u2) = (agent.clone(), users.clone());
        let first =
            std::thread::spawn(move || a2.take(&order("d"), Some("coord"), Some(&u2), peer));
        runner.inside.wait();
        let e = agent
            .take(&order("e"), Some("coord"), Some(&users), peer)
            .unwrap_err();
        assert_eq!(e.0, ErrorCode::Busy);
        assert!(e.1.contains("ordered test d"), "{}", e.1);
        runner.leave.wait();
        let report = first.join().unwrap().unwrap();
        assert_eq!(report.id, "d");
        // The runner got the ordering user's credentials from the agent's users file.
        let rec: serde_json::Value = serde_json::from_str(report.record.unwrap().get()).unwrap();
        assert_eq!(rec["user"], "coord");
        // The slot is free again.
        let (a3, u3) = (agent.clone(), users.clone());
        let third =
            std::thread::spawn(move || a3.take(&order("f"), Some("coord"), Some(&u3), peer));
        runner.inside.wait();
        runner.leave.wait();
        assert!(third.join().unwrap().is_ok());
        assert_eq!(runner.ran.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_record_too_large_to_send_fails_the_test_with_the_reason() {
        let raw = |s: String| Some(RawValue::from_string(s).unwrap());
        // Just under the room: sent as it is.
        let fits = format!(
            "\"{}\"",
            "x".repeat(MAX_CONTROL_FRAME as usize - REPORT_ROOM - 2)
        );
        let (rec, err) = fit_record(raw(fits), None);
        assert!(rec.is_some() && err.is_none());
        // One byte more: no record, and the error says why.
        let over = format!(
            "\"{}\"",
            "x".repeat(MAX_CONTROL_FRAME as usize - REPORT_ROOM - 1)
        );
        let (rec, err) = fit_record(raw(over), Some("cut short".into()));
        let err = err.unwrap();
        assert!(rec.is_none());
        assert!(err.starts_with("cut short; the test's record is "), "{err}");
        assert!(err.contains("-i"), "{err}");
        // Small but made of more containers than a coordinator takes.
        let many = format!("[{}]", vec!["[]"; MAX_RECORD_CONTAINERS].join(","));
        let (rec, err) = fit_record(raw(many), None);
        assert!(rec.is_none() && err.unwrap().contains("objects and arrays"));
    }
}
