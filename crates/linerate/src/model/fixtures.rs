//! Hand-built [`RunRecord`]s for the tests of the exporters, the diagnosis and the
//! comparisons, and the builders of their parts ([`plan`], [`side`], [`stream`], [`cpu`]).
//! The records carry no diagnosis: `export::fixtures` adds it as the client does.
//!
//! The summaries are computed here from the raw reports with the definitions documented in
//! `model::summary` (throughput over each end's active time, netperf's service demand), not
//! with `model::summarize`, so the exporters' golden strings only change when an exporter does.

use super::{
    EndSummary, FlowDirection, FlowSummary, PlanRecord, RunRecord, RunSummary, SCHEMA_VERSION,
};
use linerate_wire::control::{Direction, ProtocolVersion, Transport};
use linerate_wire::report::{
    CpuReport, HostInfo, IntervalReport, ProcessCpu, Role, SideReport, StreamReport, StreamRole,
    TcpInfoReport, Totals, UdpRxReport,
};

const SEC: u64 = 1_000_000_000;

/// A plan with linerate's defaults (one stream, 10 s, 1 s intervals, nothing requested).
pub(crate) fn plan(
    server: &str,
    transport: Transport,
    direction: Direction,
    write_size: u32,
) -> PlanRecord {
    PlanRecord {
        server: server.to_string(),
        transport,
        direction,
        streams: 1,
        duration_ms: Some(10_000),
        bytes: None,
        write_size,
        local_sndbuf: None,
        local_rcvbuf: None,
        remote_sndbuf: None,
        remote_rcvbuf: None,
        nodelay: false,
        mss: None,
        congestion: None,
        tos: None,
        rate_bps: None,
        interval_ms: 1000,
        omit_ms: 0,
        client_cpu: None,
        server_cpu: None,
        udp_offload: false,
        link_rate_bps: None,
        send_mode: Default::default(),
        recv_mode: Default::default(),
    }
}

/// An end with `totals` and nothing else measured (no streams, CPU, counters or interface).
pub(crate) fn side(role: Role, hostname: &str, cpus: u32, totals: Totals) -> SideReport {
    SideReport {
        role,
        host: HostInfo {
            hostname: Some(hostname.to_string()),
            kernel: Some("6.1.0-18-amd64".to_string()),
            cpu_count: Some(cpus),
            software: "linerate 0.1.0".to_string(),
            boot_id: None,
        },
        streams: Vec::new(),
        intervals: Vec::new(),
        totals,
        cpu: None,
        process_cpu: None,
        host_counters: None,
        interface: None,
        control_segments: None,
        profile: None,
        warnings: Vec::new(),
    }
}

/// The one stream of an end, its figures taken from the end's `t` for its direction.
pub(crate) fn stream(
    role: StreamRole,
    t: &Totals,
    sndbuf: Option<u32>,
    rcvbuf: Option<u32>,
) -> StreamReport {
    let tx = role == StreamRole::Tx;
    StreamReport {
        index: 0,
        role,
        bytes: if tx { t.tx_bytes } else { t.rx_bytes },
        io_calls: if tx { t.tx_calls } else { t.rx_calls },
        packets: if tx { t.tx_packets } else { t.rx_packets },
        duration_ns: if tx {
            t.tx_duration_ns
        } else {
            t.rx_duration_ns
        },
        sndbuf_bytes: sndbuf,
        rcvbuf_bytes: rcvbuf,
        mss_bytes: None,
        congestion: None,
        tcp_info: None,
        udp_rx: if tx { None } else { t.udp_rx.clone() },
        udp_seq_end: None,
        local_addr: None,
        remote_addr: None,
        tx_path: None,
        raw_tx: None,
        send_mode: None,
        recv_mode: None,
        zerocopy: None,
        quic: None,
    }
}

/// `/proc/stat` figures: `util` split 1:2:1 into user, system and softirq, CPU 0 the busiest
/// at `busiest` percent, half of it softirq.
pub(crate) fn cpu(count: u32, util: f64, busiest: f64) -> CpuReport {
    CpuReport {
        cpu_count: count,
        util_percent: util,
        user_percent: util / 4.0,
        system_percent: util / 2.0,
        irq_percent: 0.0,
        softirq_percent: util / 4.0,
        steal_percent: 0.0,
        busiest_cpu: 0,
        busiest_cpu_util_percent: busiest,
        busiest_cpu_softirq_percent: busiest / 2.0,
    }
}

fn per_sec(count: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| count as f64 * 1e9 / ns as f64)
}

