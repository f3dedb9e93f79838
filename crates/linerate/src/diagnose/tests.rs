//! Rule tests on constructed records: every verdict kind triggered and not triggered, and
//! the `none` case. Figures are chosen so that each threshold is crossed (or not) by a clear
//! margin; the arithmetic is written next to each.

use std::collections::BTreeMap;

use linerate_wire::control::{Direction, Transport};
use linerate_wire::host::{HostCounters, InterfaceFacts, InterfaceStats, PerCpu, SoftnetCounters};
use linerate_wire::report::{
    CpuReport, ProcessCpu, Role, SideReport, StreamRole, TcpInfoReport, Totals, UdpRxReport,
};

use super::*;
use crate::model::fixtures;
use crate::model::{FlowDirection, PlanRecord, RunRecord};

const SEC: u64 = 1_000_000_000;

/// [`fixtures::plan`] of a 10 s client→server test to 10.0.0.2 with 128 KiB writes.
fn plan(transport: Transport) -> PlanRecord {
    let mut p = fixtures::plan("10.0.0.2:5301", transport, Direction::Send, 131_072);
    p.udp_offload = true;
    p
}

/// [`fixtures::cpu`] of 2 CPUs with `softirq` percent of the busiest CPU in softirq.
fn cpu(util: f64, busiest: f64, softirq: f64) -> CpuReport {
    CpuReport {
        busiest_cpu_softirq_percent: softirq,
        ..fixtures::cpu(2, util, busiest)
    }
}

/// One end with one stream of `bytes` over 10 s to `remote`: 2 CPUs at 20 % (busiest 30 %),
/// linerate's threads 3 s of CPU, the kernel's default-ish autotuned buffers and MSS 1448.
fn side(role: Role, dir: StreamRole, bytes: u64, remote: &str) -> SideReport {
    let calls = bytes / 131_072 + 1;
    let t = match dir {
        StreamRole::Tx => Totals {
            duration_ns: 10 * SEC,
            tx_bytes: bytes,
            tx_calls: Some(calls),
            rx_calls: Some(0),
            tx_duration_ns: 10 * SEC,
            ..Totals::default()
        },
        StreamRole::Rx => Totals {
            duration_ns: 10 * SEC,
            rx_bytes: bytes,
            tx_calls: Some(0),
            rx_calls: Some(calls),
            rx_duration_ns: 10 * SEC,
            ..Totals::default()
        },
    };
    let mut st = fixtures::stream(dir, &t, Some(2_626_560), Some(6_291_456));
    st.mss_bytes = Some(1448);
    st.congestion = Some("cubic".into());
    st.remote_addr = Some(remote.into());
    let mut s = fixtures::side(role, &format!("{role:?}"), 2, t);
    s.host.boot_id = Some(format!("boot-{role:?}"));
    s.streams = vec![st];
    s.cpu = Some(cpu(20.0, 30.0, 5.0));
    s.process_cpu = Some(ProcessCpu {
        user_ns: SEC,
        system_ns: 2 * SEC,
    });
    s
}

fn tcp_info(rtt_us: u32) -> TcpInfoReport {
    TcpInfoReport {
        rtt_us,
        rttvar_us: Some(rtt_us / 4),
        snd_cwnd: 100,
        snd_mss: 1448,
        total_retrans: Some(0),
        snd_wnd_bytes: Some(3_000_000),
        min_rtt_us: Some(rtt_us),
        busy_time_us: Some(10_000_000),
        rwnd_limited_us: Some(0),
        sndbuf_limited_us: Some(0),
        ..TcpInfoReport::default()
    }
}

/// A TCP client→server test: `bps` of payload for 10 s, RTT 200 µs, addresses 10.0.0.x.
struct Case {
    plan: PlanRecord,
    client: SideReport,
    server: SideReport,
}

impl Case {
    fn tcp(bps: f64) -> Case {
        let bytes = (bps / 8.0 * 10.0) as u64;
        let mut client = side(Role::Client, StreamRole::Tx, bytes, "10.0.0.2:5301");
        client.streams[0].tcp_info = Some(TcpInfoReport {
            // Full-sized segments: every 1448 bytes one data segment.
            data_segs_out: u32::try_from(bytes / 1448).ok(),
            ..tcp_info(200)
        });
        client.totals.retransmits = Some(0);
        Case {
            plan: plan(Transport::Tcp),
            client,
            server: side(Role::Server, StreamRole::Rx, bytes, "10.0.0.1:40000"),
        }
    }

    fn retrans(&mut self, n: u32) {
        self.info().total_retrans = Some(n);
        self.client.totals.retransmits = Some(u64::from(n));
    }

    /// UDP client→server: 1,000,000 datagrams of 1400 B sent in 10 s, `lost` lost.
    fn udp(lost: u64) -> Case {
        let mut c = Case::tcp(1.12e9);
        c.plan = plan(Transport::Udp);
        let sent = 1_000_000u64;
        c.client.totals.tx_packets = Some(sent);
        c.client.totals.tx_bytes = sent * 1400;
        c.client.streams[0].tcp_info = None;
        c.client.totals.retransmits = None;
        let rx = UdpRxReport {
            packets: sent - lost,
            lost,
            ..UdpRxReport::default()
        };
        c.server.totals.rx_packets = Some(sent - lost);
        c.server.totals.rx_bytes = (sent - lost) * 1400;
        c.server.totals.udp_rx = Some(rx);
        c
    }

    fn info(&mut self) -> &mut TcpInfoReport {
        self.client.streams[0].tcp_info.as_mut().unwrap()
    }

    fn counters(side: &mut SideReport) -> &mut HostCounters {
        side.host_counters.get_or_insert_with(|| HostCounters {
            duration_ns: 10 * SEC,
            interface: Some("eth0".into()),
            snmp: Some(BTreeMap::new()),
            ..HostCounters::default()
        })
    }

    fn snmp(side: &mut SideReport, name: &str, v: u64) {
        Case::counters(side)
            .snmp
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), v);
    }

    fn record(&self) -> RunRecord {
        let mut rec = RunRecord::from_reports(
            self.plan.clone(),
            "2024-05-01T12:00:00Z".into(),
            None,
            false,
            self.client.clone(),
            Some(self.server.clone()),
            Vec::new(),
        );
        rec.diagnosis = Some(diagnose(&rec));
        rec
    }

    fn kinds(&self) -> Vec<VerdictKind> {
        diagnose(&self.record())
            .verdicts
            .iter()
            .map(|v| v.kind)
            .collect()
    }

    fn verdict(&self, k: VerdictKind) -> Verdict {
        let d = diagnose(&self.record());
        d.verdicts
            .into_iter()
            .find(|v| v.kind == k)
            .unwrap_or_else(|| panic!("no {k:?} in {:#?}", self.kinds()))
    }
}

#[test]
fn nothing_stands_out_gives_one_none_with_the_key_numbers() {
    let c = Case::tcp(941e6);
    let d = diagnose(&c.record());
    assert_eq!(d.verdicts.len(), 1, "{d:#?}");
    let v = &d.verdicts[0];
    assert_eq!(v.kind, VerdictKind::None);
    assert!(v.message.starts_with("No single limit stands out: client->server 941.0 Mbit/s, RTT 200 us, 0 retransmits, client CPU 20.0% (busiest 30.0%)"), "{}", v.message);
    assert_eq!(d.summary, v.message);
    // Without a link speed or host counters, those rules say they could not judge.
    assert!(
        d.not_judged.iter().any(|n| n.contains("link bound")),
        "{:?}",
        d.not_judged
    );
    assert!(d.not_judged.iter().any(|n| n.contains("no host counters")));
}

#[test]
fn cpu_bound_when_all_cpus_are_busy() {
    let mut c = Case::tcp(941e6);
    c.server.cpu = Some(cpu(95.0, 99.0, 10.0));
    let v = c.verdict(VerdictKind::CpuBound);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::High)
    );
    assert!(v.message.contains("95.0% of 2 CPUs"), "{}", v.message);
    // 85 % of all CPUs with the busiest at 90 %: below both thresholds.
    c.server.cpu = Some(cpu(85.0, 90.0, 10.0));
    assert_eq!(c.kinds(), [VerdictKind::None]);
}

