//! Sweeps (`linerate sweep`): a matrix of test options and free variables, its points, the
//! record of every point (its runs, the client-side commands run before it, their output
//! and exit status), and the best point by a metric with how much better it is than a
//! baseline point and whether the difference is significant (`compare`'s Welch test).
//!
//! Pure: the runner is `app::sweep`, the rendering `export::sweep`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::compare::{MetricComparison, Verdict};
use super::diagnosis::VerdictKind;
use super::repeat::{self, metrics_of, MetricDef};
use super::units::format_metric;
use super::RunSetRecord;

/// Layout version of [`SweepRecord`].
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// Most points a sweep may have.
pub const MAX_POINTS: usize = 10_000;
/// Most dimensions (`--vary`) a sweep may have: at most 13 can have two values or more
/// within [`MAX_POINTS`], and the others fix one value each.
pub const MAX_DIMENSIONS: usize = 64;

/// One dimension of the matrix: a name and its values, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Vary {
    /// A test option's long or short name (`len`, `l`, `window`, `P`), or a free variable
    /// that only the client commands' templates use (`mtu`).
    pub name: String,
    /// Its values, as given to the option.
    pub values: Vec<String>,
    /// True when `name` is an option of the test (passed to it), false for a free variable.
    pub option: bool,
}

/// One item of a `--vary` list: a single value, or a range not yet written out.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    One(&'a str),
    /// `LO..HI` (step 1: `Add(1)`), `LO..HI:+STEP` or `LO..HI:*FACTOR`.
    Range {
        lo: u64,
        hi: u64,
        step: Step,
    },
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Add(u64),
    Mul(u64),
}

impl Item<'_> {
    /// How many values it gives, counted without writing them out.
    fn count(self) -> u64 {
        match self {
            Item::One(_) => 1,
            Item::Range {
                lo,
                hi,
                step: Step::Add(d),
            } => ((hi - lo) / d).saturating_add(1),
            Item::Range {
                lo,
                hi,
                step: Step::Mul(f),
            } => {
                // At most 64 rounds: lo ≥ 1 and f ≥ 2.
                let (mut n, mut v) = (0, Some(lo));
                while let Some(x) = v.filter(|x| *x <= hi) {
                    n += 1;
                    v = x.checked_mul(f);
                }
                n
            }
        }
    }

    /// Appends its values.
    fn write_out(self, out: &mut Vec<String>) {
        match self {
            Item::One(v) => out.push(v.to_string()),
            Item::Range { lo, hi, step } => {
                let mut v = Some(lo);
                while let Some(x) = v.filter(|x| *x <= hi) {
                    out.push(x.to_string());
                    v = match step {
                        Step::Add(d) => x.checked_add(d),
                        Step::Mul(f) => x.checked_mul(f),
                    };
                }
            }
        }
    }
}

/// The name and the items of `NAME=VALUES`, checked; nothing written out yet.
fn parse_items(s: &str) -> Result<(String, Vec<Item<'_>>), String> {
    let (name, list) = s
        .split_once('=')
        .ok_or_else(|| format!("--vary {s}: use NAME=VALUES, e.g. --vary len=1K,4K,16K"))?;
    let name = name.trim().trim_start_matches('-').to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "--vary {s}: NAME is a test option (len, window, parallel, P) or a variable name of letters, digits and _"
        ));
    }
    let mut items = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!(
                "--vary {s}: an empty value; separate values with commas"
            ));
        }
        items.push(match item.split_once("..") {
            Some((lo, rest)) => range(lo, rest).map_err(|e| format!("--vary {s}: {e}"))?,
            None => Item::One(item),
        });
    }
    Ok((name, items))
}

/// How many values `NAME=VALUES` gives, counted without writing them out: with
/// [`check_size`], a matrix is measured before it is built.
pub fn count_vary(s: &str) -> Result<(String, u64), String> {
    let (name, items) = parse_items(s)?;
    let n = items.iter().fold(0u64, |n, i| n.saturating_add(i.count()));
    Ok((name, n))
}

/// Parses `NAME=VALUES`: VALUES is a comma-separated list whose items are single values or
/// ranges `LO..HI` (step 1), `LO..HI:+STEP` (arithmetic) or `LO..HI:*FACTOR` (geometric),
/// with size suffixes (K, M, G: powers of 1024) allowed in ranges. More than
/// [`MAX_POINTS`] values are refused before any is written out.
pub fn parse_vary(s: &str) -> Result<(String, Vec<String>), String> {
    let (name, items) = parse_items(s)?;
    let n = items.iter().fold(0u64, |n, i| n.saturating_add(i.count()));
    check_size(&[(name.clone(), n)])?;
    let mut values = Vec::new();
    for i in items {
        i.write_out(&mut values);
    }
    Ok((name, values))
}

/// The number of points of a matrix whose dimensions have these many values (checked
/// arithmetic: `None` beyond `u64`).
pub fn matrix_size(counts: impl IntoIterator<Item = u64>) -> Option<u64> {
    counts
        .into_iter()
        .try_fold(1u64, |acc, n| acc.checked_mul(n))
}

