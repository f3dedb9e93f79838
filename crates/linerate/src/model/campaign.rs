//! A campaign's record (`linerate campaign`): every sweep's record, and the best-case table
//! built from their best points, shaped like the one of Xilinx's XAPP1127 note on TEMAC
//! coalescing ("Best case results": a row per MTU, a column per protocol and direction).

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
    /// `bounds[row][column]`: the tester limited the cell's best point, so the cell is a
    /// bound (the system does at least that well); empty in records that predate it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<Vec<bool>>,
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

/// Builds the best-case table from the sweeps that have a row and a column: each cell is
/// its sweep's best pick ([`super::sweep::pick_best`]'s rule: a tester-limited point that
/// measured more takes part as a bound and is marked so, failed points stay out).
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
    let mut bounds = vec![vec![false; columns.len()]; rows.len()];
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
            bounds[ri][ci] = b.tester_limited;
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
        bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sweep::tests::labelled;
    use crate::model::sweep::{pick_best, PointRecord, PointStatus, SWEEP_SCHEMA_VERSION};

    fn sweep(name: &str, row: &str, column: &str, points: Vec<PointRecord>) -> CampaignSweep {
        CampaignSweep {
            name: name.into(),
            row: Some(row.into()),
            column: Some(column.into()),
            record: SweepRecord {
                schema_version: SWEEP_SCHEMA_VERSION,
                tool_version: "t".into(),
                started_at: "2026-11-26T08:00:00Z".into(),
                test: vec!["tcp".into()],
                vary: vec![],
                runs_per_point: (1, 1),
                best_by: "throughput_bps".into(),
                best: pick_best(&points, "throughput_bps", 1),
                points,
                restore: vec![],
                warnings: vec![],
            },
        }
    }

    /// The issue 29 sweeps as a campaign: each cell is the point that measured most, a
    /// tester-limited one marked as a bound; a failed point that measured more is not.
    #[test]
    fn the_best_case_cells_follow_the_pick_rule_with_bounds_marked() {
        let sweeps = vec![
            sweep(
                "rate",
                "1500",
                "TCP TX",
                vec![
                    labelled(1, "rate", "2G", PointStatus::Ok, &[1.992e9]),
                    labelled(2, "rate", "100G", PointStatus::TesterLimited, &[31.56e9]),
                ],
            ),
            sweep(
                "len",
                "1500",
                "TCP RX",
                vec![
                    labelled(1, "len", "16K", PointStatus::Ok, &[20.9e9]),
                    labelled(2, "len", "64K", PointStatus::TesterLimited, &[23.2e9]),
                    labelled(3, "len", "256K", PointStatus::TesterLimited, &[36.4e9]),
                ],
            ),
            sweep(
                "failed",
                "9000",
                "TCP TX",
                vec![
                    labelled(1, "len", "16K", PointStatus::Ok, &[20.9e9]),
                    labelled(2, "len", "64K", PointStatus::Failed, &[90e9]),
                ],
            ),
        ];
        let t = best_case("Best case results", "MTU", &sweeps);
        assert_eq!(t.rows, ["1500", "9000"]);
        assert_eq!(t.columns, ["TCP TX", "TCP RX"]);
        assert_eq!(t.cells[0], [Some(31.56e9), Some(36.4e9)]);
        assert_eq!(t.bounds[0], [true, true]);
        assert_eq!(t.best_points[0][1].as_deref(), Some("len=256K"));
        assert_eq!(t.cells[1], [Some(20.9e9), None]);
        assert_eq!(t.bounds[1], [false, false]);
        assert_eq!(t.best_points[1][0].as_deref(), Some("len=16K"));
    }
}
