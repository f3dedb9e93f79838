//! A campaign's table: each sweep's best point in words, then the best-case table (the
//! shape of Xilinx's XAPP1127 TEMAC note: a row per MTU, a column per protocol and
//! direction, Mbit/s; a tester-limited cell marked ≥), then the best point behind each cell.

use crate::model::campaign::{BestCaseTable, CampaignRecord};
use crate::model::sweep::PointStatus;
use crate::model::units::format_metric;

fn cell(metric: &str, v: Option<f64>, bound: bool) -> String {
    // A tester-limited best point is a bound: the system does at least that well.
    let b = if bound { "≥" } else { "" };
    match v {
        None => "-".into(),
        // Throughputs as the TEMAC note prints them: Mbit/s with one decimal.
        Some(v) if metric.ends_with("_bps") => format!("{b}{:.1}", v / 1e6),
        Some(v) => format!("{b}{}", format_metric(metric, v)),
    }
}

/// Whether cell (row, column) is a bound.
fn bound(t: &BestCaseTable, ri: usize, ci: usize) -> bool {
    t.bounds
        .get(ri)
        .and_then(|r| r.get(ci))
        .copied()
        .unwrap_or(false)
}

fn table(t: &BestCaseTable) -> String {
    let unit = if t.metric.ends_with("_bps") {
        ", Mbit/s"
    } else {
        ""
    };
    let mut out = format!("{} ({}{unit}):\n", t.title, t.metric);
    let w0 = t
        .rows
        .iter()
        .map(String::len)
        .chain([t.rows_name.len()])
        .max()
        .unwrap_or(4);
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            t.cells
                .iter()
                .enumerate()
                .map(|(ri, row)| cell(&t.metric, row[ci], bound(t, ri, ci)).chars().count())
                .chain([c.len()])
                .max()
                .unwrap_or(6)
        })
        .collect();
    let mut line = format!("{:<w0$}", t.rows_name);
    for (c, w) in t.columns.iter().zip(&widths) {
        line.push_str(&format!("  {c:>w$}"));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for (ri, r) in t.rows.iter().enumerate() {
        let mut line = format!("{r:<w0$}");
        for (ci, w) in widths.iter().enumerate() {
            line.push_str(&format!(
                "  {:>w$}",
                cell(&t.metric, t.cells[ri][ci], bound(t, ri, ci))
            ));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("\nbest points:\n");
    for (ri, r) in t.rows.iter().enumerate() {
        for (ci, c) in t.columns.iter().enumerate() {
            if let Some(p) = &t.best_points[ri][ci] {
                let note = if bound(t, ri, ci) {
                    " (tester-limited: a bound, the system does at least as well)"
                } else {
                    ""
                };
                out.push_str(&format!("  {r} {c}: {p}{note}\n"));
            }
        }
    }
    out
}

/// The campaign as text, with a trailing newline.
pub fn render(rec: &CampaignRecord) -> String {
    let mut out = format!(
        "campaign {} ({}): {} sweeps\n\n",
        rec.name,
        rec.file,
        rec.sweeps.len()
    );
    for s in &rec.sweeps {
        let failed = s
            .record
            .points
            .iter()
            .filter(|p| matches!(p.status, PointStatus::Failed | PointStatus::Interrupted))
            .count();
        let what = match &s.record.best {
            Some(b) => b.sentence.clone(),
            None => "no best point (see its warnings)".into(),
        };
        out.push_str(&format!(
            "{}: {} points{}. {what}\n",
            s.name,
            s.record.points.len(),
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            }
        ));
        for w in &s.record.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
    }
    if let Some(t) = &rec.table {
        out.push('\n');
        out.push_str(&table(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_seeds_shape() {
        let t = BestCaseTable {
            title: "Best case results".into(),
            rows_name: "MTU".into(),
            rows: vec!["9000".into(), "1500".into()],
            columns: vec!["TCP RX".into(), "UDP RX".into()],
            cells: vec![
                vec![Some(714.2e6), Some(992.3e6)],
                vec![Some(209.1e6), None],
            ],
            metric: "throughput_bps".into(),
            best_points: vec![vec![Some("rx_frames=32".into()), None], vec![None, None]],
            bounds: vec![],
        };
        let s = table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Best case results (throughput_bps, Mbit/s):");
        assert_eq!(lines[1], "MTU   TCP RX  UDP RX");
        assert_eq!(lines[2], "9000   714.2   992.3");
        assert_eq!(lines[3], "1500   209.1       -");
        assert!(s.contains("9000 TCP RX: rx_frames=32"), "{s}");
    }

    #[test]
    fn a_tester_limited_cell_is_marked_as_a_bound() {
        let t = BestCaseTable {
            title: "Best case results".into(),
            rows_name: "MTU".into(),
            rows: vec!["1500".into()],
            columns: vec!["TCP TX".into(), "TCP RX".into()],
            cells: vec![vec![Some(31_560e6), Some(20_900e6)]],
            metric: "throughput_bps".into(),
            best_points: vec![vec![Some("rate=100G".into()), Some("len=16K".into())]],
            bounds: vec![vec![true, false]],
        };
        let s = table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "MTU     TCP TX   TCP RX");
        assert_eq!(lines[2], "1500  ≥31560.0  20900.0");
        assert!(
            s.contains("1500 TCP TX: rate=100G (tester-limited: a bound, the system does at least as well)"),
            "{s}"
        );
        assert!(s.contains("1500 TCP RX: len=16K\n"), "{s}");
    }
}