/// Checks a matrix's size from its dimensions' names and value counts, before anything is
/// built: its number of points, or a one-line error that names the counts and how to
/// make fewer.
pub fn check_size(dims: &[(String, u64)]) -> Result<u64, String> {
    if dims.len() > MAX_DIMENSIONS {
        return Err(format!(
            "--vary is given {} times, more than the {MAX_DIMENSIONS} dimensions a sweep may have: give each dimension once, with all its values",
            dims.len()
        ));
    }
    let total = matrix_size(dims.iter().map(|d| d.1));
    if let Some(n) = total.filter(|n| *n <= MAX_POINTS as u64) {
        return Ok(n);
    }
    let many: Vec<&(String, u64)> = dims.iter().filter(|d| d.1 > 1).collect();
    let mut factors: Vec<String> = many
        .iter()
        .take(6)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    if many.len() > 6 {
        factors.push(format!("{} more", many.len() - 6));
    }
    let total = total.map_or_else(|| format!("more than {}", u64::MAX), |n| n.to_string());
    let widest = many
        .iter()
        .max_by_key(|d| d.1)
        .map_or("len", |d| d.0.as_str());
    Err(format!(
        "--vary: {} values make {total} points, more than the {MAX_POINTS} a sweep may have: give fewer values, e.g. a range with a step ({widest}=1..1000:+100) or a factor ({widest}=1..1024:*2)",
        factors.join(" × ")
    ))
}

fn number(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1u64 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1u64 << 30),
        _ => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|d| d.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a whole number (K, M, G suffixes allowed)"))
}

fn range<'a>(lo: &str, rest: &str) -> Result<Item<'a>, String> {
    let (hi, step) = match rest.split_once(':') {
        Some((h, st)) => (h, Some(st.trim())),
        None => (rest, None),
    };
    let (lo, hi) = (number(lo)?, number(hi)?);
    if lo > hi {
        return Err(format!("the range {lo}..{hi} runs backwards"));
    }
    let step = match step {
        None => Step::Add(1),
        Some(st) if st.starts_with('+') => {
            let d = number(&st[1..])?;
            if d == 0 {
                return Err("a step of +0 never ends".into());
            }
            Step::Add(d)
        }
        Some(st) if st.starts_with('*') => {
            let f = number(&st[1..])?;
            if f < 2 || lo == 0 {
                return Err("a geometric range needs a factor of at least 2 and LO above 0".into());
            }
            Step::Mul(f)
        }
        Some(st) => {
            return Err(format!(
                "step '{st}': use :+STEP (arithmetic) or :*FACTOR (geometric)"
            ))
        }
    };
    Ok(Item::Range { lo, hi, step })
}

/// Every combination of the values, the first dimension outermost; each point maps names to
/// values. A matrix of more than [`MAX_POINTS`] points is refused before it is built.
pub fn expand(varies: &[Vary]) -> Result<Vec<BTreeMap<String, String>>, String> {
    let dims: Vec<(String, u64)> = varies
        .iter()
        .map(|v| (v.name.clone(), v.values.len() as u64))
        .collect();
    check_size(&dims)?;
    let mut points = vec![BTreeMap::new()];
    for v in varies {
        let mut next = Vec::with_capacity(points.len() * v.values.len());
        for p in &points {
            for val in &v.values {
                let mut q = p.clone();
                q.insert(v.name.clone(), val.clone());
                next.push(q);
            }
        }
        points = next;
    }
    Ok(points)
}

/// Splits a command template into words: whitespace separates, single or double quotes
/// keep a word together; no shell, no expansion.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(format!("unbalanced quote in '{s}'"));
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err("an empty command".into());
    }
    Ok(words)
}

