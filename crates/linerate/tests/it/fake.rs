//! A scriptable fake linerate peer: a control connection driven frame by frame, so a test
//! can do what a real client or server never would (list another test's UDP port, stream a
//! flood of intervals, leave the intervals out of its results, stop answering) and check
//! what the real peer on the other end does.
//!
//! * [`Peer`]: one framed control connection (send a message or raw bytes, receive with a
//!   deadline, expect a message by name).
//! * [`FakeClient`]: a [`Peer`] that connects to a real server, with the usual first steps
//!   (`hello`, `test_request`, `streams_ready`) as one call each.
//! * [`FakeServer`]: a listener on 127.0.0.1 (TCP, and UDP on the same port to absorb test
//!   datagrams) that hands its first control connection, after `hello`, to a script.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_wire::control::{
    self, Accept, Hello, Message, ProtocolVersion, ServerLimits, StreamsReady, TestRequest,
    TestSpec, Welcome,
};
use linerate_wire::report::{HostInfo, IntervalReport, Role, SideReport, Totals};
use linerate_wire::stream_hello;

/// How long [`Peer::recv`] waits for a frame.
pub const WAIT: Duration = Duration::from_secs(5);

/// One side of a control connection.
pub struct Peer {
    pub stream: TcpStream,
}

impl Peer {
    pub fn new(stream: TcpStream) -> Peer {
        stream.set_nodelay(true).unwrap();
        Peer { stream }
    }

    /// Sends one message; `Err` when the connection is gone.
    pub fn send(&mut self, m: &Message) -> std::io::Result<()> {
        let frame = control::encode(m).expect("encodable message");
        self.stream.write_all(&frame)
    }

    /// Sends bytes as they are (a broken frame, half a header, ...).
    #[allow(dead_code)] // for tests of malformed input
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The next message within `wait`; `None` on close, a bad frame or the time-out.
    pub fn recv_within(&mut self, wait: Duration) -> Option<Message> {
        self.stream.set_read_timeout(Some(wait)).ok()?;
        linerate::session::protocol::conn::read_frame(&mut self.stream, control::MAX_CONTROL_FRAME)
            .ok()
            .flatten()
    }

    /// The next message within [`WAIT`].
    pub fn recv(&mut self) -> Option<Message> {
        self.recv_within(WAIT)
    }

    /// The next message that is not an `interval`, within [`WAIT`] of each other.
    pub fn recv_skipping_intervals(&mut self) -> Option<Message> {
        self.recv_skipping_intervals_within(WAIT)
    }

    /// The next message that is not an `interval`, within `wait` in all.
    pub fn recv_skipping_intervals_within(&mut self, wait: Duration) -> Option<Message> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.recv_within(left.max(Duration::from_millis(1)))? {
                Message::Interval(_) => continue,
                m => return Some(m),
            }
        }
    }

    /// The next message (intervals skipped), which must be `name`.
    #[track_caller]
    pub fn expect(&mut self, name: &str) -> Message {
        let m = self.recv_skipping_intervals();
        match m {
            Some(m) if m.name() == name => m,
            other => panic!("expected {name}, got {other:?}"),
        }
    }
}

/// Every feature this build knows, for a client that speaks the current protocol.
pub fn all_features() -> Vec<&'static str> {
    control::FEATURES.to_vec()
}

/// A client driven by the test.
pub struct FakeClient {
    pub peer: Peer,
    pub welcome: Option<Welcome>,
    pub token: Option<[u8; 16]>,
}

impl FakeClient {
    pub fn connect(addr: SocketAddr) -> FakeClient {
        FakeClient {
            peer: Peer::new(TcpStream::connect(addr).expect("connect to the server")),
            welcome: None,
            token: None,
        }
    }

    /// Connects from `local` (another loopback address, such as 127.0.0.2), so that the
    /// server sees another client address.
    pub fn connect_from(addr: SocketAddr, local: std::net::IpAddr) -> FakeClient {
        FakeClient {
            peer: Peer::new(tcp_from(addr, local)),
            welcome: None,
            token: None,
        }
    }

    /// Sends `hello` with the current protocol version and `features`; expects `welcome`.
    #[track_caller]
    pub fn hello(&mut self, features: &[&str]) -> &Welcome {
        self.peer
            .send(&Message::Hello(Hello {
                protocol: ProtocolVersion::CURRENT,
                software: "fake client".into(),
                features: features.iter().map(|f| f.to_string()).collect(),
            }))
            .unwrap();
        match self.peer.expect("welcome") {
            Message::Welcome(w) => self.welcome.insert(w),
            _ => unreachable!(),
        }
    }

    /// Sends `test_request`; expects `accept` and keeps its token.
    #[track_caller]
    pub fn request(&mut self, spec: TestSpec) -> Accept {
        self.peer
            .send(&Message::TestRequest(TestRequest { spec }))
            .unwrap();
        let Message::Accept(a) = self.peer.expect("accept") else {
            unreachable!()
        };
        self.token = stream_hello::token_from_hex(&a.token);
        a
    }

    /// Sends `streams_ready` with these UDP ports and returns the server's answer.
    pub fn streams_ready(&mut self, udp_ports: Vec<u16>) -> Option<Message> {
        self.peer
            .send(&Message::StreamsReady(StreamsReady { udp_ports }))
            .ok()?;
        self.peer.recv_skipping_intervals()
    }

