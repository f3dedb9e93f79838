//! The test of a fleet order (`linerate_wire::fleet::FleetOrder::test`): the words of a
//! `tcp`, `udp` or `rr` command line without its host, parsed and checked by the same code
//! as that command's. An order is test words and nothing else: every word must be one of
//! the test options of [`TEST_OPTIONS`] (an allow-list) or the value of one, so no option
//! that names a file or a credential (`--auth-secret-file`, `--capture`, `--profile-out`,
//! `--db`, `--json FILE`, ...), acts on the agent's host, or aims at a third host (`--dut`,
//! `-p`) reaches the parser. The coordinator checks its `-- TEST` with it before anything
//! runs; the agent checks every order it gets with it, once.

use linerate_wire::control::Transport;

use super::common::parse_one;
use super::rr::{rr_plan, RrArgs};
use super::stream::{stream_plan, StreamArgs};
use super::UsageError;
use crate::model::plan::StreamPlan;

/// An address or a network an agent may test besides the other agents of its fleet
/// (`serve --fleet-allow ADDR|CIDR`): `198.18.0.7`, `198.18.0.0/15`, `2001:db8::/32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowedNet {
    addr: std::net::IpAddr,
    prefix: u8,
}

impl AllowedNet {
    /// Parses `ADDR` or `ADDR/PREFIX`; the error says how to write it.
    pub fn parse(s: &str) -> Result<AllowedNet, String> {
        let bad = || {
            format!(
                "`{}` is not an address or a network: give e.g. 198.18.0.7, 198.18.0.0/15 or 2001:db8::/32",
                linerate_wire::text::clip(s, 64)
            )
        };
        let (a, p) = s.split_once('/').map_or((s, None), |(a, p)| (a, Some(p)));
        let addr: std::net::IpAddr = a.parse().map_err(|_| bad())?;
        let addr = crate::sys::sockets::canonical(addr);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
        };
        Ok(AllowedNet { addr, prefix })
    }

    /// Whether `ip` is in this network (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr;
        let bits = |a: IpAddr| match a {
            IpAddr::V4(v) => (u128::from(u32::from(v)) << 96, 32u8),
            IpAddr::V6(v) => (u128::from(v), 128u8),
        };
        let ((net, width), (host, host_width)) =
            (bits(self.addr), bits(crate::sys::sockets::canonical(ip)));
        if width != host_width {
            return false;
        }
        let mask = u128::MAX
            .checked_shl(128 - u32::from(self.prefix))
            .unwrap_or(0);
        net & mask == host & mask
    }
}

/// The test options a fleet order may carry (tcp, udp and rr's; each command's parser
/// refuses the others' own): `(long name, short letter, takes a value)`.
pub const TEST_OPTIONS: &[(&str, Option<char>, bool)] = &[
    ("reverse", Some('R'), false),
    ("bidir", None, false),
    ("parallel", Some('P'), true),
    ("time", Some('t'), true),
    ("len", Some('l'), true),
    ("window", Some('w'), true),
    ("local-buffer", Some('s'), true),
    ("remote-buffer", Some('S'), true),
    ("local-sndbuf", None, true),
    ("local-rcvbuf", None, true),
    ("remote-sndbuf", None, true),
    ("remote-rcvbuf", None, true),
    ("nodelay", Some('N'), false),
    ("mss", Some('M'), true),
    ("congestion", Some('C'), true),
    ("tos", None, true),
    ("dscp", None, true),
    ("rate", Some('b'), true),
    ("interval", Some('i'), true),
    ("omit", Some('O'), true),
    ("affinity", Some('A'), true),
    ("no-offload", None, false),
    ("raw-frames", None, false),
    ("zerocopy", None, false),
    ("sendfile", None, false),
    ("no-rx-copy", None, false),
    ("connect-timeout", None, true),
    ("link-rate", None, true),
    ("max-loss", None, true),
    ("size", Some('r'), true),
    ("burst", None, true),
    ("connect", None, false),
    ("udp", None, false),
    ("timeout", None, true),
];

/// Whether `w` reads as a value rather than an option: not starting with `-`, or a
/// negative number.
fn is_value(w: &str) -> bool {
    match w.strip_prefix('-') {
        None => true,
        Some(rest) => rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'),
    }
}

