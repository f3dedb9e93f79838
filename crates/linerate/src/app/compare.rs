//! `linerate compare A.json B.json [more]`: reads the result files, compares every one with
//! the first (`model::compare`) and prints the table (`export::compare`) or JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::write_out;
use crate::cli::compare::CompareArgs;
use crate::cli::UsageError;
use crate::export;
use crate::model::compare::{compare, Input};
use crate::model::{RunRecord, RunSetRecord};

/// `linerate compare`.
pub fn command(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let inputs: Vec<Input> = a
        .files
        .iter()
        .enumerate()
        .map(|(i, p): (usize, &PathBuf)| {
            let label = char::from(b'A' + u8::try_from(i % 26).unwrap_or(0)).to_string();
            load(p, &label)
        })
        .collect::<Result<_, _>>()?;
    let kind = |i: &Input| i.runs.first().map(|t| t.rr.as_ref().map(|r| r.kind));
    if let Some(first) = inputs.first() {
        if first.runs.is_empty() {
            return Err(UsageError(format!("{} holds no runs", first.file)).into());
        }
        for other in &inputs[1..] {
            if kind(other) != kind(first) {
                return Err(UsageError(format!(
                    "{} and {} are different kinds of test (stream vs request/response, or TCP_RR vs UDP_RR): compare like with like",
                    first.file, other.file
                ))
                .into());
            }
        }
    }
    let report = compare(&inputs).ok_or_else(|| UsageError("nothing to compare".into()))?;
    let text = if a.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        export::compare::render(&report, &inputs)
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads a result file: a repeated run or a single run.
pub fn load(path: &Path, label: &str) -> Result<Input, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let file = path.display().to_string();
    if let Ok(set) = serde_json::from_str::<RunSetRecord>(&text) {
        return Ok(Input {
            label: label.into(),
            file,
            runs: set.runs,
        });
    }
    match serde_json::from_str::<RunRecord>(&text) {
        Ok(rec) => Ok(Input { label: label.into(), file, runs: vec![rec] }),
        Err(e) => Err(UsageError(format!(
            "{file} is not a linerate result ({e}): give the --json output of tcp, udp or rr, or of a repeated run"
        ))),
    }
}
