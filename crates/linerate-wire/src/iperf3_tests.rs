//! Fixtures are real exchanges of Debian's iperf3 3.12 client and server on loopback,
//! captured with tcpdump and split by direction with `tshark -z follow,tcp,raw,0`:
//! `-n 1M --get-server-output` (TCP, forward) and `-u -b 10M -t 1 -R` (UDP, reverse).

use super::*;

const TCP_C2S: &[u8] = include_bytes!("../fixtures/iperf3/3.12_tcp_n1m_c2s.bin");
const TCP_S2C: &[u8] = include_bytes!("../fixtures/iperf3/3.12_tcp_n1m_s2c.bin");
const UDP_C2S: &[u8] = include_bytes!("../fixtures/iperf3/3.12_udp_rev_c2s.bin");
const UDP_S2C: &[u8] = include_bytes!("../fixtures/iperf3/3.12_udp_rev_s2c.bin");

/// Splits a JSON message off the front of `b`.
fn take_json<'a>(b: &mut &'a [u8], max: u32) -> &'a [u8] {
    let len = json_len([b[0], b[1], b[2], b[3]], max).expect("length") as usize;
    let body = &b[4..4 + len];
    *b = &b[4 + len..];
    body
}

fn take_state(b: &mut &[u8]) -> State {
    let s = State::from_byte(b[0]).expect("state");
    *b = &b[1..];
    s
}

#[test]
fn a_3_12_tcp_client_side_parses() {
    let mut b = TCP_C2S;
    let cookie = Cookie::parse(b).expect("cookie");
    assert_eq!(cookie.as_str(), "iexsvrn6rpu6fx4bblyrtakjh7asyxkb7qzs");
    assert_eq!(cookie.to_bytes()[..], TCP_C2S[..COOKIE_LEN]);
    b = &b[COOKIE_LEN..];
    let p = Params::parse(take_json(&mut b, MAX_PARAMS_JSON)).expect("params");
    assert_eq!(p.protocol, Protocol::Tcp);
    assert_eq!(p.direction, Direction::Forward);
    assert_eq!(
        (p.parallel, p.time_s, p.bytes, p.len),
        (1, 0, 1 << 20, Some(131072))
    );
    assert!(p.get_server_output);
    assert_eq!(p.bandwidth_bps, None, "a missing bandwidth is unlimited");
    assert_eq!(p.client_version.as_deref(), Some("3.12"));
    assert_eq!(take_state(&mut b), State::TestEnd);
    let r = Results::parse(take_json(&mut b, MAX_CLIENT_RESULTS_JSON)).expect("results");
    assert_eq!(r.sender_has_retransmits, 1);
    assert_eq!(r.streams.len(), 1);
    assert_eq!((r.streams[0].id, r.streams[0].bytes), (1, 1 << 20));
    assert_eq!(r.streams[0].retransmits, Some(0));
    assert_eq!(
        r.streams[0].omitted_errors, None,
        "3.12 leaves out omitted_*"
    );
    assert_eq!(take_state(&mut b), State::IperfDone);
    assert!(b.is_empty());
}

#[test]
fn a_3_12_tcp_server_side_parses() {
    let mut b = TCP_S2C;
    for want in [
        State::ParamExchange,
        State::CreateStreams,
        State::TestStart,
        State::TestRunning,
        State::ExchangeResults,
    ] {
        assert_eq!(take_state(&mut b), want);
    }
    let r = Results::parse(take_json(&mut b, 1 << 20)).expect("results");
    // 3.12 writes −1 as 2^64 − 1: read as "receiver only" and "unknown".
    assert_eq!(r.sender_has_retransmits, -1);
    assert_eq!(r.streams[0].retransmits, None);
    assert!(r.server_output_json.is_some());
    assert_eq!(take_state(&mut b), State::DisplayResults);
    assert!(b.is_empty());
}