#[test]
fn one_saturated_cpu_is_cpu_bound_unless_softirq_or_our_thread_explain_it() {
    let mut c = Case::tcp(941e6);
    c.server.cpu = Some(cpu(55.0, 99.0, 30.0));
    let v = c.verdict(VerdictKind::CpuBound);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(v.message.starts_with("One CPU of the server was saturated"));
    // 70 % of that CPU in softirq: softirq bound.
    c.server.cpu = Some(cpu(55.0, 99.0, 70.0));
    assert_eq!(c.kinds(), [VerdictKind::SoftirqBound]);
    // linerate's one thread used 98 % of a CPU: tester limited.
    c.server.cpu = Some(cpu(55.0, 99.0, 10.0));
    c.server.process_cpu = Some(ProcessCpu {
        user_ns: 2 * SEC,
        system_ns: 78 * SEC / 10,
    });
    let v = c.verdict(VerdictKind::TesterLimited);
    assert_eq!(v.side, Some(Role::Server));
    assert!(
        (v.evidence[0].value - 98.0).abs() < 1e-9,
        "{:?}",
        v.evidence
    );
    assert!(!c.kinds().contains(&VerdictKind::CpuBound));
}

#[test]
fn one_host_gives_one_cpu_verdict_without_a_side() {
    let mut c = Case::tcp(30e9);
    c.server.host.boot_id = c.client.host.boot_id.clone();
    c.client.cpu = Some(cpu(97.0, 100.0, 40.0));
    c.server.cpu = Some(cpu(97.0, 100.0, 40.0));
    let d = diagnose(&c.record());
    let cpu: Vec<_> = d
        .verdicts
        .iter()
        .filter(|v| v.kind == VerdictKind::CpuBound)
        .collect();
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu[0].side, None);
    assert!(cpu[0].suggestion.contains("share this host"));
}

/// Issue 29: on a one-CPU host (a board running the test itself, as Xilinx's XAPP1127 runs
/// netperf on the ML507) no other CPU was idle, and the CPU that ran linerate is the system
/// under test: never "tester limited while other CPUs were idle".
#[test]
fn on_a_one_cpu_host_the_cpu_that_ran_linerate_is_the_system_under_test() {
    let saturated = ProcessCpu {
        user_ns: 2 * SEC,
        system_ns: 78 * SEC / 10,
    };
    // The only CPU busy, linerate's thread at 98 % of it.
    let mut c = Case::tcp(600e6);
    c.client.cpu = Some(fixtures::cpu(1, 99.0, 99.0));
    c.client.process_cpu = Some(saturated.clone());
    let v = c.verdict(VerdictKind::CpuBound);
    assert_eq!(v.side, Some(Role::Client));
    assert!(
        v.message
            .starts_with("The only CPU of the client was busy: 99.0%."),
        "{}",
        v.message
    );
    assert!(
        v.message
            .contains("the CPU that ran linerate is the system under test"),
        "{}",
        v.message
    );
    assert!(!c.kinds().contains(&VerdictKind::TesterLimited));
    // Figures that disagree (the whole at 88 %, its one CPU at 97 %) reach the thread rule:
    // still not "other CPUs had idle time".
    c.client.cpu = Some(CpuReport {
        busiest_cpu_softirq_percent: 5.0,
        ..fixtures::cpu(1, 88.0, 97.0)
    });
    let v = c.verdict(VerdictKind::CpuBound);
    assert!(v.message.contains("of its only CPU"), "{}", v.message);
    assert!(v.message.contains("system under test"), "{}", v.message);
    assert!(!v.message.contains("other CPUs"), "{}", v.message);
    assert!(
        v.evidence
            .iter()
            .any(|e| e.metric == "cpu_count" && e.value == 1.0),
        "{:?}",
        v.evidence
    );
    assert!(!c.kinds().contains(&VerdictKind::TesterLimited));
    // A missed pace on one CPU: the host's limit, said with its CPU verdict.
    let mut c = Case::tcp(600e6);
    c.plan.rate_bps = Some(1_000_000_000);
    c.client.cpu = Some(fixtures::cpu(1, 99.0, 99.0));
    c.client.process_cpu = Some(saturated.clone());
    assert!(
        !c.kinds().contains(&VerdictKind::TesterLimited),
        "{:?}",
        c.kinds()
    );
    let d = diagnose(&c.record());
    let cpu: Vec<_> = d
        .verdicts
        .iter()
        .filter(|v| v.kind == VerdictKind::CpuBound)
        .collect();
    assert_eq!(cpu.len(), 1, "{:?}", d.verdicts);
    assert!(
        cpu[0]
            .message
            .contains("Paced at 1.000 Gbit/s, the client sent only 600.0 Mbit/s (60%)"),
        "{}",
        cpu[0].message
    );
    assert!(
        cpu[0].evidence.iter().any(|e| e.metric == "pace_reached"),
        "{:?}",
        cpu[0].evidence
    );
    // The same with two CPUs, one idle: tester limited, as before.
    c.client.cpu = Some(CpuReport {
        busiest_cpu_softirq_percent: 5.0,
        ..fixtures::cpu(2, 55.0, 99.0)
    });
    let v = c.verdict(VerdictKind::TesterLimited);
    assert!(v.message.starts_with("Paced at"), "{}", v.message);
}

#[test]
fn missed_pace_with_saturated_threads_is_tester_limited_and_a_met_pace_is_none() {
    let mut c = Case::tcp(600e6);
    c.plan.rate_bps = Some(1_000_000_000);
    c.client.process_cpu = Some(ProcessCpu {
        user_ns: 3 * SEC,
        system_ns: 7 * SEC,
    });
    let v = c.verdict(VerdictKind::TesterLimited);
    assert_eq!(
        (v.side, v.flow, v.confidence),
        (
            Some(Role::Client),
            Some(FlowDirection::ClientToServer),
            Confidence::High
        )
    );
    assert!(v.message.contains("600.0 Mbit/s (60%)"), "{}", v.message);
    // The same shortfall with idle threads: not the tester (something else held it back).
    c.client.process_cpu = Some(ProcessCpu {
        user_ns: SEC,
        system_ns: SEC,
    });
    assert!(!c.kinds().contains(&VerdictKind::TesterLimited));
    // A met pace: none, and it says the pace set the rate.
    let mut c = Case::tcp(99e6);
    c.plan.rate_bps = Some(100_000_000);
    let d = diagnose(&c.record());
    assert_eq!(d.verdicts[0].kind, VerdictKind::None);
    assert!(
        d.summary
            .starts_with("The pace set the rate (-b 100.0 Mbit/s)"),
        "{}",
        d.summary
    );
}

#[test]
fn interrupt_bound_needs_many_interrupts_and_cpu_spent_on_them() {
    let mut c = Case::tcp(941e6);
    let hc = Case::counters(&mut c.server);
    hc.interrupts_per_1000_packets = Some(900.0);
    hc.interface_stats = Some(InterfaceStats {
        rx_packets: 800_000,
        tx_packets: 400_000,
        ..InterfaceStats::default()
    });
    // irq 10 % + softirq 30 % of 2 CPUs = 0.8 CPUs ≥ 0.5.
    let mut cr = cpu(60.0, 97.0, 40.0);
    cr.irq_percent = 10.0;
    cr.softirq_percent = 30.0;
    c.server.cpu = Some(cr);
    c.server.interface = Some(InterfaceFacts {
        name: "eth0".into(),
        coalescing: Some(BTreeMap::from([
            ("rx-usecs".into(), 0),
            ("rx-frames".into(), 1),
            ("adaptive-rx".into(), 0),
        ])),
        ..InterfaceFacts::default()
    });
    let v = c.verdict(VerdictKind::InterruptBound);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::High)
    );
    assert!(
        v.message
            .contains("900 interrupts per 1000 packets (1.1 packets per interrupt)"),
        "{}",
        v.message
    );
    assert!(
        v.suggestion.contains("ethtool -C eth0 adaptive-rx on")
            && v.suggestion
                .contains("(now: adaptive-rx 0, rx-frames 1, rx-usecs 0)"),
        "{}",
        v.suggestion
    );
    // NAPI batching 50 packets per interrupt (20 per 1000): not interrupt bound.
    Case::counters(&mut c.server).interrupts_per_1000_packets = Some(20.0);
    assert!(!c.kinds().contains(&VerdictKind::InterruptBound));
}

