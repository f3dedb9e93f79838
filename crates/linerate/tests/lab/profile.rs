//! `--profile` against its witness: Debian's `perf record -e cpu-clock -a` recording the same
//! workload (a TCP stream over loopback, both ends on CPU 0) at another rate; over the
//! stream's time, linerate's top five kernel functions must have the shares `perf report
//! --sort sym` gives them within a few points, and the copy must be one of the two largest
//! categories in both. And a user who may not profile gets the test without a profile and one
//! line saying what to change.

use std::collections::HashMap;
use std::process::Command;

use linerate_wire::profile::Category;

use crate::common::{self, TestServer};

/// Largest difference allowed between linerate's share of a function and perf's, points of
/// the busy samples (issue 15's "a few points"). perf's samples are cut to the stream
/// thread's first and last sample, linerate's to its measured window, and the two samplers
/// run at once on the same CPUs (at different rates, see below). With both ends on one CPU
/// and the windows matched, the top five differed by at most 1.7 points in 9 runs on this
/// VM, 3 of them beside a busy loop. (Unpinned and over perf's whole record they were up
/// to 6 points apart here and 11 in CI: see the test.) scripts/test.sh still runs this test
/// on its own, after the other lab tests.
const MAX_POINTS: f64 = 5.0;

/// `perf report --stdio --sort sym -n` lines: `  12.34%  1234  [k] name`, kernel ones only.
pub(crate) fn perf_kernel_shares(report: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for line in report.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(p), Some(_n), Some(kind)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Some(p) = p.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) else {
            continue;
        };
        if kind != "[k]" {
            continue;
        }
        let name: Vec<&str> = it.collect();
        *out.entry(name.join(" ")).or_default() += p;
    }
    out
}

