//! Interface facts and driver counters through the `SIOCETHTOOL` ioctl (what `ethtool -i`,
//! `ethtool` (link), `-S`, `-k`, `-c`, `-g` and `-l` print).
//!
//! # Why the ioctl, by hand
//!
//! The `ethtool` crate speaks the ethtool netlink family but needs an async runtime
//! (tokio or async-std), and linerate is threads-only; the driver's private counters (`-S`)
//! have no netlink equivalent anyway — ethtool(8) itself still reads them with
//! `ETHTOOL_GSTATS`. So this module issues the ioctls with `libc` on an `AF_INET` datagram
//! socket, which works for any interface of the socket's network namespace (the namespace
//! of the thread that opened it).
//!
//! # Layout and safety
//!
//! Every request and answer is a byte buffer laid out as the structs of
//! `include/uapi/linux/ethtool.h`; offsets below were checked with `offsetof` against the
//! linux-libc-dev header (Linux 6.x). The pure `parse_*` functions decode them and are
//! tested on hand-built buffers. This is one of the two modules of linerate's `sys` layer
//! with `unsafe` (with `tcp_info`): the `ioctl` call itself, [`Ethtool::raw`], whose
//! contract is that the buffer is at least as large as what the kernel writes for the
//! command. The callers size buffers as follows:
//!
//! * fixed-size structs (drvinfo 196, coalesce 92, ringparam 36, channels 36, cmd 44,
//!   value 8 bytes) get [`FIXED_BUF`] bytes, more than any of them;
//! * `GLINKSETTINGS` writes 48 + 12 × `nwords` bytes with `nwords` ≤ 127 (an `s8`):
//!   [`LINK_BUF`] bytes cover the largest;
//! * `GFEATURES` writes at most the number of blocks the caller asks for;
//! * `GSTRINGS`/`GSTATS` write as many entries as the driver has *now*, which may differ
//!   from the count `GSSET_INFO` gave a moment earlier (ethtool(8) has the same race).
//!   linerate refuses counts above [`MAX_STATS`] and allocates room for `2n + 1024`
//!   entries, so the count would have to more than double between two system calls to
//!   overflow; an answer whose count differs from the one asked for is discarded.
//!
//! A driver that does not implement a command answers `EOPNOTSUPP`; that is `Ok(None)`,
//! not an error (loopback has no driver info, link settings, rings or statistics).

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use linerate_wire::host::{Duplex, RingSizes};

pub use super::super::nic::{Channels, DrvInfo, EthtoolError, EthtoolResult, LinkSettings};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

use super::iface::validate_ifname;

/// Ethtool command numbers (`ETHTOOL_*` in `linux/ethtool.h`).
pub mod cmd {
    /// Legacy link settings (`struct ethtool_cmd`).
    pub const GSET: u32 = 0x01;
    /// Driver info.
    pub const GDRVINFO: u32 = 0x03;
    /// Interrupt coalescing.
    pub const GCOALESCE: u32 = 0x0e;
    /// Ring sizes.
    pub const GRINGPARAM: u32 = 0x10;
    /// Legacy: receive checksum offload on.
    pub const GRXCSUM: u32 = 0x14;
    /// Legacy: transmit checksum offload on.
    pub const GTXCSUM: u32 = 0x16;
    /// Legacy: scatter-gather on.
    pub const GSG: u32 = 0x18;
    /// Names of a string set.
    pub const GSTRINGS: u32 = 0x1b;
    /// Driver statistics (`ethtool -S`).
    pub const GSTATS: u32 = 0x1d;
    /// Legacy: TSO on.
    pub const GTSO: u32 = 0x1e;
    /// Legacy: GSO on.
    pub const GGSO: u32 = 0x23;
    /// Legacy: flags (LRO, VLAN, ntuple, hashing).
    pub const GFLAGS: u32 = 0x25;
    /// Legacy: GRO on.
    pub const GGRO: u32 = 0x2b;
    /// Sizes of string sets.
    pub const GSSET_INFO: u32 = 0x37;
    /// Offload features.
    pub const GFEATURES: u32 = 0x3a;
    /// Channel (queue) counts.
    pub const GCHANNELS: u32 = 0x3c;
    /// Link settings.
    pub const GLINKSETTINGS: u32 = 0x4c;
}

