//! `--profile` in the table output: per end, the categories of its busy samples, each CPU's
//! in one line, and the top functions. Every share is of the busy samples (idle apart, its
//! share of all samples in the heading), as the JSON's `profile` section has them.

use linerate_wire::profile::{CategoryShare, ProfileReport};
use linerate_wire::report::SideReport;

use crate::model::RunRecord;

/// Functions the table lists per end (the JSON has up to `TOP_FUNCTIONS`).
const TABLE_TOP: usize = 10;

fn cats(c: &[CategoryShare], n: usize) -> String {
    c.iter()
        .take(n)
        .map(|s| format!("{} {:.1}%", s.category.label(), s.busy_percent))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One end's block: `name` says which end (and of what).
pub fn block(name: &str, p: &ProfileReport) -> String {
    let mut out = format!(
        "\nprofile of the {name}: {} at {} Hz, {} CPUs, {} samples over {:.1} s, {:.1}% idle; shares of the {} busy samples\n",
        p.event,
        p.frequency_hz,
        p.per_cpu.len(),
        p.samples,
        p.duration_ns as f64 / 1e9,
        p.idle_percent,
        p.busy_samples()
    );
    if p.busy_samples() == 0 {
        out.push_str("  no busy samples\n");
        return out;
    }
    out.push_str(&format!(
        "  by category: {}\n",
        cats(&p.categories, usize::MAX)
    ));
    let procs: Vec<String> = p
        .processes
        .iter()
        .take(5)
        .map(|s| {
            format!(
                "{} {:.1}%",
                linerate_wire::text::escape(&s.comm),
                s.busy_percent
            )
        })
        .collect();
    out.push_str(&format!("  by process: {}\n", procs.join(", ")));
    for c in &p.per_cpu {
        let idle = if c.samples == 0 {
            0.0
        } else {
            c.idle_samples as f64 * 100.0 / c.samples as f64
        };
        out.push_str(&format!(
            "  CPU {}: {:.0}% idle; {}{}\n",
            c.cpu,
            idle,
            cats(&c.categories, 3),
            c.top_function
                .as_deref()
                .map(|f| format!(" (top: {})", linerate_wire::text::escape(f)))
                .unwrap_or_default()
        ));
    }
    let rows: Vec<Vec<String>> = p
        .top
        .iter()
        .take(TABLE_TOP)
        .map(|f| {
            vec![
                "   ".to_string(),
                format!("{:.1}%", f.busy_percent),
                linerate_wire::text::escape(&f.name).into_owned(),
                f.category.label().to_string(),
            ]
        })
        .collect();
    out.push_str("  top functions:\n");
    out.push_str(&super::align::align(&rows));
    // The profile's own warnings (samples lost or not kept, uneven sampling) qualify its
    // shares, so they stand under them, not only in the JSON.
    for w in &p.warnings {
        out.push_str(&format!("  warning: {}\n", linerate_wire::text::escape(w)));
    }
    out
}

/// The profile blocks of both ends (empty without `--profile`).
pub fn table_block(rec: &RunRecord) -> String {
    let ends: [(&str, Option<&SideReport>); 2] = [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ];
    ends.iter()
        .filter_map(|(n, s)| Some(block(n, (*s)?.profile.as_ref()?)))
        .collect()
}
