//! Captured frames: from the bytes of one pcap/pcapng record to the TCP and UDP facts that
//! linerate's trace analysis needs, and the byte layout of the classic pcap files that
//! `--capture` writes.
//!
//! [`decode`] takes a record's link type and captured bytes (often only the headers: a
//! capture made with a small snap length) and returns a [`Packet`]: addresses, ports, TCP
//! sequence and acknowledgement numbers, flags, window and options, and payload lengths as
//! the IP header states them (not as captured), so a headers-only capture still counts every
//! byte. Link layers are those Linux and tcpdump write: Ethernet (with VLAN tags), Linux
//! cooked SLL and SLL2, BSD null/loopback and raw IPv4/IPv6 (pcap-parser's `data` helpers);
//! IP, TCP and UDP are sliced by etherparse in its lax mode, which accepts truncated
//! payloads. Nothing here panics on any input; a frame that cannot be decoded gives a
//! [`WireError`] that names the layer and the byte offset in the frame.

use std::net::IpAddr;

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TcpOptionElement, TransportSlice};
use pcap_parser::data::PacketData;
use pcap_parser::Linktype;

use crate::error::{WireError, WireErrorKind};

/// LINKTYPE_NULL: BSD loopback (4-byte address family in the capturing host's byte order).
pub const LINKTYPE_NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: raw IPv4 or IPv6.
pub const LINKTYPE_RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback (address family in network byte order).
pub const LINKTYPE_LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux cooked capture v1.
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// LINKTYPE_IPV4: raw IPv4.
pub const LINKTYPE_IPV4: u32 = 228;
/// LINKTYPE_IPV6: raw IPv6.
pub const LINKTYPE_IPV6: u32 = 229;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2.
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
/// LINKTYPE_PPP: PPP (protocol field, optionally after the HDLC address and control bytes).
pub const LINKTYPE_PPP: u32 = 9;
/// LINKTYPE_FDDI: FDDI with an 802.2 LLC/SNAP header.
pub const LINKTYPE_FDDI: u32 = 10;
/// LINKTYPE_PPP_HDLC: PPP in HDLC-like framing.
pub const LINKTYPE_PPP_HDLC: u32 = 50;
/// LINKTYPE_PPP_ETHER: PPPoE session frames without the Ethernet header.
pub const LINKTYPE_PPP_ETHER: u32 = 51;
/// LINKTYPE_NFLOG: Linux netfilter NFLOG messages.
pub const LINKTYPE_NFLOG: u32 = 239;
/// The bits of a pcap file's link-type field that hold the link type; the others say
/// whether frames carry an FCS, and how long (libpcap's LT_LINKTYPE).
pub const LINKTYPE_MASK: u32 = 0x03FF_FFFF;
/// DLT_RAW as some systems write it in files (12 on most BSDs, 14 on OpenBSD).
const DLT_RAW_ALIASES: [u32; 2] = [12, 14];

/// Whether [`decode`] understands this link type.
pub fn link_type_supported(link_type: u32) -> bool {
    matches!(
        link_type & LINKTYPE_MASK,
        LINKTYPE_NULL
            | LINKTYPE_ETHERNET
            | LINKTYPE_RAW
            | LINKTYPE_LOOP
            | LINKTYPE_LINUX_SLL
            | LINKTYPE_IPV4
            | LINKTYPE_IPV6
            | LINKTYPE_LINUX_SLL2
            | LINKTYPE_PPP
            | LINKTYPE_FDDI
            | LINKTYPE_PPP_HDLC
            | LINKTYPE_PPP_ETHER
            | LINKTYPE_NFLOG
    ) || DLT_RAW_ALIASES.contains(&(link_type & LINKTYPE_MASK))
}

/// TCP flag bits as they sit in the header's 13th byte.
pub mod tcp_flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
    /// URG.
    pub const URG: u8 = 0x20;
    /// ECE.
    pub const ECE: u8 = 0x40;
    /// CWR.
    pub const CWR: u8 = 0x80;
}

