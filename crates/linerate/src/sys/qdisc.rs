//! The root egress qdisc of an interface and the rate it shapes to, read with `tc`.
//!
//! A `tbf` or `htb` root qdisc on the interface that carries a test holds the test's
//! traffic to a rate no interface speed shows (veth always says 10 Gbit/s). Reading it lets
//! the diagnosis call a shaped link full without the `--link-rate` hint.
//!
//! # Why `tc` and not netlink
//!
//! The Rust rtnetlink crates (netlink-packet-route) decode tc messages but not the tbf or
//! htb options (`TCA_TBF_PARMS`, `TCA_HTB_INIT`, `TCA_HTB_PARMS` and their 64-bit rates
//! come back as raw bytes), so reading them over netlink means decoding kernel structs by
//! hand. `tc` (iproute2) decodes them and is on every host that can shape. It runs as a
//! child process, which inherits the calling thread's network namespace, so it sees the
//! interfaces the test used (`ip netns exec`, or a thread that entered a namespace).
//! Qdiscs are read as JSON (`tc -j qdisc show`, iproute2 4.13 and later; rates in bytes per
//! second); classes as text (`tc class show`: iproute2 6.1 has no JSON for classes; rates
//! like `30Mbit`).
//!
//! # What counts as the shaped rate
//!
//! * `tbf`: its `rate`.
//! * `htb`: traffic no filter classifies goes to the qdisc's `default` class; its rate is
//!   bounded by its own `ceil` and every ancestor's, so the smallest `ceil` on the way to the
//!   root. With no default class (`default 0`) unclassified traffic bypasses the classes
//!   unshaped, and whether the test's traffic is classified depends on filters, which are
//!   not evaluated: nothing is claimed (a rate the test may not pass through would make the
//!   diagnosis call an unshaped link full).
//! * Any other root qdisc: no shaped rate (its kind is still recorded).
//!
//! Rates are returned in bits per second.
//!
//! # Failure
//!
//! A missing `tc`, a failed or slow run (over [`TC_TIMEOUT`]) or output that does not parse
//! gives `None` without a warning: a host without shaping, or without iproute2, is normal.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// Longest time one `tc` run may take before it is killed and ignored.
pub const TC_TIMEOUT: Duration = Duration::from_secs(2);

/// Where `tc` is looked for after `PATH`.
const TC_FALLBACKS: &[&str] = &["/usr/sbin/tc", "/sbin/tc"];

/// The root egress qdisc of an interface and its shaped rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootQdisc {
    /// `tc`'s name of its kind ("noqueue", "fq_codel", "tbf", "htb", ...).
    pub kind: String,
    /// The rate it shapes to, bits per second (see the module docs).
    pub shaped_rate_bps: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct QdiscJson {
    kind: String,
    #[serde(default)]
    handle: Option<String>,
    #[serde(default)]
    root: bool,
    #[serde(default)]
    options: Option<QdiscOptions>,
}

#[derive(Debug, Default, Deserialize)]
struct QdiscOptions {
    /// tbf: bytes per second.
    #[serde(default)]
    rate: Option<u64>,
    /// htb: the default class's minor number, hexadecimal ("0x1").
    #[serde(default)]
    default: Option<String>,
}

/// One class line of `tc class show dev IF`, e.g.
/// `class htb 1:20 parent 1:1 prio 0 rate 20Mbit ceil 30Mbit burst 1600b cburst 1593b`.
#[derive(Debug, Clone, PartialEq)]
struct ClassLine {
    kind: String,
    handle: String,
    /// `None` for a root class.
    parent: Option<String>,
    /// bits per second.
    ceil_bps: Option<u64>,
}

