//! The module graph of the application crate has layers, and no cycles; every crate of the
//! workspace keeps the file, function and OS rules.
//!
//! Reads every file under linerate's `src/`, finds the paths that leave a top-level module
//! (`use crate::x::...`, `crate::x::f()`, `use crate::{x, y}`, and `super::` chains that climb
//! to the crate root) and checks two rules over the graph of top-level modules:
//!
//! 1. **Layers.** Every module belongs to a layer in [`LAYERS`] (bottom first) and may import
//!    only modules of its own layer or of layers below it.
//! 2. **No cycles.** Two modules never import each other, directly or through others (in a
//!    layer as well as across layers).
//!
//! The rules below hold in every crate of the workspace ([`CRATES`], which a test keeps equal
//! to the workspace's members), each crate's `src/` read the same way.
//!
//! A third rule holds for files ([`file_graph`]): no two files import each other, directly
//! or through others; a file's imports of its ancestors' files (`mod.rs`, `lib.rs`) are left
//! out, a parent's imports of its children count.
//!
//! Test code counts: a test that needs a higher layer lives in that layer. Comments and
//! string literals are skipped, so a doc link to another module is not an import.
//!
//! A fourth rule holds for functions ([`long_functions`]): none outside test code is longer
//! than [`MAX_FN_LINES`] lines, counted from its `fn` to its closing brace, but those
//! named in [`LONG_ALLOWED`] with their reasons.
//!
//! A fifth rule holds for the operating system ([`os_switches`]): no `cfg` naming an OS and
//! no call into an OS's own API stand outside the crate's one OS seam, which [`CRATES`]
//! names with its reason (linerate's `sys/`, the lab's `os.rs`; none in the pure crates).
//!
//! The only exceptions are the edges in [`ALLOWED`], each with its reason. An entry whose
//! edge no longer exists fails the test too, so the list only ever shrinks.
//! `docs/ARCHITECTURE.md` draws the same layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may import modules of its own layer and of the layers
/// before it.
const LAYERS: &[(&str, &[&str])] = &[
    // The kernel's interfaces: /proc, sysfs, getsockopt, AF_PACKET, ethtool, `ip`/`tc`.
    ("sys", &["sys"]),
    // Records and their pure derivations: RunRecord and its summary, the diagnosis result
    // type, repetition and comparison statistics, trace and doctor records, units and
    // labels, and the test plans.
    ("model", &["model"]),
    // What measures and judges: the stream and RR engines, RFC 2544's search, trace
    // analysis, diagnosis, doctor's checks, the repetition runner.
    (
        "engines",
        &[
            "engine", "rr", "rfc2544", "analyze", "diagnose", "doctor", "repeat",
        ],
    ),
    // The control protocol: connections, client and server sessions, authentication.
    ("sessions", &["session"]),
    // The results database (SQLite): every run kept, listed and loaded again.
    ("store", &["store"]),
    // The fleet coordinator: plans the rounds of a mesh, orders each pair from its agents
    // over the control protocol, keeps every pair in the store (and `fleet manifests`).
    ("fleet", &["fleet"]),
    // Pure renderings of records: table, JSON (+ schemas), CSV, netperf, ttcp, charts.
    ("export", &["export"]),
    // Command-line arguments and their validation into plans.
    ("arguments", &["cli"]),
    // One home per command (`linerate X` is app/X.rs or app/X/).
    ("commands", &["app"]),
];

/// Edges that break the rules, each with its reason. Empty: keep it so; an edge that seems
/// to need an entry usually means a type lives one layer too high.
const ALLOWED: &[(&str, &str)] = &[];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every crate of the workspace (its folder under `crates/`), the paths under its `src/`
/// where the operating system may be named (its OS seam: a folder or a file), and why.
const CRATES: &[(&str, &[&str], &str)] = &[
    (
        "linerate",
        &["sys", "main.rs"],
        "sys/ is the OS seam: sys/mod.rs picks sys/linux/ or sys/windows/ by cfg, and the \
         rest of the crate reaches sockets, CPU, interfaces and time through it; main.rs \
         keeps the console's handling",
    ),
    (
        "linerate-wire",
        &[],
        "wire formats only (no I/O, no clock): nothing of an OS's",
    ),
    (
        "linerate-stats",
        &[],
        "pure numeric code (no I/O): nothing of an OS's",
    ),
    (
        "linerate-lab",
        &["os.rs"],
        "network namespaces are Linux's by nature: the crate's few calls into the OS \
         (setns, geteuid, inodes, mode bits) stand in src/os.rs, Linux's, and elsewhere an \
         error, so that linerate's `lab` feature builds on every OS and `linerate lab` says \
         that it needs Linux",
    ),
];

