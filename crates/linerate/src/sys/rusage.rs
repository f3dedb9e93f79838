//! CPU time of the calling thread or process: getrusage(2) on Linux, GetThreadTimes and
//! GetProcessTimes on Windows (the backend's `system`).
//!
//! `RUSAGE_THREAD` (Linux ≥ 2.6.26) gives the calling thread's user and system time, so a
//! worker thread can report exactly the CPU its test loop used; `RUSAGE_SELF` gives the
//! whole process. The kernel reports microseconds (`struct timeval`); values here are
//! nanoseconds, as in [`ProcessCpu`].

use linerate_wire::report::ProcessCpu;

/// CPU time the calling thread has used so far (`RUSAGE_THREAD`); `None` if the call fails.
pub fn thread_cpu() -> Option<ProcessCpu> {
    super::system::thread_cpu()
}

/// CPU time the whole process has used so far (`RUSAGE_SELF`); `None` if the call fails.
pub fn process_cpu() -> Option<ProcessCpu> {
    super::system::process_cpu()
}

/// Field-wise saturating sum, e.g. over the test's worker threads.
pub fn sum_cpu(a: &ProcessCpu, b: &ProcessCpu) -> ProcessCpu {
    ProcessCpu {
        user_ns: a.user_ns.saturating_add(b.user_ns),
        system_ns: a.system_ns.saturating_add(b.system_ns),
    }
}

/// CPU used between two readings of the same thread or process (`after − before`),
/// field-wise, clamped at 0.
pub fn cpu_delta(before: &ProcessCpu, after: &ProcessCpu) -> ProcessCpu {
    ProcessCpu {
        user_ns: after.user_ns.saturating_sub(before.user_ns),
        system_ns: after.system_ns.saturating_sub(before.system_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn cpu(user_ns: u64, system_ns: u64) -> ProcessCpu {
        ProcessCpu { user_ns, system_ns }
    }

    #[test]
    fn sum_and_delta() {
        assert_eq!(sum_cpu(&cpu(1, 2), &cpu(10, 20)), cpu(11, 22));
        assert_eq!(sum_cpu(&cpu(u64::MAX, 0), &cpu(1, 0)), cpu(u64::MAX, 0));
        assert_eq!(cpu_delta(&cpu(5, 5), &cpu(8, 4)), cpu(3, 0));
    }

    #[test]
    fn burning_cpu_shows_up_in_thread_time() {
        // Run on a fresh thread so the reading starts near zero and covers only this loop.
        let used = std::thread::spawn(|| {
            let before = thread_cpu().unwrap();
            let start = Instant::now();
            let mut x: u64 = 1;
            while start.elapsed() < Duration::from_millis(30) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(
                        x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                    );
                }
            }
            std::hint::black_box(x);
            cpu_delta(&before, &thread_cpu().unwrap())
        })
        .join()
        .unwrap();
        let total = used.user_ns + used.system_ns;
        // 30 ms of wall time busy-looping; even on a loaded 2-core box the thread gets some
        // of it. Upper bound: a thread cannot use much more CPU than wall time.
        assert!(total > 0, "{used:?}");
        assert!(total < 5_000_000_000, "{used:?}");
        // The process total includes this thread's time.
        let p = process_cpu().unwrap();
        assert!(p.user_ns + p.system_ns >= total, "{p:?} vs {used:?}");
    }
}
