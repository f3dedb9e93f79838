//! `linerate rr`: its arguments, and their validation into a plan.

use std::time::Duration;

use linerate_wire::control::{Bounceback, Direction, RrSpec, Transport};

use clap::Args as ClapArgs;

use super::common::AuthArgs;
use super::output::OutputArgs;
use super::repeat::RepeatArgs;
use super::{units, UsageError};
use crate::export::Format;
use crate::model::criteria::Criteria;
use crate::model::plan::{Debug, SockOpts, StreamPlan};
use crate::repeat::RepeatPlan;

/// `linerate rr` arguments.
#[derive(Debug, ClapArgs)]
pub struct RrArgs {
    /// Server host name or address.
    pub host: String,
    /// Server port.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// Request and response sizes in bytes, REQ[,RESP] (netperf -r; default 1,1, and 16,16
    /// with --udp, the smallest datagram that carries the sequence header).
    #[arg(short = 'r', long = "size", value_name = "REQ[,RESP]", value_parser = parse_sizes)]
    pub sizes: Option<(u32, u32)>,
    /// Transactions in flight per stream (netperf -b N keeps N+1 in flight; this is the total).
    #[arg(long, default_value_t = 1)]
    pub burst: u32,
    /// A new TCP connection for every transaction (netperf TCP_CRR).
    #[arg(long, conflicts_with = "udp")]
    pub connect: bool,
    /// UDP datagrams (netperf UDP_RR); lost transactions are counted.
    #[arg(long)]
    pub udp: bool,
    /// UDP: time after which an unanswered request is a lost transaction.
    #[arg(long, default_value = "200ms", value_parser = units::parse_duration)]
    pub timeout: std::time::Duration,
    /// Target transactions per second over all streams (e.g. 10k); latency is then measured
    /// from each request's intended send time, so stalls are not hidden.
    #[arg(long, value_name = "TPS", value_parser = parse_count)]
    pub rate: Option<u64>,
    /// Bounceback (iperf2's --bounceback[=N]): bursts of N exchanges (default 10) on one TCP
    /// connection, each request written after the previous response is in; a burst every
    /// --bounceback-period. Latency per exchange, exchanges per second.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "10", conflicts_with_all = ["udp", "connect", "rate"])]
    pub bounceback: Option<u32>,
    /// Bounceback: from one burst's start to the next's (iperf2's --bounceback-period; 0:
    /// back to back).
    #[arg(long, default_value = "1s", value_parser = units::parse_duration, requires = "bounceback")]
    pub bounceback_period: std::time::Duration,
    /// Bounceback: the server holds each response this long after reading its request
    /// (iperf2's --bounceback-hold, e.g. 5ms).
    #[arg(long, default_value = "0", value_parser = units::parse_duration, requires = "bounceback")]
    pub bounceback_hold: std::time::Duration,
    /// Bounceback: neither end sets TCP_QUICKACK (iperf2's --bounceback-no-quickack), so
    /// delayed ACKs can show.
    #[arg(long, requires = "bounceback")]
    pub bounceback_no_quickack: bool,
    /// Leave Nagle's algorithm on (no TCP_NODELAY): with --bounceback-no-quickack and a
    /// request over one segment, a delayed-ACK stall shows.
    #[arg(long, conflicts_with = "udp")]
    pub nagle: bool,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// Test length (seconds, or with a unit: 500ms, 2m).
    #[arg(short = 't', long, default_value = "10", value_parser = units::parse_duration)]
    pub time: std::time::Duration,
    /// Warm-up left out of the totals and latencies.
    #[arg(short = 'O', long, value_parser = units::parse_duration)]
    pub omit: Option<std::time::Duration>,
    /// Interval between reports.
    #[arg(short = 'i', long, default_value = "1", value_parser = units::parse_duration)]
    pub interval: std::time::Duration,
    /// Socket buffers (send and receive) on this end, like netperf -s.
    #[arg(short = 's', long, value_parser = units::parse_size32)]
    pub local_buffer: Option<u32>,
    /// Socket buffers (send and receive) on the server, like netperf -S.
    #[arg(short = 'S', long, value_parser = units::parse_size32)]
    pub remote_buffer: Option<u32>,
    /// Pin stream threads: LOCAL[,REMOTE] CPU numbers (netperf -T).
    #[arg(short = 'A', long, value_parser = units::parse_affinity)]
    pub affinity: Option<(Option<u32>, Option<u32>)>,
    /// Time to wait for the server to answer a connection.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: std::time::Duration,
    /// Exit with code 1 when more than PERCENT of the transactions were lost (--udp; the
    /// results are printed all the same). With --repeat, every run must pass.
    #[arg(long, value_name = "PERCENT", value_parser = units::parse_percent)]
    pub max_loss: Option<f64>,
    #[command(flatten)]
    pub auth: AuthArgs,
    #[command(flatten)]
    pub profile: super::common::ProfileArgs,
    #[command(flatten)]
    pub store: super::common::StoreArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub repeat: RepeatArgs,
    #[command(flatten)]
    pub capture: super::analyze::CaptureArgs,
    /// Log every control frame to stderr.
    #[arg(long)]
    pub debug_protocol: bool,
}

