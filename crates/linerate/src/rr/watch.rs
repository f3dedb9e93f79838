//! TCP_CRR waits without socket time-outs.
//!
//! A blocking call with a time-out (`SO_RCVTIMEO`, `SO_SNDTIMEO`) arms a kernel timer each
//! time it sleeps, and TCP_CRR sleeps two or three times per transaction: in `accept`, in
//! the read of the hello, in the reads of the response and of the server's FIN. So the
//! TCP_CRR loops block without time-outs, and one watchdog thread per engine
//! ([`Watchdog`]) ends their waits instead: it shuts down the connection a loop waits on
//! when the test stops or when the wait has passed its deadline. netperf's TCP_CRR blocks
//! the same way (it ends its test with a signal).
//!
//! A loop publishes the connection it is about to wait on ([`Watch::hold`]) and withdraws
//! it ([`Held`]'s drop) before the socket is closed, both under the watch's lock, and the
//! watchdog shuts a connection down only under that lock: so the descriptor it shuts down
//! is always the connection's, never a reused number. A loop that publishes after the
//! watchdog's last look at the stop flag sees the flag itself ([`Watch::hold`] checks it
//! after publishing).

use crate::sys::net::{self, AsSock, RawSock};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the watchdog looks: the most a stop or a deadline waits for it.
pub const TICK: Duration = Duration::from_millis(20);

/// The connection one loop waits on, if any.
#[derive(Debug, Default)]
pub struct Watch {
    slot: Mutex<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// The published connection and its deadline.
    held: Option<(RawSock, Option<Instant>)>,
    /// The watchdog shut the published connection down at its deadline.
    cut: bool,
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // No code under this lock panics; a poisoned lock still holds a valid slot.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes `s` as the connection this loop waits on, to be shut down at `deadline`
    /// (if any) or at the test's stop. `None` if the test is stopping: then the caller must
    /// not wait on `s`.
    pub fn hold<'a, S: AsSock>(
        &'a self,
        s: &'a S,
        deadline: Option<Instant>,
        stop: &AtomicBool,
    ) -> Option<Held<'a>> {
        *self.lock() = Slot {
            held: Some((s.raw_sock(), deadline)),
            cut: false,
        };
        let held = Held { watch: self };
        // After publishing: a watchdog that saw the flag before this look also sees the
        // connection (the lock orders them), so no wait is left without an end. When
        // stopping, `held` is dropped here, which withdraws the connection.
        (!stop.load(Relaxed)).then_some(held)
    }

    /// Shuts down the published connection if the test is stopping or its deadline has
    /// passed at `now`.
    fn end_if_due(&self, stopping: bool, now: Instant) {
        let mut slot = self.lock();
        if let Some((fd, deadline)) = slot.held {
            let late = deadline.is_some_and(|d| now >= d);
            if stopping || late {
                // The descriptor is open: its loop withdraws it under this lock before
                // closing it. A failure (the peer already gone) changes nothing.
                let _ = net::shutdown_raw(fd, std::net::Shutdown::Both);
                slot.cut |= late && !stopping;
                slot.held = None;
            }
        }
    }
}

/// A published connection; dropping it withdraws the connection. [`Watch::hold`] ties its
/// lifetime to the socket's borrow as well as the watch's, so the socket cannot be closed
/// first.
#[must_use]
pub struct Held<'a> {
    watch: &'a Watch,
}

impl Held<'_> {
    /// Sets a new deadline for the rest of the wait (`None`: only the stop ends it).
    pub fn deadline(&self, deadline: Option<Instant>) {
        let mut slot = self.watch.lock();
        if let Some((_, d)) = slot.held.as_mut() {
            *d = deadline;
        }
    }

    /// True if the watchdog shut the connection down at its deadline (not at the stop).
    pub fn was_cut(&self) -> bool {
        self.watch.lock().cut
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.watch.lock().held = None;
    }
}

/// The thread that ends the waits of one engine's TCP_CRR loops.
pub struct Watchdog {
    quit: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog over `watches`; `stop` is the loops' stop flag.
    pub fn start(watches: Vec<Arc<Watch>>, stop: Arc<AtomicBool>) -> io::Result<Watchdog> {
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let handle = std::thread::Builder::new()
            .name("lr-rr-watch".into())
            .spawn(move || {
                while !q.load(Relaxed) {
                    std::thread::sleep(TICK);
                    let stopping = stop.load(Relaxed);
                    let now = Instant::now();
                    for w in &watches {
                        w.end_if_due(stopping, now);
                    }
                }
            })?;
        Ok(Watchdog {
            quit,
            handle: Some(handle),
        })
    }

    /// Ends the watchdog, once the loops it watched have ended.
    pub fn join(mut self) {
        self.quit.store(true, Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.quit.store(true, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    /// A read with no time-out ends at its deadline (0 bytes, marked as cut), and another
    /// at the stop (not marked); a withdrawn connection is left alone.
    #[test]
    fn waits_end_at_their_deadline_or_at_the_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b) = (Arc::new(Watch::default()), Arc::new(Watch::default()));
        let dog = Watchdog::start(vec![a.clone(), b.clone()], stop.clone()).unwrap();

        let (c1, _peer1) = pair();
        let t0 = Instant::now();
        let held = a
            .hold(&c1, Some(t0 + Duration::from_millis(100)), &stop)
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!((&c1).read(&mut buf).unwrap(), 0);
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(100), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        assert!(held.was_cut());
        drop(held);

        // Withdrawn: the watchdog leaves it open, even past the deadline it had.
        let (c2, mut peer2) = pair();
        drop(b.hold(&c2, Some(Instant::now()), &stop).unwrap());
        std::thread::sleep(TICK * 3);
        std::io::Write::write_all(&mut peer2, b"x").unwrap();
        assert_eq!((&c2).read(&mut buf).unwrap(), 1);

        // No deadline: only the stop ends it, and that is no cut.
        let waiter = {
            let (b, stop) = (b.clone(), stop.clone());
            std::thread::spawn(move || {
                let held = b.hold(&c2, None, &stop).unwrap();
                let n = (&c2).read(&mut [0u8; 8]).unwrap();
                (n, held.was_cut())
            })
        };
        std::thread::sleep(TICK * 3);
        assert!(!waiter.is_finished());
        stop.store(true, Relaxed);
        assert_eq!(waiter.join().unwrap(), (0, false));
        // Once stopping, nothing more is held, and the refused connection is withdrawn.
        assert!(a.hold(&c1, None, &stop).is_none());
        assert!(a.lock().held.is_none());
        dog.join();
    }
}