/// The `src/` of the workspace's crate `krate`.
fn crate_src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

/// The workspace's members, from its Cargo.toml (`members = ["crates/a", ...]`), by folder
/// name.
fn workspace_members() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let text = std::fs::read_to_string(&root).expect("the workspace's Cargo.toml");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(|m| m.rsplit('/').next().unwrap_or(m).to_string())
        .collect()
}

/// The rules cover every crate: a crate added to the workspace is added to [`CRATES`] with
/// its OS seam, or this fails.
#[test]
fn the_rules_cover_every_crate_of_the_workspace() {
    let members = workspace_members();
    let listed: BTreeSet<String> = CRATES.iter().map(|(c, ..)| c.to_string()).collect();
    assert!(members.len() >= 4, "{members:?}");
    assert_eq!(
        members, listed,
        "tests/layers.rs's CRATES must list every member of the workspace (with its OS seam)"
    );
    for (c, seams, _) in CRATES {
        for s in *seams {
            assert!(
                crate_src(c).join(s).exists(),
                "CRATES names {c}/src/{s}, which does not exist"
            );
        }
    }
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A token of Rust source with comments, strings and char literals removed.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

/// Splits source into [`Tok`]s with their line numbers; comments (nested block comments
/// too), string literals (raw ones too) and char literals are dropped.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if (ch == 'r' || ch == 'b') && raw_string_start(&c, i).is_some() {
            let (hashes, body) = raw_string_start(&c, i).unwrap_or((0, i));
            i = body;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if c[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            out.push((Tok::Other, line));
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
            out.push((Tok::Other, line));
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // b"..." and b'x': the prefix of a literal, not an identifier.
            if word == "b" && (at(i) == '"' || at(i) == '\'') {
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((
                match ch {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    ';' => Tok::Semi,
                    _ => Tok::Other,
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// At `r"`, `r#"`, `br"`, `br#"`: the number of `#` and the index after the opening quote.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    // Only at the start of a token.
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

/// The module path of a file: `src/a/b.rs` is `[a, b]`, `src/a/mod.rs` is `[a]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" {
            parts.push(stem);
        }
    }
    parts
}

/// The first segment of each item of a `{...}` group starting at `toks[i]` (the `{`).
fn group_heads(toks: &[(Tok, usize)], mut i: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                if depth == 1 {
                    expect_head = true;
                }
            }
            Tok::Close => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Tok::Comma if depth == 1 => expect_head = true,
            Tok::Ident(w) if depth == 1 && expect_head => {
                heads.push(w.clone());
                expect_head = false;
            }
            _ => {
                if depth == 1 {
                    expect_head = false;
                }
            }
        }
        i += 1;
    }
    heads
}

/// One import of another top-level module: where it is.
#[derive(Debug, Clone)]
struct Site {
    file: String,
    line: usize,
}

type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

/// Top-level modules and the edges between them.
fn graph() -> (BTreeSet<String>, Graph) {
    let src = src_dir();
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let roots: BTreeSet<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).ok()?;
            let first = rel.iter().next()?.to_string_lossy().into_owned();
            let name = first.trim_end_matches(".rs").to_string();
            (name != "lib" && name != "main").then_some(name)
        })
        .collect();
    let mut g: Graph = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let path = module_path(rel);
        let Some(top) = path.first().cloned() else {
            continue;
        };
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        let toks = tokens(&text);
        // Inline modules (`mod tests { ... }`) deepen the path that `super` climbs.
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < toks.len() {
            match &toks[i].0 {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                }
                Tok::Ident(w) if w == "mod" => {
                    if let (Some((Tok::Ident(name), _)), Some((Tok::Open, _))) =
                        (toks.get(i + 1), toks.get(i + 2))
                    {
                        inline.push((name.clone(), depth));
                    }
                }
                Tok::Ident(w) if w == "crate" || w == "super" => {
                    let mut j = i;
                    let climbs_to_root = if w == "crate" {
                        j += 1;
                        true
                    } else {
                        let mut ups = 0;
                        while matches!(&toks.get(j), Some((Tok::Ident(s), _)) if s == "super")
                            && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                        {
                            ups += 1;
                            j += 2;
                        }
                        // `super` alone (`pub(super)`, `use super::*` inside) never leaves.
                        j = j.saturating_sub(1);
                        ups > 0 && ups >= path.len() + inline.len()
                    };
                    if climbs_to_root && toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
                        let line = toks[i].1;
                        let heads = match toks.get(j + 1) {
                            Some((Tok::Ident(name), _)) => vec![name.clone()],
                            Some((Tok::Open, _)) => group_heads(&toks, j + 1),
                            _ => Vec::new(),
                        };
                        for h in heads {
                            if h != top && roots.contains(&h) {
                                g.entry(top.clone())
                                    .or_default()
                                    .entry(h)
                                    .or_default()
                                    .push(Site {
                                        file: rel.display().to_string(),
                                        line,
                                    });
                            }
                        }
                    }
                    i = j.max(i);
                }
                _ => {}
            }
            i += 1;
        }
    }
    (roots, g)
}

