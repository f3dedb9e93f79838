//! Integration tests that build real labs. They need root, so each is
//! `#[ignore = "needs root: network namespaces"]`: a plain `cargo test` passes without
//! root, and CI (as root) runs every one with `cargo test --test lab -- --ignored`
//! (`scripts/test.sh`), where they fail loudly without root.
//!
//! Every test uses its own lab name (a short prefix plus the pid) so tests
//! can run in parallel, and a `Cleanup` guard that deletes the lab by name
//! even if the test panics half-way.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use linerate_lab::{cmd, Lab, LabError, LabOptions, Shaping, ShapingKind, Topology};

const IO_TIMEOUT: Duration = Duration::from_secs(10);

fn require_root() {
    if let Err(e) = cmd::require_privileges() {
        panic!(
            "linerate-lab integration tests create network namespaces and must run as root \
             (CAP_NET_ADMIN + CAP_SYS_ADMIN): {e}"
        );
    }
}

/// A lab name unique to this test process: `prefix` (at most 5 chars) + pid.
fn unique(prefix: &str) -> String {
    let name = format!("{prefix}{}", std::process::id());
    assert!(name.len() <= 12, "test lab name {name} too long");
    name
}

/// Deletes a lab by name when dropped, whatever happened.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Err(e) = Lab::down_by_name(&self.0) {
            eprintln!("cleanup of lab {} failed: {e}", self.0);
        }
    }
}

fn namespaces() -> String {
    let out = Command::new(cmd::tool_path("ip").unwrap())
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "ip netns list failed");
    String::from_utf8(out.stdout).unwrap()
}

fn has_ns(list: &str, ns: &str) -> bool {
    list.lines()
        .any(|l| l.split_whitespace().next() == Some(ns))
}

/// Binds a TCP listener on `addr` inside `to`'s namespace, connects from
/// `from`'s namespace, sends a message and reads the echo.
fn tcp_echo(lab: &Lab, from: &str, to: &str, addr: IpAddr) {
    let listener = lab
        .run_in(to, move || TcpListener::bind(SocketAddr::new(addr, 0)))
        .unwrap()
        .unwrap_or_else(|e| panic!("bind {addr} in {to}: {e}"));
    let target = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, peer) = listener.accept().unwrap();
        conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut buf = [0u8; 5];
        conn.read_exact(&mut buf).unwrap();
        conn.write_all(&buf).unwrap();
        peer
    });
    let (local, echoed) = lab
        .run_in(from, move || {
            let mut c = TcpStream::connect_timeout(&target, IO_TIMEOUT)
                .unwrap_or_else(|e| panic!("connect to {target}: {e}"));
            c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            c.write_all(b"hello").unwrap();
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).unwrap();
            (c.local_addr().unwrap(), buf)
        })
        .unwrap();
    assert_eq!(&echoed, b"hello");
    let peer = server.join().unwrap();
    assert_eq!(peer, local);
}

/// Sends `bytes` over TCP from `from` to `to` at `addr`; returns how long the
/// receiver took to get all of it.
fn tcp_transfer(lab: &Lab, from: &str, to: &str, addr: IpAddr, bytes: usize) -> Duration {
    let listener = lab
        .run_in(to, move || TcpListener::bind(SocketAddr::new(addr, 0)))
        .unwrap()
        .unwrap();
    let target = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut total = 0;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            total += n;
        }
        (total, Instant::now())
    });
    let start = Instant::now();
    lab.run_in(from, move || {
        let mut c = TcpStream::connect_timeout(&target, IO_TIMEOUT).unwrap();
        c.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        c.write_all(&vec![7u8; bytes]).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
    })
    .unwrap();
    let (total, end) = server.join().unwrap();
    assert_eq!(total, bytes);
    end - start
}

