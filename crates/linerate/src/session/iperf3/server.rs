//! iperf3 clients on `linerate serve`'s port: one session per iperf3 control connection,
//! under the same limits as linerate's own tests (`--max-tests`, `--max-streams`, the
//! duration, rate, write-size and buffer limits, the budget of all tests), each in its own
//! thread, so that several iperf3 clients test at once (iperf3's own server takes one).
//!
//! The accept loop routes a connection here when its first bytes could be a cookie
//! (`[a-z2-7]`, which linerate's `"LR"` is not): a cookie that a running session issued
//! `CREATE_STREAMS` for is that session's data connection; any other opens a session. A UDP
//! stream announces itself with a datagram `"9876"` on the server's UDP port, which the
//! dispatcher ([`udp_dispatch`]) hands to the one session of that client address that is
//! opening UDP streams (one at a time per address, so that two clients behind one address
//! cannot take each other's streams); the session answers from a socket connected to the
//! client's port, which takes that stream's datagrams from then on.
//!
//! Every read from the peer is capped ([`iperf3::MAX_PARAMS_JSON`],
//! [`iperf3::MAX_CLIENT_RESULTS_JSON`]) and timed: the parameters within the handshake
//! time-out, the streams within it again, `TEST_END` within the test's time plus
//! [`END_GRACE`] (a test bounded by bytes or blocks within `--max-duration`), the rest
//! within the idle time-out. A violation ends that session with one log line.

use portable_atomic::AtomicU64;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use linerate_wire::control::ErrorCode;
use linerate_wire::iperf3::{
    self, ierrno, Cookie, Direction, Params, Protocol, Results, State, StreamResult,
};

use super::{read_by, read_json, Drain};
use crate::session::server::policy::limits::{self, Cost};
use crate::session::server::{log, Ctx};
use crate::sys::sockets::{self, SockOpts};

/// How long after the test's planned end a client has to send `TEST_END`.
pub const END_GRACE: Duration = Duration::from_secs(10);
/// How often a stream's thread looks at its stop flag while its socket is quiet.
const POLL: Duration = Duration::from_millis(100);
// After `TEST_END`, a receiving stream drains what is still in flight
// (`session::iperf3::Drain`): the bytes the client sent are all counted, which iperf3's own
// server does not do.
/// Default TCP block (iperf3's 128 KiB) and UDP datagram size when the client sent none.
const DEFAULT_TCP_LEN: u32 = 128 * 1024;
const DEFAULT_UDP_LEN: u32 = 1460;
/// Lines of server output kept for `--get-server-output`.
const MAX_OUTPUT: usize = 64 * 1024;

/// What the accept loop knows of a connection that begins like a cookie.
pub(in crate::session) enum Arrival {
    /// A data connection of a running session (already delivered).
    Delivered,
    /// A new control connection: run [`handle_control`].
    Control(Cookie),
    /// Neither: closed.
    Refused,
}

/// Reads the cookie (its 37 bytes are readable, peeked) and delivers a data connection to
/// its session.
pub(in crate::session) fn route(
    ctx: &Ctx,
    mut stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
) -> (Arrival, Option<TcpStream>) {
    let mut b = [0u8; iperf3::COOKIE_LEN];
    if stream.read_exact(&mut b).is_err() {
        return (Arrival::Refused, None);
    }
    let cookie = match Cookie::parse(&b) {
        Ok(c) => c,
        Err(e) => {
            log(
                ctx,
                peer,
                &format!("{peer}: not an iperf3 client ({e}); closed"),
            );
            return (Arrival::Refused, None);
        }
    };
    let to = ctx
        .iperf3_streams
        .lock()
        .ok()
        .and_then(|m| m.get(&cookie).cloned());
    match to {
        Some(tx) => {
            let _ = tx.send((seq, stream));
            (Arrival::Delivered, None)
        }
        None => (Arrival::Control(cookie), Some(stream)),
    }
}

/// The UDP port's reader: a `"9876"` from a client address goes to the session of that
/// address that is opening UDP streams; anything else (a datagram that arrived before its
/// stream's socket was connected) is dropped, as it would have been unread.
pub(in crate::session) fn udp_dispatch(ctx: Arc<Ctx>, udp: UdpSocket) {
    let _ = udp.set_read_timeout(Some(POLL));
    let mut b = [0u8; 64];
    while !ctx.shutdown.load(SeqCst) {
        let Ok((n, from)) = udp.recv_from(&mut b) else {
            continue;
        };
        if n != iperf3::UDP_CONNECT_MSG.len() || b[..n] != iperf3::UDP_CONNECT_MSG {
            continue;
        }
        let ip = sockets::canonical(from.ip());
        let to = ctx.iperf3_udp.lock().ok().and_then(|m| m.get(&ip).cloned());
        if let Some(tx) = to {
            let _ = tx.send(from);
        }
    }
}

