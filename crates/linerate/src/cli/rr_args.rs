//! Raw arguments of `linerate rr` and `linerate compare`, and the repetition flags every
//! test command shares (`--repeat`, `--confidence`, `--iterations`).

use clap::Args as ClapArgs;

use super::args::OutputArgs;
use super::units;

/// Repetition of a whole test, netperf `-i`/`-I` style.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct RepeatArgs {
    /// Run the test N times and report every trial, the mean, stddev and confidence interval.
    #[arg(long, value_name = "N", conflicts_with = "confidence")]
    pub repeat: Option<u32>,
    /// Repeat until the LEVEL% confidence interval of the mean is within WIDTH% (full width,
    /// netperf -I: 99,5 = within ±2.5 % of the mean), between --iterations MIN and MAX trials.
    #[arg(long, value_name = "LEVEL,WIDTH", value_parser = parse_confidence)]
    pub confidence: Option<(f64, f64)>,
    /// Fewest and most trials with --confidence (netperf -i MAX,MIN; default 3,10).
    #[arg(long, value_name = "MIN,MAX", value_parser = parse_min_max, requires = "confidence")]
    pub iterations: Option<(u32, u32)>,
}

impl RepeatArgs {
    /// True when more than one plain run may be made.
    pub fn is_set(&self) -> bool {
        self.repeat.is_some() || self.confidence.is_some()
    }
}

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
    #[command(flatten)]
    pub auth: super::args::AuthArgs,
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

/// `linerate compare` arguments.
#[derive(Debug, ClapArgs)]
pub struct CompareArgs {
    /// Result files (--json output of a test or of a repeated test); the first is the
    /// baseline A, each other one is compared with it.
    #[arg(required = true, num_args = 2.., value_name = "FILE")]
    pub files: Vec<std::path::PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `LEVEL,WIDTH` in percent, e.g. `99,5`.
pub fn parse_confidence(s: &str) -> Result<(f64, f64), String> {
    let err = || {
        format!("invalid --confidence '{s}': use LEVEL,WIDTH in percent, e.g. 99,5 (99 % confidence, interval within ±2.5 % of the mean)")
    };
    let (l, w) = s.split_once(',').ok_or_else(err)?;
    let level: f64 = l.trim().parse().map_err(|_| err())?;
    let width: f64 = w.trim().parse().map_err(|_| err())?;
    if !(level > 50.0 && level < 100.0 && width > 0.0 && width <= 100.0) {
        return Err(err());
    }
    Ok((level, width))
}

/// `MIN,MAX` trial counts, 1 <= MIN <= MAX <= 1000.
pub fn parse_min_max(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("invalid --iterations '{s}': use MIN,MAX trials such as 3,10");
    let (a, b) = s.split_once(',').ok_or_else(err)?;
    let min: u32 = a.trim().parse().map_err(|_| err())?;
    let max: u32 = b.trim().parse().map_err(|_| err())?;
    if min == 0 || min > max || max > 1000 {
        return Err(err());
    }
    Ok((min, max))
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

    #[test]
    fn value_parsers() {
        assert_eq!(parse_confidence("99,5"), Ok((99.0, 5.0)));
        assert!(parse_confidence("99").is_err());
        assert!(parse_confidence("100,5").is_err());
        assert_eq!(parse_min_max("3,10"), Ok((3, 10)));
        assert!(parse_min_max("10,3").is_err());
        assert!(parse_min_max("0,3").is_err());
        assert_eq!(parse_sizes("64,1K"), Ok((64, 1024)));
        assert_eq!(parse_sizes("100"), Ok((100, 100)));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("2.5M"), Ok(2_500_000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("fast").is_err());
    }
}
