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

/// Reads SIO_TCP_INFO. Windows gives no RTT variance: the report needs one, so a reading
/// without it is not made up: `rttvar_us` is the one figure this cannot supply, and the
/// whole report is refused rather than filled with a guess.
pub fn read_tcp_info(s: Sock<'_>) -> io::Result<TcpInfoReport> {
    let i = query(s)?;
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "SIO_TCP_INFO gave RTT {} µs, cwnd {} bytes, {} bytes retransmitted, but no RTT variance, which the report needs",
            i.rtt_us, i.cwnd, i.bytes_retrans
        ),
    ))
}
