//! The runs of a fleet (`linerate fleet run`): each pair is a run whose `point` names the
//! fleet run (`{"fleet": NAME, "round": R, ...}`), so a fleet is read back by its name.
//!
//! A fleet of 200 agents has 39,800 pairs: they are handed over one row at a time
//! ([`Store::each_fleet_run`]), so a reader keeps what it needs of each and never holds
//! every record at once.

use super::{Store, StoreError};

/// One stored pair of a fleet run, as its row holds it.
#[derive(Debug, Clone, Copy)]
pub struct FleetRun<'a> {
    /// The run's id.
    pub id: i64,
    /// `run` (a test that ran) or `fleet_failed`.
    pub kind: &'a str,
    /// The fleet facts of the pair (`point`), JSON text.
    pub point: &'a str,
    /// The stored record, JSON text.
    pub record: &'a str,
}

impl Store {
    /// Hands every stored pair of the fleet run `name` to `each`, oldest first, one row at a
    /// time; the first error `each` returns ends the walk and is returned.
    pub fn each_fleet_run<E: From<StoreError>>(
        &self,
        name: &str,
        each: &mut dyn FnMut(FleetRun<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, point, record FROM runs
                 WHERE point IS NOT NULL AND json_extract(point, '$.fleet') = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let mut rows = stmt.query([name]).map_err(|e| self.sql(e))?;
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            let text = |i: usize| {
                row.get_ref(i).and_then(|v| {
                    v.as_str().map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e))
                    })
                })
            };
            let run = FleetRun {
                id: row.get(0).map_err(|e| self.sql(e))?,
                kind: text(1).map_err(|e| self.sql(e))?,
                point: text(2).map_err(|e| self.sql(e))?,
                record: text(3).map_err(|e| self.sql(e))?,
            };
            each(run)?;
        }
        Ok(())
    }

    /// Whether the store holds a pair of the fleet run `name`.
    pub fn has_fleet_run(&self, name: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM runs
                 WHERE point IS NOT NULL AND json_extract(point, '$.fleet') = ?1)",
                [name],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))
    }
}