#[test]
fn window_limited_when_rwnd_bound_and_the_buffer_is_about_the_bdp() {
    // 300 Mbit/s × 200 µs = 7,500 B of BDP; an 8 KiB receive buffer ≤ 4 × BDP.
    let mut c = Case::tcp(300e6);
    c.info().rwnd_limited_us = Some(9_000_000);
    c.server.streams[0].rcvbuf_bytes = Some(8192);
    c.plan.remote_rcvbuf = Some(4096);
    let v = c.verdict(VerdictKind::WindowLimited);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::High)
    );
    assert!(v.message.contains("receive window 90%"), "{}", v.message);
    assert!(v.suggestion.contains("--remote-rcvbuf"), "{}", v.suggestion);
    let bdp = v
        .evidence
        .iter()
        .find(|e| e.metric == "bdp_bytes_per_stream")
        .unwrap();
    assert!((bdp.value - 7500.0).abs() < 1e-6);
    // A 6 MiB buffer that is "full" is a slow reader, not a small window.
    c.server.streams[0].rcvbuf_bytes = Some(6 << 20);
    assert!(!c.kinds().contains(&VerdictKind::WindowLimited));
    // rwnd-limited 30 % of the time with the advertised window full (7,500 B in flight in
    // a 7 KiB window): still window limited, medium confidence.
    c.server.streams[0].rcvbuf_bytes = Some(8192);
    c.info().rwnd_limited_us = Some(3_000_000);
    c.info().snd_wnd_bytes = Some(7168);
    let v = c.verdict(VerdictKind::WindowLimited);
    assert_eq!(v.confidence, Confidence::Medium);
    // ... but not with a 3 MB window mostly empty.
    c.info().snd_wnd_bytes = Some(3_000_000);
    assert!(!c.kinds().contains(&VerdictKind::WindowLimited));
    // rwnd-limited 10 % of the time: not window limited.
    c.server.streams[0].rcvbuf_bytes = Some(8192);
    c.info().rwnd_limited_us = Some(1_000_000);
    assert!(!c.kinds().contains(&VerdictKind::WindowLimited));
}

#[test]
fn window_limited_by_the_send_buffer_names_the_sender() {
    let mut c = Case::tcp(300e6);
    c.info().sndbuf_limited_us = Some(7_000_000);
    c.client.streams[0].sndbuf_bytes = Some(16_384);
    let v = c.verdict(VerdictKind::WindowLimited);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Client), Confidence::Medium)
    );
    assert!(
        v.suggestion.contains("autotuning stopped at 16.00 KiB"),
        "{}",
        v.suggestion
    );
}

#[test]
fn a_full_autotuned_window_at_a_busy_receiver_is_not_blamed() {
    // The same figures as the send-buffer case, but at the receiver and autotuned: with the
    // receiver's CPUs saturated, a full window may be a slow reader.
    let mut c = Case::tcp(300e6);
    c.info().rwnd_limited_us = Some(9_000_000);
    c.server.streams[0].rcvbuf_bytes = Some(8192);
    c.server.cpu = Some(cpu(96.0, 99.0, 20.0));
    let d = diagnose(&c.record());
    assert!(
        !d.verdicts
            .iter()
            .any(|v| v.kind == VerdictKind::WindowLimited),
        "{d:#?}"
    );
    assert!(
        d.not_judged.iter().any(|n| n.contains("slow reader")),
        "{:?}",
        d.not_judged
    );
    // Requested small by the user: the buffer is blamed whatever the CPUs did.
    c.plan.remote_rcvbuf = Some(4096);
    assert!(c.kinds().contains(&VerdictKind::WindowLimited));
}

#[test]
fn window_oversized_as_in_seed_001() {
    // 663 Mbit/s with a 0.12 ms RTT: BDP = 82.9 MB/s × 120 µs = 9,945 B; a 768 KB request
    // granted as 1.5 MiB is 158× that.
    let mut c = Case::tcp(663e6);
    c.info().rtt_us = 120;
    c.info().min_rtt_us = Some(120);
    c.plan.remote_rcvbuf = Some(768 * 1024);
    c.server.streams[0].rcvbuf_bytes = Some(1_572_864);
    let d = diagnose(&c.record());
    assert_eq!(
        d.verdicts[0].kind,
        VerdictKind::None,
        "advice is not a limit: {d:#?}"
    );
    let v = d
        .verdicts
        .iter()
        .find(|v| v.kind == VerdictKind::WindowOversized)
        .unwrap();
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::Low)
    );
    let f = v
        .evidence
        .iter()
        .find(|e| e.metric == "buffer_over_bdp")
        .unwrap();
    assert!((f.value - 1_572_864.0 / 9945.0).abs() < 0.01, "{}", f.value);
    // Not requested (autotuned): no advice.
    c.plan.remote_rcvbuf = None;
    assert_eq!(c.kinds(), [VerdictKind::None]);
}

#[test]
fn window_advice_never_names_less_than_the_buffer_it_had() {
    // 300 Mbit/s × 200 µs = 7,500 B of BDP; a 22,500 B granted receive buffer (3 × BDP,
    // 11,250 B requested) filled 90 % of the time. At a 315 Mbit/s link the BDP is 7,875 B:
    // twice that, 15,750 B, is less than the buffer already had, so the advice is "several
    // times" the buffer, never 15.38 KiB.
    let mut c = Case::tcp(300e6);
    c.info().rwnd_limited_us = Some(9_000_000);
    c.server.streams[0].rcvbuf_bytes = Some(22_500);
    c.plan.remote_rcvbuf = Some(11_250);
    c.plan.link_rate_bps = Some(315_000_000);
    let v = c.verdict(VerdictKind::WindowLimited);
    assert!(
        v.message.contains(
            "the server's receive buffer (SO_RCVBUF), granted 21.97 KiB, 10.99 KiB requested, \
             is about the bandwidth-delay product 7.32 KiB"
        ),
        "{}",
        v.message
    );
    assert!(
        v.suggestion.contains("of several times 21.97 KiB"),
        "{}",
        v.suggestion
    );
    assert!(!v.suggestion.contains("15.38 KiB"), "{}", v.suggestion);
    // Autotuned (nothing requested): said so, with the granted size.
    c.plan.remote_rcvbuf = None;
    c.plan.link_rate_bps = None;
    let v = c.verdict(VerdictKind::WindowLimited);
    assert!(
        v.message.contains("granted 21.97 KiB, autotuned,"),
        "{}",
        v.message
    );
}

#[test]
fn oversized_names_requested_and_granted_and_advises_at_least_four_segments() {
    // 663 Mbit/s with a 5 µs minimum RTT: BDP = 82,875,000 B/s × 5 µs = 414 B; 4 × BDP =
    // 1,657 B is below 4 segments of 1448 B (5,792 B, 6 KiB in whole KiB): advise 6.00 KiB.
    let mut c = Case::tcp(663e6);
    c.info().rtt_us = 5;
    c.info().min_rtt_us = Some(5);
    c.plan.remote_rcvbuf = Some(768 * 1024);
    c.server.streams[0].rcvbuf_bytes = Some(1_572_864);
    let v = c.verdict(VerdictKind::WindowOversized);
    assert!(
        v.message.starts_with(
            "The receive buffer on the server (768.00 KiB requested, 1.50 MiB granted)"
        ),
        "{}",
        v.message
    );
    assert!(
        v.suggestion
            .starts_with("Request about 6.00 KiB (2-4 × the BDP, and no less than 4 segments"),
        "{}",
        v.suggestion
    );
}

#[test]
fn busy_host_with_little_of_it_linerates_says_both_shares() {
    // All CPUs of the server 97 % busy while linerate's threads used 4 % of one CPU (0.4 s
    // of 10 s): 2 % of the host's 2 CPUs.
    let mut c = Case::tcp(300e6);
    c.server.cpu = Some(cpu(97.0, 99.0, 5.0));
    c.server.process_cpu = Some(ProcessCpu {
        user_ns: SEC / 10,
        system_ns: 3 * SEC / 10,
    });
    let v = c.verdict(VerdictKind::CpuBound);
    assert_eq!(v.confidence, Confidence::Low);
    assert!(
        v.message.contains(
            "The host was busy with other work: 97.0% CPU, linerate 2.0% (its threads used \
             4.0% of one CPU)"
        ),
        "{}",
        v.message
    );
    let share = v
        .evidence
        .iter()
        .find(|e| e.metric == "tool_share_of_all_cpus_percent")
        .unwrap();
    assert!((share.value - 2.0).abs() < 1e-9, "{share:?}");
}

