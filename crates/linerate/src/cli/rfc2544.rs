//! `linerate rfc2544` arguments and their validation into an [`Rfc2544Plan`].

use std::path::PathBuf;
use std::time::Duration;

use clap::Args as ClapArgs;

use super::units;
use super::UsageError;
use crate::rfc2544::frame_sizes::{self, IpVersion};
use crate::rfc2544::latency::LatencyParams;
use crate::rfc2544::record::{Benchmark, StartAt};
use crate::rfc2544::run::Rfc2544Plan;

/// `linerate rfc2544` arguments.
#[derive(Debug, ClapArgs)]
pub struct Rfc2544Args {
    /// The `linerate serve` on the far side of the device under test.
    pub host: String,
    /// Server port.
    #[arg(short, long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// Frame sizes in bytes, FCS included (RFC 2544 §9).
    #[arg(long, default_value = "64,128,256,512,1024,1280,1518")]
    pub frame_sizes: String,
    /// Line rate the theoretical maxima are computed from (e.g. 1G); default: the speed of
    /// the interface towards the server (virtual interfaces have none: give it).
    #[arg(long, value_parser = units::parse_rate)]
    pub line_rate: Option<u64>,
    /// Both directions at once, the same rate each way (RFC 2544 §14).
    #[arg(long)]
    pub bidir: bool,
    /// Benchmarks: throughput, latency, frame-loss, back-to-back, or all (comma-separated).
    #[arg(long = "test", default_value = "throughput", value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Length of a search trial.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub trial_time: Duration,
    /// Length of the trial that confirms each result (RFC 2544 §24: 60 s); 0 skips it.
    #[arg(long, default_value = "60", value_parser = units::parse_duration)]
    pub confirm_time: Duration,
    /// Confirmation trials per result before giving up, each at a lower rate.
    #[arg(long, default_value_t = 3)]
    pub confirm_attempts: u32,
    /// Allowed frame loss in percent, one result per value: 0 is RFC 2544 throughput (NDR);
    /// 0,0.1 adds a partial drop rate of 0.1%.
    #[arg(long, default_value = "0", value_delimiter = ',', value_parser = parse_percent)]
    pub loss: Vec<f64>,
    /// Search resolution, percent of the theoretical maximum.
    #[arg(long, default_value = "0.5", value_parser = parse_percent)]
    pub resolution: f64,
    /// Most search trials per frame size.
    #[arg(long, default_value_t = 20)]
    pub max_trials: u32,
    /// First rate of the search: line (theoretical maximum, RFC 2544) or tester (the
    /// tester's own maximum for the size, when lower).
    #[arg(long, default_value = "line")]
    pub start: String,
    /// Length of the unpaced trial that measures the tester's own maximum per size; 0 skips it.
    #[arg(long, default_value = "1", value_parser = units::parse_duration)]
    pub calibrate_time: Duration,
    /// Wait between trials (RFC 2544 §23 waits at least 5 s).
    #[arg(long, default_value = "1", value_parser = units::parse_duration)]
    pub settle: Duration,
    /// Length of a latency trial (RFC 2544: 120 s).
    #[arg(long, default_value = "120", value_parser = units::parse_duration)]
    pub latency_time: Duration,
    /// Latency trials per frame size (RFC 2544: 20).
    #[arg(long, default_value_t = 20)]
    pub latency_repeat: u32,
    /// Length of a frame loss trial (RFC 2544: 60 s).
    #[arg(long, default_value = "60", value_parser = units::parse_duration)]
    pub frame_loss_time: Duration,
    /// Step between frame loss trials, percent of the theoretical maximum (RFC 2544: 10 or less).
    #[arg(long, default_value = "10", value_parser = parse_percent)]
    pub frame_loss_step: f64,
    /// Longest back-to-back burst, as time at line rate (RFC 2544: at least 2 s).
    #[arg(long, default_value = "2", value_parser = units::parse_duration)]
    pub b2b_max: Duration,
    /// Back-to-back repetitions per frame size (RFC 2544: 50).
    #[arg(long, default_value_t = 50)]
    pub b2b_repeat: u32,
    /// How the tester writes frames: auto (complete Ethernet frames through an AF_PACKET
    /// ring, one frame per packet; without CAP_NET_RAW one datagram per sendmmsg message,
    /// stated as a deviation), sendmmsg (always datagrams), or gso. gso: UDP segmentation
    /// offload hands the kernel up to 64 frames per call, and on virtual links (veth,
    /// bridges) and Linux forwarding paths they stay ONE super-packet: the device under test
    /// then forwards super-packets, not frames, does a fraction of the per-frame work, and
    /// the rates found are not its frame rates. Use gso only to test the tester.
    #[arg(long, default_value = "auto", value_parser = parse_generator)]
    pub generator: crate::rfc2544::record::Generator,
    /// The kernel path of raw frames (`--generator auto`), at both tester ends: auto (an
    /// AF_XDP socket, zero-copy where the driver takes it, else copy mode; the AF_PACKET
    /// ring, with one warning saying why, where AF_XDP cannot be used), xdp (AF_XDP only),
    /// or afpacket (the AF_PACKET ring only). Each trial records the path used.
    #[arg(long, default_value = "auto", value_parser = super::stream::parse_raw_tx)]
    pub raw_tx: linerate_wire::control::RawTxChoice,
    /// Accepted for old scripts and ignored: rfc2544 never uses GSO/GRO unless
    /// `--generator gso`.
    #[arg(long, hide = true)]
    pub no_offload: bool,
    /// Time to wait for the server to answer the connection.
    #[arg(long, default_value = "5", value_parser = units::parse_duration)]
    pub connect_timeout: Duration,
    #[command(flatten)]
    pub store: super::common::StoreArgs,
    #[command(flatten)]
    pub auth: super::common::AuthArgs,
    #[command(flatten)]
    pub dut: super::common::DutArgs,
    /// `--profile`: both tester ends sample their CPUs in every trial; the record keeps,
    /// per frame size, the profiles of the trial at the throughput rate.
    #[command(flatten)]
    pub profile: super::common::ProfileArgs,
    /// One JSON record with every trial (its schema: `linerate schema rfc2544`).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV: a header and one row per result.
    #[arg(long)]
    pub csv: bool,
    /// Also write the chart (frames/s against frame size, with the theoretical maximum) to
    /// FILE.svg or FILE.png; may be given twice.
    #[arg(long, value_name = "FILE")]
    pub chart: Vec<PathBuf>,
}

