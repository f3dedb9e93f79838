//! Batched datagram I/O with the names of Linux's sendmmsg/recvmmsg: Winsock has no batch
//! call, so each datagram is one send or receive.

use std::io::{self, Read};

use super::net::{self, Recv, Sock};

/// Most datagrams one call handles.
pub const MAX_BATCH: usize = 256;

/// Sends each slice as one datagram. Returns how many went out (an error only when none
/// did).
pub fn send_batch(s: Sock<'_>, datagrams: &[&[u8]]) -> io::Result<usize> {
    let sock = socket2::SockRef::from(&s);
    let mut n = 0;
    for d in datagrams.iter().take(MAX_BATCH) {
        match sock.send(d) {
            Ok(_) => n += 1,
            Err(_) if n > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Receive buffers.
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

    /// Receives up to the batch size, waiting only for the first datagram (the socket's
    /// read time-out bounds the wait). Returns the count.
    pub fn recv(&mut self, s: Sock<'_>) -> io::Result<usize> {
        let sock = socket2::SockRef::from(&s);
        let mut n = 0;
        for (buf, len) in self.bufs.iter_mut().zip(self.lens.iter_mut()) {
            let got = if n == 0 {
                (&*sock).read(buf)
            } else {
                net::recv(s, buf, Recv::Now)
            };
            match got {
                Ok(k) => {
                    *len = k;
                    n += 1;
                }
                Err(_) if n > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// The `i`-th received message of the last call.
    pub fn msg(&self, i: usize) -> &[u8] {
        let len = self.lens[i].min(self.bufs[i].len());
        &self.bufs[i][..len]
    }
}
