//! The host's TCP and UDP counters on Windows, through the IP Helper API, by the names of
//! Linux's /proc/net/snmp (`Tcp.InSegs`, `Udp.InDatagrams`, ...), IPv4 and IPv6 summed (as
//! Linux's `Tcp` and `Udp` groups count both).
//!
//! GetTcpStatisticsEx2 and GetUdpStatisticsEx2 (Windows 10 1709 and later) count segments
//! and datagrams in 64 bits; the 32-bit GetTcpStatisticsEx and GetUdpStatisticsEx are the
//! fallback when they fail. Wine (8.0) has the 64-bit calls as stubs that abort the process,
//! which no error return can catch: so under Wine, told by ntdll's `wine_get_version`
//! export (looked up only to pick the call), the 32-bit calls are the ones made.

use std::collections::BTreeMap;
use std::io;

use windows_sys::Win32::NetworkManagement::IpHelper::{
    GetTcpStatisticsEx, GetTcpStatisticsEx2, GetUdpStatisticsEx, GetUdpStatisticsEx2,
    MIB_TCPSTATS2, MIB_TCPSTATS_LH, MIB_UDPSTATS, MIB_UDPSTATS2,
};
use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};

/// True under Wine: its ntdll exports `wine_get_version`, Windows's does not.
fn under_wine() -> bool {
    let ntdll: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
    // SAFETY: a NUL-terminated UTF-16 name; ntdll is loaded in every process, and the
    // handle is not released (GetModuleHandleW takes no reference).
    let module = unsafe { GetModuleHandleW(ntdll.as_ptr()) };
    if module.is_null() {
        return false;
    }
    // SAFETY: a loaded module's handle and a NUL-terminated ASCII name; the address is
    // only compared with none, never called.
    unsafe { GetProcAddress(module, c"wine_get_version".as_ptr().cast()) }.is_some()
}

/// One family's TCP counters; the IP Helper error code if neither call answers.
fn tcp(family: u32, wide: bool) -> Result<[(&'static str, u64); 9], u32> {
    if wide {
        let mut s = MIB_TCPSTATS2::default();
        // SAFETY: one MIB_TCPSTATS2 to fill.
        if unsafe { GetTcpStatisticsEx2(&mut s, family) } == 0 {
            return Ok(tcp_named(&s, s.dw64InSegs, s.dw64OutSegs));
        }
    }
    let mut s = MIB_TCPSTATS_LH::default();
    // SAFETY: one MIB_TCPSTATS_LH to fill.
    match unsafe { GetTcpStatisticsEx(&mut s, family) } {
        0 => {
            let wide = MIB_TCPSTATS2 {
                dwActiveOpens: s.dwActiveOpens,
                dwPassiveOpens: s.dwPassiveOpens,
                dwAttemptFails: s.dwAttemptFails,
                dwEstabResets: s.dwEstabResets,
                dwRetransSegs: s.dwRetransSegs,
                dwInErrs: s.dwInErrs,
                dwOutRsts: s.dwOutRsts,
                ..MIB_TCPSTATS2::default()
            };
            Ok(tcp_named(&wide, s.dwInSegs.into(), s.dwOutSegs.into()))
        }
        e => Err(e),
    }
}

fn tcp_named(s: &MIB_TCPSTATS2, in_segs: u64, out_segs: u64) -> [(&'static str, u64); 9] {
    [
        ("Tcp.ActiveOpens", s.dwActiveOpens.into()),
        ("Tcp.PassiveOpens", s.dwPassiveOpens.into()),
        ("Tcp.AttemptFails", s.dwAttemptFails.into()),
        ("Tcp.EstabResets", s.dwEstabResets.into()),
        ("Tcp.InSegs", in_segs),
        ("Tcp.OutSegs", out_segs),
        ("Tcp.RetransSegs", s.dwRetransSegs.into()),
        ("Tcp.InErrs", s.dwInErrs.into()),
        ("Tcp.OutRsts", s.dwOutRsts.into()),
    ]
}

/// One family's UDP counters; the IP Helper error code if neither call answers.
fn udp(family: u32, wide: bool) -> Result<[(&'static str, u64); 4], u32> {
    let named = |i: u64, no_ports: u32, errors: u32, o: u64| {
        [
            ("Udp.InDatagrams", i),
            ("Udp.NoPorts", no_ports.into()),
            ("Udp.InErrors", errors.into()),
            ("Udp.OutDatagrams", o),
        ]
    };
    if wide {
        let mut s = MIB_UDPSTATS2::default();
        // SAFETY: one MIB_UDPSTATS2 to fill.
        if unsafe { GetUdpStatisticsEx2(&mut s, family) } == 0 {
            return Ok(named(
                s.dw64InDatagrams,
                s.dwNoPorts,
                s.dwInErrors,
                s.dw64OutDatagrams,
            ));
        }
    }
    let mut s = MIB_UDPSTATS::default();
    // SAFETY: one MIB_UDPSTATS to fill.
    match unsafe { GetUdpStatisticsEx(&mut s, family) } {
        0 => Ok(named(
            s.dwInDatagrams.into(),
            s.dwNoPorts,
            s.dwInErrors,
            s.dwOutDatagrams.into(),
        )),
        e => Err(e),
    }
}

/// The host's TCP and UDP counters (see the module docs); an error when no family of
/// either protocol answers. Always `Some`: /proc/net/snmp is Linux's.
pub fn protocol_counters() -> Option<io::Result<Vec<(String, i64)>>> {
    let wide = !under_wine();
    let mut sums: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut error = None;
    for family in [u32::from(AF_INET), u32::from(AF_INET6)] {
        let tcp = tcp(family, wide).map(|v| v.to_vec());
        let udp = udp(family, wide).map(|v| v.to_vec());
        for got in [tcp, udp] {
            match got {
                Ok(v) => {
                    for (name, n) in v {
                        *sums.entry(name).or_default() += n;
                    }
                }
                Err(e) => error = Some(e),
            }
        }
    }
    if sums.is_empty() {
        let code = error.and_then(|e| i32::try_from(e).ok()).unwrap_or(0);
        let e = io::Error::from_raw_os_error(code);
        return Some(Err(io::Error::new(
            e.kind(),
            format!("the IP Helper API's TCP and UDP statistics: {e}"),
        )));
    }
    Some(Ok(sums
        .into_iter()
        .map(|(k, v)| (k.to_string(), i64::try_from(v).unwrap_or(i64::MAX)))
        .collect()))
}
