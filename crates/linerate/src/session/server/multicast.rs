//! The receiving end of a multicast test (feature `multicast`): the group joined on the
//! control connection's interface, and a thread that counts the datagrams (sequence,
//! duplicates, reordering, RFC 3550 jitter, one-way delay) until the client's
//! `mcast_stop`, then drains what is still in flight.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_stats::{JitterEstimator, SeqTracker};
use linerate_wire::control::ErrorCode;
use linerate_wire::multicast::{McastDelay, McastJoin, McastJoined, McastReport, MAX_DATAGRAM};
use linerate_wire::probe::{self, Probe};

use crate::sys;

/// After `mcast_stop`, datagrams still arrive (queues on the path): the receiver reads on
/// until it has been quiet this long...
const DRAIN_QUIET: Duration = Duration::from_millis(150);
/// ... or for this long at most.
const DRAIN_MAX: Duration = Duration::from_secs(2);

/// A group joined and its counting thread; dropping it stops the thread and leaves the
/// group (the socket closes).
pub struct McastReceiver {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<McastReport>>,
}

/// Joins the group of `j` on the interface holding `local` and starts counting.
pub fn start(
    j: &McastJoin,
    local: IpAddr,
) -> Result<(McastReceiver, McastJoined), (ErrorCode, String)> {
    let joined = sys::multicast::join(j.group, j.port, j.source, local).map_err(|e| {
        let src = j
            .source
            .map_or(String::new(), |s| format!(" from source {s}"));
        (
            ErrorCode::BadRequest,
            format!(
                "cannot join group {}{src} on port {} at {local}: {e}",
                j.group, j.port
            ),
        )
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (source, len) = (j.source, j.len);
    let socket = joined.socket;
    let thread = std::thread::Builder::new()
        .name("mcast-rx".into())
        .spawn(move || count(&socket, source, len, &flag))
        .map_err(|e| {
            (
                ErrorCode::Internal,
                format!("cannot start the receiver: {e}"),
            )
        })?;
    let answer = McastJoined {
        interface: joined.interface,
        boot_id: sys::host::boot_id(),
    };
    Ok((
        McastReceiver {
            stop,
            thread: Some(thread),
        },
        answer,
    ))
}

impl McastReceiver {
    /// Stops counting (after the drain) and returns what was counted.
    pub fn finish(mut self) -> McastReport {
        self.stop.store(true, SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => McastReport {
                warnings: vec!["the multicast receiver thread failed".into()],
                ..McastReport::default()
            },
        }
    }
}

impl Drop for McastReceiver {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The counters of one receiver.
struct Tally {
    seq: SeqTracker,
    jitter: JitterEstimator,
    delay: hdrhistogram::Histogram<u64>,
    bytes: u64,
    foreign: u64,
    sender: Option<IpAddr>,
    first_ns: Option<u64>,
    last_ns: u64,
}

impl Tally {
    fn on_datagram(&mut self, from: IpAddr, data: &[u8], rx_ns: u64) {
        let from = from.to_canonical();
        let sender = *self.sender.get_or_insert(from);
        let Ok(p) = Probe::parse(data) else {
            self.foreign = self.foreign.saturating_add(1);
            return;
        };
        if from != sender {
            self.foreign = self.foreign.saturating_add(1);
            return;
        }
        self.seq.on_packet(p.seq);
        self.jitter.on_packet(p.tx_ns, rx_ns);
        if let Some(d) = rx_ns.checked_sub(p.tx_ns) {
            let _ = self.delay.record(d.min(crate::rr::latency::MAX_LATENCY_NS));
        }
        self.bytes = self.bytes.saturating_add(data.len() as u64);
        self.first_ns.get_or_insert(rx_ns);
        self.last_ns = rx_ns;
    }

    fn report(&self) -> McastReport {
        let h = &self.delay;
        let delay = (!h.is_empty()).then(|| McastDelay {
            count: h.len(),
            mean_ns: h.mean(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
        });
        McastReport {
            datagrams: self.seq.received(),
            bytes: self.bytes,
            duplicates: self.seq.duplicates(),
            reordered: self.seq.reordered(),
            highest_seq: self.seq.highest(),
            foreign: self.foreign,
            jitter_ns: self.jitter.jitter_ns(),
            delay,
            span_ns: self.first_ns.map_or(0, |f| self.last_ns.saturating_sub(f)),
            warnings: Vec::new(),
        }
    }
}

/// Reads the group's datagrams until `stop` and the drain after it; `source` is the SSM
/// source (else the first sender is the one counted).
fn count(
    socket: &std::net::UdpSocket,
    source: Option<IpAddr>,
    len: u32,
    stop: &AtomicBool,
) -> McastReport {
    let mut t = Tally {
        seq: SeqTracker::new(),
        jitter: JitterEstimator::new(),
        delay: crate::rr::latency::new_histogram(),
        bytes: 0,
        foreign: 0,
        sender: source.map(|s| s.to_canonical()),
        first_ns: None,
        last_ns: 0,
    };
    let mut buf = vec![0u8; len.clamp(probe::LEN as u32, MAX_DATAGRAM) as usize + 1];
    let mut warnings = Vec::new();
    let mut drain: Option<(Instant, Instant)> = None;
    loop {
        let now = Instant::now();
        if stop.load(SeqCst) {
            let (since, quiet) = drain.get_or_insert((now, now));
            if now.duration_since(*since) >= DRAIN_MAX || now.duration_since(*quiet) >= DRAIN_QUIET
            {
                break;
            }
        }
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                let rx_ns = sys::system::monotonic_ns().unwrap_or(0);
                t.on_datagram(from.ip(), &buf[..n], rx_ns);
                if let Some((_, quiet)) = drain.as_mut() {
                    *quiet = Instant::now();
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                warnings.push(format!("the receiver's socket failed: {e}"));
                break;
            }
        }
    }
    let mut r = t.report();
    r.warnings = warnings;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(sender: Option<IpAddr>) -> Tally {
        Tally {
            seq: SeqTracker::new(),
            jitter: JitterEstimator::new(),
            delay: crate::rr::latency::new_histogram(),
            bytes: 0,
            foreign: 0,
            sender,
            first_ns: None,
            last_ns: 0,
        }
    }

    fn datagram(seq: u64, tx_ns: u64) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        Probe { seq, tx_ns }.emit(&mut b);
        b
    }

    #[test]
    fn counts_duplicates_reordering_and_foreign_sources() {
        let a: IpAddr = "198.18.0.1".parse().unwrap();
        let b: IpAddr = "198.18.0.2".parse().unwrap();
        let mut t = tally(None);
        for (seq, rx) in [(0, 1_000), (2, 3_000), (1, 3_500), (2, 4_000)] {
            t.on_datagram(a, &datagram(seq, seq * 1_000), rx);
        }
        t.on_datagram(b, &datagram(3, 0), 5_000);
        t.on_datagram(a, &[1, 2, 3], 6_000);
        let r = t.report();
        assert_eq!(r.datagrams, 4);
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.reordered, 1);
        assert_eq!(r.foreign, 2);
        assert_eq!(r.highest_seq, Some(2));
        assert_eq!(r.bytes, 4 * 64);
        assert_eq!(r.span_ns, 3_000);
        let d = r.delay.unwrap();
        assert_eq!(d.count, 4);
        assert_eq!(d.min_ns, 1_000);
    }

    #[test]
    fn an_ssm_source_is_the_only_one_counted() {
        let a: IpAddr = "198.18.0.1".parse().unwrap();
        let b: IpAddr = "198.18.0.2".parse().unwrap();
        let mut t = tally(Some(b));
        t.on_datagram(a, &datagram(0, 0), 1);
        let r = t.report();
        assert_eq!((r.datagrams, r.foreign), (0, 1));
        assert!(r.delay.is_none() && r.jitter_ns.is_none());
    }
}
