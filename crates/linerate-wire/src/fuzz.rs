//! Entry points for fuzzing what a peer sends, shared by the cargo-fuzz targets in
//! `fuzz/` and by the bounded property tests that run with every `cargo test`: each takes
//! arbitrary bytes, must never panic, and checks what must hold for any input.

use crate::control::{decode_body, encode, FrameHeader, FRAME_HEADER_LEN, MAX_CONTROL_FRAME};
use crate::text;

/// A frame header and a message body from arbitrary bytes: the header is parsed (with a cap
/// taken from the input), the body decoded; a decoded message encodes again and decodes to
/// the same message, and escaping its strings leaves nothing a terminal would act on.
pub fn control_frame(data: &[u8]) {
    if data.len() >= FRAME_HEADER_LEN {
        let cap = u32::from(data[0]) << 8;
        if let Ok(h) = FrameHeader::parse(&data[..FRAME_HEADER_LEN], cap) {
            assert!(h.len <= cap, "a length over the cap was accepted");
        }
    }
    message(data);
}

/// A message body from arbitrary bytes (see [`control_frame`]).
pub fn message(body: &[u8]) {
    let Ok(m) = decode_body(body) else {
        return;
    };
    let frame = match encode(&m) {
        Ok(f) => f,
        // Only a body longer than the cap may fail to encode.
        Err(_) => {
            assert!(serde_json::to_vec(&m).map_or(true, |v| v.len() > MAX_CONTROL_FRAME as usize));
            return;
        }
    };
    let again = decode_body(&frame[FRAME_HEADER_LEN..]);
    assert_eq!(
        again.as_ref().ok(),
        Some(&m),
        "a message does not survive encoding"
    );
    let clean = text::sanitize_message(m);
    let json = serde_json::to_value(&clean).unwrap_or_default();
    assert!(!has_unsafe(&json), "an unsafe character survived escaping");
}

/// What an iperf3 peer sends (a client to `linerate serve`, a server to `linerate tcp|udp
/// --iperf3`), from arbitrary bytes: a cookie, a JSON length (capped), a state byte, and a
/// parameters or results body. Whatever parses obeys the checks (parallel within 1..=128,
/// no more result streams than the cap), and parsed parameters and results survive writing
/// and reading again.
pub fn iperf3(data: &[u8]) {
    use crate::iperf3::{json_len, Cookie, Params, Results, State, MAX_PARAMS_JSON};
    let _ = Cookie::parse(data);
    if data.len() >= 4 {
        if let Ok(n) = json_len([data[0], data[1], data[2], data[3]], MAX_PARAMS_JSON) {
            assert!(n > 0 && n <= MAX_PARAMS_JSON);
        }
    }
    if let Some(b) = data.first() {
        if let Ok(s) = State::from_byte(*b) {
            assert_eq!(s.byte(), *b);
        }
    }
    if let Ok(p) = Params::parse(data) {
        assert!((1..=128).contains(&p.parallel));
        assert!(p.stream_count() <= 256);
        // What linerate's client writes (`--iperf3`) reads back the same; a token is
        // never written, and the version string is display text (cut with a note of what
        // was cut, so a cut one is cut again differently): only its presence survives.
        let again = Params::parse(p.to_json().to_string().as_bytes()).map(|a| Params {
            client_version: a.client_version.map(|_| String::new()),
            ..a
        });
        let want = Params {
            has_authtoken: false,
            client_version: p.client_version.as_ref().map(|_| String::new()),
            ..p
        };
        assert_eq!(
            again.as_ref(),
            Ok(&want),
            "parameters do not survive writing"
        );
    }
    if let Ok(r) = Results::parse(data) {
        assert!(r.streams.len() <= crate::iperf3::MAX_RESULT_STREAMS);
        let again = Results::parse(r.to_json().to_string().as_bytes());
        assert!(again.is_ok(), "results do not survive writing");
    }
}

