//! AF_PACKET transmit ring (`PACKET_TX_RING`, TPACKET_V2): complete Ethernet frames handed to
//! an interface with one `send` per batch and no copy through a socket buffer.
//!
//! The ring is a shared mapping of `frame_nr` slots. A slot starts with a `tpacket2_hdr`
//! whose `tp_status` is the hand-over: user space writes a frame into a slot whose status is
//! `TP_STATUS_AVAILABLE`, sets `tp_len`, then (release) sets `TP_STATUS_SEND_REQUEST`;
//! `send(fd, NULL, 0, MSG_DONTWAIT)` makes the kernel transmit every requested slot (the slot
//! then reads `TP_STATUS_SENDING` until the frame's buffer is freed, `TP_STATUS_AVAILABLE`
//! after; `TP_STATUS_WRONG_FORMAT` with `PACKET_LOSS` when the kernel refused a frame). It does
//! not wait for the buffers: a queue on the path (a shaper on this host) may hold them for
//! a while, and the sender must not stall for it. A frame counts as sent once its slot no
//! longer reads SEND_REQUEST. The socket is bound with protocol 0, so it never receives.
//!
//! `PACKET_QDISC_BYPASS` (asked for by the caller when the interface's root qdisc does not
//! shape) hands frames straight to the driver: a full driver queue then drops the frame,
//! which the interface counts in `tx_dropped`, instead of queueing it.
//!
//! The `unsafe` of the raw-frame generator lives here. Invariants: the mapping is
//! `frame_size × frame_nr` bytes, owned by [`TxRing`] until drop; every slot pointer is
//! `map + i × frame_size` with `i < frame_nr`; frame data starts at [`DATA_OFFSET`] and never
//! exceeds the slot; `tp_status` is 16-byte aligned and only accessed atomically.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where frame data starts in a slot: `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`, the
/// kernel's `tp_hdrlen − sizeof(struct sockaddr_ll)` for TX without `PACKET_TX_HAS_OFF`.
pub const DATA_OFFSET: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + 15) & !15;
/// Slots in the ring.
pub const FRAME_NR: usize = 1024;
/// Send buffer asked for, bytes.
const SNDBUF: libc::c_int = 4 << 20;

const STATUS_AVAILABLE: u32 = libc::TP_STATUS_AVAILABLE;
const STATUS_SEND_REQUEST: u32 = libc::TP_STATUS_SEND_REQUEST;
const STATUS_WRONG_FORMAT: u32 = libc::TP_STATUS_WRONG_FORMAT;

/// A transmit ring bound to one interface.
pub struct TxRing {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    frame_size: usize,
    frame_nr: usize,
    /// Next slot to fill.
    head: usize,
    /// Oldest slot not yet seen back (AVAILABLE again).
    tail: usize,
    /// Slots not yet seen back.
    pending: usize,
    /// Oldest slot requested and not yet seen taken by the kernel.
    req_tail: usize,
    /// Slots requested (SEND_REQUEST) and not yet seen taken.
    requested: usize,
    /// Whether the qdisc is bypassed.
    qdisc_bypass: bool,
}

// SAFETY: the ring owns its mapping and file descriptor exclusively; nothing else holds a
// pointer into the mapping, so moving it to another thread is sound.
unsafe impl Send for TxRing {}

// SAFETY: through `&TxRing` only plain fields are read and slot statuses are loaded
// atomically; every write to the mapping needs `&mut TxRing`.
unsafe impl Sync for TxRing {}

/// Frames the kernel took from the ring since the last look.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// Frames the kernel took and handed to the interface (or its qdisc).
    pub sent: usize,
    /// Frames the kernel refused as malformed.
    pub refused: usize,
    /// Frames the kernel took but the driver dropped (a full device queue; AF_XDP's copy
    /// mode says so; the AF_PACKET ring cannot tell them from sent frames).
    pub dropped: usize,
}

