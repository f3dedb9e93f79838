//! `linerate lab up --delay D`: the delay line in the router namespace, checked against
//! ping's round trips and the TUN device's own counters; and the latency tests that run
//! through it.

use std::process::Command;

use linerate_lab::topology::{self, Topology};

use crate::common::{bin, lab_name};

/// A lab made by `linerate lab up NAME ARGS...`, removed by `linerate lab down NAME` when
/// dropped (which also stops its delay line).
pub struct CliLab {
    /// The lab's name.
    pub name: String,
}

impl CliLab {
    /// `linerate lab up NAME --topology router ARGS...`; panics with its stderr on failure.
    pub fn router(name: &str, args: &[&str]) -> CliLab {
        let lab = CliLab {
            name: name.to_string(),
        };
        let out = bin()
            .args(["lab", "up", name, "--topology", "router"])
            .args(args)
            .output()
            .expect("linerate lab up");
        assert!(
            out.status.success(),
            "lab up {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        lab
    }

    /// Host `host`'s first IPv4 address.
    pub fn addr(&self, host: &str) -> String {
        let p = topology::plan(&self.name, Topology::Router).expect("plan");
        let h = p.hosts.iter().find(|h| h.name == host).expect("host");
        h.ifaces[0].addr.to_string()
    }

    /// A command run in `host`'s namespace.
    pub fn command(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &topology::ns_name_for(&self.name, host)])
            .arg(program);
        c
    }

    /// The delay line's counters (its JSON file).
    pub fn delay_stats(&self) -> serde_json::Value {
        let path = format!("/run/linerate-lab/{}.delay.json", self.name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).expect("delay line counters")
    }

    /// A counter of the delay line's TUN device from sysfs in the router namespace: the
    /// kernel's count, independent of the delay line's own.
    pub fn device_counter(&self, what: &str) -> u64 {
        let out = self
            .command("r", "cat")
            .arg(format!("/sys/class/net/lrdelay/statistics/{what}"))
            .output()
            .expect("cat");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("lrdelay {what}: {out:?}"))
    }
}

impl Drop for CliLab {
    fn drop(&mut self) {
        let _ = bin().args(["lab", "down", &self.name]).output();
    }
}

/// Round-trip times in milliseconds of `count` pings from `from` to `to`, 20 ms apart
/// (ping prints each as `time=T ms` with three significant digits or 0.001 ms).
pub fn ping_ms(lab: &CliLab, from: &str, to: &str, count: u32) -> Vec<f64> {
    let out = lab
        .command(from, "ping")
        .args(["-n", "-i", "0.02", "-W", "2", "-c", &count.to_string(), to])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rtts: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("time="))
        .filter_map(|t| t.parse().ok())
        .collect();
    assert_eq!(rtts.len(), count as usize, "ping lost replies:\n{text}");
    rtts.sort_by(f64::total_cmp);
    rtts
}

/// The median of sorted values.
pub fn median(sorted: &[f64]) -> f64 {
    sorted[sorted.len() / 2]
}

/// Ping's round trip through a 10 ms delay line is the idle path's plus 2 × 10 ms: never
/// less than 2 D (each packet is held D from the moment the line reads it, on an absolute
/// deadline), and its median no more than 2 D + the idle path's slowest round trip + four
/// times the latest wake-up the line measured of itself (two holds, each with a read and a
/// release that wake on the same scheduler). The line's counters agree with the kernel's
/// counters of its TUN device, and it dropped nothing.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_delay_line_adds_its_delay_to_pings() {
    let name = lab_name("dl", "p");
    let idle_lab = CliLab::router(&name, &[]);
    let b = idle_lab.addr("b");
    let idle = ping_ms(&idle_lab, "a", &b, 20);
    drop(idle_lab);
    let d_ms = 10.0;
    let lab = CliLab::router(&name, &["--delay", "10ms"]);
    let delayed = ping_ms(&lab, "a", &b, 20);
    // The line writes its counters every 200 ms: wait until they are final and match the
    // device's (read twice around the device's so that nothing passed in between).
    let mut stats = lab.delay_stats();
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let first = lab.delay_stats();
        let (tx, rx) = (
            lab.device_counter("tx_packets"),
            lab.device_counter("rx_packets"),
        );
        stats = lab.delay_stats();
        if first == stats && stats["received"] == tx && stats["forwarded"] == rx {
            break;
        }
    }
    assert_eq!(
        stats["received"],
        lab.device_counter("tx_packets"),
        "{stats}"
    );
    assert_eq!(
        stats["forwarded"],
        lab.device_counter("rx_packets"),
        "{stats}"
    );
    assert_eq!(stats["dropped"], 0, "{stats}");
    assert!(
        stats["forwarded"].as_u64().unwrap() >= 40,
        "20 requests and 20 replies went through the line: {stats}"
    );
    assert_eq!(stats["delay_ns"], 10_000_000);
    let late_ms = stats["late_max_ns"].as_u64().unwrap() as f64 / 1e6;
    let idle_max = idle[idle.len() - 1];
    let med = median(&delayed);
    assert!(
        delayed[0] >= 2.0 * d_ms,
        "a round trip shorter than 2 D: {delayed:?}"
    );
    let upper = 2.0 * d_ms + idle_max + 4.0 * late_ms;
    assert!(
        med <= upper,
        "median {med} ms over 2 D + idle max {idle_max} + 4 x late {late_ms} = {upper} ms; idle {idle:?}, delayed {delayed:?}"
    );
    let e = crate::common::run_usage_error(&["lab", "up", &name, "--delay", "10ms"]);
    assert!(e.contains("--topology router"), "{e}");
}
