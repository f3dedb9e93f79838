//! Golden messages of earlier protocol versions: what an older peer sends must still decode,
//! with every later field at its default, and what this build sends when it asks for nothing
//! new must carry no field an older peer did not know (docs/protocol.md, "Versioning").
//!
//! One fixture per minor version that changed a message; add one when a field is added.

#[cfg(test)]
mod tests {
    use crate::control::{Feature, Features, Hello, Message, ProtocolVersion, TestRequest};
    use crate::report::{HostInfo, Role, SideReport, StreamReport, StreamRole, Totals, TxPath};
    use serde::Deserialize;

    /// A 1.1 `test_request` of an RFC 2544 trial (from docs/protocol.md), before 1.3's
    /// `raw_frames`.
    const TEST_REQUEST_1_1: &str = r#"{"type":"test_request","data":{"spec":{"transport":"udp","direction":"send","streams":1,"duration_ms":1000,"bytes":null,"write_size":978,"server_sndbuf":null,"server_rcvbuf":null,"nodelay":false,"mss":null,"congestion":null,"tos":null,"rate_bps":15648000,"interval_ms":1000,"omit_ms":0,"server_cpu":null,"udp_offload":true,"one_way_delay":{"tag_seq":1000},"smooth_pacing":true}}}"#;

    /// A 1.3 `test_request` asking for raw frames.
    const TEST_REQUEST_1_3: &str = r#"{"type":"test_request","data":{"spec":{"transport":"udp","direction":"both","streams":1,"duration_ms":500,"bytes":null,"write_size":18,"server_sndbuf":null,"server_rcvbuf":null,"nodelay":false,"mss":null,"congestion":null,"tos":null,"rate_bps":144000,"interval_ms":1000,"omit_ms":0,"server_cpu":null,"udp_offload":false,"smooth_pacing":true,"raw_frames":true}}}"#;

    /// A 1.2 stream report of a UDP sender, before 1.3's `tx_path`.
    const STREAM_REPORT_1_2: &str = r#"{"index":0,"role":"tx","bytes":1800,"io_calls":2,"packets":100,"duration_ns":1000000,"sndbuf_bytes":212992,"local_addr":"10.0.0.1:40000","remote_addr":"10.0.1.2:5301"}"#;

    /// A 1.3 report of a UDP sender (the `report` of a `results` message), when `cpu_count`,
    /// `io_calls`, `tx_calls` and `rx_calls` were plain numbers that a reader required.
    const SIDE_REPORT_1_3: &str = r#"{"role":"server","host":{"hostname":"vm","kernel":"6.1.0-18-amd64","cpu_count":2,"software":"linerate 0.1.0"},"streams":[{"index":0,"role":"tx","bytes":1800,"io_calls":2,"packets":100,"duration_ns":1000000}],"totals":{"duration_ns":1000000,"tx_bytes":1800,"rx_bytes":0,"tx_calls":2,"rx_calls":0,"tx_duration_ns":1000000,"tx_packets":100}}"#;

    /// A 1.3 `hello` as this build sent it before features were an enum: the bytes must
    /// not change.
    const HELLO_1_3: &str = r#"{"type":"hello","data":{"protocol":{"major":1,"minor":3},"software":"linerate 0.1.0","features":["tcp_stream","udp_stream","bidir","udp_gso","cpu_pin","interval_events","rr","one_way_delay","smooth_pacing","doctor","auth","udp_stream_hello","raw_frames","capture","hooks"]}}"#;

    /// A 1.0 `hello` (docs/protocol.md's example exchange).
    const HELLO_1_0: &str = r#"{"type":"hello","data":{"protocol":{"major":1,"minor":0},"software":"linerate 0.1.0","features":["tcp_stream","udp_stream","bidir","udp_gso","cpu_pin","interval_events"]}}"#;

