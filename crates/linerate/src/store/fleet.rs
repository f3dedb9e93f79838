//! The runs of a fleet (`linerate fleet run`): each pair is a run whose `point` names the
//! fleet run (`{"fleet": NAME, "round": R, ...}`), so a fleet is read back by its name.

use super::{Store, StoreError};

/// One stored pair of a fleet run.
#[derive(Debug, Clone)]
pub struct FleetRun {
    /// The run's id.
    pub id: i64,
    /// `run` (a test that ran) or `fleet_failed`.
    pub kind: String,
    /// The fleet facts of the pair (`point`).
    pub point: serde_json::Value,
    /// The stored record.
    pub record: serde_json::Value,
}

impl Store {
    /// Every stored pair of the fleet run `name`, oldest first.
    pub fn fleet_runs(&self, name: &str) -> Result<Vec<FleetRun>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, point, record FROM runs
                 WHERE point IS NOT NULL AND json_extract(point, '$.fleet') = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([name], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, kind, point, record) = row.map_err(|e| self.sql(e))?;
            let parse = |t: &str| {
                serde_json::from_str(t).map_err(|source| StoreError::Record {
                    path: self.path().to_string(),
                    id,
                    source,
                })
            };
            out.push(FleetRun {
                id,
                kind,
                point: parse(&point)?,
                record: parse(&record)?,
            });
        }
        Ok(out)
    }
}