/// Cost figures as `model::summary` defines them.
fn end_summary(r: &SideReport) -> EndSummary {
    let t = &r.totals;
    let bytes = t.tx_bytes + t.rx_bytes;
    let io_calls = t.tx_calls.zip(t.rx_calls).map(|(tx, rx)| tx + rx);
    let active_ns = t.tx_duration_ns.max(t.rx_duration_ns);
    let first = |role: StreamRole| r.streams.iter().find(|s| s.role == role);
    EndSummary {
        role: r.role,
        cpu_count: r.cpu.as_ref().map(|c| c.cpu_count).or(r.host.cpu_count),
        cpu_util_percent: r.cpu.as_ref().map(|c| c.util_percent),
        busiest_cpu_util_percent: r.cpu.as_ref().map(|c| c.busiest_cpu_util_percent),
        // netperf: util × CPUs × window µs / KB moved.
        service_demand_us_per_kb: r.cpu.as_ref().map(|c| {
            c.util_percent / 100.0 * f64::from(c.cpu_count) * t.duration_ns as f64
                / 1000.0
                / (bytes as f64 / 1024.0)
        }),
        tool_cpu_percent: r
            .process_cpu
            .as_ref()
            .map(|p| (p.user_ns + p.system_ns) as f64 * 100.0 / t.duration_ns as f64),
        io_calls,
        us_per_call: io_calls.map(|n| active_ns as f64 / 1000.0 / n as f64),
        calls_per_sec: io_calls.and_then(|n| per_sec(n, active_ns)),
        sndbuf_bytes: first(StreamRole::Tx).and_then(|s| s.sndbuf_bytes),
        rcvbuf_bytes: first(StreamRole::Rx).and_then(|s| s.rcvbuf_bytes),
        duration_ns: t.duration_ns,
    }
}

fn flow(dir: FlowDirection, sender: &SideReport, receiver: Option<&SideReport>) -> FlowSummary {
    let st = &sender.totals;
    let rt = receiver.map(|r| &r.totals);
    let udp = rt.and_then(|t| t.udp_rx.clone());
    FlowSummary {
        direction: dir,
        sender_bytes: st.tx_bytes,
        receiver_bytes: rt.map(|t| t.rx_bytes),
        sender_duration_ns: st.tx_duration_ns,
        receiver_duration_ns: rt.map(|t| t.rx_duration_ns),
        sender_bps: per_sec(st.tx_bytes * 8, st.tx_duration_ns),
        receiver_bps: rt.and_then(|t| per_sec(t.rx_bytes * 8, t.rx_duration_ns)),
        sender_pps: st.tx_packets.and_then(|p| per_sec(p, st.tx_duration_ns)),
        receiver_pps: rt.and_then(|t| t.rx_packets.and_then(|p| per_sec(p, t.rx_duration_ns))),
        sender_interface_pps: None,
        receiver_interface_pps: None,
        sender_datagrams_per_packet: None,
        receiver_datagrams_per_packet: None,
        interface_packets: None,
        retransmits: st.retransmits,
        loss_percent: udp
            .as_ref()
            .map(|u| u.lost as f64 * 100.0 / (u.packets - u.duplicates + u.lost) as f64),
        lost_at_end: udp.as_ref().map(|_| 0),
        lost_datagrams: udp.as_ref().map(|u| u.lost),
        udp,
    }
}

fn record(
    plan: PlanRecord,
    client: SideReport,
    server: Option<SideReport>,
    warnings: &[&str],
) -> RunRecord {
    let mut flows = Vec::new();
    if plan.direction.client_sends() {
        flows.push(flow(
            FlowDirection::ClientToServer,
            &client,
            server.as_ref(),
        ));
    }
    if plan.direction.client_receives() {
        if let Some(s) = server.as_ref() {
            flows.push(flow(FlowDirection::ServerToClient, s, Some(&client)));
        }
    }
    RunRecord {
        schema_version: SCHEMA_VERSION,
        tool_version: "linerate 0.1.0".to_string(),
        started_at: "2024-05-01T12:00:00Z".to_string(),
        protocol: Some(ProtocolVersion { major: 1, minor: 0 }),
        interrupted: false,
        summary: RunSummary {
            flows,
            client: end_summary(&client),
            server: server.as_ref().map(end_summary),
        },
        plan,
        client,
        server,
        warnings: warnings.iter().map(|w| w.to_string()).collect(),
        rr: None,
        diagnosis: None,
        trace: None,
        latency_under_load: None,
        dut: None,
        server_capture: None,
        failure: None,
    }
}

