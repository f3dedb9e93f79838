//! `linerate generate` (hidden): every command `--help` lists has a man page, and every
//! flag and subcommand its `--help` shows is in that page as `man` renders it (the roff
//! itself where man-db is not installed); the completion scripts are valid shell.

use std::path::Path;
use std::process::Command;

use crate::common::{bin, run_ok};

/// What one `--help` shows: its subcommands (less `help`) and the flags and arguments of
/// its option lines (`  -p, --port <PORT>  ...` gives `-p` and `--port`; `  <HOST>` gives
/// `HOST`).
fn help_of(path: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut args = path.to_vec();
    args.push("--help");
    let help = run_ok(&args);
    let (mut subs, mut flags) = (Vec::new(), Vec::new());
    let mut in_commands = false;
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_commands = line.trim_end() == "Commands:";
            continue;
        }
        // An entry is indented by two; its wrapped description by more.
        let Some(entry) = line.strip_prefix("  ").filter(|e| !e.starts_with(' ')) else {
            continue;
        };
        let head = entry.split("  ").next().unwrap_or_default();
        if in_commands {
            let name = head.split_whitespace().next().unwrap_or_default();
            if name != "help" {
                subs.push(name.to_string());
            }
        } else if head.starts_with('-') {
            flags.extend(
                head.split([',', ' '])
                    .filter(|t| t.starts_with('-'))
                    .map(|t| t.split('=').next().unwrap_or(t).to_string()),
            );
        } else if head.starts_with(['<', '[']) {
            // `<FILE|ID> <FILE|ID>...`: the first one's name.
            let first = head.split_whitespace().next().unwrap_or_default();
            flags.push(first.trim_matches(['<', '>', '[', ']', '.']).to_string());
        }
    }
    (subs, flags)
}

/// A page as text: `man -l` where man-db is installed, else its roff with `\-` as `-`.
fn page_text(page: &Path) -> String {
    let man = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("LC_ALL", "C")
        .env("MANWIDTH", "300")
        .env_remove("MAN_KEEP_FORMATTING")
        .output();
    match man {
        Ok(out) => {
            assert!(
                out.status.success(),
                "man -l {}: {}",
                page.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // Bold and underline as overstrikes (backspace) when a terminal's formatting was kept.
            strip_overstrike(&text)
        }
        Err(_) => std::fs::read_to_string(page).unwrap().replace("\\-", "-"),
    }
}

fn strip_overstrike(s: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in s.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.into_iter().collect()
}

/// `word` in `text` with no letter, digit or `-` right before or after it.
fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back().is_none_or(|c| !part(c));
        let after = text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !part(c));
        before && after
    })
}

#[test]
fn every_command_and_flag_of_help_is_in_its_man_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["generate", "man"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_dir(dir.path()).unwrap().count();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut pages = 0;
    while let Some(path) = todo.pop() {
        let argv: Vec<&str> = path.iter().map(String::as_str).collect();
        let (subs, flags) = help_of(&argv);
        let name = std::iter::once("linerate")
            .chain(argv.iter().copied())
            .collect::<Vec<_>>()
            .join("-");
        let page = dir.path().join(format!("{name}.1"));
        assert!(
            page.exists(),
            "no man page {} for `linerate {}`",
            page.display(),
            argv.join(" ")
        );
        pages += 1;
        let text = page_text(&page);
        assert!(!flags.is_empty(), "{name}: no flags parsed from --help");
        for f in &flags {
            assert!(
                has_word(&text, f),
                "{name}(1) lacks {f}, which --help shows:\n{text}"
            );
        }
        for s in subs {
            // Listed as the subcommand's own page: linerate-tcp(1).
            let sub_page = format!("{name}-{s}(1)");
            assert!(
                text.contains(&sub_page),
                "{name}(1) lacks its subcommand {sub_page}"
            );
            let mut p = path.clone();
            p.push(s);
            todo.push(p);
        }
    }
    assert_eq!(pages, written, "pages written against commands in --help");
    assert!(pages > 20, "only {pages} commands");
}

#[test]
fn completion_scripts_name_every_command_and_parse() {
    let (subs, _) = help_of(&[]);
    for shell in ["bash", "zsh", "fish"] {
        let script = run_ok(&["generate", "completions", shell]);
        for s in &subs {
            assert!(
                script.contains(s.as_str()),
                "{shell}'s completion lacks {s}"
            );
        }
        // The shell's own syntax check where it is installed (bash always is here).
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &script).unwrap();
        match Command::new(shell).arg("-n").arg(file.path()).output() {
            Ok(out) => assert!(
                out.status.success(),
                "{shell} -n: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) => assert_ne!(shell, "bash", "bash is missing"),
        }
    }
    let err = bin()
        .args(["generate", "completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
}
