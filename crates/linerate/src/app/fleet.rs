//! `linerate fleet`: `run` (the coordinator, [`crate::fleet`]) and `manifests`.

use std::process::ExitCode;

use crate::cli::fleet::{FleetArgs, FleetCommand, RunArgs};

/// Runs `linerate fleet ...`.
pub fn command(a: &FleetArgs) -> anyhow::Result<ExitCode> {
    match &a.command {
        FleetCommand::Run(r) => run(r),
        FleetCommand::Manifests(m) => {
            crate::fleet::manifests::run(m)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run(_a: &RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("linerate fleet run is not written yet")
}