/// The TCP options linerate's analysis reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// Maximum segment size (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift (SYN only).
    pub window_scale: Option<u8>,
    /// SACK permitted (SYN only).
    pub sack_permitted: bool,
    /// Timestamps: (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
    /// SACK blocks (left edge, right edge); the first `sack_count` are valid.
    pub sack: [(u32, u32); 4],
    /// Number of SACK blocks.
    pub sack_count: u8,
}

impl TcpOptions {
    /// The SACK blocks present.
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..usize::from(self.sack_count).min(4)]
    }
}

/// One TCP segment's header facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number (meaningful when ACK is set).
    pub ack: u32,
    /// Flag bits ([`tcp_flags`]).
    pub flags: u8,
    /// Window field as sent (not scaled).
    pub window: u16,
    /// Payload bytes as the IP header states them.
    pub payload_len: u32,
    /// Options.
    pub options: TcpOptions,
}

impl TcpSegment {
    /// True when all bits of `f` are set.
    pub fn has(&self, f: u8) -> bool {
        self.flags & f == f
    }
}

/// One UDP datagram's header facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload bytes as the UDP header states them.
    pub payload_len: u32,
}

/// The transport part of a [`Packet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A TCP segment.
    Tcp(TcpSegment),
    /// A UDP datagram.
    Udp(UdpDatagram),
}

/// A decoded IP packet carrying TCP or UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Length of the IP packet (header included): as its header states it, but no more
    /// than the frame held on the wire when that is known (as tshark takes it).
    pub ip_len: u32,
    /// The IP header claimed more bytes than the frame held on the wire: lengths were
    /// taken from the frame.
    pub ip_len_beyond_frame: bool,
    /// TCP or UDP.
    pub transport: Transport,
}

/// Decodes one captured frame of link type `link_type`.
///
/// `Ok(None)` is a frame that is fine but not TCP or UDP over IP (ARP, ICMP, a non-first IP
/// fragment, another protocol). `Err` is a frame that claims to be IP/TCP/UDP but whose
/// headers are cut short or invalid, or a link type that is not supported.
pub fn decode(link_type: u32, frame: &[u8]) -> Result<Option<Packet>, WireError> {
    decode_frame(link_type, frame, None)
}

