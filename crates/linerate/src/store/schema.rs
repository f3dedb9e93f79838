//! The database's schema and its migrations. `PRAGMA user_version` holds the version; each
//! entry of [`MIGRATIONS`] takes a file from the version before it to its own. Never edit a
//! released step: add one. `tests/data/results-v1.db` is a file made by version 1, and a
//! test opens it with this build.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// `(version, SQL)`: the steps, oldest first.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            uuid TEXT NOT NULL UNIQUE,
            command TEXT NOT NULL,
            kind TEXT NOT NULL,
            started_at TEXT NOT NULL,
            stored_at TEXT NOT NULL,
            server TEXT,
            client_host TEXT,
            server_host TEXT,
            tool_version TEXT NOT NULL,
            argv TEXT NOT NULL,
            params TEXT NOT NULL,
            hosts TEXT NOT NULL,
            headline TEXT,
            primary_metric TEXT,
            primary_value REAL,
            exit_code INTEGER,
            record TEXT NOT NULL
        );
        CREATE TABLE run_tags (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (run_id, tag)
        );
        CREATE INDEX runs_started_at ON runs(started_at);",
    ),
    (
        // Sweeps: a point's runs name their sweep and the point's values; tags and commands
        // get indexes for `history`.
        2,
        "ALTER TABLE runs ADD COLUMN sweep_id INTEGER REFERENCES runs(id);
        ALTER TABLE runs ADD COLUMN point TEXT;
        CREATE INDEX runs_sweep ON runs(sweep_id);
        CREATE INDEX runs_command ON runs(command);
        CREATE INDEX run_tags_tag ON run_tags(tag);",
    ),
];

/// The version this build writes.
pub const LATEST: i64 = 2;

/// The file's schema version.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings `conn` to version `to` (at most [`LATEST`]): every missing step in one immediate
/// transaction, so two processes opening an old file at once migrate it once.
pub fn migrate(conn: &mut Connection, to: i64, path: &str) -> Result<(), StoreError> {
    let sql = |source| StoreError::Sql {
        path: path.to_string(),
        source,
    };
    let found = version(conn).map_err(|source| StoreError::Open {
        path: path.to_string(),
        source,
    })?;
    if found > LATEST {
        return Err(StoreError::TooNew {
            path: path.to_string(),
            found,
            known: LATEST,
        });
    }
    if found >= to {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    // Another process may have migrated while this one waited for the lock.
    let now = version(&tx).map_err(sql)?;
    for (v, step) in MIGRATIONS.iter().filter(|(v, _)| *v > now && *v <= to) {
        tx.execute_batch(step).map_err(sql)?;
        tx.pragma_update(None, "user_version", v).map_err(sql)?;
    }
    tx.commit().map_err(sql)
}
