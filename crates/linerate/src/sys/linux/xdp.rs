//! AF_XDP transmit socket: complete Ethernet frames handed to one interface queue through
//! a UMEM (user memory the kernel pins) and descriptor rings, the kernel's fastest send
//! path. Needs CAP_NET_RAW only: sending loads no BPF program.
//!
//! The UMEM is [`TX_FRAMES`] chunks the frames are written into (filled once with the
//! stream's frame, so each send only stamps the changing bytes) and, for a zero-copy bind,
//! [`RX_FRAMES`] chunks on the fill ring: a zero-copy driver takes that queue's receive
//! buffers from it, and without them the queue would receive nothing. A frame goes out as
//! one descriptor on the TX ring (producer: us; consumer: the kernel); the kernel returns
//! each chunk on the completion ring once the frame is gone, and the chunk is reused. The
//! bind tries `XDP_ZEROCOPY` first (the driver sends from the UMEM) and `XDP_COPY`
//! otherwise (the kernel copies each frame into a socket buffer and hands it straight to the
//! driver, past the qdisc, as `PACKET_QDISC_BYPASS` does), both with `XDP_USE_NEED_WAKEUP`:
//! `sendto` is called only when the kernel asks for it (always, in copy mode).
//!
//! A frame counts as sent once the kernel has taken its descriptor (the TX ring's consumer
//! passed it), less a frame the driver dropped: copy mode's `sendto` then stops with
//! `EBUSY` after consuming it (a full device queue).
//!
//! The UMEM counts against RLIMIT_MEMLOCK for a process without CAP_IPC_LOCK; the soft limit
//! is raised to the hard one when it is lower than the UMEM, and a refusal says what to
//! raise. Invariants of the `unsafe` here: every mapping is owned by a [`Mapping`] and
//! unmapped once, after the socket is closed (field order); ring pointers lie inside their
//! ring's mapping at the offsets the kernel gave (`XDP_MMAP_OFFSETS`); descriptor indices
//! are masked by the ring's size; chunk `i` is `umem + i × chunk` with `i < chunks`.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use super::afpacket::{setsockopt, Completed};

/// Chunks frames are sent from (and TX and completion ring entries).
pub const TX_FRAMES: usize = 512;
/// Chunks on the fill ring of a zero-copy bind.
const RX_FRAMES: usize = 128;
/// Most frames one copy-mode `sendto` transmits (the kernel's TX_BATCH_SIZE is 32): a flush
/// calls it again while it makes progress, at most this many times.
const MAX_KICKS: usize = 16;
/// The TX ring's page offset (if_xdp.h's XDP_PGOFF_TX_RING, as an unsigned number).
const PGOFF_TX_RING: u64 = 0x8000_0000;
/// `AF_XDP` (the same number on every Linux architecture and C library).
const AF_XDP: libc::c_int = 44;

/// How the socket is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// The driver sends straight from the UMEM.
    Zerocopy,
    /// The kernel copies each frame into a socket buffer.
    Copy,
}

/// Why an AF_XDP socket could not be opened, in words for a warning (what to change).
#[derive(Debug)]
pub struct XdpError(pub String);