/// Why a session ended early: what the log says, and the error the client is told.
struct Failure {
    why: String,
    i_errno: Option<i32>,
}

fn fail(why: impl Into<String>, i_errno: Option<i32>) -> Failure {
    Failure {
        why: why.into(),
        i_errno,
    }
}

/// Serves one iperf3 client whose cookie has been read.
pub(in crate::session) fn handle_control(
    ctx: &Arc<Ctx>,
    mut ctl: TcpStream,
    peer: SocketAddr,
    cookie: Cookie,
    accepted: Instant,
) {
    let _ = ctl.set_nodelay(true);
    let ip = sockets::canonical(peer.ip());
    if ctx.cfg.users.is_some() && !ctx.cfg.allow_iperf3_unauthenticated {
        // iperf3's protocol carries no linerate credentials: while users are configured an
        // iperf3 client is refused before anything else is read, with iperf3's own
        // "test authorization failed" (IEAUTHTEST, as iperf3's server sends it after a
        // failed RSA authentication).
        log(
            ctx,
            peer,
            &format!(
                "{peer}: iperf3 client refused: this server requires authentication (linerate serve --allow-iperf3-unauthenticated lets iperf3 clients in)"
            ),
        );
        let _ = ctl.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = ctl.write_all(&iperf3::server_error(ierrno::AUTH_TEST, 0));
        return;
    }
    if let Err(why) = ctx.enter_handshake(ip) {
        log(ctx, peer, &format!("{peer}: iperf3 client refused: {why}"));
        let _ = ctl.write_all(&[State::AccessDenied.byte()]);
        return;
    }
    let mut s = Session {
        ctx,
        peer,
        cookie,
        in_handshake: true,
        admitted: None,
        registered: false,
        udp_slot: false,
        output: String::new(),
    };
    let r = s.run(&mut ctl, accepted);
    if let Err(f) = r {
        log(
            ctx,
            peer,
            &format!("{peer}: iperf3 session ended: {}", f.why),
        );
        if let Some(code) = f.i_errno {
            let _ = ctl.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = ctl.write_all(&iperf3::server_error(code, 0));
        }
    }
    s.release();
}

struct Session<'a> {
    ctx: &'a Arc<Ctx>,
    peer: SocketAddr,
    cookie: Cookie,
    in_handshake: bool,
    /// What the test holds of the budget, once admitted.
    admitted: Option<Cost>,
    registered: bool,
    udp_slot: bool,
    /// The server's text output, for `--get-server-output`.
    output: String,
}

/// One stream's thread, and what it reports when joined.
struct Worker {
    sends: bool,
    handle: std::thread::JoinHandle<StreamTally>,
}

#[derive(Debug, Default, Clone)]
struct StreamTally {
    bytes: u64,
    retransmits: Option<u64>,
    packets: u64,
    lost: u64,
    /// A UDP receiver's datagrams in the omitted seconds (by sequence number, as iperf3
    /// counts them) and those of them that never arrived.
    omitted: Option<(u64, u64)>,
    jitter_s: f64,
    cpu_ns: u64,
    user_ns: u64,
    end_s: f64,
}

