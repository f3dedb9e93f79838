//! The test of a fleet order (`linerate_wire::fleet::FleetOrder::test`): the words of a
//! `tcp`, `udp` or `rr` command line without its host, parsed and checked by the same code
//! as that command's, with the options that would act on the agent's own files or on a
//! third host refused. The coordinator checks its `-- TEST` with it before anything runs;
//! the agent checks every order it gets with it.

use linerate_wire::control::Transport;

use super::common::parse_one;
use super::rr::{rr_plan, RrArgs};
use super::stream::{stream_plan, StreamArgs};
use super::UsageError;
use crate::model::plan::StreamPlan;

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
            ("tcp -n 1M", "--bytes"),
            ("rr --profile", "--profile"),
            ("ping", "not a fleet test"),
            ("tcp --no-such-flag", "the fleet test `tcp`"),
        ] {
            let e = order_plan(&words(t), "h", 5301).unwrap_err().0;
            assert!(e.contains(what), "{t}: {e}");
        }
        assert!(order_plan(&[], "h", 5301).is_err());
    }
}
