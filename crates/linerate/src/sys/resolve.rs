//! Host names to addresses.
//!
//! An IP address is taken as it is. A name goes to the C library's resolver (getaddrinfo:
//! /etc/nsswitch.conf, /etc/hosts, DNS) in a build with the `dns` feature, the full build's.
//! The board's core looks names up in /etc/hosts alone: glibc's resolver (getaddrinfo and
//! NSS) is about 130 KB of a static 32-bit PowerPC executable, and a static glibc
//! executable can resolve through NSS only with the shared NSS modules of the glibc
//! version it was linked with, which a board with busybox rarely has (scripts/cross.sh).
//! Boards are addressed by IP address.

use std::io;
use std::net::{IpAddr, SocketAddr};

/// The addresses of `host` (an IP address, or a name) with `port`, at least one.
pub fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let literal = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = by_name(host, port)?;
    if found.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no address"));
    }
    Ok(found)
}

#[cfg(feature = "dns")]
fn by_name(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    use std::net::ToSocketAddrs;
    Ok((host, port).to_socket_addrs()?.collect())
}

#[cfg(not(feature = "dns"))]
fn by_name(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    const HOSTS: &str = "/etc/hosts";
    let text = match std::fs::read_to_string(HOSTS) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{HOSTS}: {e}"))),
    };
    let mut ips = in_hosts(&text, host);
    if ips.is_empty() && host.eq_ignore_ascii_case("localhost") {
        ips = vec![IpAddr::from([127, 0, 0, 1])];
    }
    if ips.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("not in {HOSTS}, and this build (the board's core) looks names up there alone"),
        ));
    }
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

/// The addresses that a hosts file (`ADDRESS NAME [ALIAS...]` per line, `#` to the end of
/// a line is a comment) gives `name`, in the file's order. Names match without regard to
/// ASCII case; lines whose address does not parse are skipped.
pub fn in_hosts(text: &str, name: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(Ok(ip)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if fields.any(|n| n.eq_ignore_ascii_case(name)) && !out.contains(&ip) {
            out.push(ip);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTS: &str = "\
# static table
127.0.0.1\tlocalhost
::1     localhost ip6-localhost   # loopback
198.18.0.2 board Board-A  # the MPC8240
198.18.0.3 dut
not-an-address board
198.18.0.4 other # board
";

    #[test]
    fn a_hosts_file_gives_each_name_its_addresses_in_order() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            in_hosts(HOSTS, "localhost"),
            vec![ip("127.0.0.1"), ip("::1")]
        );
        assert_eq!(in_hosts(HOSTS, "BOARD-a"), vec![ip("198.18.0.2")]);
        assert_eq!(
            in_hosts(HOSTS, "board"),
            vec![ip("198.18.0.2")],
            "comments and bad lines"
        );
        assert_eq!(in_hosts(HOSTS, "dut"), vec![ip("198.18.0.3")]);
        assert!(in_hosts(HOSTS, "static").is_empty());
        assert!(in_hosts("", "board").is_empty());
    }

    #[test]
    fn an_address_is_taken_as_it_is() {
        let a = lookup("198.18.0.9", 5201).unwrap();
        assert_eq!(a, vec!["198.18.0.9:5201".parse().unwrap()]);
        let a = lookup("[::1]", 7).unwrap();
        assert_eq!(a, vec!["[::1]:7".parse().unwrap()]);
        let a = lookup("localhost", 7).unwrap();
        assert!(
            a.iter().all(|s| s.ip().is_loopback() && s.port() == 7),
            "{a:?}"
        );
    }

    // Without `dns` only: with it, the name would go to the machine's DNS servers.
    #[cfg(not(feature = "dns"))]
    #[test]
    fn a_name_nothing_knows_is_an_error() {
        let e = lookup("no-such-host.invalid", 1).unwrap_err();
        assert!(e.to_string().contains("/etc/hosts"), "{e}");
    }
}
