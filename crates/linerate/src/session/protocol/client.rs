//! The client's driver: the one connect path (connect, hello, welcome, version check,
//! authentication) that stream and RR tests, RFC 2544 trials and `linerate doctor` share,
//! and the run of a test, both through the [`ClientMachine`]. This file does the socket
//! work: it performs the machine's actions, waits for the next control message, engine
//! interval or deadline, and feeds it; the protocol's decisions are the machine's.

use crate::sys::net::AsSock;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linerate_wire::control::{self, Features, TestSpec, Transport, Welcome};
use linerate_wire::device::DeviceSnapshot;
use linerate_wire::doctor::{DoctorReport, DoctorRequest};
use linerate_wire::fleet::{FleetOrder, FleetReport};
use linerate_wire::hooks::{HookRequest, HookResult};
use linerate_wire::report::{IntervalReport, Role, SideReport, StreamRole};
use linerate_wire::stream_hello::{self, StreamHello};

use super::conn::{self, Backlog, ControlWriter, Incoming};
use super::engine_select::{CrrTarget, Running, StartLinks};
use super::machine::client::{Action, ClientConfig, ClientMachine, EngineStatus, Input, Phase};
use super::machine::earliest;
use crate::engine::{DataSocket, StreamSetup};
use crate::model::plan::Debug;
use crate::model::plan::{stream_slots, Credentials, SockOpts};
use crate::model::{PlanRecord, RunRecord};
use crate::rr::RrClientData;
use crate::sys::sockets;

pub use super::machine::client::ClientError;
/// The plan type's home is [`crate::model::plan`]; kept here for the callers of `run`.
use crate::model::plan::StreamPlan;

/// Receives live events while a test runs (console printer, JSON stream, tests).
pub trait Observer {
    /// One interval at one end.
    fn interval(&mut self, side: Role, iv: &IntervalReport);
    /// The test has started.
    fn started(&mut self, _plan: &PlanRecord, _started_at: &str) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {
    fn interval(&mut self, _: Role, _: &IntervalReport) {}
}

/// What the client's control thread waits on: the control connection and its engine.
enum Event {
    Ctl(Incoming),
    Interval(IntervalReport),
}

/// A server to connect to, and as whom.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its address.
    pub addr: SocketAddr,
    /// How the user named it ("host:port"), for messages.
    pub server: String,
    /// Time to connect.
    pub connect_timeout: Duration,
    /// Log control frames.
    pub debug: Debug,
    /// Credentials, for a server that asks for them.
    pub auth: Option<Credentials>,
}

impl Target {
    /// The server of `plan`, resolved.
    pub fn of(plan: &StreamPlan) -> anyhow::Result<Target> {
        Ok(Target {
            addr: resolve(&plan.host, plan.port)?,
            server: format!("{}:{}", plan.host, plan.port),
            connect_timeout: plan.connect_timeout,
            debug: plan.debug,
            auth: plan.auth.clone(),
        })
    }
}

/// The first address of `host`, with a one-line error that says what to check.
pub fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let found = crate::sys::resolve::lookup(host, port).with_context(|| {
        format!("cannot resolve '{host}': check the host name, or give an IP address")
    })?;
    found
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("'{host}' resolves to no address: check the host name"))
}

/// An open control session (after `welcome` and, if asked, authentication).
pub struct Connection {
    addr: SocketAddr,
    stream: TcpStream,
    writer: ControlWriter,
    rx: Receiver<Event>,
    tx: Sender<Event>,
    backlog: Backlog,
    machine: ClientMachine,
}

/// What the link between the driver and what it runs offers to the second.
struct Link<'a> {
    addr: SocketAddr,
    stream: &'a TcpStream,
    rx: &'a Receiver<Event>,
    tx: &'a Sender<Event>,
    backlog: &'a Backlog,
    /// The features both ends offer.
    features: Features,
    /// TCP_CRR: the port the server gave the test (feature `crr_port`).
    crr_port: Option<u16>,
    /// A QUIC test: the server's port and certificate hash (feature `quic`).
    quic: Option<&'a control::QuicOffer>,
}

