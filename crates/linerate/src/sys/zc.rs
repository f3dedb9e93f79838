//! What MSG_ZEROCOPY's completions say (sys::zerocopy, Linux's): plain data, the same on
//! every OS, so the engine's zerocopy pool builds everywhere.

/// One completion: the sends numbered `lo..=hi` are done; `copied` when the kernel copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// First send of the range.
    pub lo: u32,
    /// Last send of the range (inclusive).
    pub hi: u32,
    /// `SO_EE_CODE_ZEROCOPY_COPIED` on Linux: the kernel copied the data after all.
    pub copied: bool,
}

impl Completion {
    /// Sends in the range (the counter wraps at 2^32).
    pub fn len(&self) -> u64 {
        u64::from(self.hi.wrapping_sub(self.lo)) + 1
    }

    /// Never empty: a range holds at least one send.
    pub fn is_empty(&self) -> bool {
        false
    }
}
