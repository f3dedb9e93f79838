//! Complete Ethernet/IPv4 or IPv6/UDP frames for the raw-frame generator (pure: no I/O).
//!
//! A [`FrameTemplate`] is built once per stream from the stream socket's own addresses and
//! the next hop's MAC, so that the receiving `linerate serve` sees ordinary datagrams from
//! the tester's UDP socket: its connected per-stream socket receives and counts them
//! unchanged. Every frame differs only in its probe header (sequence number and send time),
//! so the UDP checksum is the template's sum plus the probe's 16 bytes (one's complement
//! sums add up), and the IPv4 header (ID 0 with DF set: an atomic datagram, RFC 6864) has one
//! checksum for all frames.
//!
//! Sizes: an RFC 2544 frame size counts the 4-byte FCS the NIC appends; the bytes written
//! here are `frame − 4` (14 Ethernet + 20 IPv4 or 40 IPv6 + 8 UDP + payload). Interface
//! counters (`rx_bytes`/`tx_bytes`) and tbf count those bytes without the FCS.

use std::net::{IpAddr, SocketAddr};

use linerate_wire::probe::{self, Probe};

pub use crate::sys::neigh::Mac;

/// Ethernet header length (no VLAN tag).
pub const ETH_HEADER: usize = 14;
/// The frame check sequence the NIC appends, counted in RFC 2544 frame sizes.
pub const FCS: usize = 4;
const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const UDP_HEADER: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_UDP: u8 = 17;
/// Hop limit / TTL of generated frames (Linux's default).
const TTL: u8 = 64;

/// Why a template cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FrameError(pub String);

/// The fixed bytes of every frame of one stream, and what changes per frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameTemplate {
    bytes: Vec<u8>,
    /// Offset of the UDP payload (where the probe goes).
    payload_at: usize,
    /// Offset of the UDP checksum.
    csum_at: usize,
    /// One's complement sum (unfolded) of the pseudo-header, UDP header and payload with
    /// the probe bytes zero.
    base_sum: u32,
}

/// Adds `data` to a one's complement sum as big-endian 16-bit words (an odd last byte is
/// padded with zero, RFC 1071).
pub fn sum_words(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = add(sum, u32::from(u16::from_be_bytes([c[0], c[1]])));
    }
    if let [last] = chunks.remainder() {
        sum = add(sum, u32::from(*last) << 8);
    }
    sum
}

fn add(sum: u32, v: u32) -> u32 {
    let (s, carry) = sum.overflowing_add(v);
    // Keep the end-around carry so the sum never loses bits.
    s + u32::from(carry)
}

