//! Server-side hooks (`linerate serve --hooks FILE`): commands the server's operator
//! declares by name, each with typed, range-checked parameters, that a client may ask the
//! server to run between the points of a sweep (protocol feature `hooks`). Arbitrary
//! commands are never accepted from the network: a client names a declared hook and gives
//! its parameters' values; the server checks them, fills them into the operator's argv and
//! runs it without a shell. Each hook may declare a restore command, which the server runs
//! when the client's session ends (at the end of the sweep, or when the client goes away).
//!
//! ```toml
//! [hooks.mtu]
//! command = ["ip", "link", "set", "dev", "eth1", "mtu", "{mtu}"]
//! restore = ["ip", "link", "set", "dev", "eth1", "mtu", "1500"]
//! timeout = "10s"
//! params.mtu = { type = "int", min = 576, max = 9216 }
//!
//! [hooks.coalesce]
//! command = ["ethtool", "-C", "eth1", "rx-frames", "{rx_frames}"]
//! params.rx_frames = { type = "int", min = 1, max = 255 }
//! ```
//!
//! The board's core (without the `hooks` feature) has no TOML reader: app/serve.rs refuses
//! `--hooks` before anything runs, [`HookSet::parse`] refuses every text, and what only the
//! reader uses is left unused there.
#![cfg_attr(not(feature = "hooks"), allow(dead_code))]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

/// Most hooks a file may declare.
pub const MAX_HOOKS: usize = 64;
/// Longest time-out a hook may declare.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(300);
/// Time-out of a hook that declares none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest hook name or parameter name.
pub const MAX_NAME: usize = 64;
/// Largest hooks file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// A parameter's type and allowed values.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Param {
    /// A whole number in `min..=max`.
    Int {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// One of the listed words.
    Choice {
        /// The words allowed.
        values: Vec<String>,
    },
}