#[test]
fn an_mtu_mismatch_between_the_ends_is_named() {
    let mut c = Case::udp(0);
    c.plan.write_size = 8000;
    let iface = |name: &str, mtu| InterfaceFacts {
        name: name.into(),
        mtu: Some(mtu),
        ..InterfaceFacts::default()
    };
    c.client.interface = Some(iface("eth0", 9000));
    c.server.interface = Some(iface("eth1", 1500));
    let d = diagnose(&c.record());
    let note = d
        .notes
        .iter()
        .find(|n| n.starts_with("MTU mismatch"))
        .unwrap_or_else(|| panic!("{:?}", d.notes));
    assert!(
        note.contains("the client's eth0 has MTU 9000 and the server's eth1 MTU 1500"),
        "{note}"
    );
    // 1500 − 20 (IPv4) − 8 (UDP) = 1472.
    assert!(note.contains("-l 1472"), "{note}");
    c.server.interface = Some(iface("eth1", 9000));
    assert!(!diagnose(&c.record())
        .notes
        .iter()
        .any(|n| n.starts_with("MTU")));
}

#[test]
fn link_bound_from_interface_speed_or_link_rate_never_on_loopback() {
    let mut c = Case::tcp(941e6);
    let eth = |speed| InterfaceFacts {
        name: "eth0".into(),
        speed_mbps: Some(speed),
        ..InterfaceFacts::default()
    };
    c.client.interface = Some(eth(1000));
    c.server.interface = Some(eth(10_000));
    // 941 Mbit/s of 1448-byte segments ≈ 999.4 Mbit/s on the wire: 99.9 % of 1 Gbit/s.
    let v = c.verdict(VerdictKind::LinkBound);
    assert_eq!((v.side, v.confidence), (None, Confidence::High));
    assert!(
        v.message
            .contains("of the link rate 1.000 Gbit/s (the speed of eth0 at the client)"),
        "{}",
        v.message
    );
    // Half the link: not link bound.
    let mut half = Case::tcp(500e6);
    half.client.interface = c.client.interface.clone();
    assert!(!half.kinds().contains(&VerdictKind::LinkBound));
    // A shaped 50 Mbit/s path known only from --link-rate.
    let slow = Case::tcp(48e6);
    let mut rec = slow.record();
    assert!(!rec
        .diagnosis
        .as_ref()
        .unwrap()
        .verdicts
        .iter()
        .any(|v| v.kind == VerdictKind::LinkBound));
    apply_link_rate(&mut rec, Some(50_000_000));
    assert_eq!(rec.plan.link_rate_bps, Some(50_000_000));
    assert_eq!(
        rec.diagnosis.as_ref().unwrap().verdicts[0].kind,
        VerdictKind::LinkBound
    );
    // veth's 10 Gbit/s is nominal: 9.5 Gbit/s over veth is not link bound.
    let mut veth = Case::tcp(9.5e9);
    let v = InterfaceFacts {
        driver: Some("veth".into()),
        ..eth(10_000)
    };
    veth.client.interface = Some(v.clone());
    veth.server.interface = Some(v);
    assert!(!veth.kinds().contains(&VerdictKind::LinkBound));
    // Loopback: never, whatever the rate.
    c.client.interface = Some(InterfaceFacts {
        name: "lo".into(),
        ..eth(1000)
    });
    assert!(!c.kinds().contains(&VerdictKind::LinkBound));
    let mut lo = Case::tcp(48e6);
    lo.plan.link_rate_bps = Some(50_000_000);
    lo.client.streams[0].remote_addr = Some("127.0.0.1:5301".into());
    assert!(!lo.kinds().contains(&VerdictKind::LinkBound));
}

#[test]
fn link_bound_from_the_senders_shaper_and_the_smallest_rate_wins() {
    // 48 Mbit/s of 1448-byte segments is 48e6 × 1538 / 1448 = 50.98 Mbit/s on the wire:
    // 102 % of a 50 Mbit/s tbf (a tbf counts IP packets, so it lets slightly more through).
    let shaped = |rate: u64| InterfaceFacts {
        name: "veth0".into(),
        driver: Some("veth".into()),
        speed_mbps: Some(10_000),
        root_qdisc: Some("tbf".into()),
        shaped_rate_bps: Some(rate),
        ..InterfaceFacts::default()
    };
    let mut c = Case::tcp(48e6);
    c.client.interface = Some(shaped(50_000_000));
    let v = c.verdict(VerdictKind::LinkBound);
    assert!(
        v.message
            .contains("fills the link rate 50.00 Mbit/s (tbf on veth0 at the client)"),
        "{}",
        v.message
    );
    // A shaper on the receiver's egress holds back its ACKs, not this flow's data.
    c.client.interface = None;
    c.server.interface = Some(shaped(50_000_000));
    assert!(!c.kinds().contains(&VerdictKind::LinkBound));
    // With a hint too, the smaller rate is the link: a 1 Gbit/s hint leaves the tbf ...
    c.server.interface = None;
    c.client.interface = Some(shaped(50_000_000));
    c.plan.link_rate_bps = Some(1_000_000_000);
    assert!(c
        .verdict(VerdictKind::LinkBound)
        .message
        .contains("(tbf on veth0 at the client)"));
    // ... and a 10 Gbit/s hint leaves a 1 Gbit/s NIC's speed.
    let mut nic = Case::tcp(941e6);
    nic.client.interface = Some(InterfaceFacts {
        name: "eth0".into(),
        speed_mbps: Some(1000),
        ..InterfaceFacts::default()
    });
    nic.plan.link_rate_bps = Some(10_000_000_000);
    assert!(nic
        .verdict(VerdictKind::LinkBound)
        .message
        .contains("(the speed of eth0 at the client)"));
}

#[test]
fn link_bound_flow_is_not_also_retransmission_bound() {
    let mut c = Case::tcp(48e6);
    c.plan.link_rate_bps = Some(50_000_000);
    // 2000 of 41,436 segments = 4.8 %; at a 2 ms RTT the Mathis bound is
    // 1448 × 8 / 2 ms × 1.22 / √0.048 = 32.2 Mbit/s, near the 48 Mbit/s reached.
    c.info().rtt_us = 2000;
    c.retrans(2000);
    assert_eq!(c.kinds(), [VerdictKind::LinkBound]);
    c.plan.link_rate_bps = None;
    assert!(c.kinds().contains(&VerdictKind::RetransmissionBound));
}

#[test]
fn receiver_drops_when_udp_loss_is_socket_buffer_overflow() {
    let mut c = Case::udp(10_000);
    c.plan.udp_offload = false;
    Case::snmp(&mut c.server, "Udp.RcvbufErrors", 9_800);
    let v = c.verdict(VerdictKind::ReceiverDrops);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::High)
    );
    assert!(v.message.contains("the receiving socket buffer (granted 6.00 MiB) overflowed 9800 times (Udp.RcvbufErrors) against 10000 datagrams lost (1.00%)"), "{}", v.message);
    // With GRO an overflow drops an aggregate of up to 64 datagrams: 200 errors can explain
    // 12,800 ≥ 10,000 lost, but no more than that: medium confidence.
    c.plan.udp_offload = true;
    Case::snmp(&mut c.server, "Udp.RcvbufErrors", 200);
    let v = c.verdict(VerdictKind::ReceiverDrops);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(
        v.message.contains("each up to 64 datagrams with GRO"),
        "{}",
        v.message
    );
    // Without GRO the same 200 explain 2 % of the loss: not the receiver.
    c.plan.udp_offload = false;
    assert!(!c.kinds().contains(&VerdictKind::ReceiverDrops));
    Case::snmp(&mut c.server, "Udp.RcvbufErrors", 9_800);
    let v = c.verdict(VerdictKind::ReceiverDrops);
    assert!(v.suggestion.contains("--remote-rcvbuf") && v.suggestion.contains("rmem_max"));
    // Loss elsewhere (no socket overflow): no receiver drops.
    let mut c = Case::udp(10_000);
    Case::snmp(&mut c.server, "Udp.RcvbufErrors", 0);
    assert!(!c.kinds().contains(&VerdictKind::ReceiverDrops));
    // Backlog drops count too.
    Case::counters(&mut c.server).softnet = Some(SoftnetCounters {
        dropped: PerCpu {
            total: 500,
            per_cpu: vec![500, 0],
        },
        ..SoftnetCounters::default()
    });
    let v = c.verdict(VerdictKind::ReceiverDrops);
    assert!(
        v.suggestion.contains("netdev_max_backlog"),
        "{}",
        v.suggestion
    );
}