/// `--generator`.
pub fn parse_generator(s: &str) -> Result<crate::rfc2544::record::Generator, String> {
    use crate::rfc2544::record::Generator;
    match s {
        "auto" => Ok(Generator::Auto),
        "sendmmsg" => Ok(Generator::Sendmmsg),
        "gso" => Ok(Generator::Gso),
        _ => Err(format!(
            "unknown generator '{s}': use auto (raw frames where possible), sendmmsg, or gso"
        )),
    }
}

/// A percentage with or without a trailing `%`, 0 to 100.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid percentage '{s}': use a number such as 0.5 or 0.5%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!(
            "invalid percentage '{s}': it must be between 0 and 100"
        ));
    }
    Ok(v)
}

fn benchmarks(names: &[String]) -> Result<Vec<Benchmark>, UsageError> {
    let mut out = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if n == "all" {
            out.extend(Benchmark::ALL);
            continue;
        }
        let b = Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == n)
            .ok_or_else(|| {
                UsageError(format!(
                    "--test {n}: use throughput, latency, frame-loss, back-to-back or all"
                ))
            })?;
        out.push(b);
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(UsageError(
            "--test needs at least one benchmark, e.g. throughput".into(),
        ));
    }
    Ok(out)
}

fn nonzero(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// Validates the arguments for a path of `ip` with `line_rate_bps` and, when known, the MTU
/// of the interface towards the server.
pub fn plan(
    a: &Rfc2544Args,
    ip: IpVersion,
    line_rate_bps: f64,
    mtu: Option<u32>,
) -> Result<Rfc2544Plan, UsageError> {
    let err = |m: &str| Err(UsageError(m.to_string()));
    let sizes = frame_sizes::parse_list(&a.frame_sizes).map_err(|e| UsageError(e.0))?;
    for &f in &sizes {
        frame_sizes::udp_payload(f, ip)
            .map_err(|e| UsageError(format!("--frame-sizes: {}", e.0)))?;
        if let Some(m) = mtu {
            frame_sizes::check_mtu(f, m)
                .map_err(|e| UsageError(format!("--frame-sizes: {}", e.0)))?;
        }
    }
    if !(line_rate_bps.is_finite() && line_rate_bps > 0.0) {
        return err("--line-rate must be above zero, e.g. 1G");
    }
    if a.trial_time < Duration::from_millis(100) {
        return err("--trial-time must be at least 100ms");
    }
    if a.resolution <= 0.0 {
        return err("--resolution must be above 0 (percent of the line's maximum), e.g. 0.5");
    }
    if a.max_trials == 0 || a.confirm_attempts == 0 {
        return err("--max-trials and --confirm-attempts must be at least 1");
    }
    if a.latency_repeat == 0 || a.b2b_repeat == 0 {
        return err("--latency-repeat and --b2b-repeat must be at least 1");
    }
    if a.frame_loss_step <= 0.0 {
        return err("--frame-loss-step must be above 0 percent, e.g. 10");
    }
    if a.b2b_max.is_zero() || a.latency_time.is_zero() || a.frame_loss_time.is_zero() {
        return err("--b2b-max, --latency-time and --frame-loss-time must be above zero");
    }
    let start = match a.start.as_str() {
        "line" => StartAt::LineRate,
        "tester" => StartAt::TesterMax,
        other => {
            return Err(UsageError(format!(
                "--start {other}: use line (the theoretical maximum) or tester (the tester's own maximum)"
            )))
        }
    };
    let calibrate = nonzero(a.calibrate_time);
    if start == StartAt::TesterMax && calibrate.is_none() {
        return err("--start tester needs the tester's maximum: leave --calibrate-time above 0");
    }
    let mut goals: Vec<f64> = a.loss.iter().map(|p| p / 100.0).collect();
    goals.sort_by(f64::total_cmp);
    goals.dedup();
    Ok(Rfc2544Plan {
        frame_sizes: sizes,
        ip,
        line_rate_bps,
        benchmarks: benchmarks(&a.tests)?,
        bidirectional: a.bidir,
        trial: a.trial_time,
        confirm: nonzero(a.confirm_time),
        confirm_attempts: a.confirm_attempts,
        goals,
        resolution_percent: a.resolution,
        max_trials: a.max_trials,
        start,
        calibrate,
        settle: a.settle,
        latency: LatencyParams {
            repeat: a.latency_repeat,
            duration: a.latency_time,
        },
        frame_loss_time: a.frame_loss_time,
        frame_loss_step_percent: a.frame_loss_step,
        b2b_max: a.b2b_max,
        b2b_repeat: a.b2b_repeat,
        generator: a.generator,
        profile: a.profile.spec()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::common::parse_one;

    fn args(extra: &[&str]) -> Rfc2544Args {
        let mut argv = vec!["linerate", "rfc2544", "h"];
        argv.extend_from_slice(extra);
        parse_one::<Rfc2544Args>("rfc2544", &argv).unwrap()
    }

    #[test]
    fn defaults_follow_rfc2544() {
        let p = plan(&args(&[]), IpVersion::V4, 1e9, Some(1500)).unwrap();
        assert_eq!(p.frame_sizes, frame_sizes::RFC2544_ETHERNET.to_vec());
        assert_eq!(p.benchmarks, vec![Benchmark::Throughput]);
        assert_eq!(p.goals, vec![0.0]);
        assert_eq!(p.confirm, Some(Duration::from_secs(60)));
        assert_eq!(p.trial, Duration::from_secs(5));
        assert_eq!(p.start, StartAt::LineRate);
        assert_eq!(
            (p.latency.repeat, p.latency.duration),
            (20, Duration::from_secs(120))
        );
        assert_eq!(p.b2b_repeat, 50);
        assert!(!p.bidirectional);
    }

    #[test]
    fn ndr_and_pdr_and_all_tests() {
        let p = plan(
            &args(&[
                "--loss",
                "0.1%,0",
                "--test",
                "all",
                "--confirm-time",
                "0",
                "--bidir",
            ]),
            IpVersion::V4,
            1e8,
            None,
        )
        .unwrap();
        assert_eq!(p.goals, vec![0.0, 0.001]);
        assert_eq!(p.benchmarks, Benchmark::ALL.to_vec());
        assert_eq!(p.confirm, None);
        assert!(p.bidirectional);
    }

    #[test]
    fn bad_input_says_how_to_fix_it() {
        let e = plan(&args(&[]), IpVersion::V6, 1e9, None).unwrap_err().0;
        assert!(e.contains("IPv6") && e.contains("82"), "{e}");
        let e = plan(
            &args(&["--frame-sizes", "1518"]),
            IpVersion::V4,
            1e9,
            Some(1400),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("MTU"), "{e}");
        let e = plan(&args(&["--test", "speed"]), IpVersion::V4, 1e9, None)
            .unwrap_err()
            .0;
        assert!(e.contains("back-to-back"), "{e}");
        let e = plan(
            &args(&["--start", "tester", "--calibrate-time", "0"]),
            IpVersion::V4,
            1e9,
            None,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("--calibrate-time"), "{e}");
        assert!(plan(&args(&["--resolution", "0"]), IpVersion::V4, 1e9, None).is_err());
        assert!(parse_one::<Rfc2544Args>(
            "rfc2544",
            &["linerate", "rfc2544", "h", "--loss", "150"]
        )
        .is_err());
        assert_eq!(parse_percent("0.5%"), Ok(0.5));
    }
}