/// The part of the driver that depends on what runs over the session: the actions beyond
/// sending and closing, the engine's intervals, and what the engine says while it runs.
trait Runner {
    fn perform(&mut self, link: &Link<'_>, a: Action) -> anyhow::Result<Option<Input>>;
    fn interval(&mut self, _iv: IntervalReport) {}
    /// Inputs from the running engine and the user, fed after every wake-up.
    fn poll(&mut self) -> Vec<Input> {
        Vec::new()
    }
    /// How often to wake up without an event (while an engine runs).
    fn tick(&self) -> Option<Duration> {
        None
    }
}

/// The connect path alone performs nothing but sends and closes.
struct Handshake;
impl Runner for Handshake {
    fn perform(&mut self, _: &Link<'_>, a: Action) -> anyhow::Result<Option<Input>> {
        bail!("internal error: the client machine asked for {a:?} before a test")
    }
}

/// Connects, says hello, checks the version and authenticates: the session is open.
pub fn connect(t: &Target) -> anyhow::Result<Connection> {
    // A full conntrack table on this host drops the SYN and the connect times out while
    // the server is fine: its figures before and after name that in the error.
    let conntrack = crate::sys::conntrack::Snapshot::read();
    let stream =
        sockets::connect_tcp(t.addr, &SockOpts::default(), t.connect_timeout).map_err(|e| {
            let timed_out = e.kind() == std::io::ErrorKind::TimedOut;
            let mut msg = crate::session::connect_error(
                &format!("a linerate server at {}", t.server),
                t.addr.port(),
                "`linerate serve`",
                &e,
            );
            if let Some(ct) = timed_out
                .then(|| crate::sys::conntrack::explain(conntrack.as_ref()))
                .flatten()
            {
                msg.push_str(&format!("; this host's {ct}"));
            }
            anyhow!(msg)
        })?;
    let (tx, rx) = mpsc::channel();
    let reader = stream.try_clone()?;
    let max = control::MAX_CONTROL_FRAME;
    let backlog = conn::spawn_reader(
        reader,
        conn::FrameCap::new(max),
        t.debug,
        "client",
        tx.clone(),
        Event::Ctl,
    )?;
    let writer = ControlWriter::new(stream.try_clone()?, "client", t.debug)?;
    let cfg = ClientConfig {
        server: t.server.clone(),
        credentials: t.auth.clone(),
        client_nonce: super::auth::nonce()?,
        software: crate::software(),
    };
    let mut c = Connection {
        addr: t.addr,
        stream,
        writer,
        rx,
        tx,
        backlog,
        machine: ClientMachine::new(cfg, Instant::now()),
    };
    c.drive(&mut Handshake, |p| *p == Phase::Connected)?;
    Ok(c)
}

impl Connection {
    /// The server's `welcome`.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.machine.welcome()
    }

    /// The features both ends offer.
    pub fn features(&self) -> Features {
        self.machine.features()
    }

    /// What the connect path noticed (e.g. credentials the server did not ask for).
    pub fn warnings(&self) -> &[String] {
        self.machine.warnings()
    }

    /// The control connection's smoothed RTT from TCP_INFO, microseconds.
    pub fn rtt_us(&self) -> Option<u32> {
        crate::sys::tcp_info::read_tcp_info(self.stream.as_sock())
            .ok()
            .map(|i| i.rtt_us)
            .filter(|&r| r > 0)
    }

    /// Asks for the server's settings (feature `doctor`) and ends the session.
    pub fn doctor(mut self, req: DoctorRequest) -> anyhow::Result<DoctorReport> {
        self.machine.request_doctor(Instant::now(), req);
        self.drive(&mut Handshake, |p| *p == Phase::Closed)?;
        self.machine
            .take_doctor_report()
            .ok_or_else(|| anyhow!("protocol error: no doctor_report"))
    }

