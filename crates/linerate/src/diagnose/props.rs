//! Property tests: every rule over generated records.
//!
//! The records are built from the same parts as the fixtures (`model::fixtures`) and
//! summarized by the client's own `build_record`; their figures range over what the
//! kernel and /proc can report (shares of CPUs within 0..100, any counts, any TCP_INFO,
//! tiny and huge buffers, loopback or not, one host or two), including counters that do
//! not agree with each other. Whatever the record, the diagnosis must hold:
//!
//! * no share above 100 % (`percent` ≤ 100, `ratio` ≤ 1), no negative figure, no NaN or
//!   infinity in the evidence, and no percentage above 100 in a message;
//! * every threshold an evidence figure carries is met by its value, and every limit has
//!   at least one such figure: a verdict whose evidence contradicts its claim is a bug;
//! * a flow that a tiny buffer limits is never also `retransmission_bound`;
//! * one verdict per kind, end and flow; the diagnosis is a pure function of the record.

use std::collections::{BTreeMap, BTreeSet};

use linerate_wire::control::{Direction, Transport};
use linerate_wire::host::{HostCounters, InterfaceFacts, InterfaceStats, PerCpu, SoftnetCounters};
use linerate_wire::report::{
    CpuReport, IntervalReport, ProcessCpu, Role, SideReport, StreamRole, TcpInfoReport, Totals,
    UdpRxReport,
};
use proptest::prelude::*;

use super::*;
use crate::model::fixtures;

const SEC: u64 = 1_000_000_000;

/// /proc/stat figures of one end: shares of all CPUs within 0..100, the busiest CPU at least
/// as busy as the average.
fn cpu_report() -> impl Strategy<Value = CpuReport> {
    (
        1u32..=16,
        0.0..=100.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
        0.0..=1.0f64,
    )
        .prop_map(
            |(count, util, busiest_extra, irq_share, softirq_share, busiest_softirq)| {
                let busiest = util + (100.0 - util) * busiest_extra;
                let irq = util * irq_share * 0.5;
                let softirq = (util - irq) * softirq_share;
                CpuReport {
                    cpu_count: count,
                    util_percent: util,
                    user_percent: (util - irq - softirq) / 2.0,
                    system_percent: (util - irq - softirq) / 2.0,
                    irq_percent: irq,
                    softirq_percent: softirq,
                    steal_percent: 0.0,
                    busiest_cpu: 0,
                    busiest_cpu_util_percent: busiest,
                    busiest_cpu_softirq_percent: busiest * busiest_softirq,
                }
            },
        )
}

/// A buffer size: tiny (under one loopback MSS), ordinary, or huge.
fn buffer() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..=70_000,
        70_000u32..=8_000_000,
        8_000_000u32..=u32::MAX
    ]
}

/// TCP_INFO of one sending stream, any kernel: later fields absent or present.
fn tcp_info() -> impl Strategy<Value = TcpInfoReport> {
    (
        (
            0u32..=2_000_000,
            0u32..=65_483,
            proptest::option::of(0u32..=65_483),
        ),
        (0u32..=100_000, proptest::option::of(0u32..=100_000)),
        proptest::option::of((0u64..=100_000_000, 0.0..=1.0f64, 0.0..=1.0f64)),
        proptest::option::of(buffer()),
        proptest::option::of(0u16..=200),
        proptest::option::of(0u8..=10),
        proptest::option::of(0u32..=2_000_000),
    )
        .prop_map(
            |((rtt, mss, advmss), (retrans, data), chrono, wnd, rto, probes, min)| {
                let (busy, rw, sb) = match chrono {
                    // rwnd- and sndbuf-limited times are parts of the busy time.
                    Some((b, x, y)) => {
                        let rw = (b as f64 * x) as u64;
                        let sb = ((b - rw) as f64 * y) as u64;
                        (Some(b), Some(rw), Some(sb))
                    }
                    None => (None, None, None),
                };
                TcpInfoReport {
                    rtt_us: rtt,
                    rttvar_us: Some(rtt / 4),
                    snd_cwnd: 10,
                    snd_mss: mss,
                    total_retrans: Some(retrans),
                    snd_wnd_bytes: wnd,
                    min_rtt_us: min,
                    busy_time_us: busy,
                    rwnd_limited_us: rw,
                    sndbuf_limited_us: sb,
                    data_segs_out: data,
                    segs_out: data.map(|d| d.saturating_add(10)),
                    advmss_bytes: advmss,
                    total_rto: rto,
                    total_rto_time_ms: rto.map(|r| u32::from(r) * 200),
                    probes,
                    ..TcpInfoReport::default()
                }
            },
        )
}

