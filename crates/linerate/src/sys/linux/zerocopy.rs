//! The system calls of the copy-free data paths: `SO_ZEROCOPY` and `MSG_ZEROCOPY` sends with
//! their completions from the socket's error queue, `sendfile(2)` from a memfd, and TCP
//! receives with `MSG_TRUNC` that discard the data in the kernel.
//!
//! The kernel's side (Documentation/networking/msg_zerocopy.rst): every send call with
//! `MSG_ZEROCOPY` that takes at least one byte gets the next number of a 32-bit counter per
//! socket, starting at 0; when the kernel is done with the pages of a range of those calls it
//! queues one `sock_extended_err` with `ee_origin == SO_EE_ORIGIN_ZEROCOPY`, `ee_info` the
//! first and `ee_data` the last number of the range, and `ee_code` carrying
//! `SO_EE_CODE_ZEROCOPY_COPIED` when it copied the data after all. The queue is read with
//! `recvmsg(MSG_ERRQUEUE)`; `poll` reports it as `POLLERR`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `SO_ZEROCOPY` (asm-generic/socket.h; not in the libc crate).
const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_EE_ORIGIN_ZEROCOPY` (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` (linux/errqueue.h).
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

pub use crate::sys::zc::Completion;

/// Turns `SO_ZEROCOPY` on. Fails with `ENOPROTOOPT` on kernels before 4.14.
pub fn enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `fd` is a valid open socket for the borrow; the option value is a c_int that
    // lives across the call and its exact size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ZEROCOPY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One `send(MSG_ZEROCOPY | MSG_NOSIGNAL)`. The kernel may keep referring to `buf`'s pages
/// after the call returns, until the completion of this send arrives: the caller must not
/// write to `buf` until then.
pub fn send_zerocopy(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable slice for its length; the kernel only reads it
    // (pinning its pages; the pages stay valid memory as long as they are pinned, even if
    // freed by us, and the caller does not write to them before the completion).
    let r = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_ZEROCOPY | libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// Reads every notification now on the socket's error queue without waiting, into `out`.
/// Returns how many messages were read. Messages of another origin (ICMP errors) are
/// skipped.
pub fn read_completions(fd: BorrowedFd<'_>, out: &mut Vec<Completion>) -> io::Result<u64> {
    let mut msgs = 0u64;
    loop {
        // Room for one cmsg with a sock_extended_err and an address after it.
        let mut control = [0u64; 16];
        // SAFETY: an all-zero msghdr is a valid value (null pointers, zero lengths).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: `msg` points at `control`, which outlives the call; no data iovecs.
        let r = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(msgs);
            }
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        msgs += 1;
        // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/NXTHDR stay within
        // msg_control/msg_controllen, which the kernel set to the bytes it wrote.
        let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cm.is_null() {
            // SAFETY: `cm` is non-null and points inside `control` (see above).
            let h = unsafe { &*cm };
            let is_err = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
            let need = std::mem::size_of::<libc::sock_extended_err>();
            if is_err && (h.cmsg_len as usize) >= need {
                // SAFETY: the cmsg carries a sock_extended_err (checked level, type and
                // length); read_unaligned because the data need not be aligned for it.
                let ee: libc::sock_extended_err = unsafe {
                    std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast::<libc::sock_extended_err>())
                };
                if ee.ee_errno == 0 && ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                    out.push(Completion {
                        lo: ee.ee_info,
                        hi: ee.ee_data,
                        copied: ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                    });
                }
            }
            // SAFETY: as for CMSG_FIRSTHDR; returns null past the last header.
            cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
        }
    }
}

/// Waits up to `timeout_ms` for the error queue (`POLLERR`) or room to send (`POLLOUT`,
/// when `want_out`). Returns whether the error queue has something.
pub fn wait(fd: BorrowedFd<'_>, want_out: bool, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: if want_out { libc::POLLOUT } else { 0 },
        revents: 0,
    };
    // SAFETY: one valid pollfd, count 1.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(p.revents & libc::POLLERR != 0)
}