/// Sends `count` UDP datagrams from `from` to `to` at `addr`; returns how
/// many arrived.
fn udp_delivered(lab: &Lab, from: &str, to: &str, addr: IpAddr, count: usize) -> usize {
    let rx = lab
        .run_in(to, move || UdpSocket::bind(SocketAddr::new(addr, 0)))
        .unwrap()
        .unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let target = rx.local_addr().unwrap();
    lab.run_in(from, move || {
        let tx = UdpSocket::bind(SocketAddr::new(
            if target.is_ipv4() {
                IpAddr::from([0, 0, 0, 0])
            } else {
                IpAddr::from([0u16; 8])
            },
            0,
        ))
        .unwrap();
        for i in 0..count {
            tx.send_to(&(i as u32).to_be_bytes(), target).unwrap();
            if i % 50 == 49 {
                // Stay well below socket buffer sizes.
                thread::sleep(Duration::from_millis(2));
            }
        }
    })
    .unwrap();
    let mut got = 0;
    let mut buf = [0u8; 64];
    while rx.recv_from(&mut buf).is_ok() {
        got += 1;
    }
    got
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_pair_comes_up_and_a_reaches_b() {
    require_root();
    let name = unique("tp");
    let _guard = Cleanup(name.clone());
    let lab = Lab::pair(&name, &LabOptions::default()).unwrap();

    assert_eq!(lab.hosts(), ["a", "b"]);
    assert_eq!(lab.topology(), Topology::Pair);
    assert_eq!(lab.ns_name("a"), Some(format!("lr-{name}-a").as_str()));
    assert_eq!(lab.ns_name("r"), None);
    let (a, b) = (lab.addr("a").unwrap(), lab.addr("b").unwrap());
    assert!(a.is_ipv4() && b.is_ipv4());
    assert!(lab.addr6("b").unwrap().is_ipv6());
    assert_eq!(lab.shaped_link(), ("a", lab.iface("a").unwrap()));

    let list = namespaces();
    assert!(has_ns(&list, &format!("lr-{name}-a")), "{list}");
    assert!(has_ns(&list, &format!("lr-{name}-b")), "{list}");

    tcp_echo(&lab, "a", "b", b);
    tcp_echo(&lab, "b", "a", a);
    tcp_echo(&lab, "a", "b", lab.addr6("b").unwrap());

    // exec runs in the namespace: b sees its own address and lo is up.
    let out = lab.exec("b", &["ip", "-o", "addr", "show"]).unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{b}/24")), "{text}");
    assert!(
        text.contains(&format!("{}/64", lab.addr6("b").unwrap())),
        "{text}"
    );
    assert!(text.contains("lo    inet 127.0.0.1/8"), "{text}");
    assert!(!text.contains(&format!("{a}/24")), "{text}");

    // exec reports non-zero exits as output, not errors.
    let out = lab.exec("a", &["sh", "-c", "exit 3"]).unwrap();
    assert_eq!(out.status.code(), Some(3));

    assert!(matches!(
        lab.exec("zz", &["true"]),
        Err(LabError::UnknownHost { .. })
    ));

    lab.down().unwrap();
    let list = namespaces();
    assert!(!has_ns(&list, &format!("lr-{name}-a")), "{list}");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_spawn_and_command_run_inside_namespace() {
    require_root();
    let name = unique("ts");
    let _guard = Cleanup(name.clone());
    let lab = Lab::pair(&name, &LabOptions::default()).unwrap();
    let b = lab.addr("b").unwrap();

    let mut check = Command::new("sh");
    check
        .args(["-c", "ip -o addr show | grep -q \"$WANT\""])
        .env("WANT", format!("{b}/24"));
    let status = lab.spawn("b", &check).unwrap().wait().unwrap();
    assert!(status.success(), "b's address not visible inside b");
    let status = lab.spawn("a", &check).unwrap().wait().unwrap();
    assert!(!status.success(), "b's address visible inside a");

    let out = lab
        .command("a", "ip")
        .unwrap()
        .args(["-o", "link", "show", "dev", lab.iface("a").unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_router_forwards_between_subnets() {
    require_root();
    let name = unique("tr");
    let _guard = Cleanup(name.clone());
    let lab = Lab::router(&name, &LabOptions::default()).unwrap();

    assert_eq!(lab.hosts(), ["a", "r", "b"]);
    let (a, b) = (lab.addr("a").unwrap(), lab.addr("b").unwrap());
    let (IpAddr::V4(a4), IpAddr::V4(b4)) = (a, b) else {
        panic!("v4 addresses expected")
    };
    assert_ne!(a4.octets()[..3], b4.octets()[..3], "a and b share a subnet");
    let r_ifaces = lab.interfaces("r").unwrap();
    assert_eq!(r_ifaces.len(), 2);
    assert_eq!(lab.iface("r"), Some(r_ifaces[1].name.as_str()));
    assert_eq!(r_ifaces[1].peer, "b");
    assert_eq!(lab.shaped_link(), ("r", r_ifaces[1].name.as_str()));
    assert_eq!(lab.lossy_host(), "r");

    let out = lab
        .exec(
            "r",
            &[
                "sysctl",
                "-n",
                "net.ipv4.ip_forward",
                "net.ipv6.conf.all.forwarding",
            ],
        )
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n1\n");

    tcp_echo(&lab, "a", "b", b);
    tcp_echo(&lab, "b", "a", a);
    tcp_echo(&lab, "a", "b", lab.addr6("b").unwrap());
    tcp_echo(&lab, "b", "a", lab.addr6("a").unwrap());

    // Loss on r drops forwarded traffic towards b only.
    lab.set_loss("r", 1.0).unwrap();
    assert_eq!(udp_delivered(&lab, "a", "b", b, 20), 0);
    assert!(lab.loss_dropped("r").unwrap() >= 20);
    tcp_echo(&lab, "r", "a", a); // r's own traffic to a is not affected.
    lab.set_loss("r", 0.0).unwrap();
    assert_eq!(lab.loss_dropped("r").unwrap(), 0);
    assert_eq!(udp_delivered(&lab, "a", "b", b, 20), 20);
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_tbf_shaping_limits_rate_and_shows_in_stats() {
    require_root();
    let name = unique("tt");
    let _guard = Cleanup(name.clone());
    let opts = LabOptions {
        rate_limit: Some(Shaping::tbf(4_000_000)),
        ..Default::default()
    };
    let lab = Lab::pair(&name, &opts).unwrap();
    let iface = lab.iface("a").unwrap().to_string();

    let before = lab.qdisc_stats("a", &iface).unwrap();
    assert_eq!(before.kind, "tbf");

    // 500 kB at 4 Mbit/s takes about 1 s.
    let took = tcp_transfer(&lab, "a", "b", lab.addr("b").unwrap(), 500_000);
    assert!(
        took >= Duration::from_millis(700),
        "500 kB through a 4 Mbit/s tbf took only {took:?}"
    );
    let after = lab.qdisc_stats("a", &iface).unwrap();
    assert_eq!(after.kind, "tbf");
    assert!(after.sent_packets > before.sent_packets + 100, "{after:?}");
    assert!(after.sent_bytes >= 500_000, "{after:?}");
    assert!(
        after.overlimits > 0 || after.dropped > 0,
        "tbf never throttled: {after:?}"
    );

    // b's side is unshaped.
    let b_stats = lab.qdisc_stats("b", lab.iface("b").unwrap()).unwrap();
    assert_eq!(b_stats.kind, "noqueue");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_htb_on_router_and_reshaping() {
    require_root();
    let name = unique("th");
    let _guard = Cleanup(name.clone());
    let opts = LabOptions {
        rate_limit: Some(Shaping {
            limit_bytes: Some(64_000),
            ..Shaping::htb(8_000_000)
        }),
        mtu: Some(1400),
        ..Default::default()
    };
    let lab = Lab::router(&name, &opts).unwrap();
    let (host, iface) = lab.shaped_link();
    let (host, iface) = (host.to_string(), iface.to_string());

    // 500 kB at 8 Mbit/s takes about 0.5 s.
    let took = tcp_transfer(&lab, "a", "b", lab.addr("b").unwrap(), 500_000);
    assert!(
        took >= Duration::from_millis(350),
        "500 kB through an 8 Mbit/s htb took only {took:?}"
    );
    let stats = lab.qdisc_stats(&host, &iface).unwrap();
    assert_eq!(stats.kind, "htb");
    assert!(stats.sent_packets > 100, "{stats:?}");
    assert!(stats.overlimits > 0, "{stats:?}");

    // MTU applied on every veth.
    for h in lab.hosts() {
        for i in lab.interfaces(h).unwrap() {
            let out = lab
                .exec(h, &["ip", "-o", "link", "show", "dev", &i.name])
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(" mtu 1400 "), "{h} {}: {text}", i.name);
        }
    }

    // Re-shape the same interface with tbf, then back to htb, then clear.
    lab.shape(&host, &iface, &Shaping::tbf(50_000_000)).unwrap();
    assert_eq!(lab.qdisc_stats(&host, &iface).unwrap().kind, "tbf");
    lab.shape(
        &host,
        &iface,
        &Shaping {
            kind: ShapingKind::Htb,
            ..Shaping::tbf(50_000_000)
        },
    )
    .unwrap();
    assert_eq!(lab.qdisc_stats(&host, &iface).unwrap().kind, "htb");
    lab.clear_shaping(&host, &iface).unwrap();
    assert_eq!(lab.qdisc_stats(&host, &iface).unwrap().kind, "noqueue");
    lab.clear_shaping(&host, &iface).unwrap();
    tcp_echo(&lab, "a", "b", lab.addr("b").unwrap());
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_loss_drops_about_the_right_fraction() {
    require_root();
    let name = unique("tl");
    let _guard = Cleanup(name.clone());
    let opts = LabOptions {
        loss: Some(0.5),
        ..Default::default()
    };
    let lab = Lab::pair(&name, &opts).unwrap();
    let b = lab.addr("b").unwrap();
    assert_eq!(lab.lossy_host(), "b");

    let sent = 400;
    let got = udp_delivered(&lab, "a", "b", b, sent);
    // Binomial(400, 0.5): mean 200, sd 10; 120..=280 is 8 sd wide.
    assert!(
        (120..=280).contains(&got),
        "{got} of {sent} arrived at 50% loss"
    );
    let dropped = lab.loss_dropped("b").unwrap();
    assert!(
        dropped as usize >= sent - got,
        "counter {dropped}, lost {}",
        sent - got
    );

    lab.set_loss("b", 1.0).unwrap();
    assert_eq!(udp_delivered(&lab, "a", "b", b, 50), 0);
    lab.set_loss("b", 0.0).unwrap();
    assert_eq!(udp_delivered(&lab, "a", "b", b, 50), 50);
    // Traffic from b towards a was never subject to loss.
    assert_eq!(
        udp_delivered(&lab, "b", "a", lab.addr("a").unwrap(), 50),
        50
    );

    assert!(matches!(
        lab.set_loss("b", 1.5),
        Err(LabError::InvalidOption(_))
    ));
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_drop_removes_namespaces_and_list_finds_labs() {
    require_root();
    let name = unique("td");
    let _guard = Cleanup(name.clone());
    let lab = Lab::router(&name, &LabOptions::default()).unwrap();
    let ns: Vec<String> = lab
        .hosts()
        .iter()
        .map(|h| lab.ns_name(h).unwrap().to_string())
        .collect();

    let labs = Lab::list().unwrap();
    let info = labs
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("list() misses {name}: {labs:?}"));
    assert_eq!(info.hosts, ["a", "r", "b"]);

    let list = namespaces();
    for n in &ns {
        assert!(has_ns(&list, n), "{n} missing: {list}");
    }
    drop(lab);
    let list = namespaces();
    for n in &ns {
        assert!(!has_ns(&list, n), "{n} survived drop: {list}");
    }
    assert!(Lab::list().unwrap().iter().all(|l| l.name != name));
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_down_by_name_nonexistent_succeeds() {
    require_root();
    let name = unique("tn");
    Lab::down_by_name(&name).unwrap();
    Lab::down_by_name(&name).unwrap();
    assert!(matches!(
        Lab::down_by_name("Not_Valid"),
        Err(LabError::InvalidName { .. })
    ));
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_down_by_name_removes_a_leftover_lab() {
    require_root();
    let name = unique("tx");
    let _guard = Cleanup(name.clone());
    let lab = Lab::pair(&name, &LabOptions::default()).unwrap();
    // Simulate a crashed process: the value is never dropped.
    std::mem::forget(lab);
    assert!(has_ns(&namespaces(), &format!("lr-{name}-a")));
    Lab::down_by_name(&name).unwrap();
    let list = namespaces();
    assert!(!has_ns(&list, &format!("lr-{name}-a")), "{list}");
    assert!(!has_ns(&list, &format!("lr-{name}-b")), "{list}");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_up_is_idempotent_and_stale_values_are_harmless() {
    require_root();
    let name = unique("ti");
    let _guard = Cleanup(name.clone());
    let first = Lab::pair(&name, &LabOptions::default()).unwrap();
    // Same name again: the first lab's namespaces are replaced.
    let second = Lab::pair(&name, &LabOptions::default()).unwrap();
    // Dropping the stale value must not delete the new lab.
    first.down().unwrap();
    let list = namespaces();
    assert!(has_ns(&list, &format!("lr-{name}-a")), "{list}");
    tcp_echo(&second, "a", "b", second.addr("b").unwrap());
    drop(second);
    assert!(!has_ns(&namespaces(), &format!("lr-{name}-a")));
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_rejects_bad_names_and_options() {
    require_root();
    for bad in ["", "UPPER", "has_underscore", "thirteen-char"] {
        assert!(
            matches!(
                Lab::pair(bad, &LabOptions::default()),
                Err(LabError::InvalidName { .. })
            ),
            "{bad:?} accepted"
        );
    }
    let name = unique("to");
    let _guard = Cleanup(name.clone());
    let opts = LabOptions {
        mtu: Some(100),
        ..Default::default()
    };
    assert!(matches!(
        Lab::pair(&name, &opts),
        Err(LabError::InvalidOption(_))
    ));
    assert!(!has_ns(&namespaces(), &format!("lr-{name}-a")));
}