/// One shared mapping, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize, fd: Option<(&OwnedFd, libc::off_t)>) -> io::Result<Mapping> {
        let (flags, raw, off) = match fd {
            Some((f, off)) => (libc::MAP_SHARED | libc::MAP_POPULATE, f.as_raw_fd(), off),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0),
        };
        // SAFETY: a fresh mapping of `len` bytes (anonymous, or of the socket's ring at the
        // kernel's page offset); the result is checked and unmapped once, in `Drop`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                raw,
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// The u32 at byte `off` (a ring's producer, consumer or flags word).
    fn word(&self, off: u64) -> *const AtomicU32 {
        debug_assert!(off as usize + 4 <= self.len);
        self.ptr.wrapping_add(off as usize).cast()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped only here.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// A ring shared with the kernel: its producer and consumer words and descriptor array.
struct Ring {
    map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut u8,
    mask: u32,
}

impl Ring {
    fn map(
        fd: &OwnedFd,
        off: &libc::xdp_ring_offset,
        n: usize,
        item: usize,
        pgoff: u64,
    ) -> io::Result<Ring> {
        // The rings' page offsets are above 2 GiB: a 32-bit off_t cannot carry them, and
        // such a build falls back to the AF_PACKET ring (the error says why).
        let pgoff = libc::off_t::try_from(pgoff).map_err(|_| {
            io::Error::other("the ring offsets need a 64-bit off_t (a 64-bit build)")
        })?;
        let map = Mapping::new(off.desc as usize + n * item, Some((fd, pgoff)))?;
        Ok(Ring {
            producer: map.word(off.producer),
            consumer: map.word(off.consumer),
            flags: map.word(off.flags),
            desc: map.ptr.wrapping_add(off.desc as usize),
            mask: (n - 1) as u32,
            map,
        })
    }

    fn load(p: *const AtomicU32) -> u32 {
        // SAFETY: `p` is a 4-byte aligned word inside this ring's live mapping (an offset
        // the kernel gave), shared with the kernel and therefore only accessed atomically.
        unsafe { (*p).load(Ordering::Acquire) }
    }

    fn store(p: *const AtomicU32, v: u32) {
        // SAFETY: as in `load`.
        unsafe { (*p).store(v, Ordering::Release) }
    }

    /// Entry `i` (masked) of a ring of `T`.
    fn slot<T>(&self, i: u32) -> *mut T {
        let at = (i & self.mask) as usize * std::mem::size_of::<T>();
        debug_assert!(self.desc as usize + at < self.map.ptr as usize + self.map.len);
        self.desc.wrapping_add(at).cast()
    }
}

/// An AF_XDP socket bound to one interface queue, for sending.
pub struct XdpTx {
    // Field order is drop order: the socket closes before its rings and UMEM are unmapped.
    fd: OwnedFd,
    tx: Ring,
    cq: Ring,
    _fq: Option<Ring>,
    umem: Mapping,
    chunk: usize,
    mode: XdpMode,
    /// Chunks free to carry a frame.
    free: VecDeque<u32>,
    /// Our TX producer index; `tx_seen` the kernel's consumer index last read.
    tx_prod: u32,
    tx_seen: u32,
    /// The completion ring's consumer index.
    cq_cons: u32,
}

// SAFETY: the socket owns its mappings and descriptor exclusively; no pointer into them
// leaves the struct, so moving it to another thread is sound.
unsafe impl Send for XdpTx {}

// SAFETY: through `&XdpTx` only plain fields are read and ring words are loaded
// atomically; every write to the mappings needs `&mut XdpTx`.
unsafe impl Sync for XdpTx {}

/// The UMEM's chunk size for frames of `max_frame` bytes: 2 KiB, or a 4 KiB page for
/// larger frames (aligned chunks are a power of two from 2 KiB to a page); none above.
pub fn chunk_size(max_frame: usize) -> Option<usize> {
    match max_frame {
        0..=2048 => Some(2048),
        2049..=4096 => Some(4096),
        _ => None,
    }
}

/// Bytes of UMEM a socket for frames of `max_frame` bytes pins.
pub fn umem_bytes(max_frame: usize) -> Option<usize> {
    chunk_size(max_frame).map(|c| c * (TX_FRAMES + RX_FRAMES))
}

/// Raises the soft RLIMIT_MEMLOCK to the hard limit when it is below `need` bytes.
fn raise_memlock(need: usize) {
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) == 0 && (r.rlim_cur as u128) < need as u128
        {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &r);
        }
    }
}

/// The soft RLIMIT_MEMLOCK in KiB (none when unlimited or unreadable).
fn memlock_kib() -> Option<u64> {
    // SAFETY: getrlimit with a valid rlimit struct.
    let r = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) == 0).then_some(r)
    }?;
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64 / 1024)
}