/// Checks that every word of a test (after its command) is an option of [`TEST_OPTIONS`]
/// or its value; the error names the first that is not, in one line.
pub fn check_test_words(words: &[String]) -> Result<(), UsageError> {
    let refuse = |w: &str, why: &str| {
        Err(UsageError(format!(
            "`{}` is not taken in a fleet test: {why}",
            linerate_wire::text::clip(w, 40)
        )))
    };
    let not_a_test_option = "an order carries test options only (tcp, udp and rr's: -t, -P, -b, -l, -i, -R, --bidir, ...), never one that names a file or a credential, acts on the agent's host or aims elsewhere (leave it out)";
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        let (known, inline) = if let Some(long) = w.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            (
                TEST_OPTIONS.iter().find(|o| o.0 == name),
                long.contains('='),
            )
        } else if let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut chars = short.chars();
            let letter = chars.next();
            let found = TEST_OPTIONS.iter().find(|o| o.1.is_some() && o.1 == letter);
            if found.is_some_and(|o| !o.2) && chars.next().is_some() {
                return refuse(w, "give each short option as a word of its own");
            }
            (found, short.len() > 1)
        } else {
            return refuse(w, "a fleet test's words are options and their values, without a host (the agents are the hosts)");
        };
        let Some(&(_, _, takes_value)) = known else {
            return refuse(w, not_a_test_option);
        };
        // The value, as its own word; one that reads as an option is checked as one.
        if takes_value && !inline && words.get(i).is_some_and(|v| is_value(v)) {
            i += 1;
        }
    }
    Ok(())
}

/// The plan of an ordered test towards `target:port`. The credentials are the agent's to
/// add.
pub fn order_plan(test: &[String], target: &str, port: u16) -> Result<StreamPlan, UsageError> {
    let Some((command, rest)) = test.split_first() else {
        return Err(UsageError(
            "no test: give one after `--`, e.g. `-- tcp -t 10`".into(),
        ));
    };
    let command: &'static str = match command.as_str() {
        "tcp" => "tcp",
        "udp" => "udp",
        "rr" => "rr",
        other => {
            return Err(UsageError(format!(
                "`{}` is not a fleet test: give tcp, udp or rr after `--`, e.g. `-- tcp -t 10`",
                linerate_wire::text::clip(other, 32)
            )))
        }
    };
    check_test_words(rest)?;
    let mut argv: Vec<&str> = vec!["linerate", command, target];
    argv.extend(rest.iter().map(String::as_str));
    let first = |e: clap::Error| {
        UsageError(format!(
            "the fleet test `{}`: {} (give the test's options without a host: the agents are the hosts)",
            command,
            super::parse_error_line(&e)
        ))
    };
    let refuse = |what: &str| {
        Err(UsageError(format!(
            "{what} is not taken in a fleet test: the agent runs the test and returns its record (leave it out)"
        )))
    };
    let mut plan = if command == "rr" {
        let a: RrArgs = parse_one("rr", &argv).map_err(first)?;
        if a.repeat.is_set() {
            return refuse("--repeat/--confidence");
        }
        if a.capture.capture.is_some() {
            return refuse("--capture");
        }
        if a.profile.profile {
            return refuse("--profile");
        }
        rr_plan(&a)?
    } else {
        let a: StreamArgs = parse_one(command, &argv).map_err(first)?;
        if a.repeat.is_set() {
            return refuse("--repeat/--confidence");
        }
        if a.capture.capture.is_some() {
            return refuse("--capture");
        }
        if a.profile.profile {
            return refuse("--profile");
        }
        if a.dut.dut.is_some() {
            return refuse("--dut");
        }
        if a.latency {
            return refuse("--latency");
        }
        if a.iperf3 {
            return refuse("--iperf3");
        }
        if a.bytes.is_some() {
            return refuse("-n/--bytes (a fleet test runs for a time, -t)");
        }
        let transport = if command == "udp" {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        stream_plan(&a, transport)?
    };
    plan.host = target.to_string();
    plan.port = port;
    plan.auth = None;
    Ok(plan)
}

