//! `linerate analyze` on captures built here: the memory a capture of many connections
//! costs, and the cases where linerate's counts once differed from tshark's (each rule
//! asserted, and compared with tshark and tcptrace when they are installed, as
//! scripts/test.sh does).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::bin;

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;

const A: [u8; 4] = [198, 18, 0, 1];
const B: [u8; 4] = [198, 18, 0, 2];

/// A classic nanosecond pcap, built record by record.
struct Pcap(Vec<u8>);

impl Pcap {
    fn new(link_type: u32) -> Pcap {
        Pcap(linerate_wire::capture::pcap_file_header(65535, link_type).to_vec())
    }

    /// A record: `data` captured of a frame `orig_len` bytes long on the wire.
    fn record(&mut self, t_ns: u64, data: &[u8], orig_len: u32) {
        let h = linerate_wire::capture::pcap_record_header(t_ns, data.len() as u32, orig_len);
        self.0.extend_from_slice(&h);
        self.0.extend_from_slice(data);
    }

    fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, &self.0).unwrap();
        p
    }
}

/// One TCP segment's header fields.
#[derive(Clone, Copy)]
struct Seg {
    src: ([u8; 4], u16),
    dst: ([u8; 4], u16),
    seq: u32,
    ack: u32,
    flags: u8,
    payload: usize,
}

