//! Keeping a command's result in the results database (`crate::store`), after the result
//! has gone to stdout: a database that cannot be opened or written (read-only, full disk,
//! not a database) costs a warning on stderr that says what happened and how to avoid it,
//! never the output, and never changes the exit code.
//!
//! A build without the `store` feature (the board's core) keeps nothing: its `Keeper` has
//! the same `keep_*` methods, which store nothing and say nothing.

#[cfg(feature = "store")]
use std::io::IsTerminal;

use crate::cli::common::StoreArgs;
use crate::model::doctor::DoctorRecord;
use crate::model::repeat::RunSetRecord;
use crate::model::RunRecord;
use crate::rfc2544::record::Rfc2544Record;
#[cfg(feature = "store")]
use crate::store::entry::{self, Context};
#[cfg(feature = "store")]
use crate::store::{default_path, NewRun, Store, StoreError};

/// Where and how a command keeps its runs.
#[derive(Debug, Clone)]
pub struct Keeper {
    #[cfg(feature = "store")]
    args: StoreArgs,
    command: String,
}

impl Keeper {
    /// A keeper for `command` (tcp, udp, rr, rfc2544, doctor, sweep) with the store flags.
    pub fn new(#[allow(unused_variables)] args: &StoreArgs, command: &str) -> Keeper {
        Keeper {
            #[cfg(feature = "store")]
            args: args.clone(),
            command: command.to_string(),
        }
    }

    /// The command the runs are of.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Whether runs are stored at all.
    #[cfg(feature = "store")]
    pub fn enabled(&self) -> bool {
        !self.args.no_store
    }

    /// The command line, tags and exit code a run is stored with.
    #[cfg(feature = "store")]
    pub fn context(&self, exit_code: i32) -> Context {
        Context {
            command: self.command.clone(),
            argv: std::env::args().collect(),
            tags: self.args.tags.clone(),
            exit_code: Some(exit_code),
        }
    }

    /// Opens the database (`--db`, or the default).
    #[cfg(feature = "store")]
    pub fn open(&self) -> Result<Store, StoreError> {
        let path = match &self.args.db {
            Some(p) => p.clone(),
            None => default_path()?,
        };
        Store::open(&path)
    }

    /// Stores the run that `make` builds; `None` (after a warning) when it could not be
    /// stored, or with `--no-store`.
    #[cfg(feature = "store")]
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

/// What each command keeps: one record of each kind.
#[cfg(feature = "store")]
impl Keeper {
    /// Stores a test's record.
    pub fn keep_run(&self, exit_code: i32, rec: &RunRecord) -> Option<i64> {
        self.keep(exit_code, |ctx| entry::run(rec, ctx))
    }

    /// Stores a repeated test's record.
    pub fn keep_run_set(&self, exit_code: i32, set: &RunSetRecord) -> Option<i64> {
        self.keep(exit_code, |ctx| entry::run_set(set, ctx))
    }

    /// Stores an RFC 2544 record.
    pub fn keep_rfc2544(&self, exit_code: i32, rec: &Rfc2544Record) -> Option<i64> {
        self.keep(exit_code, |ctx| entry::rfc2544(rec, ctx))
    }

    /// Stores a doctor record, started at `started_at`.
    pub fn keep_doctor(&self, rec: &DoctorRecord, started_at: &str) -> Option<i64> {
        self.keep(0, |ctx| entry::doctor(rec, started_at, ctx))
    }
}

/// Without the database (the board's core): nothing is kept.
#[cfg(not(feature = "store"))]
impl Keeper {
    /// Keeps nothing.
    pub fn keep_run(&self, _exit_code: i32, _rec: &RunRecord) -> Option<i64> {
        None
    }

    /// Keeps nothing.
    pub fn keep_run_set(&self, _exit_code: i32, _set: &RunSetRecord) -> Option<i64> {
        None
    }

    /// Keeps nothing.
    pub fn keep_rfc2544(&self, _exit_code: i32, _rec: &Rfc2544Record) -> Option<i64> {
        None
    }

    /// Keeps nothing.
    pub fn keep_doctor(&self, _rec: &DoctorRecord, _started_at: &str) -> Option<i64> {
        None
    }
}

/// The one warning of a run that could not be stored.
#[cfg(feature = "store")]
pub fn warn_not_stored(e: &StoreError) {
    eprintln!(
        "warning: the result above was not stored: {e} (the output is complete; give --db PATH for another database, or --no-store)"
    );
}
