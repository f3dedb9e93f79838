//! The crate's error type.
//!
//! Every message fits on one line: command failures carry the full command
//! line and the command's stderr with newlines folded into ` | `.

use std::io;

/// Result alias used throughout the crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

/// Everything that can go wrong while building, using or tearing down a lab.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// The process lacks `CAP_NET_ADMIN` / `CAP_SYS_ADMIN`.
    #[error("linerate lab needs root (CAP_NET_ADMIN): run it with sudo")]
    NotRoot,

    /// A lab name that does not match `[a-z0-9-]{1,12}`.
    #[error("invalid lab name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: String,
    },

    /// An option value out of range (rate 0, loss outside 0..=1, ...).
    #[error("invalid lab option: {0}")]
    InvalidOption(String),

    /// A host name that the lab does not have.
    #[error("lab {lab:?} has no host {host:?} (hosts: {hosts})")]
    UnknownHost {
        /// The lab's name.
        lab: String,
        /// The requested host.
        host: String,
        /// The hosts the lab does have, comma separated.
        hosts: String,
    },

    /// A required external program is not installed.
    #[error(
        "`{tool}` not found in PATH, /usr/sbin or /sbin: install the Debian package `{package}`"
    )]
    MissingTool {
        /// The program, e.g. `nft`.
        tool: String,
        /// The Debian package providing it.
        package: String,
    },

    /// An external command exited unsuccessfully.
    #[error("command `{cmdline}` failed ({status}): {stderr}")]
    Command {
        /// The command line, space separated.
        cmdline: String,
        /// The exit status, e.g. `exit status: 2`.
        status: String,
        /// The command's stderr, trimmed, on one line.
        stderr: String,
    },

    /// An I/O error with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `opening /var/run/netns/lr-x-a`.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// `setns(2)` into a namespace failed.
    #[error("setns into network namespace {ns:?} failed: {source}")]
    Setns {
        /// The namespace name.
        ns: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Output of a command could not be understood.
    #[error("could not parse output of `{cmdline}`: {reason}")]
    Parse {
        /// The command whose output was parsed.
        cmdline: String,
        /// What was wrong with it.
        reason: String,
    },

    /// Tearing a lab down failed for one or more namespaces.
    #[error("tearing down lab {lab:?} failed: {}", errors.join("; "))]
    Teardown {
        /// The lab's name.
        lab: String,
        /// One message per failed step.
        errors: Vec<String>,
    },
}

impl LabError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        LabError::Io {
            context: context.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_root_message() {
        assert_eq!(
            LabError::NotRoot.to_string(),
            "linerate lab needs root (CAP_NET_ADMIN): run it with sudo"
        );
    }

    #[test]
    fn messages_are_one_line() {
        let errs = [
            LabError::MissingTool {
                tool: "nft".into(),
                package: "nftables".into(),
            },
            LabError::Teardown {
                lab: "x".into(),
                errors: vec!["one".into(), "two".into()],
            },
            LabError::UnknownHost {
                lab: "x".into(),
                host: "q".into(),
                hosts: "a, b".into(),
            },
        ];
        for e in errs {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        assert_eq!(
            LabError::Teardown {
                lab: "x".into(),
                errors: vec!["one".into(), "two".into()],
            }
            .to_string(),
            "tearing down lab \"x\" failed: one; two"
        );
    }
}
