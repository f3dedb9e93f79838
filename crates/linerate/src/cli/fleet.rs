//! `linerate fleet` arguments: `run` (the coordinator) and `manifests` (the engines'
//! objects, [`crate::fleet::manifests`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args as ClapArgs, Subcommand};

use super::common::AuthArgs;
use super::units;
use super::UsageError;

/// Longest `--agents-file`, bytes (1 MiB): thousands of agents' addresses, one a line.
const MAX_AGENTS_FILE: u64 = 1 << 20;
pub use crate::fleet::manifests::ManifestsArgs;

/// `linerate fleet` arguments.
#[derive(Debug, ClapArgs)]
pub struct FleetArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FleetCommand,
}

/// `linerate fleet` subcommands.
// Parsed once per process: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Run every ordered pair of agents in rounds of disjoint pairs and keep each pair.
    Run(RunArgs),
    /// Write an engine's objects (Docker Swarm stack, Kubernetes DaemonSet, Service, Job).
    Manifests(ManifestsArgs),
}

/// `linerate fleet run` arguments.
#[derive(Debug, ClapArgs)]
pub struct RunArgs {
    /// The agents, HOST[:PORT] (port 5301 by default; IPv6 as [ADDR]:PORT), comma-separated
    /// or repeated.
    #[arg(long, value_delimiter = ',', value_name = "HOST[:PORT],...")]
    pub agents: Vec<String>,
    /// A file of agents, one HOST[:PORT] a line (# starts a comment).
    #[arg(long, value_name = "FILE")]
    pub agents_file: Option<PathBuf>,
    /// The agents are every A and AAAA record of NAME (Docker Swarm: tasks.SERVICE;
    /// Kubernetes: a headless Service), each at PORT (5301 by default).
    #[arg(long, value_name = "NAME[:PORT]")]
    pub agents_dns: Option<String>,
    /// Wait until there are N agents (DNS: until NAME has N addresses), at most --wait.
    #[arg(long, value_name = "N")]
    pub expect: Option<usize>,
    /// How long --expect waits for the agents.
    #[arg(long, default_value = "60", value_parser = units::parse_duration, value_name = "DURATION")]
    pub wait: Duration,
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The results database (default: the user's, as `linerate history` reads it).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// The fleet run's name (default: fleet-TIME); every pair is stored with it.
    #[arg(long, value_name = "NAME", conflicts_with = "resume")]
    pub name: Option<String>,
    /// Continue the fleet run NAME in the database: run only the pairs it is missing or
    /// that failed (and its interference check, if that did not finish).
    #[arg(long, value_name = "NAME")]
    pub resume: Option<String>,
    /// Re-run K pairs alone at the end and flag those whose result in their round lies
    /// outside the alone run's confidence interval (0: no check).
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub interference: usize,
    /// How many of the worst pairs the table and the Prometheus text list.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub worst: usize,
    /// Write the fleet's figures as Prometheus text to FILE (bounded: totals, per host,
    /// the worst pairs).
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// One JSON record (schema: docs/json-schema/fleet-v1.json).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV: a header and one row per ordered pair.
    #[arg(long)]
    pub csv: bool,
    /// The test each pair runs, after `--`: tcp|udp|rr [its options, without HOST].
    #[arg(last = true, required = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// `HOST`, `HOST:PORT`, `[ADDR]:PORT` or a bare IPv6 address, as an agent.
pub fn parse_agent(s: &str) -> Result<(String, u16), UsageError> {
    super::common::parse_dut(s).map_err(|_| {
        UsageError(format!(
            "agent {:?}: give HOST or HOST:PORT (IPv6 as [ADDR]:PORT), e.g. 198.18.0.2:5301",
            linerate_wire::text::clip(s, 80)
        ))
    })
}

/// The agents of `--agents` and `--agents-file` (not `--agents-dns`, which is resolved when
/// the run starts), in the order given, without repeats.
pub fn listed_agents(a: &RunArgs) -> Result<Vec<(String, u16)>, UsageError> {
    let mut words: Vec<String> = a
        .agents
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(f) = &a.agents_file {
        let what = format!("--agents-file {}", f.display());
        let text = crate::sys::files::read_text(f, MAX_AGENTS_FILE, &what).map_err(UsageError)?;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() {
                words.push(line.to_string());
            }
        }
    }
    let mut out: Vec<(String, u16)> = Vec::new();
    for w in words {
        let agent = parse_agent(&w)?;
        if !out.contains(&agent) {
            out.push(agent);
        }
    }
    Ok(out)
}

/// A fleet run's name: 1 to 40 letters, digits, `-`, `_` or `.`.
pub fn check_name(name: &str) -> Result<(), UsageError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(UsageError(format!(
            "fleet run name {:?}: use 1 to 40 letters, digits, '-', '_' or '.'",
            linerate_wire::text::clip(name, 60)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_agents_are_checked() {
        assert!(check_name("rack7-2026.11").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(&"x".repeat(41)).is_err());
        assert_eq!(
            parse_agent("198.18.0.2").unwrap(),
            ("198.18.0.2".into(), 5301)
        );
        assert_eq!(parse_agent("[::1]:6000").unwrap(), ("::1".into(), 6000));
        assert!(parse_agent("h:0").unwrap_err().0.contains("HOST:PORT"));
    }
}
