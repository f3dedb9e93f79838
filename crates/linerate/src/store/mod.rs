//! The results database: every run of every command (tcp, udp, rr, rfc2544, doctor, sweep)
//! kept in a local SQLite file, so that nothing has to be run twice to be compared.
//!
//! * **Where.** `--db PATH` (or `LINERATE_DB`), else `$XDG_DATA_HOME/linerate/results.db`,
//!   else `$HOME/.local/share/linerate/results.db` ([`default_path`]). `--no-store` (or
//!   `LINERATE_NO_STORE=1`) keeps nothing.
//! * **What.** One row per run in `runs`: the command, when, against which server, both
//!   ends' host facts (kernel, CPUs, driver, firmware, MTU, offloads, coalescing, and this
//!   host's sysctls that matter), the parameters (the plan, flat, for `history --param`),
//!   the headline figure, the exit code and the full result record as JSON (the same JSON
//!   `--json` prints, so a stored run can be rendered, diagnosed or compared again). Tags
//!   (`--tag`) are in `run_tags`.
//! * **Versions.** `PRAGMA user_version` is the schema version; [`schema::MIGRATIONS`] lists
//!   each step, run in order inside one immediate transaction when a database is opened,
//!   so an older file (tests/data/results-v1.db, made by schema 1) is brought up to date
//!   and a newer one is refused with a clear error rather than misread.
//! * **Several writers.** WAL journal and a busy time-out ([`BUSY_TIMEOUT`]): concurrent
//!   runs writing one database wait for each other and lose nothing. Every insert is one
//!   immediate transaction.
//! * **Failure never loses output.** The commands print their results first and store them
//!   after; a database that cannot be opened or written (read-only, full disk, not a
//!   database) only adds a warning on stderr that says what happened
//!   (`app::keep`).

pub mod entry;
#[cfg(feature = "fleet")]
pub mod fleet;
pub mod schema;
pub mod series;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a writer waits for another one to finish before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// File name of the default database inside the data directory.
pub const DB_FILE: &str = "results.db";

/// A failure of the results database, in words that say what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No data directory to put the default database in.
    #[error("no data directory: set XDG_DATA_HOME or HOME, or give --db PATH")]
    NoDataDir,
    /// The database could not be opened or created.
    #[error("cannot open the results database {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// The directory for the database could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file was made by a newer linerate.
    #[error("the results database {path} has schema version {found}, newer than this linerate's {known}: upgrade linerate, or give another --db")]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// No database at the path (reading commands do not create one).
    #[error("no results database at {0}: runs are stored there by default (or give --db PATH)")]
    Missing(String),
    /// A query or write failed.
    #[error("results database {path}: {source}")]
    Sql {
        /// The file.
        path: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// A stored record is not valid JSON.
    #[error("results database {path}: run {id} holds a damaged record: {source}")]
    Record {
        /// The file.
        path: String,
        /// The run.
        id: i64,
        /// Why.
        source: serde_json::Error,
    },
}

/// The default database: `$XDG_DATA_HOME/linerate/results.db`, else
/// `$HOME/.local/share/linerate/results.db` (the XDG Base Directory rules: a relative
/// XDG_DATA_HOME is ignored).
pub fn default_path() -> Result<PathBuf, StoreError> {
    data_dir(
        std::env::var_os("XDG_DATA_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
    .map(|d| d.join("linerate").join(DB_FILE))
    .ok_or(StoreError::NoDataDir)
}

fn data_dir(xdg: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    xdg.filter(|p| p.is_absolute()).or_else(|| {
        home.filter(|h| h.is_absolute())
            .map(|h| h.join(".local/share"))
    })
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: String,
}

/// What a run is stored with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewRun {
    /// The command: tcp, udp, rr, rfc2544, doctor, sweep.
    pub command: String,
    /// The record's schema name: run, trials, rfc2544, doctor, sweep.
    pub kind: String,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// The server as given (host:port), if any.
    pub server: Option<String>,
    /// This end's host name.
    pub client_host: Option<String>,
    /// The server's host name, when it reported one.
    pub server_host: Option<String>,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// The command line.
    pub argv: Vec<String>,
    /// The parameters, a flat JSON object (`history --param KEY=VALUE` matches them).
    pub params: serde_json::Value,
    /// Both ends' host facts.
    pub hosts: serde_json::Value,
    /// The headline figure in words, e.g. "throughput 941 Mbit/s".
    pub headline: Option<String>,
    /// The primary metric's name with its unit, e.g. `throughput_bps`.
    pub primary_metric: Option<String>,
    /// Its value (a mean for repeated runs).
    pub primary_value: Option<f64>,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// The full record, as `--json` prints it.
    pub record: serde_json::Value,
    /// `--tag` labels.
    pub tags: Vec<String>,
    /// The sweep this run is a point of.
    pub sweep_id: Option<i64>,
    /// The point's values (a JSON object), for a sweep's point.
    pub point: Option<serde_json::Value>,
}

/// One stored run as `linerate history` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoredRun {
    /// Run id (what `linerate compare` takes).
    pub id: i64,
    /// Unique id of the run across databases.
    pub uuid: String,
    /// The command: tcp, udp, rr, rfc2544, doctor, sweep.
    pub command: String,
    /// The record's schema name: run, trials, rfc2544, doctor, sweep.
    pub kind: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// The server as given (host:port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// This end's host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_host: Option<String>,
    /// The server's host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// "linerate x.y.z" of the run.
    pub tool_version: String,
    /// The headline figure in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// The primary metric with its unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_metric: Option<String>,
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_value: Option<f64>,
    /// The command's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// `--tag` labels, sorted.
    pub tags: Vec<String>,
    /// The sweep it is a point of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<i64>,
}

