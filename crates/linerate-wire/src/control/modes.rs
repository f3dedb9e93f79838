//! How a TCP stream's ends move their data through the kernel: what a test asks for
//! ([`super::message::TestSpec`]) and what each end reports it did
//! ([`crate::report::SideReport`]). A leaf of its own, so that the report and the messages
//! that carry it both name the modes without importing each other.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a TCP sender hands data to the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendMode {
    /// `send(2)` from a user buffer: the kernel copies the data into socket buffers.
    #[default]
    Copy,
    /// `send(2)` with `MSG_ZEROCOPY` on a socket with `SO_ZEROCOPY`: the kernel pins the
    /// user pages instead of copying them, and reports on the socket's error queue when
    /// it is done with them, or that it copied them anyway (`--zerocopy`).
    Zerocopy,
    /// `sendfile(2)` from a memfd filled once with the data: no user buffer at all
    /// (netperf TCP_SENDFILE, iperf3 -Z; `--sendfile`).
    Sendfile,
}

impl SendMode {
    /// The default: a plain copying send.
    pub fn is_copy(&self) -> bool {
        *self == SendMode::Copy
    }
    /// The option that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            SendMode::Copy => "(default)",
            SendMode::Zerocopy => "--zerocopy",
            SendMode::Sendfile => "--sendfile",
        }
    }
    /// Words for reports.
    pub fn describe(self) -> &'static str {
        match self {
            SendMode::Copy => "send (copy)",
            SendMode::Zerocopy => "MSG_ZEROCOPY",
            SendMode::Sendfile => "sendfile",
        }
    }
}

/// How a TCP receiver takes data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecvMode {
    /// `recv(2)` into a user buffer: the kernel copies the data out.
    #[default]
    Copy,
    /// `recv(2)` with `MSG_TRUNC` and no buffer: the kernel counts the bytes and frees them
    /// without copying them to user space (`--no-rx-copy`).
    Trunc,
}

impl RecvMode {
    /// The default: a plain copying receive.
    pub fn is_copy(&self) -> bool {
        *self == RecvMode::Copy
    }
    /// Words for reports.
    pub fn describe(self) -> &'static str {
        match self {
            RecvMode::Copy => "recv (copy)",
            RecvMode::Trunc => "MSG_TRUNC (no copy)",
        }
    }
}
