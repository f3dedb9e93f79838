//! `--profile`'s sampler: one `perf_event_open(2)` software `cpu-clock` event per online CPU
//! (every process: pid -1), sampled at a frequency, each with its ring buffer mapped and
//! drained by one thread. A sample carries its instruction pointer, process and thread,
//! `CLOCK_MONOTONIC` time and CPU, and optionally its kernel call chain.
//!
//! The `unsafe` of this module: the system call, the mapping and its `munmap`, the two
//! ioctls, and the reads of the mapping (the kernel writes records and `data_head`; this
//! side reads them and writes `data_tail`, with the fences the ABI asks for).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use super::samples::{
    RawSample, RawSamples, SamplerConfig, MAX_CHAIN, MAX_CHAIN_FRAMES, MAX_SAMPLES,
};

/// A running sampler.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<RawSamples>>,
}

/// The online CPUs, from the text of `/sys/devices/system/cpu/online` (`0-3,6,8-9`).
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

impl Sampler {
    /// Opens one event per online CPU and starts sampling. `Err` is one line saying why
    /// not and what to change.
    pub fn start(cfg: SamplerConfig) -> Result<Sampler, String> {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| parse_cpu_list(&t))
            .ok_or("cannot read the online CPUs from /sys/devices/system/cpu/online")?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = ring::start(online, cfg, stop.clone())?;
        Ok(Sampler {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops sampling and returns what was collected.
    pub fn stop(mut self) -> RawSamples {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The sampler proper: where perf-event-open-sys has the ABI's bindings (its list of
/// architectures; Cargo.toml names the same ones).
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "powerpc64",
    target_arch = "loongarch64",
    target_arch = "s390x"
))]
mod ring {
    use super::*;
    use perf_event_open_sys as pe;
    use perf_event_open_sys::bindings as b;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::fence;
    use std::time::Duration;

    /// How often the rings are drained.
    const DRAIN_EVERY: Duration = Duration::from_millis(10);

    /// One CPU's event and its ring.
    struct Ring {
        cpu: u32,
        fd: OwnedFd,
        base: *mut u8,
        map_len: usize,
        data_offset: usize,
        data_size: usize,
    }

    // SAFETY: the mapping belongs to this `Ring` alone (never aliased by another value), and it
    // is used by one thread at a time: the ring moves into the drain thread and stays there.
    unsafe impl Send for Ring {}

    impl Drop for Ring {
        fn drop(&mut self) {
            // SAFETY: `base`/`map_len` are exactly what `mmap` returned for this ring, and no
            // reference into the mapping outlives this `Ring`.
            unsafe {
                libc::munmap(self.base.cast(), self.map_len);
            }
        }
    }

    /// What to change when the kernel refused to profile: one line.
    fn refused(e: &std::io::Error) -> String {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => format!(
                "the kernel refused to sample every CPU ({e}; kernel.perf_event_paranoid is {paranoid}): run as root or with CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=-1`"
            ),
            Some(libc::ENOENT) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => format!(
                "this kernel has no perf events ({e}): it needs CONFIG_PERF_EVENTS"
            ),
            _ => format!("perf_event_open failed: {e}"),
        }
    }

    /// Opens one event per CPU of `online`, enables them and starts the thread that drains
    /// them until `stop`.
    pub(super) fn start(
        online: Vec<u32>,
        cfg: SamplerConfig,
        stop: Arc<AtomicBool>,
    ) -> Result<JoinHandle<RawSamples>, String> {
        let pages: usize = if cfg.callchains { 256 } else { 64 };
        let mut rings = Vec::new();
        for cpu in online {
            rings.push(open_ring(cpu, cfg, pages)?);
        }
        for r in &rings {
            // SAFETY: ENABLE on a perf event fd this module opened and still owns.
            let rc = unsafe { pe::ioctls::ENABLE(r.fd.as_raw_fd(), 0) };
            if rc != 0 {
                return Err(format!(
                    "cannot enable sampling on CPU {}: {}",
                    r.cpu,
                    std::io::Error::last_os_error()
                ));
            }
        }
        std::thread::Builder::new()
            .name("lr-profile".into())
            .spawn(move || drain_loop(rings, cfg, &stop))
            .map_err(|e| format!("cannot start the profile thread: {e}"))
    }

