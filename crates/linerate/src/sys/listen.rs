//! The listener of one TCP_CRR test (feature `crr_port`): a port of the test's own on the
//! server's address, carrying the test's socket options and a read time-out, which every
//! connection it accepts inherits from it (Linux copies the listener's socket into each
//! child). So a connection needs no system call for its options, and its options are in
//! place for the handshake (the window scale follows the receive buffer, the MSS option
//! follows TCP_MAXSEG), where setting them after `accept` would be too late.
//!
//! No `TCP_DEFER_ACCEPT`: it wakes the responder only once the request has arrived, so the
//! wake-up of an idle CPU lies on every transaction's path; without it the responder wakes
//! on the handshake's last ACK and is back in `recv` as the request comes (on loopback,
//! CPUs 0,1: about 11% more TCP_CRR transactions per second).

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, SockRef, Socket, Type};

use super::sockets::{self, SockOpts};

/// Connections waiting to be accepted, at most.
const BACKLOG: i32 = 1024;

/// A listening TCP socket on `addr` (port 0: the kernel picks one) with `opts`, which its
/// connections inherit. It has no time-out: a blocking `accept` arms no kernel timer, and
/// whoever ends the test shuts the listener down, which ends every `accept` on it (EINVAL).
/// Its connections have none either; a reader that may wait sets its own.
pub fn test_listener(addr: SocketAddr, opts: &SockOpts) -> io::Result<TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(false)?;
    }
    sockets::apply(&SockRef::from(&s), opts, true, addr.is_ipv6())?;
    s.bind(&addr.into())?;
    s.listen(BACKLOG)?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    #[test]
    fn accepted_connections_inherit_the_options_but_no_time_out() {
        let opts = SockOpts {
            sndbuf: Some(48 * 1024),
            rcvbuf: Some(40 * 1024),
            nodelay: true,
            mss: Some(1000),
            congestion: Some("cubic".into()),
            tos: Some(0x20),
        };
        let l = test_listener("127.0.0.1:0".parse().unwrap(), &opts).unwrap();
        let addr = l.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let r = SockRef::from(&s);
        assert!(r.nodelay().unwrap());
        assert_eq!(s.read_timeout().unwrap(), None);
        assert_eq!(SockRef::from(&l).read_timeout().unwrap(), None);
        // The kernel doubles the buffer sizes asked for.
        assert_eq!(r.send_buffer_size().unwrap(), 2 * 48 * 1024);
        assert_eq!(r.recv_buffer_size().unwrap(), 2 * 40 * 1024);
        assert_eq!(r.tos().unwrap(), 0x20);
        let cc = r.tcp_congestion().unwrap();
        assert_eq!(cc.split(|&b| b == 0).next(), Some(&b"cubic"[..]));
        assert!(r.mss().unwrap() <= 1000, "{}", r.mss().unwrap());
        c.write_all(b"hello").unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
    }

    /// With no time-out, what ends a blocked `accept` is the listener's shutdown: EINVAL,
    /// at once, and for an `accept` that comes after it too.
    #[test]
    fn a_shutdown_ends_a_blocked_accept() {
        use crate::sys::net::{self, errno, AsSock};
        let l = std::sync::Arc::new(
            test_listener("127.0.0.1:0".parse().unwrap(), &SockOpts::default()).unwrap(),
        );
        let waiting = {
            let l = l.clone();
            std::thread::spawn(move || l.accept().map(|_| ()))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished());
        net::shutdown(l.as_sock(), std::net::Shutdown::Read).unwrap();
        let e = waiting.join().unwrap().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}");
        let e = l.accept().map(|_| ()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}");
    }
}