/// [`decode`] of a frame that was `wire_len` bytes long on the wire (the record's original
/// length): an IP header that claims more than the frame held is capped at the frame, as
/// tshark does.
pub fn decode_frame(
    link_type: u32,
    frame: &[u8],
    wire_len: Option<u32>,
) -> Result<Option<Packet>, WireError> {
    let link_type = link_type & LINKTYPE_MASK;
    let lt = if DLT_RAW_ALIASES.contains(&link_type) {
        LINKTYPE_RAW
    } else {
        link_type
    };
    if !link_type_supported(lt) {
        return Err(WireError::new(
            "capture",
            0,
            WireErrorKind::BadBody(format!(
                "link type {link_type} is not supported (Ethernet, Linux SLL/SLL2, null/loopback, raw IP, PPP, PPPoE, FDDI and NFLOG are)"
            )),
        ));
    }
    // Bytes of the frame on the wire (at least what was captured).
    let wire = wire_len.map_or(usize::MAX, |w| (w as usize).max(frame.len()));
    let cx = Cx { wire };
    match lt {
        LINKTYPE_PPP | LINKTYPE_PPP_HDLC => return cx.ppp(frame, 0),
        LINKTYPE_PPP_ETHER => return cx.pppoe(frame, 0),
        LINKTYPE_FDDI => {
            // Frame control, destination and source (13 bytes), then 802.2 LLC/SNAP.
            if frame.len() < 21 {
                return Err(truncated("FDDI header", 0, 21, frame.len()));
            }
            if frame[13..16] != [0xaa, 0xaa, 0x03] {
                return Ok(None);
            }
            let et = u16::from_be_bytes([frame[19], frame[20]]);
            return cx.by_ether_type(et, &frame[21..], 21);
        }
        _ => {}
    }
    if lt == LINKTYPE_LOOP {
        // Like NULL but in network byte order; pcap-parser only knows NULL.
        if frame.len() < 4 {
            return Err(truncated("loopback header", 0, 4, frame.len()));
        }
        let af = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        return match af {
            2 => cx.l3(EtherType::IPV4, &frame[4..], 4),
            24 | 28 | 30 => cx.l3(EtherType::IPV6, &frame[4..], 4),
            _ => Ok(None),
        };
    }
    if lt == LINKTYPE_NULL && frame.len() >= 4 {
        // pcap-parser reads the family in little-endian only; files from big-endian hosts
        // have it the other way round. Both are small numbers, so try each.
        let le = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let be = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let af = if le < 256 { le } else { be };
        return match af {
            2 => cx.l3(EtherType::IPV4, &frame[4..], 4),
            24 | 28 | 30 => cx.l3(EtherType::IPV6, &frame[4..], 4),
            _ => Ok(None),
        };
    }
    let link_len_name = match lt {
        LINKTYPE_LINUX_SLL => Some(("Linux SLL header", 16)),
        LINKTYPE_LINUX_SLL2 => Some(("Linux SLL2 header", 20)),
        LINKTYPE_NULL => Some(("loopback header", 4)),
        LINKTYPE_ETHERNET => Some(("Ethernet header", 14)),
        _ => None,
    };
    if let Some((name, need)) = link_len_name {
        if frame.len() < need {
            return Err(truncated(name, 0, need, frame.len()));
        }
    }
    if frame.is_empty() {
        return Err(truncated("IP header", 0, 20, 0));
    }
    match pcap_parser::data::get_packetdata(frame, Linktype(lt as i32), frame.len()) {
        Some(PacketData::L2(eth)) => cx.ethernet(eth),
        Some(PacketData::L3(ethertype, data)) => {
            // Where the data starts in the frame (NFLOG's payload need not end it).
            let off = (data.as_ptr() as usize)
                .checked_sub(frame.as_ptr() as usize)
                .filter(|o| *o <= frame.len())
                .unwrap_or(frame.len() - data.len());
            cx.by_ether_type(ethertype, data, off)
        }
        Some(PacketData::L4(..)) | Some(PacketData::Unsupported(_)) | None => Ok(None),
    }
}

/// PPP protocol numbers of IPv4 and IPv6.
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
/// Ether types of PPPoE sessions and MPLS.
const ETHERTYPE_PPPOE: u16 = 0x8864;
const ETHERTYPE_MPLS: [u16; 2] = [0x8847, 0x8848];
/// Most MPLS labels read before giving up.
const MPLS_MAX_LABELS: usize = 16;

/// What every layer of one frame's decoding needs to know.
#[derive(Clone, Copy)]
struct Cx {
    /// The frame's length on the wire (usize::MAX: unknown).
    wire: usize,
}

impl Cx {
    fn l3(self, et: EtherType, ip: &[u8], base: usize) -> Result<Option<Packet>, WireError> {
        l3(et, ip, base, self.wire)
    }

    /// A payload of ether type `et` that starts `base` bytes into the frame.
    fn by_ether_type(self, et: u16, data: &[u8], base: usize) -> Result<Option<Packet>, WireError> {
        match et {
            0x0800 => self.l3(EtherType::IPV4, data, base),
            0x86dd => self.l3(EtherType::IPV6, data, base),
            ETHERTYPE_PPPOE => self.pppoe(data, base),
            _ if ETHERTYPE_MPLS.contains(&et) => self.mpls(data, base),
            _ => Ok(None),
        }
    }

    fn ethernet(self, frame: &[u8]) -> Result<Option<Packet>, WireError> {
        let sliced = LaxSlicedPacket::from_ethernet(frame).map_err(|e| {
            truncated(
                "Ethernet header",
                e.layer_start_offset,
                e.required_len,
                e.len,
            )
        })?;
        let Some(payload) = sliced.ether_payload() else {
            return Ok(None);
        };
        let off = frame.len() - payload.payload.len();
        self.by_ether_type(payload.ether_type.0, payload.payload, off)
    }