/// Parses a rate as `tc` prints it: an integer (or decimal) and `bit`, `Kbit`, `Mbit`,
/// `Gbit`, `Tbit` (SI) or `Kibit`, `Mibit`, `Gibit`, `Tibit` (IEC, with `-iec`).
fn parse_tc_rate(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit {
        "bit" => 1.0,
        "Kbit" => 1e3,
        "Mbit" => 1e6,
        "Gbit" => 1e9,
        "Tbit" => 1e12,
        "Kibit" => 1024.0,
        "Mibit" => 1024.0 * 1024.0,
        "Gibit" => 1024.0 * 1024.0 * 1024.0,
        "Tibit" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bps = n * mult;
    (bps.is_finite() && bps >= 0.0 && bps < u64::MAX as f64).then(|| bps.round() as u64)
}

/// Parses `tc class show dev IF` (text: iproute2 6.1 prints classes as text even with
/// `-j`). Lines that are not `class KIND HANDLE ...` (statistics with `-s`) are skipped.
fn parse_classes(text: &str) -> Vec<ClassLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let [first, kind, handle, rest @ ..] = t.as_slice() else {
            continue;
        };
        if *first != "class" {
            continue;
        }
        let value_of = |key: &str| rest.windows(2).find(|w| w[0] == key).map(|w| w[1]);
        out.push(ClassLine {
            kind: kind.to_string(),
            handle: handle.to_string(),
            parent: value_of("parent").map(str::to_string),
            ceil_bps: value_of("ceil").and_then(parse_tc_rate),
        });
    }
    out
}

/// Parses `tc -j qdisc show dev IF`: the root qdisc's kind, its tbf rate (bits per second)
/// and, for htb, the default class's minor number (`None` for "0x0").
fn parse_root(json: &str) -> Result<(String, Option<u64>, Option<HtbDefault>), String> {
    let list: Vec<QdiscJson> =
        serde_json::from_str(json.trim()).map_err(|e| format!("tc qdisc JSON: {e}"))?;
    let root = list
        .into_iter()
        .find(|q| q.root)
        .ok_or_else(|| "tc qdisc JSON: no root qdisc".to_string())?;
    let opts = root.options.unwrap_or_default();
    let rate = match root.kind.as_str() {
        "tbf" => opts.rate.map(|r| r.saturating_mul(8)),
        _ => None,
    };
    let default = if root.kind == "htb" {
        let major = root
            .handle
            .as_deref()
            .and_then(|h| h.strip_suffix(':'))
            .map(str::to_string);
        let minor = opts
            .default
            .as_deref()
            .and_then(|d| u32::from_str_radix(d.trim_start_matches("0x"), 16).ok());
        major.map(|major| HtbDefault {
            major,
            minor: minor.filter(|&m| m != 0),
        })
    } else {
        None
    };
    Ok((root.kind, rate, default))
}

/// The htb root's handle major ("1") and default class minor (absent for 0).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HtbDefault {
    major: String,
    minor: Option<u32>,
}

/// The shaped rate (bits per second) of an htb tree from `tc class show dev IF`.
fn htb_rate(text: &str, d: &HtbDefault) -> Option<u64> {
    let classes: Vec<ClassLine> = parse_classes(text)
        .into_iter()
        .filter(|c| c.kind == "htb")
        .collect();
    // No default class: unclassified traffic is not shaped; filters are not evaluated.
    let minor = d.minor?;
    // tc prints class minors in hexadecimal: "1:1a".
    let mut handle = format!("{}:{minor:x}", d.major);
    let mut smallest: Option<u64> = None;
    // An htb tree is at most 8 levels deep (TC_HTB_MAXDEPTH); the cap keeps a malformed
    // parent chain from looping.
    for _ in 0..16 {
        let Some(c) = classes.iter().find(|c| c.handle == handle) else {
            break;
        };
        if let Some(ceil) = c.ceil_bps {
            smallest = Some(smallest.map_or(ceil, |s| s.min(ceil)));
        }
        match &c.parent {
            Some(p) => handle = p.clone(),
            None => break,
        }
    }
    smallest
}