    fn open_ring(cpu: u32, cfg: SamplerConfig, pages: usize) -> Result<Ring, String> {
        let mut attr = b::perf_event_attr {
            type_: b::PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<b::perf_event_attr>() as u32,
            config: u64::from(b::PERF_COUNT_SW_CPU_CLOCK),
            sample_type: u64::from(
                b::PERF_SAMPLE_IP
                    | b::PERF_SAMPLE_TID
                    | b::PERF_SAMPLE_TIME
                    | b::PERF_SAMPLE_CPU
                    | if cfg.callchains {
                        b::PERF_SAMPLE_CALLCHAIN
                    } else {
                        0
                    },
            ),
            clockid: libc::CLOCK_MONOTONIC,
            ..Default::default()
        };
        attr.__bindgen_anon_1.sample_freq = u64::from(cfg.frequency_hz);
        attr.set_freq(1);
        attr.set_disabled(1);
        attr.set_use_clockid(1);
        attr.set_exclude_callchain_user(1);
        attr.set_exclude_hv(1);
        // SAFETY: `attr` is a fully initialised perf_event_attr whose `size` is its own size;
        // pid -1 with a CPU number asks for every process on that CPU; no group.
        let fd = unsafe {
            pe::perf_event_open(
                &mut attr,
                -1,
                cpu as libc::c_int,
                -1,
                u64::from(b::PERF_FLAG_FD_CLOEXEC) as libc::c_ulong,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENODEV) {
                return Err(format!("CPU {cpu} cannot be sampled ({e})"));
            }
            return Err(refused(&e));
        }
        // SAFETY: `fd` was just returned by perf_event_open and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .and_then(|p| usize::try_from(p).ok())
            .unwrap_or(4096);
        let map_len = page * (1 + pages);
        // SAFETY: a shared read-write mapping of a perf event fd, of 1 + 2^n pages as the ABI
        // requires; the result is checked against MAP_FAILED before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!(
                "cannot map the profile ring of CPU {cpu}: {} (raise `ulimit -l` or kernel.perf_event_mlock_kb)",
                std::io::Error::last_os_error()
            ));
        }
        let base = base.cast::<u8>();
        let meta = base.cast::<b::perf_event_mmap_page>();
        // SAFETY: the first page of the mapping is the kernel's perf_event_mmap_page; these two
        // fields are set once at mmap time (kernel 4.1+; 0 means the older fixed layout).
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*meta).data_offset)),
                std::ptr::read_volatile(std::ptr::addr_of!((*meta).data_size)),
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, page * pages)
        } else {
            (off as usize, size as usize)
        };
        Ok(Ring {
            cpu,
            fd,
            base,
            map_len,
            data_offset,
            data_size,
        })
    }

    impl Ring {
        /// Copies the records written since the last call out of the ring and frees their space.
        fn take(&mut self, out: &mut Vec<u8>) {
            let meta = self.base.cast::<b::perf_event_mmap_page>();
            // SAFETY: `data_head` is in the meta page of this live mapping; the kernel updates
            // it, so it is read volatile, and the fence orders the record reads after it.
            let head = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*meta).data_head)) };
            fence(Ordering::Acquire);
            // SAFETY: as above; only this side writes `data_tail`.
            let tail = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*meta).data_tail)) };
            let size = self.data_size as u64;
            let avail = head.wrapping_sub(tail).min(size);
            let start = (tail % size) as usize;
            let first = (avail as usize).min(self.data_size - start);
            // SAFETY: `data_offset..data_offset + data_size` is inside the mapping; `start +
            // first <= data_size` and `avail - first <= start`, so both slices are in the data
            // area; the kernel does not write the bytes between tail and head until we advance
            // the tail below.
            unsafe {
                let data = self.base.add(self.data_offset);
                out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
                out.extend_from_slice(std::slice::from_raw_parts(data, avail as usize - first));
            }
            fence(Ordering::Release);
            // SAFETY: the reads above are done (the fence orders them first); writing the tail
            // hands that space back to the kernel.
            unsafe {
                std::ptr::write_volatile(
                    std::ptr::addr_of_mut!((*meta).data_tail),
                    tail.wrapping_add(avail),
                );
            }
        }

        fn disable(&self) {
            // SAFETY: DISABLE on a perf event fd this ring owns.
            unsafe {
                pe::ioctls::DISABLE(self.fd.as_raw_fd(), 0);
            }
        }
    }

    fn drain_loop(mut rings: Vec<Ring>, cfg: SamplerConfig, stop: &AtomicBool) -> RawSamples {
        let mut out = RawSamples {
            cpus: rings.iter().map(|r| r.cpu).collect(),
            ..Default::default()
        };
        let mut buf = Vec::new();
        loop {
            let last = stop.load(Ordering::Relaxed);
            if last {
                for r in &rings {
                    r.disable();
                }
            }
            for r in &mut rings {
                buf.clear();
                r.take(&mut buf);
                decode(&buf, cfg.callchains, &mut out);
            }
            if last {
                return out;
            }
            std::thread::sleep(DRAIN_EVERY);
        }
    }
}