/// TCP client→server (netperf TCP_STREAM -c -C), modelled on XAPP1127's row:
/// 374,048,125 B in 10.25 s = 291.94 × 10^6 bit/s; client 24.81% of 4 CPUs, server 85.16%
/// of 1 CPU; sndbuf 253952 (client), rcvbuf 208896 (server), 65535-byte writes.
pub(crate) fn tcp_send() -> RunRecord {
    let window = 10_250_000_000;
    let bytes = 374_048_125;
    let ct = Totals {
        duration_ns: window,
        tx_bytes: bytes,
        tx_calls: Some(5708),
        rx_calls: Some(0),
        tx_duration_ns: window,
        retransmits: Some(3),
        ..Totals::default()
    };
    let mut client = side(Role::Client, "tx-host", 4, ct.clone());
    client.streams = vec![stream(StreamRole::Tx, &ct, Some(253_952), None)];
    client.streams[0].tcp_info = Some(TcpInfoReport {
        rtt_us: 52,
        snd_cwnd: 870,
        snd_mss: 1448,
        total_retrans: Some(3),
        ..TcpInfoReport::default()
    });
    client.cpu = Some(cpu(4, 24.81, 98.0));
    client.process_cpu = Some(ProcessCpu {
        user_ns: 300_000_000,
        system_ns: 9_600_000_000,
    });
    client.intervals = vec![
        IntervalReport {
            start_ns: 0,
            end_ns: SEC,
            omitted: true,
            tx_bytes: 30_000_000,
            retransmits: Some(0),
            rtt_us: Some(61),
            cwnd_bytes: Some(1_000_000),
            cpu_percent: Some(25.4),
            ..IntervalReport::default()
        },
        IntervalReport {
            start_ns: SEC,
            end_ns: 2 * SEC,
            tx_bytes: 2_072_321_720,
            retransmits: Some(3),
            rtt_us: Some(52),
            cwnd_bytes: Some(1_258_291),
            cpu_percent: Some(48.2),
            ..IntervalReport::default()
        },
    ];
    let st = Totals {
        duration_ns: window,
        rx_bytes: bytes,
        tx_calls: Some(0),
        rx_calls: Some(45_000),
        rx_duration_ns: window,
        ..Totals::default()
    };
    let mut server = side(Role::Server, "rx-host", 1, st.clone());
    server.streams = vec![stream(StreamRole::Rx, &st, None, Some(208_896))];
    server.cpu = Some(cpu(1, 85.16, 85.16));
    server.process_cpu = Some(ProcessCpu {
        user_ns: 100_000_000,
        system_ns: 4_000_000_000,
    });
    let mut p = plan("192.168.0.4:5001", Transport::Tcp, Direction::Send, 65535);
    p.local_sndbuf = Some(253_952);
    p.remote_rcvbuf = Some(253_952);
    record(p, client, Some(server), &[])
}

/// TCP server→client (netperf TCP_MAERTS): 11,762,500,000 B in 10 s = 9410 × 10^6 bit/s;
/// client 31.20% of 8 CPUs; the server's CPU could not be read.
pub(crate) fn tcp_receive() -> RunRecord {
    let window = 10 * SEC;
    let bytes = 11_762_500_000;
    let ct = Totals {
        duration_ns: window,
        rx_bytes: bytes,
        tx_calls: Some(0),
        rx_calls: Some(1_500_000),
        rx_duration_ns: window,
        ..Totals::default()
    };
    let mut client = side(Role::Client, "rx-host", 8, ct.clone());
    client.streams = vec![stream(StreamRole::Rx, &ct, None, Some(131_072))];
    client.cpu = Some(cpu(8, 31.2, 77.0));
    client.process_cpu = Some(ProcessCpu {
        user_ns: 500_000_000,
        system_ns: 5_500_000_000,
    });
    let st = Totals {
        duration_ns: window,
        tx_bytes: bytes,
        tx_calls: Some(717_926),
        rx_calls: Some(0),
        tx_duration_ns: window,
        retransmits: Some(0),
        ..Totals::default()
    };
    let mut server = side(Role::Server, "tx-host", 8, st.clone());
    server.streams = vec![stream(StreamRole::Tx, &st, Some(16_384), None)];
    server.process_cpu = Some(ProcessCpu {
        user_ns: 200_000_000,
        system_ns: 6_800_000_000,
    });
    let w = "server: CPU utilisation unavailable: /proc/stat could not be read";
    server.warnings = vec![w.to_string()];
    let p = plan(
        "[2001:db8::7]:5201",
        Transport::Tcp,
        Direction::Receive,
        16_384,
    );
    record(p, client, Some(server), &[w])
}

