//! The commands: `linerate X` lives in `app/X.rs` (or `app/X/`), its arguments in
//! `cli/X.rs`. This file dispatches and holds what every command shares (stdout, Ctrl-C);
//! [`mod@run`] runs a planned test (tcp, udp, rr) once with live output or repeated. Results go
//! to stdout; progress, log lines and warnings to stderr.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use linerate_wire::control::Transport;

use crate::cli::args::{Args, Command};

#[cfg(feature = "analyze")]
mod analyze;
#[cfg(feature = "sweep")]
mod campaign;
#[cfg(feature = "store")]
mod check;
mod compare;
mod demo;
pub mod doctor;
#[cfg(feature = "fleet")]
mod fleet;
#[cfg(feature = "generate")]
mod generate;
#[cfg(feature = "store")]
mod history;
mod keep;
#[cfg(feature = "lab")]
mod lab;
pub mod metrics;
mod multicast;
mod order;
#[cfg(feature = "report")]
mod report;
mod rfc2544;
mod rr;
mod run;
#[cfg(feature = "schema")]
mod schema;
mod serve;
mod stream;
#[cfg(feature = "sweep")]
mod sweep;

/// Runs a command. Errors bubble up to `main`, which prints them on one line and exits 2.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Serve(a) => serve::command(&a),
        Command::Tcp(a) => stream::command(&a, Transport::Tcp),
        Command::Udp(a) => stream::command(&a, Transport::Udp),
        #[cfg(feature = "quic")]
        Command::Quic(a) => stream::quic(&a),
        Command::Rr(a) => rr::command(&a),
        Command::Compare(a) => compare::command(&a),
        Command::Demo(a) => demo::command(&a),
        Command::Rfc2544(a) => rfc2544::command(&a),
        #[cfg(feature = "lab")]
        Command::Lab(a) => lab::command(&a),
        Command::Doctor(a) => doctor::command(&a),
        #[cfg(feature = "analyze")]
        Command::Analyze(a) => analyze::command(&a),
        #[cfg(feature = "schema")]
        Command::Schema(a) => schema::command(&a),
        #[cfg(feature = "sweep")]
        Command::Sweep(a) => sweep::command(&a),
        #[cfg(feature = "store")]
        Command::History(a) => history::command(&a),
        #[cfg(feature = "store")]
        Command::Check(a) => check::command(&a),
        #[cfg(feature = "sweep")]
        Command::Campaign(a) => campaign::command(&a),
        #[cfg(feature = "report")]
        Command::Report(a) => report::command(&a),
        #[cfg(feature = "fleet")]
        Command::Fleet(a) => fleet::command(&a),
        #[cfg(feature = "generate")]
        Command::Generate(a) => generate::command(&a),
    }
}

pub(crate) fn write_out(s: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// Installs SIGINT/SIGTERM handlers (Ctrl-C and Ctrl-Break on Windows) that set `flag`; a
/// second signal exits at once.
pub(crate) fn signal_flag(flag: &Arc<AtomicBool>) -> anyhow::Result<()> {
    Ok(crate::sys::process::on_interrupt(flag, true)?)
}