    /// PPP: the protocol field, after the HDLC address and control bytes if present.
    fn ppp(self, data: &[u8], base: usize) -> Result<Option<Packet>, WireError> {
        let skip = if data.starts_with(&[0xff, 0x03]) {
            2
        } else {
            0
        };
        let rest = &data[skip..];
        let Some(&first) = rest.first() else {
            return Err(truncated("PPP header", base, skip + 2, data.len()));
        };
        // An odd first byte is a compressed (one-byte) protocol field.
        let (proto, n) = if first & 1 == 1 {
            (u16::from(first), 1)
        } else if rest.len() >= 2 {
            (u16::from_be_bytes([rest[0], rest[1]]), 2)
        } else {
            return Err(truncated("PPP header", base, skip + 2, data.len()));
        };
        let at = skip + n;
        match proto {
            PPP_IPV4 => self.l3(EtherType::IPV4, &data[at..], base + at),
            PPP_IPV6 => self.l3(EtherType::IPV6, &data[at..], base + at),
            _ => Ok(None),
        }
    }

    /// A PPPoE session header (6 bytes), then PPP's protocol field.
    fn pppoe(self, data: &[u8], base: usize) -> Result<Option<Packet>, WireError> {
        if data.len() < 8 {
            return Err(truncated("PPPoE header", base, 8, data.len()));
        }
        let proto = u16::from_be_bytes([data[6], data[7]]);
        match proto {
            PPP_IPV4 => self.l3(EtherType::IPV4, &data[8..], base + 8),
            PPP_IPV6 => self.l3(EtherType::IPV6, &data[8..], base + 8),
            _ => Ok(None),
        }
    }

    /// MPLS labels down to the bottom of the stack, then IP by its version nibble.
    fn mpls(self, data: &[u8], base: usize) -> Result<Option<Packet>, WireError> {
        let mut at = 0;
        for _ in 0..MPLS_MAX_LABELS {
            if data.len() < at + 4 {
                return Err(truncated("MPLS label", base + at, at + 4, data.len()));
            }
            let bottom = data[at + 2] & 1 == 1;
            at += 4;
            if bottom {
                return match data.get(at).map(|b| b >> 4) {
                    Some(4) => self.l3(EtherType::IPV4, &data[at..], base + at),
                    Some(6) => self.l3(EtherType::IPV6, &data[at..], base + at),
                    // A pseudowire (Ethernet, with or without a control word) or nothing.
                    _ => Ok(None),
                };
            }
        }
        Ok(None)
    }
}

fn truncated(layer: &'static str, offset: usize, need: usize, have: usize) -> WireError {
    WireError::new(layer, offset, WireErrorKind::Truncated { need, have })
}

/// What an IP header says: addresses, the packet's length and its headers' length (with
/// IPv4's authentication header or IPv6's extension headers), and whether the packet is a
/// fragment after the first.
struct IpHeader {
    src: IpAddr,
    dst: IpAddr,
    ip_len: usize,
    headers_len: usize,
    fragment_tail: bool,
}

/// The header of `net`; `fallback_len` is the packet's length when the header states none
/// (a total length of 0, or below the header, is what TSO/BIG TCP captures show). None for
/// ARP.
fn ip_header(net: &LaxNetSlice<'_>, fallback_len: usize) -> Option<IpHeader> {
    match net {
        LaxNetSlice::Ipv4(v4) => {
            let h = v4.header();
            let hlen = usize::from(h.ihl()) * 4;
            let ext = v4.extensions().auth.map_or(0, |a| a.slice().len());
            let stated = usize::from(h.total_len());
            Some(IpHeader {
                src: IpAddr::V4(h.source_addr()),
                dst: IpAddr::V4(h.destination_addr()),
                ip_len: if stated < hlen { fallback_len } else { stated },
                headers_len: hlen + ext,
                fragment_tail: h.fragments_offset().value() != 0,
            })
        }
        LaxNetSlice::Ipv6(v6) => {
            let h = v6.header();
            let ext = v6.extensions().slice().len();
            let stated = usize::from(h.payload_length());
            Some(IpHeader {
                src: IpAddr::V6(h.source_addr()),
                dst: IpAddr::V6(h.destination_addr()),
                ip_len: if stated == 0 {
                    fallback_len
                } else {
                    40 + stated
                },
                headers_len: 40 + ext,
                fragment_tail: v6.payload().fragmented,
            })
        }
        LaxNetSlice::Arp(_) => None,
    }
}

