//! `linerate history`'s table: one line per stored run, newest first, with the id that
//! `linerate compare` takes.

use crate::model::changes::ChangesRecord;
use crate::model::units::format_metric;
use crate::store::HistoryRecord;

/// The table, with a trailing newline.
pub fn render(rec: &HistoryRecord) -> String {
    let mut out = String::new();
    if rec.runs.is_empty() {
        out.push_str(&format!(
            "no stored runs match (database {})\n",
            rec.database
        ));
        return out;
    }
    out.push_str(&format!(
        "{:>6}  {:<20}  {:<7}  {:<24}  {:<16}  {}\n",
        "id", "started (UTC)", "command", "server", "tags", "result"
    ));
    for r in &rec.runs {
        let tags = if r.tags.is_empty() {
            "-".to_string()
        } else {
            r.tags.join(",")
        };
        let mut result = r.headline.clone().unwrap_or_else(|| "-".into());
        match r.exit_code {
            Some(0) | None => {}
            Some(c) => result.push_str(&format!(" (exit {c})")),
        }
        if let Some(s) = r.sweep_id {
            result.push_str(&format!(" [sweep {s}]"));
        }
        out.push_str(&format!(
            "{:>6}  {:<20}  {:<7}  {:<24}  {:<16}  {}\n",
            r.id,
            r.started_at,
            r.command,
            r.server.as_deref().unwrap_or("-"),
            tags,
            result
        ));
    }
    out.push_str(&format!(
        "{} runs from {} (compare two: linerate compare ID ID)\n",
        rec.runs.len(),
        rec.database
    ));
    out
}

/// `history --changes`: per series, its points and each change point with its run, size and
/// significance, or why there is no answer.
pub fn render_changes(rec: &ChangesRecord) -> String {
    let mut out = String::new();
    if rec.series.is_empty() {
        out.push_str(&format!(
            "no stored tcp, udp or rr runs match (database {})\n",
            rec.database
        ));
        return out;
    }
    out.push_str(&format!("method: {}\n", rec.method));
    for s in &rec.series {
        let (first, last) = (s.points.first(), s.points.last());
        out.push_str(&format!(
            "\nseries: {} {} ({} runs, ids {}..{}), {}\n",
            s.command,
            s.description,
            s.points.len(),
            first.map_or(0, |p| p.id),
            last.map_or(0, |p| p.id),
            s.metric
        ));
        if let Some(why) = &s.too_few {
            out.push_str(&format!("  {why}\n"));
            continue;
        }
        if let Some(why) = &s.left_out {
            out.push_str(&format!("  {why}\n"));
        }
        if s.changes.is_empty() {
            out.push_str("  no change point: the series is one level within its noise\n");
        }
        for c in &s.changes {
            out.push_str(&format!(
                "  change at run {} (id {}, {}): {} -> {}{} (p = {:.3})\n",
                c.run,
                c.id,
                c.started_at,
                format_metric(&s.metric, c.mean_before),
                format_metric(&s.metric, c.mean_after),
                c.change_percent
                    .map_or(String::new(), |p| format!(", {p:+.1}%")),
                c.p_value
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoredRun;

    #[test]
    fn lists_ids_tags_and_failures() {
        let run = StoredRun {
            id: 7,
            uuid: "u".into(),
            command: "udp".into(),
            kind: "run".into(),
            started_at: "2026-11-23T18:00:00Z".into(),
            server: Some("127.0.0.1:5301".into()),
            client_host: None,
            server_host: None,
            tool_version: "linerate 0.1.0".into(),
            headline: Some("throughput 10.0 Mbit/s".into()),
            primary_metric: None,
            primary_value: None,
            exit_code: Some(1),
            tags: vec!["a".into(), "b".into()],
            sweep_id: Some(3),
        };
        let t = render(&HistoryRecord {
            database: "x.db".into(),
            schema_version: 2,
            runs: vec![run],
        });
        let line = t.lines().nth(1).unwrap();
        assert!(line.trim_start().starts_with("7 "), "{t}");
        assert!(
            line.contains("a,b") && line.contains("(exit 1)") && line.contains("[sweep 3]"),
            "{t}"
        );
        let empty = render(&HistoryRecord {
            database: "x.db".into(),
            schema_version: 2,
            runs: vec![],
        });
        assert!(empty.contains("no stored runs"), "{empty}");
    }

    #[test]
    fn changes_name_the_run_the_size_and_the_p_value() {
        use crate::model::changes::{Change, SeriesChanges, SeriesPoint};
        let points: Vec<SeriesPoint> = (1..=3)
            .map(|i| SeriesPoint {
                id: i,
                started_at: format!("t{i}"),
                value: 5e7,
            })
            .collect();
        let series = SeriesChanges {
            command: "tcp".into(),
            description: "to b".into(),
            metric: "throughput_bps".into(),
            points,
            too_few: None,
            left_out: None,
            changes: vec![Change {
                run: 2,
                id: 2,
                started_at: "t2".into(),
                p_value: 0.001,
                mean_before: 5e7,
                mean_after: 4e7,
                change_percent: Some(-20.0),
            }],
        };
        let mut few = series.clone();
        few.too_few = Some("3 points: too few".into());
        let rec = ChangesRecord {
            schema_version: 1,
            database: "x.db".into(),
            method: "E-divisive".into(),
            series: vec![series, few],
        };
        let t = render_changes(&rec);
        assert!(
            t.contains(
                "change at run 2 (id 2, t2): 50.00 Mbit/s -> 40.00 Mbit/s, -20.0% (p = 0.001)"
            ),
            "{t}"
        );
        assert!(t.contains("3 points: too few"), "{t}");
    }
}
