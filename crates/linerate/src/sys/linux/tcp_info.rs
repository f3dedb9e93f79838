//! `TCP_INFO`: decoding Linux `struct tcp_info` into a [`TcpInfoReport`].
//!
//! Layout: `include/uapi/linux/tcp.h`. Offsets below were checked with `offsetof` against
//! the header of linux-libc-dev (Linux 6.x, `sizeof(struct tcp_info)` = 232). The struct
//! only ever grows at the end, so an older kernel returns a shorter prefix and `optlen`
//! says how much it wrote; a field is reported only if that length covers it. Values are
//! in host byte order.
//!
//! | offset | field | since |
//! | --- | --- | --- |
//! | 0..8 | u8 state, ca_state, retransmits, probes (3), backoff (4), … (bitfields) | 2.6 |
//! | 8 | u32 rto (µs) | 2.6 |
//! | 16 | u32 snd_mss | 2.6 |
//! | 68 / 72 | u32 rtt / rttvar (µs) | 2.6 |
//! | 80 | u32 snd_cwnd (segments) | 2.6 |
//! | 84 | u32 advmss | 2.6 |
//! | 100 | u32 total_retrans — end of the 2.6 struct at 104 | 2.6 |
//! | 104 | u64 pacing_rate (bytes/s) | 3.15 |
//! | 120 | u64 bytes_acked | 4.1 |
//! | 136 / 140 | u32 segs_out / segs_in (segments, [`read_tcp_segments`]) | 4.2 |
//! | 148 | u32 min_rtt (µs) | 4.6 |
//! | 156 | u32 data_segs_out | 4.6 |
//! | 160 | u64 delivery_rate (bytes/s) | 4.9 |
//! | 168 / 176 / 184 | u64 busy_time / rwnd_limited / sndbuf_limited (µs) | 4.10 |
//! | 208 | u64 bytes_retrans | 4.19 |
//! | 228 | u32 snd_wnd (bytes) | 5.4 |
//! | 240 / 242 / 244 | u16 total_rto / u16 total_rto_recoveries / u32 total_rto_time (ms) | 6.7 |
//!
//! The last row is newer than Debian 12's header (232 bytes); its offsets are upstream's
//! (`tcpi_rcv_wnd` at 232 and `tcpi_rehash` at 236 come between). A kernel before 6.7
//! writes 232 bytes or fewer, so those fields are absent there; the fixture test decodes a
//! 248-byte struct with a distinct value in every field. Against the kernel's own counters
//! the lab test checks `total_retrans` (`Tcp.RetransSegs`) and `segs_out` (`Tcp.OutSegs`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use linerate_wire::report::TcpInfoReport;

/// Offsets of the fields linerate reads, from `include/uapi/linux/tcp.h`.
mod off {
    pub const PROBES: usize = 3;
    pub const BACKOFF: usize = 4;
    pub const RTO: usize = 8;
    pub const SND_MSS: usize = 16;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_CWND: usize = 80;
    pub const ADVMSS: usize = 84;
    pub const TOTAL_RETRANS: usize = 100;
    /// End of `tcpi_total_retrans`: the shortest struct linerate accepts.
    pub const MIN_LEN: usize = 104;
    pub const PACING_RATE: usize = 104;
    pub const BYTES_ACKED: usize = 120;
    pub const SEGS_OUT: usize = 136;
    pub const SEGS_IN: usize = 140;
    pub const MIN_RTT: usize = 148;
    pub const DATA_SEGS_OUT: usize = 156;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const BYTES_RETRANS: usize = 208;
    pub const SND_WND: usize = 228;
    pub const TOTAL_RTO: usize = 240;
    pub const TOTAL_RTO_RECOVERIES: usize = 242;
    pub const TOTAL_RTO_TIME: usize = 244;
}

/// Size of the buffer [`read_tcp_info`] offers the kernel (larger than any struct so far:
/// Linux 6.18 writes 280 bytes).
pub const TCP_INFO_BUF: usize = 512;

fn u8_at(raw: &[u8], at: usize) -> Option<u8> {
    raw.get(at).copied()
}

fn u16_at(raw: &[u8], at: usize) -> Option<u16> {
    let bytes: [u8; 2] = raw.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(u16::from_ne_bytes(bytes))
}

fn u32_at(raw: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = raw.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_ne_bytes(bytes))
}

fn u64_at(raw: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = raw.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_ne_bytes(bytes))
}

