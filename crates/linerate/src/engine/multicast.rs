//! The sender of a multicast test: probe-headed datagrams to the group, paced to the
//! plan's rate for its duration (`Pacer`, as the UDP stream senders), on a socket with the
//! plan's TTL and interface.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

use linerate_wire::probe::Probe;

use super::pacing::{self, Pacer};
use crate::model::multicast::McastSender;
use crate::sys;

/// Sends `len`-byte datagrams to `to` at `rate_bps` for `duration`, or until `interrupt`.
pub fn send(
    sock: &UdpSocket,
    to: SocketAddr,
    len: u32,
    rate_bps: u64,
    duration: Duration,
    interrupt: &AtomicBool,
) -> McastSender {
    let now_ns = || sys::system::monotonic_ns().unwrap_or(0);
    let mut buf = vec![0u8; len as usize];
    let mut pacer = Pacer::new(rate_bps, now_ns());
    let mut out = McastSender::default();
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < duration && !interrupt.load(SeqCst) {
        pacing::wait(pacer.delay(now_ns()));
        let tx_ns = now_ns();
        Probe {
            seq: out.datagrams,
            tx_ns,
        }
        .emit(&mut buf);
        match sock.send_to(&buf, to) {
            Ok(n) => {
                out.datagrams += 1;
                out.bytes = out.bytes.saturating_add(n as u64);
                last = Instant::now();
            }
            // A full queue or a refused route: counted, not sent; the schedule goes on.
            Err(_) => out.send_errors = out.send_errors.saturating_add(1),
        }
        pacer.sent(u64::from(len));
    }
    out.elapsed_s = last.duration_since(start).as_secs_f64();
    out.throughput_bps = (out.elapsed_s > 0.0).then(|| out.bytes as f64 * 8.0 / out.elapsed_s);
    out
}
