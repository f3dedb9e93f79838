//! The raw-frame generator's kernel paths (`--raw-tx`): AF_XDP (copy mode on veth, which
//! refuses zero-copy) and the AF_PACKET ring it falls back to. The witnesses are the
//! receiving veth's `rx_packets` (`ip -s -j link`) and an nftables counter at its ingress
//! hook that counts only the test's frames (64-byte frames: UDP length 26), both read by the
//! test around the run.

use linerate::model::RunRecord;
use linerate_lab::{Lab, LabOptions};
use linerate_wire::report::{RawTx, StreamRole, TxPath};

use crate::common::{self, serve_in};

/// The nftables table counting the test's frames at b's ingress.
const TABLE: &str = "lrrawtx";

/// Packets of the run besides its frames (the control connection, the stream's hello, ARP):
/// a few dozen; see tests/lab/packets.rs.
const OUTSIDE_FRAMES: u64 = 100;

fn count_frames_at(lab: &Lab, host: &str, dev: &str) {
    let rules = format!(
        "table netdev {TABLE} {{\n  chain in {{ type filter hook ingress device \"{dev}\" priority 0; udp length 26 counter; }}\n}}\n"
    );
    let ns = lab.ns_name(host).unwrap();
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(rules.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft rules");
}

/// The frames the nftables counter saw.
fn frames_counted(lab: &Lab, host: &str) -> u64 {
    let out = lab
        .exec(host, &["nft", "-j", "list", "table", "netdev", TABLE])
        .expect("nft list");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("nft -j output");
    v["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|o| {
            o["rule"]["expr"]
                .as_array()?
                .iter()
                .find_map(|e| e["counter"]["packets"].as_u64())
        })
        .expect("counter")
}

fn rx_packets(lab: &Lab, host: &str, dev: &str) -> u64 {
    let out = lab
        .exec(host, &["ip", "-s", "-j", "link", "show", "dev", dev])
        .expect("ip -s -j link");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ip -j output");
    v[0]["stats64"]["rx"]["packets"].as_u64().expect("rx")
}

/// Runs `linerate udp B -l 18 --raw-frames` in a (0.6 s, 20 kpps: 64-byte frames) behind
/// `prefix` (a command that runs it: setpriv, prlimit) and checks its frames against both
/// witnesses. Returns the record.
fn run_counted(lab: &Lab, prefix: &[&str], raw_tx: &str) -> RunRecord {
    let b = lab.addr("b").unwrap().to_string();
    let b_if = lab.iface("b").unwrap().to_string();
    let (c0, r0) = (frames_counted(lab, "b"), rx_packets(lab, "b", &b_if));
    let mut args: Vec<&str> = prefix.to_vec();
    args.extend_from_slice(&[
        env!("CARGO_BIN_EXE_linerate"),
        "udp",
        &b,
        "-l",
        "18",
        "-t",
        "0.6",
        "-b",
        "2880k",
        "--raw-frames",
        "--raw-tx",
        raw_tx,
        "--json",
    ]);
    let out = lab.exec("a", &args).expect("client in namespace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: RunRecord = serde_json::from_slice(&out.stdout).expect("json record");
    let (c1, r1) = (frames_counted(lab, "b"), rx_packets(lab, "b", &b_if));
    let tx = rec
        .client
        .streams
        .iter()
        .find(|s| s.role == StreamRole::Tx)
        .expect("sending stream");
    assert_eq!(tx.tx_path, Some(TxPath::RawFrames), "{:?}", rec.warnings);
    // Every frame the record says left (its sequence numbers, warm-up included) and no
    // other reached b's ingress; b's interface received them plus the few others.
    let sent = tx.udp_seq_end.expect("udp_seq_end");
    let (frames, received) = (c1 - c0, r1 - r0);
    assert!(sent > 0);
    assert_eq!(
        frames, sent,
        "nftables counted {frames} frames, the record {sent}"
    );
    assert!(
        received >= sent && received - sent <= OUTSIDE_FRAMES,
        "b's interface received {received} packets, the record sent {sent} frames"
    );
    rec
}

fn raw_tx_of(rec: &RunRecord) -> Option<RawTx> {
    rec.client
        .streams
        .iter()
        .find(|s| s.role == StreamRole::Tx)
        .and_then(|s| s.raw_tx)
}

/// AF_XDP: veth refuses zero-copy, so the socket is in copy mode, and the record says so;
/// its frames are b's packets, one for one.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_af_xdp_frames_are_the_receivers_packets() {
    let lab = Lab::pair(&common::lab_name("xd", "x"), &LabOptions::default())
        .expect("lab up (needs root)");
    let _srv = serve_in(&lab, "b");
    count_frames_at(&lab, "b", lab.iface("b").unwrap());
    for choice in ["xdp", "auto"] {
        let rec = run_counted(&lab, &[], choice);
        assert_eq!(
            raw_tx_of(&rec),
            Some(RawTx::XdpCopy),
            "{choice}: {:?}",
            rec.warnings
        );
        assert!(
            !rec.warnings.iter().any(|w| w.contains("AF_XDP")),
            "{:?}",
            rec.warnings
        );
    }
    let rec = run_counted(&lab, &[], "afpacket");
    assert_eq!(raw_tx_of(&rec), Some(RawTx::Afpacket));
}

/// Without CAP_IPC_LOCK and with a locked-memory limit below the UMEM, `auto` falls back
/// to the AF_PACKET ring with one warning that says what to raise, and the frames still
/// are b's packets.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_af_xdp_falls_back_to_afpacket_with_one_warning() {
    let lab = Lab::pair(&common::lab_name("xd", "f"), &LabOptions::default())
        .expect("lab up (needs root)");
    let _srv = serve_in(&lab, "b");
    count_frames_at(&lab, "b", lab.iface("b").unwrap());
    let low = [
        "setpriv",
        "--bounding-set",
        "-ipc_lock",
        "prlimit",
        "--memlock=65536:65536",
    ];
    let rec = run_counted(&lab, &low, "auto");
    assert_eq!(raw_tx_of(&rec), Some(RawTx::Afpacket), "{:?}", rec.warnings);
    let xdp: Vec<&String> = rec
        .warnings
        .iter()
        .filter(|w| w.contains("AF_XDP"))
        .collect();
    assert_eq!(xdp.len(), 1, "{:?}", rec.warnings);
    assert!(
        xdp[0].contains("locked-memory limit (64 KiB)")
            && xdp[0].contains("raise it")
            && xdp[0].contains("AF_PACKET ring"),
        "{}",
        xdp[0]
    );
}