/// Decodes the `struct tcp_info` prefix the kernel wrote (`raw` = exactly `optlen` bytes).
///
/// `None` when `raw` is shorter than the 104-byte Linux 2.6 struct (no RTT/cwnd/MSS).
/// Later fields are `Some` only when `raw` covers them. A pacing rate of `u64::MAX` means
/// "no pacing limit" to the kernel and is reported as absent.
pub fn parse_tcp_info(raw: &[u8]) -> Option<TcpInfoReport> {
    if raw.len() < off::MIN_LEN {
        return None;
    }
    Some(TcpInfoReport {
        rtt_us: u32_at(raw, off::RTT)?,
        rttvar_us: Some(u32_at(raw, off::RTTVAR)?),
        snd_cwnd: u32_at(raw, off::SND_CWND)?,
        snd_mss: u32_at(raw, off::SND_MSS)?,
        total_retrans: Some(u32_at(raw, off::TOTAL_RETRANS)?),
        snd_wnd_bytes: u32_at(raw, off::SND_WND),
        min_rtt_us: u32_at(raw, off::MIN_RTT),
        delivery_rate_bytes_per_sec: u64_at(raw, off::DELIVERY_RATE),
        pacing_rate_bytes_per_sec: u64_at(raw, off::PACING_RATE).filter(|&r| r != u64::MAX),
        busy_time_us: u64_at(raw, off::BUSY_TIME),
        rwnd_limited_us: u64_at(raw, off::RWND_LIMITED),
        sndbuf_limited_us: u64_at(raw, off::SNDBUF_LIMITED),
        bytes_acked: u64_at(raw, off::BYTES_ACKED),
        bytes_retrans: u64_at(raw, off::BYTES_RETRANS),
        segs_out: u32_at(raw, off::SEGS_OUT),
        data_segs_out: u32_at(raw, off::DATA_SEGS_OUT),
        advmss_bytes: u32_at(raw, off::ADVMSS),
        rto_us: u32_at(raw, off::RTO),
        probes: u8_at(raw, off::PROBES),
        backoff: u8_at(raw, off::BACKOFF),
        total_rto: u16_at(raw, off::TOTAL_RTO),
        total_rto_recoveries: u16_at(raw, off::TOTAL_RTO_RECOVERIES),
        total_rto_time_ms: u32_at(raw, off::TOTAL_RTO_TIME),
    })
}

/// Segments sent and received over the connection's life (`tcpi_segs_out`,
/// `tcpi_segs_in`, Linux 4.2), from the struct prefix the kernel wrote; `None` when it does
/// not cover them.
pub fn parse_tcp_segments(raw: &[u8]) -> Option<(u32, u32)> {
    Some((u32_at(raw, off::SEGS_OUT)?, u32_at(raw, off::SEGS_IN)?))
}

/// `tcpi_state`, from a struct prefix that is a `struct tcp_info` at all: `None` when `raw`
/// is shorter than the 104-byte Linux 2.6 struct. A shorter answer is not one (a user-mode
/// emulator such as qemu's passes `TCP_INFO` through as if it were an `int` option and
/// returns 4 bytes, byte-swapped on a big-endian guest), so its first byte is not the state.
pub fn parse_tcp_state(raw: &[u8]) -> Option<u8> {
    (raw.len() >= off::MIN_LEN).then(|| raw[0])
}

/// Why a `struct tcp_info` of `written` bytes is not usable, for the error.
fn short_struct(written: usize, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the system returned {written} bytes of tcp_info, {what} (a kernel before Linux 2.6, or an emulator that does not translate TCP_INFO)"
        ),
    )
}

/// Reads (segments sent, segments received) from a TCP socket's `TCP_INFO`: the packets the
/// connection put on and took off its interface (each counted after TSO/GSO splitting).
///
/// Errors: as [`read_tcp_info`]; `InvalidData` on a kernel older than 4.2.
pub fn read_tcp_segments(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    let (buf, written) = raw_tcp_info(fd)?;
    parse_tcp_segments(&buf[..written])
        .ok_or_else(|| short_struct(written, "without segment counts"))
}