/// The paths of a `use` tree (or of a plain path) starting at `toks[i]`, the first token
/// after `prefix::`: `a::b` is `[[a, b]]`, `a::{b, c::{self, d}}` is `[[a, b], [a, c],
/// [a, c, d]]`; `self` adds nothing, `as` renames and globs end a path. Returns the index
/// after the tree.
fn use_tree(toks: &[(Tok, usize)], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let tok = |i: usize| toks.get(i).map(|t| &t.0);
    let mut prefix: Vec<String> = Vec::new();
    loop {
        match tok(i) {
            Some(Tok::Ident(w)) => {
                if w != "self" {
                    prefix.push(w.clone());
                }
                i += 1;
                if tok(i) == Some(&Tok::PathSep) {
                    i += 1;
                } else {
                    return (vec![prefix], i);
                }
            }
            Some(Tok::Open) => {
                i += 1;
                let mut out = Vec::new();
                loop {
                    match tok(i) {
                        None => return (out, i),
                        Some(Tok::Close) => return (out, i + 1),
                        Some(Tok::Comma) => i += 1,
                        _ => {
                            let (sub, next) = use_tree(toks, i);
                            for s in sub {
                                let mut p = prefix.clone();
                                p.extend(s);
                                out.push(p);
                            }
                            i = next;
                            // `as name`, `*`: up to the item's end.
                            while !matches!(tok(i), None | Some(Tok::Comma) | Some(Tok::Close)) {
                                i += 1;
                            }
                        }
                    }
                }
            }
            _ => return (vec![prefix], i),
        }
    }
}