    /// The UDP stream hello of stream `index` with this test's token.
    pub fn udp_hello(&self, index: u16) -> [u8; stream_hello::LEN] {
        stream_hello::StreamHello {
            token: self.token.expect("accepted"),
            stream_index: index,
        }
        .to_bytes()
    }
}

/// A TCP connection to `addr` from `local` (port 0).
pub fn tcp_from(addr: SocketAddr, local: std::net::IpAddr) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(local, 0).into()).unwrap();
    s.connect(&addr.into()).expect("connect to the server");
    s.into()
}

/// A server driven by the test: it accepts one control connection, answers its `hello`
/// with a `welcome` listing `features`, and runs the script on it.
pub struct FakeServer {
    pub addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
    _udp: UdpSocket,
}

impl FakeServer {
    pub fn start(features: &[&str], script: impl FnOnce(&mut Peer) + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The client's test datagrams go to the same port; a bound socket takes them (and
        // drops what overflows its buffer) so that no ICMP error disturbs the sender.
        let udp = UdpSocket::bind(addr).unwrap();
        let features: Vec<String> = features.iter().map(|f| f.to_string()).collect();
        let thread = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut p = Peer::new(s);
            let Some(Message::Hello(h)) = p.recv() else {
                return;
            };
            let _ = p.send(&Message::Welcome(Welcome {
                protocol: h.protocol.min(ProtocolVersion::CURRENT),
                session_id: "fake".into(),
                features,
                software: "fake server".into(),
                limits: ServerLimits {
                    max_duration_ms: 3_600_000,
                    max_streams: 128,
                    max_rate_bps: None,
                    max_write_size: 1 << 20,
                    max_socket_buffer: 64 << 20,
                },
                auth: None,
            }));
            script(&mut p);
        });
        FakeServer {
            addr,
            thread: Some(thread),
            _udp: udp,
        }
    }

    /// Waits for the script to end; a panic in it fails the test here.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            if let Err(e) = t.join() {
                std::panic::resume_unwind(e);
            }
        }
    }
}

/// The usual server side of a test up to `start`: expects `test_request` (returned),
/// accepts it with a fixed token, expects `streams_ready` and sends `start`.
#[track_caller]
pub fn accept_and_start(p: &mut Peer) -> TestSpec {
    let Message::TestRequest(r) = p.expect("test_request") else {
        unreachable!()
    };
    p.send(&Message::Accept(Accept {
        token: stream_hello::token_to_hex(&[0x5a; 16]),
        server_cpu_count: 1,
        crr_port: None,
        quic: None,
    }))
    .unwrap();
    p.expect("streams_ready");
    p.send(&Message::Start(control::Start {})).unwrap();
    r.spec
}

/// A server's report with these totals and nothing else.
pub fn server_report(totals: Totals) -> SideReport {
    SideReport {
        role: Role::Server,
        host: HostInfo {
            cpu_count: Some(1),
            software: "fake server".into(),
            ..HostInfo::default()
        },
        streams: Vec::new(),
        intervals: Vec::new(),
        totals,
        cpu: None,
        process_cpu: None,
        host_counters: None,
        interface: None,
        control_segments: None,
        profile: None,
        warnings: Vec::new(),
    }
}

/// An interval of `ms` milliseconds numbered `i`, with every field a server fills.
pub fn interval(i: u64, ms: u64) -> IntervalReport {
    IntervalReport {
        start_ns: i * ms * 1_000_000,
        end_ns: (i + 1) * ms * 1_000_000,
        rx_bytes: 1_000_000 + i,
        rx_packets: Some(1000),
        rx_lost: Some(0),
        cpu_percent: Some(12.5),
        host: Some(Box::new(linerate_wire::host::IntervalHostCounters {
            rx_packets: Some(1000),
            tx_packets: Some(10),
            rx_dropped: Some(0),
            net_rx_softirqs: Some(100),
            net_tx_softirqs: Some(1),
            softnet_dropped: Some(0),
            softnet_time_squeeze: Some(0),
        })),
        ..IntervalReport::default()
    }
}

/// The usual end of a test on the server side: expects `stop`, sends `results` (marked
/// `intervals_streamed` when `streamed`), expects the client's `results` and says `done`.
#[track_caller]
pub fn finish(p: &mut Peer, report: SideReport, streamed: bool) -> SideReport {
    p.expect("stop");
    p.send(&Message::Results(Box::new(control::Results {
        report,
        intervals_streamed: streamed,
        capture: None,
    })))
    .unwrap();
    let Message::Results(theirs) = p.expect("results") else {
        unreachable!()
    };
    let _ = p.send(&Message::Done(control::Done {}));
    theirs.report
}

/// The local ports of connected UDP sockets whose peer is 127.0.0.1:`server_port`, read
/// from `/proc/net/udp` as anyone on the host can: the client sockets of the tests running
/// against that server.
pub fn client_udp_ports(server_port: u16) -> Vec<u16> {
    let text = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let port_of = |field: &str| {
        field
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, remote, state) = (f.get(1)?, f.get(2)?, f.get(3)?);
            let connected = *state == "01";
            let to_server = remote.starts_with("0100007F:") && port_of(remote)? == server_port;
            let lp = port_of(local)?;
            (connected && to_server && lp != server_port).then_some(lp)
        })
        .collect()
}