/// True once everything a TCP socket sent, its FIN included, has been acknowledged by the
/// peer's kernel: the state `tcpi_state` is past FIN_WAIT1 (FIN_WAIT2, TIME_WAIT or CLOSE)
/// after a `shutdown(SHUT_WR)`. Not that the peer's program has read it. A connection the
/// peer reset is in CLOSE too: true then as well, since there is nothing left to wait for.
pub fn all_acked_after_shutdown(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let (buf, written) = raw_tcp_info(fd)?;
    let state = parse_tcp_state(&buf[..written])
        .ok_or_else(|| short_struct(written, "too few to hold its state"))?;
    // include/net/tcp_states.h: TCP_FIN_WAIT2 = 5, TCP_TIME_WAIT = 6, TCP_CLOSE = 7.
    Ok(matches!(state, 5..=7))
}

/// Reads `TCP_INFO` from a TCP socket.
///
/// Errors: the `getsockopt` error (e.g. `ENOTSOCK`, `ENOPROTOOPT` on a non-TCP socket), or
/// `InvalidData` when fewer than 104 bytes came back.
pub fn read_tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfoReport> {
    let (buf, written) = raw_tcp_info(fd)?;
    parse_tcp_info(&buf[..written]).ok_or_else(|| {
        short_struct(
            written,
            &format!("fewer than the {} of Linux 2.6's struct", off::MIN_LEN),
        )
    })
}

