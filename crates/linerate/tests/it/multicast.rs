//! Multicast (issue 41, item 4) on loopback: the control protocol's join and its refusals
//! (not a group, over the server's limits, before authentication, over the request cap),
//! a test with two receivers and one that is not there, and the bad input refused before
//! any traffic.

use std::time::Duration;

use linerate_wire::control::{ErrorCode, Message};
use linerate_wire::multicast::McastJoin;

use crate::common::{bin, free_port, run_usage_error, TestServer};
use crate::fake::{all_features, FakeClient};
use crate::server_security::Serve;

fn join(group: &str) -> McastJoin {
    McastJoin {
        group: group.parse().unwrap(),
        port: 5001,
        source: None,
        duration_ms: 1000,
        len: 1000,
    }
}

/// Sends `m` after `hello` and returns the server's error (code, text).
fn refusal(c: &mut FakeClient, m: Message) -> (ErrorCode, String) {
    c.peer.send(&m).unwrap();
    match c.peer.recv_within(Duration::from_secs(5)) {
        Some(Message::Error(e)) => (e.code, e.message),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Whether this network namespace's kernel lists `group` as joined (/proc/net/igmp).
fn joined_anywhere(group: std::net::Ipv4Addr) -> bool {
    let hex = format!("{:08X}", u32::from_ne_bytes(group.octets()));
    std::fs::read_to_string("/proc/net/igmp").is_ok_and(|t| t.contains(&hex))
}

/// This namespace's UDP datagrams refused by a full socket buffer (/proc/net/snmp).
fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let i = names
        .split_whitespace()
        .position(|n| n == "RcvbufErrors")
        .unwrap();
    values.split_whitespace().nth(i).unwrap().parse().unwrap()
}

#[test]
fn a_join_must_name_a_group_within_the_servers_limits() {
    let srv = TestServer::start();
    let mut c = FakeClient::connect(srv.addr);
    c.hello(&all_features());
    let (code, text) = refusal(&mut c, Message::McastJoin(join("198.18.0.1")));
    assert_eq!(code, ErrorCode::BadRequest);
    assert!(text.contains("not a multicast group"), "{text}");
    let mut c = FakeClient::connect(srv.addr);
    c.hello(&all_features());
    let mut j = join("239.5.5.5");
    j.duration_ms = 1_000_000_000;
    let (code, text) = refusal(&mut c, Message::McastJoin(j));
    assert_eq!(code, ErrorCode::BadRequest);
    assert!(text.contains("--max-duration"), "{text}");
    // Without the feature in hello, a join is a protocol error.
    let mut c = FakeClient::connect(srv.addr);
    c.hello(&["udp_stream"]);
    let (code, _) = refusal(&mut c, Message::McastJoin(join("239.5.5.5")));
    assert_eq!(code, ErrorCode::Protocol);
    assert!(!joined_anywhere("239.5.5.5".parse().unwrap()));
}

#[test]
fn an_unauthenticated_peer_cannot_make_the_server_join() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "alice:s3cret\n").unwrap();
    std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
    let srv = Serve::start(&["--auth-users", users.to_str().unwrap()]);
    let mut c = FakeClient::connect(srv.addr);
    c.hello(&all_features());
    let (code, text) = refusal(&mut c, Message::McastJoin(join("239.6.6.6")));
    assert_eq!(code, ErrorCode::AuthRequired, "{text}");
    assert!(!joined_anywhere("239.6.6.6".parse().unwrap()));
}

#[test]
fn a_join_over_the_request_cap_is_refused_unread() {
    let srv = TestServer::start();
    let mut c = FakeClient::connect(srv.addr);
    c.hello(&all_features());
    // A valid join padded with an unknown field to 64 KiB: over the few KiB a request may
    // be before a test is accepted.
    let pad = "x".repeat(64 * 1024);
    let body = format!(
        r#"{{"type":"mcast_join","data":{{"group":"239.7.7.8","port":5001,"duration_ms":1000,"len":100,"pad":"{pad}"}}}}"#
    );
    let mut frame = b"LR\x01\x00".to_vec();
    frame.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(body.as_bytes());
    let _ = c.peer.send_raw(&frame);
    match c.peer.recv_within(Duration::from_secs(5)) {
        Some(Message::Error(e)) => assert_eq!(e.code, ErrorCode::Protocol, "{}", e.message),
        None => {}
        other => panic!("expected an error or the end, got {other:?}"),
    }
    assert!(!joined_anywhere("239.7.7.8".parse().unwrap()));
}

#[test]
fn two_receivers_on_loopback_and_one_that_is_not_there_each_have_a_row() {
    let (a, b) = (TestServer::start(), TestServer::start());
    // A port nothing listens on: the third receiver never joins.
    let gone = free_port();
    let port = free_port().to_string();
    let receivers = format!("{},{},127.0.0.1:{gone}", a.addr, b.addr);
    let args = [
        "udp",
        "239.8.8.8",
        "-p",
        &port,
        "--receivers",
        &receivers,
        "--mcast-interface",
        "lo",
        "-t",
        "0.5",
        "-b",
        "1M",
        "-l",
        "200",
        "--json",
    ];
    let before = udp_rcvbuf_errors();
    let out = bin().args(args).output().unwrap();
    let after = udp_rcvbuf_errors();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sent = rec["sender"]["datagrams"].as_u64().unwrap();
    // 1 Mbit/s of 200-byte datagrams for 0.5 s: never more than the rate allows.
    assert!(sent > 0 && sent <= 1_000_000 / 8 / 200 / 2 + 2, "{rec}");
    let rows = rec["receivers"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (row, srv) in rows.iter().zip([&a, &b]) {
        assert_eq!(row["name"], srv.addr.to_string());
        assert_eq!(row["status"], "received", "{row}");
        assert_eq!(row["interface"], "lo");
        let got = row["datagrams"].as_u64().unwrap();
        // Loopback loses only what a socket's buffer refuses (this host's counter).
        assert_eq!(row["lost"].as_u64().unwrap(), sent - got);
        assert!(
            sent - got <= after - before,
            "{row}: {} lost, {} refused",
            sent - got,
            after - before
        );
        assert_eq!(row["duplicates"], 0);
        assert!(row["delay"]["p50_ns"].as_u64().is_some(), "{row}");
    }
    assert_eq!(rows[2]["status"], "not_joined");
    assert!(rows[2].get("datagrams").is_none() && rows[2].get("loss_percent").is_none());
    let warnings = rec["warnings"].to_string();
    assert!(
        warnings.contains(&format!("127.0.0.1:{gone} never joined")),
        "{warnings}"
    );
}

#[test]
fn bad_multicast_input_is_one_line_and_exit_2_before_any_traffic() {
    for (args, says) in [
        (
            &["udp", "198.18.0.1", "--receivers", "127.0.0.1"][..],
            "not a multicast group",
        ),
        (&["udp", "239.1.1.1", "-T", "0"][..], "TTL"),
        (&["udp", "239.1.1.1", "-l", "70000"][..], "payload"),
        (&["udp", "239.1.1.1", "-R"][..], "-R does not apply"),
        (&["udp", "239.1.1.1", "-H", "239.2.2.2"][..], "unicast"),
        (
            &["udp", "239.1.1.1", "--format", "netperf"][..],
            "multicast test prints",
        ),
        (&["tcp", "239.1.1.1"][..], "TCP cannot"),
        (&["udp", "ff3e::1", "-H", "2001:db8::1"][..], "IPv6"),
    ] {
        let err = run_usage_error(args);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