/// `perf ARGS -i DATA`'s standard output, checked for success.
fn perf_read(args: &[&str], data: &std::path::Path) -> String {
    let out = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(data)
        .output()
        .expect("perf from linux-perf (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The times of the first and last sample of the threads named `comm` in `data` (`perf
/// script`, seconds on perf's clock, as `perf report --time` takes them).
fn perf_comm_span(data: &std::path::Path, comm: &str) -> (f64, f64) {
    let times: Vec<f64> = perf_read(&["script", "-F", "comm,time"], data)
        .lines()
        .filter_map(|l| {
            let (c, t) = l.trim().rsplit_once(char::is_whitespace)?;
            (c.trim() == comm).then_some(())?;
            t.trim_end_matches(':').parse().ok()
        })
        .collect();
    assert!(!times.is_empty(), "perf has no sample of {comm}");
    let first = times.iter().copied().fold(f64::INFINITY, f64::min);
    let last = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (first, last)
}

#[test]
#[ignore = "needs root: sampling every CPU, perf record -a"]
fn the_top_kernel_functions_agree_with_perf_and_the_copy_is_a_leading_category() {
    let srv = TestServer::with(|c| c.allow_profile = true);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let port = srv.addr.port().to_string();
    let out = Command::new("perf")
        // Not linerate's 999 Hz: two timers of one period keep one phase for the whole run,
        // so one profiler would always sample just after the other's interrupt.
        .args(["record", "-q", "-e", "cpu-clock", "-a", "-F", "773", "-o"])
        .arg(&data)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "3",
            // Both ends on CPU 0, which the stream then keeps busy all the time. Unpinned, the
            // receiver's CPU of this VM halts between bursts, and its timer interrupts then
            // come late or not at all: one run's CPU 1 gave linerate's sampler 615 of its
            // 3000 ticks, the server's 1438 and perf 1208 of 2500, while CPU 0 gave all of
            // them to each. Each profiler then weighs the two CPUs' work differently, the
            // sender's copy against the receiver's, and the shares drifted 6 points apart
            // (linerate warns when that happens: see `uneven_sampling_is_warned_of`).
            "-A",
            "0,0",
            "--profile",
            "--json",
        ])
        .env("LINERATE_NO_STORE", "1")
        .output()
        .expect("perf from linux-perf (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p: linerate_wire::profile::ProfileReport =
        serde_json::from_value(rec["client"]["profile"].clone()).expect("client profile");
    assert_eq!(p.check(), Ok(()));
    // perf's samples of the stream's time only, as linerate's window is: perf records the
    // client's whole life, and its start (the server opening its samplers) and end (both
    // ends reading /proc/kallsyms and resolving their samples, some 0.5 s of CPU beside a 3 s
    // stream, more on a busy machine) diluted perf's shares by a tenth (the copy's 50 % of
    // linerate's busy samples was 43 to 46 % of perf's).
    let (first, last) = perf_comm_span(&data, "lr-stream-0");
    assert!(last - first > 2.5, "the stream ran {:.3} s", last - first);
    let window = format!("{first:.6},{last:.6}");
    let report = perf_read(
        &[
            "report",
            "--stdio",
            "--sort",
            "sym",
            "-n",
            "--percent-limit",
            "0",
            "--time",
            &window,
        ],
        &data,
    );
    let perf = perf_kernel_shares(&report);
    assert!(!perf.is_empty(), "perf report gave no kernel symbols");
    // linerate's top kernel functions, as shares of all its samples (perf's percentages
    // are of all samples, idle included). Lock slowpaths (contended spinning, not the
    // `_raw_spin_unlock_irqrestore` where interrupts-off time lands) are left out of the comparison:
    // with both profilers sampling the same CPUs at once they were seen to differ widely
    // (`__pv_queued_spin_lock_slowpath` 5.6 % in linerate's samples, 0.2 % in perf's, in
    // one CI run; within a point in others), which says how the two samplers' timers fall
    // against lock contention, not which functions the workload runs. They are printed.
    let is_slowpath = |f: &&linerate_wire::profile::FunctionShare| {
        f.category == Category::Locking && f.name.contains("slowpath")
    };
    let locks: Vec<String> = p
        .top
        .iter()
        .filter(|f| is_slowpath(f))
        .map(|f| {
            format!(
                "{} {:.2}%",
                f.name,
                f.samples as f64 * 100.0 / p.samples as f64
            )
        })
        .collect();
    eprintln!("lock slowpaths, not compared: {locks:?}");
    let kernel: Vec<_> = p
        .top
        .iter()
        .filter(|f| !f.name.starts_with('[') && !is_slowpath(f))
        .take(5)
        .collect();
    assert_eq!(kernel.len(), 5, "{:?}", p.top);
    // Shares of the busy samples on both sides: perf's percentages are of all its samples,
    // CPU 1's idle ones included (linerate's are of its busy samples).
    let perf_idle: f64 = perf
        .iter()
        .filter(|(n, _)| linerate::model::profile::is_idle(n))
        .map(|(_, s)| s)
        .sum();
    assert!(
        perf_idle < 95.0,
        "perf saw an idle machine: {perf_idle:.1}% idle"
    );
    let mut compared = Vec::new();
    for f in &kernel {
        let ours = f.busy_percent;
        let name = f.name.split(' ').next().unwrap();
        let theirs = perf.get(name).copied().unwrap_or(0.0) * 100.0 / (100.0 - perf_idle);
        compared.push(format!("{name}: linerate {ours:.2}% perf {theirs:.2}%"));
        assert!(
            (ours - theirs).abs() <= MAX_POINTS,
            "{name}: linerate {ours:.2}% of busy samples, perf {theirs:.2}%; {compared:?}"
        );
    }
    eprintln!("linerate against perf: {compared:?}");
    // A TCP stream over loopback copies every byte twice (send and receive): the copy is
    // one of the two largest kernel categories, in linerate's profile and in perf's samples
    // grouped by the same rules. Which of the two leads, the copy or TCP/IP, changes from
    // run to run (CI saw TCP/IP 23.3 % against the copy's 21.6 %), so the test does not
    // claim it. (The single top function need not be a copy: cpu-clock is a timer
    // interrupt, so time with interrupts off is counted where they come back on,
    // `_raw_spin_unlock_irqrestore` on this VM; perf shows the same.)
    // Locking is left out of that ranking: on this VM the interrupts-off time that lands in
    // `_raw_spin_unlock_irqrestore` (15-25 % of the samples across runs, in both profilers)
    // can put "locking" above the copy without any lock being contended.
    let ours_top2: Vec<Category> = p
        .categories
        .iter()
        .filter(|c| c.category != Category::UserSpace && c.category != Category::Locking)
        .take(2)
        .map(|c| c.category)
        .collect();
    assert!(
        ours_top2.contains(&Category::DataCopy),
        "{:?}",
        p.categories
    );
    assert!(
        kernel
            .iter()
            .take(3)
            .any(|f| f.category == Category::DataCopy),
        "{kernel:?}"
    );
    let mut perf_cats: HashMap<Category, f64> = HashMap::new();
    // perf's percentages include the idle loop; linerate's categories are of busy samples.
    for (name, share) in perf
        .iter()
        .filter(|(n, _)| !linerate::model::profile::is_idle(n))
    {
        *perf_cats
            .entry(linerate::model::profile::categorize(name))
            .or_default() += share;
    }
    let mut perf_ranked: Vec<(Category, f64)> = perf_cats
        .iter()
        .filter(|(c, _)| **c != Category::Locking && **c != Category::UserSpace)
        .map(|(c, s)| (*c, *s))
        .collect();
    perf_ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert!(
        perf_ranked
            .iter()
            .take(2)
            .any(|(c, _)| *c == Category::DataCopy),
        "perf's kernel samples by category: {perf_ranked:?}"
    );
}

#[test]
#[ignore = "needs root: runs the client as the user nobody"]
fn a_user_who_may_not_profile_gets_the_test_and_one_line_on_what_to_change() {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
    let paranoid: i32 = paranoid.trim().parse().unwrap();
    assert!(
        paranoid >= 1,
        "this test needs kernel.perf_event_paranoid >= 1, not {paranoid}"
    );
    let srv = TestServer::with(|c| c.allow_profile = true);
    let port = srv.addr.port().to_string();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "0.5",
            "--profile",
            "--json",
        ])
        .env("LINERATE_NO_STORE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The test ran and measured.
    assert!(rec["client"]["totals"]["tx_bytes"].as_u64().unwrap() > 0);
    // This end: no profile, one warning naming the sysctl.
    assert!(rec["client"]["profile"].is_null());
    let warnings = rec["client"]["warnings"].as_array().unwrap();
    let w: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("--profile"))
        .collect();
    assert_eq!(w.len(), 1, "{warnings:?}");
    assert!(
        w[0].contains("sysctl kernel.perf_event_paranoid=-1"),
        "{}",
        w[0]
    );
    assert!(!w[0].contains('\n'));
    // The server (root, --allow-profile) profiled itself all the same.
    assert!(rec["server"]["profile"].is_object());
}

