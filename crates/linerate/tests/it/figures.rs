//! What a newcomer reads first is the measured figure: every size the README and
//! docs/PERFORMANCE.md state is keyed to where it was measured, and equals it.
//!
//! A figure is keyed by an HTML comment right after it (invisible on the rendered page):
//! `7.6 MB<!-- = bench:size -->`. The expression after `=` is terms joined by `+ - * /`
//! (left to right), several expressions separated by `;` each giving the same figure:
//! * `sizes:TARGET:BUILD`: the stripped bytes of docs/PERFORMANCE.md's table, which
//!   scripts/sizes.sh writes between its `sizes:` markers;
//! * `floor:TARGET:std` and `floor:TARGET:crates`: its floor table (bench/size-floor);
//! * `bench:size`: the release binary bench/run.sh measured (bench/doc-run/results.tsv,
//!   which renders docs/PERFORMANCE.md's Results);
//! * `doc:NAME`: a figure measured once and stated in docs/PERFORMANCE.md as
//!   `7,753,912 bytes<!-- figure NAME -->` (no table holds it);
//! * a number.
//!
//! The stated figure must be the value rounded to the decimals it shows, in its unit (`MB`:
//! 10^6 bytes; `%`: hundredths; `bytes` or none: itself). In the README every size with
//! decimals (`7.6 MB`) and every byte count (`7,594,576 bytes`) must be keyed.

use std::collections::BTreeMap;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn int(s: &str) -> Option<f64> {
    let t = s.trim().replace(',', "");
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

/// The measured figures by key, from docs/PERFORMANCE.md's tables, bench/doc-run and the
/// `figure` definitions of `perf`.
fn measured(perf: &str, bench_tsv: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let table = perf
        .split("<!-- sizes:begin")
        .nth(1)
        .and_then(|t| t.split("<!-- sizes:end -->").next())
        .expect("docs/PERFORMANCE.md has no sizes: table (scripts/sizes.sh writes it)");
    for line in table.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        match cells.as_slice() {
            [t, build, bytes, _] => {
                if let Some(v) = int(bytes) {
                    out.insert(format!("sizes:{t}:{build}"), v);
                }
            }
            [t, std, crates, ..] if cells.len() == 6 => {
                for (k, v) in [("std", std), ("crates", crates)] {
                    if let Some(v) = int(v) {
                        out.insert(format!("floor:{t}:{k}"), v);
                    }
                }
            }
            _ => {}
        }
    }
    for line in bench_tsv.lines() {
        if let [_, "size", "linerate", "bytes", v] = line.split('\t').collect::<Vec<_>>()[..] {
            out.insert("bench:size".into(), v.parse().unwrap());
        }
    }
    for (before, after) in comments(perf, "<!-- figure ") {
        let name = after.trim();
        let (v, _, _) = stated(before).unwrap_or_else(|| panic!("no figure before {name}"));
        out.insert(format!("doc:{name}"), v);
    }
    out
}

/// (the text before, the comment's body) of every comment that opens with `open`.
fn comments<'a>(text: &'a str, open: &str) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(open) {
        let at = from + i;
        let body_start = at + open.len();
        let end = body_start + text[body_start..].find("-->").expect("an unclosed comment");
        out.push((&text[..at], &text[body_start..end]));
        from = end;
    }
    out
}