#[test]
fn receiver_drops_for_tcp_receive_queue_drops() {
    let mut c = Case::tcp(941e6);
    Case::snmp(&mut c.server, "Tcp.InSegs", 800_000);
    Case::snmp(&mut c.server, "TcpExt.TCPRcvQDrop", 300);
    let v = c.verdict(VerdictKind::ReceiverDrops);
    assert!(
        v.message.contains("300 TCP segments dropped"),
        "{}",
        v.message
    );
    Case::snmp(&mut c.server, "TcpExt.TCPRcvQDrop", 5);
    assert!(!c.kinds().contains(&VerdictKind::ReceiverDrops));
}

#[test]
fn delayed_ack_stalls_with_nagle_are_high_confidence() {
    let mut c = Case::tcp(6.5e6);
    Case::snmp(&mut c.server, "Tcp.InSegs", 10_000);
    Case::snmp(&mut c.server, "TcpExt.DelayedACKs", 500);
    let v = c.verdict(VerdictKind::DelayedAckStalls);
    assert_eq!(
        (v.side, v.confidence),
        (Some(Role::Server), Confidence::Medium)
    );
    assert!(
        v.message
            .contains("fired 500 times (5.0% of the 10000 segments it received), 50/s"),
        "{}",
        v.message
    );
    c.plan.write_size = 512;
    let v = c.verdict(VerdictKind::DelayedAckStalls);
    assert_eq!(v.confidence, Confidence::High);
    assert!(v.suggestion.contains("-N (TCP_NODELAY)"));
    // A handful at set-up and tear-down: nothing.
    Case::snmp(&mut c.server, "TcpExt.DelayedACKs", 5);
    assert!(!c.kinds().contains(&VerdictKind::DelayedAckStalls));
}

#[test]
fn retransmission_bound_from_one_percent_of_data_segments_that_explains_the_rate() {
    // 100 Mbit/s for 10 s = 125 MB = 86,325 data segments of 1448 B (TCP_INFO).
    let mut c = Case::tcp(100e6);
    c.info().rtt_us = 1000;
    c.retrans(200); // 0.23 %
    assert!(!c.kinds().contains(&VerdictKind::RetransmissionBound));
    // 2000 of 86,325 = 2.317 %: Mathis bound 1448 × 8 / 1 ms × 1.22 / √0.02317
    // = 11.58 Mbit/s × 8.0152 = 92.84 Mbit/s, about the 100 Mbit/s reached.
    c.retrans(2000);
    let v = c.verdict(VerdictKind::RetransmissionBound);
    assert_eq!(v.confidence, Confidence::High);
    let m = v
        .evidence
        .iter()
        .find(|e| e.metric == "mathis_bound_bps")
        .unwrap()
        .value;
    assert!((m - 92.84e6).abs() < 0.1e6, "{m}");
    assert!(
        v.message
            .starts_with("2.32% of data segments were retransmitted (2000 of 86325, TCP_INFO)"),
        "{}",
        v.message
    );
    // At a 200 µs RTT the same loss allows 464 Mbit/s: it does not explain 100 Mbit/s, and
    // no "bound" is claimed.
    c.info().rtt_us = 200;
    assert!(!c.kinds().contains(&VerdictKind::RetransmissionBound));
}

#[test]
fn retransmissions_are_judged_from_tcp_info_segments_only() {
    let mut c = Case::tcp(100e6);
    c.info().rtt_us = 1000;
    c.retrans(2000);
    // A kernel before 4.6 has no data_segs_out: not judged, never guessed from payload/MSS.
    c.info().data_segs_out = None;
    let d = diagnose(&c.record());
    assert!(!d
        .verdicts
        .iter()
        .any(|v| v.kind == VerdictKind::RetransmissionBound));
    assert!(
        d.not_judged.iter().any(|n| n.contains("no data_segs_out")),
        "{:?}",
        d.not_judged
    );
    // Counts that cannot both be true: not judged either.
    c.info().data_segs_out = Some(1000);
    let d = diagnose(&c.record());
    assert!(
        d.not_judged
            .iter()
            .any(|n| n.contains("more retransmissions (2000) than data segments sent (1000)")),
        "{:?}",
        d.not_judged
    );
}

/// The field case, from a real `linerate tcp 127.0.0.1 -w 4K -t 5` on this machine: 8 KiB
/// granted for a 4 KiB request at both ends, snd_mss 32 KiB (Linux halves it for a tiny
/// window), advmss 64 KiB, 358 kbit/s, rwnd-limited 4.83 s of 5.67 s busy, 6 of 37 data
/// segments retransmitted, 3 time-outs and 24 zero windows advertised (host-wide).
fn field_case() -> Case {
    let mut c = Case::tcp(358e3);
    c.plan.server = "127.0.0.1:5301".into();
    c.plan.local_sndbuf = Some(4096);
    c.plan.local_rcvbuf = Some(4096);
    c.plan.remote_sndbuf = Some(4096);
    c.plan.remote_rcvbuf = Some(4096);
    c.client.streams[0].remote_addr = Some("127.0.0.1:5301".into());
    c.server.streams[0].remote_addr = Some("127.0.0.1:37424".into());
    c.server.host.boot_id = c.client.host.boot_id.clone();
    c.client.streams[0].sndbuf_bytes = Some(8192);
    c.server.streams[0].rcvbuf_bytes = Some(8192);
    *c.info() = TcpInfoReport {
        rtt_us: 254,
        rttvar_us: Some(378),
        snd_cwnd: 16,
        snd_mss: 32_768,
        advmss_bytes: Some(65_483),
        total_retrans: Some(6),
        data_segs_out: Some(37),
        segs_out: Some(40),
        snd_wnd_bytes: Some(8192),
        min_rtt_us: Some(5),
        busy_time_us: Some(5_672_000),
        rwnd_limited_us: Some(4_832_000),
        sndbuf_limited_us: Some(0),
        ..TcpInfoReport::default()
    };
    c.client.totals.retransmits = Some(6);
    for side in [&mut c.client, &mut c.server] {
        Case::snmp(side, "TcpExt.TCPTimeouts", 3);
        Case::snmp(side, "TcpExt.TCPToZeroWindowAdv", 24);
        Case::snmp(side, "Tcp.InSegs", 92);
        side.cpu = Some(cpu(99.9, 100.0, 0.0));
        side.process_cpu = Some(ProcessCpu {
            user_ns: 0,
            system_ns: 5_000_000,
        });
    }
    c
}

