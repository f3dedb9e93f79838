//! Batched datagram I/O: `sendmmsg(2)` and `recvmmsg(2)` on connected UDP sockets.
//!
//! The only `unsafe` of the data path lives here. Invariants: every `iovec` points into a
//! buffer owned by the caller (send) or by [`RecvBatch`] (receive) that outlives the call, and
//! lengths never exceed those buffers; sockets are connected, so no address is passed.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Largest batch the kernel takes in one call (UIO_MAXIOV is 1024; we stay far below).
pub const MAX_BATCH: usize = 256;

/// One message header per iovec, each with a single-element scatter list and no address.
fn headers(iov: &mut [libc::iovec]) -> Vec<libc::mmsghdr> {
    iov.iter_mut()
        .map(|v| {
            // SAFETY: mmsghdr is a plain C struct for which all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect()
}

/// Sends each slice as one datagram with one `sendmmsg` call. Returns how many went out.
pub fn send_batch(fd: BorrowedFd<'_>, datagrams: &[&[u8]]) -> io::Result<usize> {
    let n = datagrams.len().min(MAX_BATCH);
    let mut iov: Vec<libc::iovec> = datagrams[..n]
        .iter()
        .map(|d| libc::iovec {
            iov_base: d.as_ptr() as *mut libc::c_void,
            iov_len: d.len(),
        })
        .collect();
    let mut msgs = headers(&mut iov);
    // SAFETY: `msgs` holds `n` initialised headers whose iovecs point into `datagrams`, which
    // the caller keeps alive for the duration of the call; the fd is a valid open socket.
    let rc = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Receive buffers for `recvmmsg`.
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
}

impl RecvBatch {
    /// `count` buffers of `size` bytes each.
    pub fn new(count: usize, size: usize) -> RecvBatch {
        let count = count.clamp(1, MAX_BATCH);
        RecvBatch {
            bufs: vec![vec![0u8; size.max(1)]; count],
            lens: vec![0; count],
        }
    }

    /// Receives up to the batch size, blocking only for the first datagram
    /// (`MSG_WAITFORONE`; the socket's SO_RCVTIMEO bounds the wait). Returns the count.
    pub fn recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        let mut iov: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        let mut msgs = headers(&mut iov);
        // SAFETY: each header's iovec points into a buffer of `self.bufs` of the stated length,
        // which lives as long as `self`; a null timeout is allowed.
        let rc = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                // `as _`: the flags are a c_int in glibc's prototype, a c_uint in musl's.
                libc::MSG_WAITFORONE as _,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = rc as usize;
        for (len, m) in self.lens.iter_mut().zip(&msgs).take(n) {
            *len = m.msg_len as usize;
        }
        Ok(n)
    }

    /// The `i`-th received message of the last call.
    pub fn msg(&self, i: usize) -> &[u8] {
        let len = self.lens[i].min(self.bufs[i].len());
        &self.bufs[i][..len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn batch_round_trip_on_loopback() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.connect(tx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let payloads: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 20 + i as usize]).collect();
        let slices: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(send_batch(tx.as_fd(), &slices).unwrap(), 5);
        let mut batch = RecvBatch::new(8, 2048);
        let mut got = Vec::new();
        while got.len() < 5 {
            let n = batch.recv(rx.as_fd()).unwrap();
            for i in 0..n {
                got.push(batch.msg(i).to_vec());
            }
        }
        assert_eq!(got, payloads);
    }
}