/// 32-bit ARM and PowerPC, MIPS: perf-event-open-sys has no bindings for them (the ioctl
/// numbers and the system call's number differ by architecture), so `--profile` says so.
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "powerpc64",
    target_arch = "loongarch64",
    target_arch = "s390x"
)))]
mod ring {
    use super::*;

    pub(super) fn start(
        _online: Vec<u32>,
        _cfg: SamplerConfig,
        _stop: Arc<AtomicBool>,
    ) -> Result<JoinHandle<RawSamples>, String> {
        Err(format!(
            "this build cannot sample on {} CPUs (no perf_event bindings for them): --profile needs x86_64, aarch64, riscv64 or powerpc64",
            std::env::consts::ARCH
        ))
    }
}

/// The record constants of the perf_event ABI (linux/perf_event.h), the same on every
/// architecture: [`decode`] needs them where perf-event-open-sys has no bindings too.
mod abi {
    pub const PERF_RECORD_LOST: u32 = 2;
    pub const PERF_RECORD_SAMPLE: u32 = 9;
    pub const PERF_RECORD_MISC_CPUMODE_MASK: u32 = 7;
    #[cfg(test)]
    pub const PERF_RECORD_MISC_KERNEL: u32 = 1;
    pub const PERF_RECORD_MISC_USER: u32 = 2;
    /// The least of the call chain's context markers (`(u64)-4095`).
    pub const PERF_CONTEXT_MAX: u64 = u64::MAX - 4094;
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes the records of one drain (pure): samples of the layout [`open_ring`] asked for
/// (ip, pid/tid, time, cpu, [callchain]) and lost-record counts; other records are skipped.
pub fn decode(mut b: &[u8], callchains: bool, out: &mut RawSamples) {
    const HEADER: usize = 8;
    while b.len() >= HEADER {
        let kind = u32_at(b, 0).unwrap_or(0);
        let misc = u16::from_ne_bytes([b[4], b[5]]);
        let size = usize::from(u16::from_ne_bytes([b[6], b[7]]));
        if size < HEADER || size > b.len() {
            return;
        }
        let rec = &b[HEADER..size];
        b = &b[size..];
        match kind {
            abi::PERF_RECORD_LOST => out.lost += u64_at(rec, 8).unwrap_or(0),
            abi::PERF_RECORD_SAMPLE => {
                let (Some(ip), Some(pid), Some(tid), Some(time), Some(cpu)) = (
                    u64_at(rec, 0),
                    u32_at(rec, 8),
                    u32_at(rec, 12),
                    u64_at(rec, 16),
                    u32_at(rec, 24),
                ) else {
                    continue;
                };
                if out.samples.len() >= MAX_SAMPLES {
                    out.dropped += 1;
                    continue;
                }
                let user = u32::from(misc) & abi::PERF_RECORD_MISC_CPUMODE_MASK
                    == abi::PERF_RECORD_MISC_USER;
                let mut chain = (0u32, 0u16);
                if callchains {
                    let nr = u64_at(rec, 32).unwrap_or(0) as usize;
                    let start = out.frames.len();
                    for i in 0..nr.min((rec.len().saturating_sub(40)) / 8) {
                        let Some(f) = u64_at(rec, 40 + 8 * i) else {
                            break;
                        };
                        if f >= abi::PERF_CONTEXT_MAX {
                            // PERF_CONTEXT_KERNEL / _USER markers.
                            continue;
                        }
                        if out.frames.len() - start >= MAX_CHAIN
                            || out.frames.len() >= MAX_CHAIN_FRAMES
                        {
                            break;
                        }
                        out.frames.push(f);
                    }
                    if let Ok(s) = u32::try_from(start) {
                        chain = (s, (out.frames.len() - start) as u16);
                    }
                }
                if !out.comms.contains_key(&pid) && out.comms.len() < 4096 {
                    let comm = if pid == 0 {
                        "swapper".to_string()
                    } else {
                        std::fs::read_to_string(format!("/proc/{pid}/comm"))
                            .map(|c| c.trim().to_string())
                            .unwrap_or_else(|_| "exited".into())
                    };
                    out.comms.insert(pid, comm);
                }
                out.samples.push(RawSample {
                    time_ns: time,
                    ip,
                    pid,
                    tid,
                    cpu,
                    user,
                    chain,
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ABI's record constants that `decode` uses are the bindings' own, where the
    /// bindings exist.
    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "powerpc64"
    ))]
    #[test]
    fn abi_constants_match_the_bindings() {
        use perf_event_open_sys::bindings as b;
        assert_eq!(abi::PERF_RECORD_LOST, b::PERF_RECORD_LOST);
        assert_eq!(abi::PERF_RECORD_SAMPLE, b::PERF_RECORD_SAMPLE);
        assert_eq!(
            abi::PERF_RECORD_MISC_CPUMODE_MASK,
            b::PERF_RECORD_MISC_CPUMODE_MASK
        );
        assert_eq!(abi::PERF_RECORD_MISC_KERNEL, b::PERF_RECORD_MISC_KERNEL);
        assert_eq!(abi::PERF_RECORD_MISC_USER, b::PERF_RECORD_MISC_USER);
        assert_eq!(abi::PERF_CONTEXT_MAX, b::PERF_CONTEXT_MAX);
    }

    fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = kind.to_ne_bytes().to_vec();
        v.extend(misc.to_ne_bytes());
        v.extend(((8 + body.len()) as u16).to_ne_bytes());
        v.extend(body);
        v
    }

    fn sample_body(ip: u64, pid: u32, time: u64, cpu: u32, chain: Option<&[u64]>) -> Vec<u8> {
        let mut v = ip.to_ne_bytes().to_vec();
        v.extend(pid.to_ne_bytes());
        v.extend((pid + 1).to_ne_bytes());
        v.extend(time.to_ne_bytes());
        v.extend(cpu.to_ne_bytes());
        v.extend(0u32.to_ne_bytes());
        if let Some(c) = chain {
            v.extend((c.len() as u64).to_ne_bytes());
            for f in c {
                v.extend(f.to_ne_bytes());
            }
        }
        v
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3,7"), Some(vec![0, 2, 3, 7]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn decodes_samples_chains_and_lost_records() {
        let kernel_marker = (-128i64) as u64;
        let mut bytes = record(
            abi::PERF_RECORD_SAMPLE,
            abi::PERF_RECORD_MISC_KERNEL as u16,
            &sample_body(
                0xffff_ffff_8100_1000,
                0,
                5,
                1,
                Some(&[kernel_marker, 0xa, 0xb]),
            ),
        );
        bytes.extend(record(
            abi::PERF_RECORD_SAMPLE,
            abi::PERF_RECORD_MISC_USER as u16,
            &sample_body(0x5555_0000, 1, 6, 0, Some(&[])),
        ));
        let mut lost = 7u64.to_ne_bytes().to_vec();
        lost.extend(3u64.to_ne_bytes());
        bytes.extend(record(abi::PERF_RECORD_LOST, 0, &lost));
        bytes.extend(record(99, 0, &[0; 8]));
        // A torn record at the end is ignored.
        bytes.extend([1, 2, 3]);
        let mut out = RawSamples::default();
        decode(&bytes, true, &mut out);
        assert_eq!(out.samples.len(), 2);
        assert_eq!(out.lost, 3);
        let s = &out.samples[0];
        assert_eq!(
            (s.ip, s.pid, s.tid, s.time_ns, s.cpu, s.user),
            (0xffff_ffff_8100_1000, 0, 1, 5, 1, false)
        );
        assert_eq!(out.chain(s), &[0xa, 0xb]);
        assert!(out.samples[1].user);
        assert!(out.chain(&out.samples[1]).is_empty());
        assert_eq!(out.comms.get(&0).map(String::as_str), Some("swapper"));
    }

    #[test]
    fn a_sampler_runs_here_or_says_why_not() {
        match Sampler::start(SamplerConfig {
            frequency_hz: 999,
            callchains: true,
        }) {
            Ok(s) => {
                // Burn a little CPU so that some CPU is sampled busy.
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < std::time::Duration::from_millis(200) {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                let raw = s.stop();
                assert!(x > 0);
                assert!(!raw.cpus.is_empty());
                assert!(!raw.samples.is_empty(), "no samples in 200 ms at 999 Hz");
            }
            Err(e) => assert!(!e.is_empty()),
        }
    }
}