    /// Orders a third-party test from an agent (feature `fleet_orders`) and ends the
    /// session; an agent's refusal (`busy`, `bad_request`, ...) is the error.
    pub fn order(mut self, order: FleetOrder, wait: Duration) -> anyhow::Result<FleetReport> {
        self.machine.request_order(Instant::now(), order, wait);
        self.drive(&mut Handshake, |p| *p == Phase::Closed)?;
        self.machine
            .take_fleet_report()
            .ok_or_else(|| anyhow!("protocol error: no fleet_report"))
    }

    /// Asks the server to run a hook its operator declared (feature `hooks`); the session
    /// stays open for the next one. A refused hook (not declared, a value out of range) is
    /// the server's error, and ends the session.
    pub fn hook(&mut self, req: HookRequest) -> anyhow::Result<HookResult> {
        self.machine.request_hook(Instant::now(), req);
        self.drive(&mut Handshake, |p| *p == Phase::Connected)?;
        self.machine
            .take_hook_result()
            .ok_or_else(|| anyhow!("protocol error: no hook_result"))
    }

    /// Asks the device under test for a snapshot of its counters (feature
    /// `device_counters`); the session stays open for the next one. A device that does not
    /// answer within `DUT_ANSWER_WAIT` is an error.
    pub fn counters(&mut self, now: Instant) -> anyhow::Result<DeviceSnapshot> {
        self.machine.request_counters(now);
        self.drive(&mut Handshake, |p| *p == Phase::Connected)?;
        self.machine
            .take_counters()
            .ok_or_else(|| anyhow!("protocol error: no counters_snapshot"))
    }

    /// Orders the server to join a multicast group (feature `multicast`) and waits for it
    /// to have joined; the session stays open until [`Connection::mcast_stop`]. A refusal
    /// (not a group, busy, the kernel's error) is the error.
    pub fn mcast_join(
        &mut self,
        j: linerate_wire::multicast::McastJoin,
    ) -> anyhow::Result<linerate_wire::multicast::McastJoined> {
        self.machine.request_mcast_join(Instant::now(), j);
        self.drive(&mut Handshake, |p| *p == Phase::Connected)?;
        self.machine
            .mcast_joined()
            .cloned()
            .ok_or_else(|| anyhow!("protocol error: no mcast_joined"))
    }

    /// Tells the receiver that `sent` datagrams went out and takes its report; the session
    /// ends.
    pub fn mcast_stop(
        mut self,
        sent: u64,
    ) -> anyhow::Result<linerate_wire::multicast::McastReport> {
        self.machine.request_mcast_stop(Instant::now(), sent);
        self.drive(&mut Handshake, |p| *p == Phase::Closed)?;
        self.machine
            .take_mcast_report()
            .ok_or_else(|| anyhow!("protocol error: no mcast_report"))
    }

    /// Performs the machine's actions and feeds it until `done(phase)`; a failure of the
    /// session is the error.
    fn drive(&mut self, r: &mut dyn Runner, done: fn(&Phase) -> bool) -> anyhow::Result<()> {
        loop {
            self.pump(r)?;
            if let Some(e) = self.machine.error() {
                return Err(e.clone().into());
            }
            if done(self.machine.phase()) {
                return Ok(());
            }
            self.wait(r);
        }
    }

    fn pump(&mut self, r: &mut dyn Runner) -> anyhow::Result<()> {
        while let Some(a) = self.machine.poll_action() {
            let input = match a {
                Action::Send(m) => self.writer.send(&m).err().map(|e| Input::SendFailed {
                    message: m.name(),
                    error: e.to_string(),
                }),
                Action::Close => {
                    self.writer.close();
                    None
                }
                a => {
                    let link = Link {
                        addr: self.addr,
                        stream: &self.stream,
                        rx: &self.rx,
                        tx: &self.tx,
                        backlog: &self.backlog,
                        features: self.machine.features(),
                        crr_port: self.machine.crr_port(),
                        quic: self.machine.quic(),
                    };
                    r.perform(&link, a)?
                }
            };
            if let Some(i) = input {
                self.machine.handle(Instant::now(), i);
            }
        }
        Ok(())
    }

