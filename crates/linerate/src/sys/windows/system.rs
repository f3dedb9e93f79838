//! The system's clocks and names on Windows: QueryPerformanceCounter (the monotonic clock),
//! the computer name, the active processors, this thread's and process's CPU time
//! (GetThreadTimes, GetProcessTimes), and the network adapters.

use std::io;
use std::net::IpAddr;

pub use super::counters::protocol_counters;

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
    let n = unsafe { GetActiveProcessorCount(ALL_PROCESSOR_GROUPS) };
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

/// `SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION` (winternl.h), times in 100 ns.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessorTimes {
    idle: i64,
    /// Kernel time, idle included.
    kernel: i64,
    user: i64,
    dpc: i64,
    interrupt: i64,
    interrupt_count: u32,
}

#[link(name = "ntdll")]
extern "system" {
    fn NtQuerySystemInformation(
        class: u32,
        info: *mut core::ffi::c_void,
        len: u32,
        ret: *mut u32,
    ) -> i32;
}

/// SystemProcessorPerformanceInformation.
const PROCESSOR_PERFORMANCE: u32 = 8;

/// 100 ns units to USER_HZ ticks (1/100 s), /proc/stat's unit.
fn ticks(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0) / 100_000
}

/// Each processor's times (NtQuerySystemInformation) as /proc/stat's ticks: user, kernel
/// (less idle, DPC and interrupt time), idle, interrupts as `irq` and DPCs (Windows's
/// deferred interrupt work) as `softirq`. Windows has no nice, iowait or steal time: they
/// stay 0. `None` if the call fails.
pub fn cpu_ticks() -> Option<(
    linerate_wire::device::CpuTick,
    Vec<(u32, linerate_wire::device::CpuTick)>,
)> {
    use linerate_wire::device::CpuTick;
    let n = usize::try_from(online_cpu_count()?).ok()?;
    let mut buf = vec![ProcessorTimes::default(); n];
    let len = u32::try_from(std::mem::size_of_val(buf.as_slice())).ok()?;
    let mut got = 0u32;
    // SAFETY: `buf` is writable for `len` bytes; the call writes whole entries.
    let status = unsafe {
        NtQuerySystemInformation(
            PROCESSOR_PERFORMANCE,
            buf.as_mut_ptr().cast(),
            len,
            &mut got,
        )
    };
    if status < 0 {
        return None;
    }
    let entries = (got as usize / std::mem::size_of::<ProcessorTimes>()).min(n);
    let mut total = CpuTick::default();
    let mut per_cpu = Vec::with_capacity(entries);
    for (i, p) in buf.iter().take(entries).enumerate() {
        let busy_kernel = p
            .kernel
            .saturating_sub(p.idle)
            .saturating_sub(p.dpc)
            .saturating_sub(p.interrupt);
        let t = CpuTick {
            user: ticks(p.user),
            system: ticks(busy_kernel),
            idle: ticks(p.idle),
            irq: ticks(p.interrupt),
            softirq: ticks(p.dpc),
            ..CpuTick::default()
        };
        for (sum, v) in [
            (&mut total.user, t.user),
            (&mut total.system, t.system),
            (&mut total.idle, t.idle),
            (&mut total.irq, t.irq),
            (&mut total.softirq, t.softirq),
        ] {
            *sum = sum.saturating_add(v);
        }
        per_cpu.push((u32::try_from(i).ok()?, t));
    }
    (!per_cpu.is_empty()).then_some((total, per_cpu))
}

/// Why `what` cannot run here: it is Linux's.
pub fn needs_linux(what: &str) -> Option<String> {
    Some(format!(
        "{what} needs Linux: this is the Windows build (README.md, \"On Windows\")"
    ))
}

/// Opens `path` for reading ([`crate::sys::files`]); Windows has no FIFO that waits for a
/// writer at open.
pub fn open_for_reading(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}
