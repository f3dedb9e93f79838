//! `linerate report FILE|ID ...`: reads result files or stored runs, builds the HTML page
//! (`export::report`) and writes it, and with `--chart-dir` every chart as SVG and PNG.

use std::path::Path;
use std::process::ExitCode;

use super::compare::stored_id;
use super::write_out;
use crate::cli::report::ReportArgs;
use crate::cli::UsageError;
use crate::export::chart;
use crate::export::report::{build, Input, RunInput};
use crate::model::campaign::CampaignRecord;
use crate::model::sweep::SweepRecord;
use crate::model::{RunRecord, RunSetRecord};
use crate::rfc2544::record::Rfc2544Record;
use crate::store::Store;

/// One input, loaded.
enum Loaded {
    Runs(RunInput),
    Rfc2544(String, String, Rfc2544Record),
    Sweep(String, SweepRecord),
    Campaign(String, CampaignRecord),
}

impl Loaded {
    fn kind(&self) -> String {
        match self {
            Loaded::Runs(i) => i.runs.first().map_or("empty".into(), |t| match &t.rr {
                Some(rr) => rr.kind.netperf_name().to_string(),
                None => "stream".to_string(),
            }),
            Loaded::Rfc2544(..) => "rfc2544".into(),
            Loaded::Sweep(..) => "sweep".into(),
            Loaded::Campaign(..) => "campaign".into(),
        }
    }
    fn file(&self) -> &str {
        match self {
            Loaded::Runs(i) => &i.file,
            Loaded::Rfc2544(_, f, _) | Loaded::Sweep(f, _) | Loaded::Campaign(f, _) => f,
        }
    }
}

fn runs_input(label: &str, file: String, runs: Vec<RunRecord>) -> Loaded {
    Loaded::Runs(RunInput {
        label: label.into(),
        file,
        runs,
        metrics: Vec::new(),
    })
}

fn set_input(label: &str, file: String, set: RunSetRecord) -> Loaded {
    Loaded::Runs(RunInput {
        label: label.into(),
        file,
        runs: set.runs,
        metrics: set.metrics,
    })
}

/// A record of any kind the report takes, from its JSON text: the kind the store names, or
/// (for a file) the first kind it parses as. (Parsed from text, as the other commands do,
/// rather than from a `serde_json::Value`: that shares their code in the binary.)
fn from_json(
    label: &str,
    file: String,
    kind: Option<&str>,
    text: &str,
) -> Result<Loaded, UsageError> {
    let bad = |e: serde_json::Error| {
        UsageError(format!(
            "{file} is not a linerate result ({e}): give the --json output of tcp, udp, rr, rfc2544, sweep or campaign, or a stored run id"
        ))
    };
    match kind {
        Some("run") => Ok(runs_input(
            label,
            file.clone(),
            vec![serde_json::from_str(text).map_err(bad)?],
        )),
        Some("trials") => Ok(set_input(
            label,
            file.clone(),
            serde_json::from_str(text).map_err(bad)?,
        )),
        Some("rfc2544") => Ok(Loaded::Rfc2544(
            label.into(),
            file.clone(),
            serde_json::from_str(text).map_err(bad)?,
        )),
        Some("sweep") => Ok(Loaded::Sweep(
            file.clone(),
            serde_json::from_str(text).map_err(bad)?,
        )),
        Some(other) => Err(UsageError(format!(
            "{file} is a {other} record: report takes tcp, udp, rr, rfc2544 and sweep runs"
        ))),
        None => {
            if let Ok(c) = serde_json::from_str::<CampaignRecord>(text) {
                return Ok(Loaded::Campaign(file, c));
            }
            if let Ok(s) = serde_json::from_str::<SweepRecord>(text) {
                return Ok(Loaded::Sweep(file, s));
            }
            if let Ok(r) = serde_json::from_str::<Rfc2544Record>(text) {
                return Ok(Loaded::Rfc2544(label.into(), file, r));
            }
            if let Ok(s) = serde_json::from_str::<RunSetRecord>(text) {
                return Ok(set_input(label, file, s));
            }
            let rec: RunRecord = serde_json::from_str(text).map_err(bad)?;
            Ok(runs_input(label, file, vec![rec]))
        }
    }
}

fn load_file(path: &Path, label: &str) -> Result<Loaded, UsageError> {
    let file = path.display().to_string();
    let text = crate::sys::files::read_text(path, crate::model::MAX_RESULT_FILE, &file)
        .map_err(UsageError)?;
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&text) {
        return Err(UsageError(format!(
            "{file} is not JSON ({e}): give the --json output of a linerate command"
        )));
    }
    from_json(label, file, None, &text)
}