/// UDP client→server with loss: 1,000,000 datagrams of 1400 B sent in 10 s (1120 × 10^6
/// bit/s); the server got 990,050 (50 duplicates), 10,000 lost = 1.00% of 1,000,000 sent.
pub(crate) fn udp_send() -> RunRecord {
    let window = 10 * SEC;
    let ct = Totals {
        duration_ns: window,
        tx_bytes: 1_400_000_000,
        tx_calls: Some(15_625),
        rx_calls: Some(0),
        tx_duration_ns: window,
        tx_packets: Some(1_000_000),
        ..Totals::default()
    };
    let mut client = side(Role::Client, "tx-host", 4, ct.clone());
    client.streams = vec![stream(StreamRole::Tx, &ct, Some(212_992), None)];
    client.cpu = Some(cpu(4, 12.55, 50.2));
    client.process_cpu = Some(ProcessCpu {
        user_ns: 1_000_000_000,
        system_ns: 3_000_000_000,
    });
    client.intervals = vec![IntervalReport {
        start_ns: 0,
        end_ns: SEC,
        tx_bytes: 140_000_000,
        tx_packets: Some(100_000),
        cpu_percent: Some(12.5),
        ..IntervalReport::default()
    }];
    let udp = UdpRxReport {
        packets: 990_050,
        lost: 10_000,
        duplicates: 50,
        reordered: 12,
        highest_seq: None,
        jitter_ns: Some(12_345),
        one_way_delay: None,
    };
    let st = Totals {
        duration_ns: window,
        rx_bytes: 1_386_070_000,
        tx_calls: Some(0),
        rx_calls: Some(990_050),
        rx_duration_ns: window,
        rx_packets: Some(990_050),
        udp_rx: Some(udp),
        ..Totals::default()
    };
    let mut server = side(Role::Server, "rx-host", 4, st.clone());
    server.streams = vec![stream(StreamRole::Rx, &st, None, Some(212_992))];
    server.cpu = Some(cpu(4, 8.12, 32.0));
    server.intervals = vec![IntervalReport {
        start_ns: 0,
        end_ns: SEC,
        rx_bytes: 138_600_000,
        rx_packets: Some(99_000),
        rx_lost: Some(1_000),
        cpu_percent: None,
        ..IntervalReport::default()
    }];
    let p = plan("10.0.0.2:5201", Transport::Udp, Direction::Send, 1400);
    record(p, client, Some(server), &[])
}

/// TCP client→server cut short: the server's report never arrived and the client's CPU could
/// not be measured. 5,000,000,000 B written in 5 s = 8 Gbit/s at the sender.
pub(crate) fn no_server() -> RunRecord {
    let window = 5 * SEC;
    let ct = Totals {
        duration_ns: window,
        tx_bytes: 5_000_000_000,
        tx_calls: Some(38_147),
        rx_calls: Some(0),
        tx_duration_ns: window,
        ..Totals::default()
    };
    let mut client = side(Role::Client, "tx-host", 2, ct.clone());
    client.streams = vec![stream(StreamRole::Tx, &ct, Some(4_194_304), None)];
    let mut rec = record(
        plan("example.net:5201", Transport::Tcp, Direction::Send, 131_072),
        client,
        None,
        &[
            "server report missing: control connection closed before results",
            "client CPU utilisation unavailable: /proc/stat could not be read",
        ],
    );
    rec.interrupted = true;
    rec
}

/// The ttcp run quoted in the PowerBook ttcp report: 16,777,216 B in 2048 writes of 8192 B, 15.0954 s real
/// (which prints as 15.10 and gives 135.67 calls/sec), 1.06 s system CPU.
pub(crate) fn ttcp_seed() -> RunRecord {
    let ct = Totals {
        duration_ns: 15_100_000_000,
        tx_bytes: 16_777_216,
        tx_calls: Some(2048),
        rx_calls: Some(0),
        tx_duration_ns: 15_095_400_000,
        retransmits: Some(0),
        ..Totals::default()
    };
    let mut client = side(Role::Client, "laptop", 1, ct.clone());
    client.streams = vec![stream(StreamRole::Tx, &ct, Some(16_384), None)];
    client.process_cpu = Some(ProcessCpu {
        user_ns: 40_000_000,
        system_ns: 1_060_000_000,
    });
    let st = Totals {
        duration_ns: 15_100_000_000,
        rx_bytes: 16_777_216,
        tx_calls: Some(0),
        rx_calls: Some(11_000),
        rx_duration_ns: 15_100_000_000,
        ..Totals::default()
    };
    let mut server = side(Role::Server, "picard", 1, st.clone());
    server.streams = vec![stream(StreamRole::Rx, &st, None, Some(87_380))];
    server.process_cpu = Some(ProcessCpu {
        user_ns: 20_000_000,
        system_ns: 510_000_000,
    });
    let mut p = plan("picard:5001", Transport::Tcp, Direction::Send, 8192);
    p.duration_ms = None;
    p.bytes = Some(16_777_216);
    record(p, client, Some(server), &[])
}

