//! Bounceback (iperf2's `--bounceback`): on one TCP connection, bursts of exchanges, each a
//! request written and its whole response read before the next request goes; a burst every
//! `period_ns` on absolute deadlines from the first (a burst that overruns its period starts
//! the next at once, and the schedule does not drift). The server holds each response
//! `hold_ns` after reading its request; with `quickack` both ends set TCP_QUICKACK after
//! every read, so no ACK waits for the delayed-ACK timer (about 40 ms on Linux).
//!
//! An exchange's latency is from the request's write to its response's last byte, so it
//! includes the hold; it is counted as a transaction at both ends (the client when the
//! response is in, the server when it is written), which is how the two ends' counts can
//! be compared exactly.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use linerate_wire::control::Bounceback;

use super::io::{idle_read_timeout, is_timeout, pattern, write_all};
use super::latency::new_histogram;
use super::{LoopCtx, RrOutcome, POLL};
use crate::engine::pacing;

/// The client loop of a bounceback test on `s`.
pub fn client(
    ctx: &LoopCtx,
    s: &TcpStream,
    bb: &Bounceback,
    out: &mut RrOutcome,
) -> io::Result<()> {
    s.set_read_timeout(Some(POLL))?;
    s.set_write_timeout(Some(POLL))?;
    let req = pattern(ctx.spec.request_bytes.max(1) as usize);
    let resp = ctx.spec.response_bytes.max(1) as usize;
    let mut rbuf = vec![0u8; resp.clamp(64, 1 << 20)];
    let mut hist = new_histogram();
    let mut base = false;
    let mut next_burst = ctx.now_ns();
    let result = 'test: loop {
        for _ in 0..bb.burst.max(1) {
            if ctx.stop.load(Relaxed) {
                break 'test Ok(());
            }
            ctx.check_baseline(&mut base);
            let sent = ctx.now_ns();
            match write_all(ctx, s, &req) {
                Ok(true) => {}
                Ok(false) => break 'test Ok(()),
                Err(e) => break 'test Err(e),
            }
            match read_response(ctx, s, resp, &mut rbuf, bb.quickack) {
                Ok(true) => {}
                Ok(false) => break 'test Ok(()),
                Err(e) => break 'test Err(e),
            }
            let done = ctx.now_ns();
            if ctx.measuring() {
                hist.saturating_record(done.saturating_sub(sent).max(1));
            }
            ctx.completed(1, done);
        }
        next_burst += bb.period_ns;
        if !sleep_until(ctx, next_burst) {
            break Ok(());
        }
    };
    out.latency = Some(hist);
    result
}

/// Reads a whole response; with `quickack`, TCP_QUICKACK again after each read. False if
/// the test stopped first (the stop shuts the reading side: the read then returns 0).
fn read_response(
    ctx: &LoopCtx,
    s: &TcpStream,
    n: usize,
    rbuf: &mut [u8],
    quickack: bool,
) -> io::Result<bool> {
    let mut got = 0;
    let mut r = s;
    while got < n {
        if ctx.stop.load(Relaxed) {
            return Ok(false);
        }
        let want = (n - got).min(rbuf.len());
        match r.read(&mut rbuf[..want]) {
            Ok(0) if ctx.stop.load(Relaxed) => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ))
            }
            Ok(k) => {
                ctx.read(k);
                got += k;
                if quickack {
                    crate::sys::net::set_quickack(s)?;
                }
            }
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Sleeps until `at_ns` on the loop's clock, waking for the stop flag; false if stopped.
fn sleep_until(ctx: &LoopCtx, at_ns: u64) -> bool {
    loop {
        if ctx.stop.load(Relaxed) {
            return false;
        }
        let now = ctx.now_ns();
        if now >= at_ns {
            return true;
        }
        pacing::wait(Duration::from_nanos(at_ns - now).min(POLL));
    }
}

/// The server loop of a bounceback test on `s`: read a whole request, hold, write its
/// response; one transaction per response written.
pub fn server(ctx: &LoopCtx, s: &TcpStream, bb: &Bounceback) -> io::Result<()> {
    // RrEngine::stop shuts the reading side, which ends the read with 0 where a shutdown
    // wakes a blocked read; where it does not (Winsock), the read waits POLL at a time, as
    // the other RR servers' do.
    s.set_read_timeout(idle_read_timeout())?;
    s.set_write_timeout(Some(POLL))?;
    let req = ctx.spec.request_bytes.max(1) as usize;
    let resp = pattern(ctx.spec.response_bytes.max(1) as usize);
    let mut rbuf = vec![0u8; req.clamp(64, 1 << 20)];
    let mut base = false;
    let mut r = s;
    let mut got = 0usize;
    while !ctx.stop.load(Relaxed) {
        ctx.check_baseline(&mut base);
        let want = (req - got).min(rbuf.len());
        let k = match r.read(&mut rbuf[..want]) {
            Ok(0) => return Ok(()),
            Ok(k) => k,
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(e),
        };
        ctx.read(k);
        if bb.quickack {
            crate::sys::net::set_quickack(s)?;
        }
        got += k;
        if got < req {
            continue;
        }
        got = 0;
        if bb.hold_ns > 0 {
            let until = ctx.now_ns() + bb.hold_ns;
            if !sleep_until(ctx, until) {
                return Ok(());
            }
        }
        if !write_all(ctx, s, &resp)? {
            return Ok(());
        }
        super::bump(&ctx.counters.transactions, 1);
    }
    Ok(())
}
