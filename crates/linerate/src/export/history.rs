//! `linerate history`'s table: one line per stored run, newest first, with the id that
//! `linerate compare` takes.

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
}
