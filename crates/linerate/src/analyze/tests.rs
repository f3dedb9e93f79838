//! The analysis on the captures in `tests/fixtures/pcap/` (see its README for how they were
//! made and the figures tshark and tcptrace give for them), and the reader on hostile input.

use std::path::PathBuf;

use super::read::read_capture;
use super::*;
use crate::model::trace::AnalysisRecord;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pcap")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn analyze_bytes(bytes: &[u8], opts: AnalyzeOptions) -> (AnalysisRecord, Vec<DirectionGraph>) {
    super::analyze_reader(bytes, "fixture", &opts).expect("analysis")
}

fn analyze(name: &str) -> AnalysisRecord {
    analyze_bytes(&fixture(name), AnalyzeOptions::default()).0
}

#[test]
fn lossy_bulk_counts_equal_tsharks_and_rtt_equals_tcptraces() {
    let r = analyze("lossy-bulk.pcap");
    assert_eq!(r.format, "pcap");
    assert_eq!(r.packets, 700);
    assert_eq!(r.tcp.len(), 2);
    let data = &r.tcp[1];
    assert!(data.handshake_seen);
    // tshark -Y tcp.analysis.retransmission / duplicate_ack, per direction.
    assert_eq!(data.a_to_b.retransmissions, 4);
    assert_eq!(data.a_to_b.duplicate_acks, 0);
    assert_eq!(data.b_to_a.duplicate_acks, 11);
    assert_eq!(data.b_to_a.retransmissions, 0);
    // tcptrace -l -r: 282 samples, average 48.4 ms (printed with one decimal).
    let rtt = data.a_to_b.rtt.as_ref().unwrap();
    assert_eq!(rtt.samples, 282);
    assert!((rtt.avg_ms - 48.4).abs() < 0.05, "{}", rtt.avg_ms);
    assert!(
        data.b_to_a.sack_blocks > 0,
        "Linux sends SACK blocks after a loss"
    );
    assert_eq!(data.a_to_b.mss, Some(1460));
    assert!(data.a_to_b.unique_bytes > 0 && data.a_to_b.bytes >= data.a_to_b.unique_bytes);
    let t = data.a_to_b.time.as_ref().unwrap();
    let sum = t.receive_window_limited_percent
        + t.application_limited_percent
        + t.loss_recovery_percent
        + t.sending_percent;
    assert!((sum - 100.0).abs() < 1e-6, "shares add up to {sum}");
    assert!(t.loss_recovery_percent > 0.0);
    // The capture was taken at the sender above TSO: the analysis says so.
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("segmentation offload")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn nagle_write_write_read_shows_delayed_ack_stalls_and_nodelay_none() {
    let r = analyze("nagle-write-write-read.pcap");
    let c = &r.tcp[0];
    let f = c
        .findings
        .iter()
        .find(|f| f.kind == "delayed_ack_stall")
        .expect("a delayed-ACK finding");
    assert_eq!(f.direction, "a_to_b");
    // 20 transactions; Linux ACKs the first segments of a connection at once (quick-ACK).
    assert!(f.count >= 15 && f.count <= 20, "{}", f.count);
    let median = f
        .evidence
        .iter()
        .find(|e| e.metric == "median_ack_delay")
        .unwrap();
    assert!(
        median.value >= 38.0 && median.value < 60.0,
        "{}",
        median.value
    );
    assert!(f.share_percent > 50.0 && f.share_percent <= 100.0);
    assert!(f.message.contains("delayed ACKs stalled the sender"));

    let r = analyze("nodelay-write-write-read.pcap");
    assert!(r.tcp[0]
        .findings
        .iter()
        .all(|f| f.kind != "delayed_ack_stall"));
    let t = r.tcp[0].a_to_b.time.as_ref().unwrap();
    assert_eq!(t.delayed_ack_stall_percent, 0.0);
}

#[test]
fn cooked_nanosecond_and_pcapng_files_give_the_same_connection() {
    let sll2 = analyze("sll2-any.pcap");
    assert_eq!(sll2.packets, 40);
    assert_eq!(sll2.packets_undecodable, 0);
    let ng = analyze("two-interfaces.pcapng");
    assert_eq!(ng.format, "pcapng");
    assert_eq!(ng.packets, 40 + 88);
    assert_eq!(ng.packets_undecodable, 0);
    let a = &sll2.tcp[0];
    let b = ng.tcp.iter().find(|c| c.a == a.a && c.b == a.b).unwrap();
    assert_eq!(a.a_to_b.packets, b.a_to_b.packets);
    assert_eq!(a.b_to_a.bytes, b.b_to_a.bytes);
    // Nanosecond timestamps survive: the handshake took tens of microseconds.
    let hs = a.handshake_rtt_ms.unwrap();
    assert!(hs > 0.0 && hs < 1.0, "{hs}");
    assert!(ng.tcp.iter().any(|c| c.b.port == 7001));
}

#[test]
fn rfc6349_metrics_follow_the_formulas() {
    let opts = AnalyzeOptions {
        link_rate_bps: Some(20_000_000),
        ..AnalyzeOptions::default()
    };
    let (r, _) = analyze_bytes(&fixture("lossy-bulk.pcap"), opts);
    let d = &r.tcp[1].a_to_b;
    let m = d.rfc6349.as_ref().unwrap();
    // MSS 1460 with timestamps: 1448 + 12 + 40.
    assert_eq!(m.mtu, 1500);
    let ideal = 20e6 / (1538.0 * 8.0) * 1460.0 * 8.0;
    assert!((m.ideal_bps - ideal).abs() < 1e-6);
    let eff = (d.bytes - d.retransmitted_bytes) as f64 * 100.0 / d.bytes as f64;
    assert!((m.tcp_efficiency_percent.unwrap() - eff).abs() < 1e-9);
    assert!(m.tcp_efficiency_percent.unwrap() < 100.0);
    assert!(m.transfer_time_ratio.unwrap() > 0.9);
    assert!(m.buffer_delay_percent.unwrap() > 0.0);
    // The control connection carries too little for RFC 6349.
    assert!(r.tcp[0].a_to_b.rfc6349.is_none());
}

fn read_all(bytes: &[u8]) -> Result<(u64, Option<String>), String> {
    let mut n = 0u64;
    read_capture(bytes, |f| {
        n += 1;
        let _ = linerate_wire::capture::decode(f.link_type, f.data);
    })
    .map(|s| (n, s.truncated))
    .map_err(|e| e.to_string())
}

#[test]
fn a_capture_cut_anywhere_reads_up_to_the_cut_or_fails_clearly() {
    for name in ["sll2-any.pcap", "two-interfaces.pcapng"] {
        let full = fixture(name);
        let (all, _) = read_all(&full).unwrap();
        for cut in 0..full.len() {
            match read_all(&full[..cut]) {
                Ok((n, truncated)) => {
                    assert!(n <= all);
                    if n == all {
                        assert!(truncated.is_none(), "{name} cut at {cut}");
                    }
                }
                Err(e) => assert!(e.starts_with("at byte "), "{name} cut at {cut}: {e}"),
            }
        }
    }
}

#[test]
fn hostile_headers_give_errors_not_allocations() {
    assert!(read_all(&[]).unwrap_err().contains("empty"));
    assert!(read_all(b"GIF89a...").unwrap_err().contains("not a pcap"));
    // A record claiming 4 GiB.
    let mut f = linerate_wire::capture::pcap_file_header(65535, 1).to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&u32::MAX.to_le_bytes());
    f.extend_from_slice(&u32::MAX.to_le_bytes());
    f.extend_from_slice(&[0u8; 100]);
    match read_all(&f) {
        Ok((n, t)) => assert!(n == 0 && t.is_some()),
        Err(e) => assert!(e.contains("byte 24"), "{e}"),
    }
    // pcapng: a block whose length is 3 GiB.
    let mut ng = fixture("two-interfaces.pcapng");
    let shb_len = u32::from_le_bytes([ng[4], ng[5], ng[6], ng[7]]) as usize;
    ng[shb_len + 4..shb_len + 8].copy_from_slice(&0xc000_0000u32.to_le_bytes());
    let r = read_all(&ng);
    assert!(r.is_err() || r.unwrap().1.is_some());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn the_reader_never_panics_on_random_bytes(
        magic in 0usize..5,
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
    ) {
        let mut f = [
            [0xd4u8, 0xc3, 0xb2, 0xa1],
            [0xa1, 0xb2, 0xc3, 0xd4],
            [0x4d, 0x3c, 0xb2, 0xa1],
            [0x0a, 0x0d, 0x0d, 0x0a],
            [0, 0, 0, 0],
        ][magic].to_vec();
        f.extend_from_slice(&body);
        let _ = super::analyze_reader(&f[..], "fuzz", &AnalyzeOptions::default());
    }
}
