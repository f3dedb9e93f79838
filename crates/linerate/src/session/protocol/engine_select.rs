//! Which engine a test runs: the client and server sessions start either the stream
//! [`Engine`] or the [`RrEngine`] through [`Running`], so the control protocol's phases
//! (start, stop, results) stay the same for both kinds of test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use linerate_wire::control::{RrSpec, TestSpec};
use linerate_wire::report::{IntervalReport, Role, SideReport};

use crate::engine::{DataSocket, Engine, EngineConfig, StreamSetup};
use crate::model::plan::SockOpts;
use crate::rr::{Connector, CrrInbox, CrrListener, RrClientData, RrConfig, RrEngine, RrSocket};
use crate::sys;

/// Where a client's TCP_CRR streams connect.
#[derive(Debug, Clone)]
pub struct CrrTarget {
    /// Server address.
    pub addr: SocketAddr,
    /// The test's token.
    pub token: [u8; 16],
    /// Options for each connection.
    pub opts: SockOpts,
    /// Connect time-out.
    pub timeout: Duration,
    /// The server closes each connection first (feature `crr_server_closes`).
    pub server_closes: bool,
}

/// What a session hands the engine beyond the spec and its streams.
#[derive(Default)]
pub struct StartLinks {
    /// Where a TCP_CRR client's streams connect.
    pub crr: Option<CrrTarget>,
    /// A server TCP_CRR test's own listener (feature `crr_port`).
    pub crr_listener: Option<Arc<CrrListener>>,
    /// The test's control connection, whose segments a stream engine counts.
    pub control: Option<Arc<std::net::TcpStream>>,
    /// Host counters taken before the peer could start sending (raw-frame tests).
    pub early_host: Option<sys::hostsnap::HostSnapshot>,
}

/// The engine of a running test.
pub enum Running {
    /// A stream test.
    Stream(Box<Engine>),
    /// A request/response test.
    Rr(Box<RrEngine>),
}

impl Running {
    /// Starts the engine `spec` asks for, with what the session `links` to it.
    pub fn start(
        role: Role,
        spec: &TestSpec,
        cpu: Option<u32>,
        setups: Vec<StreamSetup>,
        links: StartLinks,
        sink: impl FnMut(IntervalReport) + Send + 'static,
    ) -> std::io::Result<Running> {
        let host = sys::host::host_info(&crate::software());
        let interval = Duration::from_millis(spec.interval_ms);
        let omit = Duration::from_millis(spec.omit_ms);
        let Some(rr) = &spec.rr else {
            let cfg = EngineConfig {
                role,
                transport: spec.transport,
                write_size: spec.write_size,
                interval,
                omit,
                cpu,
                udp_offload: spec.udp_offload,
                host,
                one_way_delay: spec.one_way_delay.clone(),
                smooth_pacing: spec.smooth_pacing,
                control: links.control,
                raw_frames: spec.raw_frames,
                raw_tx: spec.raw_tx,
                early_host: links.early_host,
                profile: spec.profile,
                send_mode: spec.send_mode,
                recv_mode: spec.recv_mode,
                iperf3: false,
            };
            return Engine::start(cfg, setups, sink).map(|e| Running::Stream(Box::new(e)));
        };
        let sockets = rr_sockets(role, spec, rr, setups, links.crr, links.crr_listener);
        let cfg = RrConfig {
            role,
            spec: rr.clone(),
            interval,
            omit,
            cpu,
            host,
            profile: spec.profile,
        };
        RrEngine::start(cfg, sockets, sink).map(|e| Running::Rr(Box::new(e)))
    }

    /// True if this end has sending streams (an RR client always sends).
    pub fn has_senders(&self) -> bool {
        match self {
            Running::Stream(e) => e.has_senders(),
            Running::Rr(_) => true,
        }
    }

    /// Stream tests: all senders ended by themselves. RR tests are timed: never.
    pub fn senders_done(&self) -> bool {
        match self {
            Running::Stream(e) => e.senders_done(),
            Running::Rr(_) => false,
        }
    }

    /// Stream tests: all receivers saw the end of their data. RR tests: never.
    pub fn receivers_done(&self) -> bool {
        match self {
            Running::Stream(e) => e.receivers_done(),
            Running::Rr(_) => false,
        }
    }

    /// Ends the measured window.
    pub fn stop_senders(&mut self) {
        match self {
            Running::Stream(e) => e.stop_senders(),
            Running::Rr(e) => e.stop(),
        }
    }

    /// The inbox for the server's TCP_CRR connections, `None` for other engines.
    pub fn crr_inbox(&self) -> Option<CrrInbox> {
        match self {
            Running::Rr(e) => Some(e.crr_inbox()).filter(|i| !i.is_empty()),
            Running::Stream(_) => None,
        }
    }

    /// Server TCP_CRR: a new data connection for stream `index` (ignored by stream tests,
    /// whose connections all arrived before the start).
    pub fn add_connection(&self, index: u16, s: std::net::TcpStream) {
        if let Running::Rr(e) = self {
            e.add_connection(index, s);
        }
    }

    /// Stops, joins and reports; RR tests also return the client's latency data.
    pub fn finish(
        self,
        quiet: Duration,
        max_drain: Duration,
    ) -> (SideReport, Option<RrClientData>) {
        match self {
            Running::Stream(e) => ((*e).finish(quiet, max_drain), None),
            Running::Rr(e) => {
                let (r, d) = (*e).finish();
                (r, Some(d))
            }
        }
    }
}

fn rr_sockets(
    role: Role,
    spec: &TestSpec,
    rr: &RrSpec,
    setups: Vec<StreamSetup>,
    crr: Option<CrrTarget>,
    listener: Option<Arc<CrrListener>>,
) -> Vec<(u16, RrSocket)> {
    if rr.connect_per_transaction {
        return (0..spec.streams)
            .map(|index| {
                let s = match (&crr, role) {
                    (Some(t), Role::Client) => RrSocket::Connect(Connector {
                        addr: t.addr,
                        token: t.token,
                        index,
                        opts: t.opts.clone(),
                        timeout: t.timeout,
                        server_closes: t.server_closes,
                    }),
                    (_, Role::Server) => match &listener {
                        Some(l) => RrSocket::Listen(l.clone()),
                        None => RrSocket::Accept(SockOpts::server(spec)),
                    },
                    _ => RrSocket::Accept(SockOpts::server(spec)),
                };
                (index, s)
            })
            .collect();
    }
    setups
        .into_iter()
        .filter_map(|s| {
            let sock = match s.socket {
                DataSocket::Tcp(t) => Arc::try_unwrap(t)
                    .or_else(|t| t.try_clone())
                    .ok()
                    .map(RrSocket::Tcp),
                DataSocket::Udp(u) => Arc::try_unwrap(u)
                    .or_else(|u| u.try_clone())
                    .ok()
                    .map(RrSocket::Udp),
                // No request/response test over QUIC streams.
                DataSocket::Quic(_) => None,
            };
            sock.map(|k| (s.index, k))
        })
        .collect()
}
