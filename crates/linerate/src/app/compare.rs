//! `linerate compare A.json B.json [more]`: reads the result files (stream and RR runs,
//! repeated runs, RFC 2544 runs), compares every one with the first (`model::compare`) and
//! prints the table (`export::compare`) or JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::write_out;
use crate::cli::compare::CompareArgs;
use crate::cli::UsageError;
use crate::export;
use crate::model::compare::{compare, compare_figures, FigureInput, Input};
use crate::model::{RunRecord, RunSetRecord};
use crate::rfc2544::record::Rfc2544Record;
#[cfg(feature = "store")]
use crate::store::Store;
/// A build without the results database (the board's core) opens none: a stored run id is
/// refused.
#[cfg(not(feature = "store"))]
type Store = std::convert::Infallible;

/// One file: stream or RR runs, or an RFC 2544 run.
enum Loaded {
    Runs(Input),
    Rfc2544(FigureInput),
}

impl Loaded {
    fn file(&self) -> &str {
        match self {
            Loaded::Runs(i) => &i.file,
            Loaded::Rfc2544(i) => &i.file,
        }
    }

    /// What kind of test, for "compare like with like".
    fn kind(&self) -> String {
        match self {
            Loaded::Runs(i) => i.runs.first().map_or("empty".into(), |t| match &t.rr {
                Some(rr) => rr.kind.netperf_name().to_string(),
                None => "stream".to_string(),
            }),
            Loaded::Rfc2544(_) => "rfc2544".to_string(),
        }
    }
}

/// `linerate compare`.
pub fn command(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let mut store: Option<Store> = None;
    let loaded: Vec<Loaded> = a
        .files
        .iter()
        .enumerate()
        .map(|(i, p): (usize, &PathBuf)| {
            let label = char::from(b'A' + u8::try_from(i % 26).unwrap_or(0)).to_string();
            match stored_id(p) {
                Some(id) => load_stored(a, &mut store, id, &label).map(Loaded::Runs),
                None => load_any(p, &label).map_err(anyhow::Error::from),
            }
        })
        .collect::<Result<_, _>>()?;
    if let Some(Loaded::Runs(i)) = loaded.first() {
        if i.runs.is_empty() {
            return Err(UsageError(format!("{} holds no runs", i.file)).into());
        }
    }
    if let Some(first) = loaded.first() {
        for other in &loaded[1..] {
            if other.kind() != first.kind() {
                return Err(UsageError(format!(
                    "{} ({}) and {} ({}) are different kinds of test: compare like with like",
                    first.file(),
                    first.kind(),
                    other.file(),
                    other.kind()
                ))
                .into());
            }
        }
    }
    let nothing = || UsageError("nothing to compare".into());
    let text = if loaded.iter().all(|l| matches!(l, Loaded::Runs(_))) {
        let inputs: Vec<Input> = loaded
            .into_iter()
            .filter_map(|l| match l {
                Loaded::Runs(i) => Some(i),
                Loaded::Rfc2544(_) => None,
            })
            .collect();
        let report = compare(&inputs).ok_or_else(nothing)?;
        if a.json {
            linerate_wire::json::to_string_pretty(&report)? + "\n"
        } else {
            let counts: Vec<(String, String, usize)> = inputs
                .iter()
                .map(|i| (i.label.clone(), i.file.clone(), i.runs.len()))
                .collect();
            export::compare::render(&report, &counts)
        }
    } else {
        let inputs: Vec<FigureInput> = loaded
            .into_iter()
            .filter_map(|l| match l {
                Loaded::Rfc2544(i) => Some(i),
                Loaded::Runs(_) => None,
            })
            .collect();
        let report =
            compare_figures(&inputs, crate::rfc2544::compare::sentence).ok_or_else(nothing)?;
        if a.json {
            linerate_wire::json::to_string_pretty(&report)? + "\n"
        } else {
            let counts: Vec<(String, String, usize)> = inputs
                .iter()
                .map(|i| (i.label.clone(), i.file.clone(), i.runs.len()))
                .collect();
            export::compare::render(&report, &counts)
        }
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A stored run id: a number (or `#N`) that is not the name of a file.
pub(super) fn stored_id(p: &Path) -> Option<i64> {
    if p.exists() {
        return None;
    }
    let s = p.to_str()?;
    let digits = s.strip_prefix('#').unwrap_or(s);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// A stored run id in a build without the results database: refused.
#[cfg(not(feature = "store"))]
fn load_stored(_: &CompareArgs, _: &mut Option<Store>, id: i64, _: &str) -> anyhow::Result<Input> {
    Err(crate::cli::not_in_this_build(&format!("a stored run id ({id})"), "store").into())
}

/// A stored run (single or repeated) from the results database.
#[cfg(feature = "store")]
fn load_stored(
    a: &CompareArgs,
    store: &mut Option<Store>,
    id: i64,
    label: &str,
) -> anyhow::Result<Input> {
    if store.is_none() {
        let path = match &a.db {
            Some(p) => p.clone(),
            None => crate::store::default_path()?,
        };
        *store = Some(Store::open_existing(&path)?);
    }
    let Some(s) = store.as_ref() else {
        anyhow::bail!("no results database");
    };
    let file = format!("run {id}");
    let Some((kind, v)) = s.record(id)? else {
        return Err(UsageError(format!(
            "no run {id} in {}: `linerate history` lists the stored runs",
            s.path()
        ))
        .into());
    };
    let runs = match kind.as_str() {
        "run" => vec![linerate_wire::json::from_value::<RunRecord>(&v)?],
        "trials" => linerate_wire::json::from_value::<RunSetRecord>(&v)?.runs,
        other => {
            return Err(UsageError(format!(
            "run {id} is a {other} record: compare takes tcp, udp and rr runs (single or repeated)"
        ))
            .into())
        }
    };
    Ok(Input {
        label: label.into(),
        file,
        runs,
    })
}

/// Reads a result file of any kind `compare` takes.
fn load_any(path: &Path, label: &str) -> Result<Loaded, UsageError> {
    let file = path.display().to_string();
    let text = crate::sys::files::read_text(path, crate::model::MAX_RESULT_FILE, &file)
        .map_err(UsageError)?;
    if let Ok(rec) = serde_json::from_str::<Rfc2544Record>(&text) {
        return Ok(Loaded::Rfc2544(FigureInput {
            label: label.into(),
            file,
            runs: vec![crate::rfc2544::compare::figures(&rec)],
        }));
    }
    parse_runs(&text, file, label).map(Loaded::Runs)
}

/// A repeated run or a single run, from the text of a result file.
fn parse_runs(text: &str, file: String, label: &str) -> Result<Input, UsageError> {
    if let Ok(set) = serde_json::from_str::<RunSetRecord>(text) {
        return Ok(Input {
            label: label.into(),
            file,
            runs: set.runs,
        });
    }
    match serde_json::from_str::<RunRecord>(text) {
        Ok(rec) => Ok(Input { label: label.into(), file, runs: vec![rec] }),
        Err(e) => Err(UsageError(format!(
            "{file} is not a linerate result ({e}): give the --json output of tcp, udp, rr or rfc2544, or of a repeated run"
        ))),
    }
}