/// The kernel work of a forwarded UDP stream: the categories its frames cross.
const NETWORK: [Category; 6] = [
    Category::Udp,
    Category::TcpIp,
    Category::DriverNapi,
    Category::Softirq,
    Category::DataCopy,
    Category::Memory,
];

/// Largest difference, in points, allowed between two shares of the same window drawn by two
/// samplers: 4.5 standard errors of the difference of two sampled proportions (`n_a` and
/// `n_b` samples, the pooled share), so chance fails the test about once in 150,000 runs,
/// while a sampler that sees another window or mislabels its stacks still fails it. With some
/// 250 samples each and a share near 75 % that is about 17 points; five runs of the matched
/// windows were 1 to 12 points apart.
fn max_share_points(share_a: f64, n_a: u64, share_b: f64, n_b: u64) -> f64 {
    let (a, b) = (n_a as f64, n_b as f64);
    let p = (share_a * a + share_b * b) / 100.0 / (a + b);
    4.5 * 100.0 * (p * (1.0 - p) * (1.0 / a + 1.0 / b)).sqrt()
}

/// `perf report --sort comm` of `data`: the thread names of linerate's processes
/// (`linerate` and its `lr-*` threads).
fn perf_linerate_comms(data: &std::path::Path) -> Vec<String> {
    perf_read(&["report", "--stdio", "--sort", "comm", "-n"], data)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .filter(|c| c == "linerate" || c.starts_with("lr-"))
        .collect()
}

/// Kernel samples of `comms` in `data` by function (`perf report --sort sym -n`, counts).
fn perf_kernel_counts(
    data: &std::path::Path,
    comms: &[String],
    window: &str,
) -> HashMap<String, u64> {
    let comms = comms.join(",");
    let report = perf_read(
        &[
            "report",
            "--stdio",
            "--sort",
            "sym",
            "-n",
            "--percent-limit",
            "0",
            "--comms",
            &comms,
            "--time",
            window,
        ],
        data,
    );
    let mut counts = HashMap::new();
    for line in report.lines() {
        let mut it = line.split_whitespace();
        let (Some(_), Some(n), Some("[k]")) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let name: Vec<&str> = it.collect();
        *counts.entry(name.join(" ")).or_default() += n;
    }
    counts
}