/// `linerate report`.
pub fn command(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &a.fleet {
        let input = fleet_input(a, name)?;
        return write_report(a, &build(&input));
    }
    let mut store: Option<Store> = None;
    let mut loaded = Vec::new();
    for (i, p) in a.inputs.iter().enumerate() {
        let label = char::from(b'A' + u8::try_from(i % 26).unwrap_or(0)).to_string();
        let l = match stored_id(p) {
            Some(id) => {
                if store.is_none() {
                    let path = match &a.db {
                        Some(p) => p.clone(),
                        None => crate::store::default_path()?,
                    };
                    store = Some(Store::open_existing(&path)?);
                }
                let Some(s) = store.as_ref() else {
                    anyhow::bail!("no results database");
                };
                let Some((kind, v)) = s.record(id)? else {
                    return Err(UsageError(format!(
                        "no run {id} in {}: `linerate history` lists the stored runs",
                        s.path()
                    ))
                    .into());
                };
                from_json(&label, format!("run {id}"), Some(&kind), &v.to_string())?
            }
            None => load_file(p, &label)?,
        };
        loaded.push(l);
    }
    let input = combine(loaded)?;
    write_report(a, &build(&input))
}

/// The fleet run `name` from the database, with every pair's stored record.
#[cfg(feature = "fleet")]
fn fleet_input(a: &ReportArgs, name: &str) -> anyhow::Result<Input> {
    crate::cli::fleet::check_name(name)?;
    let path = match &a.db {
        Some(p) => p.clone(),
        None => crate::store::default_path()?,
    };
    let store = Store::open_existing(&path)?;
    let Some((record, stored)) = crate::fleet::coordinator::stored_record(&store, name)? else {
        return Err(UsageError(format!(
            "no fleet run {name} in {}: `linerate history --tag fleet:NAME` lists a fleet's pairs; check the name and --db",
            store.path()
        ))
        .into());
    };
    let alone: Vec<(i64, String, String)> = stored
        .iter()
        .filter(|s| s.point.phase == "alone")
        .map(|s| (s.id, s.point.source.clone(), s.point.destination.clone()))
        .collect();
    drop(stored);
    // Only the runs the page has a section for are read back, one at a time.
    let detailed = crate::export::report::fleet::detailed_runs(&record, &alone);
    let mut runs = std::collections::BTreeMap::new();
    for &id in &detailed {
        if let Some(("run", text)) = store
            .record_text(id)?
            .as_ref()
            .map(|(k, t)| (k.as_str(), t.as_str()))
        {
            if let Ok(r) = serde_json::from_str::<crate::model::RunRecord>(text) {
                runs.insert(id, r);
            }
        }
    }
    Ok(Input::Fleet(Box::new(
        crate::export::report::fleet::FleetInput {
            source: format!("fleet {name} in {}", store.path()),
            record,
            runs,
            alone,
            detailed,
        },
    )))
}

#[cfg(not(feature = "fleet"))]
fn fleet_input(_: &ReportArgs, _: &str) -> anyhow::Result<Input> {
    Err(
        UsageError("this build has no fleet runs (build linerate with the `fleet` feature)".into())
            .into(),
    )
}

/// Writes the page (and with --chart-dir its charts).
fn write_report(
    a: &ReportArgs,
    report: &crate::export::report::Report,
) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &a.chart_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| UsageError(format!("--chart-dir {}: {e}", dir.display())))?;
        let mut warned = false;
        for c in &report.charts {
            for ext in ["svg", "png"] {
                let path = dir.join(format!("{}.{ext}", c.id));
                for w in chart::write(c, &path)? {
                    if !warned {
                        eprintln!("linerate: warning: {w}");
                        warned = true;
                    }
                }
            }
        }
    }
    match &a.output {
        Some(path) => std::fs::write(path, report.html.as_bytes())
            .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?,
        None => write_out(&report.html)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The inputs as one report: all of one kind; one sweep or campaign at a time.
fn combine(loaded: Vec<Loaded>) -> Result<Input, UsageError> {
    let Some(first) = loaded.first() else {
        return Err(UsageError(
            "nothing to report: give a result file or a stored run id".into(),
        ));
    };
    for other in &loaded[1..] {
        if other.kind() != first.kind() {
            return Err(UsageError(format!(
                "{} ({}) and {} ({}) are different kinds of test: report like with like",
                first.file(),
                first.kind(),
                other.file(),
                other.kind()
            )));
        }
    }
    if loaded.len() > 1 && matches!(first, Loaded::Sweep(..) | Loaded::Campaign(..)) {
        return Err(UsageError(
            "report takes one sweep or campaign at a time: run it once per file".into(),
        ));
    }
    if let Loaded::Runs(i) = first {
        if i.runs.is_empty() {
            return Err(UsageError(format!("{} holds no runs", i.file)));
        }
    }
    let mut runs = Vec::new();
    let mut rfc = Vec::new();
    for l in loaded {
        match l {
            Loaded::Runs(i) => runs.push(i),
            Loaded::Rfc2544(l, f, r) => rfc.push((l, f, r)),
            Loaded::Sweep(f, s) => return Ok(Input::Sweep(f, s)),
            Loaded::Campaign(f, c) => return Ok(Input::Campaign(f, c)),
        }
    }
    Ok(if rfc.is_empty() {
        Input::Runs(runs)
    } else {
        Input::Rfc2544(rfc)
    })
}
