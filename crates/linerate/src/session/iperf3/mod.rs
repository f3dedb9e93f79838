//! What both iperf3 roles share beyond the wire format (`linerate_wire::iperf3`): timed
//! reads of state bytes and capped JSON messages on the control connection, bounded writes,
//! and the drain of a receiving stream after the test's end. The server's sessions
//! ([`server`]) and the client ([`client`]) both use them, so that every read
//! from an iperf3 peer has a deadline and every length it announces a cap.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use linerate_wire::iperf3;

pub mod client;
pub mod server;

/// Longest a write on an iperf3 control connection may block.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// After the test's end, a receiving stream reads what is still in flight until it has been
/// quiet this long (or the peer closed), at most [`DRAIN_MAX`].
pub const DRAIN_QUIET: Duration = Duration::from_millis(100);
/// The longest drain.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);

/// Reads `buf.len()` bytes by `deadline`: a time-out is `TimedOut`, a close inside the
/// bytes `UnexpectedEof`.
pub fn read_by(ctl: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        ctl.set_read_timeout(Some(left))?;
        match ctl.read(&mut buf[at..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::ErrorKind::TimedOut.into())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A length-prefixed JSON message of at most `max` bytes (0 refused), by `deadline`.
pub fn read_json(
    ctl: &mut TcpStream,
    max: u32,
    deadline: Instant,
    what: &str,
) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 4];
    read_by(ctl, &mut len, deadline).map_err(|e| format!("no {what}: {}", io_why(&e)))?;
    let n = iperf3::json_len(len, max).map_err(|e| format!("{what}: {e}"))?;
    let mut body = vec![0u8; n as usize];
    read_by(ctl, &mut body, deadline).map_err(|e| format!("{what}: {}", io_why(&e)))?;
    Ok(body)
}

/// Writes all of `b` within [`WRITE_TIMEOUT`].
pub fn write_all(ctl: &mut TcpStream, b: &[u8]) -> io::Result<()> {
    ctl.set_write_timeout(Some(WRITE_TIMEOUT))?;
    ctl.write_all(b)
}

/// An I/O error of a timed read, in words.
pub fn io_why(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => "timed out".into(),
        io::ErrorKind::UnexpectedEof => "the connection closed".into(),
        _ => e.to_string(),
    }
}

/// The drain of a receiving stream's loop: once the test is stopped, reads go on with a
/// [`DRAIN_QUIET`] time-out until one times out (nothing more in flight) or [`DRAIN_MAX`]
/// has passed.
#[derive(Debug, Default)]
pub struct Drain {
    since: Option<Instant>,
}

impl Drain {
    /// Called every turn of the loop before a read: starts the drain when `stopped`
    /// (`set_timeout` gets [`DRAIN_QUIET`] for the socket), and says whether it is over by
    /// time.
    pub fn over(&mut self, stopped: bool, set_timeout: impl FnOnce(Duration)) -> bool {
        if self.since.is_none() && stopped {
            self.since = Some(Instant::now());
            set_timeout(DRAIN_QUIET);
        }
        self.since.is_some_and(|d| d.elapsed() > DRAIN_MAX)
    }

    /// A read timed out: whether that ends the loop (it does while draining).
    pub fn quiet(&self) -> bool {
        self.since.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_drain_starts_at_the_stop_and_ends_quiet_or_late() {
        let mut d = Drain::default();
        let mut set = None;
        assert!(!d.over(false, |t| set = Some(t)));
        assert!(!d.quiet());
        assert_eq!(set, None);
        assert!(!d.over(true, |t| set = Some(t)));
        assert_eq!(set, Some(DRAIN_QUIET));
        assert!(d.quiet());
        d.since = Instant::now().checked_sub(DRAIN_MAX + Duration::from_millis(1));
        assert!(d.over(true, |_| {}));
    }

    #[test]
    fn reads_end_at_their_deadline_and_lengths_at_their_cap() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let t0 = Instant::now();
        let mut b = [0u8; 1];
        let e = read_by(&mut s, &mut b, t0 + Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(t0.elapsed() < Duration::from_secs(5));
        c.write_all(&u32::MAX.to_be_bytes()).unwrap();
        let e = read_json(
            &mut s,
            1024,
            Instant::now() + Duration::from_secs(5),
            "results",
        )
        .unwrap_err();
        assert!(e.contains("results"), "{e}");
        drop(c);
        let e = read_json(
            &mut s,
            1024,
            Instant::now() + Duration::from_secs(5),
            "results",
        )
        .unwrap_err();
        assert!(e.contains("closed"), "{e}");
    }
}
