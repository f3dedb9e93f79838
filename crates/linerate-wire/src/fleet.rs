//! The `fleet_orders` exchange: a third-party test. An authenticated client (the fleet
//! coordinator, `linerate fleet run`) orders an agent (`linerate serve --fleet-agent`) to
//! run a tcp, udp or rr test towards another linerate server, and gets back the test's
//! record, which holds both ends' reports.
//!
//! `C: hello  S: welcome{auth}  C: auth  S: auth_ok  C: fleet_order  S: fleet_report, done`
//! — or `S: error` (`busy`: the agent runs another ordered test; `bad_request`: the order
//! is refused, e.g. by the agent's caps; `auth_required`: the session is not
//! authenticated). An agent started without `--fleet-agent` refuses every order; an agent
//! whose welcome does not list `fleet_orders` (older than this feature) is never sent one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest order id.
pub const MAX_ID_LEN: usize = 64;
/// Most words of an order's test (its command and options).
pub const MAX_TEST_WORDS: usize = 64;
/// Longest word of an order's test.
pub const MAX_WORD_LEN: usize = 256;
/// Longest target host name.
pub const MAX_HOST_LEN: usize = 255;
/// Longest error text in a report.
pub const MAX_ERROR_LEN: usize = 1024;

/// Client → agent (feature `fleet_orders`), instead of `test_request`: run this test
/// towards `target`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FleetOrder {
    /// The order's id, chosen by the coordinator; logged by both agents and returned.
    pub id: String,
    /// The test as on linerate's command line without the host: `["tcp", "-t", "2"]`.
    pub test: Vec<String>,
    /// The other agent's host name or address.
    pub target: String,
    /// The other agent's control port.
    pub port: u16,
}

impl FleetOrder {
    /// Checks the sizes a peer could abuse; the error says which.
    pub fn check_sizes(&self) -> Result<(), String> {
        if self.id.is_empty() || self.id.len() > MAX_ID_LEN {
            return Err(format!("an order id must have 1 to {MAX_ID_LEN} bytes"));
        }
        if !self
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        {
            return Err("an order id may only hold letters, digits and - _ . :".into());
        }
        if self.test.is_empty() || self.test.len() > MAX_TEST_WORDS {
            return Err(format!(
                "an order's test must have 1 to {MAX_TEST_WORDS} words"
            ));
        }
        if self.test.iter().any(|w| w.len() > MAX_WORD_LEN) {
            return Err(format!(
                "a word of an order's test is longer than {MAX_WORD_LEN} bytes"
            ));
        }
        if self.target.is_empty() || self.target.len() > MAX_HOST_LEN || self.port == 0 {
            return Err(format!(
                "an order's target must be a host name of 1 to {MAX_HOST_LEN} bytes and a port other than 0"
            ));
        }
        Ok(())
    }
}

/// Agent → client (feature `fleet_orders`): how the ordered test went; `done` follows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetReport {
    /// The order's id.
    pub id: String,
    /// When the agent started the test (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended.
    pub ended_at: String,
    /// The test's record (linerate's RunRecord as JSON: both ends' reports), when the test
    /// ran far enough to have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<serde_json::Value>,
    /// Why the test failed, when it did (the record, if any, holds what was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> FleetOrder {
        FleetOrder {
            id: "rack7-r3-a-b".into(),
            test: vec!["tcp".into(), "-t".into(), "2".into()],
            target: "198.18.0.2".into(),
            port: 5301,
        }
    }

    #[test]
    fn sizes_are_capped() {
        assert!(order().check_sizes().is_ok());
        let mut o = order();
        o.id = "x".repeat(MAX_ID_LEN + 1);
        assert!(o.check_sizes().is_err());
        let mut o = order();
        o.id = "a b".into();
        assert!(o.check_sizes().unwrap_err().contains("order id"));
        let mut o = order();
        o.test = vec!["-t".into(); MAX_TEST_WORDS + 1];
        assert!(o.check_sizes().is_err());
        let mut o = order();
        o.test = vec![];
        assert!(o.check_sizes().is_err());
        let mut o = order();
        o.test[1] = "x".repeat(MAX_WORD_LEN + 1);
        assert!(o.check_sizes().is_err());
        let mut o = order();
        o.port = 0;
        assert!(o.check_sizes().is_err());
    }
}
