//! The argument groups several commands share (authentication, the results database, the
//! device under test, profiling), and [`parse_one`], which parses one command's arguments
//! without the list of every command. A leaf of `cli/`: the command files use it, and it
//! uses none of them, so `args.rs` (which names every command) is imported by no command.

use std::net::IpAddr;

use clap::Args as ClapArgs;

use super::UsageError;

/// `linerate COMMAND ARGS...` (`argv[0]` the program, `argv[1]` `command`) parsed for the one
/// command whose arguments are `T`, as the whole command line parses it: the same flags,
/// errors and usage line (`linerate tcp [OPTIONS] <HOST>`). A sweep's points, a campaign's
/// sweeps and the commands' unit tests parse through it.
pub fn parse_one<T>(command: &'static str, argv: &[&str]) -> Result<T, clap::Error>
where
    T: ClapArgs + clap::FromArgMatches,
{
    let cmd = clap::Command::new("linerate")
        .subcommand_required(true)
        .subcommand(T::augment_args(clap::Command::new(command)));
    let m = cmd.try_get_matches_from(argv)?;
    match m.subcommand_matches(command) {
        Some(sub) => T::from_arg_matches(sub),
        None => Err(clap::Error::raw(
            clap::error::ErrorKind::InvalidSubcommand,
            format!("expected `linerate {command}`\n"),
        )),
    }
}

/// Client authentication to a server started with `serve --auth-users`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct AuthArgs {
    /// User name for a server that requires authentication (serve --auth-users).
    #[arg(long, env = "LINERATE_AUTH_USER", value_name = "NAME")]
    pub auth_user: Option<String>,
    /// File whose first line is the user's secret; without it the secret is read from the
    /// environment variable LINERATE_AUTH_SECRET (never from the command line, where other
    /// users of the host could see it).
    #[arg(long, value_name = "FILE")]
    pub auth_secret_file: Option<std::path::PathBuf>,
}

impl AuthArgs {
    /// The credentials given, if any; bad ones are a usage error.
    pub fn credentials(&self) -> Result<Option<crate::model::plan::Credentials>, UsageError> {
        crate::model::plan::Credentials::from_args(
            self.auth_user.as_deref(),
            self.auth_secret_file.as_deref(),
            std::env::var("LINERATE_AUTH_SECRET").ok(),
        )
        .map_err(UsageError)
    }
}

/// The device under test's own counters (`--dut`), shared by `tcp`, `udp` and `rfc2544`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct DutArgs {
    /// The device under test runs `linerate serve` at HOST[:PORT] (port 5301 by default;
    /// IPv6 as [ADDR]:PORT): read its CPU (per-CPU user/system/irq/softirq), interrupt,
    /// NET_RX/NET_TX and interface packet/drop counters before and after every trial or
    /// test, and diagnose what limited the device. Uses one control connection and no test
    /// slot there; the device's own authentication applies (--auth-user). CPU counters are
    /// system-wide: a device that is a network namespace on this host shares this host's.
    #[arg(long, value_name = "HOST[:PORT]", value_parser = parse_dut)]
    pub dut: Option<(String, u16)>,
}

/// `HOST`, `HOST:PORT`, `[ADDR]:PORT` or a bare IPv6 address.
pub fn parse_dut(s: &str) -> Result<(String, u16), String> {
    let bad = || {
        format!(
            "--dut {s:?}: give HOST or HOST:PORT (IPv6 as [ADDR]:PORT), e.g. --dut 192.0.2.1:5301"
        )
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(bad);
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        return match tail {
            "" => Ok((host.to_string(), crate::session::DEFAULT_PORT)),
            t => Ok((
                host.to_string(),
                port(t.strip_prefix(':').ok_or_else(bad)?)?,
            )),
        };
    }
    match s.matches(':').count() {
        0 => Ok((s.to_string(), crate::session::DEFAULT_PORT)),
        1 => {
            let (h, p) = s.split_once(':').ok_or_else(bad)?;
            if h.is_empty() {
                return Err(bad());
            }
            Ok((h.to_string(), port(p)?))
        }
        // A bare IPv6 address.
        _ => Ok((s.to_string(), crate::session::DEFAULT_PORT)),
    }
}

/// `--profile`: where both ends' CPUs spent the measured window, shared by `tcp`, `udp`,
/// `rr` and `rfc2544`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct ProfileArgs {
    /// Sample every CPU of both ends during the measured window (perf_event_open, the
    /// cpu-clock event) and report the top kernel functions and where the CPU time went by
    /// category (data copy, TCP/IP, UDP, driver and NAPI, softirq, ...). Needs root or
    /// CAP_PERFMON (or kernel.perf_event_paranoid <= -1) and readable /proc/kallsyms at each
    /// end; an end that cannot profile says so and the test runs all the same.
    #[arg(long)]
    pub profile: bool,
    /// Samples per second per CPU for --profile (1-10000).
    #[arg(long, value_name = "HZ", default_value_t = 999, requires = "profile")]
    pub profile_hz: u32,
    /// With --profile: record kernel call chains and keep folded stacks (the input of
    /// flamegraph.pl or inferno-flamegraph).
    #[arg(long, requires = "profile")]
    pub profile_callchains: bool,
    /// With --profile-callchains: write each end's folded stacks and flame graph to
    /// DIR/client.folded, DIR/client.svg, DIR/server.folded and DIR/server.svg (rfc2544: per
    /// frame size, DIR/64B-client.svg, ...).
    #[arg(long, value_name = "DIR", requires = "profile_callchains")]
    pub profile_out: Option<std::path::PathBuf>,
}