#[test]
fn socket_buffers_below_one_mss_are_window_limited_not_retransmission_bound() {
    let c = field_case();
    let d = diagnose(&c.record());
    let kinds: Vec<_> = d.verdicts.iter().map(|v| v.kind).collect();
    assert_eq!(kinds[0], VerdictKind::WindowLimited, "{d:#?}");
    assert!(!kinds.contains(&VerdictKind::RetransmissionBound), "{d:#?}");
    let v = &d.verdicts[0];
    assert_eq!(
        (v.side, v.flow, v.confidence),
        (
            Some(Role::Server),
            Some(FlowDirection::ClientToServer),
            Confidence::High
        )
    );
    let e = |m: &str| v.evidence.iter().find(|e| e.metric == m).unwrap().value;
    assert_eq!(e("limiting_buffer_bytes"), 8192.0);
    assert_eq!(e("requested_buffer_bytes"), 4096.0);
    assert_eq!(e("path_mss_bytes"), 65_483.0);
    assert!((e("buffer_in_segments") - 8192.0 / 65_483.0).abs() < 1e-9);
    assert_eq!(e("rwnd_limited_us"), 4_832_000.0);
    assert!((e("rwnd_limited_share") - 4.832 / 5.672).abs() < 1e-9);
    assert_eq!(e("tcp_timeouts_host"), 3.0);
    assert_eq!(e("zero_window_adverts_host"), 24.0);
    assert!(
        v.message.starts_with(
            "The server's receive buffer (SO_RCVBUF) was granted 8.00 KiB (4.00 KiB requested; \
             the kernel doubles a request), 0.13 segments of the path's MSS (63.95 KiB): with \
             fewer than 4 segments in flight the sender stalls on zero windows and timers (3 \
             retransmission time-outs, 24 zero windows advertised) instead of being clocked by \
             ACKs, and reached 358.0 kbit/s; \
             TCP_INFO counts 4.83 s of its 5.67 s busy time (85%) as limited by the receive \
             window."
        ),
        "{}",
        v.message
    );
    // 4 × 65,483 B = 261,932 B, whole KiB: 256 KiB.
    assert!(
        v.suggestion.starts_with(
            "Request a buffer of at least 256.00 KiB (--remote-rcvbuf SIZE, or -S / -w)"
        ),
        "{}",
        v.suggestion
    );
    // The busy CPUs were other processes' (linerate used 0.1 % of one CPU): low confidence.
    let cpu = d
        .verdicts
        .iter()
        .find(|v| v.kind == VerdictKind::CpuBound)
        .unwrap();
    assert_eq!(cpu.confidence, Confidence::Low);
    assert!(
        cpu.message.contains("The host was busy with other work: ")
            && cpu.message.contains(", linerate "),
        "{}",
        cpu.message
    );
}

#[test]
fn a_send_buffer_below_a_few_mss_names_the_sender() {
    // -s 4K on loopback: the receiver autotuned, the sender's 8 KiB against 64 KiB segments.
    let mut c = field_case();
    c.plan.remote_rcvbuf = None;
    c.server.streams[0].rcvbuf_bytes = Some(3_146_305);
    c.info().rwnd_limited_us = Some(0);
    c.info().sndbuf_limited_us = Some(48_000);
    c.info().snd_mss = 65_483;
    let v = c.verdict(VerdictKind::WindowLimited);
    assert_eq!(v.side, Some(Role::Client));
    assert!(v
        .message
        .starts_with("The client's send buffer (SO_SNDBUF) was granted 8.00 KiB"));
    assert!(v.suggestion.contains("--local-sndbuf"), "{}", v.suggestion);
    // Timers still show the stalls: high confidence though the chrono share is small.
    assert_eq!(v.confidence, Confidence::High);
    let share = v
        .evidence
        .iter()
        .find(|e| e.metric == "sndbuf_limited_share")
        .unwrap();
    assert_eq!(
        share.threshold, None,
        "a share under 0.5 claims no threshold"
    );
}

#[test]
fn a_paced_flow_that_met_its_pace_is_not_window_limited() {
    let mut c = field_case();
    c.plan.rate_bps = Some(300_000);
    assert!(!c.kinds().contains(&VerdictKind::WindowLimited));
}

#[test]
fn records_without_flows_still_get_cpu_verdicts() {
    let mut c = Case::tcp(941e6);
    c.client.cpu = Some(cpu(95.0, 99.0, 5.0));
    let mut rec = c.record();
    rec.summary.flows.clear();
    let d = diagnose(&rec);
    assert_eq!(d.verdicts[0].kind, VerdictKind::CpuBound);
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["verdicts"][0]["kind"], "cpu_bound");
    assert_eq!(json["verdicts"][0]["confidence"], "high");
    assert_eq!(json["verdicts"][0]["side"], "client");
}

#[test]
fn verdict_names_match_serde() {
    for k in [
        VerdictKind::LinkBound,
        VerdictKind::ReceiverDrops,
        VerdictKind::DatagramLoss,
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
        assert_eq!(serde_json::to_value(k).unwrap(), k.name());
    }
}

#[test]
fn unexplained_udp_loss_is_datagram_loss_never_none() {
    // 10,000 of 1,000,000 lost in sequence gaps (1 %), no counter at the server explains it.
    let c = Case::udp(10_000);
    let v = c.verdict(VerdictKind::DatagramLoss);
    assert_eq!(
        (v.side, v.flow, v.confidence),
        (
            None,
            Some(FlowDirection::ClientToServer),
            Confidence::Medium
        )
    );
    assert!(
        v.message.starts_with(
            "10000 of 1000000 datagrams (1.00%) never arrived; no counter at the server"
        ),
        "{}",
        v.message
    );
    assert!(!c.kinds().contains(&VerdictKind::None));
    // Explained by the receiver's socket buffer: receiver_drops alone.
    let mut c = Case::udp(10_000);
    c.plan.udp_offload = false;
    Case::snmp(&mut c.server, "Udp.RcvbufErrors", 9_800);
    assert!(c.kinds().contains(&VerdictKind::ReceiverDrops));
    assert!(!c.kinds().contains(&VerdictKind::DatagramLoss));
    // 500 lost (0.05 %) is below what is judged.
    let c = Case::udp(500);
    assert!(!c.kinds().contains(&VerdictKind::DatagramLoss));
    assert_eq!(c.kinds(), [VerdictKind::None]);
}

#[test]
fn datagrams_lost_after_the_last_one_received_count() {
    // The server's socket got datagrams 0..200,000 and nothing after, without a gap; the
    // client sent 1,000,000 (its sequence count): 800,000 lost at the end, 80 %.
    let mut c = Case::udp(0);
    c.client.streams[0].packets = Some(1_000_000);
    c.client.streams[0].udp_seq_end = Some(1_000_000);
    let rx = UdpRxReport {
        packets: 200_000,
        ..UdpRxReport::default()
    };
    c.server.totals.rx_packets = Some(200_000);
    c.server.totals.rx_bytes = 200_000 * 1400;
    c.server.totals.udp_rx = Some(rx.clone());
    c.server.streams[0].udp_rx = Some(UdpRxReport {
        highest_seq: Some(199_999),
        ..rx
    });
    let rec = c.record();
    let f = &rec.summary.flows[0];
    assert_eq!(
        (f.lost_at_end, f.lost_datagrams),
        (Some(800_000), Some(800_000))
    );
    assert!((f.loss_percent.unwrap() - 80.0).abs() < 1e-9);
    let v = c.verdict(VerdictKind::DatagramLoss);
    assert_eq!(v.confidence, Confidence::High);
    assert!(
        v.message.contains(
            "800000 of 1000000 datagrams (80.00%) never arrived, 800000 of them after the last datagram that arrived"
        ),
        "{}",
        v.message
    );
    let d = diagnose(&rec);
    assert_eq!(d.primary().unwrap().kind, VerdictKind::DatagramLoss);
    assert!(d.verdicts.iter().all(|v| v.kind != VerdictKind::None));
    for e in &v.evidence {
        assert!(
            e.value >= 0.0 && (e.unit != "percent" || e.value <= 100.0),
            "{e:?}"
        );
    }
}

/// A UDP test over `iface` at both ends where the sender's interface sent `tx` packets and
/// the receiver's received `rx` (the control connection's included), 1,000,000 datagrams.
fn udp_over(iface: &str, tx: u64, rx: u64) -> Case {
    use linerate_wire::report::ControlSegments;
    let mut c = Case::udp(0);
    c.client.control_segments = Some(ControlSegments {
        sent: 3,
        received: 2,
    });
    c.server.control_segments = Some(ControlSegments {
        sent: 3,
        received: 4,
    });
    for (side, tx_packets, rx_packets) in [(&mut c.client, tx, 7), (&mut c.server, 6, rx)] {
        let hc = Case::counters(side);
        hc.interface = Some(iface.into());
        hc.interface_stats = Some(InterfaceStats {
            tx_packets,
            rx_packets,
            ..InterfaceStats::default()
        });
    }
    c
}

