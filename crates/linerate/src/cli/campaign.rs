//! `linerate campaign FILE`: a TOML file that describes sweeps reproducibly (tests, matrix,
//! client commands, repeats, the best-pick rule, and where each sweep's best goes in a
//! best-case table). Each sweep is turned into the command line of `linerate sweep` and
//! validated by it, so a campaign means exactly what the same sweeps typed by hand mean.

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::Deserialize;

use super::common::{parse_one, StoreArgs};
use super::sweep::{points_of, sweep_plan, SweepArgs, SweepPlan};
use super::UsageError;
use crate::model::sweep::MAX_POINTS;

/// `linerate campaign` arguments.
#[derive(Debug, ClapArgs)]
pub struct CampaignArgs {
    /// The campaign (TOML; see examples/).
    pub file: PathBuf,
    /// The server, instead of the file's `host`.
    #[arg(long)]
    pub host: Option<String>,
    /// The server's port, instead of the file's `port`.
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Where each sweep's journal goes (one file per sweep); default NAME.journal/ in the
    /// current directory, NAME being the campaign's name.
    #[arg(long, value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
    /// Continue an interrupted campaign: points already in the journals are not run again.
    #[arg(long)]
    pub resume: bool,
    /// Only check the file and print the sweeps' command lines; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON record (schema: docs/json-schema/campaign-v1.json).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A campaign file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFile {
    /// Its name (journal directory, stored tags).
    pub name: String,
    /// What it measures, for people.
    #[serde(default)]
    pub description: Option<String>,
    /// The server.
    #[serde(default)]
    pub host: Option<String>,
    /// The server's port.
    #[serde(default)]
    pub port: Option<u16>,
    /// Runs per point (`--repeat`).
    #[serde(default)]
    pub repeat: Option<u32>,
    /// `--confidence LEVEL,WIDTH` per point instead of a fixed repeat.
    #[serde(default)]
    pub confidence: Option<String>,
    /// The best-pick metric (`--best`).
    #[serde(default)]
    pub best: Option<String>,
    /// `--cmd-timeout`.
    #[serde(default)]
    pub cmd_timeout: Option<String>,
    /// `--vary` entries every sweep gets (`"rx_frames=1,2,4"`), outermost first.
    #[serde(default)]
    pub vary: Vec<String>,
    /// `--hook` requests every sweep makes first (`"mtu mtu={mtu}"`).
    #[serde(default)]
    pub hook: Vec<String>,
    /// `--client-cmd` templates every sweep runs first.
    #[serde(default)]
    pub client_cmd: Vec<String>,
    /// `--client-restore` commands every sweep runs at its end.
    #[serde(default)]
    pub client_restore: Vec<String>,
    /// The best-case table.
    #[serde(default)]
    pub table: Option<TableSpec>,
    /// The sweeps, run in order.
    pub sweep: Vec<SweepEntry>,
}

/// Where sweeps' bests go in the best-case table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Its title.
    pub title: String,
    /// The name of the row labels' dimension (e.g. "MTU").
    #[serde(default)]
    pub rows: Option<String>,
}

/// One sweep of a campaign.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepEntry {
    /// Its name.
    pub name: String,
    /// The test and its options, without the host: `["tcp", "-R", "-l", "64K"]`.
    pub test: Vec<String>,
    /// Its row in the best-case table.
    #[serde(default)]
    pub row: Option<String>,
    /// Its column in the best-case table.
    #[serde(default)]
    pub column: Option<String>,
    /// More `--vary` entries, after the campaign's.
    #[serde(default)]
    pub vary: Vec<String>,
    /// More `--hook` requests, after the campaign's.
    #[serde(default)]
    pub hook: Vec<String>,
    /// More `--client-cmd` templates, after the campaign's.
    #[serde(default)]
    pub client_cmd: Vec<String>,
    /// More `--client-restore` commands, after the campaign's.
    #[serde(default)]
    pub client_restore: Vec<String>,
    /// `--best` for this sweep.
    #[serde(default)]
    pub best: Option<String>,
    /// `--baseline` for this sweep.
    #[serde(default)]
    pub baseline: Option<u32>,
}