    /// Waits for the next event, the next deadline or the runner's tick, and feeds it.
    fn wait(&mut self, r: &mut dyn Runner) {
        let now = Instant::now();
        let tick = r.tick().map(|t| now + t);
        let until = earliest(self.machine.poll_timeout(), tick).unwrap_or(now + TICK);
        match conn::recv_until(&self.rx, until) {
            Some(Event::Ctl(i)) => {
                self.backlog.took();
                self.machine.handle(Instant::now(), Input::Received(i))
            }
            Some(Event::Interval(iv)) => r.interval(iv),
            None => {}
        }
        let now = Instant::now();
        for i in r.poll() {
            self.machine.handle(now, i);
        }
        self.machine.handle_timeout(now);
    }
}

impl Drop for Connection {
    /// Closes the connection, which also ends the reader thread.
    fn drop(&mut self) {
        self.writer.close();
    }
}

/// How often a running test looks at its engine and at Ctrl-C.
const TICK: Duration = Duration::from_millis(20);

/// Runs one stream or RR test against a server. `interrupt` (set by Ctrl-C) ends the test
/// early; what was measured is still returned.
pub fn run(
    plan: &StreamPlan,
    observer: &mut dyn Observer,
    interrupt: &AtomicBool,
) -> anyhow::Result<RunRecord> {
    run_with_dut(plan, observer, interrupt, None)
}

/// What watches a test's window from beside the protocol (`--dut`'s counters session to
/// the device under test, `session::side::dut::DutProbe`): told when the window starts and ends,
/// it gives what it counted over the window, or warnings of why it could not.
pub trait WindowWatch {
    /// The window starts.
    fn window_start(&mut self);
    /// The window ends: the counters over it, and warnings.
    fn window_end(&mut self) -> (Option<crate::model::dut::DutCounters>, Vec<String>);
}

/// [`run`], and with `dut` the device under test's counters over the test
/// ([`RunRecord::dut`]): a snapshot before the client announces its streams (so before
/// either end sends data) and one after both engines finished (so after the last datagram
/// drained); the window thus holds the test's data and the few control packets around it.
pub fn run_with_dut(
    plan: &StreamPlan,
    observer: &mut dyn Observer,
    interrupt: &AtomicBool,
    dut: Option<&mut dyn WindowWatch>,
) -> anyhow::Result<RunRecord> {
    let target = Target::of(plan)?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut c = connect(&target)?;
    c.machine.set_max_time(plan.max_time);
    c.machine.request_test(Instant::now(), plan.spec.clone());
    let mut t = TestRun {
        plan,
        observer,
        interrupt,
        started_at,
        token: [0; 16],
        setups: Vec::new(),
        hellos: Vec::new(),
        early_host: None,
        engine: None,
        client_intervals: Vec::new(),
        report: None,
        rr_data: None,
        dut: dut.map(|d| d as &mut dyn WindowWatch),
        dut_result: None,
    };
    c.drive(&mut t, |p| *p == Phase::Closed)?;
    let outcome = c.machine.outcome();
    t.record(outcome)
}

/// The client's side of one test while it runs.
struct TestRun<'a> {
    plan: &'a StreamPlan,
    observer: &'a mut dyn Observer,
    interrupt: &'a AtomicBool,
    started_at: String,
    token: [u8; 16],
    setups: Vec<StreamSetup>,
    /// Each UDP stream's socket and stream hello (protocol 1.3).
    hellos: Vec<(Arc<UdpSocket>, [u8; stream_hello::LEN])>,
    early_host: Option<crate::sys::hostsnap::HostSnapshot>,
    engine: Option<Running>,
    client_intervals: Vec<IntervalReport>,
    report: Option<SideReport>,
    rr_data: Option<RrClientData>,
    /// The device under test (`--dut`), and what it counted.
    dut: Option<&'a mut dyn WindowWatch>,
    dut_result: Option<(Option<crate::model::dut::DutCounters>, Vec<String>)>,
}