/// Host counters of one end: some SNMP counters, interrupts, softnet and interface drops.
fn host_counters() -> impl Strategy<Value = HostCounters> {
    const NAMES: [&str; 12] = [
        "Tcp.InSegs",
        "TcpExt.DelayedACKs",
        "TcpExt.TCPTimeouts",
        "TcpExt.TCPWinProbe",
        "TcpExt.TCPToZeroWindowAdv",
        "TcpExt.TCPRcvQDrop",
        "TcpExt.TCPBacklogDrop",
        "Udp.RcvbufErrors",
        "Udp6.RcvbufErrors",
        "TcpExt.RcvPruned",
        "TcpExt.OfoPruned",
        "TcpExt.TCPZeroWindowDrop",
    ];
    (
        proptest::collection::vec(proptest::option::of(0u64..=10_000_000), NAMES.len()),
        proptest::option::of(0.0..=5000.0f64),
        proptest::option::of((0u64..=10_000_000, 0u64..=10_000_000, 0u64..=100_000)),
        proptest::option::of(0u64..=100_000),
    )
        .prop_map(|(values, ipk, stats, softnet)| HostCounters {
            duration_ns: 10 * SEC,
            interface: Some("eth0".into()),
            snmp: Some(
                NAMES
                    .iter()
                    .zip(values)
                    .filter_map(|(n, v)| Some((n.to_string(), v?)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            interrupts_per_1000_packets: ipk,
            interface_stats: stats.map(|(rx, tx, drop)| InterfaceStats {
                rx_packets: rx,
                tx_packets: tx,
                rx_dropped: drop,
                ..InterfaceStats::default()
            }),
            softnet: softnet.map(|d| SoftnetCounters {
                dropped: PerCpu {
                    total: d,
                    per_cpu: vec![d],
                },
                ..SoftnetCounters::default()
            }),
            ..HostCounters::default()
        })
}

/// The interface of one end: a NIC with a speed, a veth, or a shaped one.
fn interface() -> impl Strategy<Value = InterfaceFacts> {
    (
        prop_oneof![
            Just(None),
            Just(Some("veth".to_string())),
            Just(Some("e1000e".to_string()))
        ],
        proptest::option::of(prop_oneof![
            Just(10u32),
            Just(1000),
            Just(10_000),
            Just(100_000)
        ]),
        proptest::option::of(1_000_000u64..=10_000_000_000),
    )
        .prop_map(|(driver, speed, shaped)| InterfaceFacts {
            name: "eth0".into(),
            driver,
            speed_mbps: speed,
            root_qdisc: shaped.map(|_| "tbf".to_string()),
            shaped_rate_bps: shaped,
            ..InterfaceFacts::default()
        })
}

/// What one end measured, apart from its streams.
#[derive(Debug, Clone)]
struct EndParams {
    cpu: Option<CpuReport>,
    /// linerate's threads: a fraction of the window times the streams, up to 1.05.
    own: Option<f64>,
    counters: Option<HostCounters>,
    interface: Option<InterfaceFacts>,
    /// Interval throughputs as fractions of the mean.
    intervals: Vec<f64>,
}

fn end_params() -> impl Strategy<Value = EndParams> {
    (
        proptest::option::of(cpu_report()),
        proptest::option::of(0.0..=1.05f64),
        proptest::option::of(host_counters()),
        proptest::option::of(interface()),
        proptest::collection::vec(0.0..=2.0f64, 0..6),
    )
        .prop_map(|(cpu, own, counters, interface, intervals)| EndParams {
            cpu,
            own,
            counters,
            interface,
            intervals,
        })
}

/// One direction of data: bytes, the sender's active time, TCP_INFO and buffers per stream,
/// UDP datagrams and loss.
#[derive(Debug, Clone)]
struct FlowParams {
    bytes: u64,
    active: f64,
    infos: Vec<Option<TcpInfoReport>>,
    sndbuf: Option<u32>,
    rcvbuf: Option<u32>,
    datagrams: u64,
    lost: u64,
    dups: u64,
}

fn flow_params(streams: usize) -> impl Strategy<Value = FlowParams> {
    (
        prop_oneof![0u64..=1_000_000, 1_000_000u64..=100_000_000_000],
        0.0..=1.0f64,
        proptest::collection::vec(proptest::option::of(tcp_info()), streams),
        proptest::option::of(buffer()),
        proptest::option::of(buffer()),
        (0u64..=100_000_000, 0u64..=10_000_000, 0u64..=1000),
    )
        .prop_map(
            |(bytes, active, infos, sndbuf, rcvbuf, (datagrams, lost, dups))| FlowParams {
                bytes,
                active,
                infos,
                sndbuf,
                rcvbuf,
                datagrams,
                lost,
                dups: dups.min(datagrams),
            },
        )
}

#[derive(Debug, Clone)]
struct Params {
    tcp: bool,
    direction: Direction,
    streams: usize,
    loopback: bool,
    same_host: bool,
    with_server: bool,
    duration_s: u64,
    requested: [Option<u32>; 4],
    rate_bps: Option<u64>,
    link_rate_bps: Option<u64>,
    nodelay: bool,
    write_size: u32,
    udp_offload: bool,
    ends: (EndParams, EndParams),
    flows: (FlowParams, FlowParams),
}

fn params() -> impl Strategy<Value = Params> {
    (1usize..=3).prop_flat_map(|streams| {
        (
            (
                any::<bool>(),
                prop_oneof![
                    Just(Direction::Send),
                    Just(Direction::Receive),
                    Just(Direction::Both)
                ],
                any::<bool>(),
                any::<bool>(),
                prop_oneof![4 => Just(true), 1 => Just(false)],
                1u64..=30,
            ),
            [
                proptest::option::of(buffer()),
                proptest::option::of(buffer()),
                proptest::option::of(buffer()),
                proptest::option::of(buffer()),
            ],
            (
                proptest::option::of(1_000u64..=100_000_000_000),
                proptest::option::of(1_000_000u64..=100_000_000_000),
                any::<bool>(),
                1u32..=1_048_576,
                any::<bool>(),
            ),
            (end_params(), end_params()),
            (flow_params(streams), flow_params(streams)),
        )
            .prop_map(
                move |(
                    (tcp, direction, loopback, same_host, with_server, duration_s),
                    requested,
                    (rate_bps, link_rate_bps, nodelay, write_size, udp_offload),
                    ends,
                    flows,
                )| Params {
                    tcp,
                    direction,
                    streams,
                    loopback,
                    same_host,
                    with_server,
                    duration_s,
                    requested,
                    rate_bps,
                    link_rate_bps,
                    nodelay,
                    write_size,
                    udp_offload,
                    ends,
                    flows,
                },
            )
    })
}

/// Adds one flow's streams to its sender `tx` and receiver `rx`.
fn add_flow(p: &Params, f: &FlowParams, tx: &mut SideReport, rx: &mut SideReport) {
    let window = p.duration_s * SEC;
    let active = ((window as f64) * f.active) as u64;
    let n = p.streams as u64;
    let remote = if p.loopback {
        "127.0.0.1:5301"
    } else {
        "10.0.0.2:5301"
    };
    for (i, info) in f.infos.iter().enumerate() {
        let bytes = f.bytes / n;
        let t = Totals {
            duration_ns: window,
            tx_bytes: bytes,
            rx_bytes: bytes,
            tx_calls: Some(bytes / 65_536 + 1),
            rx_calls: Some(bytes / 65_536 + 1),
            tx_duration_ns: active,
            rx_duration_ns: active,
            tx_packets: (!p.tcp).then_some(f.datagrams / n),
            rx_packets: (!p.tcp).then_some((f.datagrams - f.lost.min(f.datagrams)) / n),
            udp_rx: (!p.tcp).then(|| UdpRxReport {
                packets: (f.datagrams - f.lost.min(f.datagrams)) / n,
                lost: f.lost / n,
                duplicates: f.dups / n,
                ..UdpRxReport::default()
            }),
            ..Totals::default()
        };
        let mut s = fixtures::stream(StreamRole::Tx, &t, f.sndbuf, None);
        s.index = i as u16;
        s.tcp_info = if p.tcp { info.clone() } else { None };
        s.remote_addr = Some(remote.into());
        s.mss_bytes = info.as_ref().map(|x| x.snd_mss);
        tx.streams.push(s);
        let mut r = fixtures::stream(StreamRole::Rx, &t, None, f.rcvbuf);
        r.index = i as u16;
        r.remote_addr = Some(remote.into());
        rx.streams.push(r);
        add_totals(&mut tx.totals, &t, true);
        add_totals(&mut rx.totals, &t, false);
    }
    if p.tcp {
        tx.totals.retransmits = Some(
            f.infos
                .iter()
                .flatten()
                .filter_map(|i| i.total_retrans.map(u64::from))
                .sum(),
        );
    }
}

fn add_totals(to: &mut Totals, t: &Totals, tx: bool) {
    if tx {
        to.tx_bytes += t.tx_bytes;
        *to.tx_calls.get_or_insert(0) += t.tx_calls.unwrap_or(0);
        to.tx_duration_ns = to.tx_duration_ns.max(t.tx_duration_ns);
        if let Some(p) = t.tx_packets {
            *to.tx_packets.get_or_insert(0) += p;
        }
    } else {
        to.rx_bytes += t.rx_bytes;
        *to.rx_calls.get_or_insert(0) += t.rx_calls.unwrap_or(0);
        to.rx_duration_ns = to.rx_duration_ns.max(t.rx_duration_ns);
        if let Some(p) = t.rx_packets {
            *to.rx_packets.get_or_insert(0) += p;
        }
        if let Some(u) = &t.udp_rx {
            let a = to.udp_rx.get_or_insert_with(UdpRxReport::default);
            a.packets += u.packets;
            a.lost += u.lost;
            a.duplicates += u.duplicates;
        }
    }
}

fn end(p: &Params, role: Role, e: &EndParams) -> SideReport {
    let window = p.duration_s * SEC;
    let mut s = fixtures::side(
        role,
        &format!("{role:?}"),
        e.cpu.as_ref().map_or(2, |c| c.cpu_count),
        Totals {
            duration_ns: window,
            ..Totals::default()
        },
    );
    s.host.boot_id = Some(if p.same_host {
        "one-host".to_string()
    } else {
        format!("boot-{role:?}")
    });
    s.cpu = e.cpu.clone();
    s.process_cpu = e.own.map(|f| ProcessCpu {
        user_ns: 0,
        system_ns: (window as f64 * f * p.streams as f64) as u64,
    });
    s.host_counters = e.counters.clone();
    s.interface = if p.loopback {
        Some(InterfaceFacts {
            name: "lo".into(),
            ..InterfaceFacts::default()
        })
    } else {
        e.interface.clone()
    };
    s
}

/// Interval reports at the receiving end `s` from fractions of its mean rate.
fn intervals(s: &mut SideReport, fractions: &[f64]) {
    let mean = s.totals.rx_bytes / (fractions.len() as u64).max(1);
    s.intervals = fractions
        .iter()
        .enumerate()
        .map(|(i, f)| IntervalReport {
            start_ns: i as u64 * SEC,
            end_ns: (i as u64 + 1) * SEC,
            rx_bytes: (mean as f64 * f) as u64,
            ..IntervalReport::default()
        })
        .collect();
}

fn record(p: &Params) -> RunRecord {
    let transport = if p.tcp {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let server_addr = if p.loopback {
        "127.0.0.1:5301"
    } else {
        "10.0.0.2:5301"
    };
    let mut plan = fixtures::plan(server_addr, transport, p.direction, p.write_size);
    plan.streams = p.streams as u16;
    plan.duration_ms = Some(p.duration_s * 1000);
    [
        plan.local_sndbuf,
        plan.local_rcvbuf,
        plan.remote_sndbuf,
        plan.remote_rcvbuf,
    ] = p.requested;
    plan.rate_bps = p.rate_bps;
    plan.link_rate_bps = p.link_rate_bps;
    plan.nodelay = p.nodelay;
    plan.udp_offload = p.udp_offload;
    let mut client = end(p, Role::Client, &p.ends.0);
    let mut server = end(p, Role::Server, &p.ends.1);
    if p.direction.client_sends() {
        add_flow(p, &p.flows.0, &mut client, &mut server);
    }
    if p.direction.client_receives() {
        add_flow(p, &p.flows.1, &mut server, &mut client);
    }
    intervals(&mut client, &p.ends.0.intervals);
    intervals(&mut server, &p.ends.1.intervals);
    let mut rec = RunRecord::from_reports(
        plan,
        "2024-05-01T12:00:00Z".into(),
        None,
        false,
        client,
        p.with_server.then_some(server),
        Vec::new(),
    );
    rec.diagnosis = Some(diagnose(&rec));
    rec
}

/// `OP NUMBER` of a threshold, checked against `value`; `Err` says what is wrong.
fn meets(value: f64, threshold: &str) -> Result<bool, String> {
    let (op, num) = threshold
        .split_once(' ')
        .ok_or_else(|| format!("threshold {threshold:?} is not `OP NUMBER`"))?;
    let n: f64 = num
        .parse()
        .map_err(|_| format!("threshold {threshold:?} is not `OP NUMBER`"))?;
    match op {
        ">=" => Ok(value >= n),
        ">" => Ok(value > n),
        "<=" => Ok(value <= n),
        "<" => Ok(value < n),
        _ => Err(format!("threshold {threshold:?} has no comparison")),
    }
}

/// Every "N%" in `text` that is a share (not "N% of one CPU", a thread's or a process's CPU
/// time, which may exceed one CPU's worth).
fn percentages(text: &str) -> Vec<f64> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (i, _) in text.match_indices('%') {
        if text[i + 1..].starts_with(" of one CPU") {
            continue;
        }
        let mut j = i;
        while j > 0 && (b[j - 1].is_ascii_digit() || b[j - 1] == b'.') {
            j -= 1;
        }
        if let Ok(v) = text[j..i].parse::<f64>() {
            out.push(v);
        }
    }
    out
}

/// Every property of one diagnosis; `Err` names the first that fails.
fn check(d: &Diagnosis) -> Result<(), String> {
    let first = d.verdicts.first().ok_or("no verdict")?;
    if !(first.kind.is_limit() || first.kind == VerdictKind::None) {
        return Err(format!("first verdict is advice: {first:?}"));
    }
    let mut seen = BTreeSet::new();
    let texts = std::iter::once(d.summary.as_str()).chain(d.not_judged.iter().map(String::as_str));
    for t in texts.chain(
        d.verdicts
            .iter()
            .flat_map(|v| [v.message.as_str(), v.suggestion.as_str()]),
    ) {
        if t.contains("NaN") || t.contains(" inf") || t.contains("-inf") {
            return Err(format!("NaN or inf in {t:?}"));
        }
        if let Some(p) = percentages(t).into_iter().find(|p| *p > 100.0) {
            return Err(format!("{p}% in {t:?}"));
        }
    }
    for v in &d.verdicts {
        let flow = v
            .flow
            .map(|f| f == crate::model::FlowDirection::ClientToServer);
        if !seen.insert((v.kind, v.side.map(|s| s == Role::Client), flow)) {
            return Err(format!(
                "two {:?} verdicts for the same end and flow",
                v.kind
            ));
        }
        let mut tested = false;
        for e in &v.evidence {
            let what = format!(
                "{:?} evidence {} = {} {}",
                v.kind, e.metric, e.value, e.unit
            );
            if !e.value.is_finite() || e.value < 0.0 {
                return Err(format!("{what}: not a finite figure >= 0"));
            }
            match e.unit.as_str() {
                "percent" if e.value > 100.0 + 1e-9 => return Err(format!("{what}: above 100%")),
                "ratio" if e.value > 1.0 + 1e-12 => return Err(format!("{what}: share above 1")),
                _ => {}
            }
            if let Some(t) = &e.threshold {
                if !meets(e.value, t)? {
                    return Err(format!("{what} misses its own threshold {t}"));
                }
                tested = true;
            }
        }
        if v.kind.is_limit() && !tested {
            return Err(format!("{:?} rests on no threshold: {v:?}", v.kind));
        }
    }
    for v in d.verdicts.iter().filter(|v| {
        v.kind == VerdictKind::WindowLimited
            && v.evidence.iter().any(|e| e.metric == "buffer_in_segments")
    }) {
        if d.verdicts
            .iter()
            .any(|r| r.kind == VerdictKind::RetransmissionBound && r.flow == v.flow)
        {
            return Err("a tiny window's flow is also retransmission_bound".into());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_rule_keeps_its_evidence_true(p in params()) {
        let rec = record(&p);
        let d = diagnose(&rec);
        if let Err(e) = check(&d) {
            prop_assert!(false, "{e}\n{:#?}", d);
        }
        // A pure function of the record: the one build_record stored is the same.
        prop_assert_eq!(rec.diagnosis.as_ref(), Some(&d));
    }
}

#[test]
fn the_checker_catches_what_it_is_for() {
    assert_eq!(meets(0.5, ">= 0.5"), Ok(true));
    assert_eq!(meets(89.9, ">= 90"), Ok(false));
    assert_eq!(meets(3.0, "< 4"), Ok(true));
    assert!(meets(1.0, "<= 4 x bdp").is_err());
    assert!(meets(1.0, "about 4").is_err());
    assert_eq!(
        percentages("114% of segments, 3.5% and 150.0% of one CPU"),
        [114.0, 3.5]
    );
    // The case from the field, as the old rule worded it, is caught.
    let rec = fixtures::tcp_send();
    let mut d = diagnose(&rec);
    d.verdicts[0].message = "114% of segments were retransmitted (6 of about 5)".into();
    assert!(check(&d).unwrap_err().contains("114"));
    let mut d = diagnose(&rec);
    d.verdicts[0].evidence.push(Evidence {
        metric: "retransmit_share".into(),
        value: 0.005,
        unit: "ratio".into(),
        threshold: Some(">= 0.01".into()),
    });
    assert!(check(&d).unwrap_err().contains("misses its own threshold"));
}

#[test]
fn every_fixture_keeps_its_evidence_true() {
    for rec in fixtures::all() {
        let d = diagnose(&rec);
        check(&d).unwrap_or_else(|e| panic!("{e}: {d:#?}"));
    }
}

/// The generated records reach every rule: each kind of verdict (and each kind of gap in the
/// evidence) comes up, so the property above is tested on all of them.
#[test]
fn the_generated_records_reach_every_rule() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeMap::<&'static str, usize>::new();
    let mut tiny = 0;
    for _ in 0..3000 {
        let p = params().new_tree(&mut runner).unwrap().current();
        let d = diagnose(&record(&p));
        for v in &d.verdicts {
            *seen.entry(v.kind.name()).or_default() += 1;
            tiny += usize::from(v.evidence.iter().any(|e| e.metric == "buffer_in_segments"));
        }
    }
    for k in [
        VerdictKind::LinkBound,
        VerdictKind::ReceiverDrops,
        VerdictKind::WindowLimited,
        VerdictKind::RetransmissionBound,
        VerdictKind::DelayedAckStalls,
        VerdictKind::InterruptBound,
        VerdictKind::SoftirqBound,
        VerdictKind::TesterLimited,
        VerdictKind::CpuBound,
        VerdictKind::WindowOversized,
        VerdictKind::None,
    ] {
        assert!(
            seen.get(k.name()).is_some_and(|n| *n >= 5),
            "{k:?} too rare: {seen:?}"
        );
    }
    assert!(tiny >= 5, "tiny windows too rare: {tiny}, {seen:?}");
}
