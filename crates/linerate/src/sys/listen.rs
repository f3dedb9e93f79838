//! The listener of one TCP_CRR test (feature `crr_port`): a port of the test's own on the
//! server's address, with `TCP_DEFER_ACCEPT`, so that a connection is handed to `accept`
//! only once its first bytes (the stream hello and the request) have arrived: the
//! responder that accepts it then reads them without waiting.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// Connections waiting to be accepted, at most.
const BACKLOG: i32 = 1024;

/// Seconds a connection may stay silent before it is accepted anyway (the kernel then
/// hands it over on the client's next ACK, and the responder's read time-out decides).
const DEFER_SECS: libc::c_int = 1;

/// A listening TCP socket on `addr` (port 0: the kernel picks one) that accepts only
/// connections whose first data has arrived.
pub fn deferred_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(false)?;
    }
    s.bind(&addr.into())?;
    defer_accept(s.as_fd(), DEFER_SECS)?;
    s.listen(BACKLOG)?;
    Ok(s.into())
}

/// Sets `TCP_DEFER_ACCEPT` to `secs`.
fn defer_accept(fd: BorrowedFd<'_>, secs: libc::c_int) -> io::Result<()> {
    // SAFETY: `fd` is a valid open socket for the borrow; the option value is a c_int that
    // lives across the call and its exact size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&secs as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    #[test]
    fn a_connection_is_accepted_once_its_first_bytes_are_there() {
        let l = deferred_listener("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        l.set_nonblocking(true).unwrap();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        // Connected, but silent: not yet acceptable.
        assert_eq!(
            l.accept().map(|_| ()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        c.write_all(b"hello").unwrap();
        let mut s = None;
        for _ in 0..100 {
            if let Ok((a, _)) = l.accept() {
                s = Some(a);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut s = s.expect("accepted once the data came");
        s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
    }
}
