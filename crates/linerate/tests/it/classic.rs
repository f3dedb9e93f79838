//! The classic formats in scripts, as XAPP1127's scripts use netperf: run over rsh (stdout
//! and stderr merged), then cut with sed and awk. The classic block comes first, `-q`
//! leaves it alone, and the columns hold the figures the awk lines pick.

use std::process::Command;

use crate::common::TestServer;

/// `linerate CMD 127.0.0.1 -p PORT ARGS 2>&1 | PIPELINE` through sh, as a script run over
/// rsh sees it; returns the pipeline's output.
#[track_caller]
fn merged(srv: &TestServer, cmd: &str, args: &[&str], pipeline: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_linerate");
    let line = format!(
        "'{bin}' {cmd} 127.0.0.1 -p {} {} 2>&1 | {pipeline}",
        srv.addr.port(),
        args.join(" ")
    );
    let out = Command::new("sh").arg("-c").arg(&line).output().unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn number(s: &str) -> f64 {
    s.trim()
        .parse()
        .unwrap_or_else(|e| panic!("not a number ({e}): {s:?}"))
}

#[test]
fn netperf_tcp_row_survives_stderr_merged_into_stdout() {
    let srv = TestServer::start();
    let args = ["-t", "0.5", "-l", "64K", "--format", "netperf"];
    // The first line is netperf's banner, whatever linerate has to say on stderr.
    let first = merged(&srv, "tcp", &args, "head -n 1");
    assert!(first.starts_with("MIGRATED TCP STREAM TEST"), "{first}");
    // `sed '1,6d' | awk '{print $5}'`: the first value is the throughput; what follows (on
    // stderr, merged) is `# linerate:` comment lines.
    let out = merged(&srv, "tcp", &args, "sed '1,6d'");
    let mut lines = out.lines();
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row.len(), 9, "{out}");
    assert_eq!(row[2], "65536", "{out}");
    assert!(number(row[4]) > 0.0, "{out}");
    assert!(lines.all(|l| l.starts_with("# linerate: ")), "{out}");
    // -q: the classic block alone, so the script's awk line yields exactly one figure.
    let q = merged(
        &srv,
        "tcp",
        &[&args[..], &["-q"]].concat(),
        "sed '1,6d' | awk '{print $5}'",
    );
    assert_eq!(q.lines().count(), 1, "{q}");
    assert!(number(&q) > 0.0, "{q}");
    let all = merged(&srv, "tcp", &[&args[..], &["-q"]].concat(), "cat");
    assert_eq!(all.lines().count(), 7, "{all}");
}

#[test]
fn netperf_udp_rows_have_netperfs_errors_column_and_consistent_figures() {
    let srv = TestServer::start();
    let args = [
        "-t", "0.5", "-b", "20M", "-l", "1400", "--format", "netperf", "-q",
    ];
    let out = merged(&srv, "udp", &args, "cat");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("MIGRATED UDP STREAM TEST"), "{out}");
    // One run, cut by awk: the sender row (line 6: socket, message, elapsed, messages,
    // errors, throughput[, cpu...]) and the receiver row's messages (line 7).
    let cut = merged(
        &srv,
        "udp",
        &args,
        "awk 'NR==6 {print $2, $3, $4, $5, $6} NR==7 {print $3}'",
    );
    let v: Vec<f64> = cut.split_whitespace().map(number).collect();
    assert_eq!(v.len(), 6, "{cut}");
    let (size, elapsed, sent, errors, tput, received) = (v[0], v[1], v[2], v[3], v[4], v[5]);
    assert_eq!(size, 1400.0);
    assert_eq!(errors, 0.0, "no send failed: Errors 0, as netperf prints");
    // messages × size × 8 / elapsed is the printed throughput (elapsed is rounded to 10 ms).
    let lo = sent * size * 8.0 / (elapsed + 0.005) / 1e6;
    let hi = sent * size * 8.0 / (elapsed - 0.005) / 1e6;
    assert!(
        tput >= lo - 0.1 && tput <= hi + 0.1,
        "{tput} not in {lo}..{hi}: {cut}"
    );
    // The receiver got at most what was sent.
    assert!(received <= sent, "{received} received of {sent}");
}

