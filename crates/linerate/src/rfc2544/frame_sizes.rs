//! Frame sizes and the arithmetic that turns them into datagrams and rates.
//!
//! A *frame size* is the Ethernet frame from the destination MAC to the FCS inclusive
//! (RFC 2544 §9, RFC 1242; FD.io CSIT uses the same definition), without preamble, start
//! delimiter and inter-frame gap. linerate sends UDP datagrams whose payload is chosen so that
//! the frame on an untagged Ethernet link has exactly that size:
//!
//! ```text
//! payload = frame − 18 (Ethernet header 14 + FCS 4) − 20 (IPv4) or 40 (IPv6) − 8 (UDP)
//! ```
//!
//! The payload must hold linerate's 16-byte probe header (sequence number and send time), so
//! the smallest frame is 62 bytes over IPv4 (the Ethernet minimum of 64 gives 18 bytes of
//! payload) and 82 bytes over IPv6 (a 64-byte frame cannot carry UDP over IPv6 with a probe).
//!
//! Rates (RFC 5180 Appendix A, RFC 2544 §20): on the wire every frame also takes 20 bytes of
//! preamble (7), start delimiter (1) and inter-frame gap (12), so a link of `R` bit/s carries at
//! most `R / (8 × (frame + 20))` frames per second; at that rate the layer-2 bit rate is
//! `fps × frame × 8`.

/// The frame sizes RFC 2544 §9.1 lists for Ethernet, in bytes (FCS included).
pub const RFC2544_ETHERNET: [u32; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// Ethernet header (14) plus FCS (4).
pub const ETHERNET_OVERHEAD: u32 = 18;
/// Preamble (7), start frame delimiter (1) and inter-frame gap (12): bytes on the wire per
/// frame beyond the frame itself.
pub const WIRE_OVERHEAD: u32 = 20;
/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;
/// IPv6 header without extension headers.
pub const IPV6_HEADER: u32 = 40;
/// UDP header.
pub const UDP_HEADER: u32 = 8;
/// The smallest Ethernet frame.
pub const ETHERNET_MIN_FRAME: u32 = 64;
/// The largest frame linerate accepts (a 9000-byte jumbo MTU plus Ethernet overhead).
pub const MAX_FRAME: u32 = 9018;

/// The IP version test datagrams are sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4: 20-byte header.
    V4,
    /// IPv6: 40-byte header.
    V6,
}

impl IpVersion {
    /// Bytes of IP and UDP header.
    pub fn ip_udp_overhead(self) -> u32 {
        UDP_HEADER
            + match self {
                IpVersion::V4 => IPV4_HEADER,
                IpVersion::V6 => IPV6_HEADER,
            }
    }

    /// `ipv4` or `ipv6`.
    pub fn name(self) -> &'static str {
        match self {
            IpVersion::V4 => "ipv4",
            IpVersion::V6 => "ipv6",
        }
    }

    /// The smallest frame that carries a probe header.
    pub fn min_frame(self) -> u32 {
        ETHERNET_OVERHEAD + self.ip_udp_overhead() + linerate_wire::probe::LEN as u32
    }
}

/// A frame size that cannot be tested; the message says what to use instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FrameSizeError(pub String);

/// UDP payload bytes that make a frame of exactly `frame` bytes (FCS included).
pub fn udp_payload(frame: u32, ip: IpVersion) -> Result<u32, FrameSizeError> {
    let min = ip.min_frame().max(ETHERNET_MIN_FRAME);
    if frame < min {
        let hint = if ip == IpVersion::V6 && frame >= ETHERNET_MIN_FRAME {
            format!(
                ": over IPv6 the 40-byte header leaves no room for linerate's 16-byte probe below {} bytes; use sizes from {min} up (e.g. --frame-sizes 84,128,256,512,1024,1280,1518) or an IPv4 server address",
                ip.min_frame()
            )
        } else {
            format!(": the smallest frame over {} is {min} bytes", ip.name())
        };
        return Err(FrameSizeError(format!(
            "frame size {frame} is too small{hint}"
        )));
    }
    if frame > MAX_FRAME {
        return Err(FrameSizeError(format!(
            "frame size {frame} is above the largest supported ({MAX_FRAME} bytes)"
        )));
    }
    Ok(frame - ETHERNET_OVERHEAD - ip.ip_udp_overhead())
}

/// Checks that a frame of `frame` bytes fits an interface MTU (the IP packet is
/// `frame − 18` bytes and must not be fragmented).
pub fn check_mtu(frame: u32, mtu: u32) -> Result<(), FrameSizeError> {
    let packet = frame.saturating_sub(ETHERNET_OVERHEAD);
    if packet > mtu {
        return Err(FrameSizeError(format!(
            "frame size {frame} needs an MTU of {packet} bytes but the interface towards the server has {mtu}: leave {frame} out of --frame-sizes or raise the MTU"
        )));
    }
    Ok(())
}