/// A campaign ready to run.
#[derive(Debug)]
pub struct CampaignPlan {
    /// The file as read.
    pub file: CampaignFile,
    /// Where it was read from.
    pub path: String,
    /// Each sweep: its arguments (with its journal) and its validated plan.
    pub sweeps: Vec<(SweepArgs, SweepPlan)>,
}

/// Largest campaign file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads the file and turns each sweep into `linerate sweep` arguments, validated.
pub fn campaign_plan(a: &CampaignArgs) -> Result<CampaignPlan, UsageError> {
    a.store.validate()?;
    let shown = a.file.display().to_string();
    let text = crate::sys::files::read_text(&a.file, MAX_FILE_BYTES, &shown).map_err(UsageError)?;
    let file: CampaignFile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        UsageError(match line {
            Some(l) => format!("{shown} line {l}: {msg}"),
            None => format!("{shown}: {msg}"),
        })
    })?;
    if file.sweep.is_empty() {
        return Err(UsageError(format!(
            "{shown}: no [[sweep]]: a campaign runs at least one"
        )));
    }
    if file.name.is_empty()
        || !file
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(UsageError(format!(
            "{shown}: name '{}': use letters, digits, - _ . (it names the journal directory)",
            file.name
        )));
    }
    let host = a
        .host
        .clone()
        .or_else(|| file.host.clone())
        .ok_or_else(|| {
            UsageError(format!(
                "{shown} names no host: add host = \"...\" or give --host"
            ))
        })?;
    let port = a.port.or(file.port);
    let dir = a
        .journal_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.journal", file.name)));
    // Every sweep's arguments, and the campaign's points counted before any sweep's
    // matrix is built.
    let mut parsed_sweeps = Vec::new();
    let mut total = 0u64;
    for (i, s) in file.sweep.iter().enumerate() {
        let journal = dir.join(format!("{:02}.jsonl", i + 1));
        let argv = sweep_argv(a, &file, s, &host, port, &journal);
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let args = parse_one::<SweepArgs>("sweep", &words).map_err(|e| {
            UsageError(format!(
                "{shown}, sweep '{}': {}",
                s.name,
                e.to_string()
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid")
                    .trim_start_matches("error: ")
            ))
        })?;
        let n = points_of(&args)
            .map_err(|e| UsageError(format!("{shown}, sweep '{}': {}", s.name, e.0)))?;
        total = total.saturating_add(n);
        if total > MAX_POINTS as u64 {
            return Err(UsageError(format!(
                "{shown}: its sweeps up to '{}' ({} of {}) have {total} points, more than the {MAX_POINTS} a campaign may run: split it into several campaign files or vary fewer values",
                s.name,
                i + 1,
                file.sweep.len()
            )));
        }
        parsed_sweeps.push(args);
    }
    let mut sweeps = Vec::new();
    for (s, args) in file.sweep.iter().zip(parsed_sweeps) {
        let plan = sweep_plan(&args)
            .map_err(|e| UsageError(format!("{shown}, sweep '{}': {}", s.name, e.0)))?;
        sweeps.push((args, plan));
    }
    Ok(CampaignPlan {
        file,
        path: shown,
        sweeps,
    })
}