impl Runner for TestRun<'_> {
    fn perform(&mut self, link: &Link<'_>, a: Action) -> anyhow::Result<Option<Input>> {
        Ok(match a {
            Action::OpenStreams { token } => Some(self.open_streams(link, token)?),
            Action::SendUdpHellos => {
                for (u, h) in &self.hellos {
                    // An error here is an ICMP report from an earlier one; the next try
                    // will tell.
                    let _ = u.send(h);
                }
                None
            }
            Action::StartEngine(spec) => Some(self.start_engine(link, &spec)?),
            Action::ServerInterval(iv) => {
                self.observer.interval(Role::Server, &iv);
                None
            }
            Action::StopSenders => {
                if let Some(e) = &mut self.engine {
                    e.stop_senders();
                }
                None
            }
            Action::FinishEngine => Some(self.finish_engine(link)?),
            Action::Send(_) | Action::Close => None,
        })
    }

    fn interval(&mut self, iv: IntervalReport) {
        self.observer.interval(Role::Client, &iv);
        self.client_intervals.push(iv);
    }

    fn poll(&mut self) -> Vec<Input> {
        let Some(e) = &self.engine else {
            return Vec::new();
        };
        let mut v = Vec::with_capacity(2);
        if self.interrupt.load(SeqCst) {
            v.push(Input::Interrupt);
        }
        v.push(Input::Engine(EngineStatus {
            has_senders: e.has_senders(),
            senders_done: e.senders_done(),
            receivers_done: e.receivers_done(),
        }));
        v
    }

    fn tick(&self) -> Option<Duration> {
        self.engine.as_ref().map(|_| TICK)
    }
}

