//! `linerate fleet manifests`: the objects an engine needs to run a fleet (a Docker Swarm
//! stack; Kubernetes: a DaemonSet of agents, a headless Service, the coordinator as a Job,
//! the credentials from a Secret).

use std::path::PathBuf;

use clap::{Args as ClapArgs, ValueEnum};

/// The orchestrator the objects are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// A Docker Swarm stack file.
    Swarm,
    /// Kubernetes objects.
    Kubernetes,
}

/// Where the agents' sockets live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NetworkMode {
    /// The host's network (the host's own NICs are tested).
    Host,
    /// The pod's (or the overlay's) network.
    Pod,
}

/// `linerate fleet manifests` arguments.
#[derive(Debug, Clone, ClapArgs)]
pub struct ManifestsArgs {
    /// The orchestrator.
    #[arg(long, value_enum)]
    pub engine: Engine,
    /// The directory the files are written to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The image that holds linerate.
    #[arg(long, default_value = "linerate:latest")]
    pub image: String,
    /// How many agents (Swarm replicas; the coordinator's --expect).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub agents: u32,
    /// Host or pod network for the agents.
    #[arg(long, value_enum, default_value = "pod")]
    pub network: NetworkMode,
    /// The agents' port.
    #[arg(long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// The name of the Secret (Kubernetes) or secret (Swarm) that holds the users file.
    #[arg(long, default_value = "linerate-auth", value_name = "NAME")]
    pub auth_secret_name: String,
}

/// Writes the engine's objects into `--out`.
pub fn run(args: &ManifestsArgs) -> anyhow::Result<()> {
    anyhow::bail!(
        "linerate fleet manifests --engine {:?} is not written yet",
        args.engine
    )
}