impl XdpTx {
    /// Opens a socket for frames of up to `max_frame` bytes on queue 0 of `ifindex`:
    /// zero-copy if the driver takes it, copy mode otherwise.
    pub fn open(ifindex: u32, max_frame: usize) -> Result<XdpTx, XdpError> {
        let chunk = chunk_size(max_frame).ok_or_else(|| {
            XdpError(format!(
                "a {max_frame}-byte frame exceeds a 4 KiB UMEM chunk"
            ))
        })?;
        match Self::open_mode(ifindex, chunk, XdpMode::Zerocopy) {
            Ok(s) => Ok(s),
            Err(_) => Self::open_mode(ifindex, chunk, XdpMode::Copy).map_err(|e| explain(e, chunk)),
        }
    }

    fn open_mode(ifindex: u32, chunk: usize, mode: XdpMode) -> Result<XdpTx, StepError> {
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(("socket", io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let chunks = TX_FRAMES + RX_FRAMES;
        let umem = Mapping::new(chunk * chunks, None).map_err(at("UMEM allocation"))?;
        raise_memlock(umem.len);
        // SAFETY: xdp_umem_reg is a plain C struct for which all-zero is valid.
        let mut reg: libc::xdp_umem_reg = unsafe { std::mem::zeroed() };
        reg.addr = umem.ptr as u64;
        reg.len = umem.len as u64;
        reg.chunk_size = chunk as u32;
        setsockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
            .map_err(at("UMEM registration"))?;
        let n = TX_FRAMES as libc::c_int;
        let rx_n = RX_FRAMES as libc::c_int;
        setsockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_FILL_RING, &rx_n).map_err(at("fill ring"))?;
        setsockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_COMPLETION_RING, &n)
            .map_err(at("completion ring"))?;
        setsockopt(&fd, libc::SOL_XDP, libc::XDP_TX_RING, &n).map_err(at("TX ring"))?;
        let off = mmap_offsets(&fd).map_err(at("ring offsets"))?;
        let tx = Ring::map(
            &fd,
            &off.tx,
            TX_FRAMES,
            std::mem::size_of::<libc::xdp_desc>(),
            PGOFF_TX_RING,
        )
        .map_err(at("TX ring mapping"))?;
        let cq = Ring::map(
            &fd,
            &off.cr,
            TX_FRAMES,
            8,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )
        .map_err(at("completion ring mapping"))?;
        let fq = if mode == XdpMode::Zerocopy {
            let fq = Ring::map(&fd, &off.fr, RX_FRAMES, 8, libc::XDP_UMEM_PGOFF_FILL_RING)
                .map_err(at("fill ring mapping"))?;
            for i in 0..RX_FRAMES as u32 {
                // SAFETY: entry i of the fill ring (masked), not yet published to the kernel.
                unsafe {
                    fq.slot::<u64>(i)
                        .write(((TX_FRAMES as u64) + u64::from(i)) * chunk as u64)
                };
            }
            Ring::store(fq.producer, RX_FRAMES as u32);
            Some(fq)
        } else {
            None
        };
        let bind_flags = match mode {
            XdpMode::Zerocopy => libc::XDP_ZEROCOPY,
            XdpMode::Copy => libc::XDP_COPY,
        } | libc::XDP_USE_NEED_WAKEUP;
        // SAFETY: sockaddr_xdp is a plain C struct for which all-zero is valid.
        let mut sa: libc::sockaddr_xdp = unsafe { std::mem::zeroed() };
        sa.sxdp_family = AF_XDP as u16;
        sa.sxdp_flags = bind_flags;
        sa.sxdp_ifindex = ifindex;
        sa.sxdp_queue_id = 0;
        // SAFETY: `sa` is a valid sockaddr_xdp of the stated size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(("bind", io::Error::last_os_error()));
        }
        let tx_prod = Ring::load(tx.producer);
        Ok(XdpTx {
            fd,
            tx_seen: Ring::load(tx.consumer),
            cq_cons: Ring::load(cq.consumer),
            tx,
            cq,
            _fq: fq,
            umem,
            chunk,
            mode,
            free: (0..TX_FRAMES as u32).collect(),
            tx_prod,
        })
    }

    /// How the socket is bound.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Chunks frames are sent from.
    pub fn capacity(&self) -> usize {
        TX_FRAMES
    }

    fn chunk_data(&mut self, i: u32, len: usize) -> &mut [u8] {
        assert!((i as usize) < TX_FRAMES && len <= self.chunk);
        // SAFETY: chunk i lies inside the UMEM (i < TX_FRAMES < chunks); it is free (owned
        // by user space: not on the TX ring, not in flight) whenever this is called, and
        // `&mut self` makes the borrow unique on our side.
        unsafe { std::slice::from_raw_parts_mut(self.umem.ptr.add(i as usize * self.chunk), len) }
    }

    /// Writes `frame` into every chunk, so that later frames only need their changing
    /// bytes written ([`XdpTx::queue`]). Call before the first send.
    pub fn prefill(&mut self, frame: &[u8]) {
        let n = frame.len().min(self.chunk);
        for i in 0..TX_FRAMES as u32 {
            self.chunk_data(i, n).copy_from_slice(&frame[..n]);
        }
    }

    /// Queues up to `n` frames of `len` bytes: `fill(chunk, k)` writes the `k`-th frame of
    /// this call into its chunk (which holds whatever it last carried). Stops early when no
    /// chunk is free. Returns how many were queued; [`XdpTx::flush`] sends them.
    pub fn queue(&mut self, n: usize, len: usize, mut fill: impl FnMut(&mut [u8], usize)) -> usize {
        let len = len.min(self.chunk);
        let mut k = 0;
        while k < n {
            let Some(i) = self.free.pop_front() else {
                break;
            };
            fill(self.chunk_data(i, len), k);
            let d = libc::xdp_desc {
                addr: u64::from(i) * self.chunk as u64,
                len: len as u32,
                options: 0,
            };
            // SAFETY: entry tx_prod of the TX ring (masked); at most TX_FRAMES descriptors
            // are out (one per chunk), so the kernel has consumed this entry.
            unsafe { self.tx.slot::<libc::xdp_desc>(self.tx_prod).write(d) };
            self.tx_prod = self.tx_prod.wrapping_add(1);
            k += 1;
        }
        if k > 0 {
            Ring::store(self.tx.producer, self.tx_prod);
        }
        k
    }

    /// Wakes the kernel when it asks for it (`sendto`, non-blocking) until it has taken
    /// every queued frame or stops making progress. Returns the frames it took in this call;
    /// an error only when it took none.
    pub fn flush(&mut self) -> io::Result<Completed> {
        let mut c = Completed::default();
        let mut err = None;
        for _ in 0..MAX_KICKS {
            if self.unsent() == 0 {
                break;
            }
            if Ring::load(self.tx.flags) & libc::XDP_RING_NEED_WAKEUP == 0 {
                break;
            }
            // SAFETY: sendto(2) with no buffer on an AF_XDP socket: the kernel reads the TX ring.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            let e = (rc < 0).then(io::Error::last_os_error);
            let taken = self.taken();
            let dropped = usize::from(
                taken > 0 && e.as_ref().and_then(|e| e.raw_os_error()) == Some(libc::EBUSY),
            );
            c.sent += taken - dropped;
            c.dropped += dropped;
            match e {
                Some(e) if e.raw_os_error() == Some(libc::EAGAIN) && taken > 0 => {}
                Some(e) if e.raw_os_error() == Some(libc::EBUSY) && taken > 0 => {}
                Some(e) => {
                    err = Some(e);
                    break;
                }
                None if taken == 0 => break,
                None => {}
            }
        }
        // Zero-copy: the driver takes descriptors on its own.
        let more = self.taken();
        c.sent += more;
        self.reap();
        match err {
            Some(e) if c == Completed::default() => Err(e),
            _ => Ok(c),
        }
    }

    /// Descriptors the kernel took since the last look.
    fn taken(&mut self) -> usize {
        let cons = Ring::load(self.tx.consumer);
        let n = cons.wrapping_sub(self.tx_seen) as usize;
        self.tx_seen = cons;
        n
    }

    /// Makes the chunks the kernel has completed reusable.
    pub fn reap(&mut self) {
        let prod = Ring::load(self.cq.producer);
        while self.cq_cons != prod {
            // SAFETY: entry cq_cons of the completion ring (masked), published by the kernel
            // (before `prod`, read with acquire).
            let addr = unsafe { self.cq.slot::<u64>(self.cq_cons).read() };
            let i = (addr / self.chunk as u64) as u32;
            if (i as usize) < TX_FRAMES {
                self.free.push_back(i);
            }
            self.cq_cons = self.cq_cons.wrapping_add(1);
        }
        Ring::store(self.cq.consumer, self.cq_cons);
    }

    /// Frames queued and not yet taken by the kernel.
    pub fn unsent(&self) -> usize {
        self.tx_prod.wrapping_sub(Ring::load(self.tx.consumer)) as usize
    }

    /// Frames whose chunks the kernel has not completed yet (taken or not).
    pub fn in_ring(&self) -> usize {
        TX_FRAMES - self.free.len()
    }
}