#[test]
fn packets_and_datagrams_are_told_apart_with_a_note() {
    // Loopback: the client's lo sent 15,630 packets, 5 of them the control connection's
    // (3 + 2: both directions cross lo), so 1,000,000 datagrams went in 15,625 packets: 64 each.
    let c = udp_over("lo", 15_630, 15_632);
    let rec = c.record();
    let f = &rec.summary.flows[0];
    assert_eq!(f.sender_datagrams_per_packet, Some(64.0));
    assert_eq!(f.sender_interface_pps, Some(1562.5));
    // The server's lo received 15,632, 7 of them control (3 + 4).
    assert_eq!(f.receiver_interface_pps, Some(1562.5));
    let ip = f.interface_packets.as_ref().unwrap();
    assert_eq!(
        (ip.sender_control_packets, ip.receiver_control_packets),
        (Some(5), Some(7))
    );
    let notes = &rec.diagnosis.as_ref().unwrap().notes;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(
            "client->server: 64.0 datagrams per packet at lo: UDP GSO/GRO super-packets on loopback. The datagram figures (sent/recv dgram/s) count what linerate's sockets sent: 100.0k datagrams/s; the interface carried 1.562k packets/s"
        ),
        "{}",
        notes[0]
    );
    // A veth: only the sender's own control segments leave it; one datagram per packet, no
    // note.
    let c = udp_over("veth0", 1_000_003, 1_000_004);
    let rec = c.record();
    let f = &rec.summary.flows[0];
    assert_eq!(f.sender_datagrams_per_packet, Some(1.0));
    assert_eq!(f.receiver_datagrams_per_packet, Some(1.0));
    assert!(rec.diagnosis.as_ref().unwrap().notes.is_empty());
    // Both directions over loopback: one interface carries both flows, which cannot be
    // told apart, and the note says so.
    let mut c = udp_over("lo", 31_260, 31_260);
    c.plan.direction = Direction::Both;
    let rec = c.record();
    assert!(rec
        .summary
        .flows
        .iter()
        .all(|f| f.sender_interface_pps.is_none() && f.sender_datagrams_per_packet.is_none()));
    let notes = &rec.diagnosis.as_ref().unwrap().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("loopback carried both directions")),
        "{notes:?}"
    );
}

/// A `--latency` section: TCP and UDP probes with medians `idle_ns` idle and
/// `tcp_ns`/`udp_ns` under load, 20 and 80 samples.
fn latency_section(
    idle_ns: u64,
    tcp_ns: u64,
    udp_ns: u64,
) -> crate::model::latency::LatencyUnderLoad {
    use crate::model::latency;
    let s = fixtures::latency_summary;
    let (idle_tcp, loaded_tcp) = (s(idle_ns, 20), s(tcp_ns, 80));
    let (ratio, added) = latency::increase(&idle_tcp, &loaded_tcp).unwrap();
    latency::LatencyUnderLoad {
        probe_rate_tps: 10,
        idle_duration_ns: 2 * SEC,
        responsiveness: latency::responsiveness(
            &loaded_tcp.histogram,
            &[tcp_ns as f64 / 1e3],
            &idle_tcp.histogram,
        ),
        idle_udp: Some(s(idle_ns, 20)),
        loaded_udp: Some(s(udp_ns, 80)),
        idle_tcp: Some(idle_tcp),
        loaded_tcp: Some(loaded_tcp),
        loaded_udp_lost: Some(0),
        loaded_probe_bytes: 2 * 80 + 32 * 80,
        loaded_srtt_p50_us: Some(tcp_ns as f64 / 1e3),
        loaded_srtt_trimmed_mean_us: Some(tcp_ns as f64 / 1e3),
        loaded_srtt_samples: Some(8),
        increase_probe: Some("tcp".into()),
        increase_ratio: Some(ratio),
        added_delay_ns: Some(added),
    }
}

#[test]
fn queueing_delay_when_the_loads_queue_delays_the_probes_many_times() {
    // 20 Mbit/s through a 1 MB queue: the probes' median goes from 200 µs to 250 ms.
    let c = Case::tcp(19e6);
    let mut rec = c.record();
    rec.latency_under_load = Some(latency_section(200_000, 250_000_000, 240_000_000));
    let d = diagnose(&rec);
    let v = d
        .verdicts
        .iter()
        .find(|v| v.kind == VerdictKind::QueueingDelay)
        .unwrap_or_else(|| panic!("{d:#?}"));
    // Both probes agree: high confidence. The evidence is the section's own figures.
    assert_eq!(v.confidence, Confidence::High);
    let e = |m: &str| v.evidence.iter().find(|e| e.metric == m).unwrap().value;
    assert_eq!(e("idle_tcp_p50_ns"), 200_000.0);
    assert_eq!(e("loaded_tcp_p50_ns"), 250_000_000.0);
    assert_eq!(e("loaded_over_idle"), 1250.0);
    assert_eq!(e("added_delay_ns"), 249_800_000.0);
    assert_eq!(e("udp_loaded_over_idle"), 1200.0);
    assert!(
        v.message.contains("200 us idle to 250 ms under load"),
        "{}",
        v.message
    );
    assert!(v.message.contains("240 RPM (poor)"), "{}", v.message);
    // Advice, not a limit: a limit (or `none`) comes first.
    assert!(!VerdictKind::QueueingDelay.is_limit());
    assert_ne!(d.verdicts[0].kind, VerdictKind::QueueingDelay);

    // Only the TCP probe saw it: medium.
    rec.latency_under_load = Some(latency_section(200_000, 250_000_000, 300_000));
    let d = diagnose(&rec);
    let v = d
        .verdicts
        .iter()
        .find(|v| v.kind == VerdictKind::QueueingDelay)
        .unwrap();
    assert_eq!(v.confidence, Confidence::Medium);

    // Many times the idle RTT but under 10 ms added (a loaded host, a short queue), or a
    // large added delay that is not many times the idle one: not named.
    for (idle, loaded) in [(200_000, 9_000_000), (50_000_000, 200_000_000)] {
        rec.latency_under_load = Some(latency_section(idle, loaded, loaded));
        let d = diagnose(&rec);
        assert!(
            !d.verdicts
                .iter()
                .any(|v| v.kind == VerdictKind::QueueingDelay),
            "{idle} -> {loaded}: {d:#?}"
        );
    }
    // Without --latency nothing is said.
    rec.latency_under_load = None;
    assert!(!diagnose(&rec)
        .verdicts
        .iter()
        .any(|v| v.kind == VerdictKind::QueueingDelay));
}

/// A profile of 1000 busy samples (of 1200): `cats` (category, samples), the top function
/// of each category `NAME_OF_CATEGORY`, linerate's process with all of them; CPU 1 holds
/// every sample.
fn profile(
    cats: &[(linerate_wire::profile::Category, u64)],
) -> linerate_wire::profile::ProfileReport {
    use linerate_wire::profile::*;
    let busy: u64 = cats.iter().map(|c| c.1).sum();
    let share = |n: u64| n as f64 * 100.0 / busy as f64;
    let categories: Vec<CategoryShare> = cats
        .iter()
        .map(|(c, n)| CategoryShare {
            category: *c,
            samples: *n,
            busy_percent: share(*n),
        })
        .collect();
    ProfileReport {
        event: "cpu-clock".into(),
        frequency_hz: 999,
        duration_ns: 10 * SEC,
        start_monotonic_ns: None,
        samples: busy + 200,
        idle_samples: 200,
        idle_percent: 200.0 * 100.0 / (busy + 200) as f64,
        kernel_samples: busy,
        user_samples: 0,
        lost_samples: 0,
        unresolved_samples: 0,
        top: cats
            .iter()
            .map(|(c, n)| FunctionShare {
                name: format!("top_of_{}", c.label().replace(' ', "_")),
                category: *c,
                samples: *n * 3 / 4,
                busy_percent: share(*n * 3 / 4),
            })
            .collect(),
        categories: categories.clone(),
        processes: vec![ProcessShare {
            comm: "linerate".into(),
            samples: busy,
            busy_percent: 100.0,
        }],
        per_cpu: vec![CpuProfile {
            cpu: 1,
            samples: busy + 200,
            idle_samples: 200,
            categories,
            top_function: None,
        }],
        folded: vec![],
        folded_left_out_samples: 0,
        warnings: vec![],
    }
}

