//! `linerate generate` arguments (hidden): the man pages and shell completions, made from
//! the same clap definitions as `--help`, for the Debian package (scripts/package.sh).

use clap::{Args as ClapArgs, Subcommand};

/// `linerate generate man DIR | completions SHELL`.
#[derive(Debug, ClapArgs)]
pub struct GenerateArgs {
    /// What to generate.
    #[command(subcommand)]
    pub what: Generate,
}

/// What `linerate generate` writes.
#[derive(Debug, Subcommand)]
pub enum Generate {
    /// One man page per command in DIR: linerate.1, linerate-tcp.1, linerate-lab-up.1, ...
    Man {
        /// The directory to write the pages to (created when missing).
        dir: std::path::PathBuf,
    },
    /// The completion script of SHELL on stdout.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}
