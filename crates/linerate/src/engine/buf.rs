//! Page-aligned I/O buffers for the bulk paths (TCP send and receive).
//!
//! Where a buffer starts decides what the kernel's copy to or from it costs. A `Vec<u8>` of
//! 128 KiB comes from `mmap` through glibc, 16 bytes past a page boundary, and on this
//! project's AMD EPYC machines the kernel's `rep movsb` copy into a destination 16 bytes
//! off a 64-byte line ran at a fraction of its speed: `linerate tcp -R` (the client
//! receiving, pinned to CPUs 0,1) moved 15-22 Gbit/s with `_copy_to_iter` at 60-75 % of the
//! receiving CPU, the same test into a page-aligned buffer 27-29 Gbit/s, as iperf3 -R
//! (whose buffer is a page-aligned mapping). Where a heap buffer lands depends on the
//! process's history (a long-running server's differs from a new client's), so every bulk
//! buffer is aligned to a page instead of to luck.

use std::ops::{Deref, DerefMut};

/// Where a [`PageBuf`] starts: a page, so a line (64 bytes) too.
pub const ALIGN: usize = 4096;

/// A zero-filled byte buffer that starts on a page boundary.
pub struct PageBuf {
    store: Vec<u8>,
    off: usize,
    len: usize,
}

impl PageBuf {
    /// `len` zero bytes, the first on a page boundary.
    pub fn zeroed(len: usize) -> PageBuf {
        let store = vec![0u8; len + ALIGN - 1];
        // `align_offset` may give usize::MAX when it cannot tell: then the buffer is
        // unaligned, not wrong.
        let off = match store.as_ptr().align_offset(ALIGN) {
            off if off < ALIGN => off,
            _ => 0,
        };
        PageBuf { store, off, len }
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.store[self.off..self.off + self.len]
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.store[self.off..self.off + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_page_is_zeroed_and_as_long_as_asked() {
        for len in [1, 100, 4096, 128 * 1024 + 3] {
            let mut b = PageBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0, "{len}");
            assert!(b.iter().all(|&x| x == 0));
            b[len - 1] = 7;
            assert_eq!(b[len - 1], 7);
        }
    }
}
