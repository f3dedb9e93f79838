//! Running the external tools (`ip`, `tc`, `nft`, `sysctl`) with clear errors.
//!
//! Invariants:
//! * Tools are looked up in `PATH` first and then in `/usr/sbin`, `/sbin`,
//!   `/usr/bin`, `/bin` (a non-login root shell or `sudo` may lack the sbin
//!   directories). A missing tool is a [`LabError::MissingTool`] naming the
//!   Debian package that provides it.
//! * A failed command is a [`LabError::Command`] whose message is one line:
//!   the command line (tool name plus arguments, shell-quoted where needed)
//!   and its stderr with newlines folded into ` | `.
//! * Nothing here goes through a shell: arguments are passed verbatim.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{LabError, Result};

/// Directories searched after `PATH`.
const FALLBACK_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The Debian package that provides `tool`, for error messages.
pub fn package_for(tool: &str) -> &'static str {
    match tool {
        "ip" | "tc" => "iproute2",
        "nft" => "nftables",
        "sysctl" => "procps",
        "ping" => "iputils-ping",
        _ => "(unknown package)",
    }
}

/// Absolute path of `tool`, searching `PATH` and then the sbin directories.
pub fn tool_path(tool: &str) -> Result<PathBuf> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let from_path = std::env::split_paths(&path_var);
    let fallback = FALLBACK_DIRS.iter().map(PathBuf::from);
    for dir in from_path.chain(fallback) {
        let candidate = dir.join(tool);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(LabError::MissingTool {
        tool: tool.to_string(),
        package: package_for(tool).to_string(),
    })
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .map(|m| crate::os::executable(&m))
        .unwrap_or(false)
}

/// Renders a command line for messages: arguments containing anything but
/// `[A-Za-z0-9_./:=@%+,-]` are single-quoted.
pub fn cmdline<S: AsRef<OsStr>>(tool: &str, args: &[S]) -> String {
    let mut out = String::from(tool);
    for arg in args {
        out.push(' ');
        let arg = arg.as_ref().to_string_lossy();
        let plain = !arg.is_empty()
            && arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
        if plain {
            out.push_str(&arg);
        } else {
            out.push('\'');
            out.push_str(&arg.replace('\'', r"'\''"));
            out.push('\'');
        }
    }
    out
}

/// Folds multi-line command output into one trimmed line.
pub fn one_line(text: &[u8]) -> String {
    String::from_utf8_lossy(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Runs `tool args...`, returning its output whatever the exit status.
/// Errors only if the tool is missing or cannot be started.
pub fn output<S: AsRef<OsStr>>(tool: &str, args: &[S]) -> Result<Output> {
    let path = tool_path(tool)?;
    Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::io(format!("starting `{}`", cmdline(tool, args)), e))
}

/// Runs `tool args...` and fails with [`LabError::Command`] unless it exits 0.
pub fn run<S: AsRef<OsStr>>(tool: &str, args: &[S]) -> Result<Output> {
    let out = output(tool, args)?;
    check(tool, args, out)
}

/// Like [`run`], feeding `stdin` to the command (used for `nft -f -`).
pub fn run_with_stdin<S: AsRef<OsStr>>(tool: &str, args: &[S], stdin: &str) -> Result<Output> {
    let path = tool_path(tool)?;
    let line = || cmdline(tool, args);
    let mut child = Command::new(&path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LabError::io(format!("starting `{}`", line()), e))?;
    if let Some(mut pipe) = child.stdin.take() {
        // The tools read all of stdin before answering, so writing before
        // collecting output cannot deadlock for the small scripts we send.
        pipe.write_all(stdin.as_bytes())
            .map_err(|e| LabError::io(format!("writing stdin of `{}`", line()), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| LabError::io(format!("waiting for `{}`", line()), e))?;
    check(tool, args, out)
}

/// Turns a non-zero exit into [`LabError::Command`].
pub fn check<S: AsRef<OsStr>>(tool: &str, args: &[S], out: Output) -> Result<Output> {
    if out.status.success() {
        return Ok(out);
    }
    let mut stderr = one_line(&out.stderr);
    if stderr.is_empty() {
        let stdout = one_line(&out.stdout);
        stderr = if stdout.is_empty() {
            "(no output)".to_string()
        } else {
            format!("(stdout) {stdout}")
        };
    }
    Err(LabError::Command {
        cmdline: cmdline(tool, args),
        status: out.status.to_string(),
        stderr,
    })
}

/// `CAP_NET_ADMIN` bit number.
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_SYS_ADMIN` bit number (needed by `ip netns add` and `setns`).
const CAP_SYS_ADMIN: u32 = 21;

/// Extracts the effective capability mask from `/proc/self/status` text.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// Whether a capability mask has everything a lab needs.
pub fn caps_sufficient(cap_eff: u64) -> bool {
    let need = (1u64 << CAP_NET_ADMIN) | (1u64 << CAP_SYS_ADMIN);
    cap_eff & need == need
}

/// Fails with [`LabError::NotRoot`] unless the process has `CAP_NET_ADMIN`
/// and `CAP_SYS_ADMIN` (falls back to "effective uid is 0" when
/// `/proc/self/status` is unreadable).
pub fn require_privileges() -> Result<()> {
    let ok = match std::fs::read_to_string("/proc/self/status")
        .ok()
        .as_deref()
        .and_then(parse_cap_eff)
    {
        Some(mask) => caps_sufficient(mask),
        None => crate::os::is_root(),
    };
    if ok {
        Ok(())
    } else {
        Err(LabError::NotRoot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_quotes_only_when_needed() {
        assert_eq!(
            cmdline("ip", &["-n", "lr-x-a", "addr", "add", "10.1.2.1/24"]),
            "ip -n lr-x-a addr add 10.1.2.1/24"
        );
        assert_eq!(cmdline("nft", &["-f", "-", "a b", ""]), "nft -f - 'a b' ''");
        assert_eq!(cmdline("sh", &["it's"]), r"sh 'it'\''s'");
    }

    #[test]
    fn one_line_folds_output() {
        assert_eq!(
            one_line(b"Error: bad thing\n  more detail \n\n"),
            "Error: bad thing | more detail"
        );
        assert_eq!(one_line(b""), "");
    }

    #[test]
    fn cap_eff_parsing() {
        let root = "Name:\tcat\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n";
        let user = "Name:\tcat\nCapEff:\t0000000000000000\n";
        let net_only = "CapEff:\t0000000000001000\n";
        assert!(caps_sufficient(parse_cap_eff(root).unwrap()));
        assert!(!caps_sufficient(parse_cap_eff(user).unwrap()));
        assert!(!caps_sufficient(parse_cap_eff(net_only).unwrap()));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }

    #[test]
    fn missing_tool_names_package() {
        let err = tool_path("linerate-no-such-tool-xyz").unwrap_err();
        assert!(matches!(err, LabError::MissingTool { .. }), "{err}");
        assert_eq!(package_for("nft"), "nftables");
        assert_eq!(package_for("tc"), "iproute2");
    }

    #[test]
    fn command_error_is_one_line_with_cmdline_and_stderr() {
        let err = run("sh", &["-c", "echo first >&2; echo second >&2; exit 3"]).unwrap_err();
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(msg.contains("sh -c 'echo first"), "{msg}");
        assert!(msg.contains("first | second"), "{msg}");
        assert!(msg.contains("exit status: 3"), "{msg}");
    }

    #[test]
    fn stdin_is_fed() {
        let out = run_with_stdin("sh", &["-c", "cat"], "hello").unwrap();
        assert_eq!(out.stdout, b"hello");
    }
}
