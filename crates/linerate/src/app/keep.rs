//! Keeping a command's result in the results database (`crate::store`), after the result
//! has gone to stdout: a database that cannot be opened or written (read-only, full disk,
//! not a database) costs a warning on stderr that says what happened and how to avoid it,
//! never the output, and never changes the exit code.

use std::io::IsTerminal;

use crate::cli::args::StoreArgs;
use crate::store::entry::Context;
use crate::store::{default_path, NewRun, Store, StoreError};

/// Where and how a command keeps its runs.
#[derive(Debug, Clone)]
pub struct Keeper {
    args: StoreArgs,
    command: String,
}

impl Keeper {
    /// A keeper for `command` (tcp, udp, rr, rfc2544, doctor, sweep) with the store flags.
    pub fn new(args: &StoreArgs, command: &str) -> Keeper {
        Keeper {
            args: args.clone(),
            command: command.to_string(),
        }
    }

    /// The command the runs are of.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Whether runs are stored at all.
    pub fn enabled(&self) -> bool {
        !self.args.no_store
    }

    /// The command line, tags and exit code a run is stored with.
    pub fn context(&self, exit_code: i32) -> Context {
        Context {
            command: self.command.clone(),
            argv: std::env::args().collect(),
            tags: self.args.tags.clone(),
            exit_code: Some(exit_code),
        }
    }

    /// Opens the database (`--db`, or the default).
    pub fn open(&self) -> Result<Store, StoreError> {
        let path = match &self.args.db {
            Some(p) => p.clone(),
            None => default_path()?,
        };
        Store::open(&path)
    }

    /// Stores the run that `make` builds; `None` (after a warning) when it could not be
    /// stored, or with `--no-store`.
    pub fn keep(&self, exit_code: i32, make: impl FnOnce(&Context) -> NewRun) -> Option<i64> {
        if !self.enabled() {
            return None;
        }
        let run = make(&self.context(exit_code));
        match self
            .open()
            .and_then(|mut s| s.insert(&run).map(|id| (id, s)))
        {
            Ok((id, s)) => {
                if std::io::stderr().is_terminal() {
                    eprintln!("linerate: stored as run {id} in {}", s.path());
                }
                Some(id)
            }
            Err(e) => {
                warn_not_stored(&e);
                None
            }
        }
    }
}

/// The one warning of a run that could not be stored.
pub fn warn_not_stored(e: &StoreError) {
    eprintln!(
        "warning: the result above was not stored: {e} (the output is complete; give --db PATH for another database, or --no-store)"
    );
}