impl TestRun<'_> {
    fn open_streams(&mut self, link: &Link<'_>, token: [u8; 16]) -> anyhow::Result<Input> {
        self.token = token;
        self.setups = match link.quic {
            Some(offer) if self.plan.spec.transport == Transport::Quic => {
                open_quic_streams(self.plan, link, offer, token)?
            }
            _ => open_streams(self.plan, link.addr, link.stream, token)?,
        };
        // The device's window opens before `streams_ready`: neither end sends data before.
        if let Some(p) = self.dut.as_deref_mut() {
            p.window_start();
        }
        let spec = &self.plan.spec;
        // A UDP test whose server sends (raw frames or datagrams): take this end's host
        // counters now, before the server can start (its senders start before its `start`
        // reaches this end), so that every datagram or frame received falls in the
        // interface counters' window (RFC 2544's cross-check; the receiver's datagrams per
        // packet). On a slow board the gap was tens of milliseconds of datagrams.
        if spec.transport == Transport::Udp && spec.direction.client_receives() {
            let iface = crate::sys::iface::route_interface(link.addr.ip()).ok();
            self.early_host = Some(crate::sys::hostsnap::HostSnapshot::take(iface.as_deref()).0);
        }
        let mut udp_ports = Vec::new();
        for s in &self.setups {
            if let DataSocket::Udp(u) = &s.socket {
                udp_ports.push(u.local_addr()?.port());
                let stream_index = s.index;
                self.hellos.push((
                    u.clone(),
                    StreamHello {
                        token,
                        stream_index,
                    }
                    .to_bytes(),
                ));
            }
        }
        Ok(Input::StreamsOpened { udp_ports })
    }

    fn start_engine(&mut self, link: &Link<'_>, spec: &TestSpec) -> anyhow::Result<Input> {
        let plan = self.plan;
        self.observer.started(&plan.record(), &self.started_at);
        let crr = CrrTarget {
            addr: link
                .crr_port
                .map_or(link.addr, |p| SocketAddr::new(link.addr.ip(), p)),
            token: self.token,
            opts: plan.local.clone(),
            timeout: plan.connect_timeout,
            server_closes: link
                .features
                .has(linerate_wire::control::Feature::CrrServerCloses),
        };
        let tx = link.tx.clone();
        let sink = move |iv| {
            let _ = tx.send(Event::Interval(iv));
        };
        let links = StartLinks {
            crr: Some(crr),
            crr_listener: None,
            control: Some(Arc::new(link.stream.try_clone()?)),
            early_host: self.early_host.take(),
        };
        let setups = std::mem::take(&mut self.setups);
        let engine = Running::start(Role::Client, spec, plan.client_cpu, setups, links, sink)?;
        self.engine = Some(engine);
        Ok(Input::EngineStarted)
    }

    fn finish_engine(&mut self, link: &Link<'_>) -> anyhow::Result<Input> {
        let Some(engine) = self.engine.take() else {
            bail!("internal error: no engine to finish");
        };
        let (report, rr_data) = engine.finish(Duration::from_millis(50), Duration::from_secs(2));
        // Both ends' engines are done (the server's results came, or were given up on).
        if let Some(p) = self.dut.as_deref_mut() {
            self.dut_result = Some(p.window_end());
        }
        // The last intervals; control messages that come meanwhile are late.
        while let Ok(ev) = link.rx.try_recv() {
            match ev {
                Event::Interval(iv) => self.interval(iv),
                Event::Ctl(_) => link.backlog.took(),
            }
        }
        self.rr_data = rr_data;
        self.report = Some(report.clone());
        Ok(Input::EngineFinished(Box::new(report)))
    }

    /// The record of the test: both ends' reports, the warnings, the diagnosis.
    fn record(self, o: super::machine::client::TestOutcome) -> anyhow::Result<RunRecord> {
        let Some(mut report) = self.report else {
            bail!("internal error: the test ended without a report");
        };
        report.intervals = self.client_intervals;
        let mut warnings = o.warnings;
        if self.plan.spec.rr.is_none() && !o.interrupted {
            warnings.extend(idle_senders_warning(&report, o.server_report.as_ref()));
        }
        let mut rec = build_record(
            self.plan.record(),
            self.started_at,
            o.protocol,
            o.interrupted,
            report,
            o.server_report,
            warnings,
        );
        if let (Some(rr), Some(data)) = (&self.plan.spec.rr, self.rr_data) {
            let (summary, w) = crate::rr::summarize(rr, &data, &rec.client, rec.server.as_ref());
            rec.summary.flows.clear();
            rec.warnings.extend(w);
            rec.rr = Some(summary);
            rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
        }
        rec.server_capture = o.server_capture;
        rec.failure = o.failure;
        if let Some((dut, w)) = self.dut_result {
            rec.warnings.extend(w);
            rec.dut = dut;
            rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
        }
        Ok(rec)
    }
}

/// Assembles the record ([`RunRecord::from_reports`]) and diagnoses it.
pub fn build_record(
    plan: PlanRecord,
    started_at: String,
    protocol: Option<control::ProtocolVersion>,
    interrupted: bool,
    client: SideReport,
    server: Option<SideReport>,
    warnings: Vec<String>,
) -> RunRecord {
    let mut rec = RunRecord::from_reports(
        plan,
        started_at,
        protocol,
        interrupted,
        client,
        server,
        warnings,
    );
    rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
    rec
}

/// A warning when some of several sending streams sent nothing: on a busy host with many
/// streams (-P) a short test can end before every thread got a CPU. The totals are still
/// right, but the streams did not run side by side.
fn idle_senders_warning(client: &SideReport, server: Option<&SideReport>) -> Option<String> {
    let senders: Vec<_> = client
        .streams
        .iter()
        .chain(server.iter().flat_map(|s| &s.streams))
        .filter(|s| s.role == StreamRole::Tx)
        .collect();
    let idle: Vec<String> = senders
        .iter()
        .filter(|s| s.bytes == 0)
        .map(|s| s.index.to_string())
        .collect();
    (senders.len() > 1 && !idle.is_empty()).then(|| {
        format!(
            "{} of {} sending streams sent nothing (stream {}): their threads got no CPU before the test ended, so the streams did not all run side by side; use a longer -t or fewer -P",
            idle.len(),
            senders.len(),
            idle.join(", ")
        )
    })
}

