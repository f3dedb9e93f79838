//! `linerate compare` arguments.

use clap::Args as ClapArgs;

/// `linerate compare` arguments.
#[derive(Debug, ClapArgs)]
pub struct CompareArgs {
    /// Result files (--json output of tcp, udp, rr or rfc2544, or of a repeated test; all of
    /// one kind); the first is the baseline A, each other one is compared with it.
    #[arg(required = true, num_args = 2.., value_name = "FILE")]
    pub files: Vec<std::path::PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}
