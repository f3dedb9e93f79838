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
/// Longest error text in a report, in characters; also the longest string of a report's
/// record that a coordinator keeps (longer ones are cut, with a note of how much).
pub const MAX_ERROR_LEN: usize = 1024;
/// Most JSON objects and arrays a report's record may hold. A record decodes into structs
/// far larger than its text when its objects are empty (`[{},{},...]` is 3 bytes an
/// object, a decoded interval hundreds), so a coordinator counts them before it decodes.
/// A real test's record holds one per 130-150 bytes of its JSON (a 1 s tcp test at
/// `-i 0.05`: 206 in 27,458 bytes), so one per 64 bytes of a 4 MiB frame leaves twice that
/// room and bounds the decoded record to tens of MB.
pub const MAX_RECORD_CONTAINERS: usize = 65_536;

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
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct FleetReport {
    /// The order's id.
    pub id: String,
    /// When the agent started the test (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended.
    pub ended_at: String,
    /// The test's record (linerate's RunRecord as JSON: both ends' reports), when the test
    /// ran far enough to have one. Kept as its text: a coordinator decodes it straight into
    /// its own type (never into a tree of `serde_json::Value`, which costs a hundred times
    /// the text for `[{"":0},...]`), after counting its containers
    /// ([`MAX_RECORD_CONTAINERS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub record: Option<Box<serde_json::value::RawValue>>,
    /// Why the test failed, when it did (the record, if any, holds what was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PartialEq for FleetReport {
    fn eq(&self, o: &Self) -> bool {
        (&self.id, &self.started_at, &self.ended_at, &self.error)
            == (&o.id, &o.started_at, &o.ended_at, &o.error)
            && self.record.as_ref().map(|r| r.get()) == o.record.as_ref().map(|r| r.get())
    }
}

/// How many JSON objects and arrays `json` holds (its `{` and `[` outside strings).
pub fn containers(json: &str) -> usize {
    let (mut n, mut in_string, mut escaped) = (0, false, false);
    for b in json.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => n += 1,
                _ => {}
            }
        }
    }
    n
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

    #[test]
    fn containers_are_counted_outside_strings() {
        assert_eq!(containers(r#"[{},{"a":[1,2]},"{[\"{"]"#), 4);
        assert_eq!(containers(r#"{"s":"a\\"}"#), 1);
        assert_eq!(containers("7"), 0);
    }
}
