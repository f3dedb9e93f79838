//! Words and labels that every rendering and the diagnosis's messages share.

use super::FlowDirection;

/// "client->server" or "server->client".
pub fn flow_label(dir: FlowDirection) -> &'static str {
    match dir {
        FlowDirection::ClientToServer => "client->server",
        FlowDirection::ServerToClient => "server->client",
    }
}

/// Splits "host:port", "\[v6\]:port", "v6" or "host" into host and port text.
pub fn split_host_port(server: &str) -> (&str, Option<&str>) {
    if let Some(rest) = server.strip_prefix('[') {
        if let Some((host, after)) = rest.split_once(']') {
            return (host, after.strip_prefix(':').filter(|p| !p.is_empty()));
        }
    }
    match server.rsplit_once(':') {
        // More than one colon without brackets: a bare IPv6 address.
        Some((host, _)) if host.contains(':') => (server, None),
        Some((host, port)) => (host, Some(port).filter(|p| !p.is_empty())),
        None => (server, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_split() {
        assert_eq!(split_host_port("10.0.0.2:5201"), ("10.0.0.2", Some("5201")));
        assert_eq!(
            split_host_port("example.net:80"),
            ("example.net", Some("80"))
        );
        assert_eq!(
            split_host_port("[2001:db8::7]:5201"),
            ("2001:db8::7", Some("5201"))
        );
        assert_eq!(split_host_port("[::1]"), ("::1", None));
        assert_eq!(split_host_port("2001:db8::7"), ("2001:db8::7", None));
        assert_eq!(split_host_port("host"), ("host", None));
        assert_eq!(split_host_port("host:"), ("host", None));
    }
}
