//! A campaign's record (`linerate campaign`): every sweep's record, and the best-case table
//! built from their best points, shaped like seed 004's ("Best case results": a row per
//! MTU, a column per protocol and direction).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sweep::SweepRecord;

/// Layout version of [`CampaignRecord`].
pub const CAMPAIGN_SCHEMA_VERSION: u32 = 1;

/// One sweep of the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CampaignSweep {
    /// Its name in the file.
    pub name: String,
    /// Its row in the best-case table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<String>,
    /// Its column in the best-case table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// The sweep.
    pub record: SweepRecord,
}

/// The best-case table: each cell the best point's mean of its sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BestCaseTable {
    /// Its title.
    pub title: String,
    /// The name of the rows' dimension.
    pub rows_name: String,
    /// Row labels, in the order the sweeps first name them.
    pub rows: Vec<String>,
    /// Column labels, likewise.
    pub columns: Vec<String>,
    /// `cells[row][column]`: the best mean, `None` where no sweep had a best point.
    pub cells: Vec<Vec<Option<f64>>>,
    /// The metric of the cells (when all sweeps share one).
    pub metric: String,
    /// `points[row][column]`: the best point's values in words.
    pub best_points: Vec<Vec<Option<String>>>,
}

/// The whole campaign (`linerate campaign --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CampaignRecord {
    /// Layout version ([`CAMPAIGN_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// The campaign's name.
    pub name: String,
    /// The file it came from.
    pub file: String,
    /// Every sweep, in order.
    pub sweeps: Vec<CampaignSweep>,
    /// The best-case table, when the file asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<BestCaseTable>,
}

/// Builds the best-case table from the sweeps that have a row and a column.
pub fn best_case(title: &str, rows_name: &str, sweeps: &[CampaignSweep]) -> BestCaseTable {
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for s in sweeps {
        if let (Some(r), Some(c)) = (&s.row, &s.column) {
            if !rows.contains(r) {
                rows.push(r.clone());
            }
            if !columns.contains(c) {
                columns.push(c.clone());
            }
        }
    }
    let mut cells = vec![vec![None; columns.len()]; rows.len()];
    let mut best_points = vec![vec![None; columns.len()]; rows.len()];
    let mut metric = String::new();
    for s in sweeps {
        let (Some(r), Some(c)) = (&s.row, &s.column) else {
            continue;
        };
        let (Some(ri), Some(ci)) = (
            rows.iter().position(|x| x == r),
            columns.iter().position(|x| x == c),
        ) else {
            continue;
        };
        if let Some(b) = &s.record.best {
            cells[ri][ci] = Some(b.mean);
            best_points[ri][ci] = s
                .record
                .points
                .iter()
                .find(|p| p.index == b.point)
                .map(|p| p.label());
            if metric.is_empty() {
                metric = b.metric.clone();
            } else if metric != b.metric {
                metric = "mixed".into();
            }
        }
    }
    BestCaseTable {
        title: title.to_string(),
        rows_name: rows_name.to_string(),
        rows,
        columns,
        cells,
        metric,
        best_points,
    }
}