/// Where a sample lands when the timer interrupt that takes it was held off: a `cpu-clock`
/// sample due while interrupts (or preemption) are disabled is taken when they are enabled
/// again, in `_raw_spin_unlock_irqrestore`, `_raw_spin_unlock_irq`, `finish_task_switch` or
/// an interrupt's exit. Which of these a sampler's ticks meet depends on its timer's phase
/// against the work, not on the work: over one CI run linerate's 999 Hz sampler put 26 of a
/// window's 291 samples in `finish_task_switch` where perf's 773 Hz put 2 of 213 there, and
/// perf 29 in `_raw_spin_unlock_irqrestore` to linerate's 18. Counted, they moved the two
/// network shares up to 22 points apart in opposite directions from run to run (CI failed
/// once on 62 % against 84 %); left out of both, the shares of the work that was sampled
/// where it ran agree.
const HELD_OFF: [Category; 3] = [Category::Locking, Category::Scheduler, Category::Interrupts];

/// The network categories' share of `counts` (kernel function → samples), and the samples
/// counted. Idle is left out, and so is `other`: linerate reads /proc/kallsyms right after
/// each trial (`s_show`, `seq_printf`, `vsnprintf`, ...), and a window's edge in perf's
/// record, cut to the microsecond, may hold the start of it; and so are the categories where
/// held-off samples land ([`HELD_OFF`]).
fn network_share<'a>(counts: impl Iterator<Item = (&'a str, u64)>) -> (f64, u64) {
    let (mut net, mut all) = (0u64, 0u64);
    for (name, n) in counts {
        let category = linerate::model::profile::categorize(name);
        if linerate::model::profile::is_idle(name)
            || category == Category::Other
            || HELD_OFF.contains(&category)
        {
            continue;
        }
        all += n;
        if NETWORK.contains(&category) {
            net += n;
        }
    }
    let share = if all == 0 {
        0.0
    } else {
        net as f64 * 100.0 / all as f64
    };
    (share, all)
}