/// setsockopt(2) of a fixed-size option (AF_PACKET's here, AF_XDP's in sys/linux/xdp.rs).
pub(super) fn setsockopt<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    v: &T,
) -> io::Result<()> {
    // SAFETY: `v` points to a live `T` of the stated size for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Slot size for frames of up to `max_frame` bytes: a power of two (so that slots tile a
/// block exactly), at least 128 bytes.
pub fn slot_size(max_frame: usize) -> usize {
    (DATA_OFFSET + max_frame).next_power_of_two().max(128)
}

impl TxRing {
    /// Opens a ring for frames of up to `max_frame` bytes on interface `ifindex`, asking for
    /// qdisc bypass when `bypass` (failure to bypass is not an error: see
    /// [`TxRing::qdisc_bypass`]). Needs CAP_NET_RAW.
    pub fn open(ifindex: u32, max_frame: usize, bypass: bool) -> io::Result<TxRing> {
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
        // A malformed frame is marked and skipped instead of stalling the ring.
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_LOSS, &1 as &libc::c_int)?;
        let qdisc_bypass = bypass
            && setsockopt(
                &fd,
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                &1 as &libc::c_int,
            )
            .is_ok();
        // Frames held by a queue on the path (a shaper on this host) stay charged to the
        // socket until freed; a large send buffer keeps that from pushing the sender back
        // before the ring does. FORCE needs CAP_NET_ADMIN; otherwise rmem_max caps it.
        let sndbuf: libc::c_int = SNDBUF;
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf).is_err() {
            let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf);
        }
        let frame_size = slot_size(max_frame);
        let block_size = frame_size.max(1 << 16);
        let frame_nr = FRAME_NR;
        let block_nr = (frame_size * frame_nr).div_ceil(block_size);
        let frame_nr = block_nr * (block_size / frame_size);
        let req = libc::tpacket_req {
            tp_block_size: block_size as libc::c_uint,
            tp_block_nr: block_nr as libc::c_uint,
            tp_frame_size: frame_size as libc::c_uint,
            tp_frame_nr: frame_nr as libc::c_uint,
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &req)?;
        let map_len = block_size * block_nr;
        // SAFETY: maps the ring the kernel just allocated for this socket; the result is
        // checked, and the mapping is unmapped exactly once, in `Drop`.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring = TxRing {
            fd,
            map: map.cast(),
            map_len,
            frame_size,
            frame_nr,
            head: 0,
            tail: 0,
            pending: 0,
            req_tail: 0,
            requested: 0,
            qdisc_bypass,
        };
        // SAFETY: sockaddr_ll is a plain C struct for which all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ifindex as libc::c_int;
        // SAFETY: `sll` is a valid sockaddr_ll of the stated size.
        let rc = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ring)
    }

    /// Whether frames bypass the interface's qdisc.
    pub fn qdisc_bypass(&self) -> bool {
        self.qdisc_bypass
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.frame_nr
    }

    /// Largest frame a slot holds.
    pub fn max_frame(&self) -> usize {
        self.frame_size - DATA_OFFSET
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < self.frame_nr);
        // SAFETY: slot `i` lies inside the mapping (i < frame_nr); tp_status is its first
        // field, a u32 at a 16-byte aligned address, shared with the kernel and therefore only
        // accessed atomically.
        unsafe { &*(self.map.add(i * self.frame_size).cast::<AtomicU32>()) }
    }

    /// The data area of slot `i`.
    fn data(&mut self, i: usize) -> &mut [u8] {
        debug_assert!(i < self.frame_nr);
        let len = self.frame_size - DATA_OFFSET;
        // SAFETY: the data area is inside slot `i` of the mapping; the slot is AVAILABLE
        // (owned by user space) whenever this is called, and `&mut self` makes the borrow
        // unique on our side.
        unsafe {
            std::slice::from_raw_parts_mut(self.map.add(i * self.frame_size + DATA_OFFSET), len)
        }
    }

    /// Writes `frame` into every slot the kernel does not hold, so that later frames only
    /// need their changing bytes written ([`TxRing::queue`]).
    pub fn prefill(&mut self, frame: &[u8]) {
        for i in 0..self.frame_nr {
            if self.status(i).load(Ordering::Acquire) == STATUS_AVAILABLE {
                let n = frame.len().min(self.frame_size - DATA_OFFSET);
                self.data(i)[..n].copy_from_slice(&frame[..n]);
            }
        }
    }

    /// Queues up to `n` frames of `len` bytes: `fill(slot, k)` writes the `k`-th frame of this
    /// call into its slot (which holds whatever the slot last carried). Stops early when the
    /// ring is full. Returns how many were queued; [`TxRing::flush`] sends them.
    pub fn queue(&mut self, n: usize, len: usize, mut fill: impl FnMut(&mut [u8], usize)) -> usize {
        let len = len.min(self.frame_size - DATA_OFFSET);
        let mut k = 0;
        while k < n && self.pending < self.frame_nr {
            let i = self.head;
            if self.status(i).load(Ordering::Acquire) != STATUS_AVAILABLE {
                break;
            }
            fill(&mut self.data(i)[..len], k);
            let hdr = self.map.wrapping_add(i * self.frame_size);
            // SAFETY: `hdr` is slot i's tpacket2_hdr inside the mapping, owned by user space
            // (AVAILABLE); tp_len is written before the release store of tp_status below.
            unsafe {
                let h = hdr.cast::<libc::tpacket2_hdr>();
                (*h).tp_len = len as u32;
            }
            self.status(i).store(STATUS_SEND_REQUEST, Ordering::Release);
            self.head = (self.head + 1) % self.frame_nr;
            self.pending += 1;
            self.requested += 1;
            k += 1;
        }
        k
    }

    /// Asks the kernel to transmit every queued frame, without waiting for their buffers to
    /// be freed (`MSG_DONTWAIT`: a shaper on this host that holds frames in its queue must
    /// not stall the sender; the ring and the socket's send buffer bound what is in flight).
    /// Returns the frames the kernel took in this call (their slots no longer read
    /// SEND_REQUEST); frames it could not take yet (a full send buffer: `EAGAIN`) stay queued
    /// for the next call.
    pub fn flush(&mut self) -> io::Result<Completed> {
        // SAFETY: send(2) with no buffer on a TX-ring socket: the kernel reads the ring.
        let rc =
            unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        let err = (rc < 0).then(io::Error::last_os_error);
        let taken = self.taken();
        self.reap();
        match err {
            Some(e) if taken == Completed::default() => Err(e),
            _ => Ok(taken),
        }
    }

    /// Counts the requested slots the kernel has taken, oldest first.
    fn taken(&mut self) -> Completed {
        let mut c = Completed::default();
        while self.requested > 0 {
            match self.status(self.req_tail).load(Ordering::Acquire) {
                STATUS_SEND_REQUEST => break,
                s if s & STATUS_WRONG_FORMAT != 0 => c.refused += 1,
                _ => c.sent += 1,
            }
            self.req_tail = (self.req_tail + 1) % self.frame_nr;
            self.requested -= 1;
        }
        c
    }

    /// Makes the slots whose frames the kernel has freed reusable, oldest first.
    pub fn reap(&mut self) {
        while self.pending > self.requested {
            let st = self.status(self.tail);
            match st.load(Ordering::Acquire) {
                STATUS_AVAILABLE => {}
                s if s & STATUS_WRONG_FORMAT != 0 => {
                    st.store(STATUS_AVAILABLE, Ordering::Release);
                }
                _ => break,
            }
            self.tail = (self.tail + 1) % self.frame_nr;
            self.pending -= 1;
        }
    }

    /// Frames queued and not yet taken by the kernel.
    pub fn unsent(&self) -> usize {
        self.requested
    }

    /// Frames whose slots the kernel has not freed yet (taken or not).
    pub fn in_ring(&self) -> usize {
        self.pending
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: `map`/`map_len` are the mapping made in `open`, unmapped only here; the
        // descriptor is closed after this (field drop), which the kernel allows.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_sizes_tile_blocks() {
        assert_eq!(DATA_OFFSET, 32);
        assert_eq!(slot_size(60), 128);
        assert_eq!(slot_size(1514), 2048);
        assert_eq!(slot_size(2016), 2048);
        assert_eq!(slot_size(2017), 4096);
        assert_eq!(slot_size(9014), 16384);
    }
}