/// IPv4 + TCP (20 + 20 bytes, or 24 with an MSS option on a SYN) and `payload` zero bytes;
/// `ip_total` overrides the IP header's total length.
fn ipv4_tcp(s: Seg, ip_total: Option<u16>) -> Vec<u8> {
    let opts: &[u8] = if s.flags & SYN != 0 {
        &[2, 4, 0x05, 0xb4]
    } else {
        &[]
    };
    let tcp_len = 20 + opts.len();
    let total = 20 + tcp_len + s.payload;
    let total = ip_total.unwrap_or(total as u16);
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    p.extend_from_slice(&s.src.0);
    p.extend_from_slice(&s.dst.0);
    p.extend_from_slice(&s.src.1.to_be_bytes());
    p.extend_from_slice(&s.dst.1.to_be_bytes());
    p.extend_from_slice(&s.seq.to_be_bytes());
    p.extend_from_slice(&s.ack.to_be_bytes());
    p.extend_from_slice(&[((tcp_len / 4) as u8) << 4, s.flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(opts);
    p.resize(p.len() + s.payload, 0);
    p
}

fn ethernet(ip: &[u8], ether_type: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ether_type.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// A connection's two ends and their initial sequence numbers, for building segments.
struct Conn {
    a: ([u8; 4], u16),
    b: ([u8; 4], u16),
    isn_a: u32,
    isn_b: u32,
}

impl Conn {
    fn new(port_a: u16, port_b: u16) -> Conn {
        Conn {
            a: (A, port_a),
            b: (B, port_b),
            isn_a: 1_000_000,
            isn_b: 7_000_000,
        }
    }
    /// From a: relative sequence `seq` (1 = first data byte), acknowledging b's `ack`.
    fn ab(&self, seq: u32, ack: u32, flags: u8, payload: usize) -> Seg {
        Seg {
            src: self.a,
            dst: self.b,
            seq: self.isn_a.wrapping_add(seq),
            ack: self.isn_b.wrapping_add(ack),
            flags,
            payload,
        }
    }
    fn ba(&self, seq: u32, ack: u32, flags: u8, payload: usize) -> Seg {
        Seg {
            src: self.b,
            dst: self.a,
            seq: self.isn_b.wrapping_add(seq),
            ack: self.isn_a.wrapping_add(ack),
            flags,
            payload,
        }
    }
}

fn eth_record(p: &mut Pcap, t_ns: u64, s: Seg) {
    let f = ethernet(&ipv4_tcp(s, None), 0x0800);
    let n = f.len() as u32;
    p.record(t_ns, &f, n);
}

fn analyze_json(file: &Path, extra: &[&str]) -> serde_json::Value {
    let out = bin()
        .arg("analyze")
        .arg(file)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "analyze {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("-v")
        .output()
        .map(|o| o.status.success() || !o.stdout.is_empty())
        .unwrap_or(false)
}

/// `tshark -Y FILTER` packets from (src port) to (dst port), or None without tshark.
fn tshark_count(file: &Path, filter: &str, sport: u16, dport: u16) -> Option<u64> {
    if !has("tshark") {
        eprintln!("tshark is not installed (scripts/test.sh installs it): comparison skipped");
        return None;
    }
    let f = format!("({filter}) && tcp.srcport == {sport} && tcp.dstport == {dport}");
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(file)
        .args(["-Y", &f, "-T", "fields", "-e", "frame.number"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count() as u64,
    )
}

fn dir_of<'a>(rec: &'a serde_json::Value, conn: usize, d: &str) -> &'a serde_json::Value {
    &rec["tcp"][conn][d]
}

/// Checks linerate's retransmission and out-of-order counts of both directions of the
/// connection between ports `pa` and `pb` against tshark's.
fn agree_with_tshark(file: &Path, rec: &serde_json::Value, conn: usize, pa: u16, pb: u16) {
    for (d, s, t) in [("a_to_b", pa, pb), ("b_to_a", pb, pa)] {
        let x = dir_of(rec, conn, d);
        for (field, filter) in [
            ("retransmissions", "tcp.analysis.retransmission || tcp.analysis.fast_retransmission || tcp.analysis.spurious_retransmission"),
            ("out_of_order", "tcp.analysis.out_of_order"),
            ("packets", "tcp"),
        ] {
            if let Some(n) = tshark_count(file, filter, s, t) {
                assert_eq!(x[field].as_u64(), Some(n), "{d} {field} vs tshark in {}", file.display());
            }
        }
    }
}

#[test]
fn analyze_counts_a_syn_or_fin_sent_again_as_a_retransmission_and_takes_no_rtt_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = Conn::new(40000, 5301);
    let ms = 1_000_000u64;
    let mut p = Pcap::new(1);
    // The SYN and the SYN/ACK, each sent twice within the 3 ms out-of-order threshold.
    eth_record(&mut p, 0, c.ab(0, 0, SYN, 0));
    eth_record(&mut p, ms, c.ab(0, 0, SYN, 0));
    eth_record(&mut p, 2 * ms, c.ba(0, 1, SYN | ACK, 0));
    eth_record(&mut p, 2 * ms + ms / 2, c.ba(0, 1, SYN | ACK, 0));
    eth_record(&mut p, 3 * ms, c.ab(1, 1, ACK, 0));
    eth_record(&mut p, 4 * ms, c.ab(1, 1, ACK | PSH, 100));
    eth_record(&mut p, 5 * ms, c.ba(1, 101, ACK, 0));
    // A FIN with data, sent again 0.5 ms later.
    eth_record(&mut p, 6 * ms, c.ab(101, 1, FIN | ACK, 100));
    eth_record(&mut p, 6 * ms + ms / 2, c.ab(101, 1, FIN | ACK, 100));
    eth_record(&mut p, 7 * ms, c.ba(1, 202, ACK, 0));
    // b's FIN, acknowledged, sent again and acknowledged again.
    eth_record(&mut p, 8 * ms, c.ba(1, 202, FIN | ACK, 0));
    eth_record(&mut p, 9 * ms, c.ab(202, 2, ACK, 0));
    eth_record(&mut p, 9 * ms + ms / 2, c.ba(1, 202, FIN | ACK, 0));
    eth_record(&mut p, 10 * ms, c.ab(202, 2, ACK, 0));
    let file = p.write(dir.path(), "syn-fin-again.pcap");
    let rec = analyze_json(&file, &[]);
    let ab = dir_of(&rec, 0, "a_to_b");
    let ba = dir_of(&rec, 0, "b_to_a");
    // Wireshark's next expected sequence number counts SYN and FIN as one each: the
    // repeated SYN, SYN/ACK, FIN with data and FIN are retransmissions, none out of order.
    assert_eq!(ab["retransmissions"], 2, "{ab}");
    assert_eq!(ab["out_of_order"], 0, "{ab}");
    assert_eq!(ba["retransmissions"], 2, "{ba}");
    assert_eq!(ba["out_of_order"], 0, "{ba}");
    // b's RTT: the SYN/ACK was sent twice (ambiguous), the FIN's first ACK is a sample,
    // the FIN sent again after its ACK gives none (Karn's rule, as tcptrace).
    assert_eq!(ba["rtt"]["samples"], 1, "{ba}");
    assert_eq!(ba["rtt"]["min_ms"].as_f64(), Some(1.0));
    agree_with_tshark(&file, &rec, 0, 40000, 5301);
    if has("tcptrace") {
        let out = Command::new("tcptrace")
            .args(["-l", "-r", "-n"])
            .arg(&file)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // tcptrace -l prints "RTT samples:  a2b  b2a" on one line.
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("RTT samples:"))
            .unwrap_or_else(|| panic!("no RTT samples in tcptrace's output: {text}"));
        let nums: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(nums.get(1).copied(), Some(1), "tcptrace: {line}");
    }
}

