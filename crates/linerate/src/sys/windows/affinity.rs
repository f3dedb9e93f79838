//! Pinning the calling thread to one CPU (SetThreadAffinityMask).

use std::io;

use windows_sys::Win32::System::Threading::{GetCurrentThread, SetThreadAffinityMask};

/// Restricts the calling thread to CPU `cpu` (of its processor group: the first 64).
pub fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let bits = usize::BITS;
    if cpu >= bits {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot pin to CPU {cpu}: a thread's affinity mask holds CPUs 0-{}",
                bits - 1
            ),
        ));
    }
    // SAFETY: the pseudo-handle of the calling thread and a mask; returns the old mask or 0.
    if unsafe { SetThreadAffinityMask(GetCurrentThread(), 1usize << cpu) } == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot pin to CPU {cpu}: {e}"),
        ));
    }
    Ok(())
}