/// A memfd of `len` bytes holding `fill`'s pattern, for `sendfile`.
pub fn memfd_with(len: usize, fill: impl Fn(&mut [u8])) -> io::Result<OwnedFd> {
    let name = c"linerate-sendfile";
    // SAFETY: a valid NUL-terminated name; the flags are defined.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut data = vec![0u8; len];
    fill(&mut data);
    let mut file = std::fs::File::from(owned);
    std::io::Write::write_all(&mut file, &data)?;
    Ok(OwnedFd::from(file))
}

/// One `sendfile(2)` of `count` bytes of `file` from offset 0 to the socket.
pub fn sendfile(sock: BorrowedFd<'_>, file: BorrowedFd<'_>, count: usize) -> io::Result<usize> {
    let mut off: libc::off_t = 0;
    // SAFETY: both descriptors are valid for the borrows; `off` outlives the call.
    let r = unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut off, count) };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// One `recv(MSG_TRUNC)` with no buffer: the kernel discards up to `max` bytes of the
/// stream and returns how many. A kernel that does not discard TCP data this way fails
/// with `EFAULT` (it tried to copy to the null buffer).
pub fn recv_trunc(fd: BorrowedFd<'_>, max: usize) -> io::Result<usize> {
    // SAFETY: with MSG_TRUNC on TCP the kernel never writes to the buffer; a kernel that
    // would gets EFAULT from the null pointer instead of writing anywhere.
    let r = unsafe { libc::recv(fd.as_raw_fd(), std::ptr::null_mut(), max, libc::MSG_TRUNC) };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// Whether this kernel can do what `send` and `recv` ask, tried on a TCP connection over
/// 127.0.0.1 that lives for the call: `SO_ZEROCOPY`, memfd and `sendfile`, and `MSG_TRUNC`
/// on a TCP receive. The error says what is missing, in words for the user.
pub fn check_support(zerocopy: bool, sendfile_: bool, trunc: bool) -> Result<(), String> {
    if !(zerocopy || sendfile_ || trunc) {
        return Ok(());
    }
    let pair = || -> io::Result<(std::net::TcpStream, std::net::TcpStream)> {
        let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        let a = std::net::TcpStream::connect(l.local_addr()?)?;
        let (b, _) = l.accept()?;
        Ok((a, b))
    };
    let (a, b) = pair()
        .map_err(|e| format!("cannot open a loopback TCP connection to check the kernel ({e})"))?;
    use std::os::fd::AsFd;
    if zerocopy {
        enable(a.as_fd()).map_err(|e| {
            format!("--zerocopy: this kernel refuses SO_ZEROCOPY ({e}; it needs Linux 4.14 or later): drop --zerocopy")
        })?;
    }
    if sendfile_ {
        let f = memfd_with(16, |_| {})
            .map_err(|e| format!("--sendfile: no memfd ({e}): drop --sendfile"))?;
        sendfile(a.as_fd(), f.as_fd(), 16).map_err(|e| {
            format!("--sendfile: sendfile(2) to a TCP socket failed ({e}): drop --sendfile")
        })?;
    } else {
        std::io::Write::write_all(&mut &a, &[0u8; 16])
            .map_err(|e| format!("cannot check the kernel: {e}"))?;
    }
    if trunc {
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .map_err(|e| format!("cannot check the kernel: {e}"))?;
        match recv_trunc(b.as_fd(), 16) {
            Ok(n) if n > 0 => {}
            Ok(_) => return Err("--no-rx-copy: the kernel's check connection ended early".into()),
            Err(e) if e.raw_os_error() == Some(libc::EFAULT) => {
                return Err("--no-rx-copy: this kernel does not discard TCP data with recv(MSG_TRUNC): drop --no-rx-copy".into())
            }
            Err(e) => return Err(format!("--no-rx-copy: recv(MSG_TRUNC) failed ({e}): drop --no-rx-copy")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_counts_its_sends_across_the_wrap() {
        let c = Completion {
            lo: 5,
            hi: 9,
            copied: false,
        };
        assert_eq!(c.len(), 5);
        let w = Completion {
            lo: u32::MAX - 1,
            hi: 1,
            copied: true,
        };
        assert_eq!(w.len(), 4);
    }

    #[test]
    fn this_kernel_has_every_mode() {
        // Linux 4.14+ (CI's and this machine's kernels are far newer).
        assert_eq!(check_support(true, true, true), Ok(()));
    }
}