#[test]
fn analyze_follows_tsharks_times_when_the_capture_clock_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let c = Conn::new(40001, 5301);
    let s = 1_000_000_000u64;
    let mut p = Pcap::new(1);
    eth_record(&mut p, 100 * s, c.ab(0, 0, SYN, 0));
    eth_record(&mut p, 100 * s + 1_000_000, c.ba(0, 1, SYN | ACK, 0));
    eth_record(&mut p, 100 * s + 2_000_000, c.ab(1, 1, ACK, 0));
    eth_record(&mut p, 100 * s + 3_000_000, c.ab(1, 1, ACK, 1000));
    eth_record(&mut p, 100 * s + 3_100_000, c.ab(1001, 1, ACK, 1000));
    // The first segment again, stamped 46 s earlier (a merged capture's clock).
    eth_record(&mut p, 54 * s + 3_200_000, c.ab(1, 1, ACK, 1000));
    eth_record(&mut p, 100 * s + 5_000_000, c.ba(1, 2001, ACK, 0));
    let file = p.write(dir.path(), "clock-back.pcap");
    let rec = analyze_json(&file, &[]);
    let ab = dir_of(&rec, 0, "a_to_b");
    // tshark's time differences are unsigned: 46 s back is no out-of-order segment but a
    // retransmission.
    assert_eq!(ab["retransmissions"], 1, "{ab}");
    assert_eq!(ab["out_of_order"], 0, "{ab}");
    let warnings = rec["warnings"].to_string();
    assert!(warnings.contains("earlier time"), "{warnings}");
    agree_with_tshark(&file, &rec, 0, 40001, 5301);
}

#[test]
fn analyze_caps_an_ip_length_beyond_the_frame_as_tshark_and_keeps_headers_only_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let c = Conn::new(40002, 5301);
    let ms = 1_000_000u64;
    let mut p = Pcap::new(1);
    eth_record(&mut p, 0, c.ab(0, 0, SYN, 0));
    eth_record(&mut p, ms, c.ba(0, 1, SYN | ACK, 0));
    eth_record(&mut p, 2 * ms, c.ab(1, 1, ACK, 0));
    // 100 bytes of payload on the wire, an IP header that claims 1500 bytes in all.
    let f = ethernet(&ipv4_tcp(c.ab(1, 1, ACK, 100), Some(1500)), 0x0800);
    p.record(3 * ms, &f, f.len() as u32);
    // The next 100 bytes: new data, not a retransmission of the claimed 1460.
    eth_record(&mut p, 4 * ms, c.ab(101, 1, ACK, 100));
    // A headers-only record (54 of 1514 bytes captured): 1460 bytes of payload count.
    let f = ethernet(&ipv4_tcp(c.ab(201, 1, ACK, 1460), None), 0x0800);
    p.record(5 * ms, &f[..54], f.len() as u32);
    eth_record(&mut p, 6 * ms, c.ba(1, 1661, ACK, 0));
    let file = p.write(dir.path(), "ip-length.pcap");
    let rec = analyze_json(&file, &[]);
    let ab = dir_of(&rec, 0, "a_to_b");
    assert_eq!(ab["bytes"], 100 + 100 + 1460, "{ab}");
    assert_eq!(ab["retransmissions"], 0, "{ab}");
    assert_eq!(ab["out_of_order"], 0, "{ab}");
    let warnings = rec["warnings"].to_string();
    assert!(warnings.contains("larger than their frame"), "{warnings}");
    agree_with_tshark(&file, &rec, 0, 40002, 5301);
    if let Some(n) = tshark_count(&file, "tcp.len == 100", 40002, 5301) {
        assert_eq!(n, 2, "tshark takes the frame's 100 bytes");
    }
}

#[test]
fn analyze_reports_bytes_seen_apart_from_the_sequence_span_of_a_capture_with_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let c = Conn::new(40003, 5301);
    let ms = 1_000_000u64;
    let mut p = Pcap::new(1);
    eth_record(&mut p, 0, c.ab(0, 0, SYN, 0));
    eth_record(&mut p, ms, c.ba(0, 1, SYN | ACK, 0));
    eth_record(&mut p, 2 * ms, c.ab(1, 1, ACK, 0));
    eth_record(&mut p, 3 * ms, c.ab(1, 1, ACK, 1000));
    // The capture missed 5 MB, then sees 1000 bytes, then 1000 bytes that fill part of
    // the gap, then the same 1000 bytes again (counted once).
    eth_record(&mut p, 4 * ms, c.ab(5_000_001, 1, ACK, 1000));
    eth_record(&mut p, 5 * ms, c.ab(1001, 1, ACK, 1000));
    eth_record(&mut p, 6 * ms, c.ab(1001, 1, ACK, 1000));
    eth_record(&mut p, 1000 * ms, c.ba(1, 5_001_001, ACK, 0));
    let file = p.write(dir.path(), "gaps.pcap");
    let rec = analyze_json(&file, &[]);
    let ab = dir_of(&rec, 0, "a_to_b");
    assert_eq!(ab["bytes"], 4000, "{ab}");
    assert_eq!(ab["unique_bytes"], 3000, "{ab}");
    assert_eq!(ab["sequence_span_bytes"], 5_001_000, "{ab}");
    // The throughput is of the bytes seen over the connection's 1 s.
    let bps = ab["throughput_bps"].as_f64().unwrap();
    assert!((bps - 3000.0 * 8.0).abs() < 1.0, "{bps}");
}