    #[test]
    fn the_hello_is_byte_identical_with_features_as_an_enum() {
        // The features of that build: every one up to `hooks`.
        let then: Features = Feature::ALL
            .iter()
            .copied()
            .filter(|f| {
                !matches!(
                    f,
                    Feature::DeviceCounters
                        | Feature::Profile
                        | Feature::CopyModes
                        | Feature::CrrServerCloses
                        | Feature::CrrPort
                        | Feature::FleetOrders
                        | Feature::Multicast
                        | Feature::Quic
                        | Feature::Bounceback
                )
            })
            .collect();
        let h = Message::Hello(Hello {
            protocol: ProtocolVersion { major: 1, minor: 3 },
            software: "linerate 0.1.0".into(),
            features: then.names(),
        });
        assert_eq!(serde_json::to_string(&h).unwrap(), HELLO_1_3);
        // This build's hello lists more names at the end (`device_counters`, for `--dut`;
        // `profile`, for `--profile`; `copy_modes`, for `--zerocopy`, `--sendfile`,
        // `--no-rx-copy`; `crr_server_closes` and `crr_port`, for TCP_CRR; `fleet_orders`, for
        // `fleet run`; `multicast`, for `udp GROUP --receivers`; `quic`, for `linerate quic`;
        // `bounceback`, for `rr --bounceback`), which an older peer ignores as unknown.
        let now = Message::Hello(Hello {
            protocol: ProtocolVersion { major: 1, minor: 3 },
            software: "linerate 0.1.0".into(),
            features: Features::all().names(),
        });
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            HELLO_1_3.replace(
                r#""hooks"]"#,
                r#""hooks","device_counters","profile","copy_modes","crr_server_closes","crr_port","fleet_orders","multicast","quic","bounceback"]"#,
            )
        );
        let Message::Hello(old) = serde_json::from_str(HELLO_1_0).unwrap() else {
            panic!("not a hello")
        };
        let f = old.feature_set();
        assert!(f.has(Feature::IntervalEvents) && !f.has(Feature::Rr));
        assert_eq!(f.names(), old.features);
    }

    fn spec(json: &str) -> crate::control::TestSpec {
        match serde_json::from_str::<Message>(json).unwrap() {
            Message::TestRequest(TestRequest { spec }) => spec,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_1_1_test_request_decodes_without_raw_frames() {
        let s = spec(TEST_REQUEST_1_1);
        assert!(s.smooth_pacing && !s.raw_frames);
        // Re-encoded without new wishes, it carries no 1.3 field.
        let back = serde_json::to_string(&Message::TestRequest(TestRequest { spec: s })).unwrap();
        assert!(!back.contains("raw_frames"), "{back}");
    }

    #[test]
    fn a_1_3_test_request_round_trips() {
        let s = spec(TEST_REQUEST_1_3);
        assert!(s.raw_frames && !s.udp_offload);
        let back = serde_json::to_string(&Message::TestRequest(TestRequest { spec: s })).unwrap();
        assert!(back.contains(r#""raw_frames":true"#), "{back}");
    }

    #[test]
    fn a_1_2_stream_report_has_no_tx_path() {
        let r: StreamReport = serde_json::from_str(STREAM_REPORT_1_2).unwrap();
        assert_eq!(r.role, StreamRole::Tx);
        assert_eq!(r.tx_path, None);
        let mut r = r;
        r.tx_path = Some(TxPath::RawFrames);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["tx_path"], "raw_frames");
    }

    /// What a reader before `cpu_count`, `io_calls`, `tx_calls` and `rx_calls` became
    /// optional requires of a report: serde refuses a report without them.
    #[derive(Deserialize)]
    struct OldSide {
        host: OldHost,
        streams: Vec<OldStream>,
        totals: OldTotals,
    }
    #[derive(Deserialize)]
    struct OldHost {
        cpu_count: u32,
    }
    #[derive(Deserialize)]
    struct OldStream {
        io_calls: u64,
    }
    #[derive(Deserialize)]
    struct OldTotals {
        tx_calls: u64,
        rx_calls: u64,
    }

    /// An older peer's report still decodes, its counts present; what this build sends of
    /// an end that measured them (every linerate end) still has them where an older peer
    /// requires them; only an end that did not count them (an iperf3 server, which no peer
    /// is sent) leaves them out, and decodes as absent, not 0.
    #[test]
    fn measured_counts_are_always_sent_and_unmeasured_ones_are_absent() {
        let r: SideReport = serde_json::from_str(SIDE_REPORT_1_3).unwrap();
        assert_eq!(r.host.cpu_count, Some(2));
        assert_eq!(r.streams[0].io_calls, Some(2));
        assert_eq!((r.totals.tx_calls, r.totals.rx_calls), (Some(2), Some(0)));
        let old: OldSide = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(old.host.cpu_count, 2);
        assert_eq!(old.streams[0].io_calls, 2);
        assert_eq!((old.totals.tx_calls, old.totals.rx_calls), (2, 0));

        let iperf3 = SideReport {
            role: Role::Server,
            host: HostInfo {
                software: "iperf3".into(),
                ..HostInfo::default()
            },
            streams: vec![StreamReport {
                io_calls: None,
                ..r.streams[0].clone()
            }],
            intervals: Vec::new(),
            totals: Totals {
                tx_bytes: 1800,
                ..Totals::default()
            },
            cpu: None,
            process_cpu: None,
            host_counters: None,
            interface: None,
            control_segments: None,
            profile: None,
            warnings: Vec::new(),
        };
        let json = serde_json::to_string(&iperf3).unwrap();
        for key in ["cpu_count", "io_calls", "tx_calls", "rx_calls"] {
            assert!(!json.contains(key), "{key} in {json}");
        }
        let back: SideReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, iperf3);
        assert_eq!(back.host.cpu_count, None);
        assert_eq!(back.streams[0].io_calls, None);
        assert_eq!(back.totals.tx_calls, None);
    }
}
