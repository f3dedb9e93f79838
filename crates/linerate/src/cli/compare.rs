//! `linerate compare` arguments.

use clap::Args as ClapArgs;

/// `linerate compare` arguments.
#[derive(Debug, ClapArgs)]
pub struct CompareArgs {
    /// Result files (--json output of tcp, udp, rr or rfc2544, or of a repeated test; all of
    /// one kind) or stored run ids (`linerate history` lists them; a number that is not a
    /// file's name); the first is the baseline A, each other one is compared with it.
    #[arg(required = true, num_args = 2.., value_name = "FILE|ID")]
    pub files: Vec<std::path::PathBuf>,
    /// Results database the ids are in; default $XDG_DATA_HOME/linerate/results.db.
    #[cfg(feature = "store")]
    #[arg(long, value_name = "PATH", env = "LINERATE_DB")]
    pub db: Option<std::path::PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}
