//! The raw-frame generator of a UDP stream: frames from the stream socket's own address and
//! port to its peer, written into an AF_XDP socket ([`crate::sys::xdp`]) or an AF_PACKET
//! transmit ring ([`crate::sys::afpacket`]).
//!
//! `--raw-tx auto` (the default) opens the AF_XDP socket first, and the AF_PACKET ring when
//! it cannot (no AF_XDP in the kernel, the locked-memory limit below the UMEM, ...; the
//! reason becomes one warning of the stream) or when the interface's root qdisc shapes:
//! AF_XDP hands frames to the driver past the qdisc, which would then shape nothing.
//!
//! The socket stays open (it owns the port, so the kernel sends no port-unreachable for
//! replies, and the peer's connected socket matches our frames' 4-tuple); only the send path
//! changes. Frames go to the next hop's MAC from the neighbour table
//! ([`crate::sys::neigh::resolve`]). The qdisc is bypassed only when the interface's root
//! qdisc does not shape (a tbf or htb on the tester's own interface keeps shaping).

use std::io;
use std::net::UdpSocket;

use linerate_wire::probe::Probe;

use linerate_wire::control::RawTxChoice;
use linerate_wire::report::RawTx;

use super::frame::{FrameTemplate, ETH_HEADER, FCS};
use crate::sys::afpacket::{Completed, TxRing};
use crate::sys::neigh::{self, NextHop};
use crate::sys::xdp::{XdpMode, XdpTx};

/// Root qdiscs that only queue (no rate): bypassing them changes nothing but the cost.
const NON_SHAPING_QDISCS: &[&str] = &["noqueue", "pfifo_fast", "pfifo", "bfifo", "mq", "fq_codel"];

/// The kernel path frames go through.
enum Tx {
    Xdp(XdpTx),
    Ring(TxRing),
}

/// Calls the same method on either path.
macro_rules! on_tx {
    ($tx:expr, $t:ident => $e:expr) => {
        match $tx {
            Tx::Xdp($t) => $e,
            Tx::Ring($t) => $e,
        }
    };
}

/// A stream's raw-frame sender.
pub struct RawSender {
    tx: Tx,
    template: FrameTemplate,
    /// Where the frames go.
    pub hop: NextHop,
    /// `--raw-tx auto` fell back to the AF_PACKET ring: why, for the stream's warning.
    pub fallback: Option<String>,
}

/// Bytes of IP and UDP headers for the address family.
fn ip_udp_headers(v6: bool) -> usize {
    if v6 {
        40 + 8
    } else {
        20 + 8
    }
}

impl RawSender {
    /// Opens a generator for datagrams of `payload` bytes on `sock` (bound and connected).
    /// The error says why raw frames cannot be sent, in words for a warning.
    pub fn open(
        sock: &UdpSocket,
        payload: usize,
        choice: RawTxChoice,
    ) -> Result<RawSender, String> {
        let canonical =
            |a: std::net::SocketAddr| std::net::SocketAddr::new(a.ip().to_canonical(), a.port());
        let local = canonical(
            sock.local_addr()
                .map_err(|e| format!("the socket has no local address ({e})"))?,
        );
        let peer = canonical(
            sock.peer_addr()
                .map_err(|e| format!("the socket is not connected ({e})"))?,
        );
        if local.ip().is_unspecified() {
            return Err("the socket is bound to no particular address".into());
        }
        if local.ip().is_loopback() || peer.ip().is_loopback() {
            return Err("loopback carries no Ethernet frames".into());
        }
        let hop = neigh::resolve(local, peer)?;
        let frame = payload + ETH_HEADER + ip_udp_headers(peer.is_ipv6()) + FCS;
        let template = FrameTemplate::new(
            u32::try_from(frame).map_err(|_| "frame too large".to_string())?,
            hop.src_mac,
            hop.dst_mac,
            local,
            peer,
            0,
        )
        .map_err(|e| e.0)?;
        if let Some(mtu) = hop.mtu {
            if template.len() > mtu as usize + ETH_HEADER {
                return Err(format!(
                    "a {frame}-byte frame exceeds the MTU of {} ({mtu})",
                    hop.dev
                ));
            }
        }
        let (mut tx, fallback) = open_tx(&hop, template.len(), choice)?;
        let mut first = vec![0u8; template.len()];
        template.write(&mut first, Probe { seq: 0, tx_ns: 0 });
        on_tx!(&mut tx, t => t.prefill(&first));
        Ok(RawSender {
            tx,
            template,
            hop,
            fallback,
        })
    }

