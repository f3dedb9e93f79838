//! Taking a thread out of restartable sequences (rseq(2)) when it makes no use of them.
//!
//! glibc (2.35 and later) registers every thread it starts with the kernel's rseq. The
//! kernel then updates the thread's rseq area each time the thread goes back to user space
//! after a context switch. A request/response loop is switched out and back twice per
//! transaction (once at each end), so on loopback that update is a few percent of the
//! transaction rate (`bench/`; the commit that added this module has the A/B). linerate's
//! code never uses rseq, and glibc's only user of it, `sched_getcpu`, falls back to the
//! vDSO when the thread has none. So the request/response threads unregister theirs
//! ([`leave`]). musl registers no thread with rseq: there is nothing to do there.
//!
//! The kernel only acts on an unregistration whose area, length and signature are the ones
//! registered: a guess that is wrong fails with an error and changes nothing.

use std::io;

/// `RSEQ_FLAG_UNREGISTER` (linux/rseq.h).
#[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
const FLAG_UNREGISTER: libc::c_int = 1;
/// glibc's signature for x86 (`RSEQ_SIG`, sysdeps/unix/sysv/linux/x86/bits/rseq.h).
#[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
const SIG_X86: u32 = 0x5305_3053;
/// The length glibc registers (`sizeof (struct rseq)` with its padding, 32 bytes), which
/// can be more than the `__rseq_size` it exports (20 on Debian 12's 2.36: the size of the
/// fields in use); the exported one is tried second.
#[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
const LEN_GLIBC_2_35: u32 = 32;

/// glibc's own description of the calling thread's registration: the area's address and the
/// `__rseq_size` it exports. None when glibc registered none (older than 2.35, or turned off
/// with `GLIBC_TUNABLES=glibc.pthread.rseq=0`).
#[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
fn registration() -> Option<(usize, u32)> {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks the symbols up;
    // a null result means the C library does not have them.
    let (off, size) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
        )
    };
    if off.is_null() || size.is_null() {
        return None;
    }
    // SAFETY: glibc defines `const ptrdiff_t __rseq_offset` and `const unsigned int
    // __rseq_size` (sys/rseq.h); the pointers are those variables' addresses, set before
    // main and never written again.
    let (off, size) = unsafe { (*(off as *const isize), *(size as *const u32)) };
    if size == 0 {
        return None;
    }
    // On x86_64 glibc's thread pointer (the %fs base) is the thread's `struct pthread`,
    // which is what pthread_self returns; the rseq area is at __rseq_offset from it.
    // SAFETY: pthread_self has no preconditions.
    let tp = unsafe { libc::pthread_self() } as usize;
    Some((tp.wrapping_add_signed(off), size))
}

/// Unregisters the calling thread's rseq area: true if it had one and now has none, false if
/// it had none (musl, glibc before 2.35 or with rseq turned off, other architectures).
pub fn leave() -> io::Result<bool> {
    #[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
    {
        let Some((area, size)) = registration() else {
            return Ok(false);
        };
        let unregister = |len: u32| {
            // SAFETY: rseq(2) with RSEQ_FLAG_UNREGISTER compares `area`, `len` and the
            // signature with the thread's registration and fails (EINVAL, EPERM) without
            // touching memory unless all three match; when they match, it clears the
            // thread's own area, which glibc allocated for this purpose and which lives as
            // long as the thread.
            unsafe { libc::syscall(libc::SYS_rseq, area, len, FLAG_UNREGISTER, SIG_X86) == 0 }
        };
        if unregister(LEN_GLIBC_2_35) || (size != LEN_GLIBC_2_35 && unregister(size)) {
            return Ok(true);
        }
        Err(io::Error::last_os_error())
    }
    #[cfg(not(all(target_env = "gnu", target_arch = "x86_64")))]
    {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cpu_id field of the rseq area (offset 4 of `struct rseq`).
    #[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
    fn area_cpu_id(area: usize) -> u32 {
        // SAFETY: `area` is this thread's rseq area (the kernel accepted it), inside the
        // thread's static TLS, aligned to 32 bytes; the kernel writes cpu_id as one u32.
        unsafe { std::ptr::read_volatile((area + 4) as *const u32) }
    }

    #[test]
    #[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
    fn a_thread_leaves_rseq_and_the_kernel_stops_updating_its_area() {
        std::thread::spawn(|| {
            let Some((area, _)) = registration() else {
                panic!("glibc on this machine (Debian 12: 2.36) registers threads with rseq");
            };
            // Registered: the kernel keeps cpu_id equal to the CPU the thread runs on.
            let seen = area_cpu_id(area);
            assert!(seen < 4096, "cpu_id {seen}");
            assert!(leave().unwrap());
            // Unregistered: the kernel marks the area uninitialized (RSEQ_CPU_ID_UNINITIALIZED,
            // -1) and no longer writes it, across switches.
            for _ in 0..100 {
                std::thread::yield_now();
                assert_eq!(area_cpu_id(area), u32::MAX);
            }
            // A second unregistration has nothing to match.
            assert!(leave().is_err());
            // sched_getcpu still works without it.
            assert!(nix::sched::sched_getcpu().is_ok());
        })
        .join()
        .unwrap();
    }

    #[test]
    #[cfg(not(all(target_env = "gnu", target_arch = "x86_64")))]
    fn without_glibcs_rseq_there_is_nothing_to_leave() {
        assert!(!leave().unwrap());
    }
}
