//! The records of hooks, device counters and doctor in their control messages: the tagged
//! envelope each travels in, golden and read back. Here, beside the messages, so that
//! those records' files need not import the messages that carry them.

use crate::control::{self, Message};
use crate::device::{CountersRequest, DeviceSnapshot, IfaceSnapshot};
use crate::doctor::{DoctorReport, DoctorRequest, Finding, Severity};
use crate::hooks::HookRequest;
use crate::multicast::{McastJoin, McastReport, McastStop};

#[test]
fn a_hook_request_is_tagged_and_round_trips() {
    let m = Message::HookRequest(HookRequest {
        name: "mtu".into(),
        params: [("mtu".to_string(), "9000".to_string())].into(),
    });
    let text = serde_json::to_string(&m).unwrap();
    assert_eq!(
        text,
        r#"{"type":"hook_request","data":{"name":"mtu","params":{"mtu":"9000"}}}"#
    );
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
}

#[test]
fn device_counters_are_tagged_and_round_trip() {
    let m = Message::CountersRequest(CountersRequest {});
    let text = serde_json::to_string(&m).unwrap();
    assert_eq!(text, r#"{"type":"counters_request","data":{}}"#);
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
    let s = DeviceSnapshot {
        monotonic_ns: 5,
        interfaces: Some(vec![IfaceSnapshot {
            name: "eth0".into(),
            rx_packets: 3,
            ..IfaceSnapshot::default()
        }]),
        ..DeviceSnapshot::default()
    };
    let m = Message::CountersSnapshot(Box::new(s));
    let text = serde_json::to_string(&m).unwrap();
    assert!(
        text.starts_with(r#"{"type":"counters_snapshot","data":{"monotonic_ns":5,"interfaces":[{"name":"eth0","rx_packets":3,"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
}

#[test]
fn doctor_messages_are_tagged_and_round_trip() {
    let m = Message::DoctorRequest(DoctorRequest {
        buffer_bytes: Some(4 << 20),
        rtt_us: None,
    });
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["type"], "doctor_request");
    assert_eq!(m.name(), "doctor_request");
    let r = Message::DoctorReport(DoctorReport {
        host: None,
        interface: Some("eth0".into()),
        findings: vec![Finding {
            severity: Severity::Ok,
            check: "net.ipv4.tcp_sack".into(),
            what: "SACK is on".into(),
            value: Some("1".into()),
            fix: None,
        }],
    });
    assert_eq!(r.name(), "doctor_report");
    for msg in [m, r] {
        let frame = control::encode(&msg).unwrap();
        let back = control::decode_body(&frame[control::FRAME_HEADER_LEN..]).unwrap();
        assert_eq!(back, msg);
    }
}

#[test]
fn multicast_messages_are_tagged_and_round_trip() {
    let m = Message::McastJoin(McastJoin {
        group: "239.1.2.3".parse().unwrap(),
        port: 5001,
        source: None,
        duration_ms: 1000,
        len: 1400,
    });
    let text = serde_json::to_string(&m).unwrap();
    assert!(text.starts_with(r#"{"type":"mcast_join","data":{"group":"239.1.2.3""#));
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
    let r = Message::McastReport(Box::new(McastReport {
        datagrams: 5,
        ..McastReport::default()
    }));
    let text = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), r);
    let s = Message::McastStop(McastStop { sent: 9 });
    let text = serde_json::to_string(&s).unwrap();
    assert_eq!(text, r#"{"type":"mcast_stop","data":{"sent":9}}"#);
}