/// The test's length: its duration plus its warm-up, or `None` for a byte count.
pub fn order_length(plan: &StreamPlan) -> Option<std::time::Duration> {
    plan.spec
        .duration_ms
        .map(|d| std::time::Duration::from_millis(d.saturating_add(plan.spec.omit_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_each_test_and_refuses_what_acts_elsewhere() {
        let p = order_plan(&words("tcp -t 2 -P 3"), "198.18.0.2", 6000).unwrap();
        assert_eq!((p.host.as_str(), p.port), ("198.18.0.2", 6000));
        assert_eq!(p.spec.streams, 3);
        assert_eq!(p.spec.duration_ms, Some(2000));
        assert_eq!(order_length(&p), Some(std::time::Duration::from_secs(2)));
        let u = order_plan(&words("udp -b 40M -t 1"), "h", 5301).unwrap();
        assert_eq!(u.spec.transport, Transport::Udp);
        assert!(order_plan(&words("rr -t 1"), "h", 5301)
            .unwrap()
            .spec
            .rr
            .is_some());
        for (t, what) in [
            ("tcp --repeat 3", "--repeat"),
            ("tcp --capture x.pcap", "--capture"),
            ("tcp --dut 198.18.0.9", "--dut"),
            ("tcp -n 1M", "`-n`"),
            ("rr --profile", "--profile"),
            ("ping", "not a fleet test"),
            ("tcp --no-such-flag", "test options only"),
        ] {
            let e = order_plan(&words(t), "h", 5301).unwrap_err().0;
            assert!(e.contains(what), "{t}: {e}");
        }
        assert!(order_plan(&[], "h", 5301).is_err());
    }

    #[test]
    fn allowed_networks_parse_and_contain() {
        let n = AllowedNet::parse("198.18.0.0/15").unwrap();
        for (ip, inside) in [
            ("198.18.0.1", true),
            ("198.19.255.255", true),
            ("198.20.0.1", false),
            ("::ffff:198.18.3.4", true),
            ("2001:db8::1", false),
        ] {
            assert_eq!(n.contains(ip.parse().unwrap()), inside, "{ip}");
        }
        let one = AllowedNet::parse("198.18.0.7").unwrap();
        assert!(one.contains("198.18.0.7".parse().unwrap()));
        assert!(!one.contains("198.18.0.8".parse().unwrap()));
        let v6 = AllowedNet::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::9".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        assert!(AllowedNet::parse("0.0.0.0/0")
            .unwrap()
            .contains("203.0.113.1".parse().unwrap()));
        for bad in ["198.18.0.0/33", "host.example", "198.18.0.0/", "::/129"] {
            let e = AllowedNet::parse(bad).unwrap_err();
            assert!(e.contains("198.18.0.0/15"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_order_is_test_words_and_nothing_else() {
        // Every option that names a file or a credential, acts on the agent's host or aims
        // elsewhere is refused in one line before the parser sees it (a FIFO or /etc/shadow
        // as --auth-secret-file would otherwise be opened by the parser's code).
        for t in [
            "tcp --auth-secret-file /etc/shadow",
            "tcp --auth-secret-file=/proc/self/fd/2",
            "tcp --auth-user root",
            "tcp --capture /tmp/x.pcap",
            "rr --profile-out /tmp/x.svg",
            "tcp --db /tmp/results.db",
            "tcp --json /tmp/out.json",
            "tcp --hooks /tmp/hooks",
            "udp -p 22",
            "tcp -t 2 -o /tmp/out",
            "tcp -t --auth-secret-file",
            "tcp /etc/passwd",
            "tcp -RN",
            "tcp -- --auth-secret-file",
        ] {
            let e = order_plan(&words(t), "h", 5301).unwrap_err().0;
            assert!(e.contains("is not taken in a fleet test"), "{t}: {e}");
            assert!(!e.contains('\n'), "{t}: {e}");
        }
        // Test options, as words, joined or with `=`, are taken.
        for t in [
            "tcp -t 2 -P2 --rate=10M -R -N -l 64K -C cubic --tos 16",
            "udp -b 40M -t 2 -i 0.5 -O 1 --no-offload --max-loss 1",
            "rr -r 64,1024 --burst 4 -t 1 --timeout 500ms",
        ] {
            if let Err(e) = order_plan(&words(t), "h", 5301) {
                panic!("{t}: {}", e.0);
            }
        }
    }
}
