//! The system's clocks and names on Windows: QueryPerformanceCounter (the monotonic clock),
//! the computer name, the active processors, this thread's and process's CPU time
//! (GetThreadTimes, GetProcessTimes), and the network adapters.

use std::io;
use std::net::IpAddr;

use linerate_wire::report::ProcessCpu;
use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::Performance::{QueryPerformanceCounter, QueryPerformanceFrequency};
use windows_sys::Win32::System::Threading::{
    GetActiveProcessorCount, GetCurrentProcess, GetCurrentThread, GetProcessTimes, GetThreadTimes,
    ALL_PROCESSOR_GROUPS,
};

/// The performance counter in nanoseconds (monotonic, one per boot); `None` if unreadable.
pub fn monotonic_ns() -> Option<u64> {
    let (mut count, mut freq) = (0i64, 0i64);
    // SAFETY: both calls write one i64 each into the locals.
    let ok = unsafe {
        QueryPerformanceCounter(&mut count) != 0 && QueryPerformanceFrequency(&mut freq) != 0
    };
    let (count, freq) = (u128::try_from(count).ok()?, u128::try_from(freq).ok()?);
    if !ok || freq == 0 {
        return None;
    }
    u64::try_from(count * 1_000_000_000 / freq).ok()
}

/// /proc/stat's tick is Linux's: none here.
pub fn ticks_per_s() -> Option<u64> {
    None
}

/// The computer name (`COMPUTERNAME`); the kernel release is not read here (absent).
pub fn uname() -> (Option<String>, Option<String>) {
    let host = std::env::var("COMPUTERNAME").ok().filter(|s| !s.is_empty());
    (host, None)
}

/// Active processors in all processor groups; `None` if it does not say.
pub fn online_cpu_count() -> Option<u32> {
    // SAFETY: no arguments but a constant; returns a count.
    let n = unsafe { GetActiveProcessorCount(ALL_PROCESSOR_GROUPS as u16) };
    (n > 0).then_some(n)
}

/// A FILETIME of CPU time (100 ns units) in nanoseconds.
fn filetime_ns(t: &FILETIME) -> u64 {
    ((u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)).saturating_mul(100)
}

const ZERO: FILETIME = FILETIME {
    dwLowDateTime: 0,
    dwHighDateTime: 0,
};

/// CPU time the calling thread has used so far (GetThreadTimes); `None` if the call fails.
pub fn thread_cpu() -> Option<ProcessCpu> {
    let (mut c, mut e, mut k, mut u) = (ZERO, ZERO, ZERO, ZERO);
    // SAFETY: the pseudo-handle of the calling thread; four FILETIMEs to write.
    let ok = unsafe { GetThreadTimes(GetCurrentThread(), &mut c, &mut e, &mut k, &mut u) };
    (ok != 0).then(|| ProcessCpu {
        user_ns: filetime_ns(&u),
        system_ns: filetime_ns(&k),
    })
}

/// CPU time the whole process has used so far (GetProcessTimes); `None` if the call fails.
pub fn process_cpu() -> Option<ProcessCpu> {
    let (mut c, mut e, mut k, mut u) = (ZERO, ZERO, ZERO, ZERO);
    // SAFETY: the pseudo-handle of this process; four FILETIMEs to write.
    let ok = unsafe { GetProcessTimes(GetCurrentProcess(), &mut c, &mut e, &mut k, &mut u) };
    (ok != 0).then(|| ProcessCpu {
        user_ns: filetime_ns(&u),
        system_ns: filetime_ns(&k),
    })
}

/// The adapters' addresses (name, address). Not read yet on Windows: an error, so that the
/// interface towards a peer is absent with a warning.
pub fn adapter_addresses() -> io::Result<Vec<(String, IpAddr)>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "the interface addresses are not read on Windows",
    ))
}

/// The index of the adapter named `name`; none known.
pub fn adapter_index(_name: &str) -> Option<u32> {
    None
}