/// `rfc2544 --profile` through a router lab: each end's profile kept at the throughput rate
/// has samples (no more than the clock allows), and linerate's own kernel time in it goes
/// mostly to the network path (the AF_PACKET send, the veth driver, IP forwarding in the
/// router, UDP receive, the copies); `perf record -e cpu-clock -a` at 773 Hz (see the test
/// above for why not 999) is the witness: over linerate's threads it must
/// give the network about the same share. (Functions are not compared by name: perf and
/// /proc/kallsyms name aliases at one address differently, `memcpy` and `__pi_memcpy`.)
/// The profiles are of the whole host (the router is a namespace of the same kernel, and CI
/// runs other work beside), so the comparison is of linerate's stacks only. perf records the
/// whole run with `-k CLOCK_MONOTONIC`, the clock linerate stamps its samples with, and each
/// end's share is compared with perf's over that end's window (`start_monotonic_ns`,
/// `duration_ns`; `perf report --time`). Compared over the whole run instead (the learning
/// trial, the search trial and the reading of /proc/kallsyms after each in perf's window, not
/// in linerate's) the two were up to 15 points apart and the test failed in CI.
#[test]
#[ignore = "needs root: network namespaces, sampling every CPU, perf record -a"]
fn lab_rfc2544_profile_at_the_throughput_rate_agrees_with_perf() {
    let _serial = crate::rfc2544::serial();
    let lab = linerate_lab::Lab::router(
        &common::lab_name("lrfg", "p"),
        &linerate_lab::LabOptions::default(),
    )
    .expect("lab up (needs root)");
    let b = lab.addr("b").unwrap().to_string();
    let mut cmd = lab.command("b", env!("CARGO_BIN_EXE_linerate")).unwrap();
    cmd.args(["serve", "--bind", &b, "-q", "--allow-profile"]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _srv = common::LabServer::spawn(cmd);
    crate::rfc2544::wait_for_quiet();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let out_dir = dir.path().join("out");
    let out = lab
        .exec(
            "a",
            &[
                "perf",
                "record",
                "-q",
                "-e",
                "cpu-clock",
                "-k",
                "CLOCK_MONOTONIC",
                "-a",
                "-F",
                "773",
                "-o",
                data.to_str().unwrap(),
                "--",
                env!("CARGO_BIN_EXE_linerate"),
                "rfc2544",
                b.as_str(),
                "--line-rate",
                "200M",
                "--frame-sizes",
                "1518",
                "--test",
                "throughput",
                "--trial-time",
                "0.5",
                "--confirm-time",
                "3",
                "--settle",
                "0.1",
                "--calibrate-time",
                "0",
                "--profile",
                "--profile-callchains",
                "--profile-out",
                out_dir.to_str().unwrap(),
                "--json",
            ],
        )
        .expect("perf record of linerate rfc2544 in the lab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let size = &rec["frame_sizes"][0];
    let kept = &size["profile"];
    // 200 Mbit/s of 1518-byte frames through an unshaped router: found and confirmed.
    let fps = size["throughput"]["goals"][0]["throughput_fps"]
        .as_f64()
        .expect("a throughput rate");
    assert_eq!(kept["at_throughput"], true, "{kept}");
    assert_eq!(kept["purpose"], "confirmation");
    assert!(kept["offered_fps"].as_f64().unwrap() >= fps * (1.0 - 1e-9));
    let comms = perf_linerate_comms(&data);
    assert!(!comms.is_empty(), "perf saw no linerate thread");
    for end in ["client", "server"] {
        let p: linerate_wire::profile::ProfileReport =
            serde_json::from_value(kept[end].clone()).expect(end);
        assert_eq!(p.check(), Ok(()));
        // perf's samples of the same window: both are stamped with CLOCK_MONOTONIC.
        let start_ns = p.start_monotonic_ns.expect("the window's start");
        let first = start_ns as f64 / 1e9;
        let last = (start_ns + p.duration_ns) as f64 / 1e9;
        let window = format!("{first:.6},{last:.6}");
        let perf = perf_kernel_counts(&data, &comms, &window);
        let (perf_network, perf_n) = network_share(perf.iter().map(|(k, v)| (k.as_str(), *v)));
        assert!(p.busy_samples() > 0, "{end}: {p:?}");
        // The 3 s confirmation's window, sampled at 999 Hz on every CPU: never more samples
        // than the clock gives (on this VM 65 to 100 % of them arrive).
        let secs = p.duration_ns as f64 / 1e9;
        assert!(secs > 2.5 && secs < 3.6, "{end}: {secs} s");
        let clock = 999.0 * secs * p.per_cpu.len() as f64;
        assert!(
            p.samples as f64 > clock * 0.3 && (p.samples as f64) < clock * 1.2 + 5.0,
            "{end}: {} samples, the clock gives {clock:.0}",
            p.samples
        );
        // linerate's kernel stacks, by their innermost frame.
        let mut ours: HashMap<&str, u64> = HashMap::new();
        for f in &p.folded {
            let mut frames = f.stack.split(';');
            if frames.next() != Some("linerate") {
                continue;
            }
            let leaf = f.stack.rsplit(';').next().unwrap();
            if !leaf.starts_with('[') {
                *ours.entry(leaf).or_default() += f.samples;
            }
        }
        let (network, n) = network_share(ours.iter().map(|(k, v)| (*k, *v)));
        let busiest = ours
            .iter()
            .filter(|(k, _)| NETWORK.contains(&linerate::model::profile::categorize(k)))
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(k, _)| k.to_string())
            .expect("a network function in linerate's stacks");
        eprintln!(
            "{end}: network {network:.1}% of linerate's {n} kernel samples, perf {perf_network:.1}% of {perf_n}; busiest {busiest} (perf: {:?})",
            perf.get(&busiest)
        );
        assert!(n >= 50, "{end}: only {n} kernel samples of linerate");
        assert!(
            perf_n >= 50,
            "{end}: perf has only {perf_n} kernel samples of linerate"
        );
        assert!(network >= 50.0, "{end}: network {network:.1}%: {ours:?}");
        let max_points = max_share_points(network, n, perf_network, perf_n);
        assert!(
            (network - perf_network).abs() <= max_points,
            "{end}: network {network:.1}% of linerate's {n} kernel samples, perf {perf_network:.1}% of {perf_n} (at most {max_points:.1} points apart)"
        );
        assert!(
            p.category_percent(Category::Udp) > 0.0
                && p.category_percent(Category::DriverNapi) > 0.0,
            "{end}: {:?}",
            p.categories
        );
        // The flame graph draws every busy sample of the folded stacks.
        let drawn = common::check_flame_graph(&out_dir, &format!("1518B-{end}"));
        assert_eq!(drawn, p.busy_samples());
    }
}