impl ProfileArgs {
    /// The spec both ends profile by, `None` without --profile.
    pub fn spec(&self) -> Result<Option<linerate_wire::profile::ProfileSpec>, UsageError> {
        if !self.profile {
            return Ok(None);
        }
        super::linux_only("--profile (perf events)")?;
        if cfg!(not(feature = "chart")) && self.profile_out.is_some() {
            return Err(super::not_in_this_build("--profile-out", "chart"));
        }
        let max = linerate_wire::profile::MAX_FREQUENCY_HZ;
        if self.profile_hz == 0 || self.profile_hz > max {
            return Err(UsageError(format!(
                "--profile-hz {}: give 1 to {max} samples per second (999 by default)",
                self.profile_hz
            )));
        }
        Ok(Some(linerate_wire::profile::ProfileSpec {
            frequency_hz: self.profile_hz,
            callchains: self.profile_callchains,
        }))
    }
}

/// Where a run is kept (`crate::store`): every test command stores its result. A build
/// without the `store` feature (the board's core) keeps nothing and has no --db or --tag;
/// --no-store is accepted there, so that one script serves both builds.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct StoreArgs {
    /// Results database (SQLite) to store this run in; default
    /// $XDG_DATA_HOME/linerate/results.db (~/.local/share/linerate/results.db).
    #[cfg(feature = "store")]
    #[arg(long, value_name = "PATH", env = "LINERATE_DB")]
    pub db: Option<std::path::PathBuf>,
    /// Do not store this run in the results database.
    #[arg(
        long,
        env = "LINERATE_NO_STORE",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_store: bool,
    /// Label the stored run (repeatable); `linerate history --tag TAG` finds it.
    #[cfg(feature = "store")]
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

/// Longest `--tag`.
pub const MAX_TAG_LEN: usize = 64;

impl StoreArgs {
    /// Checks the tags before anything runs.
    pub fn validate(&self) -> Result<(), UsageError> {
        #[cfg(feature = "store")]
        for t in &self.tags {
            if t.is_empty() || t.len() > MAX_TAG_LEN || t.chars().any(char::is_control) {
                return Err(UsageError(format!(
                    "--tag '{}': use 1 to {MAX_TAG_LEN} printable characters",
                    t.escape_debug()
                )));
            }
        }
        Ok(())
    }
}

/// The multicast options of `udp` (HOST is then the group).
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct McastArgs {
    /// Multicast (HOST is a group): the receiving `linerate serve`s, HOST[:PORT] each
    /// (default port 5301), comma-separated or repeated. Each is ordered to join the group
    /// over its control connection, on the interface that connection arrives on, and
    /// reports its own row (iperf2: `iperf -s -u -B GROUP` on each receiver).
    #[arg(long, value_delimiter = ',', value_name = "HOST[:PORT]", value_parser = parse_receiver)]
    pub receivers: Vec<(String, u16)>,
    /// Multicast: TTL (IPv4) or hop limit (IPv6) of the datagrams, 1-255 (iperf2 -T;
    /// default 1: the local link).
    #[arg(short = 'T', long, value_name = "N")]
    pub ttl: Option<u32>,
    /// Multicast: source-specific (SSM): the receivers join the group for this source
    /// address only, and count no datagram of another (iperf2 -H / --ssm-host).
    #[arg(short = 'H', long, value_name = "ADDR")]
    pub ssm_source: Option<IpAddr>,
    /// Multicast: send out of this interface instead of the route's (iperf2's
    /// `-c GROUP%DEV` / `-B ADDR`).
    #[arg(long, value_name = "NAME")]
    pub mcast_interface: Option<String>,
}

impl McastArgs {
    /// Whether any multicast option was given.
    pub fn any(&self) -> bool {
        !self.receivers.is_empty()
            || self.ttl.is_some()
            || self.ssm_source.is_some()
            || self.mcast_interface.is_some()
    }
}

/// One `--receivers` entry.
fn parse_receiver(s: &str) -> Result<(String, u16), String> {
    parse_dut(s).map_err(|_| {
        format!("--receivers {s:?}: give HOST or HOST:PORT (IPv6 as [ADDR]:PORT), e.g. --receivers 198.18.0.2,198.18.0.3:5301")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dut_addresses() {
        let d = crate::session::DEFAULT_PORT;
        assert_eq!(parse_dut("r1"), Ok(("r1".into(), d)));
        assert_eq!(parse_dut("10.0.0.1:6000"), Ok(("10.0.0.1".into(), 6000)));
        assert_eq!(parse_dut("[fd00::1]:7"), Ok(("fd00::1".into(), 7)));
        assert_eq!(parse_dut("[fd00::1]"), Ok(("fd00::1".into(), d)));
        assert_eq!(parse_dut("fd00::1"), Ok(("fd00::1".into(), d)));
        for bad in ["", "h:", "h:0", "h:x", ":5", "[fd00::1", "[::1]x"] {
            let e = parse_dut(bad).unwrap_err();
            assert!(e.contains("give HOST or HOST:PORT"), "{bad}: {e}");
        }
    }
}
