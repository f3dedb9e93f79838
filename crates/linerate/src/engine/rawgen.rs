//! The raw-frame generator of a UDP stream: frames from the stream socket's own address and
//! port to its peer, written into an AF_PACKET transmit ring ([`crate::sys::afpacket`]).
//!
//! The socket stays open (it owns the port, so the kernel sends no port-unreachable for
//! replies, and the peer's connected socket matches our frames' 4-tuple); only the send path
//! changes. Frames go to the next hop's MAC from the neighbour table
//! ([`crate::sys::neigh::resolve`]). The qdisc is bypassed only when the interface's root
//! qdisc does not shape (a tbf or htb on the tester's own interface keeps shaping).

use std::io;
use std::net::UdpSocket;

use linerate_wire::probe::Probe;

use super::frame::{FrameTemplate, ETH_HEADER, FCS};
use crate::sys::afpacket::{Completed, TxRing};
use crate::sys::neigh::{self, NextHop};

/// Root qdiscs that only queue (no rate): bypassing them changes nothing but the cost.
const NON_SHAPING_QDISCS: &[&str] = &["noqueue", "pfifo_fast", "pfifo", "bfifo", "mq", "fq_codel"];

/// A stream's raw-frame sender.
pub struct RawSender {
    ring: TxRing,
    template: FrameTemplate,
    /// Where the frames go.
    pub hop: NextHop,
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
    pub fn open(sock: &UdpSocket, payload: usize) -> Result<RawSender, String> {
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
        let bypass = crate::sys::qdisc::read_root_qdisc(&hop.dev)
            .is_some_and(|q| NON_SHAPING_QDISCS.contains(&q.kind.as_str()));
        let mut ring = TxRing::open(hop.ifindex, template.len(), bypass).map_err(|e| {
            if e.raw_os_error() == Some(crate::sys::net::errno::EPERM) {
                "no CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep` the binary)".to_string()
            } else {
                format!("AF_PACKET transmit ring on {}: {e}", hop.dev)
            }
        })?;
        let mut first = vec![0u8; template.len()];
        template.write(&mut first, Probe { seq: 0, tx_ns: 0 });
        ring.prefill(&first);
        Ok(RawSender {
            ring,
            template,
            hop,
        })
    }

    /// Whether the interface's qdisc is bypassed.
    pub fn qdisc_bypass(&self) -> bool {
        self.ring.qdisc_bypass()
    }

    /// Queues up to `n` frames numbered from `seq`, all stamped `tx_ns`, and sends every
    /// queued frame. Returns how many frames were queued and what the kernel handed back.
    pub fn send(&mut self, seq: u64, n: usize, tx_ns: u64) -> (usize, io::Result<Completed>) {
        let t = &self.template;
        let queued = self.ring.queue(n, t.len(), |slot, k| {
            t.stamp(
                slot,
                Probe {
                    seq: seq + k as u64,
                    tx_ns,
                },
            )
        });
        (queued, self.ring.flush())
    }

    /// Frames queued and not yet taken by the kernel.
    pub fn unsent(&self) -> usize {
        self.ring.unsent()
    }

    /// Frames whose ring slots the kernel has not freed yet.
    pub fn in_ring(&self) -> usize {
        self.ring.in_ring()
    }

    /// Sends what is still queued (at the end of a stream).
    pub fn flush(&mut self) -> io::Result<Completed> {
        self.ring.flush()
    }

    /// Makes freed slots reusable.
    pub fn reap(&mut self) {
        self.ring.reap()
    }
}