#[test]
fn a_3_12_udp_reverse_exchange_parses() {
    let mut b = &UDP_C2S[COOKIE_LEN..];
    let p = Params::parse(take_json(&mut b, MAX_PARAMS_JSON)).expect("params");
    assert_eq!(p.protocol, Protocol::Udp);
    assert_eq!(p.direction, Direction::Reverse);
    assert_eq!(
        (p.time_s, p.len, p.bandwidth_bps),
        (1, Some(32768), Some(10_000_000))
    );
    assert!(p.server_sends_on(0));
    assert_eq!(take_state(&mut b), State::TestEnd);
    let r = Results::parse(take_json(&mut b, MAX_CLIENT_RESULTS_JSON)).expect("results");
    assert_eq!(r.streams[0].packets, 39);
    assert_eq!(r.streams[0].retransmits, None);
    let mut s = &UDP_S2C[5..];
    let r = Results::parse(take_json(&mut s, 1 << 20)).expect("server results");
    assert!(r.streams[0].packets > 0);
}

#[test]
fn results_survive_a_round_trip_and_write_minus_one() {
    let r = Results::parse(take_json(&mut &TCP_S2C[5..], 1 << 20)).expect("results");
    let v = r.to_json();
    assert_eq!(v["sender_has_retransmits"], -1);
    assert_eq!(v["streams"][0]["retransmits"], -1);
    let again = Results::parse(v.to_string().as_bytes()).expect("again");
    assert_eq!(again, r);
    let wire = encode_json(&v);
    assert_eq!(
        json_len([wire[0], wire[1], wire[2], wire[3]], u32::MAX),
        Ok(wire.len() as u32 - 4)
    );
}