/// The theoretical maximum frame rate of a link of `line_rate_bps` for frames of `frame`
/// bytes: `rate / (8 × (frame + 20))` (RFC 5180 Appendix A).
pub fn max_fps(line_rate_bps: f64, frame: u32) -> f64 {
    line_rate_bps / (8.0 * f64::from(frame + WIRE_OVERHEAD))
}

/// Layer-2 bit rate of `fps` frames of `frame` bytes (FCS included, no preamble or gap).
pub fn l2_bps(fps: f64, frame: u32) -> f64 {
    fps * f64::from(frame) * 8.0
}

/// Layer-1 bit rate (what the frames occupy on the wire, preamble and gap included).
pub fn l1_bps(fps: f64, frame: u32) -> f64 {
    fps * f64::from(frame + WIRE_OVERHEAD) * 8.0
}

/// Payload bit rate to ask the engine for so that it sends `fps` datagrams of `payload` bytes.
pub fn payload_bps(fps: f64, payload: u32) -> u64 {
    let bps = (fps * f64::from(payload) * 8.0).round();
    if bps.is_finite() && bps >= 1.0 {
        bps as u64
    } else {
        1
    }
}

/// Parses a comma-separated list of frame sizes (`64,128,1518`), keeping the given order
/// and dropping repeats.
pub fn parse_list(text: &str) -> Result<Vec<u32>, FrameSizeError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: u32 = part.parse().map_err(|_| {
            FrameSizeError(format!(
                "--frame-sizes: '{part}' is not a whole number of bytes (e.g. 64,128,1518)"
            ))
        })?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(FrameSizeError(
            "--frame-sizes needs at least one size, e.g. 64,1518".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_follow_the_header_arithmetic() {
        // 64 − 18 − 20 − 8 = 18: the minimum Ethernet frame still carries the 16-byte probe.
        assert_eq!(udp_payload(64, IpVersion::V4), Ok(18));
        // 1518 − 46 = 1472, the classic largest UDP payload on a 1500-byte MTU.
        assert_eq!(udp_payload(1518, IpVersion::V4), Ok(1472));
        // IPv6: 1518 − 18 − 40 − 8 = 1452.
        assert_eq!(udp_payload(1518, IpVersion::V6), Ok(1452));
        assert_eq!(udp_payload(82, IpVersion::V6), Ok(16));
    }

    #[test]
    fn too_small_frames_say_what_to_use() {
        let e = udp_payload(64, IpVersion::V6).unwrap_err().0;
        assert!(e.contains("IPv6") && e.contains("82"), "{e}");
        let e = udp_payload(60, IpVersion::V4).unwrap_err().0;
        assert!(e.contains("64"), "{e}");
        assert!(udp_payload(9019, IpVersion::V4).is_err());
    }

    #[test]
    fn mtu_check() {
        assert!(check_mtu(1518, 1500).is_ok());
        let e = check_mtu(1518, 1400).unwrap_err().0;
        assert!(e.contains("1500") && e.contains("1400"), "{e}");
    }

    /// RFC 5180 Appendix A / the table in the reference notes: 64-byte frames on 1 Gbit/s are
    /// 1,488,095 fps; 1518-byte frames on 100 Mbit/s are 8,127 fps (rounded down).
    #[test]
    fn theoretical_maxima_match_rfc5180() {
        let cases = [
            (1e9, 64, 1_488_095),
            (1e9, 128, 844_594),
            (1e9, 256, 452_898),
            (1e9, 512, 234_962),
            (1e9, 1024, 119_731),
            (1e9, 1280, 96_153),
            (1e9, 1518, 81_274),
            (1e8, 64, 148_809),
            (1e8, 1518, 8_127),
            (1e10, 64, 14_880_952),
        ];
        for (rate, frame, want) in cases {
            assert_eq!(max_fps(rate, frame).floor() as u64, want, "{rate} {frame}");
        }
        // L2 Mbit/s at 1 Gbit/s line rate, 64 B: 1,488,095.2 × 512 = 761.9 Mbit/s.
        let l2 = l2_bps(max_fps(1e9, 64), 64) / 1e6;
        assert!((l2 - 761.9).abs() < 0.05, "{l2}");
        assert!((l1_bps(max_fps(1e9, 64), 64) - 1e9).abs() < 1e-3);
    }

    #[test]
    fn payload_rate_round_trips() {
        // 1000 fps of 18-byte payloads = 144,000 bit/s.
        assert_eq!(payload_bps(1000.0, 18), 144_000);
        assert_eq!(payload_bps(0.0, 18), 1);
    }

    #[test]
    fn lists_parse() {
        assert_eq!(parse_list("64, 128,64,1518"), Ok(vec![64, 128, 1518]));
        assert!(parse_list("64,abc").is_err());
        assert!(parse_list(" , ").is_err());
    }
}