/// Frames of one TCP SYN in each link layer that tshark and libpcap decode.
#[test]
fn analyze_decodes_ppp_pppoe_mpls_fddi_nflog_and_fcs_flagged_link_types() {
    let dir = tempfile::tempdir().unwrap();
    let c = Conn::new(40004, 5301);
    let ip = ipv4_tcp(c.ab(0, 0, SYN, 0), None);
    let mut pppoe = vec![0x11, 0x00, 0x12, 0x34];
    pppoe.extend_from_slice(&((ip.len() + 2) as u16).to_be_bytes());
    pppoe.extend_from_slice(&[0x00, 0x21]);
    pppoe.extend_from_slice(&ip);
    let mut mpls = vec![0x00, 0x01, 0x00, 0x40, 0x00, 0x02, 0x01, 0x40];
    mpls.extend_from_slice(&ip);
    let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
    ppp.extend_from_slice(&ip);
    let mut fddi = vec![0x50];
    fddi.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    fddi.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    fddi.extend_from_slice(&ip);
    // NFLOG: family 2, version 0, group 1; a prefix TLV, then the payload TLV.
    let mut nflog = vec![2, 0, 0, 1];
    nflog.extend_from_slice(&8u16.to_le_bytes());
    nflog.extend_from_slice(&10u16.to_le_bytes());
    nflog.extend_from_slice(b"ab\0\0");
    nflog.extend_from_slice(&((ip.len() + 4) as u16).to_le_bytes());
    nflog.extend_from_slice(&9u16.to_le_bytes());
    nflog.extend_from_slice(&ip);
    let cases: Vec<(&str, u32, Vec<u8>)> = vec![
        ("fcs-bits", 0x3000_0001, ethernet(&ip, 0x0800)),
        ("ppp", 9, ppp.clone()),
        ("ppp-hdlc", 50, ppp),
        ("pppoe-ethernet", 1, ethernet(&pppoe, 0x8864)),
        ("ppp-ether", 51, pppoe.clone()),
        ("mpls", 1, ethernet(&mpls, 0x8847)),
        ("fddi", 10, fddi),
        ("nflog", 239, nflog),
    ];
    for (name, lt, frame) in cases {
        let mut p = Pcap::new(lt);
        p.record(0, &frame, frame.len() as u32);
        let file = p.write(dir.path(), &format!("{name}.pcap"));
        let rec = analyze_json(&file, &[]);
        assert_eq!(rec["packets_undecodable"], 0, "{name}: {rec}");
        assert_eq!(
            rec["tcp"].as_array().map(Vec::len),
            Some(1),
            "{name}: {rec}"
        );
        assert_eq!(rec["tcp"][0]["a"]["port"], 40004, "{name}");
        assert_eq!(rec["tcp"][0]["a_to_b"]["mss"], 1460, "{name}");
        if let Some(n) = tshark_count(&file, "tcp.flags.syn == 1", 40004, 5301) {
            assert_eq!(n, 1, "{name}: tshark decodes it too");
        }
    }
    // An IPv4 first fragment of a UDP datagram: one datagram of the length UDP states, not
    // a malformed header; the second fragment is "other".
    let mut udp = vec![0x45, 0, 0, 0, 0, 7, 0x20, 0, 64, 17, 0, 0];
    udp.extend_from_slice(&A);
    udp.extend_from_slice(&B);
    let body_len = 1480usize;
    udp[2..4].copy_from_slice(&((20 + body_len) as u16).to_be_bytes());
    let mut body = vec![0u8; body_len];
    body[0..2].copy_from_slice(&5000u16.to_be_bytes());
    body[2..4].copy_from_slice(&5001u16.to_be_bytes());
    body[4..6].copy_from_slice(&2008u16.to_be_bytes());
    udp.extend_from_slice(&body);
    let mut second = vec![0x45, 0, 0, 0, 0, 7, 0x00, 185, 64, 17, 0, 0];
    second.extend_from_slice(&A);
    second.extend_from_slice(&B);
    second[2..4].copy_from_slice(&(20u16 + 528).to_be_bytes());
    second.resize(20 + 528, 0);
    let mut p = Pcap::new(1);
    let f1 = ethernet(&udp, 0x0800);
    let f2 = ethernet(&second, 0x0800);
    p.record(0, &f1, f1.len() as u32);
    p.record(1000, &f2, f2.len() as u32);
    let file = p.write(dir.path(), "fragments.pcap");
    let rec = analyze_json(&file, &[]);
    assert_eq!(rec["packets_undecodable"], 0, "{rec}");
    assert_eq!(rec["udp"][0]["packets"], 1, "{rec}");
    assert_eq!(rec["udp"][0]["bytes"], 2000, "{rec}");
    assert_eq!(rec["packets_other"], 1, "{rec}");
}