impl Param {
    /// Checks a value given by a client; the value as it goes into the command.
    pub fn check(&self, value: &str) -> Result<String, String> {
        match self {
            Param::Int { min, max } => match value.trim().parse::<i64>() {
                Ok(v) if (*min..=*max).contains(&v) => Ok(v.to_string()),
                Ok(v) => Err(format!("{v} is outside {min}..={max}")),
                Err(_) => Err(format!("'{}' is not a whole number", value.escape_debug())),
            },
            Param::Choice { values } => values
                .iter()
                .find(|w| w.as_str() == value)
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "'{}' is not one of {}",
                        value.escape_debug(),
                        values.join(", ")
                    )
                }),
        }
    }

    /// The allowed values in words.
    pub fn describe(&self) -> String {
        match self {
            Param::Int { min, max } => format!("integer {min}..={max}"),
            Param::Choice { values } => format!("one of {}", values.join(", ")),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookFile {
    #[serde(default)]
    hooks: BTreeMap<String, HookDef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookDef {
    #[serde(default)]
    description: Option<String>,
    command: Vec<String>,
    #[serde(default)]
    restore: Option<Vec<String>>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, Param>,
}

/// One declared hook.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// For people.
    pub description: Option<String>,
    /// The program and its arguments; `{param}` is replaced by the checked value.
    pub command: Vec<String>,
    /// Run when the session that used the hook ends.
    pub restore: Option<Vec<String>>,
    /// Longest the command may run.
    pub timeout: Duration,
    /// Its parameters.
    pub params: BTreeMap<String, Param>,
}

/// A hook ready to run: its argv with the values filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The hook's name.
    pub name: String,
    /// What to run.
    pub argv: Vec<String>,
    /// What to run at the session's end.
    pub restore: Option<Vec<String>>,
    /// Its time-out.
    pub timeout: Duration,
}

/// The hooks a server declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookSet {
    hooks: BTreeMap<String, Hook>,
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The `{name}`s of a word.
fn placeholders(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(i) = rest.find('{') {
        let tail = &rest[i + 1..];
        match tail.find('}') {
            Some(end) => {
                out.push(&tail[..end]);
                rest = &tail[end + 1..];
            }
            None => break,
        }
    }
    out
}

impl HookSet {
    /// Reads and checks a hooks file; errors are one line that names the file and says
    /// what to fix.
    pub fn load(path: &Path) -> Result<HookSet, String> {
        let shown = path.display();
        let text = crate::sys::files::read_text(path, MAX_FILE_BYTES, &format!("--hooks {shown}"))?;
        Self::parse(&text).map_err(|e| format!("--hooks {shown}: {e}"))
    }

    /// Parses and checks the text of a hooks file. A build without the `hooks` feature (the
    /// board's core) has no TOML reader and refuses every file with one line.
    #[cfg(not(feature = "hooks"))]
    pub fn parse(_text: &str) -> Result<HookSet, String> {
        Err("this build has no TOML reader: serve --hooks needs linerate's `hooks` feature (a full build)".to_string())
    }

    /// Parses and checks the text of a hooks file.
    #[cfg(feature = "hooks")]
    pub fn parse(text: &str) -> Result<HookSet, String> {
        let file: HookFile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            match line {
                Some(l) => format!("line {l}: {}", e.message()),
                None => e.message().to_string(),
            }
        })?;
        if file.hooks.len() > MAX_HOOKS {
            return Err(format!("more than {MAX_HOOKS} hooks"));
        }
        let mut hooks = BTreeMap::new();
        for (name, d) in file.hooks {
            if !valid_name(&name) {
                return Err(format!(
                    "hook '{name}': use letters, digits, _ and - (at most {MAX_NAME})"
                ));
            }
            if d.command.is_empty() || d.command[0].is_empty() {
                return Err(format!("hook {name}: command is empty"));
            }
            for (p, def) in &d.params {
                if !valid_name(p) {
                    return Err(format!(
                        "hook {name}: parameter '{p}': use letters, digits, _ and -"
                    ));
                }
                match def {
                    Param::Int { min, max } if min > max => {
                        return Err(format!(
                            "hook {name}: parameter {p}: min {min} is above max {max}"
                        ))
                    }
                    Param::Choice { values } if values.is_empty() => {
                        return Err(format!("hook {name}: parameter {p}: no values"))
                    }
                    _ => {}
                }
            }
            for w in &d.command {
                for ph in placeholders(w) {
                    if !d.params.contains_key(ph) {
                        return Err(format!(
                            "hook {name}: {{{ph}}} in the command is not one of its params"
                        ));
                    }
                }
            }
            if d.command.first().is_some_and(|p| p.contains('{')) {
                return Err(format!(
                    "hook {name}: the program itself cannot be a parameter"
                ));
            }
            if let Some(r) = &d.restore {
                if r.is_empty() || r.iter().any(|w| !placeholders(w).is_empty()) {
                    return Err(format!(
                        "hook {name}: restore must be a fixed command (no parameters)"
                    ));
                }
            }
            let timeout = match &d.timeout {
                None => DEFAULT_TIMEOUT,
                Some(t) => {
                    let t = humantime::parse_duration(t)
                        .map_err(|e| format!("hook {name}: timeout '{t}': {e} (e.g. \"10s\")"))?;
                    if t.is_zero() || t > MAX_TIMEOUT {
                        return Err(format!(
                            "hook {name}: timeout must be above 0 and at most {} s",
                            MAX_TIMEOUT.as_secs()
                        ));
                    }
                    t
                }
            };
            hooks.insert(
                name,
                Hook {
                    description: d.description,
                    command: d.command,
                    restore: d.restore,
                    timeout,
                    params: d.params,
                },
            );
        }
        Ok(HookSet { hooks })
    }

    /// The hooks' names.
    pub fn names(&self) -> Vec<&str> {
        self.hooks.keys().map(String::as_str).collect()
    }

    /// Whether no hook is declared.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Checks a client's request against the declaration: the hook exists, every parameter
    /// is given once and has a value of its type in its range, nothing else is given. The
    /// error is the sentence the client is sent.
    pub fn invocation(
        &self,
        name: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Invocation, String> {
        let Some(h) = self.hooks.get(name) else {
            let offered = if self.hooks.is_empty() {
                "it declares none (linerate serve --hooks FILE)".to_string()
            } else {
                format!("it declares {}", self.names().join(", "))
            };
            return Err(format!(
                "this server has no hook named '{}': {offered}",
                name.escape_debug()
            ));
        };
        for k in params.keys() {
            if !h.params.contains_key(k) {
                return Err(format!(
                    "hook {name} has no parameter '{}' (it takes {})",
                    k.escape_debug(),
                    h.params.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let mut values = BTreeMap::new();
        for (k, def) in &h.params {
            let Some(v) = params.get(k) else {
                return Err(format!("hook {name} needs {k} ({})", def.describe()));
            };
            let v = def.check(v).map_err(|e| format!("hook {name}: {k}: {e}"))?;
            values.insert(k.as_str(), v);
        }
        let argv = h
            .command
            .iter()
            .map(|w| {
                let mut out = w.clone();
                for (k, v) in &values {
                    out = out.replace(&format!("{{{k}}}"), v);
                }
                out
            })
            .collect();
        Ok(Invocation {
            name: name.to_string(),
            argv,
            restore: h.restore.clone(),
            timeout: h.timeout,
        })
    }
}

#[cfg(all(test, feature = "hooks"))]
mod tests {
    use super::*;

    const FILE: &str = r#"
[hooks.mtu]
command = ["ip", "link", "set", "dev", "eth1", "mtu", "{mtu}"]
restore = ["ip", "link", "set", "dev", "eth1", "mtu", "1500"]
timeout = "10s"
params.mtu = { type = "int", min = 576, max = 9216 }

[hooks.cc]
command = ["sysctl", "-w", "net.ipv4.tcp_congestion_control={cc}"]
params.cc = { type = "choice", values = ["cubic", "bbr"] }
"#;

    fn p(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn declared_hooks_take_checked_values_only() {
        let h = HookSet::parse(FILE).unwrap();
        assert_eq!(h.names(), vec!["cc", "mtu"]);
        let i = h.invocation("mtu", &p(&[("mtu", "9000")])).unwrap();
        assert_eq!(i.argv.last().unwrap(), "9000");
        assert_eq!(i.timeout, Duration::from_secs(10));
        assert_eq!(i.restore.unwrap().last().unwrap(), "1500");
        let i = h.invocation("cc", &p(&[("cc", "bbr")])).unwrap();
        assert_eq!(i.argv[2], "net.ipv4.tcp_congestion_control=bbr");
        for (name, params, needle) in [
            ("rm", p(&[]), "no hook named 'rm'"),
            ("mtu", p(&[("mtu", "100")]), "outside 576..=9216"),
            ("mtu", p(&[("mtu", "9000; rm -rf /")]), "not a whole number"),
            ("mtu", p(&[]), "needs mtu"),
            (
                "mtu",
                p(&[("mtu", "1500"), ("dev", "eth0")]),
                "no parameter 'dev'",
            ),
            ("cc", p(&[("cc", "reno")]), "not one of cubic, bbr"),
        ] {
            let e = h.invocation(name, &params).unwrap_err();
            assert!(e.contains(needle), "{name}: {e}");
        }
        let none = HookSet::default();
        assert!(none
            .invocation("mtu", &p(&[]))
            .unwrap_err()
            .contains("declares none"));
    }

    /// The shipped hooks file parses, and XAPP1127's campaign asks only for what it declares.
    #[test]
    fn the_example_hooks_file_is_valid() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let h = HookSet::load(&dir.join("xapp1127-target-hooks.toml")).unwrap();
        assert_eq!(h.names(), vec!["coalesce_rx", "coalesce_tx", "mtu"]);
        assert!(h
            .invocation("coalesce_rx", &p(&[("rx_frames", "255")]))
            .is_ok());
        assert!(h.invocation("mtu", &p(&[("mtu", "9000")])).is_ok());
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        for (text, needle) in [
            ("[hooks.x]\ncommand = []\n", "empty"),
            ("[hooks.x]\ncommand = [\"a\", \"{y}\"]\n", "{y}"),
            (
                "[hooks.x]\ncommand = [\"{y}\"]\nparams.y = { type = \"int\", min = 1, max = 2 }\n",
                "program",
            ),
            (
                "[hooks.x]\ncommand = [\"a\"]\nrestore = [\"b\", \"{y}\"]\n",
                "fixed",
            ),
            (
                "[hooks.x]\ncommand = [\"a\"]\ntimeout = \"1h\"\n",
                "timeout",
            ),
            (
                "[hooks.x]\ncommand = [\"a\"]\nparams.y = { type = \"int\", min = 3, max = 2 }\n",
                "min 3",
            ),
            (
                "[hooks.x]\ncommand = [\"a\"]\nparams.y = { type = \"text\" }\n",
                "line",
            ),
            ("[hooks.\"a b\"]\ncommand = [\"a\"]\n", "letters"),
            ("[hooks.x]\ncommand = [\"a\"]\nshell = true\n", "line"),
        ] {
            let e = HookSet::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
