//! `linerate report` arguments.

use clap::Args as ClapArgs;

/// `linerate report` arguments.
#[derive(Debug, ClapArgs)]
pub struct ReportArgs {
    /// Result files (--json output of tcp, udp, rr, rfc2544, a repeated test, sweep or
    /// campaign) or stored run ids (`linerate history` lists them; a number that is not a
    /// file's name). Two or more runs of one kind are compared with the first.
    #[arg(required_unless_present = "fleet", num_args = 1.., value_name = "FILE|ID")]
    pub inputs: Vec<std::path::PathBuf>,
    /// The fleet run NAME in the database (`fleet run --name NAME`): the mesh as heat maps,
    /// the worst pairs, and every pair's run, each cell linked to it.
    #[arg(long, value_name = "NAME", conflicts_with = "inputs")]
    pub fleet: Option<String>,
    /// Write the HTML page to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Also write every chart of the page to DIR as NAME.svg and NAME.png (for slides).
    #[arg(long, value_name = "DIR")]
    pub chart_dir: Option<std::path::PathBuf>,
    /// Results database the ids are in; default $XDG_DATA_HOME/linerate/results.db.
    #[arg(long, value_name = "PATH", env = "LINERATE_DB")]
    pub db: Option<std::path::PathBuf>,
}