#[test]
fn every_length_a_peer_announces_is_capped() {
    // CVE-2023-38403: 0xFFFFFFFF + 1 wrapped to 0 in iperf3 and malloc(0) was overrun.
    let e = json_len([0xff; 4], MAX_PARAMS_JSON).unwrap_err();
    assert!(matches!(
        e.kind,
        WireErrorKind::TooLong {
            len: 0xffff_ffff,
            max: 8192
        }
    ));
    assert!(json_len([0, 0, 0x20, 1], MAX_PARAMS_JSON).is_err());
    assert!(json_len([0, 0, 0x20, 0], MAX_PARAMS_JSON).is_ok());
    assert!(json_len([0; 4], MAX_PARAMS_JSON).is_err(), "0 is refused");
    assert!(Params::parse(&vec![b' '; 9000]).is_err());
    let many = format!(
        r#"{{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{}]}}"#,
        vec![r#"{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}"#; 300]
            .join(",")
    );
    assert!(Results::parse(many.as_bytes()).is_err());
}

#[test]
fn params_are_checked_like_iperf3s_server() {
    let ok = |s: &str| Params::parse(s.as_bytes());
    assert!(ok(r#"{"tcp":true,"parallel":128}"#).is_ok());
    assert!(ok(r#"{"tcp":true,"parallel":129}"#).is_err());
    assert!(ok(r#"{"tcp":true,"parallel":0}"#).is_err());
    assert!(ok(r#"{"tcp":true,"udp":true}"#).is_err());
    assert!(ok(r#"{"sctp":true}"#).is_err());
    assert!(ok(r#"{"udp":true,"len":8}"#).is_err());
    assert!(ok(r#"{"udp":true,"len":65508}"#).is_err());
    assert!(ok(r#"{"tcp":true,"len":2000000}"#).is_err());
    assert!(ok(r#"{"tcp":true,"time":"10"}"#).is_err());
    assert!(ok(r#"{"tcp":true,"time":86401}"#).is_err());
    assert!(ok(r#"{"tcp":true,"omit":601}"#).is_err());
    assert!(ok(r#"{"tcp":true,"window":1e12}"#).is_err());
    assert!(ok(r#"[1,2]"#).is_err());
    let p = ok(r#"{"tcp":true,"bidirectional":true,"parallel":4}"#).expect("bidir");
    assert_eq!(p.stream_count(), 8);
    assert!(!p.server_sends_on(3));
    assert!(p.server_sends_on(4));
    assert!(ok(r#"{"tcp":true,"congestion":"cubic\u001b[2J"}"#).is_err());
    assert!(ok(r#"{"tcp":true,"congestion":"0123456789abcdef"}"#).is_err());
    let p = ok(r#"{"tcp":true,"congestion":"bbr"}"#).expect("cc");
    assert_eq!(p.congestion.as_deref(), Some("bbr"));
}

#[test]
fn cookies_and_states() {
    assert!(Cookie::could_start(b"abc2"));
    assert!(!Cookie::could_start(b"LR\x01\x00"));
    assert!(!Cookie::could_start(b"LRD1"));
    assert!(Cookie::parse(&[b'a'; 36]).is_err());
    let mut c = [b'a'; 37];
    assert!(Cookie::parse(&c).is_err(), "no NUL");
    c[36] = 0;
    assert!(Cookie::parse(&c).is_ok());
    c[3] = b'8';
    assert!(Cookie::parse(&c).is_err());
    let r = Cookie::from_random([255; 36]);
    assert!(Cookie::parse(&r.to_bytes()).is_ok());
    for b in 0..=255u8 {
        if let Ok(s) = State::from_byte(b) {
            assert_eq!(s.byte(), b);
        }
    }
    assert!(State::from_byte(3).is_err());
    assert_eq!(server_error(121, 0)[..5], [0xfe, 0, 0, 0, 121]);
}

#[test]
fn udp_header() {
    let h = UdpHeader {
        sec: 1,
        usec: 2,
        seq: 0x1_0000_0003,
    };
    let mut b = [0u8; 16];
    h.emit(&mut b, true);
    assert_eq!(UdpHeader::parse(&b, true), Ok(h));
    h.emit(&mut b, false);
    assert_eq!(UdpHeader::parse(&b, false).map(|h| h.seq), Ok(3));
    assert!(UdpHeader::parse(&b[..11], false).is_err());
}

#[test]
fn params_a_client_writes_read_back_the_same() {
    let p = Params {
        protocol: Protocol::Udp,
        direction: Direction::Bidir,
        parallel: 4,
        time_s: 3,
        omit_s: 1,
        bytes: 0,
        blocks: 0,
        len: Some(1400),
        window: Some(262_144),
        bandwidth_bps: Some(25_000_000),
        nodelay: false,
        mss: None,
        congestion: None,
        get_server_output: false,
        udp_counters_64bit: false,
        client_version: Some("linerate 1.0".into()),
        has_authtoken: false,
    };
    let j = p.to_json();
    assert_eq!(j["udp"], true);
    assert_eq!(j["bidirectional"], true);
    assert_eq!(j["bandwidth"], 25_000_000);
    assert_eq!(Params::parse(j.to_string().as_bytes()), Ok(p.clone()));
    let tcp = Params {
        protocol: Protocol::Tcp,
        direction: Direction::Reverse,
        parallel: 1,
        time_s: 0,
        bytes: 1 << 20,
        len: Some(131_072),
        window: None,
        bandwidth_bps: None,
        nodelay: true,
        mss: Some(1400),
        congestion: Some("cubic".into()),
        ..p
    };
    assert_eq!(Params::parse(tcp.to_json().to_string().as_bytes()), Ok(tcp));
}

#[test]
fn stream_ids_and_server_first_bytes() {
    assert_eq!(
        (0..5).map(stream_id).collect::<Vec<_>>(),
        vec![1, 3, 4, 5, 6]
    );
    assert!(is_server_first_byte(9));
    assert!(is_server_first_byte(0xff));
    assert!(is_server_first_byte(0xfe));
    // A linerate server's frames begin with "LR".
    assert!(!is_server_first_byte(b'L'));
}