/// Replaces every `{name}` in `word` by the point's value; `{{` and `}}` are literal braces.
/// A name the point does not have is an error.
pub fn fill(word: &str, point: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('}') {
            return Err(format!("'{word}': a lone '}}' (write }}}} for a brace)"));
        }
        let Some(end) = tail.find('}') else {
            return Err(format!("'{word}': '{{' without '}}'"));
        };
        let name = &tail[1..end];
        match point.get(name) {
            Some(v) => out.push_str(v),
            None => {
                return Err(format!(
                    "'{word}': {{{name}}} is not a --vary name of this sweep"
                ))
            }
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The names a template uses.
pub fn names_in(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(i) = rest.find('{') {
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            rest = after;
            continue;
        }
        match tail.find('}') {
            Some(end) => {
                out.push(tail[1..end].to_string());
                rest = &tail[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// A command run on the client before a point (or to restore at the end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandRecord {
    /// The words run (no shell).
    pub argv: Vec<String>,
    /// Exit status; absent when it did not exit by itself (time-out, signal) or did not
    /// start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when it was killed at the time-out.
    pub timed_out: bool,
    /// Its standard output (the first 16 KiB, lossy UTF-8).
    pub stdout: String,
    /// Its standard error (the first 16 KiB, lossy UTF-8), or why it could not start.
    pub stderr: String,
    /// How long it ran, milliseconds.
    pub duration_ms: u64,
}

impl CommandRecord {
    /// Exited with status 0.
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// What went wrong, in words; `None` when it succeeded.
    pub fn failure(&self) -> Option<String> {
        if self.ok() {
            return None;
        }
        let cmd = self.argv.join(" ");
        let detail = self.stderr.lines().next().unwrap_or("").trim();
        let why = if self.timed_out {
            format!("did not finish in time ({} ms)", self.duration_ms)
        } else {
            match self.exit_code {
                Some(c) => format!("exited with status {c}"),
                None => "did not run or was killed".to_string(),
            }
        };
        Some(if detail.is_empty() {
            format!("`{cmd}` {why}")
        } else {
            format!("`{cmd}` {why}: {detail}")
        })
    }
}

/// How a point ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PointStatus {
    /// Every run completed.
    Ok,
    /// linerate itself was the limit in at least one run (diagnosis `tester_limited`): the
    /// figure is a bound of the system's (it does at least that well), and the point takes
    /// part in the best pick as one.
    TesterLimited,
    /// A command before it failed, or the test could not run.
    Failed,
    /// Ctrl-C or a server limit cut it short.
    Interrupted,
}

impl PointStatus {
    /// The word the table prints.
    pub fn word(self) -> &'static str {
        match self {
            PointStatus::Ok => "ok",
            PointStatus::TesterLimited => "tester-limited",
            PointStatus::Failed => "FAILED",
            PointStatus::Interrupted => "interrupted",
        }
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PointRecord {
    /// Number of the point, from 1, in matrix order.
    pub index: u32,
    /// Its values by name.
    pub values: BTreeMap<String, String>,
    /// The test's command line at this point.
    pub argv: Vec<String>,
    /// The server hooks run before the point (`--hook`), in order, as the server reported
    /// them: the command it ran (its operator's declaration with the values filled in),
    /// exit status and output.
    #[serde(default)]
    pub server_hooks: Vec<CommandRecord>,
    /// The client commands run before the test, in order (the first failure stops the
    /// point).
    #[serde(default)]
    pub commands: Vec<CommandRecord>,
    /// How it ended.
    pub status: PointStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The runs (one, or `--repeat`'s), with their statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<RunSetRecord>,
    /// Run id in the results database, when stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_id: Option<i64>,
}

impl PointRecord {
    /// The values of metric `name`, one per run.
    pub fn values_of(&self, name: &str) -> Vec<f64> {
        self.runs
            .as_ref()
            .map(|s| repeat::values(&s.runs, name))
            .unwrap_or_default()
    }

    /// The point's values in words: `len=64K parallel=4`.
    pub fn label(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The status of a point from its runs: tester-limited when any run's diagnosis says so.
pub fn status_of(set: &RunSetRecord) -> PointStatus {
    if set.runs.iter().any(|r| r.interrupted) {
        return PointStatus::Interrupted;
    }
    let limited = set.runs.iter().any(|r| {
        r.diagnosis.as_ref().is_some_and(|d| {
            d.verdicts
                .iter()
                .any(|v| v.kind == VerdictKind::TesterLimited)
        })
    });
    if limited {
        PointStatus::TesterLimited
    } else {
        PointStatus::Ok
    }
}

/// How the best point was decided among the points that take part (completed or
/// tester-limited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PickRule {
    /// Every point had repeats: the best mean, and Welch's t-test against every other
    /// point (none beats it significantly; those it cannot separate are `indistinguishable`).
    Welch,
    /// A point had one run: the better measured figure, since nothing can show the
    /// difference is noise.
    HigherFigure,
    /// No other point measured the metric.
    OnlyPoint,
}

/// The best point and how it compares with the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BestRecord {
    /// The metric, with its unit (`throughput_bps`).
    pub metric: String,
    /// True when more is better.
    pub higher_is_better: bool,
    /// The best point's index.
    pub point: u32,
    /// Its mean.
    pub mean: f64,
    /// The baseline point's index.
    pub baseline: u32,
    /// The baseline's mean.
    pub baseline_mean: f64,
    /// Change of the best against the baseline, percent of the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    /// Welch's two-sided p-value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// `significant`, `not_significant` or `too_few_trials`.
    pub verdict: String,
    /// Which rule decided the pick (absent in records of linerate before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<PickRule>,
    /// The tester limited the best point: its mean is a bound, the system does at least
    /// that well (at least that much when more is better, at most when less is).
    #[serde(default)]
    pub tester_limited: bool,
    /// Every point that took part was tester-limited: the sweep measured linerate more
    /// than the system.
    #[serde(default)]
    pub all_tester_limited: bool,
    /// The other points that Welch's t-test cannot tell from the best (p >= 0.05).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indistinguishable: Vec<u32>,
    /// The finding in words.
    pub sentence: String,
}

/// The whole sweep (`linerate sweep --json`, schema `docs/json-schema/sweep-v1.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SweepRecord {
    /// Layout version ([`SWEEP_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// "linerate x.y.z".
    pub tool_version: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// The test command line the points vary (`tcp HOST -t 5`).
    pub test: Vec<String>,
    /// The matrix.
    pub vary: Vec<Vary>,
    /// Runs per point (fewest, most).
    pub runs_per_point: (u32, u32),
    /// The metric the best point is picked by.
    pub best_by: String,
    /// Every point, in matrix order; failed ones too.
    pub points: Vec<PointRecord>,
    /// The best point, when any point measured the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<BestRecord>,
    /// The commands run at the end to restore (`--client-restore`).
    #[serde(default)]
    pub restore: Vec<CommandRecord>,
    /// What went wrong or needs saying, one sentence each.
    pub warnings: Vec<String>,
}

/// The metric definition of `name` in `points` (the first point with runs that has it).
pub fn metric_def(points: &[PointRecord], name: &str) -> Option<MetricDef> {
    points
        .iter()
        .filter_map(|p| p.runs.as_ref())
        .flat_map(|s| s.runs.iter())
        .find_map(|r| metrics_of(r).into_iter().find(|(d, _)| d.name == name))
        .map(|(d, _)| d)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// "at least" when more is better, "at most" when less is: what a tester-limited figure
/// says of the system.
pub fn bound_word(higher_is_better: bool) -> &'static str {
    if higher_is_better {
        "at least"
    } else {
        "at most"
    }
}

/// What to change so that a sweep measures the system rather than linerate.
pub const TESTER_ADVICE: &str =
    "more streams (-P), linerate's threads pinned apart (-A), or a faster client host";

fn listed(indices: &[u32]) -> String {
    let n: Vec<String> = indices.iter().map(u32::to_string).collect();
    match n.as_slice() {
        [] => String::new(),
        [one] => format!("point {one}"),
        [init @ .., last] => format!("points {} and {last}", init.join(", ")),
    }
}

/// Picks the best point by `metric` and compares it with the point numbered `baseline`.
///
/// The points that take part are those that completed and those the tester limited: a
/// tester-limited figure still proves the system does at least that well, so it takes part
/// as a bound (and the words say so) rather than leaving the pick to a worse point. Failed
/// and interrupted points stay out. The pick is the best mean, so no other point beats it;
/// with repeats, Welch's t-test against every other point names those it cannot separate
/// from it ([`PickRule::Welch`]); with one run on a side nothing can show a difference is
/// noise, so the better measured figure decides ([`PickRule::HigherFigure`]).
pub fn pick_best(points: &[PointRecord], metric: &str, baseline: u32) -> Option<BestRecord> {
    let def = metric_def(points, metric)?;
    let valid: Vec<(&PointRecord, Vec<f64>, f64)> = points
        .iter()
        .filter(|p| matches!(p.status, PointStatus::Ok | PointStatus::TesterLimited))
        .filter_map(|p| {
            let v = p.values_of(metric);
            let m = mean(&v)?;
            Some((p, v, m))
        })
        .collect();
    let mut best: Option<&(&PointRecord, Vec<f64>, f64)> = None;
    for c in &valid {
        if best.is_none_or(|b| better(def.higher_is_better, c.2, b.2)) {
            best = Some(c);
        }
    }
    let (bp, bvals, bm) = best?;
    let (bp, bm) = (*bp, *bm);
    let (rule, indistinguishable) = pick_rule(&valid, bp, bvals, metric);
    let all_limited = valid
        .iter()
        .all(|(p, _, _)| p.status == PointStatus::TesterLimited);
    let base = points.iter().find(|p| p.index == baseline)?;
    let base_vals = base.values_of(metric);
    let base_mean = mean(&base_vals)?;
    let cmp = MetricComparison::new(metric, &base_vals, bvals)?;
    let verdict = match cmp.verdict {
        Verdict::Significant => "significant",
        Verdict::NotSignificant => "not_significant",
        Verdict::TooFewRuns => "too_few_trials",
    };
    let change = cmp.change_percent();
    let mut sentence = pick_sentence(metric, &def, (bp, bm), (base, base_mean), &cmp);
    sentence.push_str(&rule_words(
        rule,
        &indistinguishable,
        baseline,
        bp.index,
        def.higher_is_better,
    ));
    if all_limited {
        let bound = bound_word(def.higher_is_better);
        sentence.push_str(&format!(
            " The tester limited every point: the sweep measured linerate more than the \
             system, which does {bound} that well; to measure the system use {TESTER_ADVICE}."
        ));
    }
    Some(BestRecord {
        metric: metric.to_string(),
        higher_is_better: def.higher_is_better,
        point: bp.index,
        mean: bm,
        baseline: base.index,
        baseline_mean: base_mean,
        change_percent: change,
        p_value: cmp.p_value,
        verdict: verdict.to_string(),
        rule: Some(rule),
        tester_limited: bp.status == PointStatus::TesterLimited,
        all_tester_limited: all_limited,
        indistinguishable,
        sentence,
    })
}

/// `a` is better than `b` for a metric of which more (or less) is better.
fn better(higher_is_better: bool, a: f64, b: f64) -> bool {
    if higher_is_better {
        a > b
    } else {
        a < b
    }
}

/// How the best point `bp` (with values `bvals`) was picked against every other point that
/// took part, and the points Welch's t-test cannot tell from it.
fn pick_rule(
    valid: &[(&PointRecord, Vec<f64>, f64)],
    bp: &PointRecord,
    bvals: &[f64],
    metric: &str,
) -> (PickRule, Vec<u32>) {
    let mut rule = PickRule::OnlyPoint;
    let mut indistinguishable = Vec::new();
    let mut single = false;
    for (p, vals, _) in valid.iter().filter(|(p, _, _)| p.index != bp.index) {
        let Some(c) = MetricComparison::new(metric, vals, bvals) else {
            continue;
        };
        match c.verdict {
            Verdict::TooFewRuns => single = true,
            Verdict::NotSignificant => indistinguishable.push(p.index),
            Verdict::Significant => {}
        }
        rule = PickRule::Welch;
    }
    if single {
        rule = PickRule::HigherFigure;
    }
    (rule, indistinguishable)
}

/// A point's figure, "at least"/"at most" before it when the tester limited the point.
fn point_figure(metric: &str, higher_is_better: bool, p: &PointRecord, m: f64) -> String {
    if p.status == PointStatus::TesterLimited {
        format!(
            "{} {}",
            bound_word(higher_is_better),
            format_metric(metric, m)
        )
    } else {
        format_metric(metric, m)
    }
}

/// The pick's first sentence: the best point and its figure, against the baseline's with
/// the t-test's word on the difference.
fn pick_sentence(
    metric: &str,
    def: &MetricDef,
    (bp, bm): (&PointRecord, f64),
    (base, base_mean): (&PointRecord, f64),
    cmp: &MetricComparison,
) -> String {
    let figure = |p: &PointRecord, m: f64| point_figure(metric, def.higher_is_better, p, m);
    let limited_note = if bp.status == PointStatus::TesterLimited {
        "; the tester limited this point: use -P"
    } else {
        ""
    };
    if bp.index == base.index {
        return format!(
            "The baseline, point {} ({}), is the best by {}: {}{limited_note}.",
            bp.index,
            bp.label(),
            def.label,
            figure(bp, bm)
        );
    }
    let how = match cmp.change_percent() {
        Some(c) => {
            let word = if c >= 0.0 { "higher" } else { "lower" };
            format!("{:.1} % {word} than", c.abs())
        }
        None => "compared with".to_string(),
    };
    let sig = match cmp.verdict {
        Verdict::Significant => format!(
            "; the difference is significant (Welch's t-test, p = {:.3})",
            cmp.p_value.unwrap_or(0.0)
        ),
        Verdict::NotSignificant => format!(
            "; the difference is not significant (Welch's t-test, p = {:.2}): the points may be equal",
            cmp.p_value.unwrap_or(1.0)
        ),
        // The rule's words below say why.
        Verdict::TooFewRuns => String::new(),
    };
    format!(
        "Best by {}: point {} ({}) {}{limited_note}. That is {how} the baseline point {} ({}, {}){sig}.",
        def.label,
        bp.index,
        bp.label(),
        if bp.status == PointStatus::TesterLimited {
            figure(bp, bm)
        } else {
            format!("at {}", figure(bp, bm))
        },
        base.index,
        base.label(),
        figure(base, base_mean),
    )
}

/// The words that say how the best point was picked (`rule`), with a leading space.
fn rule_words(
    rule: PickRule,
    indistinguishable: &[u32],
    baseline: u32,
    best: u32,
    higher_is_better: bool,
) -> String {
    let more = if higher_is_better { "higher" } else { "lower" };
    match rule {
        PickRule::OnlyPoint => " No other point measured it.".to_string(),
        PickRule::HigherFigure => format!(
            " Picked by the {more} measured figure: with single runs nothing can show the difference \
             is noise (use --repeat 5 or more)."
        ),
        PickRule::Welch if indistinguishable.is_empty() => {
            " Welch's t-test separates it from every other point (p < 0.05).".to_string()
        }
        // The baseline's comparison above already said it may be equal.
        PickRule::Welch if indistinguishable == [baseline] && best != baseline => {
            " Welch's t-test separates it from every other point but the baseline \
             (p < 0.05); it is picked by its mean."
                .to_string()
        }
        PickRule::Welch => format!(
            " Welch's t-test cannot tell it from {} (p >= 0.05): they are indistinguishable, \
             and it is picked only by its {more} mean.",
            listed(indistinguishable)
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::fixtures;
    use crate::model::repeat::{RepeatRecord, TRIALS_SCHEMA_VERSION};

    #[test]
    fn values_lists_and_ranges() {
        let v = |s| parse_vary(s).map(|(_, v)| v);
        assert_eq!(v("l=1K,4K").unwrap(), vec!["1K", "4K"]);
        assert_eq!(v("P=1..4").unwrap(), vec!["1", "2", "3", "4"]);
        assert_eq!(
            v("l=1K..8K:*2").unwrap(),
            vec!["1024", "2048", "4096", "8192"]
        );
        assert_eq!(
            v("mtu=1500..9000:+2500").unwrap(),
            vec!["1500", "4000", "6500", "9000"]
        );
        assert_eq!(v("x=1,3..4,9").unwrap(), vec!["1", "3", "4", "9"]);
        assert_eq!(parse_vary("--window=1M").unwrap().0, "window");
        for bad in [
            "l",
            "l=",
            "l=1,,2",
            "l=4..1",
            "l=1..9:+0",
            "l=1..9:*1",
            "l=1..9:/2",
            "a b=1",
            "l=1..x",
        ] {
            assert!(parse_vary(bad).is_err(), "{bad}");
        }
        assert!(parse_vary("l=1..100000").is_err());
    }

    #[test]
    fn the_matrix_is_measured_before_it_is_built() {
        // Counting writes nothing out, however wide the range.
        for s in [
            "l=1K,4K",
            "P=1..4",
            "l=1K..8K:*2",
            "mtu=1500..9000:+2500",
            "mtu=1500..9001:+2500",
            "x=1,3..4,9",
            "l=1..10000",
        ] {
            let (_, n) = count_vary(s).unwrap();
            assert_eq!(n, parse_vary(s).unwrap().1.len() as u64, "{s}");
        }
        assert_eq!(count_vary("l=0..16G").unwrap().1, (16u64 << 30) + 1);
        assert_eq!(count_vary("l=0..18446744073709551615").unwrap().1, u64::MAX);
        assert_eq!(count_vary("l=1..16G:*2").unwrap().1, 35);
        assert_eq!(
            count_vary("l=1..18446744073709551615:+1000000").unwrap().1,
            18_446_744_073_710
        );
        // The last value of a step that ends at u64::MAX is kept.
        let top = parse_vary("l=18446744073709551613..18446744073709551615:+2")
            .unwrap()
            .1;
        assert_eq!(top, ["18446744073709551613", "18446744073709551615"]);

        let dims = |d: &[(&str, u64)]| -> Vec<(String, u64)> {
            d.iter().map(|(n, c)| (n.to_string(), *c)).collect()
        };
        assert_eq!(
            check_size(&dims(&[("len", 100), ("window", 100)])),
            Ok(10_000)
        );
        assert_eq!(check_size(&[]), Ok(1));
        let e = check_size(&dims(&[("x", 1), ("len", 1000), ("window", 2000)])).unwrap_err();
        assert_eq!(
            e,
            "--vary: len 1000 × window 2000 values make 2000000 points, more than the 10000 a sweep may have: give fewer values, e.g. a range with a step (window=1..1000:+100) or a factor (window=1..1024:*2)"
        );
        let e = check_size(&dims(&[("a", u64::MAX), ("b", 2)])).unwrap_err();
        assert!(
            e.contains("make more than 18446744073709551615 points"),
            "{e}"
        );
        let flat: Vec<(String, u64)> = (0..=MAX_DIMENSIONS).map(|i| (format!("v{i}"), 1)).collect();
        assert!(check_size(&flat).unwrap_err().contains("65 times"));
        assert_eq!(check_size(&flat[1..]), Ok(1));
        assert_eq!(matrix_size([1000, 1000, 1000]), Some(1_000_000_000));
        assert_eq!(matrix_size([u64::MAX, 2]), None);
        // expand refuses what it cannot build.
        let wide = Vary {
            name: "a".into(),
            values: (0..200).map(|i| i.to_string()).collect(),
            option: true,
        };
        assert!(expand(&[wide.clone(), wide]).is_err());
    }

    #[test]
    fn the_matrix_is_every_combination_first_outermost() {
        let vary = |n: &str, v: &[&str]| Vary {
            name: n.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
            option: true,
        };
        let pts = expand(&[vary("a", &["1", "2"]), vary("b", &["x", "y", "z"])]).unwrap();
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[0]["a"], "1");
        assert_eq!(pts[0]["b"], "x");
        assert_eq!(pts[1]["b"], "y");
        assert_eq!(pts[3]["a"], "2");
        assert_eq!(expand(&[]).unwrap().len(), 1);
    }

    #[test]
    fn templates_fill_and_split_without_a_shell() {
        let p: BTreeMap<String, String> = [("mtu".to_string(), "9000".to_string())].into();
        assert_eq!(fill("mtu={mtu}", &p).unwrap(), "mtu=9000");
        assert_eq!(fill("{{x}}", &p).unwrap(), "{x}");
        assert!(fill("{nope}", &p).unwrap_err().contains("{nope}"));
        assert!(fill("{mtu", &p).is_err());
        assert_eq!(names_in("a{mtu}b{x}"), vec!["mtu", "x"]);
        assert_eq!(
            split_words("ip link set 'dev x' mtu {mtu}; rm -rf /").unwrap(),
            vec!["ip", "link", "set", "dev x", "mtu", "{mtu};", "rm", "-rf", "/"]
        );
        assert!(split_words("a 'b").is_err());
        assert!(split_words("  ").is_err());
    }

    pub(crate) fn point(index: u32, status: PointStatus, bps: &[f64]) -> PointRecord {
        let runs = bps
            .iter()
            .map(|b| {
                let mut r = fixtures::tcp_send();
                r.summary.flows[0].receiver_bps = Some(*b);
                r
            })
            .collect();
        PointRecord {
            index,
            values: [("l".to_string(), index.to_string())].into(),
            argv: vec![],
            server_hooks: vec![],
            commands: vec![],
            status,
            error: None,
            runs: Some(RunSetRecord {
                schema_version: TRIALS_SCHEMA_VERSION,
                tool_version: "t".into(),
                repeat: RepeatRecord {
                    min_runs: 1,
                    max_runs: 1,
                    confidence_level_percent: None,
                    width_percent: None,
                },
                primary_metric: "throughput_bps".into(),
                converged: None,
                metrics: vec![],
                runs,
                warnings: vec![],
            }),
            stored_id: None,
        }
    }

    /// A point of a one-dimension sweep `name=value`, with one run per figure.
    pub(crate) fn labelled(
        index: u32,
        name: &str,
        value: &str,
        status: PointStatus,
        bps: &[f64],
    ) -> PointRecord {
        let mut p = point(index, status, bps);
        p.values = [(name.to_string(), value.to_string())].into();
        p
    }

    #[test]
    fn the_best_point_is_picked_among_completed_ones_with_its_significance() {
        let pts = vec![
            point(1, PointStatus::Ok, &[100e6, 101e6, 99e6, 100e6, 100.5e6]),
            point(2, PointStatus::Ok, &[200e6, 201e6, 199e6, 200e6, 199.5e6]),
            // Higher, but it failed: never picked.
            point(3, PointStatus::Failed, &[900e6; 5]),
            point(4, PointStatus::Interrupted, &[800e6; 5]),
            point(5, PointStatus::Failed, &[]),
        ];
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!(b.point, 2);
        assert_eq!(b.baseline, 1);
        assert_eq!(b.verdict, "significant");
        assert_eq!(b.rule, Some(PickRule::Welch));
        assert!(b.indistinguishable.is_empty());
        assert!(!b.tester_limited && !b.all_tester_limited);
        let c = b.change_percent.unwrap();
        assert!((c - 99.9).abs() < 0.5, "{c}");
        assert!(
            b.sentence.contains("higher than the baseline point 1"),
            "{}",
            b.sentence
        );
        assert!(
            b.sentence.contains("separates it from every other point"),
            "{}",
            b.sentence
        );

        // One run each: no verdict, and the words say which rule decided.
        let one = vec![
            point(1, PointStatus::Ok, &[1e6]),
            point(2, PointStatus::Ok, &[2e6]),
        ];
        let b = pick_best(&one, "throughput_bps", 1).unwrap();
        assert_eq!(b.verdict, "too_few_trials");
        assert_eq!(b.rule, Some(PickRule::HigherFigure));
        assert!(b.sentence.contains("--repeat 5"), "{}", b.sentence);
        assert!(
            b.sentence.contains("Picked by the higher measured figure"),
            "{}",
            b.sentence
        );

        // Lower is better for CPU per unit of work.
        let mut lo = vec![
            point(1, PointStatus::Ok, &[1e6]),
            point(2, PointStatus::Ok, &[2e6]),
        ];
        for (p, cpu) in lo.iter_mut().zip([50.0, 20.0]) {
            for r in &mut p.runs.as_mut().unwrap().runs {
                r.summary.client.cpu_util_percent = Some(cpu);
            }
        }
        let b = pick_best(&lo, "client_cpu_percent", 1).unwrap();
        assert_eq!(b.point, 2);
        assert!(!b.higher_is_better);
        assert!(
            b.sentence.contains("the lower measured figure"),
            "{}",
            b.sentence
        );
        assert!(pick_best(&lo, "no_such_metric", 1).is_none());
    }

    /// Issue 29: `sweep --vary rate=2G,100G -- tcp 127.0.0.1 -t 2` measured 1.99 and
    /// 31.56 Gbit/s, the second tester-limited; the old pick named the first.
    #[test]
    fn a_tester_limited_point_that_measured_more_is_picked_as_a_lower_bound() {
        let pts = vec![
            labelled(1, "rate", "2G", PointStatus::Ok, &[1.992e9]),
            labelled(2, "rate", "100G", PointStatus::TesterLimited, &[31.56e9]),
        ];
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!(b.point, 2, "{}", b.sentence);
        assert!(b.tester_limited && !b.all_tester_limited);
        assert_eq!(b.rule, Some(PickRule::HigherFigure));
        assert!(
            b.sentence.starts_with(
                "Best by throughput: point 2 (rate=100G) at least 31.56 Gbit/s; the tester limited this point: use -P."
            ),
            "{}",
            b.sentence
        );
        assert!(
            b.sentence
                .contains("baseline point 1 (rate=2G, 1.992 Gbit/s)"),
            "{}",
            b.sentence
        );
        assert!(
            b.sentence.contains("higher measured figure"),
            "{}",
            b.sentence
        );
        assert!(
            !b.sentence.contains("The tester limited every point"),
            "{}",
            b.sentence
        );
    }

    /// Issue 29: `--vary len=16K,64K,256K` measured 20.9, 23.2 and 36.4 Gbit/s with the
    /// second and third tester-limited; the old pick named the slowest.
    #[test]
    fn the_fastest_of_several_tester_limited_points_is_picked() {
        let pts = vec![
            labelled(1, "len", "16K", PointStatus::Ok, &[20.9e9]),
            labelled(2, "len", "64K", PointStatus::TesterLimited, &[23.2e9]),
            labelled(3, "len", "256K", PointStatus::TesterLimited, &[36.4e9]),
        ];
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!(b.point, 3, "{}", b.sentence);
        assert!(b.tester_limited);
        assert!(
            b.sentence
                .contains("at least 36.40 Gbit/s; the tester limited this point: use -P"),
            "{}",
            b.sentence
        );
        // No point the pick leaves out measured more.
        for p in &pts {
            let m = mean(&p.values_of("throughput_bps")).unwrap();
            assert!(m <= b.mean, "point {} measured {m} above the pick", p.index);
        }
    }

    #[test]
    fn when_every_point_is_tester_limited_the_sweep_says_it_measured_linerate() {
        let pts = vec![
            labelled(1, "len", "16K", PointStatus::TesterLimited, &[20.9e9]),
            labelled(2, "len", "64K", PointStatus::TesterLimited, &[23.2e9]),
        ];
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!(b.point, 2);
        assert!(b.tester_limited && b.all_tester_limited);
        assert!(
            b.sentence.contains("at least 23.20 Gbit/s"),
            "{}",
            b.sentence
        );
        // The baseline is a bound too.
        assert!(
            b.sentence.contains("at least 20.90 Gbit/s"),
            "{}",
            b.sentence
        );
        assert!(
            b.sentence.contains(
                "The tester limited every point: the sweep measured linerate more than the system"
            ),
            "{}",
            b.sentence
        );
        for how in ["-P", "-A", "a faster client host"] {
            assert!(b.sentence.contains(how), "{how}: {}", b.sentence);
        }
    }

    #[test]
    fn a_failed_point_that_measured_more_is_never_picked() {
        let pts = vec![
            labelled(1, "len", "16K", PointStatus::Ok, &[20.9e9]),
            labelled(2, "len", "64K", PointStatus::Failed, &[90e9]),
            labelled(3, "len", "256K", PointStatus::Interrupted, &[80e9]),
        ];
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!(b.point, 1);
        assert_eq!(b.rule, Some(PickRule::OnlyPoint));
        assert!(
            b.sentence.contains("No other point measured it"),
            "{}",
            b.sentence
        );
    }

    #[test]
    fn repeats_within_noise_are_named_indistinguishable() {
        // Means 100.2 and 100.6 Mbit/s with a spread of about 1 Mbit/s: Welch cannot
        // separate them; point 3 is well below both.
        let pts = vec![
            point(1, PointStatus::Ok, &[99e6, 101e6, 100e6, 102e6, 99e6]),
            point(
                2,
                PointStatus::TesterLimited,
                &[101e6, 99.5e6, 101.5e6, 100e6, 101e6],
            ),
            point(3, PointStatus::Ok, &[50e6, 51e6, 49e6, 50e6, 50.5e6]),
        ];
        let b = pick_best(&pts, "throughput_bps", 3).unwrap();
        // The higher mean is picked (nothing beats it), and the words say it is a tie.
        assert_eq!(b.point, 2);
        assert_eq!(b.rule, Some(PickRule::Welch));
        assert_eq!(b.indistinguishable, vec![1]);
        assert_eq!(b.verdict, "significant");
        assert!(
            b.sentence
                .contains("Welch's t-test cannot tell it from point 1 (p >= 0.05): they are indistinguishable"),
            "{}",
            b.sentence
        );
        // Against the baseline point 1 the tie is said once, with its p-value.
        let b = pick_best(&pts, "throughput_bps", 1).unwrap();
        assert_eq!((b.point, b.verdict.as_str()), (2, "not_significant"));
        assert_eq!(b.indistinguishable, vec![1]);
        assert!(
            b.sentence.contains("the points may be equal"),
            "{}",
            b.sentence
        );
        assert!(
            b.sentence
                .contains("separates it from every other point but the baseline"),
            "{}",
            b.sentence
        );
        // Never a point another point beats significantly: the pick is not below any.
        let c = MetricComparison::new(
            "throughput_bps",
            &pts[1].values_of("throughput_bps"),
            &pts[0].values_of("throughput_bps"),
        )
        .unwrap();
        assert!(c.verdict != Verdict::Significant || c.diff < 0.0);
        assert_eq!(listed(&[1, 3, 4]), "points 1, 3 and 4");
    }
}