/// The file graph: every source file (as its path under `src/`) and the files it imports,
/// with where. A path names the file of its longest prefix that is a module with a file:
/// `crate::export::table::align` is `export/table.rs`, `super::UsageError` from
/// `cli/stream.rs` is `cli/mod.rs`. Paths start at `crate::`, at `super::` chains, at
/// `self::` or at a child module's name; a `mod` declaration is not an import. A file's
/// imports of its ancestors' files (`mod.rs`, `lib.rs`) are left out: a child sees all of
/// its parent by Rust's rules and shares the parent's items with its siblings, so only a
/// parent's imports of its children and imports between files that are not each other's
/// ancestors count (a cycle through a parent's re-export goes unseen).
fn file_graph(krate: &str) -> (BTreeSet<String>, Graph) {
    let src = crate_src(krate);
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut by_module: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut rels = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src").to_path_buf();
        let name = rel.display().to_string();
        if name == "main.rs" {
            continue;
        }
        let path = if name == "lib.rs" {
            Vec::new()
        } else {
            module_path(&rel)
        };
        by_module.insert(path.clone(), name.clone());
        rels.push((name, path, f.clone()));
    }
    let nodes: BTreeSet<String> = by_module.values().cloned().collect();
    let resolve = |full: &[String]| -> Option<&String> {
        (0..=full.len())
            .rev()
            .find_map(|n| by_module.get(&full[..n]))
    };
    let module_of: BTreeMap<String, Vec<String>> = by_module
        .iter()
        .map(|(m, f)| (f.clone(), m.clone()))
        .collect();
    let mut g: Graph = BTreeMap::new();
    for (name, path, f) in &rels {
        let text = std::fs::read_to_string(f).expect("read source");
        let toks = tokens(&text);
        let tok = |i: usize| toks.get(i).map(|t| &t.0);
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < toks.len() {
            let starts_path = i == 0 || tok(i - 1) != Some(&Tok::PathSep);
            match &toks[i].0 {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                }
                Tok::Ident(w) if w == "mod" => {
                    if let (Some(Tok::Ident(m)), Some(Tok::Open)) = (tok(i + 1), tok(i + 2)) {
                        inline.push((m.clone(), depth));
                    }
                }
                Tok::Ident(w) if starts_path && tok(i + 1) == Some(&Tok::PathSep) => {
                    // The module the path starts from, and the index of its first segment.
                    let here: Vec<String> = path
                        .iter()
                        .cloned()
                        .chain(inline.iter().map(|(m, _)| m.clone()))
                        .collect();
                    let start = match w.as_str() {
                        "crate" => Some((Vec::new(), i + 2)),
                        "self" => Some((here.clone(), i + 2)),
                        "super" => {
                            let mut j = i;
                            let mut base = here.clone();
                            while matches!(tok(j), Some(Tok::Ident(s)) if s == "super")
                                && tok(j + 1) == Some(&Tok::PathSep)
                            {
                                base.pop();
                                j += 2;
                            }
                            Some((base, j))
                        }
                        child if inline.is_empty() => {
                            let mut m = path.clone();
                            m.push(child.to_string());
                            by_module.contains_key(&m).then_some((path.clone(), i))
                        }
                        _ => None,
                    };
                    if let Some((base, j)) = start {
                        let (paths, next) = use_tree(&toks, j);
                        for p in paths {
                            let mut full = base.clone();
                            full.extend(p);
                            if let Some(target) = resolve(&full) {
                                // An ancestor's file (`super::UsageError` in
                                // cli/mod.rs) is the module's own ground, shared by
                                // its children: not an edge.
                                let ancestor = module_of[target].len() < path.len()
                                    && path.starts_with(&module_of[target]);
                                if target != name && !ancestor {
                                    g.entry(name.clone())
                                        .or_default()
                                        .entry(target.clone())
                                        .or_default()
                                        .push(Site {
                                            file: name.clone(),
                                            line: toks[i].1,
                                        });
                                }
                            }
                        }
                        // Braces of a group are consumed with it.
                        i = next.max(i + 1);
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    named_in(krate, nodes, g)
}

/// The file graph's names as `CRATE/src/FILE`, so that the crates' files differ.
fn named_in(krate: &str, nodes: BTreeSet<String>, g: Graph) -> (BTreeSet<String>, Graph) {
    let name = |f: &str| format!("{krate}/src/{f}");
    let nodes = nodes.iter().map(|n| name(n)).collect();
    let g = g
        .into_iter()
        .map(|(a, t)| {
            let t = t
                .into_iter()
                .map(|(b, sites)| {
                    let sites = sites
                        .into_iter()
                        .map(|s| Site {
                            file: name(&s.file),
                            line: s.line,
                        })
                        .collect();
                    (name(&b), sites)
                })
                .collect();
            (name(&a), t)
        })
        .collect();
    (nodes, g)
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

fn sites(s: &[Site]) -> String {
    let mut v: Vec<String> = s.iter().map(|s| format!("{}:{}", s.file, s.line)).collect();
    v.dedup();
    if v.len() > 4 {
        let more = v.len() - 4;
        v.truncate(4);
        v.push(format!("and {more} more"));
    }
    v.join(", ")
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct St<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(st: &mut St, v: &str) {
        st.index.insert(v.to_string(), st.next);
        st.low.insert(v.to_string(), st.next);
        st.next += 1;
        st.stack.push(v.to_string());
        st.on.insert(v.to_string());
        let succ: Vec<String> = st
            .edges
            .get(v)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for w in succ {
            if !st.index.contains_key(&w) {
                visit(st, &w);
                let lw = st.low[&w];
                let lv = st.low[v];
                st.low.insert(v.to_string(), lv.min(lw));
            } else if st.on.contains(&w) {
                let iw = st.index[&w];
                let lv = st.low[v];
                st.low.insert(v.to_string(), lv.min(iw));
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = st.stack.pop() {
                st.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                st.out.push(comp);
            }
        }
    }
    let mut st = St {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for n in nodes {
        if !st.index.contains_key(n) {
            visit(&mut st, n);
        }
    }
    st.out
}

/// A shortest cycle through `start` inside `comp` (breadth-first), as module names.
fn cycle_path(
    start: &str,
    comp: &[String],
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let inside: BTreeSet<&str> = comp.iter().map(String::as_str).collect();
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(v) = queue.pop_front() {
        for w in edges.get(&v).into_iter().flatten() {
            if !inside.contains(w.as_str()) {
                continue;
            }
            if w == start {
                let mut path = vec![v.clone()];
                let mut cur = v.clone();
                while let Some(p) = prev.get(&cur) {
                    path.push(p.clone());
                    cur = p.clone();
                }
                path.reverse();
                path.push(start.to_string());
                return path;
            }
            if !prev.contains_key(w) && w != start {
                prev.insert(w.clone(), v.clone());
                queue.push_back(w.clone());
            }
        }
    }
    vec![start.to_string()]
}

#[test]
fn module_graph_has_layers_and_no_cycles() {
    let (roots, g) = graph();
    let mut problems = Vec::new();
    for m in &roots {
        if layer_of(m).is_none() {
            problems.push(format!(
                "module `{m}` has no layer: add it to LAYERS in tests/layers.rs and to docs/ARCHITECTURE.md"
            ));
        }
    }
    for (_, ms) in LAYERS {
        for m in *ms {
            if !roots.contains(*m) {
                problems.push(format!("LAYERS names `{m}`, which is not a module of src/"));
            }
        }
    }
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    for (a, b) in &allowed {
        if !g.get(a).is_some_and(|t| t.contains_key(b)) {
            problems.push(format!(
                "ALLOWED lists {a} -> {b}, which no longer exists: remove it from tests/layers.rs"
            ));
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, targets) in &g {
        for (b, s) in targets {
            if allowed.contains(&(a.clone(), b.clone())) {
                continue;
            }
            edges.entry(a.clone()).or_default().insert(b.clone());
            if let (Some(la), Some(lb)) = (layer_of(a), layer_of(b)) {
                if lb > la {
                    problems.push(format!(
                        "{a} ({}) imports {b} ({}), a higher layer: {}",
                        LAYERS[la].0,
                        LAYERS[lb].0,
                        sites(s)
                    ));
                }
            }
        }
    }
    // Every module of a strongly connected component lies on a cycle: the shortest one
    // through each, printed once with the imports behind every step.
    for comp in cycles(&roots, &edges) {
        let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
        for start in &comp {
            let path = cycle_path(start, &comp, &edges);
            let mut key = path[..path.len() - 1].to_vec();
            key.sort();
            if !seen.insert(key) {
                continue;
            }
            let steps: Vec<String> = path
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], sites(&g[&w[0]][&w[1]])))
                .collect();
            problems.push(format!(
                "cycle {}:\n{}",
                path.join(" -> "),
                steps.join("\n")
            ));
        }
    }
    println!("module graph (allowed exceptions marked *):");
    for (a, targets) in &g {
        let t: Vec<String> = targets
            .keys()
            .map(|b| {
                if allowed.contains(&(a.clone(), b.clone())) {
                    format!("{b}*")
                } else {
                    b.clone()
                }
            })
            .collect();
        println!("  {a} -> {}", t.join(", "));
    }
    assert!(
        problems.is_empty(),
        "the module graph breaks its rules:\n{}",
        problems.join("\n")
    );
}

/// No two files import each other, directly or through others: a cycle between the files of
/// one module (`cli/args.rs` declaring the commands whose files use its shared groups) is
/// as much a knot as one between modules. Shared pieces go to a leaf file of their own.
#[test]
fn file_graph_has_no_cycles() {
    let (mut files, mut g) = (BTreeSet::new(), Graph::new());
    for (krate, ..) in CRATES {
        let (f, e) = file_graph(krate);
        assert!(!f.is_empty(), "no files in {krate}/src");
        files.extend(f);
        g.extend(e);
    }
    let edges: BTreeMap<String, BTreeSet<String>> = g
        .iter()
        .map(|(a, t)| (a.clone(), t.keys().cloned().collect()))
        .collect();
    let mut problems = Vec::new();
    for comp in cycles(&files, &edges) {
        let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
        for start in &comp {
            let path = cycle_path(start, &comp, &edges);
            let mut key = path[..path.len() - 1].to_vec();
            key.sort();
            if !seen.insert(key) {
                continue;
            }
            let steps: Vec<String> = path
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], sites(&g[&w[0]][&w[1]])))
                .collect();
            problems.push(format!(
                "cycle {}:\n{}",
                path.join(" -> "),
                steps.join("\n")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} file cycles:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The parser on a fixture: groups, `super` chains out of inline modules, comments and
/// strings that mention other modules.
#[test]
fn the_parser_finds_imports_and_skips_comments_and_strings() {
    let src = r##"
        use crate::{model::RunRecord, export::{self, Format}};
        // use crate::doc_only;
        /* crate::block_comment */
        const S: &str = "crate::in_a_string";
        const R: &str = r#"crate::in_a_raw_string"#;
        fn f<'a>(x: &'a str) -> char { let _ = crate::sys::cpu(); '"' }
        mod tests {
            use super::super::session;
            use super::*;
        }
    "##;
    let toks = tokens(src);
    let idents: Vec<&str> = toks
        .iter()
        .filter_map(|(t, _)| match t {
            Tok::Ident(w) => Some(w.as_str()),
            _ => None,
        })
        .collect();
    for absent in [
        "doc_only",
        "block_comment",
        "in_a_string",
        "in_a_raw_string",
    ] {
        assert!(!idents.contains(&absent), "{absent} in {idents:?}");
    }
    assert!(idents.contains(&"sys"));
    let open = toks
        .iter()
        .position(|(t, _)| *t == Tok::Open)
        .expect("a group");
    assert_eq!(group_heads(&toks, open), ["model", "export"]);
    assert_eq!(module_path(Path::new("a/b.rs")), ["a", "b"]);
    assert_eq!(module_path(Path::new("a/mod.rs")), ["a"]);
}

/// `use` trees expand to full paths, as the file graph resolves them.
#[test]
fn use_trees_expand_to_full_paths() {
    let toks = tokens("use crate::{model::RunRecord, export::{self, table::align as a, csv::*}};");
    let open = toks
        .iter()
        .position(|(t, _)| *t == Tok::Open)
        .expect("a group");
    let (paths, _) = use_tree(&toks, open);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "model::RunRecord",
            "export",
            "export::table::align",
            "export::csv"
        ]
    );
}

/// The longest a function outside test code may be, in lines from its `fn` to its closing
/// brace: about 100 (issue 30). Never raised.
const MAX_FN_LINES: usize = 100;

/// The functions allowed over [`MAX_FN_LINES`] for now: (file as `CRATE/src/FILE`, name,
/// reason).
/// An entry no longer over the limit fails the test too, so the list only shrinks.
const LONG_ALLOWED: &[(&str, &str, &str)] = &[];

/// `cfg(test)` or `cfg(all(test, ...))` at token `i`.
fn is_cfg_test(toks: &[(Tok, usize)], i: usize) -> bool {
    let ident = |i: usize, w: &str| matches!(toks.get(i), Some((Tok::Ident(x), _)) if x == w);
    ident(i, "cfg") && (ident(i + 2, "test") || (ident(i + 2, "all") && ident(i + 4, "test")))
}

/// The files that are test code as a whole: those a `#[cfg(test)] mod NAME;` declares
/// (`NAME.rs` beside the declaring `mod.rs`/`lib.rs`, or in the declaring file's folder),
/// and those a `#[cfg(test)] #[path = "FILE"] mod NAME;` names (beside the declaring file).
fn test_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let toks = tokens(&std::fs::read_to_string(f).expect("read source"));
        let ident = |i: usize, w: &str| matches!(toks.get(i), Some((Tok::Ident(x), _)) if x == w);
        for i in 0..toks.len() {
            if !is_cfg_test(&toks, i) {
                continue;
            }
            // `#[cfg(test)] [pub(crate)] mod NAME;`
            let Some(m) = (i + 3..(i + 16).min(toks.len())).find(|&j| ident(j, "mod")) else {
                continue;
            };
            let (Some((Tok::Ident(name), _)), Some((Tok::Semi, _))) =
                (toks.get(m + 1), toks.get(m + 2))
            else {
                continue;
            };
            let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let dir = f.parent().expect("a folder");
            let dir = if stem == "mod" || stem == "lib" {
                dir.to_path_buf()
            } else {
                dir.join(stem)
            };
            for c in [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ] {
                if c.exists() {
                    out.insert(c);
                }
            }
        }
        // `#[cfg(test)] #[path = "FILE"] mod NAME;`: FILE beside the declaring file.
        let text = std::fs::read_to_string(f).expect("read source");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            if let ("#[cfg(test)]", Some(rest)) = (w[0], w[1].strip_prefix("#[path = \"")) {
                let file = rest.split('"').next().unwrap_or("");
                out.insert(f.parent().expect("a folder").join(file));
            }
        }
    }
    out
}