#[test]
fn ttcp_units_and_lines_in_a_merged_pipeline() {
    let srv = TestServer::start();
    let args = ["-n", "16M", "-l", "8K", "--format", "ttcp", "-f", "m"];
    let first = merged(&srv, "tcp", &args, "head -n 1");
    assert!(
        first.starts_with("ttcp-t: buflen=8192, nbuf=2048"),
        "{first}"
    );
    // `grep 'ttcp-r.*real seconds' | awk '{print $2, $9, $10}'`.
    let r = merged(
        &srv,
        "tcp",
        &args,
        "grep 'ttcp-r:.*real seconds' | awk '{print $2, $5, $9, $10}'",
    );
    let f: Vec<&str> = r.split_whitespace().collect();
    assert_eq!(f.len(), 4, "{r}");
    assert_eq!(f[0], "16777216");
    assert_eq!(f[3], "Mbit/sec");
    // ttcp's Mbit: bytes × 8 / 1024² / real seconds (printed rounded to 10 ms).
    let mbit = 16_777_216.0 * 8.0 / 1024.0 / 1024.0;
    let real = number(f[1]);
    let (lo, hi) = (mbit / (real + 0.005), mbit / (real - 0.005).max(0.0005));
    let rate = number(f[2]);
    assert!(
        rate >= lo - 0.01 && rate <= hi + 0.01,
        "{rate} not in {lo}..{hi}: {r}"
    );
    let q = merged(&srv, "tcp", &[&args[..], &["-q"]].concat(), "cat");
    assert_eq!(q.lines().count(), 8, "{q}");
    assert!(q.lines().all(|l| l.starts_with("ttcp-")), "{q}");
}

#[test]
fn ttcp_udp_says_what_its_io_calls_count() {
    let srv = TestServer::start();
    let args = ["-n", "14M", "-l", "1400", "-b", "200M", "--format", "ttcp"];
    let out = merged(&srv, "udp", &args, "cat");
    let tline = out
        .lines()
        .find(|l| l.starts_with("ttcp-t:") && l.contains("I/O calls"))
        .unwrap_or_else(|| panic!("{out}"));
    let calls: u64 = tline.split_whitespace().nth(1).unwrap().parse().unwrap();
    let nbuf: u64 = out
        .lines()
        .next()
        .and_then(|l| l.split("nbuf=").nth(1))
        .and_then(|r| r.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    // Batched sends: fewer calls than datagrams, and the note says how many each carried.
    if calls < nbuf {
        let note = out
            .lines()
            .find(|l| l.starts_with("# linerate: note: ttcp-t: the "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(
            note.contains(&format!(
                "the {calls} I/O calls are system calls that carried {nbuf} datagrams"
            )),
            "{note}"
        );
    }
}

#[test]
fn repeated_netperf_prints_one_averaged_block_and_ttcp_an_average_line() {
    let srv = TestServer::start();
    let args = ["-t", "0.3", "--repeat", "2", "--format", "netperf", "-q"];
    let out = merged(&srv, "tcp", &args, "cat");
    assert_eq!(out.matches("MIGRATED").count(), 1, "{out}");
    assert_eq!(out.lines().count(), 7, "{out}");
    let each = merged(&srv, "tcp", &[&args[..], &["--each-run"]].concat(), "cat");
    assert_eq!(each.matches("MIGRATED").count(), 3, "{each}");
    // The mean's throughput lies between the two runs'.
    let tputs: Vec<f64> = each
        .lines()
        .filter(|l| l.split_whitespace().count() == 9 && !l.starts_with("Size"))
        .map(|l| number(l.split_whitespace().nth(4).unwrap()))
        .collect();
    assert_eq!(tputs.len(), 3, "{each}");
    let (lo, hi) = (tputs[0].min(tputs[1]), tputs[0].max(tputs[1]));
    assert!(tputs[2] >= lo - 0.01 && tputs[2] <= hi + 0.01, "{tputs:?}");

    let t = merged(
        &srv,
        "tcp",
        &[
            "-n", "1M", "-l", "8K", "--repeat", "2", "--format", "ttcp", "-q",
        ],
        "cat",
    );
    assert_eq!(t.matches("ttcp-t: 1048576 bytes in").count(), 2, "{t}");
    assert!(t.contains("ttcp-t: average of 2 runs = "), "{t}");
    assert!(t.contains("ttcp-r: average of 2 runs = "), "{t}");
}