/// Parses `tc -j qdisc show` and, for an htb root, `tc class show` (`None`: not
/// available) into a [`RootQdisc`].
pub fn parse_tc(qdiscs: &str, classes: Option<&str>) -> Result<RootQdisc, String> {
    let (kind, rate, default) = parse_root(qdiscs)?;
    let shaped_rate_bps = match (&default, classes) {
        (Some(d), Some(c)) => htb_rate(c, d),
        _ => rate,
    };
    Ok(RootQdisc {
        kind,
        shaped_rate_bps: shaped_rate_bps.filter(|&r| r > 0),
    })
}

/// Reads the root egress qdisc of `iface` in the calling thread's network namespace with
/// `tc -j`; `None` when `tc` is missing, fails, is slow or prints something unexpected.
pub fn read_root_qdisc(iface: &str) -> Option<RootQdisc> {
    super::iface::validate_ifname(iface).ok()?;
    let tc = tc_program()?;
    let qdiscs = run_with_timeout(&tc, &["-j", "qdisc", "show", "dev", iface], TC_TIMEOUT)?;
    let classes = if qdiscs.contains("\"htb\"") {
        run_with_timeout(&tc, &["class", "show", "dev", iface], TC_TIMEOUT)
    } else {
        None
    };
    parse_tc(&qdiscs, classes.as_deref()).ok()
}

/// `tc` from `PATH`, else from `/usr/sbin` or `/sbin` (often not in an unprivileged user's
/// `PATH`); `None` when iproute2 is not installed.
fn tc_program() -> Option<std::path::PathBuf> {
    program("tc", TC_FALLBACKS)
}

/// `name` from `PATH`, else the first of `fallbacks` that exists.
pub(crate) fn program(name: &str, fallbacks: &[&str]) -> Option<std::path::PathBuf> {
    let in_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    in_path
        .into_iter()
        .chain(fallbacks.iter().map(std::path::PathBuf::from))
        .find(|p| p.is_file())
}