#[test]
fn analyze_a_capture_of_200000_single_syns_stays_within_its_per_flow_memory_budget() {
    const FLOWS: u32 = 200_000;
    const TOP: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let mut p = Pcap::new(1);
    for i in 0..FLOWS {
        let s = Seg {
            src: (
                [198, 18, (i / 60000) as u8 + 1, 1],
                (i % 60000) as u16 + 1024,
            ),
            dst: (B, 80),
            seq: i,
            ack: 0,
            flags: SYN,
            payload: 0,
        };
        eth_record(&mut p, u64::from(i) * 1000, s);
    }
    // And 200 connections that carry data, so that there is something to graph.
    for i in 0..200u16 {
        let c = Conn::new(30000 + i, 5301);
        let t = u64::from(FLOWS) * 1000 + u64::from(i) * 10_000;
        eth_record(&mut p, t, c.ab(0, 0, SYN, 0));
        eth_record(&mut p, t + 1000, c.ba(0, 1, SYN | ACK, 0));
        eth_record(&mut p, t + 2000, c.ab(1, 1, ACK, 100 + usize::from(i)));
        eth_record(&mut p, t + 3000, c.ba(1, 101 + u32::from(i), ACK, 0));
    }
    let file = p.write(dir.path(), "syn-flood.pcap");
    let graphs = dir.path().join("graphs");
    let mut cmd = bin();
    cmd.arg("analyze")
        .arg(&file)
        .args(["--json", "--top", &TOP.to_string(), "--graph"])
        .arg(&graphs);
    let (out, peak_kib) = super::common::run_measuring_peak(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The budget: the binary and its buffers (the reader's 1 MiB, the allocator's arenas)
    // in 64 MiB, and each single-packet connection in 512 bytes (its index entry and its
    // first packet: about 220 bytes; before the state was made lean, 3.9 KiB).
    let bound_kib = 64 * 1024 + u64::from(FLOWS) * 512 / 1024;
    eprintln!("peak RSS {peak_kib} KiB, bound {bound_kib} KiB");
    assert!(
        peak_kib > 0 && peak_kib < bound_kib,
        "peak RSS {peak_kib} KiB, bound {bound_kib} KiB"
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["tcp"].as_array().unwrap().len(), TOP);
    assert_eq!(rec["top"], TOP);
    let others = &rec["others"];
    assert_eq!(
        others["tcp_connections"].as_u64(),
        Some(u64::from(FLOWS) + 200 - TOP as u64),
        "{others}"
    );
    assert_eq!(
        others["tcp_packets"].as_u64(),
        Some(u64::from(FLOWS) + 4 * 200 - 4 * TOP as u64)
    );
    // The largest are the connections with the most data: the last ones built.
    for c in rec["tcp"].as_array().unwrap() {
        assert!(
            c["a"]["port"].as_u64().unwrap() >= 30000 + 200 - TOP as u64,
            "{c}"
        );
    }
    assert!(
        out.stdout.len() < 200_000,
        "{} bytes of JSON",
        out.stdout.len()
    );
    let warnings = rec["warnings"].to_string();
    assert!(warnings.contains("--top"), "{warnings}");
    let files = std::fs::read_dir(&graphs).unwrap().count();
    assert!(files > 0 && files <= TOP, "{files} graphs");
    // The text report is bounded as well.
    let text = bin()
        .arg("analyze")
        .arg(&file)
        .args(["--top", &TOP.to_string()])
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.len() < 100_000, "{} bytes of text", text.len());
    assert!(text.contains("others"), "{text}");
}