/// The raw `struct tcp_info` and how many bytes of it the kernel wrote.
// `unsafe` is allowed in this module by name (`sys/mod.rs`); this is its only block.
fn raw_tcp_info(fd: BorrowedFd<'_>) -> io::Result<([u8; TCP_INFO_BUF], usize)> {
    let mut buf = [0u8; TCP_INFO_BUF];
    let mut len: libc::socklen_t = TCP_INFO_BUF as libc::socklen_t;
    // SAFETY: `fd` is a valid open descriptor for the lifetime of the borrow; `buf` is a
    // live, writable buffer of `len` bytes and `len` points to a live socklen_t holding
    // that size, so the kernel writes at most `len` bytes into `buf` and stores the number
    // written back into `len`. No Rust reference to `buf` is used during the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let written = usize::try_from(len).map_or(TCP_INFO_BUF, |n| n.min(TCP_INFO_BUF));
    Ok((buf, written))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    /// A 248-byte struct (Linux 6.7) with a distinct value in every field linerate reads.
    fn fixture() -> Vec<u8> {
        let mut b = vec![0u8; 248];
        b[3] = 2; // probes
        b[4] = 3; // backoff
        let put32 = |b: &mut Vec<u8>, at: usize, v: u32| {
            b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        };
        put32(&mut b, 16, 1448); // snd_mss
        put32(&mut b, 20, 536); // rcv_mss (not reported)
        put32(&mut b, 68, 1234); // rtt
        put32(&mut b, 72, 56); // rttvar
        put32(&mut b, 8, 204_000); // rto
        put32(&mut b, 80, 10); // snd_cwnd
        put32(&mut b, 84, 1460); // advmss
        put32(&mut b, 100, 7); // total_retrans
        put32(&mut b, 136, 9_000); // segs_out
        put32(&mut b, 156, 8_000); // data_segs_out
        put32(&mut b, 232, 1); // rcv_wnd (not reported)
        put32(&mut b, 236, 1); // rehash (not reported)
        b[240..242].copy_from_slice(&5u16.to_ne_bytes()); // total_rto
        b[242..244].copy_from_slice(&4u16.to_ne_bytes()); // total_rto_recoveries
        put32(&mut b, 244, 1_234); // total_rto_time
        put32(&mut b, 148, 987); // min_rtt
        put32(&mut b, 228, 65_535); // snd_wnd
        let put64 = |b: &mut Vec<u8>, at: usize, v: u64| {
            b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        };
        put64(&mut b, 104, 125_000_000); // pacing_rate
        put64(&mut b, 112, 1); // max_pacing_rate (not reported)
        put64(&mut b, 120, 5_000_000_000); // bytes_acked, > u32::MAX
        put64(&mut b, 160, 117_000_000); // delivery_rate
        put64(&mut b, 168, 10_000_000); // busy_time
        put64(&mut b, 176, 2_000); // rwnd_limited
        put64(&mut b, 184, 3_000); // sndbuf_limited
        put64(&mut b, 208, 43_440); // bytes_retrans
        b
    }

    #[test]
    fn full_struct() {
        let r = parse_tcp_info(&fixture()).unwrap();
        assert_eq!(
            r,
            TcpInfoReport {
                rtt_us: 1234,
                rttvar_us: Some(56),
                snd_cwnd: 10,
                snd_mss: 1448,
                total_retrans: Some(7),
                snd_wnd_bytes: Some(65_535),
                min_rtt_us: Some(987),
                delivery_rate_bytes_per_sec: Some(117_000_000),
                pacing_rate_bytes_per_sec: Some(125_000_000),
                busy_time_us: Some(10_000_000),
                rwnd_limited_us: Some(2_000),
                sndbuf_limited_us: Some(3_000),
                bytes_acked: Some(5_000_000_000),
                bytes_retrans: Some(43_440),
                segs_out: Some(9_000),
                data_segs_out: Some(8_000),
                advmss_bytes: Some(1460),
                rto_us: Some(204_000),
                probes: Some(2),
                backoff: Some(3),
                total_rto: Some(5),
                total_rto_recoveries: Some(4),
                total_rto_time_ms: Some(1_234),
            }
        );
    }

    #[test]
    fn shorter_structs_from_older_kernels() {
        let b = fixture();
        // 103 bytes: total_retrans (100..104) incomplete → nothing usable.
        assert_eq!(parse_tcp_info(&b[..103]), None);
        assert_eq!(parse_tcp_info(&[]), None);
        // 104 bytes (2.6): base fields only.
        let r = parse_tcp_info(&b[..104]).unwrap();
        assert_eq!(
            (r.rtt_us, r.snd_mss, r.total_retrans),
            (1234, 1448, Some(7))
        );
        assert_eq!(r.pacing_rate_bytes_per_sec, None);
        assert_eq!(r.bytes_acked, None);
        assert_eq!((r.segs_out, r.data_segs_out), (None, None));
        assert_eq!(
            (r.probes, r.backoff, r.rto_us),
            (Some(2), Some(3), Some(204_000))
        );
        // 140 bytes (4.2): segs_out yes, data_segs_out (156..160) no.
        let r = parse_tcp_info(&b[..140]).unwrap();
        assert_eq!((r.segs_out, r.data_segs_out), (Some(9_000), None));
        // 160 bytes (4.6): min_rtt (148..152) yes, delivery_rate (160..168) no.
        let r = parse_tcp_info(&b[..160]).unwrap();
        assert_eq!(r.min_rtt_us, Some(987));
        assert_eq!(r.data_segs_out, Some(8_000));
        assert_eq!(r.bytes_acked, Some(5_000_000_000));
        assert_eq!(r.delivery_rate_bytes_per_sec, None);
        // 192 bytes (4.10): busy/limited times yes, bytes_retrans (208..216) and snd_wnd no.
        let r = parse_tcp_info(&b[..192]).unwrap();
        assert_eq!(r.sndbuf_limited_us, Some(3_000));
        assert_eq!((r.bytes_retrans, r.snd_wnd_bytes), (None, None));
        // 231 bytes: snd_wnd (228..232) one byte short.
        let r = parse_tcp_info(&b[..231]).unwrap();
        assert_eq!(r.bytes_retrans, Some(43_440));
        assert_eq!(r.snd_wnd_bytes, None);
        // 232 bytes (5.4 .. 6.6): snd_wnd yes, the RTO totals (240..248) no.
        let r = parse_tcp_info(&b[..232]).unwrap();
        assert_eq!(r.snd_wnd_bytes, Some(65_535));
        assert_eq!((r.total_rto, r.total_rto_time_ms), (None, None));
        // 244 bytes: total_rto and recoveries, not the time.
        let r = parse_tcp_info(&b[..244]).unwrap();
        assert_eq!((r.total_rto, r.total_rto_recoveries), (Some(5), Some(4)));
        assert_eq!(r.total_rto_time_ms, None);
    }

    #[test]
    fn segment_counts() {
        let mut b = fixture();
        b[136..140].copy_from_slice(&77u32.to_ne_bytes());
        b[140..144].copy_from_slice(&66u32.to_ne_bytes());
        assert_eq!(parse_tcp_segments(&b), Some((77, 66)));
        assert_eq!(parse_tcp_segments(&b[..143]), None);
    }

    /// What qemu's user mode returns for `TCP_INFO` (it treats it as an `int` option): 4
    /// bytes, byte-swapped on a big-endian guest, here those of a socket in FIN_WAIT2 (5)
    /// as a big-endian guest sees them. Not a struct: no state, no report, no segments.
    #[test]
    fn a_four_byte_answer_is_no_tcp_info() {
        let host = u32::from_le_bytes([5, 0, 0, 0]);
        let raw = host.to_be_bytes();
        assert_eq!(raw[0], 0, "the state byte would read as 0");
        assert_eq!(parse_tcp_state(&raw), None);
        assert_eq!(parse_tcp_state(&[5, 0, 0, 0]), None);
        assert!(parse_tcp_info(&raw).is_none());
        assert!(parse_tcp_segments(&raw).is_none());
        let mut full = fixture();
        full[0] = 5;
        assert_eq!(parse_tcp_state(&full), Some(5));
        assert_eq!(parse_tcp_state(&full[..104]), Some(5));
        assert_eq!(parse_tcp_state(&full[..103]), None);
    }

    #[test]
    fn unlimited_pacing_is_absent() {
        let mut b = fixture();
        b[104..112].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(parse_tcp_info(&b).unwrap().pacing_rate_bytes_per_sec, None);
    }

    #[test]
    fn real_loopback_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // Round trip so the client has an RTT sample from acknowledged data.
        client.write_all(&[7u8; 10_000]).unwrap();
        let mut got = vec![0u8; 10_000];
        server.read_exact(&mut got).unwrap();
        server.write_all(b"ok").unwrap();
        let mut ack = [0u8; 2];
        client.read_exact(&mut ack).unwrap();

        // Let the last ACK go out, so that nothing changes between the two readings.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let info = read_tcp_info(client.as_fd()).unwrap();
        let port = client.local_addr().unwrap().port();
        let ss = ss_fields(port);
        // The witness: ss(8) reads the same socket over netlink (inet_diag), not getsockopt.
        assert_eq!(
            ss.get("segs_out").copied(),
            info.segs_out.map(u64::from),
            "{ss:?} {info:?}"
        );
        assert_eq!(
            ss.get("data_segs_out").copied(),
            info.data_segs_out.map(u64::from),
            "{ss:?} {info:?}"
        );
        assert_eq!(
            ss.get("mss").copied(),
            Some(u64::from(info.snd_mss)),
            "{ss:?}"
        );
        assert_eq!(
            ss.get("advmss").copied(),
            info.advmss_bytes.map(u64::from),
            "{ss:?}"
        );
        // 10,000 bytes in at least one data segment, and a SYN and ACKs besides.
        let data = info.data_segs_out.unwrap();
        assert!(data >= 1 && info.segs_out.unwrap() > data, "{info:?}");
        assert!(info.total_retrans.is_some_and(|r| r <= data), "{info:?}");
        // The handshake's ACK and the data went out, the server's SYN-ACK and "ok" came in.
        let (out, inn) = read_tcp_segments(client.as_fd()).unwrap();
        assert!(out >= 2 && inn >= 2, "{out} {inn}");
        assert!(info.snd_mss > 0, "{info:?}");
        assert!(info.rtt_us > 0, "{info:?}");
        assert!(info.snd_cwnd > 0, "{info:?}");
        // This kernel (5.4+) fills the whole struct.
        assert!(info.bytes_acked.unwrap_or(0) >= 10_000, "{info:?}");
    }

    #[test]
    fn all_acked_only_once_the_peer_took_everything() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(!all_acked_after_shutdown(client.as_fd()).unwrap());
        // Fill the path until the server's window closes: data waits unacknowledged.
        client.set_nonblocking(true).unwrap();
        let buf = vec![1u8; 1 << 16];
        let mut sent = 0usize;
        loop {
            match client.write(&buf) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        client.shutdown(std::net::Shutdown::Write).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!all_acked_after_shutdown(client.as_fd()).unwrap(), "{sent}");
        // The server reads it all and sees the end: now the FIN is acknowledged too.
        let mut got = Vec::new();
        server.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), sent);
        let t0 = std::time::Instant::now();
        while !all_acked_after_shutdown(client.as_fd()).unwrap() {
            assert!(t0.elapsed().as_secs() < 5, "FIN never acknowledged");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// `name:value` fields of `ss -tin` for the connection from local port `port`.
    fn ss_fields(port: u16) -> std::collections::BTreeMap<String, u64> {
        let out = std::process::Command::new("ss")
            .args([
                "-tinH",
                "state",
                "established",
                "sport",
                "=",
                &format!(":{port}"),
            ])
            .output()
            .expect("ss (iproute2) runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|w| {
                let (k, v) = w.split_once(':')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect()
    }

    #[test]
    fn non_tcp_socket_is_an_error() {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(read_tcp_info(udp.as_fd()).is_err());
    }
}