/// The figure at the end of `before` (comments right before it skipped): its value as
/// written, its decimals and its unit ("MB", "%", "bytes" or "").
fn stated(before: &str) -> Option<(f64, usize, &'static str)> {
    let mut t = before.trim_end();
    while t.ends_with("-->") {
        t = t[..t.rfind("<!--")?].trim_end();
    }
    let mut unit = "";
    for u in ["MB", "%", "bytes"] {
        if let Some(rest) = t.strip_suffix(u) {
            unit = u;
            t = rest.trim_end();
            break;
        }
    }
    let start = t
        .rfind(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
        .map_or(0, |i| i + 1);
    let num = t[start..].trim_end_matches(['.', ',']);
    if num.is_empty() || t[start..].len() != num.len() {
        return None;
    }
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    Some((num.replace(',', "").parse().ok()?, decimals, unit))
}

fn eval(expr: &str, figures: &BTreeMap<String, f64>) -> Result<f64, String> {
    let term = |t: &str| {
        int(t)
            .or_else(|| figures.get(t).copied())
            .ok_or_else(|| format!("`{t}` is no measured figure (known: {:?})", figures.keys()))
    };
    let mut words = expr.split_whitespace();
    let mut v = term(words.next().ok_or("an empty key")?)?;
    while let Some(op) = words.next() {
        let x = term(words.next().ok_or_else(|| format!("nothing after {op}"))?)?;
        v = match op {
            "+" => v + x,
            "-" => v - x,
            "*" => v * x,
            "/" => v / x,
            _ => return Err(format!("`{op}` is not + - * /")),
        };
    }
    Ok(v)
}

/// Every keyed figure of `text` against its measurement; an error line per mismatch.
fn check(name: &str, text: &str, figures: &BTreeMap<String, f64>) -> Vec<String> {
    let mut errors = Vec::new();
    for (before, body) in comments(text, "<!-- =") {
        let line = before.lines().count().max(1);
        let Some((shown, decimals, unit)) = stated(before) else {
            errors.push(format!(
                "{name}:{line}: no figure before the key `{}`",
                body.trim()
            ));
            continue;
        };
        let scale = match unit {
            "MB" => 1e6,
            "%" => 0.01,
            _ => 1.0,
        };
        for expr in body.split(';') {
            let want = match eval(expr, figures) {
                Ok(v) => v / scale,
                Err(e) => {
                    errors.push(format!("{name}:{line}: {e}"));
                    continue;
                }
            };
            let p = 10f64.powi(decimals as i32);
            if ((want * p).round() - shown * p).abs() > 1e-6 {
                errors.push(format!(
                    "{name}:{line}: states {shown:.prec$} {unit} but `{}` measured {want:.prec$} {unit}: write the measured figure (or measure again: scripts/sizes.sh, bench/run.sh --write-doc)",
                    expr.trim(),
                    prec = decimals
                ));
            }
        }
    }
    errors
}

/// The README's sizes with decimals and byte counts that carry no key.
fn unkeyed(name: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for unit in [" MB", " bytes"] {
            for (i, _) in line.match_indices(unit) {
                let Some((_, decimals, _)) = stated(&line[..i]) else {
                    continue;
                };
                let digits = line[..i].rsplit(' ').next().unwrap_or("");
                let counted = unit == " bytes" && digits.contains(',');
                let keyed = line[i + unit.len()..].starts_with("<!-- =");
                if (decimals > 0 || counted) && !keyed {
                    out.push(format!(
                        "{name}:{}: `{digits}{unit}` has no key: follow it with <!-- = KEY --> (tests/it/figures.rs)",
                        n + 1
                    ));
                }
            }
        }
    }
    out
}

fn documents() -> (String, String, BTreeMap<String, f64>) {
    let perf = read("docs/PERFORMANCE.md");
    let figures = measured(&perf, &read("bench/doc-run/results.tsv"));
    (read("README.md"), perf, figures)
}

#[test]
fn the_readme_and_performance_state_the_measured_sizes() {
    let (readme, perf, figures) = documents();
    let mut errors = check("README.md", &readme, &figures);
    errors.extend(check("docs/PERFORMANCE.md", &perf, &figures));
    errors.extend(unkeyed("README.md", &readme));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // The keys are there to be checked: the README's first paragraph and the board's sizes.
    assert!(
        readme.matches("<!-- =").count() >= 8,
        "the README's keys are gone"
    );
    assert!(
        figures.contains_key("bench:size")
            && figures.contains_key("sizes:powerpc-unknown-linux-gnu:board")
    );
}

#[test]
fn a_figure_that_differs_from_its_measurement_is_caught() {
    let (_, perf, mut figures) = documents();
    let size = figures["bench:size"];
    let mb = format!("{:.1}", size / 1e6);
    let ok = format!("one binary ({mb} MB<!-- = bench:size --> in a release build)");
    assert_eq!(check("t", &ok, &figures), Vec::<String>::new());
    // The README's old first paragraph: 9.0 MB against the measured 7.6.
    let old = "one binary (9.0 MB<!-- = bench:size --> in a release build)";
    let e = check("t", old, &figures);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("states 9.0 MB") && e[0].contains(&format!("measured {mb} MB")),
        "{e:?}"
    );
    // A new measurement moves every figure keyed to it: the table's powerpc board build.
    let key = "sizes:powerpc-unknown-linux-gnu:board";
    let bytes = figures[key];
    let text = format!(
        "{} bytes<!-- = {key} -->, {:.0} %<!-- = floor:powerpc-unknown-linux-gnu:std / 2000000 -->",
        bytes,
        figures["floor:powerpc-unknown-linux-gnu:std"] / 2e4
    );
    assert_eq!(check("t", &text, &figures), Vec::<String>::new());
    figures.insert(key.into(), bytes + 1.0);
    assert_eq!(check("t", &text, &figures).len(), 1);
    // Byte counts with thousands separators, ratios, several keys for one figure.
    let many = "3.1 MB<!-- = sizes:armv7-unknown-linux-gnueabihf:board ; sizes:x86_64-unknown-linux-gnu:full -->";
    let e = check("t", many, &figures);
    assert!(e.len() == 1 && e[0].contains("x86_64"), "{e:?}");
    // A size without a key, and a key without a figure, are errors too.
    assert_eq!(unkeyed("t", "it is 7.6 MB (7,594,576 bytes) now").len(), 2);
    assert_eq!(unkeyed("t", "aimed at 2 MB (2000000 bytes)").len(), 0);
    assert_eq!(check("t", "size<!-- = bench:size -->", &figures).len(), 1);
    assert_eq!(
        check("t", "1 MB<!-- = sizes:nowhere:board -->", &figures).len(),
        1
    );
    // docs/PERFORMANCE.md's one-off figures are read from their definitions.
    assert!(perf.contains("<!-- figure static-musl -->"));
    assert!(figures.contains_key("doc:static-musl"));
}
