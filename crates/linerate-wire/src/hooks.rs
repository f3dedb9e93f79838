//! The `hooks` exchange (feature `hooks`): between the points of a sweep, a client asks the
//! server to run a hook its operator declared (`linerate serve --hooks FILE`) with values for
//! its parameters; the server checks them against the declaration, runs it and answers with
//! its outcome. The client names a hook and gives values, never a command.
//!
//! `C: hello  S: welcome  (C: hook_request  S: hook_result)*  C: closes` — the session stays
//! open between requests, and when it ends (the client closes, goes away, or waits past the
//! server's limit) the server runs the restore command of every hook that ran.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most parameters in one request.
pub const MAX_PARAMS: usize = 16;
/// Longest hook name, parameter name or value.
pub const MAX_TEXT: usize = 128;
/// Bytes of a hook's stdout and of its stderr returned.
pub const MAX_OUTPUT: usize = 4096;

/// Client → server: run the declared hook `name` with these values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookRequest {
    /// The hook's name in the server's file.
    pub name: String,
    /// A value for each of its parameters.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

impl HookRequest {
    /// Checks the sizes a peer could abuse; the error says which.
    pub fn check_sizes(&self) -> Result<(), String> {
        if self.params.len() > MAX_PARAMS {
            return Err(format!("more than {MAX_PARAMS} hook parameters"));
        }
        let long = std::iter::once(&self.name)
            .chain(self.params.keys())
            .chain(self.params.values())
            .any(|s| s.len() > MAX_TEXT);
        if long {
            return Err(format!(
                "a hook name, parameter or value longer than {MAX_TEXT} bytes"
            ));
        }
        Ok(())
    }
}

/// Server → client: how the hook ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookResult {
    /// The hook's name.
    pub name: String,
    /// The command the server ran (the declaration with the values filled in).
    pub argv: Vec<String>,
    /// Its exit status; absent when it was killed or did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// It was killed at the hook's time-out.
    #[serde(default)]
    pub timed_out: bool,
    /// The start of its standard output (at most [`MAX_OUTPUT`] bytes).
    #[serde(default)]
    pub stdout: String,
    /// The start of its standard error, or why it did not start.
    #[serde(default)]
    pub stderr: String,
    /// How long it ran, milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

/// `s` cut to at most `max` bytes on a character boundary.
pub fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request in its control message: control/envelopes.rs.
    #[test]
    fn golden_and_caps() {
        let r: HookResult = serde_json::from_str(r#"{"name":"mtu","argv":["ip"]}"#).unwrap();
        assert_eq!(r.exit_code, None);
        let mut big = HookRequest::default();
        for i in 0..=MAX_PARAMS {
            big.params.insert(i.to_string(), "1".into());
        }
        assert!(big.check_sizes().is_err());
        let long = HookRequest {
            name: "x".repeat(MAX_TEXT + 1),
            ..HookRequest::default()
        };
        assert!(long.check_sizes().is_err());
        assert_eq!(truncate("héllo".into(), 2), "h");
    }
}