/// The `linerate sweep` command line of one sweep of the campaign.
pub fn sweep_argv(
    a: &CampaignArgs,
    file: &CampaignFile,
    s: &SweepEntry,
    host: &str,
    port: Option<u16>,
    journal: &Path,
) -> Vec<String> {
    let mut v: Vec<String> = vec!["linerate".into(), "sweep".into()];
    let mut pair = |flag: &str, val: &str| {
        v.push(flag.into());
        v.push(val.into());
    };
    for x in file.vary.iter().chain(&s.vary) {
        pair("--vary", x);
    }
    for x in file.hook.iter().chain(&s.hook) {
        pair("--hook", x);
    }
    for x in file.client_cmd.iter().chain(&s.client_cmd) {
        pair("--client-cmd", x);
    }
    for x in file.client_restore.iter().chain(&s.client_restore) {
        pair("--client-restore", x);
    }
    if let Some(r) = file.repeat {
        pair("--repeat", &r.to_string());
    }
    if let Some(c) = &file.confidence {
        pair("--confidence", c);
    }
    if let Some(b) = s.best.as_ref().or(file.best.as_ref()) {
        pair("--best", b);
    }
    if let Some(b) = s.baseline {
        pair("--baseline", &b.to_string());
    }
    if let Some(t) = &file.cmd_timeout {
        pair("--cmd-timeout", t);
    }
    pair("--journal", &journal.display().to_string());
    if let Some(db) = &a.store.db {
        pair("--db", &db.display().to_string());
    }
    pair("--tag", &format!("campaign:{}", file.name));
    for t in &a.store.tags {
        pair("--tag", t);
    }
    if a.store.no_store {
        v.push("--no-store".into());
    }
    if a.resume && journal.metadata().is_ok_and(|m| m.len() > 0) {
        v.push("--resume".into());
    }
    v.push("--".into());
    let mut test = s.test.iter();
    if let Some(t) = test.next() {
        v.push(t.clone());
    }
    v.push(host.to_string());
    if let Some(p) = port {
        v.push("-p".into());
        v.push(p.to_string());
    }
    v.extend(test.cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(file: &Path) -> CampaignArgs {
        CampaignArgs {
            file: file.to_path_buf(),
            host: Some("192.0.2.1".into()),
            port: None,
            journal_dir: None,
            resume: false,
            dry_run: true,
            json: false,
            store: StoreArgs::default(),
        }
    }

    /// The shipped examples are valid campaigns.
    #[test]
    fn the_examples_are_valid() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let hooks_file = p.to_string_lossy().ends_with("-hooks.toml");
            if p.extension().is_some_and(|x| x == "toml") && !hooks_file {
                let plan =
                    campaign_plan(&args(&p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                assert!(!plan.sweeps.is_empty());
                n += 1;
            }
        }
        assert!(n >= 2, "examples/*.toml");
        let seed = campaign_plan(&args(&dir.join("xapp1127-temac.toml"))).unwrap();
        // TCP and UDP, transmit and receive, MTU 1500 and 9000.
        assert_eq!(seed.sweeps.len(), 8);
        let first = &seed.sweeps[0].1;
        assert_eq!(first.points.len(), 9, "nine coalescing values");
        assert_eq!(first.points[8].hooks[1].0, "coalesce_rx");
        assert_eq!(first.points[8].hooks[1].1["rx_frames"], "255");
    }

    #[test]
    fn bad_files_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        let e = |text: &str| {
            std::fs::write(&p, text).unwrap();
            campaign_plan(&args(&p))
                .err()
                .map(|e| e.0)
                .unwrap_or_default()
        };
        assert!(
            e("name = \"x\"\n[[sweep]]\nname = \"a\"\ntest = [\"tcp\"]\nfrob = 1\n")
                .contains("line")
        );
        assert!(e("name = \"x\"\nsweep = []\n").contains("no [[sweep]]"));
        assert!(
            e("name = \"x\"\nvary = [\"len=0\"]\n[[sweep]]\nname = \"a\"\ntest = [\"tcp\"]\n")
                .contains("sweep 'a'")
        );
        assert!(
            e("name = \"a b\"\n[[sweep]]\nname = \"a\"\ntest = [\"tcp\"]\n").contains("name 'a b'")
        );
        // Counted before anything is built: one sweep of a million points, or many sweeps
        // that together pass the limit.
        let big = e("name = \"x\"\n[[sweep]]\nname = \"a\"\ntest = [\"tcp\"]\nvary = [\"len=1..1000\", \"window=1..1000\"]\n");
        assert!(
            big.contains("sweep 'a': --vary: len 1000 × window 1000 values make 1000000 points"),
            "{big}"
        );
        let sweep = "[[sweep]]\nname = \"s\"\ntest = [\"tcp\"]\nvary = [\"len=1..5000\"]\n";
        let many = e(&format!("name = \"x\"\n{}", sweep.repeat(3)));
        assert!(
            many.contains("up to 's' (3 of 3) have 15000 points"),
            "{many}"
        );
        assert!(many.contains("split it"), "{many}");
    }
}