/// String set of driver statistics.
pub const ETH_SS_STATS: u32 = 1;
/// String set of offload feature names.
pub const ETH_SS_FEATURES: u32 = 4;
/// Length of one ethtool string, NUL-padded.
pub const ETH_GSTRING_LEN: usize = 32;
/// Buffer for the fixed-size structs (the largest, `ethtool_drvinfo`, is 196 bytes).
pub const FIXED_BUF: usize = 512;
/// Buffer for `GLINKSETTINGS`: 48-byte header + 3 masks × 127 words × 4 bytes = 1572.
pub const LINK_BUF: usize = 2048;
/// Largest string set linerate reads (statistics or features).
pub const MAX_STATS: usize = 16_384;

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A NUL-padded C string field; `None` when empty.
fn cstr_at(b: &[u8], at: usize, len: usize) -> Option<String> {
    let field = b.get(at..at + len)?;
    let end = field.iter().position(|&c| c == 0).unwrap_or(len);
    let s = String::from_utf8_lossy(&field[..end]).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// A request buffer of `len` zero bytes with `cmd` in its first four.
fn request(cmd: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(4)];
    b[..4].copy_from_slice(&cmd.to_ne_bytes());
    b
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

/// Decodes `struct ethtool_drvinfo` (driver@4, version@36, fw_version@68, bus_info@100,
/// 32 bytes each).
pub fn parse_drvinfo(b: &[u8]) -> DrvInfo {
    DrvInfo {
        driver: cstr_at(b, 4, 32),
        version: cstr_at(b, 36, 32),
        firmware: cstr_at(b, 68, 32),
        bus_info: cstr_at(b, 100, 32),
    }
}

fn duplex(v: u8) -> Option<Duplex> {
    match v {
        0 => Some(Duplex::Half),
        1 => Some(Duplex::Full),
        _ => None,
    }
}

fn autoneg(v: u8) -> Option<bool> {
    match v {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

fn speed(v: u32) -> Option<u32> {
    (v != 0 && v != u32::MAX && v != u32::from(u16::MAX)).then_some(v)
}

/// Decodes `struct ethtool_link_settings` (speed u32@4, duplex u8@8, autoneg u8@11).
pub fn parse_link_settings(b: &[u8]) -> Option<LinkSettings> {
    Some(LinkSettings {
        speed_mbps: speed(u32_at(b, 4)?),
        duplex: duplex(*b.get(8)?),
        autoneg: autoneg(*b.get(11)?),
    })
}

/// Decodes the legacy `struct ethtool_cmd` (speed u16@12 | speed_hi u16@28 << 16,
/// duplex u8@14, autoneg u8@18).
pub fn parse_legacy_link(b: &[u8]) -> Option<LinkSettings> {
    let lo = u16::from_ne_bytes(b.get(12..14)?.try_into().ok()?);
    let hi = u16::from_ne_bytes(b.get(28..30)?.try_into().ok()?);
    let raw = (u32::from(hi) << 16) | u32::from(lo);
    Some(LinkSettings {
        speed_mbps: speed(raw),
        duplex: duplex(*b.get(14)?),
        autoneg: autoneg(*b.get(18)?),
    })
}

/// `ethtool -c` names of the 22 `u32` fields of `struct ethtool_coalesce` after `cmd`.
pub const COALESCE_NAMES: [&str; 22] = [
    "rx-usecs",
    "rx-frames",
    "rx-usecs-irq",
    "rx-frames-irq",
    "tx-usecs",
    "tx-frames",
    "tx-usecs-irq",
    "tx-frames-irq",
    "stats-block-usecs",
    "adaptive-rx",
    "adaptive-tx",
    "pkt-rate-low",
    "rx-usecs-low",
    "rx-frame-low",
    "tx-usecs-low",
    "tx-frame-low",
    "pkt-rate-high",
    "rx-usecs-high",
    "rx-frame-high",
    "tx-usecs-high",
    "tx-frame-high",
    "sample-interval",
];

/// Coalescing parameters always reported, even at 0 (0 is meaningful for them).
const COALESCE_ALWAYS: [&str; 6] = [
    "rx-usecs",
    "rx-frames",
    "tx-usecs",
    "tx-frames",
    "adaptive-rx",
    "adaptive-tx",
];

/// Decodes `struct ethtool_coalesce` into `ethtool -c` names. The ioctl cannot tell an
/// unsupported parameter from 0, so zeros are left out except for [`COALESCE_ALWAYS`].
pub fn parse_coalesce(b: &[u8]) -> Option<BTreeMap<String, u32>> {
    let mut out = BTreeMap::new();
    for (i, name) in COALESCE_NAMES.iter().enumerate() {
        let v = u32_at(b, 4 + 4 * i)?;
        if v != 0 || COALESCE_ALWAYS.contains(name) {
            out.insert((*name).to_string(), v);
        }
    }
    Some(out)
}

/// Decodes `struct ethtool_ringparam` (rx_max@4, tx_max@16, rx@20, tx@32).
pub fn parse_ringparam(b: &[u8]) -> Option<RingSizes> {
    Some(RingSizes {
        rx_max: u32_at(b, 4)?,
        tx_max: u32_at(b, 16)?,
        rx: u32_at(b, 20)?,
        tx: u32_at(b, 32)?,
    })
}

/// Decodes the current counts of `struct ethtool_channels` (rx@20, tx@24, other@28,
/// combined@32).
pub fn parse_channels(b: &[u8]) -> Option<Channels> {
    Some(Channels {
        rx: u32_at(b, 20)?,
        tx: u32_at(b, 24)?,
        other: u32_at(b, 28)?,
        combined: u32_at(b, 32)?,
    })
}

/// Decodes `n` NUL-padded 32-byte strings starting at byte `at`. Empty names stay empty.
pub fn parse_strings(b: &[u8], at: usize, n: usize) -> Option<Vec<String>> {
    (0..n)
        .map(|i| {
            let start = at + i * ETH_GSTRING_LEN;
            b.get(start..start + ETH_GSTRING_LEN)?;
            Some(cstr_at(b, start, ETH_GSTRING_LEN).unwrap_or_default())
        })
        .collect()
}

/// Decodes `n` u64 values starting at byte `at`.
pub fn parse_u64s(b: &[u8], at: usize, n: usize) -> Option<Vec<u64>> {
    (0..n).map(|i| u64_at(b, at + 8 * i)).collect()
}

/// Decodes the active bits of `struct ethtool_gfeatures` (blocks of 16 bytes from byte 8,
/// `active` at +8 in each) for `n` features.
pub fn parse_active_features(b: &[u8], n: usize) -> Option<Vec<bool>> {
    (0..n)
        .map(|i| {
            let word = u32_at(b, 8 + 16 * (i / 32) + 8)?;
            Some(word & (1 << (i % 32)) != 0)
        })
        .collect()
}

/// Classic `ethtool -k` names and the kernel features each stands for (ethtool's
/// `off_flag_def`); a name is on when any of its features is on.
pub const CLASSIC_OFFLOADS: &[(&str, &[&str])] = &[
    ("rx-checksumming", &["rx-checksum"]),
    (
        "tx-checksumming",
        &[
            "tx-checksum-ipv4",
            "tx-checksum-ip-generic",
            "tx-checksum-ipv6",
            "tx-checksum-fcoe-crc",
            "tx-checksum-sctp",
        ],
    ),
    (
        "scatter-gather",
        &["tx-scatter-gather", "tx-scatter-gather-fraglist"],
    ),
    (
        "tcp-segmentation-offload",
        &[
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
            "tx-tcp-accecn-segmentation",
        ],
    ),
    ("generic-segmentation-offload", &["tx-generic-segmentation"]),
    ("generic-receive-offload", &["rx-gro"]),
    ("large-receive-offload", &["rx-lro"]),
    ("rx-vlan-offload", &["rx-vlan-hw-parse"]),
    ("tx-vlan-offload", &["tx-vlan-hw-insert"]),
    ("ntuple-filters", &["rx-ntuple-filter"]),
    ("receive-hashing", &["rx-hashing"]),
];

/// The offload map: every named kernel feature → active, plus each classic name whose
/// features exist → any of them active.
pub fn offloads_from_features(names: &[String], active: &[bool]) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = names
        .iter()
        .zip(active)
        .filter(|(n, _)| !n.is_empty())
        .map(|(n, a)| (n.clone(), *a))
        .collect();
    for (classic, parts) in CLASSIC_OFFLOADS {
        let present: Vec<bool> = parts.iter().filter_map(|p| out.get(*p).copied()).collect();
        if !present.is_empty() {
            out.insert((*classic).to_string(), present.iter().any(|&a| a));
        }
    }
    out
}

fn unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// A socket to issue ethtool ioctls on, in the network namespace of the thread that
/// opened it.
#[derive(Debug)]
pub struct Ethtool {
    fd: OwnedFd,
}

impl Ethtool {
    /// Opens an `AF_INET` datagram socket (an `AF_UNIX` one where IPv4 is unavailable).
    pub fn open() -> io::Result<Ethtool> {
        let fd = socket(
            AddressFamily::Inet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .or_else(|_| {
            socket(
                AddressFamily::Unix,
                SockType::Datagram,
                SockFlag::SOCK_CLOEXEC,
                None,
            )
        })
        .map_err(io::Error::from)?;
        Ok(Ethtool { fd })
    }

    /// Issues `SIOCETHTOOL` for `iface` with `buf` as the command struct.
    ///
    /// # Safety
    ///
    /// `buf` must be at least as long as everything the kernel writes back for the command
    /// in its first four bytes (see the module docs for each command's size).
    unsafe fn raw(&self, iface: &str, buf: &mut [u8]) -> io::Result<()> {
        let mut ifr = ifreq_for(iface)?;
        ifr.ifr_ifru.ifru_data = buf.as_mut_ptr().cast::<libc::c_char>();
        // SAFETY: `self.fd` is an open socket; `ifr` is a valid, NUL-terminated ifreq that
        // lives across the call; its data pointer points at `buf`, which is live and
        // writable for `buf.len()` bytes, and the caller guarantees the kernel writes no
        // more than that for this command. No Rust reference to `buf` is used meanwhile.
        let rc = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SIOCETHTOOL as _,
                &mut ifr as *mut libc::ifreq,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Runs a command whose answer is a fixed-size struct of at most [`FIXED_BUF`] bytes.
    fn fixed(&self, iface: &str, what: &'static str, command: u32) -> EthtoolResult<Vec<u8>> {
        let mut buf = request(command, FIXED_BUF);
        // SAFETY: every command passed here (GDRVINFO, GCOALESCE, GRINGPARAM, GCHANNELS,
        // GSET and the legacy ethtool_value gets) writes one struct of at most 196 bytes,
        // and `buf` has FIXED_BUF = 512.
        match unsafe { self.raw(iface, &mut buf) } {
            Ok(()) => Ok(Some(buf)),
            Err(e) if unsupported(&e) => Ok(None),
            Err(source) => Err(EthtoolError {
                what,
                iface: iface.to_string(),
                source,
            }),
        }
    }

    fn err(what: &'static str, iface: &str, source: io::Error) -> EthtoolError {
        EthtoolError {
            what,
            iface: iface.to_string(),
            source,
        }
    }

    /// `ethtool -i`.
    pub fn drvinfo(&self, iface: &str) -> EthtoolResult<DrvInfo> {
        Ok(self
            .fixed(iface, "driver info", cmd::GDRVINFO)?
            .map(|b| parse_drvinfo(&b)))
    }

    /// Speed, duplex, auto-negotiation: `GLINKSETTINGS`, or the legacy `GSET`.
    pub fn link(&self, iface: &str) -> EthtoolResult<LinkSettings> {
        const WHAT: &str = "link settings";
        let mut buf = request(cmd::GLINKSETTINGS, LINK_BUF);
        // SAFETY: with link_mode_masks_nwords = 0 (byte 15) the kernel answers the
        // handshake with the 48-byte header only; LINK_BUF = 2048 bytes.
        match unsafe { self.raw(iface, &mut buf) } {
            Ok(()) => {
                let nwords = buf[15] as i8;
                if nwords < 0 {
                    let mut second = request(cmd::GLINKSETTINGS, LINK_BUF);
                    second[15] = nwords.unsigned_abs();
                    // SAFETY: the kernel writes 48 + 12 * nwords bytes, nwords <= 127, so
                    // at most 1572 bytes into LINK_BUF = 2048.
                    unsafe { self.raw(iface, &mut second) }
                        .map_err(|e| Self::err(WHAT, iface, e))?;
                    return Ok(parse_link_settings(&second));
                }
                // Kernels that ignore the handshake answer in one go.
                Ok(parse_link_settings(&buf))
            }
            Err(e) if unsupported(&e) => Ok(self
                .fixed(iface, WHAT, cmd::GSET)?
                .and_then(|b| parse_legacy_link(&b))),
            Err(e) => Err(Self::err(WHAT, iface, e)),
        }
    }

    /// `ethtool -c`.
    pub fn coalesce(&self, iface: &str) -> EthtoolResult<BTreeMap<String, u32>> {
        Ok(self
            .fixed(iface, "coalescing", cmd::GCOALESCE)?
            .and_then(|b| parse_coalesce(&b)))
    }

    /// `ethtool -g`.
    pub fn rings(&self, iface: &str) -> EthtoolResult<RingSizes> {
        Ok(self
            .fixed(iface, "ring sizes", cmd::GRINGPARAM)?
            .and_then(|b| parse_ringparam(&b)))
    }

    /// `ethtool -l`.
    pub fn channels(&self, iface: &str) -> EthtoolResult<Channels> {
        Ok(self
            .fixed(iface, "channels", cmd::GCHANNELS)?
            .and_then(|b| parse_channels(&b)))
    }

    /// Number of strings in set `set`; `None` when the driver has no such set.
    fn sset_len(&self, iface: &str, what: &'static str, set: u32) -> EthtoolResult<usize> {
        let mut buf = request(cmd::GSSET_INFO, 64);
        buf[8..16].copy_from_slice(&(1u64 << set).to_ne_bytes());
        // SAFETY: the kernel writes the 16-byte header and one u32 per bit of the mask we
        // set (one bit): 20 bytes into 64.
        match unsafe { self.raw(iface, &mut buf) } {
            Ok(()) => {
                let mask = u64_at(&buf, 8).unwrap_or(0);
                if mask & (1u64 << set) == 0 {
                    return Ok(None);
                }
                let n = u32_at(&buf, 16).unwrap_or(0) as usize;
                if n > MAX_STATS {
                    return Err(Self::err(
                        what,
                        iface,
                        io::Error::other(format!(
                            "the driver reports {n} entries, more than the {MAX_STATS} linerate reads"
                        )),
                    ));
                }
                Ok(Some(n))
            }
            Err(e) if unsupported(&e) => Ok(None),
            Err(e) => Err(Self::err(what, iface, e)),
        }
    }

    /// The `n` names of string set `set`.
    fn strings(
        &self,
        iface: &str,
        what: &'static str,
        set: u32,
        n: usize,
    ) -> Result<Vec<String>, EthtoolError> {
        let room = 2 * n + 1024;
        let mut buf = request(cmd::GSTRINGS, 12 + room * ETH_GSTRING_LEN);
        put_u32(&mut buf, 4, set);
        put_u32(&mut buf, 8, n as u32);
        // SAFETY: the kernel writes the 12-byte header and 32 bytes per string of the set's
        // current size; `buf` has room for 2n + 1024 strings (see the module docs).
        unsafe { self.raw(iface, &mut buf) }.map_err(|e| Self::err(what, iface, e))?;
        let got = u32_at(&buf, 8).unwrap_or(0) as usize;
        if got != n {
            return Err(Self::err(what, iface, changed(n, got)));
        }
        parse_strings(&buf, 12, n).ok_or_else(|| Self::err(what, iface, changed(n, got)))
    }

    /// `ethtool -S`: (name, value) in the driver's order; `None` when the driver has none.
    pub fn stats(&self, iface: &str) -> EthtoolResult<Vec<(String, u64)>> {
        const WHAT: &str = "driver statistics";
        let Some(n) = self.sset_len(iface, WHAT, ETH_SS_STATS)? else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(None);
        }
        let names = self.strings(iface, WHAT, ETH_SS_STATS, n)?;
        let room = 2 * n + 1024;
        let mut buf = request(cmd::GSTATS, 8 + room * 8);
        put_u32(&mut buf, 4, n as u32);
        // SAFETY: the kernel writes the 8-byte header and 8 bytes per statistic of the
        // driver's current count; `buf` has room for 2n + 1024 (see the module docs).
        unsafe { self.raw(iface, &mut buf) }.map_err(|e| Self::err(WHAT, iface, e))?;
        let got = u32_at(&buf, 4).unwrap_or(0) as usize;
        if got != n {
            return Err(Self::err(WHAT, iface, changed(n, got)));
        }
        let values =
            parse_u64s(&buf, 8, n).ok_or_else(|| Self::err(WHAT, iface, changed(n, got)))?;
        Ok(Some(names.into_iter().zip(values).collect()))
    }

    /// `ethtool -k` as [`offloads_from_features`] builds it, from `GFEATURES`, or from the
    /// legacy per-offload gets on kernels without it.
    pub fn offloads(&self, iface: &str) -> EthtoolResult<BTreeMap<String, bool>> {
        const WHAT: &str = "offload features";
        let n = match self.sset_len(iface, WHAT, ETH_SS_FEATURES)? {
            Some(n) if n > 0 => n,
            _ => return self.legacy_offloads(iface),
        };
        let names = self.strings(iface, WHAT, ETH_SS_FEATURES, n)?;
        let blocks = n.div_ceil(32);
        let mut buf = request(cmd::GFEATURES, 8 + 16 * blocks);
        put_u32(&mut buf, 4, blocks as u32);
        // SAFETY: the kernel writes the 8-byte header and at most `size` (= blocks)
        // 16-byte blocks, which is exactly the buffer.
        match unsafe { self.raw(iface, &mut buf) } {
            Ok(()) => {}
            Err(e) if unsupported(&e) => return self.legacy_offloads(iface),
            Err(e) => return Err(Self::err(WHAT, iface, e)),
        }
        let active =
            parse_active_features(&buf, n).ok_or_else(|| Self::err(WHAT, iface, changed(n, 0)))?;
        Ok(Some(offloads_from_features(&names, &active)))
    }

    /// Classic offload names from the legacy `ethtool_value` gets.
    fn legacy_offloads(&self, iface: &str) -> EthtoolResult<BTreeMap<String, bool>> {
        const WHAT: &str = "offload flags";
        let mut out = BTreeMap::new();
        for (name, command) in [
            ("rx-checksumming", cmd::GRXCSUM),
            ("tx-checksumming", cmd::GTXCSUM),
            ("scatter-gather", cmd::GSG),
            ("tcp-segmentation-offload", cmd::GTSO),
            ("generic-segmentation-offload", cmd::GGSO),
            ("generic-receive-offload", cmd::GGRO),
        ] {
            if let Some(b) = self.fixed(iface, WHAT, command)? {
                out.insert(name.to_string(), u32_at(&b, 4).unwrap_or(0) != 0);
            }
        }
        if let Some(b) = self.fixed(iface, WHAT, cmd::GFLAGS)? {
            let flags = u32_at(&b, 4).unwrap_or(0);
            for (name, bit) in [
                ("tx-vlan-offload", 7),
                ("rx-vlan-offload", 8),
                ("large-receive-offload", 15),
                ("ntuple-filters", 27),
                ("receive-hashing", 28),
            ] {
                out.insert(name.to_string(), flags & (1 << bit) != 0);
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// MTU (`SIOCGIFMTU`).
    pub fn mtu(&self, iface: &str) -> io::Result<u32> {
        let mut ifr = ifreq_for(iface)?;
        // SAFETY: `self.fd` is an open socket and `ifr` a valid ifreq naming the interface;
        // SIOCGIFMTU writes only `ifr_mtu` inside it.
        let rc = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SIOCGIFMTU as _,
                &mut ifr as *mut libc::ifreq,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: after a successful SIOCGIFMTU the kernel has set the `ifru_mtu` member
        // of the union; every bit pattern is a valid c_int.
        let mtu = unsafe { ifr.ifr_ifru.ifru_mtu };
        u32::try_from(mtu).map_err(|_| io::Error::other(format!("negative MTU {mtu}")))
    }
}

fn changed(asked: usize, got: usize) -> io::Error {
    io::Error::other(format!(
        "the driver's count changed while reading ({asked} then {got}); try again"
    ))
}

/// A zeroed `ifreq` naming `iface` (validated, NUL-terminated).
fn ifreq_for(iface: &str) -> io::Result<libc::ifreq> {
    validate_ifname(iface).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `ifreq` is plain old data (a c_char array and a union of integers, sockaddrs
    // and a pointer); all zero bytes is a valid value of each, the pointer being null.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    // validate_ifname guarantees at most IFNAMSIZ - 1 bytes, so the name stays
    // NUL-terminated.
    for (dst, src) in ifr.ifr_name.iter_mut().zip(iface.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(ifr)
}

#[cfg(test)]
mod tests;
