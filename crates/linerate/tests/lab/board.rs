//! The board build on emulated boards: linerate built for a 32-bit big-endian PowerPC (the
//! MPC8240 router and the ML507's PowerPC 440 of Xilinx's XAPP1127 note) and for aarch64,
//! run under qemu's user-mode emulation (`qemu-ppc-static`, `qemu-aarch64-static`) in a
//! namespace of a lab, against the x86_64 build of this test (`CARGO_BIN_EXE_linerate`) in
//! another namespace, through veth.
//!
//! What is checked is counts, bytes and agreement, never a rate (no speed figure is taken
//! under emulation): the bytes and datagrams one end sent are the ones the other end
//! received, in both ends' records; the packets each record saw on its interface agree
//! with `ip -s link` read by this test in the namespaces; and the figures emulation cannot
//! give (qemu does not translate every socket option: `TCP_INFO` comes back as 4
//! byte-swapped bytes, `perf_event_open` is not there) are absent with a warning, never
//! wrong.
//!
//! The binaries: `LINERATE_BOARD_PPC` and `LINERATE_BOARD_AARCH64` name them
//! (scripts/test.sh builds them once with scripts/cross.sh); when a variable is unset the
//! test builds the binary itself with `scripts/cross.sh TARGET --board`.
//!
//! Addresses: the lab's veths get addresses of 198.18.0.0/15 (198.18.0.0/24 on the link
//! from `a`, 198.18.1.0/24 on the link to `b` of a router), and the tests use those.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use linerate_lab::{Lab, LabOptions};
use serde_json::Value;

use crate::common;

/// An emulated board: the Rust target, the variable that names its binary, and qemu.
struct Board {
    target: &'static str,
    env: &'static str,
    qemu: &'static str,
}

const PPC: Board = Board {
    target: "powerpc-unknown-linux-gnu",
    env: "LINERATE_BOARD_PPC",
    qemu: "qemu-ppc-static",
};

const AARCH64: Board = Board {
    target: "aarch64-unknown-linux-gnu",
    env: "LINERATE_BOARD_AARCH64",
    qemu: "qemu-aarch64-static",
};

/// Packets on a veth during a run that are not the test's data: the control connection
/// (handshake, intervals, results: a few dozen segments with their ACKs), the data
/// connections' handshakes and closes, neighbour discovery.
const OTHER_PACKETS: u64 = 200;

/// The stream hello a data connection starts with (docs/protocol.md), not in `bytes`.
const STREAM_HELLO: u64 = 24;

/// Builds are serialised: two tests that need the same binary build it once.
static BUILT: Mutex<Vec<(&'static str, PathBuf)>> = Mutex::new(Vec::new());

/// The board's static executable: from its variable, else built by scripts/cross.sh.
fn board_binary(b: &Board) -> PathBuf {
    if let Some(p) = std::env::var_os(b.env).filter(|p| !p.is_empty()) {
        // A relative path is taken from the workspace root, where scripts/ run: cargo
        // runs this test from the package's directory.
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(PathBuf::from(p));
        assert!(
            p.is_file(),
            "{} names {}, which is not a file",
            b.env,
            p.display()
        );
        return p;
    }
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(t, _)| *t == b.target) {
        return p.clone();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cross.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args([b.target, "--board"])
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/cross.sh");
    assert!(
        out.status.success(),
        "{} {} --board failed (set {} to a board binary to skip the build)",
        script.display(),
        b.target,
        b.env
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let p = PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("cross.sh prints the path")
            .trim(),
    );
    assert!(p.is_file(), "cross.sh printed {}", p.display());
    built.push((b.target, p.clone()));
    p
}

/// qemu for the board, which must be installed (the test fails rather than skips).
fn qemu(b: &Board) -> &'static str {
    let ok = Command::new(b.qemu)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} is missing: apt-get install qemu-user-static",
        b.qemu
    );
    b.qemu
}

/// A lab whose veths also carry addresses of 198.18.0.0/15; the map gives each host's
/// address (for `r`, the one towards `a`).
struct BoardLab {
    lab: Lab,
    addrs: HashMap<String, Ipv4Addr>,
}

