//! The server's data sockets of a test: the TCP connections that arrived, with the options
//! the test asks for, or a UDP socket per stream bound to the server's port and connected
//! to the client port `streams_ready` listed, once that port is claimed for the test.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;

use linerate_wire::control::{ErrorCode, TestSpec, Transport};
use linerate_wire::report::Role;

use super::policy::limits::Refusal;
use super::Ctx;
use crate::engine::quic::QuicStream;
use crate::engine::{DataSocket, StreamSetup};
use crate::model::plan::{stream_slots, SockOpts};
use crate::sys::sockets;

/// Claims the client addresses of a test's UDP streams for it: a port that a running test
/// already uses is refused (its server socket would be connected to the same address, and
/// the kernel would split the datagrams between the two tests). The server machine has
/// refused port 0 and ports listed twice before.
pub(in crate::session) fn claim_udp_peers(
    ctx: &Ctx,
    peer_ip: IpAddr,
    ports: &[u16],
    token: &[u8; 16],
) -> Result<(), Refusal> {
    let Ok(mut claims) = ctx.udp_peers.lock() else {
        return Err((ErrorCode::Internal, "UDP port registry unavailable".into()));
    };
    let taken = ports
        .iter()
        .map(|&p| SocketAddr::new(peer_ip, p))
        .find(|a| claims.get(a).is_some_and(|owner| owner != token));
    if let Some(a) = taken {
        return Err((ErrorCode::BadRequest, format!(
            "UDP port {} of {} belongs to another test running on this server: each UDP stream needs its own client port",
            a.port(),
            a.ip()
        )));
    }
    for &p in ports {
        claims.insert(SocketAddr::new(peer_ip, p), *token);
    }
    Ok(())
}

/// The addresses of the test's two ends, as the data sockets use them.
pub(super) struct Ends {
    /// The server's address on the control connection, and its port.
    pub local: SocketAddr,
    /// The client's address (canonical).
    pub peer_ip: IpAddr,
}

/// The streams that arrived before the start, by stream index.
pub(super) struct Arrived<'a> {
    /// TCP data connections.
    pub tcp: &'a mut HashMap<u16, TcpStream>,
    /// QUIC streams.
    pub quic: &'a mut HashMap<u16, QuicStream>,
}

/// The engine's setups of the test's streams, in stream order: the TCP connections or QUIC
/// streams that arrived (by index) or new UDP sockets to the client's ports.
pub(super) fn set_up(
    spec: &TestSpec,
    ends: &Ends,
    arrived: Arrived<'_>,
    udp_ports: &[u16],
) -> Result<Vec<StreamSetup>, Refusal> {
    let Arrived { tcp, quic } = arrived;
    let opts = SockOpts::server(spec);
    let mut out = Vec::new();
    for (pos, slot) in stream_slots(spec, Role::Server).into_iter().enumerate() {
        let socket = match spec.transport {
            Transport::Tcp => {
                let Some(st) = tcp.remove(&slot.index) else {
                    let e = format!("stream {} missing", slot.index);
                    return Err((ErrorCode::Protocol, e));
                };
                let v6 = ends.local.is_ipv6();
                sockets::apply(&socket2::SockRef::from(&st), &opts, true, v6)
                    .map_err(|e| (ErrorCode::BadRequest, format!("on the server: {e}")))?;
                DataSocket::Tcp(Arc::new(st))
            }
            Transport::Udp => {
                let port = udp_ports.get(pos).copied().unwrap_or(0);
                let peer = SocketAddr::new(ends.peer_ip, port);
                let u = sockets::udp_socket(ends.local, peer, &opts, true).map_err(|e| {
                    (
                        ErrorCode::BadRequest,
                        format!("on the server: UDP socket: {e}"),
                    )
                })?;
                DataSocket::Udp(Arc::new(u))
            }
            Transport::Quic => match quic.remove(&slot.index) {
                Some(q) => DataSocket::Quic(Arc::new(q)),
                None => {
                    let e = format!("QUIC stream {} missing", slot.index);
                    return Err((ErrorCode::Protocol, e));
                }
            },
        };
        out.push(crate::session::protocol::stream_setup::setup(
            slot, socket, spec,
        ));
    }
    Ok(out)
}