/// The pass/fail criteria of an RR test (`--max-loss`, UDP_RR only).
pub fn criteria(a: &RrArgs) -> Result<Criteria, UsageError> {
    if a.max_loss.is_some() && !a.udp {
        return Err(UsageError(
            "--max-loss applies to UDP_RR: add --udp (TCP loses no transactions)".into(),
        ));
    }
    Ok(Criteria {
        max_loss_percent: a.max_loss,
    })
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The request and response sizes (-r) and --burst: at least a byte (a UDP one holds the
/// sequence header and fits a datagram), at most 16 MiB in flight per stream.
fn transaction_sizes(a: &RrArgs) -> Result<(u32, u32), UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    let min_udp = linerate_wire::probe::LEN as u32;
    let (req, resp) = a
        .sizes
        .unwrap_or(if a.udp { (min_udp, min_udp) } else { (1, 1) });
    if req == 0 || resp == 0 {
        return err("-r: request and response sizes must be at least 1 byte");
    }
    if a.udp {
        let min = linerate_wire::probe::LEN as u32;
        let max = crate::session::server::policy::limits::MAX_UDP_PAYLOAD;
        if req < min || resp < min || req > max || resp > max {
            return Err(UsageError(format!(
                "-r {req},{resp}: UDP requests and responses must be {min}..={max} bytes (each carries a {min}-byte sequence header)"
            )));
        }
    }
    if a.burst == 0 || a.burst > crate::session::server::policy::limits::MAX_BURST {
        return Err(UsageError(format!(
            "--burst {}: use 1 to {}",
            a.burst,
            crate::session::server::policy::limits::MAX_BURST
        )));
    }
    if u64::from(req.max(resp)) * u64::from(a.burst) > 16 << 20 {
        return err("-r × --burst: keep the bytes in flight per stream within 16 MiB");
    }
    if a.connect && a.burst != 1 {
        return err("--burst applies to TCP_RR and UDP_RR: TCP_CRR (--connect) runs one transaction per connection; use -P for parallel connections");
    }
    Ok((req, resp))
}

/// Builds the client's plan for `linerate rr`.
pub fn rr_plan(a: &RrArgs) -> Result<StreamPlan, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    if a.parallel == 0 {
        return err("-P must be at least 1");
    }
    let (req, resp) = transaction_sizes(a)?;
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
    if a.udp && !(1..=crate::session::server::policy::limits::MAX_TIMEOUT_MS).contains(&timeout_ms)
    {
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
    let mut spec = crate::model::plan::default_spec(transport, Direction::Send, req, ms(a.time));
    spec.streams = a.parallel;
    spec.interval_ms = ms(a.interval);
    spec.omit_ms = omit_ms;
    spec.server_cpu = server_cpu;
    spec.server_sndbuf = a.remote_buffer;
    spec.server_rcvbuf = a.remote_buffer;
    // Latency tests turn Nagle off: with --burst, Nagle and delayed ACKs would hold requests
    // back by tens of milliseconds. With one transaction in flight it changes nothing.
    spec.nodelay = !a.udp && !a.nagle;
    spec.profile = a.profile.spec()?;
    let bounceback = bounceback(a)?;
    spec.rr = Some(RrSpec {
        request_bytes: req,
        response_bytes: resp,
        burst: a.burst,
        connect_per_transaction: a.connect,
        udp: a.udp,
        timeout_ms: if a.udp { timeout_ms } else { 0 },
        target_tps: a.rate,
        bounceback: bounceback.map(Box::new),
    });
    Ok(StreamPlan {
        host: a.host.clone(),
        port: a.port,
        spec,
        local: SockOpts {
            sndbuf: a.local_buffer,
            rcvbuf: a.local_buffer,
            nodelay: !a.udp && !a.nagle,
            ..SockOpts::default()
        },
        client_cpu,
        connect_timeout: a.connect_timeout,
        debug: Debug(a.debug_protocol),
        auth: a.auth.credentials()?,
        max_time: None,
    })
}

/// `--bounceback` and its options: a burst of 1 to MAX_BURST exchanges, a hold under 10 s,
/// and a period no shorter than the burst could take at the hold alone.
fn bounceback(a: &RrArgs) -> Result<Option<Bounceback>, UsageError> {
    let Some(burst) = a.bounceback else {
        return Ok(None);
    };
    let max = crate::session::server::policy::limits::MAX_BURST;
    if burst == 0 || burst > max {
        return Err(UsageError(format!(
            "--bounceback {burst}: use 1 to {max} exchanges per burst"
        )));
    }
    if a.burst != 1 {
        return Err(UsageError("--burst pipelines requests; a bounceback sends one at a time: use --bounceback N for its burst".into()));
    }
    let hold_ns = u64::try_from(a.bounceback_hold.as_nanos()).unwrap_or(u64::MAX);
    if a.bounceback_hold > Duration::from_secs(10) {
        return Err(UsageError(format!(
            "--bounceback-hold {:?}: hold at most 10s",
            a.bounceback_hold
        )));
    }
    let period_ns = u64::try_from(a.bounceback_period.as_nanos()).unwrap_or(u64::MAX);
    if period_ns > 0 && period_ns < hold_ns.saturating_mul(u64::from(burst)) {
        return Err(UsageError(format!(
            "--bounceback-period {:?} is shorter than a burst: {burst} exchanges held {:?} each take longer; lengthen the period or use 0 (back to back)",
            a.bounceback_period, a.bounceback_hold
        )));
    }
    Ok(Some(Bounceback {
        burst,
        period_ns,
        hold_ns,
        quickack: !a.bounceback_no_quickack,
    }))
}

/// The checks between flags that the plan does not hold: `--capture` records one test, so
/// it does not go with repeated runs (`rp`).
pub fn cross_flag_checks(a: &RrArgs, rp: RepeatPlan) -> Result<(), UsageError> {
    if rp != RepeatPlan::ONCE && a.capture.capture.is_some() {
        return Err(UsageError(
            "--capture records one test: leave out --repeat/--confidence".into(),
        ));
    }
    Ok(())
}

/// `REQ[,RESP]` byte sizes; RESP defaults to REQ.
pub fn parse_sizes(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s.split_once(',').unwrap_or((s, s));
    let req = units::parse_size32(a)?;
    let resp = units::parse_size32(b)?;
    Ok((req, resp))
}

/// A count with an optional k/M/G suffix (decimal): `10k` = 10,000.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("invalid rate '{s}': use transactions per second such as 5000 or 10k")
    })?;
    let v = v * mult;
    if !(1.0..1e12).contains(&v) {
        return Err(format!(
            "invalid rate '{s}': must be between 1 and 1e12 per second"
        ));
    }
    Ok(v.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    fn plan(argv: &[&str]) -> Result<StreamPlan, UsageError> {
        match parse_one::<RrArgs>("rr", argv) {
            Ok(a) => rr_plan(&a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn value_parsers() {
        assert_eq!(parse_sizes("64,1K"), Ok((64, 1024)));
        assert_eq!(parse_sizes("100"), Ok((100, 100)));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("2.5M"), Ok(2_500_000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("fast").is_err());
    }

    #[test]
    fn capture_takes_one_run() {
        let check = |argv: &[&str]| {
            let a = parse_one::<RrArgs>("rr", argv).unwrap();
            let rp = crate::cli::repeat::repeat_plan(&a.repeat).unwrap();
            cross_flag_checks(&a, rp)
        };
        let e = check(&[
            "linerate",
            "rr",
            "h",
            "--capture",
            "x.pcap",
            "--repeat",
            "3",
        ]);
        assert!(e.unwrap_err().0.contains("--capture records one test"));
        assert!(check(&["linerate", "rr", "h", "--capture", "x.pcap"]).is_ok());
        assert!(check(&["linerate", "rr", "h", "--repeat", "3"]).is_ok());
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
}