impl Session<'_> {
    fn release(&mut self) {
        let ctx = self.ctx;
        let ip = sockets::canonical(self.peer.ip());
        if self.in_handshake {
            ctx.leave_handshake(ip);
        }
        if self.registered {
            if let Ok(mut m) = ctx.iperf3_streams.lock() {
                m.remove(&self.cookie);
            }
        }
        let token = claim_token(&self.cookie);
        if let Ok(mut u) = ctx.udp_peers.lock() {
            u.retain(|_, owner| *owner != token);
        }
        if self.udp_slot {
            if let Ok(mut m) = ctx.iperf3_udp.lock() {
                m.remove(&ip);
            }
        }
        if let Some(c) = self.admitted.take() {
            if let Ok(mut used) = ctx.budget_used.lock() {
                limits::release(&mut used, c);
            }
            ctx.expect_data(ip, c.streams, false);
            ctx.active_tests.fetch_sub(1, SeqCst);
            // `--one-off`: an iperf3 test is a test.
            if ctx.cfg.one_off {
                ctx.shutdown.store(true, SeqCst);
            }
        }
    }

    fn say(&mut self, line: &str) {
        if self.output.len() + line.len() < MAX_OUTPUT {
            self.output.push_str(line);
            self.output.push('\n');
        }
    }

    fn run(&mut self, ctl: &mut TcpStream, accepted: Instant) -> Result<(), Failure> {
        let cfg = &self.ctx.cfg;
        let deadline = accepted + cfg.handshake_timeout;
        send_state(ctl, State::ParamExchange)?;
        let body = read_json(ctl, iperf3::MAX_PARAMS_JSON, deadline, "parameters")
            .map_err(|e| fail(e, Some(ierrno::RECV_PARAMS)))?;
        let p = Params::parse(&body).map_err(|e| fail(e.to_string(), Some(ierrno::RECV_PARAMS)))?;
        self.check(&p)?;
        self.admit(&p)?;
        let version = p.client_version.clone().unwrap_or_else(|| "3.x".into());
        self.say(&format!(
            "Accepted connection from {}, port {} (iperf3 {version} client)",
            sockets::canonical(self.peer.ip()),
            self.peer.port()
        ));
        // Streams.
        let (tx, rx) = mpsc::channel();
        if p.protocol == Protocol::Tcp {
            self.ctx
                .iperf3_streams
                .lock()
                .map_err(|_| fail("stream registry unavailable", Some(ierrno::ACCEPT_STREAM)))?
                .insert(self.cookie, tx);
            self.registered = true;
        }
        let local = ctl.local_addr().map_err(|e| fail(e.to_string(), None))?;
        let streams = match p.protocol {
            Protocol::Tcp => {
                send_state(ctl, State::CreateStreams)?;
                self.tcp_streams(&p, &rx)?
            }
            Protocol::Udp => self.udp_streams(ctl, &p, local)?,
        };
        self.ctx.leave_handshake(sockets::canonical(self.peer.ip()));
        self.in_handshake = false;
        // Run.
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let blocks = Arc::new(AtomicU64::new(0));
        send_state(ctl, State::TestStart)?;
        send_state(ctl, State::TestRunning)?;
        let t0 = Instant::now();
        let stopped_ns = Arc::new(AtomicU64::new(0));
        let cpu0 = crate::sys::rusage::thread_cpu();
        let job = Job {
            p: p.clone(),
            stop: stop.clone(),
            sent,
            blocks,
            t0,
            stopped_ns: stopped_ns.clone(),
        };
        let workers = start_workers(&job, streams)?;
        let planned = if p.time_s > 0 {
            Duration::from_secs(u64::from(p.time_s) + u64::from(p.omit_s))
        } else {
            Duration::from_millis(cfg.limits.max_duration_ms)
        };
        let end = wait_test_end(ctl, t0 + planned + END_GRACE);
        let elapsed = t0.elapsed();
        stopped_ns.store(elapsed.as_nanos().max(1) as u64, SeqCst);
        stop.store(true, SeqCst);
        let tallies: Vec<(bool, StreamTally)> = workers
            .into_iter()
            .map(|w| (w.sends, w.handle.join().unwrap_or_default()))
            .collect();
        end?;
        // Results.
        let cpu1 = crate::sys::rusage::thread_cpu();
        let results = self.results(&p, &tallies, elapsed, cpu0, cpu1);
        send_state(ctl, State::ExchangeResults)?;
        let idle = Instant::now() + cfg.idle_timeout;
        let body = read_json(ctl, iperf3::MAX_CLIENT_RESULTS_JSON, idle, "results")
            .map_err(|e| fail(e, Some(ierrno::RECV_RESULTS)))?;
        let theirs =
            Results::parse(&body).map_err(|e| fail(e.to_string(), Some(ierrno::RECV_RESULTS)))?;
        let mut ours = results;
        self.summary(&p, &tallies, elapsed, &theirs);
        if p.get_server_output {
            ours.server_output_text = Some(std::mem::take(&mut self.output));
        }
        write_all(ctl, &iperf3::encode_json(&ours.to_json()))?;
        send_state(ctl, State::DisplayResults)?;
        // IPERF_DONE, or the client closing, ends the session.
        wait_done(ctl, cfg.idle_timeout)
    }

    /// The server's limits, as for a linerate test, with iperf3's error codes.
    fn check(&self, p: &Params) -> Result<(), Failure> {
        let l = &self.ctx.cfg.limits;
        let streams = p.stream_count();
        if streams > u32::from(l.max_streams) {
            return Err(fail(
                format!(
                    "{streams} streams asked, the server allows {} (serve --max-streams)",
                    l.max_streams
                ),
                Some(ierrno::ACCEPT_STREAM),
            ));
        }
        let secs = u64::from(p.time_s) + u64::from(p.omit_s);
        if secs * 1000 > l.max_duration_ms {
            return Err(fail(
                format!(
                    "{secs} s asked, the server allows {} ms (serve --max-duration)",
                    l.max_duration_ms
                ),
                Some(ierrno::MAX_SERVER_TEST_DURATION_EXCEEDED),
            ));
        }
        if let Some(max) = l.max_rate_bps {
            let dirs = if p.direction == Direction::Bidir {
                2
            } else {
                1
            };
            let total = p
                .bandwidth_bps
                .map(|b| b.saturating_mul(u64::from(p.parallel) * dirs));
            if total.is_none_or(|t| t > max) {
                return Err(fail(
                    format!("a total rate of {total:?} bit/s asked, the server allows {max} (serve --max-rate)"),
                    Some(ierrno::TOTAL_RATE),
                ));
            }
        }
        if p.len.is_some_and(|len| len > l.max_write_size) {
            return Err(fail(
                format!(
                    "blocks of {:?} bytes asked, the server allows {} (serve --max-write-size)",
                    p.len, l.max_write_size
                ),
                Some(ierrno::RECV_PARAMS),
            ));
        }
        if p.window.is_some_and(|w| w > l.max_socket_buffer) {
            return Err(fail(
                format!("a window of {:?} bytes asked, the server allows {} (serve --max-socket-buffer)", p.window, l.max_socket_buffer),
                Some(ierrno::RECV_PARAMS),
            ));
        }
        if p.has_authtoken {
            return Err(fail(
                "iperf3 authentication is not supported (linerate's own clients use --auth-users)",
                Some(ierrno::RECV_PARAMS),
            ));
        }
        Ok(())
    }

    /// Takes a test slot and the test's share of the budget, or refuses as busy.
    fn admit(&mut self, p: &Params) -> Result<(), Failure> {
        let ctx = self.ctx;
        if ctx.active_tests.fetch_add(1, SeqCst) >= ctx.cfg.max_tests {
            ctx.active_tests.fetch_sub(1, SeqCst);
            return Err(fail(
                format!(
                    "the server runs its maximum of {} tests (serve --max-tests)",
                    ctx.cfg.max_tests
                ),
                Some(ierrno::ACCESS_DENIED),
            ));
        }
        let c = cost(p);
        let booked = match ctx.budget_used.lock() {
            Ok(mut used) => limits::reserve(&mut used, c, &ctx.cfg.budget),
            Err(_) => Err((ErrorCode::Internal, "budget unavailable".into())),
        };
        if let Err((_, why)) = booked {
            ctx.active_tests.fetch_sub(1, SeqCst);
            return Err(fail(why, Some(ierrno::ACCESS_DENIED)));
        }
        ctx.expect_data(sockets::canonical(self.peer.ip()), c.streams, true);
        self.admitted = Some(c);
        Ok(())
    }

    /// The TCP data connections, in the order the client opened them.
    fn tcp_streams(
        &self,
        p: &Params,
        rx: &Receiver<(u64, TcpStream)>,
    ) -> Result<Vec<Stream>, Failure> {
        let want = p.stream_count() as usize;
        let deadline = Instant::now() + self.ctx.cfg.handshake_timeout;
        let mut got: Vec<(u64, TcpStream)> = Vec::with_capacity(want);
        while got.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(s) => got.push(s),
                Err(_) => {
                    return Err(fail(
                        format!(
                            "{} of {want} streams connected within the handshake time-out",
                            got.len()
                        ),
                        Some(ierrno::ACCEPT_STREAM),
                    ))
                }
            }
        }
        // Connection threads may deliver out of order; the accept order is the client's.
        got.sort_by_key(|(seq, _)| *seq);
        let opts = sock_opts(p);
        got.into_iter()
            .map(|(_, st)| {
                let v6 = st.local_addr().is_ok_and(|a| a.is_ipv6());
                sockets::apply(&socket2::SockRef::from(&st), &opts, true, v6).map_err(|e| {
                    fail(format!("socket options: {e}"), Some(ierrno::ACCEPT_STREAM))
                })?;
                Ok(Stream::Tcp(st))
            })
            .collect()
    }

    /// The UDP streams: for each, the client's `"9876"` (through the dispatcher) and a socket
    /// connected to its port that answers `"6789"`.
    fn udp_streams(
        &mut self,
        ctl: &mut TcpStream,
        p: &Params,
        local: SocketAddr,
    ) -> Result<Vec<Stream>, Failure> {
        let ip = sockets::canonical(self.peer.ip());
        let deadline = Instant::now() + self.ctx.cfg.handshake_timeout;
        let (tx, rx): (Sender<SocketAddr>, Receiver<SocketAddr>) = mpsc::channel();
        // One session per client address opens UDP streams at a time.
        loop {
            let taken = match self.ctx.iperf3_udp.lock() {
                Ok(mut m) => {
                    if let std::collections::hash_map::Entry::Vacant(e) = m.entry(ip) {
                        e.insert(tx.clone());
                        true
                    } else {
                        false
                    }
                }
                Err(_) => {
                    return Err(fail(
                        "UDP registry unavailable",
                        Some(ierrno::ACCEPT_STREAM),
                    ))
                }
            };
            if taken {
                self.udp_slot = true;
                break;
            }
            if Instant::now() >= deadline {
                return Err(fail(
                    "another test from this address kept opening UDP streams",
                    Some(ierrno::ACCEPT_STREAM),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        send_state(ctl, State::CreateStreams)?;
        let opts = sock_opts(p);
        let token = claim_token(&self.cookie);
        let mut out = Vec::new();
        while out.len() < p.stream_count() as usize {
            let left = deadline.saturating_duration_since(Instant::now());
            let from = rx.recv_timeout(left).map_err(|_| {
                fail(
                    format!(
                        "{} of {} UDP streams announced within the handshake time-out",
                        out.len(),
                        p.stream_count()
                    ),
                    Some(ierrno::ACCEPT_STREAM),
                )
            })?;
            crate::session::server::data_sockets::claim_udp_peers(
                self.ctx,
                ip,
                &[from.port()],
                &token,
            )
            .map_err(|(_, e)| fail(e, Some(ierrno::ACCEPT_STREAM)))?;
            let u = sockets::udp_socket(
                local,
                from_like(local, SocketAddr::new(ip, from.port())),
                &opts,
                true,
            )
            .map_err(|e| fail(format!("UDP socket: {e}"), Some(ierrno::ACCEPT_STREAM)))?;
            u.send(&iperf3::UDP_CONNECT_REPLY)
                .map_err(|e| fail(format!("UDP reply: {e}"), Some(ierrno::ACCEPT_STREAM)))?;
            out.push(Stream::Udp(u));
        }
        if let Ok(mut m) = self.ctx.iperf3_udp.lock() {
            m.remove(&ip);
        }
        self.udp_slot = false;
        Ok(out)
    }

    /// The server's results message: its streams in the client's order (ids 1, 3, 4, ...)
    /// and the CPU its threads for this test used over the test, as % of one CPU (iperf3's
    /// definition, but of this test's threads, not of the process serving several tests).
    fn results(
        &self,
        p: &Params,
        tallies: &[(bool, StreamTally)],
        elapsed: Duration,
        cpu0: Option<linerate_wire::report::ProcessCpu>,
        cpu1: Option<linerate_wire::report::ProcessCpu>,
    ) -> Results {
        let ctl_cpu = match (cpu0, cpu1) {
            (Some(a), Some(b)) => crate::sys::rusage::cpu_delta(&a, &b),
            _ => linerate_wire::report::ProcessCpu::default(),
        };
        let user_ns = ctl_cpu.user_ns + tallies.iter().map(|(_, t)| t.user_ns).sum::<u64>();
        let total_ns = ctl_cpu.user_ns
            + ctl_cpu.system_ns
            + tallies.iter().map(|(_, t)| t.cpu_ns).sum::<u64>();
        let wall_ns = elapsed.as_nanos().max(1) as f64;
        let pct = |ns: u64| ns as f64 * 100.0 / wall_ns;
        let any_sender = tallies.iter().any(|(s, _)| *s);
        let retrans_known = tallies
            .iter()
            .filter(|(s, _)| *s)
            .all(|(_, t)| t.retransmits.is_some());
        Results {
            cpu_util_total: pct(total_ns),
            cpu_util_user: pct(user_ns),
            cpu_util_system: pct(total_ns.saturating_sub(user_ns)),
            sender_has_retransmits: match (any_sender, p.protocol, retrans_known) {
                (false, _, _) => -1,
                (true, Protocol::Tcp, true) => 1,
                _ => 0,
            },
            congestion_used: p.congestion.clone(),
            streams: tallies
                .iter()
                .enumerate()
                .map(|(i, (_, t))| StreamResult {
                    id: iperf3::stream_id(i),
                    bytes: t.bytes,
                    retransmits: t.retransmits,
                    jitter_s: t.jitter_s,
                    errors: t.lost as i64,
                    // As iperf3: `packets` includes the omitted ones, which the client
                    // takes off again.
                    packets: (t.packets + t.omitted.map_or(0, |o| o.0)) as i64,
                    omitted_errors: t.omitted.map(|o| o.1 as i64),
                    omitted_packets: t.omitted.map(|o| o.0 as i64),
                    end_time_s: t.end_s,
                })
                .collect(),
            server_output_json: None,
            server_output_text: None,
        }
    }

    /// The log line of the test, and the server output's summary.
    fn summary(
        &mut self,
        p: &Params,
        tallies: &[(bool, StreamTally)],
        elapsed: Duration,
        theirs: &Results,
    ) {
        let omit = Duration::from_secs(u64::from(p.omit_s));
        let secs = elapsed.saturating_sub(omit).as_secs_f64().max(1e-9);
        let sum = |sends: bool| {
            tallies
                .iter()
                .filter(|(s, _)| *s == sends)
                .map(|(_, t)| t.bytes)
                .sum::<u64>()
        };
        let (rx, tx) = (sum(false), sum(true));
        let proto = if p.protocol == Protocol::Tcp {
            "TCP"
        } else {
            "UDP"
        };
        let dir = match p.direction {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
            Direction::Bidir => "bidir",
        };
        let line = format!(
            "iperf3 {proto} {dir}, {} stream(s), {secs:.2} s: received {rx} bytes ({:.0} bit/s), sent {tx} bytes ({:.0} bit/s); client CPU {:.1}%",
            p.stream_count(),
            rx as f64 * 8.0 / secs,
            tx as f64 * 8.0 / secs,
            theirs.cpu_util_total,
        );
        self.say(&line);
        log(self.ctx, self.peer, &format!("{}: {line}", self.peer));
    }
}

/// What the test costs the budget: as a linerate test of the same streams and sizes.
fn cost(p: &Params) -> Cost {
    let streams = u64::from(p.stream_count());
    let len = u64::from(p.len.unwrap_or(DEFAULT_TCP_LEN));
    let user = match p.protocol {
        Protocol::Tcp => len.max(64 << 10),
        Protocol::Udp => 64 << 10,
    };
    let socket = p
        .window
        .map_or(limits::UNSIZED_SOCKET_BUFFER, |w| 2 * u64::from(w));
    Cost {
        streams: u32::try_from(streams).unwrap_or(u32::MAX),
        buffer_bytes: streams.saturating_mul(user + socket),
    }
}

fn sock_opts(p: &Params) -> SockOpts {
    SockOpts {
        sndbuf: p.window,
        rcvbuf: p
            .window
            .or_else(|| (p.protocol == Protocol::Udp).then_some(sockets::UDP_DEFAULT_RCVBUF)),
        nodelay: p.nodelay,
        mss: p.mss,
        congestion: p.congestion.clone(),
        tos: None,
    }
}

/// The claim token of a session's UDP ports: its cookie's first 16 bytes (a linerate
/// test's token is random bytes; a clash is as unlikely as a guessed token).
fn claim_token(c: &Cookie) -> [u8; 16] {
    let mut t = [0u8; 16];
    t.copy_from_slice(&c.to_bytes()[..16]);
    t
}

/// `peer` in the address family of `local` (an IPv4 client on a dual-stack socket).
fn from_like(local: SocketAddr, peer: SocketAddr) -> SocketAddr {
    match (local.ip(), peer.ip()) {
        (IpAddr::V6(_), IpAddr::V4(v4)) => {
            SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), peer.port())
        }
        _ => peer,
    }
}

fn send_state(ctl: &mut TcpStream, s: State) -> Result<(), Failure> {
    write_all(ctl, &[s.byte()])
}

fn write_all(ctl: &mut TcpStream, b: &[u8]) -> Result<(), Failure> {
    super::write_all(ctl, b).map_err(|e| fail(format!("control connection: {e}"), None))
}

/// Waits for `TEST_END` (or `CLIENT_TERMINATE`) by `deadline`.
fn wait_test_end(ctl: &mut TcpStream, deadline: Instant) -> Result<(), Failure> {
    let mut b = [0u8; 1];
    match read_by(ctl, &mut b, deadline) {
        Ok(()) => match State::from_byte(b[0]) {
            Ok(State::TestEnd) => Ok(()),
            Ok(State::ClientTerminate) => {
                Err(fail("the client was interrupted (CLIENT_TERMINATE)", None))
            }
            _ => Err(fail(
                format!("state byte {} where TEST_END was expected", b[0]),
                Some(ierrno::MESSAGE),
            )),
        },
        Err(e) if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock => {
            Err(fail(
                "no TEST_END by the test's end and its grace time",
                Some(ierrno::SERVER_TEST_DURATION_EXPIRED),
            ))
        }
        Err(e) => Err(fail(format!("control connection: {e}"), None)),
    }
}

/// A data stream's socket.
enum Stream {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Starts a thread per data stream, each with a copy of `job`; when one cannot start, the
/// others are stopped and joined.
fn start_workers(job: &Job, streams: Vec<Stream>) -> Result<Vec<Worker>, Failure> {
    let mut workers = Vec::new();
    for (i, sock) in streams.into_iter().enumerate() {
        let sends = job.p.server_sends_on(i as u32);
        let mine = job.clone();
        let handle = std::thread::Builder::new()
            .name("lr-iperf3".into())
            .spawn(move || mine.run(sock, sends))
            .map_err(|e| {
                fail(
                    format!("cannot start a stream thread: {e}"),
                    Some(ierrno::ACCEPT_STREAM),
                )
            });
        match handle {
            Ok(handle) => workers.push(Worker { sends, handle }),
            Err(f) => {
                job.stop.store(true, SeqCst);
                for w in workers {
                    let _ = w.handle.join();
                }
                return Err(f);
            }
        }
    }
    Ok(workers)
}

/// Waits up to `idle` for the client's `IPERF_DONE` (or its closing the connection).
fn wait_done(ctl: &mut TcpStream, idle: Duration) -> Result<(), Failure> {
    let _ = ctl.set_read_timeout(Some(idle));
    let mut b = [0u8; 1];
    match ctl.read(&mut b) {
        Ok(1) if b[0] == State::IperfDone.byte() => {}
        Ok(0) => {}
        Ok(_) => {
            return Err(fail(
                format!("state {} where IPERF_DONE was expected", b[0]),
                None,
            ))
        }
        Err(e) => return Err(fail(format!("no IPERF_DONE: {e}"), None)),
    }
    Ok(())
}

/// What a stream's thread needs.
#[derive(Clone)]
struct Job {
    p: Params,
    stop: Arc<AtomicBool>,
    /// Bytes and blocks all the test's sending streams have sent (`-n`, `-k` are totals).
    sent: Arc<AtomicU64>,
    blocks: Arc<AtomicU64>,
    t0: Instant,
    /// When the test was stopped, ns after `t0` (0 while it runs).
    stopped_ns: Arc<AtomicU64>,
}

impl Job {
    fn run(self, s: Stream, sends: bool) -> StreamTally {
        let cpu0 = crate::sys::rusage::thread_cpu();
        let mut t = match (s, sends) {
            (Stream::Tcp(st), true) => self.tcp_send(st),
            (Stream::Tcp(st), false) => self.tcp_recv(st),
            (Stream::Udp(u), true) => self.udp_send(u),
            (Stream::Udp(u), false) => self.udp_recv(u),
        };
        if let (Some(a), Some(b)) = (cpu0, crate::sys::rusage::thread_cpu()) {
            let d = crate::sys::rusage::cpu_delta(&a, &b);
            t.cpu_ns = d.user_ns + d.system_ns;
            t.user_ns = d.user_ns;
        }
        // The stream ended when the client said so (what a receiver drains afterwards is
        // counted, but its time is not: iperf3 divides by the test's time).
        let stopped = Duration::from_nanos(self.stopped_ns.load(SeqCst));
        let elapsed = self.t0.elapsed();
        // Its times start after the omitted seconds, as iperf3 resets its clock then.
        let omit = Duration::from_secs(u64::from(self.p.omit_s));
        t.end_s = if stopped.is_zero() {
            elapsed
        } else {
            elapsed.min(stopped)
        }
        .saturating_sub(omit)
        .as_secs_f64();
        t
    }

    fn len(&self) -> usize {
        let d = match self.p.protocol {
            Protocol::Tcp => DEFAULT_TCP_LEN,
            Protocol::Udp => DEFAULT_UDP_LEN,
        };
        self.p.len.unwrap_or(d) as usize
    }

    /// Whether the omitted seconds at the start (`-O`) are over: what moves before is not
    /// counted in the results, as iperf3 resets its counters then.
    fn counting(&self) -> bool {
        self.t0.elapsed() >= Duration::from_secs(u64::from(self.p.omit_s))
    }

    /// Whether the test's byte or block count has been sent.
    fn quota_done(&self) -> bool {
        (self.p.bytes > 0 && self.sent.load(SeqCst) >= self.p.bytes)
            || (self.p.blocks > 0 && self.blocks.load(SeqCst) >= self.p.blocks)
    }

    /// Sleeps until `bytes` are due at the stream's rate (`-b`, per stream as in iperf3).
    fn pace(&self, start: Instant, bytes: u64) {
        let Some(bps) = self.p.bandwidth_bps else {
            return;
        };
        let due = Duration::from_secs_f64(bytes as f64 * 8.0 / bps as f64);
        let now = start.elapsed();
        if due > now {
            std::thread::sleep((due - now).min(POLL));
        }
    }

    fn tcp_send(&self, mut st: TcpStream) -> StreamTally {
        let mut buf = crate::engine::buf::PageBuf::zeroed(self.len());
        let _ = getrandom::getrandom(&mut buf);
        let _ = st.set_write_timeout(Some(POLL));
        let start = Instant::now();
        let mut t = StreamTally::default();
        let mut at = 0usize;
        let mut paced = 0u64;
        while !self.stop.load(SeqCst) {
            if at == 0 {
                if self.quota_done() {
                    break;
                }
                self.pace(start, paced);
                if self.stop.load(SeqCst) {
                    break;
                }
            }
            match st.write(&buf[at..]) {
                Ok(n) => {
                    if self.counting() {
                        t.bytes += n as u64;
                    }
                    paced += n as u64;
                    self.sent.fetch_add(n as u64, SeqCst);
                    at += n;
                    if at == buf.len() {
                        at = 0;
                        self.blocks.fetch_add(1, SeqCst);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => break,
            }
        }
        t.retransmits = crate::sys::tcp_info::read_tcp_info(crate::sys::net::AsSock::as_sock(&st))
            .ok()
            .and_then(|i| i.total_retrans.map(u64::from));
        t
    }

    fn tcp_recv(&self, mut st: TcpStream) -> StreamTally {
        let mut buf = crate::engine::buf::PageBuf::zeroed(self.len().max(64 << 10));
        let _ = st.set_read_timeout(Some(POLL));
        let mut t = StreamTally::default();
        let mut drain = Drain::default();
        loop {
            if drain.over(self.stop.load(SeqCst), |q| {
                let _ = st.set_read_timeout(Some(q));
            }) {
                break;
            }
            match st.read(&mut buf) {
                Ok(0) => break,
                Ok(n) if self.counting() => t.bytes += n as u64,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if drain.quiet() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        t
    }

    fn udp_send(&self, u: UdpSocket) -> StreamTally {
        let len = self.len().max(iperf3::UDP_HEADER_LEN_64);
        let mut buf = vec![0u8; len];
        let _ = getrandom::getrandom(&mut buf);
        let _ = u.set_write_timeout(Some(POLL));
        let start = Instant::now();
        let mut t = StreamTally::default();
        let mut seq = 0u64;
        let mut paced = 0u64;
        while !self.stop.load(SeqCst) && !self.quota_done() {
            self.pace(start, paced);
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            seq += 1;
            iperf3::UdpHeader {
                sec: now.as_secs() as u32,
                usec: now.subsec_micros(),
                seq,
            }
            .emit(&mut buf, self.p.udp_counters_64bit);
            match u.send(&buf) {
                Ok(n) => {
                    if self.counting() {
                        t.bytes += n as u64;
                        t.packets += 1;
                    }
                    paced += n as u64;
                    self.sent.fetch_add(n as u64, SeqCst);
                    self.blocks.fetch_add(1, SeqCst);
                }
                // A refused or full send loses that datagram, as iperf3 does; it is not counted.
                Err(_) => seq -= 1,
            }
        }
        t
    }

    fn udp_recv(&self, u: UdpSocket) -> StreamTally {
        let mut buf = vec![0u8; 65_536];
        let _ = u.set_read_timeout(Some(POLL));
        let mut t = StreamTally::default();
        let mut seqs = linerate_stats::seq::SeqTracker::new();
        let mut jitter = linerate_stats::jitter::JitterEstimator::new();
        let mut drain = Drain::default();
        let mut last_omitted = 0u64;
        let mut omitted_rx = 0u64;
        loop {
            if drain.over(self.stop.load(SeqCst), |q| {
                let _ = u.set_read_timeout(Some(q));
            }) {
                break;
            }
            match u.recv(&mut buf) {
                Ok(n) => {
                    let Ok(h) = iperf3::UdpHeader::parse(&buf[..n], self.p.udp_counters_64bit)
                    else {
                        continue;
                    };
                    // iperf3 numbers from 1; the tracker from 0, from the first datagram
                    // after the omitted seconds.
                    if h.seq == 0 || !self.counting() {
                        last_omitted = last_omitted.max(h.seq);
                        omitted_rx += 1;
                        continue;
                    }
                    let Some(rel) = h.seq.checked_sub(last_omitted + 1) else {
                        continue;
                    };
                    t.bytes += n as u64;
                    seqs.on_packet(rel);
                    let rx = SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .unwrap_or_default();
                    let tx_ns = u64::from(h.sec) * 1_000_000_000 + u64::from(h.usec) * 1000;
                    jitter.on_packet(tx_ns, rx.as_nanos() as u64);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if drain.quiet() {
                        break;
                    }
                }
                Err(_) => {}
            }
        }
        t.packets = seqs.received();
        t.lost = seqs.lost();
        t.omitted = Some((last_omitted, last_omitted.saturating_sub(omitted_rx)));
        t.jitter_s = jitter.jitter_ns_f64().unwrap_or(0.0) / 1e9;
        t
    }
}