/// A TCP segment's header facts; `ip_payload_len` is the IP payload's length as stated.
fn tcp_segment(tcp: &etherparse::TcpSlice<'_>, ip_payload_len: usize) -> TcpSegment {
    let hdr = tcp.header_slice().len();
    let mut options = TcpOptions::default();
    for o in tcp.options_iterator() {
        match o {
            Ok(TcpOptionElement::MaximumSegmentSize(m)) => options.mss = Some(m),
            Ok(TcpOptionElement::WindowScale(s)) => options.window_scale = Some(s),
            Ok(TcpOptionElement::SelectiveAcknowledgementPermitted) => {
                options.sack_permitted = true
            }
            Ok(TcpOptionElement::SelectiveAcknowledgement(first, rest)) => {
                options.sack[0] = first;
                let mut n = 1;
                for b in rest.iter().flatten() {
                    if n < 4 {
                        options.sack[n] = *b;
                        n += 1;
                    }
                }
                options.sack_count = n as u8;
            }
            Ok(TcpOptionElement::Timestamp(v, e)) => options.timestamp = Some((v, e)),
            Ok(TcpOptionElement::Noop) => {}
            // A malformed option ends the list, as in the kernel's parser.
            Err(_) => break,
        }
    }
    TcpSegment {
        src_port: tcp.source_port(),
        dst_port: tcp.destination_port(),
        seq: tcp.sequence_number(),
        ack: tcp.acknowledgment_number(),
        flags: tcp.header_slice().get(13).copied().unwrap_or(0),
        window: tcp.window_size(),
        payload_len: u32::try_from(ip_payload_len.saturating_sub(hdr)).unwrap_or(0),
        options,
    }
}

/// An IP packet whose transport header etherparse did not slice: the first fragment of a
/// UDP datagram (from its 8 header bytes), nothing for another protocol, or the error that
/// stopped a TCP or UDP header.
fn unsliced_transport(
    sliced: &LaxSlicedPacket<'_>,
    net: &LaxNetSlice<'_>,
    base: usize,
    have: usize,
) -> Result<Option<Transport>, WireError> {
    let (proto, fragmented, payload) = match net {
        LaxNetSlice::Ipv4(v4) => {
            let p = v4.payload();
            (p.ip_number, p.fragmented, p.payload)
        }
        LaxNetSlice::Ipv6(v6) => {
            let p = v6.payload();
            (p.ip_number, p.fragmented, p.payload)
        }
        LaxNetSlice::Arp(_) => return Ok(None),
    };
    if fragmented {
        // The first fragment of a datagram (the others were left out before). UDP's
        // header states the whole datagram's length; TCP has no such field and linerate
        // does not reassemble, so a fragmented TCP segment is "other".
        if proto == etherparse::IpNumber::UDP && payload.len() >= 8 {
            let stated = usize::from(u16::from_be_bytes([payload[4], payload[5]]));
            return Ok(Some(Transport::Udp(UdpDatagram {
                src_port: u16::from_be_bytes([payload[0], payload[1]]),
                dst_port: u16::from_be_bytes([payload[2], payload[3]]),
                payload_len: u32::try_from(stated.saturating_sub(8)).unwrap_or(0),
            })));
        }
        return Ok(None);
    }
    if proto == etherparse::IpNumber::TCP {
        Err(stop_error(sliced, base, "TCP header", have))
    } else if proto == etherparse::IpNumber::UDP {
        Err(stop_error(sliced, base, "UDP header", have))
    } else {
        Ok(None)
    }
}

