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

/// A process in a lab host, killed when dropped.
struct Bg(std::process::Child);

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_quiet(mut cmd: Command) -> Bg {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().expect("spawn in the lab");
    std::thread::sleep(std::time::Duration::from_millis(400));
    Bg(child)
}

/// iperf2's bounceback summary: (count, mean, min, max) in ms from its `cnt=avg/min/max/stdev
/// ms` column, and the median in ms from its `BB8(f)-PDF` histogram (100 µs bins, bin k
/// holding the exchanges of (k-1)..k × 100 µs).
fn iperf2_bounceback(text: &str) -> (u64, f64, f64, f64, f64) {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(" ms ") && l.contains('=') && l.contains("rps"))
        .unwrap_or_else(|| panic!("no bounceback summary in iperf2's output:\n{text}"));
    let col = line
        .split_whitespace()
        .find(|w| w.contains('=') && w.matches('/').count() == 3)
        .expect("cnt=avg/min/max/stdev");
    let (cnt, rest) = col.split_once('=').expect("cnt=");
    let v: Vec<f64> = rest.split('/').map(|x| x.parse().expect("ms")).collect();
    let pdf = text
        .lines()
        .rev()
        .find(|l| l.contains("PDF:"))
        .expect("iperf2's histogram");
    let bins = pdf
        .split_once(")=")
        .and_then(|(_, b)| b.split_whitespace().next())
        .expect("bins");
    let mut hist: Vec<(u64, u64)> = bins
        .split(',')
        .filter_map(|b| b.split_once(':'))
        .map(|(k, n)| (k.parse().expect("bin"), n.parse().expect("count")))
        .collect();
    hist.sort();
    let total: u64 = hist.iter().map(|b| b.1).sum();
    let mut seen = 0;
    let median_bin = hist
        .iter()
        .find(|(_, n)| {
            seen += n;
            seen * 2 > total
        })
        .map_or(0, |b| b.0);
    let n = cnt.parse().expect("count");
    (n, v[0], v[1], v[2], median_bin as f64 * 0.1)
}

/// Bounceback through a 5 ms delay line, linerate and iperf2 2.1.8 side by side with the
/// same shape (100-byte requests and replies, bursts of 10 every 200 ms, a 2 ms hold, quick
/// ACKs on). Physics brackets every exchange: at least 2 D + the hold (each packet is held
/// D from the moment the line reads it, the server holds its reply), and the median no more
/// than that + the idle path's slowest ping + four times the line's latest wake-up. Both
/// tools' figures must fall in it; their medians must agree within iperf2's 100 µs
/// histogram bin, HdrHistogram's 0.1 %, the line's wake-up spread and the idle path's own
/// spread (two runs are two samples); where they do not,
/// the message names the one the bracket (ping and the line's counters) supports.
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_bounceback_through_the_delay_line_agrees_with_iperf2() {
    let name = lab_name("dl", "b");
    let idle_lab = CliLab::router(&name, &[]);
    let b = idle_lab.addr("b");
    let idle = ping_ms(&idle_lab, "a", &b, 20);
    drop(idle_lab);
    let (d_ms, hold_ms) = (5.0, 2.0);
    let lab = CliLab::router(&name, &["--delay", "5ms"]);
    let mut serve = lab.command("b", env!("CARGO_BIN_EXE_linerate"));
    serve.args(["serve", "--bind", &b, "-q"]);
    let _srv = spawn_quiet(serve);
    let mut iperf_s = lab.command("b", "iperf");
    iperf_s.args(["-s", "-B", &b]);
    let _isrv = spawn_quiet(iperf_s);
    let out = lab
        .command("a", env!("CARGO_BIN_EXE_linerate"))
        .env("LINERATE_NO_STORE", "1")
        .args([
            "rr",
            &b,
            "--bounceback",
            "10",
            "--bounceback-period",
            "200ms",
        ])
        .args([
            "--bounceback-hold",
            "2ms",
            "-r",
            "100,100",
            "-t",
            "2",
            "--json",
        ])
        .output()
        .expect("linerate rr");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("record");
    let lat = &rec["rr"]["latency"];
    let ms = |v: &serde_json::Value| v.as_u64().expect("ns") as f64 / 1e6;
    let (ours_min, ours_p50) = (ms(&lat["min_ns"]), ms(&lat["p50_ns"]));
    let ours_n = rec["rr"]["transactions"].as_u64().expect("transactions");
    let out = lab
        .command("a", "iperf")
        .args(["-c", &b, "--bounceback", "--bounceback-hold", "2"])
        .args(["--bounceback-period", "0.2", "-l", "100", "-t", "2"])
        .output()
        .expect("iperf2 client");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (their_n, _mean, their_min, _max, their_p50) = iperf2_bounceback(&text);
    let stats = lab.delay_stats();
    assert_eq!(stats["dropped"], 0, "{stats}");
    let late_ms = stats["late_max_ns"].as_u64().expect("late") as f64 / 1e6;
    let lo = 2.0 * d_ms + hold_ms;
    let hi = lo + idle[idle.len() - 1] + 4.0 * late_ms;
    // A burst of 10 takes about 10 x (2 D + hold) = 120 ms, within its 200 ms period: 10
    // bursts of 10 in 2 s (the last one may be cut by the end of the test).
    for (who, n) in [("linerate", ours_n), ("iperf2", their_n)] {
        assert!(
            (80..=110).contains(&n),
            "{who}: {n} exchanges, about 100 expected"
        );
    }
    assert!(
        ours_min >= lo,
        "linerate: an exchange of {ours_min} ms, under 2 D + hold = {lo} ms"
    );
    // iperf2 prints ms with three decimals.
    assert!(
        their_min >= lo - 0.001,
        "iperf2: an exchange of {their_min} ms under {lo} ms"
    );
    let in_bracket = |v: f64| v <= hi + 0.1;
    // The two runs are two samples of one path: their medians may also differ by the idle
    // path's own spread (ping's slowest less its fastest).
    let tol = 0.1 + 0.001 * ours_p50 + 2.0 * late_ms + (idle[idle.len() - 1] - idle[0]);
    let diff = (ours_p50 - their_p50).abs();
    let supported = match (in_bracket(ours_p50), in_bracket(their_p50)) {
        (true, false) => "linerate's (iperf2's is above the bracket)",
        (false, true) => "iperf2's (linerate's is above the bracket)",
        (true, true) => "both",
        (false, false) => "neither",
    };
    assert!(
        diff <= tol && in_bracket(ours_p50),
        "medians: linerate {ours_p50} ms, iperf2 {their_p50} ms (differ by {diff} ms, allowed {tol}); \
         ping and the delay line's counters bracket the median in [{lo}, {hi}] ms and support {supported}\n{text}"
    );
}
