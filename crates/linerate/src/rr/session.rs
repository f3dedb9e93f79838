//! Glue between the control sessions and the engines: the client and server sessions run
//! either the stream [`Engine`] or the [`RrEngine`] through [`Running`], so the control
//! protocol's phases (start, stop, results) stay the same for both kinds of test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use linerate_wire::control::{ErrorCode, RrSpec, ServerLimits, TestSpec};
use linerate_wire::report::{IntervalReport, Role, SideReport};

use super::{Connector, RrClientData, RrConfig, RrEngine, RrSocket};
use crate::engine::{DataSocket, Engine, EngineConfig, StreamSetup};
use crate::model::RunRecord;
use crate::session::sockets::SockOpts;
use crate::sys;

/// Most requests in flight per stream a server accepts (`--burst`).
pub const MAX_BURST: u32 = 1024;
/// Longest UDP time-out a server accepts, ms.
pub const MAX_TIMEOUT_MS: u64 = 60_000;

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
}

/// What a session hands the engine beyond the spec and its streams.
#[derive(Default)]
pub struct StartLinks {
    /// Where a TCP_CRR client's streams connect.
    pub crr: Option<CrrTarget>,
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
                early_host: links.early_host,
            };
            return Engine::start(cfg, setups, sink).map(|e| Running::Stream(Box::new(e)));
        };
        let sockets = rr_sockets(role, spec, rr, setups, links.crr);
        let cfg = RrConfig {
            role,
            spec: rr.clone(),
            interval,
            omit,
            cpu,
            host,
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

    /// Server TCP_CRR: a new data connection for stream `index` (ignored by stream tests,
    /// whose connections all arrived before the start).
    /// The inbox for the server's TCP_CRR connections, `None` for other engines.
    pub fn crr_inbox(&self) -> Option<super::CrrInbox> {
        match self {
            Running::Rr(e) => Some(e.crr_inbox()).filter(|i| !i.is_empty()),
            Running::Stream(_) => None,
        }
    }

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
                    }),
                    _ => RrSocket::Accept,
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
            };
            sock.map(|k| (s.index, k))
        })
        .collect()
}

/// Checks an RR request against the server's limits; the message names the flag.
pub fn validate(rr: &RrSpec, limits: &ServerLimits) -> Result<(), (ErrorCode, String)> {
    let bad = |m: String| Err((ErrorCode::BadRequest, m));
    let max = limits.max_write_size;
    for (what, v) in [
        ("request", rr.request_bytes),
        ("response", rr.response_bytes),
    ] {
        if v == 0 || v > max {
            return Err((
                ErrorCode::LimitExceeded,
                format!("{what} size {v} is outside 1..={max} bytes (-r, or linerate serve --max-write-size)"),
            ));
        }
        if rr.udp
            && !(linerate_wire::probe::LEN as u32..=crate::session::MAX_UDP_PAYLOAD).contains(&v)
        {
            return bad(format!(
                "UDP {what} size {v} is outside {}..={} bytes (-r)",
                linerate_wire::probe::LEN,
                crate::session::MAX_UDP_PAYLOAD
            ));
        }
    }
    if rr.burst == 0 || rr.burst > MAX_BURST {
        return bad(format!(
            "burst {} is outside 1..={MAX_BURST} (--burst)",
            rr.burst
        ));
    }
    if rr.connect_per_transaction && (rr.burst != 1 || rr.udp) {
        return bad("TCP_CRR (--connect) runs one transaction at a time over TCP: drop --burst and --udp, use -P for parallel connections".into());
    }
    if rr.udp && (rr.timeout_ms == 0 || rr.timeout_ms > MAX_TIMEOUT_MS) {
        return bad(format!(
            "UDP time-out {} ms is outside 1..={MAX_TIMEOUT_MS} ms (--timeout)",
            rr.timeout_ms
        ));
    }
    if rr.target_tps == Some(0) {
        return bad("a target rate of 0 transactions/s is not a rate: leave --rate out".into());
    }
    Ok(())
}

/// Puts the RR summary into a client's record: transaction figures, latency, service
/// demand per transaction, and the warnings they give. Stream flows do not apply.
pub fn attach(rec: &mut RunRecord, rr: &RrSpec, data: &RrClientData) {
    let (summary, warnings) = super::summarize(rr, data, &rec.client, rec.server.as_ref());
    rec.summary.flows.clear();
    rec.warnings.extend(warnings);
    rec.rr = Some(summary);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ServerLimits {
        ServerLimits {
            max_duration_ms: 10_000,
            max_streams: 8,
            max_rate_bps: None,
            max_write_size: 1 << 20,
            max_socket_buffer: 1 << 26,
        }
    }

    fn spec() -> RrSpec {
        RrSpec {
            request_bytes: 1,
            response_bytes: 1,
            burst: 1,
            connect_per_transaction: false,
            udp: false,
            timeout_ms: 0,
            target_tps: None,
        }
    }

    #[test]
    fn server_limits_on_rr_requests_name_the_flag() {
        assert!(validate(&spec(), &limits()).is_ok());
        let check = |f: &dyn Fn(&mut RrSpec), flag: &str| {
            let mut s = spec();
            f(&mut s);
            let (_, msg) = validate(&s, &limits()).expect_err("refused");
            assert!(msg.contains(flag), "{msg}");
        };
        check(&|s| s.response_bytes = 2 << 20, "--max-write-size");
        check(&|s| s.burst = MAX_BURST + 1, "--burst");
        check(&|s| s.burst = 0, "--burst");
        check(
            &|s| {
                s.connect_per_transaction = true;
                s.burst = 2;
            },
            "-P",
        );
        check(
            &|s| {
                s.udp = true;
                s.request_bytes = 8;
            },
            "-r",
        );
        check(
            &|s| {
                s.udp = true;
                s.request_bytes = 16;
                s.response_bytes = 16;
            },
            "--timeout",
        );
        check(&|s| s.target_tps = Some(0), "--rate");
    }
}