/// Decodes an IP packet that starts `base` bytes into the frame.
fn l3(
    ether_type: EtherType,
    ip: &[u8],
    base: usize,
    wire: usize,
) -> Result<Option<Packet>, WireError> {
    // The IP packet's bytes on the wire: the frame's from `base` on (what was captured
    // when the frame's length is unknown).
    let wire_ip = (wire != usize::MAX).then(|| wire.saturating_sub(base).max(ip.len()));
    if ether_type != EtherType::IPV4 && ether_type != EtherType::IPV6 {
        return Ok(None);
    }
    let sliced = LaxSlicedPacket::from_ether_type(ether_type, ip);
    let Some(net) = &sliced.net else {
        return Err(stop_error(&sliced, base, "IP header", ip.len()));
    };
    let Some(h) = ip_header(net, wire_ip.unwrap_or(ip.len())) else {
        return Ok(None);
    };
    if h.fragment_tail {
        return Ok(None);
    }
    // tshark takes no more than the frame held on the wire.
    let beyond = wire_ip.is_some_and(|w| h.ip_len > w);
    let ip_len = h.ip_len.min(wire_ip.unwrap_or(usize::MAX));
    let ip_payload_len = ip_len.saturating_sub(h.headers_len);
    let transport = match &sliced.transport {
        Some(TransportSlice::Tcp(tcp)) => Transport::Tcp(tcp_segment(tcp, ip_payload_len)),
        Some(TransportSlice::Udp(udp)) => {
            let stated = usize::from(udp.length());
            let len = if stated >= 8 { stated } else { ip_payload_len };
            Transport::Udp(UdpDatagram {
                src_port: udp.source_port(),
                dst_port: udp.destination_port(),
                payload_len: u32::try_from(len.saturating_sub(8)).unwrap_or(0),
            })
        }
        Some(_) => return Ok(None),
        None => match unsliced_transport(&sliced, net, base, ip.len())? {
            Some(t) => t,
            None => return Ok(None),
        },
    };
    Ok(Some(Packet {
        src: h.src,
        dst: h.dst,
        ip_len: u32::try_from(ip_len).unwrap_or(u32::MAX),
        ip_len_beyond_frame: beyond,
        transport,
    }))
}

fn stop_error(
    sliced: &LaxSlicedPacket<'_>,
    base: usize,
    layer: &'static str,
    have: usize,
) -> WireError {
    use etherparse::err::packet::SliceError;
    match &sliced.stop_err {
        Some((SliceError::Len(l), _)) => {
            truncated(layer, base + l.layer_start_offset, l.required_len, l.len)
        }
        Some((e, _)) => WireError::new(layer, base, WireErrorKind::BadBody(e.to_string())),
        None => truncated(layer, base, 20, have),
    }
}

/// The 24-byte header of a classic pcap file with nanosecond timestamps (magic
/// 0xa1b23c4d), written little-endian on every host
/// (libpcap writes its host's order; readers follow the magic, so a big-endian board's
/// captures read the same, and the bytes are the same everywhere).
pub fn pcap_file_header(snaplen: u32, link_type: u32) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs stay 0.
    h[16..20].copy_from_slice(&snaplen.to_le_bytes());
    h[20..24].copy_from_slice(&link_type.to_le_bytes());
    h
}