    /// Whether the interface's qdisc is bypassed (always, through AF_XDP).
    pub fn qdisc_bypass(&self) -> bool {
        match &self.tx {
            Tx::Xdp(_) => true,
            Tx::Ring(r) => r.qdisc_bypass(),
        }
    }

    /// The kernel path the frames go through.
    pub fn raw_tx(&self) -> RawTx {
        match &self.tx {
            Tx::Xdp(x) if x.mode() == XdpMode::Zerocopy => RawTx::XdpZerocopy,
            Tx::Xdp(_) => RawTx::XdpCopy,
            Tx::Ring(_) => RawTx::Afpacket,
        }
    }

    /// Queues up to `n` frames numbered from `seq`, all stamped `tx_ns`, and sends every
    /// queued frame. Returns how many frames were queued and what the kernel handed back.
    pub fn send(&mut self, seq: u64, n: usize, tx_ns: u64) -> (usize, io::Result<Completed>) {
        let t = &self.template;
        let stamp = |slot: &mut [u8], k: usize| {
            t.stamp(
                slot,
                Probe {
                    seq: seq + k as u64,
                    tx_ns,
                },
            )
        };
        let queued = on_tx!(&mut self.tx, x => x.queue(n, t.len(), stamp));
        (queued, on_tx!(&mut self.tx, x => x.flush()))
    }

    /// Frames queued and not yet taken by the kernel.
    pub fn unsent(&self) -> usize {
        on_tx!(&self.tx, t => t.unsent())
    }

    /// Frames whose ring slots the kernel has not freed yet.
    pub fn in_ring(&self) -> usize {
        on_tx!(&self.tx, t => t.in_ring())
    }

    /// Sends what is still queued (at the end of a stream).
    pub fn flush(&mut self) -> io::Result<Completed> {
        on_tx!(&mut self.tx, t => t.flush())
    }

    /// Makes freed slots reusable.
    pub fn reap(&mut self) {
        on_tx!(&mut self.tx, t => t.reap())
    }
}

/// Opens the path `choice` asks for on `hop` (see the module docs); with `auto`, the
/// AF_PACKET ring and why AF_XDP was not used when it was not.
fn open_tx(
    hop: &NextHop,
    frame: usize,
    choice: RawTxChoice,
) -> Result<(Tx, Option<String>), String> {
    let root = crate::sys::qdisc::read_root_qdisc(&hop.dev);
    let shaping = root
        .as_ref()
        .filter(|q| !NON_SHAPING_QDISCS.contains(&q.kind.as_str()))
        .map(|q| q.kind.clone());
    let why_not_xdp = match choice {
        RawTxChoice::Afpacket => None,
        RawTxChoice::Auto if shaping.is_some() => Some(format!(
            "the root qdisc of {} is {}, which AF_XDP would bypass",
            hop.dev,
            shaping.as_deref().unwrap_or("?")
        )),
        RawTxChoice::Auto | RawTxChoice::Xdp => match XdpTx::open(hop.ifindex, frame) {
            Ok(x) => return Ok((Tx::Xdp(x), None)),
            Err(e) if choice == RawTxChoice::Xdp => {
                return Err(format!("--raw-tx xdp: on {}: {}", hop.dev, e.0))
            }
            Err(e) => Some(e.0),
        },
    };
    let bypass = root.is_some() && shaping.is_none();
    let ring = TxRing::open(hop.ifindex, frame, bypass).map_err(|e| {
        if e.raw_os_error() == Some(crate::sys::net::errno::EPERM) {
            "no CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep` the binary)".to_string()
        } else {
            format!("AF_PACKET transmit ring on {}: {e}", hop.dev)
        }
    })?;
    Ok((Tx::Ring(ring), why_not_xdp))
}