impl BoardLab {
    fn up(kind: &str, tag: &str) -> BoardLab {
        let name = common::lab_name("bd", tag);
        let opts = LabOptions::default();
        let lab = match kind {
            "router" => Lab::router(&name, &opts),
            _ => Lab::pair(&name, &opts),
        }
        .expect("lab up (needs root)");
        let mut addrs = HashMap::new();
        let mut on_link: HashMap<(String, u8), Ipv4Addr> = HashMap::new();
        for host in ["a", "r", "b"] {
            let Some(ifaces) = lab.interfaces(host) else {
                continue;
            };
            for i in ifaces {
                // The lab's two /24s are 10.x.y.0 and 10.x.y+1.0 with y even: link 0, 1.
                let o = i.addr.octets();
                let link = o[2] & 1;
                let a = Ipv4Addr::new(198, 18, link, o[3]);
                let cidr = format!("{a}/24");
                run(&lab, host, &["ip", "addr", "add", &cidr, "dev", &i.name]);
                on_link.insert((host.to_string(), link), a);
                addrs.entry(host.to_string()).or_insert(a);
            }
        }
        if kind == "router" {
            let r0 = on_link[&("r".to_string(), 0)].to_string();
            let r1 = on_link[&("r".to_string(), 1)].to_string();
            run(
                &lab,
                "a",
                &["ip", "route", "add", "198.18.1.0/24", "via", &r0],
            );
            run(
                &lab,
                "b",
                &["ip", "route", "add", "198.18.0.0/24", "via", &r1],
            );
        }
        BoardLab { lab, addrs }
    }

    fn addr(&self, host: &str) -> String {
        self.addrs[host].to_string()
    }

    /// The interface of `host` towards `peer`.
    fn iface(&self, host: &str, peer: &str) -> String {
        self.lab
            .interfaces(host)
            .unwrap()
            .iter()
            .find(|i| i.peer == peer)
            .unwrap_or_else(|| panic!("no interface of {host} towards {peer}"))
            .name
            .clone()
    }

    /// `ip -s -j link` of `iface` in `host`, read by this test.
    fn link(&self, host: &str, iface: &str) -> LinkStats {
        let out = run(
            &self.lab,
            host,
            &["ip", "-s", "-j", "link", "show", "dev", iface],
        );
        let v: Value = serde_json::from_slice(&out).expect("ip -j output");
        let s = &v[0]["stats64"];
        let n = |way: &str, k: &str| s[way][k].as_u64().expect("ip -s link counter");
        LinkStats {
            rx_packets: n("rx", "packets"),
            rx_bytes: n("rx", "bytes"),
            tx_packets: n("tx", "packets"),
            tx_bytes: n("tx", "bytes"),
        }
    }

