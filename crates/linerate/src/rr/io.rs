//! Socket helpers both ends' RR loops use: time-out errors (the stream loops' rule), the
//! payload pattern, and whole writes and reads that still see the stop flag.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::LoopCtx;
pub(crate) use crate::engine::stream::is_timeout;

/// The read time-out of a loop that would block with none: none where a shutdown ends a
/// blocked read ([`crate::sys::net::SHUTDOWN_WAKES`]), [`super::POLL`] where it does not,
/// so that the loop still sees its flags.
pub fn idle_read_timeout() -> Option<std::time::Duration> {
    (!crate::sys::net::SHUTDOWN_WAKES).then_some(super::POLL)
}

/// Fills `buf` with a fixed pattern (never all zeros, so compression on a path shows).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes all of `buf`, counting each write, retrying on time-outs until the waits are cut
/// ([`LoopCtx::cut`]); false if cut first.
pub fn write_all(ctx: &LoopCtx, mut w: &TcpStream, buf: &[u8]) -> io::Result<bool> {
    let mut off = 0;
    while off < buf.len() {
        if ctx.cut.load(Relaxed) {
            return Ok(false);
        }
        match w.write(&buf[off..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "connection closed",
                ))
            }
            Ok(n) => {
                ctx.wrote(n);
                off += n;
            }
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Writes all of `buf` on a new TCP_CRR connection, counting each write: first without
/// waiting, since a message that fits the empty send buffer of a new connection then needs
/// no write time-out (a system call per transaction); what is left, with [`POLL`] write
/// time-outs as [`write_all`]. False if cut first.
pub fn write_all_now_first(ctx: &LoopCtx, s: &TcpStream, buf: &[u8]) -> io::Result<bool> {
    let sent = send_now(s, buf)?;
    ctx.wrote(sent);
    if sent == buf.len() {
        return Ok(true);
    }
    s.set_write_timeout(Some(super::POLL))?;
    write_all(ctx, s, &buf[sent..])
}

/// Writes what of `buf` fits the socket's send buffer now, without waiting: the number of
/// bytes written, 0 when none fit.
fn send_now(s: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    use crate::sys::net::{self, AsSock};
    match net::send_now(s.as_sock(), buf) {
        Ok(k) => Ok(k),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(e),
    }
}

/// Reads `n` bytes into `rbuf` (reused: pieces of at most its length, each read counted);
/// false if the waits are cut ([`LoopCtx::cut`]) or past `deadline` first. A peer that
/// closes before is an `UnexpectedEof` error saying `closed_early`.
pub fn read_n(
    ctx: &LoopCtx,
    mut r: &TcpStream,
    n: usize,
    rbuf: &mut [u8],
    deadline: Option<Instant>,
    closed_early: &str,
) -> io::Result<bool> {
    let mut got = 0;
    while got < n {
        if ctx.cut.load(Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
        let want = (n - got).min(rbuf.len());
        match r.read(&mut rbuf[..want]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, closed_early)),
            Ok(k) => {
                ctx.read(k);
                got += k;
            }
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_repeats_every_251_bytes_and_time_outs_are_retried() {
        let p = pattern(600);
        assert_eq!(
            (p[0], p[250], p[251], p[599]),
            (0, 250, 0, (599 % 251) as u8)
        );
        assert!(is_timeout(&io::Error::from(io::ErrorKind::WouldBlock)));
        assert!(!is_timeout(&io::Error::from(
            io::ErrorKind::ConnectionReset
        )));
    }
}