/// TCP_RR (netperf `-t TCP_RR -c -C` shape): 554,257 transactions of 1 byte each way in
/// 10 s = 55,425.7/s; client 32.16 % and server 32.33 % of 2 CPUs, so service demand
/// 0.3216 × 2 × 1e7 µs / 554,257 = 11.605 and 0.3233 × 2 × 1e7 / 554,257 = 11.666 us/Tr;
/// socket buffers 16384 send / 131072 receive on both ends. Latency: p50 17 µs, p99 30 µs,
/// max 2.5 ms.
pub(crate) fn tcp_rr() -> RunRecord {
    use crate::model::{HistogramBucket, LatencySummary, RrKind, RrSummary};
    let window = 10 * SEC;
    let n = 554_257;
    let t = Totals {
        duration_ns: window,
        tx_bytes: n,
        rx_bytes: n,
        tx_calls: Some(n),
        rx_calls: Some(n),
        tx_duration_ns: window,
        rx_duration_ns: window,
        ..Totals::default()
    };
    let mut client = side(Role::Client, "vm", 2, t.clone());
    let mut cs = stream(StreamRole::Tx, &client.totals, Some(16_384), Some(131_072));
    cs.bytes = 2 * n;
    client.streams = vec![cs];
    client.cpu = Some(cpu(2, 32.16, 64.3));
    let mut server = side(Role::Server, "vm", 2, t);
    let mut ss = stream(StreamRole::Rx, &server.totals, Some(16_384), Some(131_072));
    ss.bytes = 2 * n;
    server.streams = vec![ss];
    server.cpu = Some(cpu(2, 32.33, 64.6));
    let mut p = plan("127.0.0.1:5301", Transport::Tcp, Direction::Send, 1);
    p.nodelay = true;
    let mut rec = record(p, client, Some(server), &[]);
    rec.summary.flows.clear();
    rec.rr = Some(RrSummary {
        kind: RrKind::TcpRr,
        request_bytes: 1,
        response_bytes: 1,
        burst: 1,
        bounceback: None,
        target_tps: None,
        timeout_ms: None,
        transactions: n,
        duration_ns: window,
        transactions_per_sec: Some(55_425.7),
        lost_transactions: None,
        lost_percent: None,
        late_responses: None,
        connections: None,
        latency: Some(LatencySummary {
            count: n,
            min_ns: 12_100,
            mean_ns: 18_042.1,
            stddev_ns: Some(3_210.5),
            p50_ns: 17_000,
            p90_ns: 19_000,
            p99_ns: 30_000,
            p99_9_ns: 120_000,
            p99_99_ns: 900_000,
            max_ns: 2_500_000,
            histogram: vec![
                HistogramBucket {
                    value_ns: 12_100,
                    count: 1,
                },
                HistogramBucket {
                    value_ns: 17_000,
                    count: 554_000,
                },
                HistogramBucket {
                    value_ns: 2_500_000,
                    count: 256,
                },
            ],
        }),
        latency_from_actual_send: None,
        client_service_demand_us_per_tran: Some(0.3216 * 2.0 * 1e7 / n as f64),
        server_service_demand_us_per_tran: Some(0.3233 * 2.0 * 1e7 / n as f64),
    });
    rec
}

/// Every fixture, for tests that check a property of all of them.
pub(crate) fn all() -> Vec<RunRecord> {
    vec![
        tcp_send(),
        tcp_receive(),
        udp_send(),
        no_server(),
        ttcp_seed(),
        tcp_rr(),
    ]
}

/// Latency figures of `count` transactions that all took `p50_ns` (one histogram bucket).
pub fn latency_summary(p50_ns: u64, count: u64) -> super::rr::LatencySummary {
    super::rr::LatencySummary {
        count,
        min_ns: p50_ns,
        mean_ns: p50_ns as f64,
        stddev_ns: None,
        p50_ns,
        p90_ns: p50_ns,
        p99_ns: p50_ns,
        p99_9_ns: p50_ns,
        p99_99_ns: p50_ns,
        max_ns: p50_ns,
        histogram: vec![super::rr::HistogramBucket {
            value_ns: p50_ns,
            count,
        }],
    }
}