/// Every function outside test code longer than `max` lines: (lines, file, name, line).
/// Test code is a `#[cfg(test)]` item (its braces skipped) and a file that is all tests.
fn long_functions(max: usize) -> Vec<(usize, String, String, usize)> {
    let mut out = Vec::new();
    for (krate, ..) in CRATES {
        long_functions_in(krate, max, &mut out);
    }
    out.sort_by(|a, b| b.cmp(a));
    out
}

/// [`long_functions`] of one crate, files named `CRATE/src/FILE`.
fn long_functions_in(krate: &str, max: usize, out: &mut Vec<(usize, String, String, usize)>) {
    let src = crate_src(krate);
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let tests = test_files(&files);
    for f in files.iter().filter(|f| !tests.contains(*f)) {
        let toks = tokens(&std::fs::read_to_string(f).expect("read source"));
        let rel = format!(
            "{krate}/src/{}",
            f.strip_prefix(&src).expect("under src").display()
        );
        let ident = |i: usize, w: &str| matches!(toks.get(i), Some((Tok::Ident(x), _)) if x == w);
        // The index of the token that closes the braces opened at `open`.
        let close = |open: usize| -> usize {
            let mut depth = 0usize;
            for (j, (t, _)) in toks.iter().enumerate().skip(open) {
                match t {
                    Tok::Open => depth += 1,
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            return j;
                        }
                    }
                    _ => {}
                }
            }
            toks.len() - 1
        };
        let mut i = 0;
        while i < toks.len() {
            if is_cfg_test(&toks, i) {
                // Skip the item: to its body's closing brace, or its `;`.
                let mut j = i + 3;
                while j < toks.len() && !matches!(toks[j].0, Tok::Open | Tok::Semi) {
                    j += 1;
                }
                i = if matches!(toks.get(j), Some((Tok::Open, _))) {
                    close(j) + 1
                } else {
                    j + 1
                };
                continue;
            }
            if ident(i, "fn") {
                if let Some((Tok::Ident(name), line)) = toks.get(i + 1) {
                    // Its body, unless a `;` ends a declaration first.
                    let mut j = i + 2;
                    while j < toks.len() && !matches!(toks[j].0, Tok::Open | Tok::Semi) {
                        j += 1;
                    }
                    if matches!(toks.get(j), Some((Tok::Open, _))) {
                        let end = close(j);
                        let n = toks[end].1 - line + 1;
                        if n > max {
                            out.push((n, rel.clone(), name.clone(), *line));
                        }
                    }
                }
            }
            i += 1;
        }
    }
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let long = long_functions(MAX_FN_LINES);
    let allowed = |f: &str, name: &str| {
        LONG_ALLOWED
            .iter()
            .any(|(af, an, _)| *af == f && *an == name)
    };
    let list: Vec<String> = long
        .iter()
        .filter(|(_, f, name, _)| !allowed(f, name))
        .map(|(n, f, name, line)| format!("{f}:{line} {name}: {n} lines"))
        .collect();
    assert!(
        list.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them by meaning):\n{}",
        list.join("\n")
    );
    let stale: Vec<String> = LONG_ALLOWED
        .iter()
        .filter(|(af, an, _)| !long.iter().any(|(_, f, name, _)| f == af && name == an))
        .map(|(f, name, _)| format!("{f} {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_ALLOWED names functions no longer over {MAX_FN_LINES} lines: remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_function_length_check_counts_from_fn_to_its_brace() {
    let dir = std::env::temp_dir().join(format!("layers-fn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("x.rs");
    std::fs::write(
        &f,
        "trait T { fn decl(&self); }\nfn short() {\n    let s = \"}\";\n}\n#[cfg(test)]\nmod tests {\n    fn long() {\n\n\n\n    }\n}\n",
    )
    .unwrap();
    let toks = tokens(&std::fs::read_to_string(&f).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    // The string's brace is not a token; `decl` has no body.
    assert_eq!(toks.iter().filter(|t| t.0 == Tok::Close).count(), 4);
    assert!(toks.iter().any(|t| t.0 == Tok::Semi));
    // On this crate: a limit of 1 line finds functions, every one counted at least 2 lines.
    let all = long_functions(1);
    assert!(all.len() > 100 && all.iter().all(|(n, ..)| *n >= 2));
    let in_tests: Vec<_> = all
        .iter()
        .filter(|(_, f, ..)| f.ends_with("tests.rs"))
        .collect();
    assert!(in_tests.is_empty(), "{in_tests:?}");
}

/// The `cfg(...)` and `cfg!(...)` of `text` (line comments skipped) that name one of `words`:
/// (line, the cfg).
fn os_cfgs(text: &str, words: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("cfg") {
            let rest = code[at + 3..].trim_start_matches('!');
            let Some(inner) = rest.strip_prefix('(') else {
                continue;
            };
            let mut depth = 1;
            let end = inner
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(inner.len(), |(k, _)| k);
            let inner = &inner[..end];
            let named = inner
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| words.contains(&w));
            if named {
                out.push((n + 1, format!("cfg({inner})")));
            }
        }
    }
    out
}

/// The OS switches of every crate outside its OS seam ([`CRATES`]): (file as
/// `CRATE/src/FILE`, line, what).
fn os_switches() -> Vec<(String, usize, String)> {
    CRATES
        .iter()
        .flat_map(|(krate, seams, _)| os_switches_in(&crate_src(krate), krate, seams))
        .collect()
}

/// The OS switches of the crate `krate` whose sources are under `src`, outside the paths
/// `seams` (under `src`): (file, line, what). A switch is a `cfg` naming the operating
/// system (`unix`, `windows`, `target_os`, `target_family`), anywhere; or, outside test
/// code, a path into an OS's own API (`nix::`, `libc::`, `signal_hook::`, `windows_sys::`,
/// `std::os::`).
fn os_switches_in(src: &Path, krate: &str, seams: &[&str]) -> Vec<(String, usize, String)> {
    const OS_CFG: &[&str] = &["unix", "windows", "target_os", "target_family"];
    const OS_CRATES: &[&str] = &["nix", "libc", "signal_hook", "windows_sys"];
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let tests = test_files(&files);
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).expect("under src");
        if seams.iter().any(|s| rel.starts_with(s)) {
            continue;
        }
        let rel = Path::new(krate).join("src").join(rel);
        let text = std::fs::read_to_string(f).expect("read source");
        for (n, what) in os_cfgs(&text, OS_CFG) {
            out.push((rel.display().to_string(), n, what));
        }
        let toks = tokens(&text);
        let ident = |i: usize| match toks.get(i) {
            Some((Tok::Ident(x), _)) => Some(x.as_str()),
            _ => None,
        };
        let sep = |i: usize| matches!(toks.get(i), Some((Tok::PathSep, _)));
        // A `#[cfg(test)]` item: `pending` from the attribute to its `{` (or `;`), then
        // `test_until` holds the depth of its braces.
        let (mut test_until, mut pending, mut depth) = (None::<usize>, false, 0usize);
        for i in 0..toks.len() {
            match toks[i].0 {
                Tok::Open => {
                    depth += 1;
                    if pending {
                        (test_until, pending) = (Some(depth), false);
                    }
                }
                Tok::Close => depth = depth.saturating_sub(1),
                Tok::Semi if test_until.is_none() => pending = false,
                _ => {}
            }
            if test_until.is_some_and(|d| depth < d) {
                test_until = None;
            }
            if test_until.is_none() && is_cfg_test(&toks, i) {
                pending = true;
            }
            let line = toks[i].1;
            let mut hit = |what: String| out.push((rel.display().to_string(), line, what));
            let in_tests = tests.contains(f) || pending || test_until.is_some();
            if !in_tests && sep(i + 1) && i.checked_sub(1).is_none_or(|p| !sep(p)) {
                match ident(i) {
                    Some(c) if OS_CRATES.contains(&c) => hit(format!("{c}::")),
                    Some("std") if ident(i + 2) == Some("os") => hit("std::os::".into()),
                    _ => {}
                }
            }
        }
    }
    out
}

