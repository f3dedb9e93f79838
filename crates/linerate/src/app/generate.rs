//! `linerate generate`: the man pages (clap_mangen) and shell completions (clap_complete) of
//! every visible command, from the clap definitions `--help` prints (the hidden `schema` and
//! `generate` have none).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use super::write_out;
use crate::cli::args::Args;
use crate::cli::generate::{Generate, GenerateArgs};

/// Runs `linerate generate`.
pub fn command(a: &GenerateArgs) -> anyhow::Result<ExitCode> {
    match &a.what {
        Generate::Man { dir } => {
            for page in man_pages(dir)? {
                eprintln!("{}", page.display());
            }
        }
        Generate::Completions { shell } => write_out(&completions(*shell))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The command tree as the man pages and completions see it: no `help` subcommand
/// (`--help` is every command's flag), names as the binary's.
fn command_tree() -> clap::Command {
    let mut cmd = Args::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// Writes one page per visible command (`linerate-lab-up.1` for `linerate lab up`) into
/// `dir` and returns their paths.
pub fn man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut pages = Vec::new();
    for cmd in visible_commands(&command_tree()) {
        // Every page's footer names linerate and its version (a subcommand has no version
        // of its own).
        let man = clap_mangen::Man::new(cmd.clone())
            .source(format!("linerate {}", env!("CARGO_PKG_VERSION")));
        let path = man
            .generate_to(dir)
            .with_context(|| format!("cannot write a man page in {}", dir.display()))?;
        pages.push(path);
    }
    Ok(pages)
}

/// The command and every visible subcommand under it, depth first, parents before children.
fn visible_commands(cmd: &clap::Command) -> Vec<&clap::Command> {
    let mut all = vec![cmd];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        all.extend(visible_commands(sub));
    }
    all
}

/// The completion script of `shell`.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut cmd = command_tree();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "linerate", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's roff as text to search: `\-` is roff's hyphen-minus.
    fn page_text(cmd: &clap::Command) -> String {
        let mut roff = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .render(&mut roff)
            .expect("render");
        String::from_utf8_lossy(&roff).replace("\\-", "-")
    }

    #[test]
    fn every_visible_command_and_flag_is_in_its_page() {
        let tree = command_tree();
        let cmds = visible_commands(&tree);
        assert!(cmds.len() > 15, "{} commands", cmds.len());
        for cmd in cmds {
            let name = cmd.get_display_name().unwrap_or(cmd.get_name());
            let text = page_text(cmd);
            assert!(text.contains(&format!(".TH {name} 1")), "{name}: {text}");
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                let mut names: Vec<String> = arg
                    .get_long()
                    .map(|l| format!("--{l}"))
                    .into_iter()
                    .collect();
                names.extend(arg.get_short().map(|s| format!("-{s}")));
                if names.is_empty() {
                    // A positional argument: its value name, as --help shows it.
                    let value = arg.get_value_names().and_then(|v| v.first());
                    names.push(
                        value.map_or_else(
                            || arg.get_id().as_str().to_uppercase(),
                            |v| v.to_string(),
                        ),
                    );
                }
                for n in names {
                    assert!(text.contains(&n), "{name}'s page lacks {n}");
                }
            }
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let page = format!("{}(1)", sub.get_display_name().unwrap_or(sub.get_name()));
                assert!(text.contains(&page), "{name}'s page lacks {page}");
            }
        }
    }

    #[test]
    fn hidden_commands_get_no_page_and_completions_name_every_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pages = man_pages(dir.path()).expect("pages");
        let names: Vec<String> = pages
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        assert!(names.contains(&"linerate.1".to_string()), "{names:?}");
        let tcp = std::fs::read_to_string(dir.path().join("linerate-tcp.1")).expect("page");
        let version = format!("linerate {}", env!("CARGO_PKG_VERSION"));
        assert!(tcp.contains(&version), "{tcp}");
        assert!(names.contains(&"linerate-tcp.1".to_string()), "{names:?}");
        assert!(
            !names
                .iter()
                .any(|n| n.contains("generate") || n.contains("schema")),
            "{names:?}"
        );
        let bash = completions(clap_complete::Shell::Bash);
        for cmd in command_tree()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
        {
            assert!(
                bash.contains(cmd.get_name()),
                "bash completion lacks {}",
                cmd.get_name()
            );
        }
    }
}