/// The 16-byte record header that precedes each packet in a nanosecond pcap file.
pub fn pcap_record_header(ts_ns: u64, caplen: u32, orig_len: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    let secs = u32::try_from(ts_ns / 1_000_000_000).unwrap_or(u32::MAX);
    let nanos = (ts_ns % 1_000_000_000) as u32;
    h[0..4].copy_from_slice(&secs.to_le_bytes());
    h[4..8].copy_from_slice(&nanos.to_le_bytes());
    h[8..12].copy_from_slice(&caplen.to_le_bytes());
    h[12..16].copy_from_slice(&orig_len.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 + TCP SYN with MSS, SACK-permitted, timestamps, window scale.
    fn syn_frame() -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        let tcp_opts: [u8; 20] = [
            2, 4, 0x05, 0xb4, // MSS 1460
            4, 2, // SACK permitted
            8, 10, 0, 0, 0, 1, 0, 0, 0, 0, // TS 1, 0
            1, // NOP
            3, 3, 7, // WS 7
        ];
        let tcp_len = 20 + tcp_opts.len();
        let total = 20 + tcp_len;
        f.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0x40,
            0,
            64,
            6,
        ]);
        f.extend_from_slice(&[0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x9c, 0x40, 0x14, 0xb5]); // ports 40000 -> 5301
        f.extend_from_slice(&1000u32.to_be_bytes());
        f.extend_from_slice(&0u32.to_be_bytes());
        f.extend_from_slice(&[((tcp_len / 4) as u8) << 4, 0x02, 0xfa, 0xf0, 0, 0, 0, 0]);
        f.extend_from_slice(&tcp_opts);
        f
    }

    #[test]
    fn decodes_a_tcp_syn_with_options() {
        let p = decode(LINKTYPE_ETHERNET, &syn_frame()).unwrap().unwrap();
        assert_eq!(p.src, "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(p.dst, "10.0.0.2".parse::<IpAddr>().unwrap());
        let Transport::Tcp(t) = p.transport else {
            panic!("not TCP")
        };
        assert_eq!((t.src_port, t.dst_port, t.seq), (40000, 5301, 1000));
        assert!(t.has(tcp_flags::SYN) && !t.has(tcp_flags::ACK));
        assert_eq!(t.window, 0xfaf0);
        assert_eq!(t.payload_len, 0);
        assert_eq!(t.options.mss, Some(1460));
        assert_eq!(t.options.window_scale, Some(7));
        assert!(t.options.sack_permitted);
        assert_eq!(t.options.timestamp, Some((1, 0)));
    }

    #[test]
    fn payload_length_comes_from_the_ip_header_when_the_capture_is_cut_short() {
        let mut f = syn_frame();
        // Claim 1000 bytes of payload that the capture did not keep.
        let total = 20 + 40 + 1000;
        f[16] = (total >> 8) as u8;
        f[17] = total as u8;
        let p = decode(LINKTYPE_ETHERNET, &f).unwrap().unwrap();
        let Transport::Tcp(t) = p.transport else {
            panic!("not TCP")
        };
        assert_eq!(t.payload_len, 1000);
        assert_eq!(p.ip_len, 1060);
    }

    #[test]
    fn a_cut_tcp_header_is_an_error_that_says_where() {
        let f = syn_frame();
        let e = decode(LINKTYPE_ETHERNET, &f[..14 + 20 + 10]).unwrap_err();
        assert_eq!(e.layer, "TCP header");
        assert!(e.to_string().contains("TCP header"), "{e}");
    }

    #[test]
    fn cooked_and_raw_link_types_reach_the_same_packet() {
        let f = syn_frame();
        let ip = &f[14..];
        let want = decode(LINKTYPE_ETHERNET, &f).unwrap();
        assert_eq!(decode(LINKTYPE_RAW, ip).unwrap(), want);
        assert_eq!(decode(LINKTYPE_IPV4, ip).unwrap(), want);
        let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
        sll.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_LINUX_SLL, &sll).unwrap(), want);
        let mut sll2 = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
        ];
        sll2.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_LINUX_SLL2, &sll2).unwrap(), want);
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_NULL, &null).unwrap(), want);
        let mut vlan = f[..12].to_vec();
        vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x00]);
        vlan.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_ETHERNET, &vlan).unwrap(), want);
    }

    #[test]
    fn non_ip_frames_are_skipped_and_unknown_link_types_refused() {
        let arp = [0xffu8; 14 + 28];
        let mut arp = arp.to_vec();
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(decode(LINKTYPE_ETHERNET, &arp).unwrap(), None);
        assert!(decode(147, &[0u8; 40]).is_err());
        assert!(decode(LINKTYPE_ETHERNET, &[]).is_err());
        assert!(decode(LINKTYPE_LINUX_SLL2, &[0u8; 5]).is_err());
    }

    #[test]
    fn fcs_flagged_ppp_pppoe_mpls_and_fddi_frames_reach_the_same_packet() {
        let f = syn_frame();
        let ip = &f[14..];
        let want = decode(LINKTYPE_ETHERNET, &f).unwrap();
        assert!(want.is_some());
        // The FCS-length bits of the link-type field are not part of the link type.
        assert_eq!(decode(0x3000_0001, &f).unwrap(), want);
        let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
        ppp.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_PPP, &ppp).unwrap(), want);
        assert_eq!(decode(LINKTYPE_PPP, &ppp[2..]).unwrap(), want);
        let mut pppoe = vec![0x11, 0, 0, 1, 0, 0, 0x00, 0x21];
        pppoe.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_PPP_ETHER, &pppoe).unwrap(), want);
        let mut eth = f[..12].to_vec();
        eth.extend_from_slice(&[0x88, 0x64]);
        eth.extend_from_slice(&pppoe);
        assert_eq!(decode(LINKTYPE_ETHERNET, &eth).unwrap(), want);
        let mut mpls = f[..12].to_vec();
        mpls.extend_from_slice(&[0x88, 0x47, 0, 1, 0, 64, 0, 2, 1, 64]);
        mpls.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_ETHERNET, &mpls).unwrap(), want);
        let mut fddi = vec![0x50, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6];
        fddi.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
        fddi.extend_from_slice(ip);
        assert_eq!(decode(LINKTYPE_FDDI, &fddi).unwrap(), want);
        // Cut short: an error naming the layer, never a panic.
        assert_eq!(
            decode(LINKTYPE_ETHERNET, &mpls[..16]).unwrap_err().layer,
            "MPLS label"
        );
    }

    #[test]
    fn an_ip_length_beyond_the_frame_on_the_wire_is_capped_at_it() {
        let mut f = syn_frame();
        let total = 20 + 40 + 1000;
        f[16] = (total >> 8) as u8;
        f[17] = total as u8;
        f.resize(f.len() + 100, 0);
        // 100 bytes of payload on the wire, 1000 claimed.
        let p = decode_frame(LINKTYPE_ETHERNET, &f, Some(f.len() as u32))
            .unwrap()
            .unwrap();
        let Transport::Tcp(t) = p.transport else {
            panic!("not TCP")
        };
        assert_eq!(t.payload_len, 100);
        assert!(p.ip_len_beyond_frame);
        // Headers only, the frame 1074 bytes on the wire: the header's 1000 stand.
        let p = decode_frame(LINKTYPE_ETHERNET, &f[..74], Some(14 + total as u32))
            .unwrap()
            .unwrap();
        let Transport::Tcp(t) = p.transport else {
            panic!("not TCP")
        };
        assert_eq!(t.payload_len, 1000);
        assert!(!p.ip_len_beyond_frame);
    }

    #[test]
    fn pcap_headers_have_the_documented_layout() {
        let h = pcap_file_header(128, LINKTYPE_LINUX_SLL2);
        assert_eq!(u32::from_le_bytes([h[0], h[1], h[2], h[3]]), 0xa1b2_3c4d);
        assert_eq!(u32::from_le_bytes([h[20], h[21], h[22], h[23]]), 276);
        let r = pcap_record_header(3_000_000_123, 60, 1514);
        assert_eq!(u32::from_le_bytes([r[0], r[1], r[2], r[3]]), 3);
        assert_eq!(u32::from_le_bytes([r[4], r[5], r[6], r[7]]), 123);
        assert_eq!(u32::from_le_bytes([r[12], r[13], r[14], r[15]]), 1514);
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(lt in proptest::sample::select(vec![0u32, 1, 12, 101, 108, 113, 228, 229, 276, 9999]),
                               bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decode(lt, &bytes);
        }

        #[test]
        fn decode_never_panics_on_mutated_frames(idx in 0usize..74, val in proptest::prelude::any::<u8>(), cut in 0usize..75) {
            let mut f = syn_frame();
            f[idx] = val;
            f.truncate(cut);
            let _ = decode(LINKTYPE_ETHERNET, &f);
        }
    }
}