/// Seeds for [`iperf3`]: what a 3.12 client sends.
pub fn iperf3_seeds() -> Vec<Vec<u8>> {
    [
        r#"{"tcp":true,"omit":0,"time":0,"num":1048576,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"get_server_output":1,"client_version":"3.12"}"#,
        r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":32768,"bandwidth":10000000,"pacing_timer":1000,"client_version":"3.12"}"#,
        r#"{"cpu_util_total":38.5,"cpu_util_user":38.5,"cpu_util_system":0,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":1048576,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.001296}]}"#,
        r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":5,"retransmits":18446744073709551615,"jitter":0.0005,"errors":0,"omitted_errors":0,"packets":39,"omitted_packets":0,"start_time":0,"end_time":1.0}]}"#,
        "iexsvrn6rpu6fx4bblyrtakjh7asyxkb7qzs\0",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn has_unsafe(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => s.chars().any(text::is_unsafe),
        Value::Array(a) => a.iter().any(has_unsafe),
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| k.chars().any(text::is_unsafe) || has_unsafe(v)),
        _ => false,
    }
}

/// A body that decodes, for seeding: every message type the protocol has, as its peers
/// send it, to mutate from.
pub fn seeds() -> Vec<Vec<u8>> {
    [
        r#"{"type":"hello","data":{"protocol":{"major":1,"minor":3},"software":"linerate 0.1.0","features":["tcp_stream","udp_stream","bidir","interval_events"]}}"#,
        r#"{"type":"welcome","data":{"protocol":{"major":1,"minor":3},"session_id":"27cfa24c","features":["tcp_stream"],"software":"linerate 0.1.0","limits":{"max_duration_ms":3600000,"max_streams":128,"max_rate_bps":null,"max_write_size":1048576,"max_socket_buffer":67108864}}}"#,
        r#"{"type":"test_request","data":{"spec":{"transport":"tcp","direction":"send","streams":1,"duration_ms":1000,"bytes":null,"write_size":131072,"server_sndbuf":null,"server_rcvbuf":null,"nodelay":false,"mss":null,"congestion":null,"tos":null,"rate_bps":null,"interval_ms":1000,"omit_ms":0,"server_cpu":null,"udp_offload":true}}}"#,
        r#"{"type":"accept","data":{"token":"f357f454f8f8efdbdf056564c4b061c5","server_cpu_count":2}}"#,
        r#"{"type":"streams_ready","data":{"udp_ports":[4000,4001]}}"#,
        r#"{"type":"start","data":{}}"#,
        r#"{"type":"interval","data":{"interval":{"start_ns":162085,"end_ns":1000099832,"omitted":false,"tx_bytes":0,"rx_bytes":2318139286,"cpu_percent":99.5}}}"#,
        r#"{"type":"stop","data":{"interrupted":false}}"#,
        r#"{"type":"error","data":{"code":"busy","message":"retry later"}}"#,
        r#"{"type":"auth","data":{"user":"alice","nonce":"00","mac":"00"}}"#,
        r#"{"type":"done","data":{}}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_seed_decodes() {
        for s in seeds() {
            assert!(decode_body(&s).is_ok(), "{}", String::from_utf8_lossy(&s));
            message(&s);
        }
    }

    #[test]
    fn every_iperf3_seed_parses() {
        for s in iperf3_seeds() {
            iperf3(&s);
        }
        assert!(crate::iperf3::Params::parse(&iperf3_seeds()[0]).is_ok());
        assert!(crate::iperf3::Results::parse(&iperf3_seeds()[3]).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn iperf3_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            iperf3(&data);
        }

        #[test]
        fn mutated_iperf3_messages_never_panic(
            seed in 0usize..4,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            cut in any::<usize>(),
        ) {
            let mut body = iperf3_seeds()[seed].clone();
            for (at, b) in edits {
                let i = at % body.len();
                body[i] = b;
            }
            body.truncate(cut % (body.len() + 1));
            iperf3(&body);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            control_frame(&data);
        }

        #[test]
        fn mutated_messages_never_panic(
            seed in 0usize..11,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            cut in any::<usize>(),
        ) {
            let mut body = seeds()[seed].clone();
            for (at, b) in edits {
                let i = at % body.len();
                body[i] = b;
            }
            body.truncate(cut % (body.len() + 1));
            message(&body);
        }

        #[test]
        fn any_strings_in_a_message_are_escaped(s in "\\PC*|[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\u{202a}-\\u{202e}a-z\\n]{0,40}") {
            let body = serde_json::json!({"type": "error", "data": {"code": "busy", "message": s}}).to_string();
            message(body.as_bytes());
            let body = serde_json::json!({"type": s, "data": {}}).to_string();
            message(body.as_bytes());
        }
    }
}