/// Opens the test's data streams (none for TCP_CRR): a TCP connection per stream that
/// starts with the stream hello, or a connected UDP socket per stream.
fn open_streams(
    plan: &StreamPlan,
    addr: SocketAddr,
    control_conn: &TcpStream,
    token: [u8; 16],
) -> anyhow::Result<Vec<StreamSetup>> {
    let spec = &plan.spec;
    let local = plan.client_sock_opts();
    let local_ip = sockets::canonical(control_conn.local_addr()?.ip());
    let mut out = Vec::new();
    for slot in stream_slots(spec, Role::Client) {
        let index = slot.index;
        let socket = match spec.transport {
            Transport::Tcp => {
                let mut s = sockets::connect_tcp(addr, &local, plan.connect_timeout)
                    .with_context(|| format!("opening data connection {index} to {addr}"))?;
                use std::io::Write;
                s.write_all(
                    &StreamHello {
                        token,
                        stream_index: index,
                    }
                    .to_bytes(),
                )?;
                DataSocket::Tcp(Arc::new(s))
            }
            Transport::Udp => {
                let u = sockets::udp_socket(SocketAddr::new(local_ip, 0), addr, &local, false)
                    .with_context(|| format!("opening UDP socket {index} to {addr}"))?;
                DataSocket::Udp(Arc::new(u))
            }
            Transport::Quic => bail!("the server accepted the QUIC test without a QUIC port"),
        };
        out.push(super::stream_setup::setup(slot, socket, spec));
    }
    Ok(out)
}

/// Opens a QUIC test's streams: its connections to the port the server gave, the
/// certificate pinned to the hash it gave, and a stream per slot, each with its hello.
fn open_quic_streams(
    plan: &StreamPlan,
    link: &Link<'_>,
    offer: &control::QuicOffer,
    token: [u8; 16],
) -> anyhow::Result<Vec<StreamSetup>> {
    let spec = &plan.spec;
    let slots = stream_slots(spec, Role::Client);
    let indices: Vec<u16> = slots.iter().map(|s| s.index).collect();
    let target = crate::engine::quic::Target {
        addr: SocketAddr::new(link.addr.ip(), offer.port),
        local_ip: sockets::canonical(link.stream.local_addr()?.ip()),
        cert_sha256: offer.cert_sha256.clone(),
        timeout: plan.connect_timeout,
    };
    let connections = spec.quic_connections.unwrap_or(1);
    let streams = crate::engine::quic::connect(&target, token, connections, &indices)
        .map_err(anyhow::Error::msg)?;
    Ok(slots
        .into_iter()
        .zip(streams)
        .map(|(slot, q)| super::stream_setup::setup(slot, DataSocket::Quic(Arc::new(q)), spec))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::idle_senders_warning;

    #[test]
    fn a_sending_stream_that_sent_nothing_is_named() {
        let rec = crate::model::fixtures::tcp_send();
        let mut client = rec.client.clone();
        assert_eq!(idle_senders_warning(&client, rec.server.as_ref()), None);
        let mut idle = client.streams[0].clone();
        idle.index = 7;
        idle.bytes = 0;
        client.streams.push(idle);
        let w = idle_senders_warning(&client, rec.server.as_ref()).unwrap();
        assert!(
            w.starts_with("1 of 2 sending streams sent nothing (stream 7)"),
            "{w}"
        );
        // One stream alone is never "idle beside others".
        client.streams.remove(0);
        assert_eq!(idle_senders_warning(&client, None), None);
    }
}
