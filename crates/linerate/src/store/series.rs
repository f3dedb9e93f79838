//! Stored runs with what makes a series of them: the command, the flat parameters, the
//! host names and the full record (for `linerate check`'s baseline and `history
//! --changes`). Which runs belong together is decided in `model::series`.

use rusqlite::params;

use super::{Store, StoreError};

/// One stored run with its parameters and record.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// The command: tcp, udp, rr, ...
    pub command: String,
    /// The record's schema name: run, trials, ...
    pub kind: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// This end's host name.
    pub client_host: Option<String>,
    /// The server's host name.
    pub server_host: Option<String>,
    /// The flat parameters.
    pub params: serde_json::Value,
    /// `--tag` labels.
    pub tags: Vec<String>,
    /// The full record.
    pub record: serde_json::Value,
}

const COLUMNS: &str = "id, command, kind, started_at, client_host, server_host, params, record,
    (SELECT group_concat(tag, char(10)) FROM
        (SELECT tag FROM run_tags t WHERE t.run_id = runs.id ORDER BY tag))";

impl Store {
    fn row_of(&self, r: &rusqlite::Row<'_>) -> rusqlite::Result<(RunRow, String, String)> {
        let tags: Option<String> = r.get(8)?;
        Ok((
            RunRow {
                id: r.get(0)?,
                command: r.get(1)?,
                kind: r.get(2)?,
                started_at: r.get(3)?,
                client_host: r.get(4)?,
                server_host: r.get(5)?,
                params: serde_json::Value::Null,
                tags: tags
                    .map(|t| t.split('\n').map(str::to_string).collect())
                    .unwrap_or_default(),
                record: serde_json::Value::Null,
            },
            r.get(6)?,
            r.get(7)?,
        ))
    }

    fn parsed(
        &self,
        (mut row, params, record): (RunRow, String, String),
    ) -> Result<RunRow, StoreError> {
        let bad = |source| StoreError::Record {
            path: self.path.clone(),
            id: row.id,
            source,
        };
        row.params = serde_json::from_str(&params).map_err(bad)?;
        row.record = serde_json::from_str(&record).map_err(bad)?;
        Ok(row)
    }

    /// Stored run `id` with its parameters and record; `None` when there is none.
    pub fn row(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE id = ?1");
        let raw = self
            .conn
            .query_row(&sql, params![id], |r| self.row_of(r))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(|e| self.sql(e))?;
        raw.map(|r| self.parsed(r)).transpose()
    }

    /// The runs of `command` (tcp, udp, rr: kinds `run` and `trials`) with exactly these flat
    /// parameters, started at or before `until` (all when `None`), oldest first; with `tag`,
    /// only runs that carry it. Newest `limit` of them.
    pub fn rows_like(
        &self,
        command: &str,
        params: &serde_json::Value,
        until: Option<&str>,
        tag: Option<&str>,
        limit: u32,
    ) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT * FROM (SELECT {COLUMNS} FROM runs
             WHERE command = ?1 AND kind IN ('run', 'trials') AND params = ?2
               AND (?3 IS NULL OR started_at <= ?3)
               AND (?4 IS NULL OR EXISTS
                    (SELECT 1 FROM run_tags t WHERE t.run_id = runs.id AND t.tag = ?4))
             ORDER BY started_at DESC, id DESC LIMIT ?5)
             ORDER BY started_at ASC, id ASC"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let raw = stmt
            .query_map(
                params![command, params.to_string(), until, tag, i64::from(limit)],
                |r| self.row_of(r),
            )
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        raw.into_iter().map(|r| self.parsed(r)).collect()
    }

    /// The runs with `tag` (any command), oldest first.
    pub fn rows_tagged(&self, tag: &str, limit: u32) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT * FROM (SELECT {COLUMNS} FROM runs
             WHERE EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.id AND t.tag = ?1)
             ORDER BY started_at DESC, id DESC LIMIT ?2)
             ORDER BY started_at ASC, id ASC"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let raw = stmt
            .query_map(params![tag, i64::from(limit)], |r| self.row_of(r))
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        raw.into_iter().map(|r| self.parsed(r)).collect()
    }
}
