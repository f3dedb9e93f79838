//! Text helpers of the human tables (the run table, RR, repeated runs, compare, the profile
//! block): aligned columns and CPU shares. A leaf: the table files use it, it uses none of
//! them.

/// "12.50% of 4": a share of all CPUs and how many there are, when the end said.
pub fn of_cpus(percent: f64, cpus: Option<u32>) -> String {
    match cpus {
        Some(n) => format!("{percent:.2}% of {n}"),
        None => format!("{percent:.2}%"),
    }
}

/// Left-aligned columns two spaces apart, trailing blanks trimmed.
pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