    /// `ip -s link` of `a`'s and `b`'s ends of the veth between them once they are still:
    /// an emulated end may still be closing its connections when the client has exited,
    /// and the two ends are read one after the other.
    fn settled(&self, a_if: &str, b_if: &str) -> (LinkStats, LinkStats) {
        // Quiet for two reads in a row (300 ms): a packet counted by one end and not yet by
        // the other is one in flight between the two reads (the late close of an emulated
        // board's connection, found by this test), which a single quiet read let through.
        let mut last = (self.link("a", a_if), self.link("b", b_if));
        let mut quiet = 0;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            let now = (self.link("a", a_if), self.link("b", b_if));
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
            if quiet >= 2 {
                break;
            }
        }
        last
    }

    /// `linerate serve` of the board in `host`, bound to its address; waits until it
    /// accepts connections.
    fn board_serve(&self, b: &Board, host: &str) -> Server {
        let mut cmd = self.lab.command(host, qemu(b)).expect("lab host");
        cmd.arg(board_binary(b));
        self.serve(cmd, host)
    }

    /// The x86_64 `linerate serve` in `host`.
    fn serve_x86(&self, host: &str) -> Server {
        let cmd = self
            .lab
            .command(host, env!("CARGO_BIN_EXE_linerate"))
            .expect("lab host");
        self.serve(cmd, host)
    }

    fn serve(&self, mut cmd: Command, host: &str) -> Server {
        let addr = self.addr(host);
        cmd.args(["serve", "--bind", &addr, "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().expect("spawn a server in the lab");
        let to = SocketAddr::new(addr.parse().unwrap(), 5301);
        let t = Instant::now();
        loop {
            let up = self
                .lab
                .run_in(host, || {
                    TcpStream::connect_timeout(&to, Duration::from_millis(200)).is_ok()
                })
                .unwrap();
            if up {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the server in {host} did not listen on {to}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Server(child)
    }

    /// The x86_64 client in `host`: its JSON record.
    fn x86(&self, host: &str, args: &[&str]) -> Value {
        let mut a = vec![env!("CARGO_BIN_EXE_linerate")];
        a.extend_from_slice(args);
        a.push("--json");
        json_of(&self.lab, host, &a)
    }

    /// The board's client in `host`: its JSON record.
    fn board(&self, b: &Board, host: &str, args: &[&str]) -> Value {
        let bin = board_binary(b);
        let bin = bin.to_str().unwrap();
        let mut a = vec![qemu(b), bin];
        a.extend_from_slice(args);
        a.push("--json");
        json_of(&self.lab, host, &a)
    }
}

/// A server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct LinkStats {
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
}

impl std::ops::Sub for LinkStats {
    type Output = LinkStats;
    fn sub(self, o: LinkStats) -> LinkStats {
        LinkStats {
            rx_packets: self.rx_packets - o.rx_packets,
            rx_bytes: self.rx_bytes - o.rx_bytes,
            tx_packets: self.tx_packets - o.tx_packets,
            tx_bytes: self.tx_bytes - o.tx_bytes,
        }
    }
}

/// Runs `args` in `host`, which must succeed; its stdout.
fn run(lab: &Lab, host: &str, args: &[&str]) -> Vec<u8> {
    let out = lab.exec(host, args).expect("exec in the lab");
    assert!(
        out.status.success(),
        "{args:?} in {host}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn json_of(lab: &Lab, host: &str, args: &[&str]) -> Value {
    let out = lab.exec(host, args).expect("exec in the lab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?} in {host} failed: {err}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}); stderr: {err}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// What one side's record says about the figures emulation cannot give: each is absent
/// with a warning or plausible, never a wrong value. `side` is "client" or "server".
fn check_side_figures(rec: &Value, side: &str) {
    // An rr test's streams report neither TCP_INFO nor the congestion control.
    let stream_test = rec["rr"].is_null();
    let s = &rec[side];
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for st in s["streams"].as_array().into_iter().flatten() {
        // The congestion control's name: a module name, or absent with a warning.
        match st["congestion"].as_str() {
            Some(cc) => assert!(
                !cc.is_empty()
                    && cc
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{side}: congestion control {cc:?}"
            ),
            None if stream_test && st["mss_bytes"].is_number() => assert!(
                warnings.iter().any(|w| w.contains("TCP_CONGESTION")),
                "{side}: no congestion control and no warning: {warnings:?}"
            ),
            None => {}
        }
        let ti = &st["tcp_info"];
        if ti.is_null() {
            if stream_test && st["mss_bytes"].is_number() {
                // A TCP stream: the missing TCP_INFO is said.
                assert!(
                    warnings.iter().any(|w| w.contains("TCP_INFO")),
                    "{side}: no tcp_info and no warning: {warnings:?}"
                );
            }
            continue;
        }
        let mss = u(&ti["snd_mss"]);
        assert!((88..=65_535).contains(&mss), "{side}: snd_mss {mss}: {ti}");
        assert!(u(&ti["rtt_us"]) < 60_000_000, "{side}: {ti}");
        if let (Some(acked), Some(bytes)) = (ti["bytes_acked"].as_u64(), st["bytes"].as_u64()) {
            if st["role"] == "tx" {
                // Besides the test's bytes, the 24-byte stream hello; the SYN and the FIN
                // take a sequence number each.
                let most = bytes + STREAM_HELLO + 2;
                assert!(acked <= most, "{side}: acked {acked} of {bytes}: {ti}");
            }
        }
    }
    if let Some(m) = st_mss(s) {
        assert!((88..=65_535).contains(&m), "{side}: mss {m}");
    }
    let cpu = &s["cpu"];
    if cpu.is_object() {
        let p = cpu["util_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&p), "{side}: {cpu}");
    }
    let pc = &s["process_cpu"];
    if pc.is_object() {
        let used = u(&pc["user_ns"]) + u(&pc["system_ns"]);
        let cpus = s["host"]["cpu_count"].as_u64().unwrap_or(1).max(1);
        let wall = u(&s["totals"]["duration_ns"]);
        // Measured around the window, by a process of at most cpu_count threads busy.
        assert!(
            used <= (wall + 2_000_000_000) * cpus,
            "{side}: {used} ns of CPU in {wall} ns"
        );
    }
}

fn st_mss(side: &Value) -> Option<u64> {
    side["streams"][0]["mss_bytes"].as_u64()
}

/// Bytes: each flow's sender and receiver agree, and so do the ends' totals.
fn check_bytes(rec: &Value) -> (u64, u64) {
    for f in rec["summary"]["flows"].as_array().unwrap() {
        assert_eq!(f["sender_bytes"], f["receiver_bytes"], "{f}");
    }
    let (c, s) = (&rec["client"]["totals"], &rec["server"]["totals"]);
    assert_eq!(u(&c["tx_bytes"]), u(&s["rx_bytes"]), "client → server");
    assert_eq!(u(&s["tx_bytes"]), u(&c["rx_bytes"]), "server → client");
    (u(&c["tx_bytes"]), u(&s["tx_bytes"]))
}

/// `payload` bytes of TCP crossed a veth that counted `wire` bytes one way: at least the
/// payload, at most the payload with a header of at most 80 bytes (Ethernet, IP, TCP with
/// options) per segment of at least 536 bytes, plus the other traffic's packets.
fn check_wire_bytes(what: &str, payload: u64, wire: u64) {
    let most = payload + payload * 80 / 536 + OTHER_PACKETS * 1514;
    assert!(
        payload <= wire && wire <= most,
        "{what}: {payload} payload bytes, {wire} on the veth"
    );
}

/// TCP both ways and both at once with the board as the server.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_serves_tcp_both_ways_and_bidir() {
    board_serves_tcp(&PPC, "pt");
}

fn board_serves_tcp(b: &Board, tag: &str) {
    let bl = BoardLab::up("pair", tag);
    let _srv = bl.board_serve(b, "b");
    let b_addr = bl.addr("b");
    let (a_if, b_if) = (bl.iface("a", "b"), bl.iface("b", "a"));
    for (way, extra) in [
        ("send", &[][..]),
        ("receive", &["-R"][..]),
        ("bidir", &["--bidir"][..]),
    ] {
        let (a0, b0) = bl.settled(&a_if, &b_if);
        let mut args = vec!["tcp", b_addr.as_str(), "-t", "1"];
        args.extend_from_slice(extra);
        let rec = bl.x86("a", &args);
        let (a1, b1) = bl.settled(&a_if, &b_if);
        let (da, db) = (a1 - a0, b1 - b0);
        let (up, down) = check_bytes(&rec);
        match way {
            "send" => assert!(up > 0 && down == 0, "{way}: {up} {down}"),
            "receive" => assert!(up == 0 && down > 0, "{way}: {up} {down}"),
            _ => assert!(up > 0 && down > 0, "{way}: {up} {down}"),
        }
        // The veth's ends count the same frames, which carry the payload and its headers.
        assert_eq!(da.tx_bytes, db.rx_bytes, "{way}");
        assert_eq!(db.tx_bytes, da.rx_bytes, "{way}");
        // Each way that carried data (the other carried its ACKs).
        if up > 0 {
            check_wire_bytes(way, up, da.tx_bytes);
        }
        if down > 0 {
            check_wire_bytes(way, down, db.tx_bytes);
        }
        check_side_figures(&rec, "server");
        check_side_figures(&rec, "client");
        // The x86_64 end has what the emulated end may not: the kernel's TCP_INFO.
        let x86_streams = rec["client"]["streams"].as_array().unwrap();
        assert!(
            x86_streams
                .iter()
                .filter(|s| s["role"] == "tx")
                .all(|s| s["tcp_info"].is_object()),
            "{way}: {x86_streams:?}"
        );
    }
}

/// Datagrams: the receiver counted every datagram the sender sent as received or lost, the
/// flow's figures say the same, and each record's interface packets lie within what
/// `ip -s link` counted on the veth over the whole run (`da`: the sender's veth, `db`: the
/// receiver's).
///
/// The receiver's interface window holds every datagram it counted, whichever end sends:
/// a client that receives takes its interface counters before the server may start (this
/// test found the gap: tens of milliseconds of datagrams under emulation).
fn check_udp(rec: &Value, (sender, receiver): (&str, &str), da: LinkStats, db: LinkStats) {
    let sent = u(&rec[sender]["totals"]["tx_packets"]);
    let rx = &rec[receiver]["totals"]["udp_rx"];
    let (got, lost) = (u(&rx["packets"]), u(&rx["lost"]));
    assert!(sent > 0);
    assert_eq!(u(&rec[receiver]["totals"]["rx_packets"]), got, "{rx}");
    assert_eq!(
        got + lost,
        sent,
        "received {got} + lost {lost} of {sent}: {rx}"
    );
    let f = &rec["summary"]["flows"][0];
    assert_eq!(u(&f["lost_datagrams"]), lost, "{f}");
    assert_eq!(u(&f["udp"]["packets"]), got, "{f}");
    let bytes = u(&rec[sender]["totals"]["tx_bytes"]);
    assert_eq!(
        bytes,
        u(&rec[receiver]["totals"]["rx_bytes"]) + lost * (bytes / sent)
    );
    // One datagram a packet (no GSO at this size and rate on veth, and the veth does not
    // lose): the veth carried every datagram sent, and the other packets are few.
    assert!(
        sent <= da.tx_packets && da.tx_packets <= sent + OTHER_PACKETS,
        "{sent} datagrams sent, {} packets on the sender's veth",
        da.tx_packets
    );
    assert_eq!(da.tx_packets, db.rx_packets);
    let ip = &f["interface_packets"];
    let (tx, rxp) = (u(&ip["sender_tx_packets"]), u(&ip["receiver_rx_packets"]));
    assert!(
        sent <= tx && tx <= da.tx_packets,
        "sender's interface {tx}, datagrams {sent}, ip -s link {}: {ip}",
        da.tx_packets
    );
    assert!(
        got <= rxp && rxp <= db.rx_packets,
        "receiver's interface {rxp}, datagrams {got}, ip -s link {}: {ip}",
        db.rx_packets
    );
}

/// UDP at a modest rate with the board as the server, both ways.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_serves_udp_with_datagrams_loss_and_interface_packets() {
    board_serves_udp(&PPC, "pu");
}

fn board_serves_udp(b: &Board, tag: &str) {
    let bl = BoardLab::up("pair", tag);
    let _srv = bl.board_serve(b, "b");
    let b_addr = bl.addr("b");
    let (a_if, b_if) = (bl.iface("a", "b"), bl.iface("b", "a"));
    for reverse in [false, true] {
        let (a0, b0) = bl.settled(&a_if, &b_if);
        let mut args = vec!["udp", b_addr.as_str(), "-t", "1", "-b", "4M", "-l", "1000"];
        if reverse {
            args.push("-R");
        }
        let rec = bl.x86("a", &args);
        let (a1, b1) = bl.settled(&a_if, &b_if);
        let (da, db) = (a1 - a0, b1 - b0);
        if reverse {
            check_udp(&rec, ("server", "client"), db, da);
        } else {
            check_udp(&rec, ("client", "server"), da, db);
        }
        check_side_figures(&rec, "server");
    }
}

/// TCP request/response with the board answering: every transaction's request and
/// response were counted at both ends.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_answers_rr() {
    let bl = BoardLab::up("pair", "pr");
    let _srv = bl.board_serve(&PPC, "b");
    let b_addr = bl.addr("b");
    let rec = bl.x86("a", &["rr", &b_addr, "-t", "1", "-r", "32,64"]);
    let rr = &rec["rr"];
    let n = u(&rr["transactions"]);
    assert!(n > 0, "{rr}");
    let (c, s) = (&rec["client"]["totals"], &rec["server"]["totals"]);
    // The client counted n responses; one request (burst 1) may have been in flight at
    // the stop, and the server's answer to it.
    assert_eq!(u(&c["rx_bytes"]), n * 64, "{c}");
    let requests = u(&c["tx_bytes"]);
    assert!(requests == n * 32 || requests == (n + 1) * 32, "{c}");
    assert_eq!(
        u(&s["rx_bytes"]),
        requests,
        "the requests, at both ends: {s}"
    );
    let answered = u(&s["tx_bytes"]);
    assert!(
        answered == n * 64 || answered == requests * 2,
        "{n} transactions, the server answered {answered} bytes: {s}"
    );
    check_side_figures(&rec, "server");
}

/// The board as the device under test: the router `r` of a router lab runs the board's
/// `linerate serve`; an x86_64 client in `a` sends UDP to the x86_64 server in `b` with
/// `--dut r`. The device's egress towards `b` transmitted the datagrams `b` received
/// (within the control packets of the window), and no more than `ip -s link` counted.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_as_the_device_under_test() {
    let bl = BoardLab::up("router", "pd");
    let _srv = bl.serve_x86("b");
    let _dut = bl.board_serve(&PPC, "r");
    let (b_addr, r_addr) = (bl.addr("b"), bl.addr("r"));
    let egress = bl.iface("r", "b");
    let before = bl.link("r", &egress);
    let rec = bl.x86(
        "a",
        &[
            "udp",
            &b_addr,
            "--dut",
            &r_addr,
            "-t",
            "1",
            "-b",
            "4M",
            "-l",
            "1000",
            "--no-offload",
        ],
    );
    let d = bl.link("r", &egress) - before;
    let dut = &rec["dut"];
    assert!(dut.is_object(), "no device section: {rec}");
    let e = dut["interfaces"]
        .as_array()
        .expect("the device's interfaces")
        .iter()
        .find(|i| i["name"] == egress.as_str())
        .unwrap_or_else(|| panic!("no {egress} in {dut}"));
    let tx = u(&e["tx_packets"]);
    let received = u(&rec["server"]["totals"]["udp_rx"]["packets"]);
    assert!(
        received <= tx && tx <= received + OTHER_PACKETS && tx <= d.tx_packets,
        "b received {received}, the device says {tx} left {egress}, ip -s link {}",
        d.tx_packets
    );
    for c in dut["cpu"]["per_cpu"].as_array().expect("the device's CPUs") {
        let v = c["busy_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&v), "{c}");
    }
}

/// An RFC 2544 throughput search whose receiver is the board: in each trial the frames
/// the tester counted as received are no more than it sent, and over the run the trials'
/// frames crossed the board's veth (`ip -s link`).
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_receives_an_rfc2544_trial() {
    let bl = BoardLab::up("pair", "pf");
    let _srv = bl.board_serve(&PPC, "b");
    let b_addr = bl.addr("b");
    let b_if = bl.iface("b", "a");
    let before = bl.link("b", &b_if);
    let rec = bl.x86(
        "a",
        &[
            "rfc2544",
            &b_addr,
            "--line-rate",
            "4M",
            "--frame-sizes",
            "512",
            "--trial-time",
            "0.5",
            "--confirm-time",
            "0",
            "--settle",
            "0.1",
            "--resolution",
            "10",
            "--max-trials",
            "2",
            "--calibrate-time",
            "0.2",
        ],
    );
    let d = bl.link("b", &b_if) - before;
    let size = &rec["frame_sizes"][0];
    let mut trials: Vec<&Value> = size["throughput"]["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .collect();
    assert!(!trials.is_empty(), "{size}");
    trials.extend(
        size["calibration"]
            .as_object()
            .map(|_| &size["calibration"]),
    );
    let (mut received, mut board_rx) = (0, 0);
    for t in trials {
        let w = &t["ways"][0];
        let (s, r) = (u(&w["sent"]), u(&w["received"]));
        assert!(s > 0 && r <= s, "{t}");
        // The board's interface in the trial's window took every frame its receiver
        // counted, and few others (the trial's control messages).
        // An unpaced calibration overflows the emulated receiver's socket: those frames
        // reached the interface and are counted as dropped there.
        let rx = u(&w["iface_rx_packets"]);
        let dropped = w["tester_rx_dropped"].as_u64().unwrap_or(0);
        assert!(r <= rx && rx <= r + dropped + OTHER_PACKETS, "{t}");
        received += r;
        board_rx += rx;
    }
    assert!(
        received <= board_rx && board_rx <= d.rx_packets,
        "the trials received {received} frames, the board's windows {board_rx}, its veth {}",
        d.rx_packets
    );
}

/// Xilinx's XAPP1127 transmit test: the board is the client and sends, TCP and UDP, to an
/// x86_64 server.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_transmits_to_an_x86_64_server() {
    let bl = BoardLab::up("pair", "px");
    let _srv = bl.serve_x86("b");
    let b_addr = bl.addr("b");
    let (a_if, b_if) = (bl.iface("a", "b"), bl.iface("b", "a"));

    let (a0, b0) = bl.settled(&a_if, &b_if);
    let rec = bl.board(&PPC, "a", &["tcp", &b_addr, "-t", "1"]);
    let (a1, b1) = bl.settled(&a_if, &b_if);
    let (da, db) = (a1 - a0, b1 - b0);
    let (up, down) = check_bytes(&rec);
    assert!(up > 0 && down == 0);
    assert_eq!(da.tx_bytes, db.rx_bytes);
    check_wire_bytes("board sends", up, da.tx_bytes);
    check_side_figures(&rec, "client");
    check_side_figures(&rec, "server");

    let (a0, b0) = bl.settled(&a_if, &b_if);
    let rec = bl.board(
        &PPC,
        "a",
        &["udp", &b_addr, "-t", "1", "-b", "4M", "-l", "1000"],
    );
    let (a1, b1) = bl.settled(&a_if, &b_if);
    let (da, db) = (a1 - a0, b1 - b0);
    check_udp(&rec, ("client", "server"), da, db);
    check_side_figures(&rec, "client");
}

/// The same TCP and UDP checks for an aarch64 board.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_aarch64_serves_tcp_and_udp() {
    board_serves_tcp(&AARCH64, "at");
    board_serves_udp(&AARCH64, "au");
}

/// The board's core aborts on panic (Cargo.toml, [profile.board]), so its `serve` is a
/// parent that starts the serving process again when it dies (src/sys/supervise.rs). Under
/// emulation: the serving process is killed with SIGABRT, as a panic ends it; a new one
/// serves on the same port, a test against it moves the same bytes at both ends; and when
/// the parent is killed (SIGKILL, which it cannot pass on), its serving process ends too.
#[test]
#[ignore = "needs root: network namespaces, qemu-user-static"]
fn lab_board_ppc_serve_survives_the_death_of_its_serving_process() {
    let bl = BoardLab::up("pair", "pk");
    let mut srv = bl.board_serve(&PPC, "b");
    let b_addr = bl.addr("b");
    let parent = srv.0.id();
    let first = one_child(parent);
    let rec = bl.x86("a", &["tcp", &b_addr, "-t", "1"]);
    assert!(check_bytes(&rec).0 > 0, "before: {rec}");

    signal(first, "ABRT");
    let t = Instant::now();
    let second = loop {
        match children(parent).as_slice() {
            [c] if *c != first => break *c,
            _ => {}
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no new serving process after SIGABRT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        srv.0.try_wait().unwrap().is_none(),
        "the parent ended with its serving process"
    );
    let rec = bl.x86("a", &["tcp", &b_addr, "-t", "1"]);
    let (up, down) = check_bytes(&rec);
    assert!(up > 0 && down == 0, "after the restart: {up} {down}");

    drop(srv);
    let t = Instant::now();
    while is_running(second) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "serving process {second} still runs after its parent was killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The state and the parent's pid of `pid`, the first two fields of /proc/PID/stat after
/// the command's parenthesis; `None` when the process is gone.
fn state_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace();
    Some((f.next()?.to_string(), f.next()?.parse().ok()?))
}

/// The running processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(n) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if matches!(state_and_parent(n), Some((state, parent)) if parent == pid && state != "Z") {
            out.push(n);
        }
    }
    out
}

/// The one child of `pid`, waited for.
fn one_child(pid: u32) -> u32 {
    let t = Instant::now();
    loop {
        if let [c] = children(pid).as_slice() {
            return *c;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no serving process under {pid}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `pid` exists and is not a zombie.
fn is_running(pid: u32) -> bool {
    state_and_parent(pid).is_some_and(|(state, _)| state != "Z")
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}
