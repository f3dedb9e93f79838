//! What the ethtool ioctls (sys::ethtool, Linux's) report of an interface: plain data, the
//! same on every OS, so the host snapshot builds everywhere.

use std::io;

use linerate_wire::host::Duplex;

/// `ethtool -i`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrvInfo {
    /// Driver name.
    pub driver: Option<String>,
    /// Driver version.
    pub version: Option<String>,
    /// Firmware version.
    pub firmware: Option<String>,
    /// Bus address.
    pub bus_info: Option<String>,
}

/// Speed, duplex and auto-negotiation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkSettings {
    /// Mbit/s; `None` when unknown (the kernel's 0 or `SPEED_UNKNOWN`).
    pub speed_mbps: Option<u32>,
    /// `None` when unknown (`DUPLEX_UNKNOWN`).
    pub duplex: Option<Duplex>,
    /// Auto-negotiation on.
    pub autoneg: Option<bool>,
}

/// `ethtool -l`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Channels {
    /// Receive-only channels.
    pub rx: u32,
    /// Transmit-only channels.
    pub tx: u32,
    /// Other (link interrupts, SR-IOV coordination).
    pub other: u32,
    /// Combined receive + transmit channels.
    pub combined: u32,
}

/// An ioctl that failed for a reason other than "not supported".
#[derive(Debug, thiserror::Error)]
#[error("ethtool {what} on {iface}: {source}")]
pub struct EthtoolError {
    /// What was asked ("driver statistics").
    pub what: &'static str,
    /// The interface.
    pub iface: String,
    /// The OS error.
    #[source]
    pub source: io::Error,
}

/// `Ok(None)` for "the driver does not implement this".
pub type EthtoolResult<T> = Result<Option<T>, EthtoolError>;
