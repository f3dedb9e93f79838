//! Validation of `linerate rr` and of the repetition flags into plans.

use std::time::Duration;

use linerate_wire::control::{Direction, RrSpec, Transport};

use super::plan::UsageError;
use super::rr_args::{RepeatArgs, RrArgs};
use crate::export::Format;
use crate::model::plan::{Debug, SockOpts, StreamPlan};

/// How often to run a test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatPlan {
    /// Fewest trials.
    pub min: u32,
    /// Most trials.
    pub max: u32,
    /// `(level, width)` in percent with `--confidence`.
    pub confidence: Option<(f64, f64)>,
}

impl RepeatPlan {
    /// One run, no repetition.
    pub const ONCE: RepeatPlan = RepeatPlan {
        min: 1,
        max: 1,
        confidence: None,
    };
}

/// Default `--iterations` with `--confidence` (netperf's -i default is 10 at most, 1 at least;
/// 3 is the fewest that gives an interval worth the name).
pub const DEFAULT_ITERATIONS: (u32, u32) = (3, 10);

/// Builds the repetition plan.
pub fn repeat_plan(r: &RepeatArgs) -> Result<RepeatPlan, UsageError> {
    if let Some(n) = r.repeat {
        if n == 0 || n > 1000 {
            return Err(UsageError(format!("--repeat {n}: use 1 to 1000 trials")));
        }
        return Ok(RepeatPlan {
            min: n,
            max: n,
            confidence: None,
        });
    }
    match r.confidence {
        None => Ok(RepeatPlan::ONCE),
        Some(c) => {
            let (min, max) = r.iterations.unwrap_or(DEFAULT_ITERATIONS);
            Ok(RepeatPlan {
                min: min.max(2),
                max: max.max(2),
                confidence: Some(c),
            })
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Builds the client's plan for `linerate rr`.
pub fn rr_plan(a: &RrArgs) -> Result<StreamPlan, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.parallel == 0 {
        return err("-P must be at least 1");
    }
    let min_udp = linerate_wire::probe::LEN as u32;
    let (req, resp) = a
        .sizes
        .unwrap_or(if a.udp { (min_udp, min_udp) } else { (1, 1) });
    if req == 0 || resp == 0 {
        return err("-r: request and response sizes must be at least 1 byte");
    }
    if a.udp {
        let min = linerate_wire::probe::LEN as u32;
        let max = crate::session::MAX_UDP_PAYLOAD;
        if req < min || resp < min || req > max || resp > max {
            return Err(UsageError(format!(
                "-r {req},{resp}: UDP requests and responses must be {min}..={max} bytes (each carries a {min}-byte sequence header)"
            )));
        }
    }
    if a.burst == 0 || a.burst > crate::session::limits::MAX_BURST {
        return Err(UsageError(format!(
            "--burst {}: use 1 to {}",
            a.burst,
            crate::session::limits::MAX_BURST
        )));
    }
    if u64::from(req.max(resp)) * u64::from(a.burst) > 16 << 20 {
        return err("-r × --burst: keep the bytes in flight per stream within 16 MiB");
    }
    if a.connect && a.burst != 1 {
        return err("--burst applies to TCP_RR and UDP_RR: TCP_CRR (--connect) runs one transaction per connection; use -P for parallel connections");
    }
    if a.time.is_zero() {
        return err("-t must be above zero");
    }
    let omit_ms = a.omit.map_or(0, ms);
    if omit_ms >= ms(a.time) {
        return err("--omit must be shorter than the test (-t)");
    }
    if a.interval < Duration::from_millis(10) {
        return err("-i must be at least 10ms");
    }
    let timeout_ms = ms(a.timeout);
    if a.udp && !(1..=crate::session::limits::MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return err("--timeout must be between 1ms and 60s");
    }
    if let Some(f) = &a.output.format {
        if f.parse::<Format>() == Ok(Format::Ttcp) {
            return err(
                "--format ttcp: ttcp has no request/response test; use table, json, csv or netperf",
            );
        }
    }
    let (client_cpu, server_cpu) = a.affinity.unwrap_or((None, None));
    let n_cpus = crate::sys::host::cpu_count();
    if let Some(c) = client_cpu.filter(|c| *c >= n_cpus) {
        return Err(UsageError(format!(
            "-A {c}: this host has CPUs 0-{}",
            n_cpus.saturating_sub(1)
        )));
    }
    let transport = if a.udp {
        Transport::Udp
    } else {
        Transport::Tcp
    };
    let mut spec = crate::session::default_spec(transport, Direction::Send, req, ms(a.time));
    spec.streams = a.parallel;
    spec.interval_ms = ms(a.interval);
    spec.omit_ms = omit_ms;
    spec.server_cpu = server_cpu;
    spec.server_sndbuf = a.remote_buffer;
    spec.server_rcvbuf = a.remote_buffer;
    // Latency tests turn Nagle off: with --burst, Nagle and delayed ACKs would hold requests
    // back by tens of milliseconds. With one transaction in flight it changes nothing.
    spec.nodelay = !a.udp;
    spec.rr = Some(RrSpec {
        request_bytes: req,
        response_bytes: resp,
        burst: a.burst,
        connect_per_transaction: a.connect,
        udp: a.udp,
        timeout_ms: if a.udp { timeout_ms } else { 0 },
        target_tps: a.rate,
    });
    Ok(StreamPlan {
        host: a.host.clone(),
        port: a.port,
        spec,
        local: SockOpts {
            sndbuf: a.local_buffer,
            rcvbuf: a.local_buffer,
            nodelay: !a.udp,
            ..SockOpts::default()
        },
        client_cpu,
        connect_timeout: a.connect_timeout,
        debug: Debug(a.debug_protocol),
        auth: a.auth.credentials()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Args, Command};
    use clap::Parser;

    fn plan(argv: &[&str]) -> Result<StreamPlan, UsageError> {
        match Args::try_parse_from(argv).map(|a| a.command) {
            Ok(Command::Rr(a)) => rr_plan(&a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_netperf_tcp_rr() {
        let p = plan(&["linerate", "rr", "h"]).unwrap();
        let rr = p.spec.rr.unwrap();
        assert_eq!((rr.request_bytes, rr.response_bytes, rr.burst), (1, 1, 1));
        assert!(!rr.udp && !rr.connect_per_transaction);
        assert_eq!(p.spec.duration_ms, Some(10_000));
        assert!(p.spec.nodelay);
    }

    #[test]
    fn udp_crr_and_errors() {
        let p = plan(&[
            "linerate",
            "rr",
            "h",
            "--udp",
            "-r",
            "64,512",
            "--timeout",
            "50ms",
        ])
        .unwrap();
        let rr = p.spec.rr.unwrap();
        assert!(rr.udp);
        assert_eq!(
            (rr.request_bytes, rr.response_bytes, rr.timeout_ms),
            (64, 512, 50)
        );
        assert!(plan(&["linerate", "rr", "h", "--udp", "-r", "1"])
            .unwrap_err()
            .0
            .contains("16"));
        let rr = plan(&["linerate", "rr", "h", "--udp"])
            .unwrap()
            .spec
            .rr
            .unwrap();
        assert_eq!((rr.request_bytes, rr.response_bytes), (16, 16));
        assert!(plan(&["linerate", "rr", "h", "--connect", "--burst", "4"])
            .unwrap_err()
            .0
            .contains("-P"));
        assert!(plan(&["linerate", "rr", "h", "--format", "ttcp"])
            .unwrap_err()
            .0
            .contains("ttcp"));
        assert!(plan(&["linerate", "rr", "h", "-t", "1", "-O", "1"]).is_err());
    }

    #[test]
    fn repeat_plans() {
        let r = |argv: &[&str]| match Args::try_parse_from(argv).map(|a| a.command) {
            Ok(Command::Rr(a)) => repeat_plan(&a.repeat),
            other => panic!("{other:?}"),
        };
        assert_eq!(r(&["linerate", "rr", "h"]).unwrap(), RepeatPlan::ONCE);
        assert_eq!(r(&["linerate", "rr", "h", "--repeat", "5"]).unwrap().max, 5);
        let c = r(&[
            "linerate",
            "rr",
            "h",
            "--confidence",
            "99,5",
            "--iterations",
            "3,7",
        ])
        .unwrap();
        assert_eq!((c.min, c.max, c.confidence), (3, 7, Some((99.0, 5.0))));
        assert!(r(&["linerate", "rr", "h", "--repeat", "0"]).is_err());
        assert!(Args::try_parse_from(["linerate", "rr", "h", "--iterations", "3,7"]).is_err());
    }
}