/// Runs `program args`, returns its stdout when it exits 0 within `timeout`; kills it
/// otherwise. stdout is read on a helper thread so a full pipe cannot stall the child.
pub(crate) fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        // At most 1 MiB: one interface's qdiscs and classes are a few KiB.
        let _ = (&mut stdout).take(1 << 20).read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().ok()?;
    status
        .filter(|s| s.success())
        .and_then(|_| String::from_utf8(out).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real output of iproute2 6.1.0 on Debian 12 (kernel 6.1), captured in a scratch
    // namespace with the commands in `tests/fixtures/tc/README.md`. tc prints JSON rates in
    // bytes/s: tbf 50mbit = 6,250,000 B/s.
    const NOQUEUE: &str = include_str!("../../tests/fixtures/tc/noqueue.json");
    const PFIFO_FAST: &str = include_str!("../../tests/fixtures/tc/pfifo_fast.json");
    const TBF: &str = include_str!("../../tests/fixtures/tc/tbf-qdisc.json");
    const HTB_QDISC: &str = include_str!("../../tests/fixtures/tc/htb-qdisc.json");
    const HTB_CLASS: &str = include_str!("../../tests/fixtures/tc/htb-class.txt");
    const HTB_NODEFAULT: &str = include_str!("../../tests/fixtures/tc/htb-nodefault-qdisc.json");

    #[test]
    fn tbf_rate_in_bits_per_second() {
        let q = parse_tc(TBF, None).unwrap();
        assert_eq!(q.kind, "tbf");
        assert_eq!(q.shaped_rate_bps, Some(50_000_000));
    }

    #[test]
    fn unshaped_roots_have_a_kind_and_no_rate() {
        for (json, kind) in [(NOQUEUE, "noqueue"), (PFIFO_FAST, "pfifo_fast")] {
            let q = parse_tc(json, None).unwrap();
            assert_eq!((q.kind.as_str(), q.shaped_rate_bps), (kind, None));
        }
    }

    #[test]
    fn htb_default_class_bounded_by_its_parents_ceil() {
        // Tree: 1:1 ceil 100Mbit → 1:10 ceil 80Mbit and 1:20 ceil 30Mbit; `default 20` is
        // minor 0x20 = class 1:20 → min(30, 100) = 30 Mbit/s.
        let q = parse_tc(HTB_QDISC, Some(HTB_CLASS)).unwrap();
        assert_eq!(q.kind, "htb");
        assert_eq!(q.shaped_rate_bps, Some(30_000_000));
        // A parent tighter than the class: the parent's ceiling.
        let tight = HTB_CLASS.replace(
            "root rate 100Mbit ceil 100Mbit",
            "root rate 10Mbit ceil 10Mbit",
        );
        assert_eq!(
            parse_tc(HTB_QDISC, Some(&tight)).unwrap().shaped_rate_bps,
            Some(10_000_000)
        );
        // Without the class listing nothing is claimed.
        assert_eq!(parse_tc(HTB_QDISC, None).unwrap().shaped_rate_bps, None);
    }

    #[test]
    fn htb_without_default_claims_no_rate() {
        // default 0: unclassified traffic bypasses the classes, so even the one root class
        // 1:1 (ceil 100Mbit) is not a rate the test's traffic is known to pass through.
        let q = parse_tc(HTB_NODEFAULT, Some(HTB_CLASS)).unwrap();
        assert_eq!(q.kind, "htb");
        assert_eq!(q.shaped_rate_bps, None);
        let two = "class htb 1:1 root rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n\
                   class htb 1:2 root rate 2Mbit ceil 2Mbit burst 1600b cburst 1600b \n";
        assert_eq!(
            parse_tc(HTB_NODEFAULT, Some(two)).unwrap().shaped_rate_bps,
            None
        );
    }

    #[test]
    fn class_lines_and_rates() {
        let c = parse_classes(HTB_CLASS);
        assert_eq!(c.len(), 3);
        assert_eq!(
            c[0],
            ClassLine {
                kind: "htb".into(),
                handle: "1:10".into(),
                parent: Some("1:1".into()),
                ceil_bps: Some(80_000_000),
            }
        );
        assert_eq!(c[1].parent, None);
        for (text, bps) in [
            ("800bit", Some(800)),
            ("1500Kbit", Some(1_500_000)),
            ("30Mbit", Some(30_000_000)),
            ("10Gbit", Some(10_000_000_000)),
            ("1Mibit", Some(1_048_576)),
            ("12.5Mbit", Some(12_500_000)),
            ("30", None),
            ("Mbit", None),
            ("3Mbps", None),
        ] {
            assert_eq!(parse_tc_rate(text), bps, "{text}");
        }
    }

    #[test]
    fn bad_output_is_an_error() {
        assert!(parse_tc("", None).is_err());
        assert!(parse_tc("[]", None).is_err());
        assert!(parse_tc(r#"[{"kind":"tbf"}]"#, None).is_err());
        // Unparseable class text: no classes, no rate.
        assert_eq!(
            parse_tc(HTB_QDISC, Some("{")).unwrap().shaped_rate_bps,
            None
        );
    }

    #[test]
    fn loopback_is_read_and_bad_names_are_refused() {
        // lo's root qdisc is noqueue. tc is required here as for the lab tests (iproute2).
        let lo = read_root_qdisc("lo").expect("`tc -j qdisc show dev lo` (install iproute2)");
        assert_eq!((lo.kind.as_str(), lo.shaped_rate_bps), ("noqueue", None));
        assert_eq!(read_root_qdisc("../lo"), None);
        assert_eq!(read_root_qdisc("nosuch0"), None);
    }

    #[test]
    fn slow_commands_are_killed() {
        let t = Instant::now();
        assert_eq!(
            run_with_timeout(Path::new("sleep"), &["5"], Duration::from_millis(100)),
            None
        );
        assert!(t.elapsed() < Duration::from_secs(3));
        assert_eq!(
            run_with_timeout(Path::new("echo"), &["hi"], TC_TIMEOUT).as_deref(),
            Some("hi\n")
        );
        assert_eq!(
            run_with_timeout(Path::new("/nonexistent/tc"), &[], TC_TIMEOUT),
            None
        );
    }
}