#[test]
fn a_profile_names_what_took_a_cpu_bound_ends_time() {
    use linerate_wire::profile::Category;
    let mut c = Case::tcp(941e6);
    c.server.cpu = Some(cpu(95.0, 99.0, 10.0));
    c.server.profile = Some(profile(&[
        (Category::DataCopy, 610),
        (Category::TcpIp, 390),
    ]));
    let v = c.verdict(VerdictKind::CpuBound);
    assert!(
        v.message.contains("Profile: 61.0% of the server's busy samples were data copy, 39.0% TCP/IP (top function top_of_data_copy with 45.7% of all busy samples)"),
        "{}",
        v.message
    );
    assert!(
        v.suggestion.starts_with("The copy between user space"),
        "{}",
        v.suggestion
    );
    assert!(v.suggestion.contains("--zerocopy"));
    // The evidence reads back from the profile.
    let e = v
        .evidence
        .iter()
        .find(|e| e.metric == "profile_data_copy_percent")
        .expect("profile evidence");
    let p = c.server.profile.as_ref().unwrap();
    assert_eq!(e.value, p.category_percent(Category::DataCopy));
    // Another process that took the time is named with its share.
    let mut p = profile(&[(Category::UserSpace, 700), (Category::DataCopy, 300)]);
    p.processes = vec![
        linerate_wire::profile::ProcessShare {
            comm: "rustc".into(),
            samples: 700,
            busy_percent: 70.0,
        },
        linerate_wire::profile::ProcessShare {
            comm: "linerate".into(),
            samples: 300,
            busy_percent: 30.0,
        },
    ];
    c.server.profile = Some(p);
    let v = c.verdict(VerdictKind::CpuBound);
    assert!(
        v.message
            .contains("rustc took 70.0% of the busy samples (linerate 30.0%)"),
        "{}",
        v.message
    );
    assert!(
        v.suggestion.starts_with("linerate's own code")
            || v.suggestion.starts_with("Other processes"),
        "{}",
        v.suggestion
    );
    // Without a profile the verdict is as before.
    c.server.profile = None;
    let v = c.verdict(VerdictKind::CpuBound);
    assert!(!v.message.contains("Profile"));
    assert!(!v.evidence.iter().any(|e| e.metric.starts_with("profile_")));
}

#[test]
fn a_softirq_bound_verdict_reads_the_busiest_cpus_profile() {
    use linerate_wire::profile::Category;
    let mut c = Case::tcp(941e6);
    c.server.cpu = Some(CpuReport {
        busiest_cpu: 1,
        ..cpu(55.0, 99.0, 70.0)
    });
    c.server.profile = Some(profile(&[
        (Category::DriverNapi, 550),
        (Category::Softirq, 450),
    ]));
    let v = c.verdict(VerdictKind::SoftirqBound);
    assert!(
        v.message
            .contains("Profile: 55.0% of CPU 1's busy samples were driver and NAPI, 45.0% softirq"),
        "{}",
        v.message
    );
    assert!(
        v.suggestion.starts_with("Packet processing takes the time"),
        "{}",
        v.suggestion
    );
}

/// A TCP_CRR record (the netperf-like TCP_RR fixture made TCP_CRR: 55,426 connections a
/// second over 10 s) whose client saw `drops` conntrack drops with the table at
/// `entries` of 300; the server, another host, saw none.
fn crr_with_conntrack(drops: u64, entries: u64) -> RunRecord {
    use linerate_wire::host::ConntrackCounters;
    let mut rec = fixtures::tcp_rr();
    let rr = rec.rr.as_mut().unwrap();
    rr.kind = crate::model::RrKind::TcpCrr;
    rr.connections = Some(rr.transactions);
    let ct = |drops, entries| HostCounters {
        duration_ns: 10 * SEC,
        snmp: Some([("TcpExt.TCPSynRetrans".to_string(), drops)].into()),
        conntrack: Some(ConntrackCounters {
            entries: Some(entries),
            max_entries: Some(300),
            drops: Some(drops),
            insert_failed: Some(0),
            early_drops: Some(0),
        }),
        ..HostCounters::default()
    };
    rec.client.host_counters = Some(ct(drops, entries));
    rec.server.as_mut().unwrap().host_counters = Some(ct(0, 3));
    rec
}

#[test]
fn conntrack_drops_named_with_the_figures_and_what_the_rate_needs() {
    let rec = crr_with_conntrack(42, 300);
    let d = diagnose(&rec);
    let v = d
        .verdicts
        .iter()
        .find(|v| v.kind == VerdictKind::ConntrackDrops)
        .expect("conntrack_drops");
    assert_eq!(v.side, Some(Role::Client));
    // The table was full (300 of 300) and the counters agree: high confidence.
    assert_eq!(v.confidence, Confidence::High);
    assert!(
        v.message.contains("dropped 42 packets")
            && v.message.contains("300 of 300 entries")
            && v.message.contains("42 SYNs again"),
        "{}",
        v.message
    );
    // 554,257 connections in 10 s = 55,426 a second (rounded up) × 120 s.
    assert!(v.suggestion.contains("above 6651120"), "{}", v.suggestion);
    let e = |m: &str| v.evidence.iter().find(|e| e.metric == m).map(|e| e.value);
    assert_eq!(e("conntrack_drops"), Some(42.0));
    assert_eq!(e("conntrack_max_entries"), Some(300.0));
    // Only the end with drops.
    assert_eq!(
        d.verdicts
            .iter()
            .filter(|v| v.kind == VerdictKind::ConntrackDrops)
            .count(),
        1
    );
    assert_eq!(VerdictKind::ConntrackDrops.name(), "conntrack_drops");
}

#[test]
fn conntrack_without_drops_or_on_one_host_once() {
    // No drop, table far from full: nothing.
    let d = diagnose(&crr_with_conntrack(0, 10));
    assert!(!d
        .verdicts
        .iter()
        .any(|v| v.kind == VerdictKind::ConntrackDrops));
    // One host and one namespace: both ends read the same counters; named once, no side.
    let mut rec = crr_with_conntrack(7, 150);
    rec.server.as_mut().unwrap().host_counters = rec.client.host_counters.clone();
    rec.client.host.boot_id = Some("boot".into());
    rec.server.as_mut().unwrap().host.boot_id = Some("boot".into());
    let d = diagnose(&rec);
    let vs: Vec<_> = d
        .verdicts
        .iter()
        .filter(|v| v.kind == VerdictKind::ConntrackDrops)
        .collect();
    assert_eq!(vs.len(), 1);
    assert_eq!(vs[0].side, None);
    // Half full: the drops alone, medium confidence.
    assert_eq!(vs[0].confidence, Confidence::Medium);
    assert!(
        vs[0].message.contains("on this host dropped 7 packets"),
        "{}",
        vs[0].message
    );
}

/// A sender blocked 3.0 s of its 10 s window (30 %, over the 20 % threshold) is named with
/// both figures; with retransmission time-outs and no zero-window probe, the path is what
/// took nothing. 1.5 s (15 %) is not named, nor is a sender that did not measure it.
#[test]
fn sender_blocked_when_a_large_share_of_the_window_took_no_data() {
    let mut c = Case::tcp(600e6);
    c.client.totals.tx_blocked_ns = Some(3 * SEC);
    c.info().total_rto = Some(4);
    let v = c.verdict(VerdictKind::SenderBlocked);
    assert_eq!(v.flow, Some(FlowDirection::ClientToServer));
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(
        v.message
            .starts_with("the sender (client) was blocked 3.0 s of 10.0 s (30% of its window)"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("the path carried nothing"),
        "{}",
        v.message
    );
    let share = v
        .evidence
        .iter()
        .find(|e| e.metric == "sender_blocked_share")
        .unwrap();
    assert!((share.value - 0.3).abs() < 1e-9, "{share:?}");
    assert_eq!(share.threshold.as_deref(), Some(">= 0.2"));
    assert_eq!(c.kinds()[0], VerdictKind::SenderBlocked);

    c.info().probes = Some(3);
    c.client.totals.tx_blocked_ns = Some(6 * SEC);
    let v = c.verdict(VerdictKind::SenderBlocked);
    assert_eq!(v.confidence, Confidence::High);
    assert!(v.message.contains("zero window"), "{}", v.message);

    c.client.totals.tx_blocked_ns = Some(3 * SEC / 2);
    assert!(!c.kinds().contains(&VerdictKind::SenderBlocked));
    c.client.totals.tx_blocked_ns = None;
    assert!(!c.kinds().contains(&VerdictKind::SenderBlocked));
}
