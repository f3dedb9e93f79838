//! Per-connection TCP figures on Windows: SIO_TCP_INFO (Windows 10 1703 and later) through
//! WSAIoctl, version 0 of its struct (`TCP_INFO_v0`, mstcpip.h).
//!
//! Windows has no RTT variance, no pacing or delivery rate and no segment counts; its
//! congestion window is in bytes (turned into segments of the MSS here, as Linux gives
//! it). What it cannot give is absent; a system that refuses the ioctl (older Windows, or
//! Wine) makes every figure absent, with the error saying so.

use std::io;
use std::os::windows::io::AsRawSocket;

use linerate_wire::report::TcpInfoReport;
use windows_sys::Win32::Networking::WinSock as ws;

use super::net::Sock;

/// `SIO_TCP_INFO` = `_WSAIORW(IOC_VENDOR, 39)`.
const SIO_TCP_INFO: u32 = 0xD800_0027;

/// `TCP_INFO_v0` of mstcpip.h.
#[repr(C)]
#[derive(Default)]
struct TcpInfoV0 {
    state: i32,
    mss: u32,
    connection_time_ms: u64,
    timestamps_enabled: u8,
    rtt_us: u32,
    min_rtt_us: u32,
    bytes_in_flight: u32,
    cwnd: u32,
    snd_wnd: u32,
    rcv_wnd: u32,
    rcv_buf: u32,
    bytes_out: u64,
    bytes_in: u64,
    bytes_reordered: u32,
    bytes_retrans: u32,
    fast_retrans: u32,
    dup_acks_in: u32,
    timeout_episodes: u32,
    syn_retrans: u8,
}

fn query(s: Sock<'_>) -> io::Result<TcpInfoV0> {
    let version: u32 = 0;
    let mut out = TcpInfoV0::default();
    let mut got = 0u32;
    let size = std::mem::size_of::<TcpInfoV0>() as u32;
    // SAFETY: the input is one u32 (the version), the output a TCP_INFO_v0 of `size` bytes;
    // no overlapped I/O; the socket is open for the call.
    let rc = unsafe {
        ws::WSAIoctl(
            s.as_raw_socket() as ws::SOCKET,
            SIO_TCP_INFO,
            std::ptr::addr_of!(version).cast(),
            4,
            std::ptr::addr_of_mut!(out).cast(),
            size,
            &mut got,
            std::ptr::null_mut(),
            None,
        )
    };
    if rc != 0 {
        // SAFETY: reads this thread's last Winsock error.
        let e = io::Error::from_raw_os_error(unsafe { ws::WSAGetLastError() });
        return Err(io::Error::new(e.kind(), format!("SIO_TCP_INFO: {e}")));
    }
    if got < size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("SIO_TCP_INFO returned {got} bytes, fewer than the {size} of TCP_INFO_v0"),
        ));
    }
    Ok(out)
}

/// Segment counts are not in Windows's TCP_INFO: an error (the caller leaves them absent).
pub fn read_tcp_segments(_s: Sock<'_>) -> io::Result<(u32, u32)> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "Windows's SIO_TCP_INFO has no segment counts",
    ))
}

/// True once everything sent, the FIN included, is acknowledged: the state is past
/// FIN_WAIT1 (TcpConnectionStateFinWait2 = 6, TimeWait = 9, Closed = 0).
pub fn all_acked_after_shutdown(s: Sock<'_>) -> io::Result<bool> {
    Ok(matches!(query(s)?.state, 0 | 6 | 9))
}

/// Reads SIO_TCP_INFO ([`report`]).
pub fn read_tcp_info(s: Sock<'_>) -> io::Result<TcpInfoReport> {
    report(&query(s)?)
}

/// Windows's minimum RTT before any sample (mstcpip.h leaves it at its largest value).
const NO_RTT: u32 = u32::MAX;

/// TCP_INFO_v0 in the report's fields: the smoothed and minimum RTT, the MSS, the
/// congestion window (bytes in Windows, whole segments of the MSS here, as Linux gives
/// it), the peer's window, the bytes retransmitted and the retransmission time-outs
/// (`TimeoutEpisodes`, as Linux's `tcpi_total_rto`). Windows has no RTT variance and
/// counts retransmitted bytes, not segments: `rttvar_us` and `total_retrans` are absent,
/// as are the figures Linux alone gives (pacing and delivery rates, segment counts). No
/// MSS yet (no handshake) is an error: the window in segments would be made up.
fn report(i: &TcpInfoV0) -> io::Result<TcpInfoReport> {
    if i.mss == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SIO_TCP_INFO gave no MSS (the connection is not established)",
        ));
    }
    Ok(TcpInfoReport {
        rtt_us: i.rtt_us,
        rttvar_us: None,
        snd_cwnd: i.cwnd / i.mss,
        snd_mss: i.mss,
        total_retrans: None,
        snd_wnd_bytes: Some(i.snd_wnd),
        min_rtt_us: Some(i.min_rtt_us).filter(|&r| r != NO_RTT),
        bytes_retrans: Some(u64::from(i.bytes_retrans)),
        total_rto: u16::try_from(i.timeout_episodes).ok(),
        ..TcpInfoReport::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_info_v0_maps_to_the_report_and_leaves_out_what_windows_lacks() {
        let i = TcpInfoV0 {
            mss: 1460,
            rtt_us: 250,
            min_rtt_us: NO_RTT,
            cwnd: 14_600,
            snd_wnd: 65_535,
            bytes_retrans: 2920,
            timeout_episodes: 1,
            ..TcpInfoV0::default()
        };
        let r = report(&i).unwrap();
        assert_eq!((r.rtt_us, r.snd_mss, r.snd_cwnd), (250, 1460, 10));
        assert_eq!(
            (r.rttvar_us, r.total_retrans, r.min_rtt_us),
            (None, None, None)
        );
        assert_eq!((r.bytes_retrans, r.total_rto), (Some(2920), Some(1)));
        assert_eq!(r.snd_wnd_bytes, Some(65_535));
        // Before the handshake's MSS is known, no window in segments is made up.
        assert!(report(&TcpInfoV0 { mss: 0, ..i }).is_err());
    }
}