/// The list `linerate history --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryRecord {
    /// The database listed.
    pub database: String,
    /// Its schema version.
    pub schema_version: i64,
    /// The runs that matched, newest first.
    pub runs: Vec<StoredRun>,
}

/// What `linerate history` filters by; every given filter must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Command (tcp, udp, rr, rfc2544, doctor, sweep).
    pub command: Option<String>,
    /// Host name or server address, a substring of either end's host name or the server.
    pub host: Option<String>,
    /// Started at or after (RFC 3339 or a date; compared as text, which orders RFC 3339 UTC).
    pub since: Option<String>,
    /// Started before.
    pub until: Option<String>,
    /// `(key, value)` pairs the parameters must hold.
    pub params: Vec<(String, String)>,
    /// Tags the run must have.
    pub tags: Vec<String>,
    /// Runs of this sweep only.
    pub sweep_id: Option<i64>,
    /// Most rows.
    pub limit: u32,
}

impl Store {
    /// Opens (creating if needed, with its directory) the database at `path` and brings its
    /// schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        Self::open_with(path, OpenFlags::default(), schema::LATEST)
    }

    /// Opens an existing database (reading commands never create one) and brings its
    /// schema up to date.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.display().to_string()));
        }
        let flags = OpenFlags::default() - OpenFlags::SQLITE_OPEN_CREATE;
        Self::open_with(path, flags, schema::LATEST)
    }

    /// Opens `path` and migrates it to schema version `to` (tests make older files with it).
    pub(crate) fn open_with(path: &Path, flags: OpenFlags, to: i64) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let open_err = |source| StoreError::Open {
            path: shown.clone(),
            source,
        };
        let mut conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // WAL lets readers and one writer work at once; the mode is kept in the file.
        // Switching a new file to WAL needs it to itself, and SQLite answers "busy" at once,
        // without its busy handler, when another opener holds a lock this one would wait for
        // (a deadlock to SQLite): openers racing on a new file retry here, within the same
        // busy time-out (a CI run saw one of six concurrent openers fail without this).
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(open_err(e)),
            }
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        schema::migrate(&mut conn, to, &shown)?;
        Ok(Store { conn, path: shown })
    }

    /// The file, as shown in messages.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// The schema version of the open file.
    pub fn version(&self) -> Result<i64, StoreError> {
        schema::version(&self.conn).map_err(|e| self.sql(e))
    }

    /// Stores a run in one transaction; returns its id.
    pub fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        self.insert_with_record(run, &run.record.to_string())
    }

    /// [`Store::insert`] with the record given as its JSON text (`run.record` is not
    /// used): a large record goes to the database without being built as a tree.
    pub fn insert_with_record(&mut self, run: &NewRun, record: &str) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        tx.execute(
            "INSERT INTO runs (uuid, command, kind, started_at, stored_at, server, client_host,
                server_host, tool_version, argv, params, hosts, headline, primary_metric,
                primary_value, exit_code, record, sweep_id, point)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18, ?19)",
            params![
                new_uuid(),
                run.command,
                run.kind,
                run.started_at,
                now,
                run.server,
                run.client_host,
                run.server_host,
                run.tool_version,
                serde_json::Value::from(run.argv.clone()).to_string(),
                run.params.to_string(),
                run.hosts.to_string(),
                run.headline,
                run.primary_metric,
                run.primary_value.filter(|v| v.is_finite()),
                run.exit_code,
                record,
                run.sweep_id,
                run.point.as_ref().map(|p| p.to_string()),
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        for tag in &run.tags {
            tx.execute(
                "INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?1, ?2)",
                params![id, tag],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// Sets a stored run's record and headline again (a sweep's record grows point by
    /// point).
    pub fn update_record(
        &mut self,
        id: i64,
        record: &serde_json::Value,
        headline: Option<&str>,
        exit_code: Option<i32>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET record = ?2, headline = ?3, exit_code = ?4 WHERE id = ?1",
                params![id, record.to_string(), headline, exit_code],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The runs that match `f`, newest first.
    pub fn list(&self, f: &Filter) -> Result<Vec<StoredRun>, StoreError> {
        let mut sql = String::from(
            "SELECT id, uuid, command, kind, started_at, server, client_host, server_host,
                tool_version, headline, primary_metric, primary_value, exit_code, sweep_id,
                (SELECT group_concat(tag, char(10)) FROM
                    (SELECT tag FROM run_tags t WHERE t.run_id = runs.id ORDER BY tag))
             FROM runs WHERE 1 = 1",
        );
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut arg = |sql: &mut String, clause: &str, v: rusqlite::types::Value| {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        use rusqlite::types::Value::{Integer, Text};
        if let Some(c) = &f.command {
            arg(&mut sql, " AND command = ?", Text(c.clone()));
        }
        if let Some(h) = &f.host {
            arg(
                &mut sql,
                " AND (instr(coalesce(client_host, ''), ?) > 0",
                Text(h.clone()),
            );
            arg(
                &mut sql,
                " OR instr(coalesce(server_host, ''), ?) > 0",
                Text(h.clone()),
            );
            arg(
                &mut sql,
                " OR instr(coalesce(server, ''), ?) > 0)",
                Text(h.clone()),
            );
        }
        if let Some(s) = &f.since {
            arg(&mut sql, " AND started_at >= ?", Text(s.clone()));
        }
        if let Some(u) = &f.until {
            arg(&mut sql, " AND started_at < ?", Text(u.clone()));
        }
        for (k, v) in &f.params {
            // The key is bound as a JSON path; the value compared as text, so 65536 and
            // "65536" match alike.
            arg(
                &mut sql,
                " AND CAST(json_extract(params, ?",
                Text(format!("$.\"{}\"", k.replace('"', ""))),
            );
            arg(&mut sql, ") AS TEXT) = ?", Text(v.clone()));
        }
        for t in &f.tags {
            arg(
                &mut sql,
                " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.id AND t.tag = ?)",
                Text(t.clone()),
            );
        }
        if let Some(s) = f.sweep_id {
            arg(&mut sql, " AND sweep_id = ?", Integer(s));
        }
        arg(
            &mut sql,
            " ORDER BY started_at DESC, id DESC LIMIT ?",
            Integer(i64::from(f.limit)),
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                let tags: Option<String> = r.get(14)?;
                Ok(StoredRun {
                    id: r.get(0)?,
                    uuid: r.get(1)?,
                    command: r.get(2)?,
                    kind: r.get(3)?,
                    started_at: r.get(4)?,
                    server: r.get(5)?,
                    client_host: r.get(6)?,
                    server_host: r.get(7)?,
                    tool_version: r.get(8)?,
                    headline: r.get(9)?,
                    primary_metric: r.get(10)?,
                    primary_value: r.get(11)?,
                    exit_code: r.get(12)?,
                    sweep_id: r.get(13)?,
                    tags: tags
                        .map(|t| t.split('\n').map(str::to_string).collect())
                        .unwrap_or_default(),
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// A stored run's kind and full record as its JSON text; `None` when there is no run
    /// `id`.
    pub fn record_text(&self, id: i64) -> Result<Option<(String, String)>, StoreError> {
        self.conn
            .query_row(
                "SELECT kind, record FROM runs WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// A stored run's kind and full record; `None` when there is no run `id`.
    pub fn record(&self, id: i64) -> Result<Option<(String, serde_json::Value)>, StoreError> {
        let Some((kind, text)) = self.record_text(id)? else {
            return Ok(None);
        };
        let v = serde_json::from_str(&text).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            id,
            source,
        })?;
        Ok(Some((kind, v)))
    }

    /// Number of stored runs.
    pub fn count(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }
}

/// A random version-4 UUID (RFC 9562 layout) from the OS's generator, so runs of several
/// hosts can be merged by it.
pub fn new_uuid() -> String {
    let mut b = [0u8; 16];
    if getrandom::getrandom(&mut b).is_err() {
        // No OS randomness: the time in nanoseconds still makes the id unique on this host.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
