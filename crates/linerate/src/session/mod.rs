//! Client and server sessions of the control protocol, iperf3 in both roles, and the side
//! sessions that use the protocol. The folders are the plan:
//!
//! * [`protocol`]: linerate's control protocol. Two state machines without I/O
//!   ([`protocol::machine`]), the framed connection ([`protocol::conn`]), the optional
//!   HMAC-SHA256 challenge-response ([`protocol::auth`]), the client's driver
//!   ([`protocol::client`]) and what both ends share (a test's streams as the engine takes
//!   them, the engine a test runs, whether a peer's figures can be true);
//! * [`server`]: `linerate serve`: the accept loop, one driver per control connection, a
//!   test's data sockets, the capture, and its [`server::policy`] (limits, hooks, metrics):
//!   what it allows and reports, apart from how it serves;
//! * [`iperf3`]: iperf3 in both roles (`--iperf3` against an iperf3 server; iperf3 clients
//!   on `linerate serve`'s port) and what they share; the wire format stays in
//!   `linerate_wire::iperf3`;
//! * [`side`]: `--dut` and `--latency`, users of the protocol's client rather than parts
//!   of it.
//!
//! See `docs/protocol.md` for the message sequence. The drivers do the socket work, run the
//! engines and feed the machines what happened and when. Each session runs on its own
//! thread and waits on one channel of control events, data connections and engine
//! intervals, always with a deadline, so that no peer can make it wait forever.

pub mod iperf3;
pub mod protocol;
pub mod server;
pub mod side;

/// Documented default port for control and data, TCP and UDP.
pub const DEFAULT_PORT: u16 = 5301;

/// Why connecting to a server at `server` (port `port`) failed, with the advice that fits
/// the error: a refused connection means nothing listens there (`listener` names what
/// should, e.g. "`linerate serve`"); an unreachable network or host means no route or a link
/// down on the way; a time-out means no answer at all (a host down, a firewall that drops,
/// or a link down beyond the next hop). One line, for the error the client exits with.
pub fn connect_error(server: &str, port: u16, listener: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let advice = match e.kind() {
        K::ConnectionRefused => format!(
            "nothing listens on port {port}/tcp there: check that {listener} runs there on that port"
        ),
        K::NetworkUnreachable | K::HostUnreachable | K::NetworkDown => {
            "no route to it from this host: check the address, this host's routes and that the links on the way are up".into()
        }
        K::TimedOut => format!(
            "no answer: check that the host is up, that no firewall drops port {port}/tcp and that the links on the way are up"
        ),
        _ => format!(
            "check the address, that {listener} runs there and that port {port}/tcp is open"
        ),
    };
    format!("cannot reach {server} ({e}): {advice}")
}

#[cfg(test)]
mod tests {
    use super::connect_error;
    use std::io::{Error, ErrorKind};

    /// The advice follows the errno: refused, unreachable and timed out each get their own.
    #[test]
    fn connect_errors_get_advice_that_fits_their_cause() {
        let l = "`linerate serve`";
        let refused = connect_error("s", 5301, l, &Error::from(ErrorKind::ConnectionRefused));
        assert!(
            refused.contains("nothing listens on port 5301/tcp"),
            "{refused}"
        );
        assert!(refused.contains("`linerate serve` runs there"), "{refused}");
        for kind in [ErrorKind::NetworkUnreachable, ErrorKind::HostUnreachable] {
            let m = connect_error("s", 5301, l, &Error::from(kind));
            assert!(m.contains("no route to it"), "{m}");
            assert!(m.contains("links on the way are up"), "{m}");
            assert!(!m.contains("runs there"), "{m}");
        }
        let t = connect_error("s", 5301, l, &Error::new(ErrorKind::TimedOut, "timed out"));
        assert!(t.contains("no answer"), "{t}");
        assert!(t.contains("drops port 5301/tcp"), "{t}");
        assert!(!t.contains("runs there"), "{t}");
        for m in [refused, t] {
            assert!(!m.contains('\n'), "{m}");
        }
    }
}