/// The ring offsets, with the flags word (Linux 5.4 and later: need-wakeup).
fn mmap_offsets(fd: &OwnedFd) -> io::Result<libc::xdp_mmap_offsets> {
    // SAFETY: xdp_mmap_offsets is a plain C struct for which all-zero is valid.
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `off` is a writable buffer of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&mut off as *mut libc::xdp_mmap_offsets).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::xdp_mmap_offsets>() {
        return Err(io::Error::other(
            "no need-wakeup flags (Linux 5.4 or later needed)",
        ));
    }
    Ok(off)
}

/// A step of the set-up and how it failed.
type StepError = (&'static str, io::Error);

/// Names the step an error came from, for [`explain`].
fn at(step: &'static str) -> impl Fn(io::Error) -> StepError {
    move |e| (step, e)
}

/// The copy-mode set-up's error in words saying what to change.
fn explain((step, e): StepError, chunk: usize) -> XdpError {
    let os = e.raw_os_error();
    let umem_kib = chunk * (TX_FRAMES + RX_FRAMES) / 1024;
    XdpError(match os {
        Some(libc::EAFNOSUPPORT) => "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)".into(),
        Some(libc::EPERM) => "no CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep` the binary)".into(),
        Some(libc::ENOBUFS | libc::ENOMEM) if step == "UMEM registration" => format!(
            "the locked-memory limit ({}) is below the {umem_kib} KiB UMEM: raise it (`ulimit -l`, `prlimit --memlock`, systemd's LimitMEMLOCK=) or grant CAP_IPC_LOCK",
            memlock_kib().map_or("unlimited".into(), |k| format!("{k} KiB"))
        ),
        _ => format!("AF_XDP socket, {step}: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fit_the_frames() {
        assert_eq!(chunk_size(64), Some(2048));
        assert_eq!(chunk_size(1518), Some(2048));
        assert_eq!(chunk_size(2049), Some(4096));
        assert_eq!(chunk_size(9018), None);
        // 1.25 MiB for the usual frames: inside the 8 MiB default locked-memory limit
        // even with several streams.
        assert_eq!(umem_bytes(1518), Some(1_310_720));
    }

    #[test]
    fn a_umem_refusal_says_what_to_raise() {
        let e = io::Error::from_raw_os_error(libc::ENOBUFS);
        let XdpError(why) = explain(("UMEM registration", e), 2048);
        assert!(
            why.contains("locked-memory limit") && why.contains("1280 KiB"),
            "{why}"
        );
        let XdpError(why) = explain(
            ("socket", io::Error::from_raw_os_error(libc::EAFNOSUPPORT)),
            2048,
        );
        assert!(why.contains("no AF_XDP"), "{why}");
    }
}
