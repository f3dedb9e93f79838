//! A campaign's table: each sweep's best point in words, then the best-case table (seed
//! 004's shape: a row per MTU, a column per protocol and direction, Mbit/s), then the best
//! point behind each cell.

use crate::model::campaign::{BestCaseTable, CampaignRecord};
use crate::model::sweep::PointStatus;
use crate::model::units::format_metric;

fn cell(metric: &str, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        // Throughputs as the seed prints them: Mbit/s with one decimal.
        Some(v) if metric.ends_with("_bps") => format!("{:.1}", v / 1e6),
        Some(v) => format_metric(metric, v),
    }
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
                .map(|row| cell(&t.metric, row[ci]).len())
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
            line.push_str(&format!("  {:>w$}", cell(&t.metric, t.cells[ri][ci])));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("\nbest points:\n");
    for (ri, r) in t.rows.iter().enumerate() {
        for (ci, c) in t.columns.iter().enumerate() {
            if let Some(p) = &t.best_points[ri][ci] {
                out.push_str(&format!("  {r} {c}: {p}\n"));
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
        };
        let s = table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Best case results (throughput_bps, Mbit/s):");
        assert_eq!(lines[1], "MTU   TCP RX  UDP RX");
        assert_eq!(lines[2], "9000   714.2   992.3");
        assert_eq!(lines[3], "1500   209.1       -");
        assert!(s.contains("9000 TCP RX: rx_frames=32"), "{s}");
    }
}
