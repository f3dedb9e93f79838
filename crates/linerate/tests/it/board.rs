//! The features draw the line between the core a board runs and the workstation's tools
//! (Cargo.toml): a tool's command is in `linerate --help` exactly when its feature is built,
//! and in a build without a tool, a core command's flag that needs it is refused with one
//! line that names the full build (exit 2). Both builds run these tests (scripts/test.sh).

use crate::common::bin;

/// The commands `linerate --help` lists.
fn commands() -> Vec<String> {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line starts two spaces in; its wrapped description further in.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn help_lists_the_core_and_the_tools_built() {
    let c = commands();
    for core in [
        "serve", "tcp", "udp", "rr", "compare", "demo", "rfc2544", "doctor",
    ] {
        assert!(c.iter().any(|x| x == core), "{core} missing from {c:?}");
    }
    for (tool, built) in [
        ("lab", cfg!(feature = "lab")),
        ("analyze", cfg!(feature = "analyze")),
        ("sweep", cfg!(feature = "sweep")),
        ("campaign", cfg!(feature = "sweep")),
        ("history", cfg!(feature = "store")),
        ("check", cfg!(feature = "store")),
        ("report", cfg!(feature = "report")),
    ] {
        assert_eq!(c.iter().any(|x| x == tool), built, "{tool} in {c:?}");
    }
}

#[test]
#[cfg(not(all(
    feature = "analyze",
    feature = "chart",
    feature = "store",
    feature = "hooks"
)))]
fn a_missing_tool_is_refused_with_one_line_naming_the_full_build() {
    use crate::common::run_usage_error;
    let mut cases: Vec<(Vec<&str>, &str)> = Vec::new();
    if !cfg!(feature = "analyze") {
        cases.push((
            vec!["tcp", "127.0.0.1", "--capture", "x.pcap"],
            "--capture needs linerate's `analyze` feature",
        ));
    }
    if !cfg!(feature = "chart") {
        cases.push((
            vec![
                "rfc2544",
                "127.0.0.1",
                "--line-rate",
                "1G",
                "--chart",
                "x.svg",
            ],
            "--chart needs linerate's `chart` feature",
        ));
        cases.push((
            vec![
                "tcp",
                "127.0.0.1",
                "--profile",
                "--profile-callchains",
                "--profile-out",
                "d",
            ],
            "--profile-out needs linerate's `chart` feature",
        ));
    }
    if !cfg!(feature = "hooks") {
        cases.push((
            vec!["serve", "--hooks", "hooks.toml"],
            "--hooks needs linerate's `hooks` feature",
        ));
    }
    if !cfg!(feature = "store") {
        cases.push((
            vec!["compare", "1", "2"],
            "a stored run id (1) needs linerate's `store` feature",
        ));
        // Absent from the core's command line.
        cases.push((vec!["tcp", "127.0.0.1", "--db", "x.db"], "'--db'"));
    }
    for (args, needle) in &cases {
        let err = run_usage_error(args);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        if needle.contains("feature") {
            assert!(err.contains("cargo build -p linerate"), "{args:?}: {err}");
        }
    }
}

/// The bound on `serve`'s memory on a board: its peak resident set while it serves
/// one TCP test, at most 8 MiB.
const SERVE_PEAK_RSS_MAX_KIB: u64 = 8 * 1024;

/// A field of /proc/PID/status in KiB ("VmHWM:     5328 kB").
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `serve`'s peak resident set (VmHWM, read from /proc outside linerate) while a `linerate
/// tcp` client runs one 2-second test against it stays within the 8 MiB. Less its
/// resident executable pages (RssFile, an unoptimised test build's text is several times
/// a release build's and is not the server's memory): what the server allocates, its
/// stacks and buffers. scripts/sizes.sh measures the whole VmHWM of the board's release
/// build (docs/PERFORMANCE.md).
#[test]
fn serve_peak_memory_for_one_tcp_test_is_within_8_mib() {
    use std::io::Read;
    let mut child = bin()
        .args(["serve", "--bind", "127.0.0.1", "-p", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = Vec::new();
    let stderr = child.stderr.as_mut().unwrap();
    let mut b = [0u8; 1];
    while stderr.read_exact(&mut b).is_ok() && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8_lossy(&line).into_owned();
    let port: String = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
        .to_string();
    let pid = child.id();
    let before_kib = status_kib(pid, "VmHWM:");
    let out = bin()
        .args(["tcp", "127.0.0.1", "-p", &port, "-t", "2", "--json"])
        .output()
        .unwrap();
    let peak_kib = status_kib(pid, "VmHWM:");
    let file_kib = status_kib(pid, "RssFile:");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The test ran: the server received what the client sent.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rx = v["server"]["totals"]["rx_bytes"].as_u64().unwrap_or(0);
    assert!(rx > 0, "the server received nothing: {v}");
    assert_eq!(Some(rx), v["client"]["totals"]["tx_bytes"].as_u64());
    assert!(
        peak_kib >= before_kib,
        "VmHWM fell: {before_kib} -> {peak_kib}"
    );
    let own_kib = peak_kib.saturating_sub(file_kib);
    assert!(
        own_kib <= SERVE_PEAK_RSS_MAX_KIB,
        "serve's peak resident set less its executable's pages: {own_kib} KiB (VmHWM {peak_kib} KiB, RssFile {file_kib} KiB), above {SERVE_PEAK_RSS_MAX_KIB} KiB"
    );
}

/// Without the `dns` feature (the board's core) a host name is looked up in /etc/hosts
/// alone: a name that is not there is one line that says so, exit code 2, and nothing is
/// sent anywhere. (With `dns` the same name would go to the machine's DNS servers, so the
/// full build does not run this.)
#[cfg(not(feature = "dns"))]
#[test]
fn a_host_name_missing_from_etc_hosts_is_one_line_and_exit_2() {
    for cmd in [
        &["tcp", "no-such-host.invalid", "-t", "1"][..],
        &["rfc2544", "no-such-host.invalid", "--line-rate", "1G"][..],
    ] {
        let out = bin().args(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains("no-such-host.invalid") && err.contains("/etc/hosts"),
            "{err}"
        );
    }
}