/// Folds a sum to 16 bits and complements it: the Internet checksum (RFC 1071).
pub fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl FrameTemplate {
    /// The template of frames of `frame_size` bytes (FCS included) from `src` to `dst`,
    /// with TOS / traffic class `tos`. The two addresses must be of one family.
    pub fn new(
        frame_size: u32,
        src_mac: Mac,
        dst_mac: Mac,
        src: SocketAddr,
        dst: SocketAddr,
        tos: u8,
    ) -> Result<FrameTemplate, FrameError> {
        let v6 = match (src.ip(), dst.ip()) {
            (IpAddr::V4(_), IpAddr::V4(_)) => false,
            (IpAddr::V6(_), IpAddr::V6(_)) => true,
            _ => {
                return Err(FrameError(format!(
                    "source {src} and destination {dst} are not of one IP version"
                )))
            }
        };
        let ip_header = if v6 { IPV6_HEADER } else { IPV4_HEADER };
        let headers = ETH_HEADER + ip_header + UDP_HEADER;
        let len = (frame_size as usize).saturating_sub(FCS);
        if len < headers + probe::LEN {
            return Err(FrameError(format!(
                "a {frame_size}-byte frame cannot carry the {}-byte probe over {}: the smallest is {}",
                probe::LEN,
                if v6 { "IPv6" } else { "IPv4" },
                headers + probe::LEN + FCS
            )));
        }
        if len > 65_535 {
            return Err(FrameError(format!(
                "a {frame_size}-byte frame is too large"
            )));
        }
        let udp_len = len - ETH_HEADER - ip_header;
        let mut b = vec![0u8; len];
        b[0..6].copy_from_slice(&dst_mac);
        b[6..12].copy_from_slice(&src_mac);
        let ethertype = if v6 { ETHERTYPE_IPV6 } else { ETHERTYPE_IPV4 };
        b[12..14].copy_from_slice(&ethertype.to_be_bytes());
        let ip = ETH_HEADER;
        let mut pseudo = 0u32;
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let h = &mut b[ip..ip + IPV4_HEADER];
                h[0] = 0x45;
                h[1] = tos;
                h[2..4].copy_from_slice(&((IPV4_HEADER + udp_len) as u16).to_be_bytes());
                // ID 0, DF: an atomic datagram (RFC 6864), never fragmented on the way.
                h[6] = 0x40;
                h[8] = TTL;
                h[9] = PROTO_UDP;
                h[12..16].copy_from_slice(&s.octets());
                h[16..20].copy_from_slice(&d.octets());
                let c = fold(sum_words(0, h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
                pseudo = sum_words(pseudo, &s.octets());
                pseudo = sum_words(pseudo, &d.octets());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let h = &mut b[ip..ip + IPV6_HEADER];
                // Version 6, traffic class `tos`, flow label 0.
                h[0] = 0x60 | (tos >> 4);
                h[1] = (tos & 0x0f) << 4;
                h[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
                h[6] = PROTO_UDP;
                h[7] = TTL;
                h[8..24].copy_from_slice(&s.octets());
                h[24..40].copy_from_slice(&d.octets());
                pseudo = sum_words(pseudo, &s.octets());
                pseudo = sum_words(pseudo, &d.octets());
            }
            _ => unreachable!("checked above"),
        }
        let udp = ip + ip_header;
        b[udp..udp + 2].copy_from_slice(&src.port().to_be_bytes());
        b[udp + 2..udp + 4].copy_from_slice(&dst.port().to_be_bytes());
        b[udp + 4..udp + 6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        let payload_at = udp + UDP_HEADER;
        // The same filler as the socket senders (the probe overwrites the first 16 bytes).
        for (i, x) in b[payload_at..].iter_mut().enumerate() {
            *x = (i % 251) as u8;
        }
        b[payload_at..payload_at + probe::LEN].fill(0);
        // Pseudo-header: addresses, zero + protocol, UDP length (RFC 768, RFC 8200 §8.1).
        pseudo = add(pseudo, u32::from(PROTO_UDP));
        pseudo = add(pseudo, udp_len as u32);
        let base_sum = sum_words(pseudo, &b[udp..]);
        Ok(FrameTemplate {
            bytes: b,
            payload_at,
            csum_at: udp + 6,
            base_sum,
        })
    }

    /// Bytes of each frame as written (the frame size less the FCS).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a template holds at least the headers.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The UDP payload length (what the receiving socket counts as the datagram).
    pub fn payload_len(&self) -> usize {
        self.bytes.len() - self.payload_at
    }

    /// Writes the frame carrying `p` into `out[..self.len()]`.
    ///
    /// # Panics
    /// If `out` is shorter than [`FrameTemplate::len`].
    pub fn write(&self, out: &mut [u8], p: Probe) {
        out[..self.bytes.len()].copy_from_slice(&self.bytes);
        self.stamp(out, p);
    }

    /// Writes only what differs per frame (probe and UDP checksum) into a buffer that
    /// already holds this template's bytes.
    pub fn stamp(&self, out: &mut [u8], p: Probe) {
        let at = self.payload_at;
        p.emit(&mut out[at..at + probe::LEN]);
        let sum = sum_words(self.base_sum, &out[at..at + probe::LEN]);
        let mut c = fold(sum);
        if c == 0 {
            // Zero means "no checksum" in UDP (and is not allowed over IPv6): send all ones.
            c = 0xffff;
        }
        out[self.csum_at..self.csum_at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC_MAC: Mac = [0x02, 0, 0, 0, 0, 0x01];
    const DST_MAC: Mac = [0x02, 0, 0, 0, 0, 0x02];

    fn v4() -> FrameTemplate {
        FrameTemplate::new(
            64,
            SRC_MAC,
            DST_MAC,
            "10.0.0.1:40000".parse().unwrap(),
            "10.0.1.2:5301".parse().unwrap(),
            0,
        )
        .unwrap()
    }

    /// Verifies a checksum the way a receiver does: the sum over everything, checksum
    /// included, folds to zero.
    fn verifies(sum: u32) -> bool {
        fold(sum) == 0
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3's example words sum to 0xddf2; the checksum is its complement.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(0, &data)), !0xddf2);
        // An odd byte is padded on the right.
        assert_eq!(sum_words(0, &[0x12]), 0x1200);
    }

    #[test]
    fn ipv4_64_byte_frame_golden_bytes() {
        let t = v4();
        assert_eq!(t.len(), 60);
        assert_eq!(t.payload_len(), 18);
        let mut f = vec![0u8; 60];
        t.write(
            &mut f,
            Probe {
                seq: 1,
                tx_ns: 0x0102_0304_0506_0708,
            },
        );
        #[rustfmt::skip]
        let golden: [u8; 60] = [
            // Ethernet: destination, source, IPv4
            0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,
            // IPv4: 45 00, length 46, ID 0, DF, TTL 64, UDP, checksum, 10.0.0.1 -> 10.0.1.2
            0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x25, 0xbd,
            10, 0, 0, 1, 10, 0, 1, 2,
            // UDP: 40000 -> 5301, length 26, checksum
            0x9c, 0x40, 0x14, 0xb5, 0x00, 0x1a, 0x19, 0x9c,
            // probe: seq 1, tx_ns, then the filler (i % 251) at offsets 16 and 17
            0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17,
        ];
        assert_eq!(f, golden);
        // The IPv4 header verifies.
        assert!(verifies(sum_words(0, &f[14..34])));
        // The UDP checksum verifies over the pseudo-header and the datagram.
        let mut s = sum_words(0, &f[26..34]);
        s = add(s, 17);
        s = add(s, 26);
        assert!(verifies(sum_words(s, &f[34..])));
    }

    #[test]
    fn ipv6_frame_has_a_valid_udp_checksum_for_every_probe() {
        let src: SocketAddr = "[fd00::1]:40000".parse().unwrap();
        let dst: SocketAddr = "[fd00:1::2]:5301".parse().unwrap();
        let t = FrameTemplate::new(128, SRC_MAC, DST_MAC, src, dst, 0xb8).unwrap();
        assert_eq!(t.len(), 124);
        assert_eq!(t.payload_len(), 124 - 14 - 40 - 8);
        let mut f = vec![0u8; t.len()];
        for seq in [0u64, 1, 0xffff, u64::MAX] {
            t.write(
                &mut f,
                Probe {
                    seq,
                    tx_ns: seq ^ 0x5555,
                },
            );
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            // Traffic class 0xb8 split over the first two bytes.
            assert_eq!(f[14], 0x6b);
            assert_eq!(f[15], 0x80);
            assert_eq!(u16::from_be_bytes([f[18], f[19]]) as usize, 124 - 54);
            let mut s = sum_words(0, &f[22..54]);
            s = add(s, 17);
            s = add(s, (124 - 54) as u32);
            assert!(verifies(sum_words(s, &f[54..])), "seq {seq}");
            assert_ne!(&f[60..62], &[0, 0], "UDP checksum over IPv6 is never zero");
            assert_eq!(Probe::parse(&f[62..]).unwrap().seq, seq);
        }
    }

    #[test]
    fn stamp_equals_write_on_a_prefilled_buffer() {
        let t = v4();
        let mut a = vec![0u8; t.len()];
        let mut b = vec![0u8; t.len()];
        t.write(&mut a, Probe { seq: 0, tx_ns: 0 });
        t.write(&mut b, Probe { seq: 0, tx_ns: 0 });
        let p = Probe {
            seq: 77,
            tx_ns: 123_456_789,
        };
        t.write(&mut a, p);
        t.stamp(&mut b, p);
        assert_eq!(a, b);
    }

    #[test]
    fn too_small_or_mixed_families_are_refused() {
        let v6: SocketAddr = "[fd00::1]:1".parse().unwrap();
        let v4: SocketAddr = "10.0.0.1:1".parse().unwrap();
        let e = FrameTemplate::new(64, SRC_MAC, DST_MAC, v6, v6, 0).unwrap_err();
        assert!(e.0.contains("the smallest is 82"), "{e}");
        assert!(FrameTemplate::new(82, SRC_MAC, DST_MAC, v6, v6, 0).is_ok());
        assert!(FrameTemplate::new(64, SRC_MAC, DST_MAC, v4, v6, 0).is_err());
    }
}