#[test]
fn no_os_switch_stands_outside_a_crates_os_seam() {
    let found: Vec<String> = os_switches()
        .iter()
        .map(|(f, line, what)| format!("{f}:{line} {what}"))
        .collect();
    assert!(
        found.is_empty(),
        "the operating system's own calls belong in the crate's OS seam (tests/layers.rs's CRATES: linerate's src/sys/, whose backends sys/mod.rs picks by cfg, reached through sys::net, sys::process, sys::system...; linerate-lab's src/os.rs; none in linerate-wire and linerate-stats):\n{}",
        found.join("\n")
    );
}

/// The OS rule on a fixture crate: a seam file may switch, another file may not, and a
/// test module may call an OS's API (but not switch by `cfg`).
#[test]
fn the_os_rule_finds_switches_outside_the_seam_only() {
    let dir = std::env::temp_dir().join(format!("layers-os-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("seam")).unwrap();
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    write(
        "seam/mod.rs",
        "#[cfg(target_os = \"linux\")]\npub fn root() -> bool { nix::unistd::geteuid().is_root() }\n",
    );
    write(
        "lib.rs",
        "pub mod seam;\n// nix::in_a_comment\npub fn f() -> bool {\n    libc::getuid() == 0\n}\n#[cfg(unix)]\npub fn g() {}\n#[cfg(test)]\nmod tests {\n    fn t() { let _ = std::os::raw::c_int::MAX; }\n}\n",
    );
    let found = os_switches_in(&dir, "fixture", &["seam"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let lib = Path::new("fixture").join("src").join("lib.rs");
    let lib = lib.display().to_string();
    assert_eq!(
        found,
        [
            (lib.clone(), 6, "cfg(unix)".to_string()),
            (lib, 4, "libc::".to_string()),
        ]
    );
    // Without its seam, the lab crate's os.rs is found: the rule sees it.
    let lab = os_switches_in(&crate_src("linerate-lab"), "linerate-lab", &[]);
    assert!(lab.iter().any(|(f, ..)| f.ends_with("os.rs")), "{lab:?}");
}
