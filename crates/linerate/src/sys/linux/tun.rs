//! A TUN device and an absolute-deadline timer: what `linerate lab`'s delay line reads
//! packets from, holds and writes back (app/lab/delay.rs). The device is opened on
//! /dev/net/tun with TUNSETIFF (IFF_TUN | IFF_NO_PI: each read is one IP packet, each write
//! injects one); the timer is a CLOCK_MONOTONIC timerfd armed with TFD_TIMER_ABSTIME, so a
//! deadline never drifts by the time it took to arm it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::{clock_gettime, ClockId as Clock};

/// An open TUN device (non-blocking): the device lives as long as this value.
pub struct Tun {
    file: File,
}

impl Tun {
    /// Creates TUN device `name` (at most 15 bytes) in the calling thread's network namespace.
    pub fn open(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TUN device name '{name}' must be 1 to 15 bytes"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("opening /dev/net/tun: {e}")))?;
        // SAFETY: ifreq is plain old data; all-zero is a valid value of it.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads (and writes back the name into) the ifreq that `req` is,
        // which lives across the call; the descriptor is the open /dev/net/tun.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("creating TUN device {name} (TUNSETIFF): {e}"),
            ));
        }
        Ok(Tun { file })
    }

    /// Reads one packet into `buf`: `Ok(None)` when none is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Injects one packet (the kernel routes it as if it came in on the device).
    pub fn send(&mut self, packet: &[u8]) -> io::Result<()> {
        self.file.write(packet).map(drop)
    }
}

/// A one-shot CLOCK_MONOTONIC timer armed at absolute deadlines.
pub struct Deadline {
    fd: TimerFd,
}

impl Deadline {
    /// A disarmed timer.
    pub fn new() -> io::Result<Deadline> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        Ok(Deadline { fd })
    }

    /// Fires at `at_ns` on [`now_ns`]'s clock (at once if that has passed).
    pub fn arm(&self, at_ns: u64) -> io::Result<()> {
        let at = TimeSpec::from_duration(Duration::from_nanos(at_ns.max(1)));
        self.fd
            .set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .map_err(io::Error::from)
    }

    /// Disarms it.
    pub fn disarm(&self) -> io::Result<()> {
        self.fd.unset().map_err(io::Error::from)
    }
}

/// What [`wait`] saw ready.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// Packets wait on the device.
    pub packets: bool,
    /// The deadline passed.
    pub deadline: bool,
}

/// Waits until a packet arrives on `tun`, `timer` fires, or `timeout_ms` passes.
pub fn wait(tun: &Tun, timer: &Deadline, timeout_ms: u16) -> io::Result<Ready> {
    let mut fds = [
        PollFd::new(tun.file.as_fd(), PollFlags::POLLIN),
        PollFd::new(timer.fd.as_fd(), PollFlags::POLLIN),
    ];
    match poll(&mut fds, PollTimeout::from(timeout_ms)) {
        Ok(_) => {}
        Err(nix::errno::Errno::EINTR) => return Ok(Ready::default()),
        Err(e) => return Err(e.into()),
    }
    let ready = |f: &PollFd| f.revents().is_some_and(|r| r.contains(PollFlags::POLLIN));
    let out = Ready {
        packets: ready(&fds[0]),
        deadline: ready(&fds[1]),
    };
    if out.deadline {
        // Consume the expiration so poll does not report it again; a re-arm clears it too.
        let _ = timer.fd.wait().or_else(|e| match e {
            nix::errno::Errno::EAGAIN => Ok(()),
            e => Err(e),
        });
    }
    Ok(out)
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock [`Deadline::arm`] counts on.
pub fn now_ns() -> u64 {
    clock_gettime(Clock::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Asks the kernel to wake this thread's timers without slack (default 50 µs), so a held
/// packet leaves as near its deadline as the scheduler allows.
pub fn tighten_timer_slack() -> io::Result<()> {
    nix::sys::prctl::set_timerslack(1).map_err(io::Error::from)
}

/// The network namespace this process is in, as its inode (/proc/self/ns/net): the delay
/// line ends when the lab's namespace file no longer names it.
pub fn netns_inode() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/net").ok().map(|m| m.ino())
}
