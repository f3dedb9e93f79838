//! The path-MTU estimate toward a peer: Linux's IP_MTU socket option has no counterpart
//! that Winsock answers for an unconnected route, so it is absent here (doctor says so).

use std::io;
use std::net::IpAddr;

/// The path-MTU estimate toward `peer`: not read on Windows.
pub fn path_mtu(_peer: IpAddr) -> io::Result<u32> {
    Err(super::needs_linux("the path MTU estimate (IP_MTU)"))
}
