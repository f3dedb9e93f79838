//! The command line: [`args`] holds the subcommands, and `cli/COMMAND.rs` each command's
//! arguments with their validation into a plan (every cross-flag check), so engines and
//! sessions never see raw arguments. [`units`] parses sizes, rates and durations.

pub mod analyze;
pub mod args;
#[cfg(feature = "sweep")]
pub mod campaign;
#[cfg(feature = "store")]
pub mod check;
pub mod common;
pub mod compare;
pub mod demo;
pub mod doctor;
#[cfg(feature = "fleet")]
pub mod fleet;
#[cfg(feature = "generate")]
pub mod generate;
#[cfg(feature = "store")]
pub mod history;
#[cfg(feature = "lab")]
pub mod lab;
pub mod multicast;
pub mod order;
pub mod output;
pub mod repeat;
#[cfg(feature = "report")]
pub mod report;
pub mod rfc2544;
pub mod rr;
#[cfg(feature = "schema")]
pub mod schema;
pub mod serve;
pub mod stream;
#[cfg(feature = "sweep")]
pub mod sweep;
pub mod units;

/// A usage error: one line that says how to fix it (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The refusal of a workstation tool's flag in a build without the tool (the board's core):
/// one line that names the flag, the feature it needs and the build that has it.
pub fn not_in_this_build(flag: &str, feature: &str) -> UsageError {
    UsageError(format!(
        "{flag} needs linerate's `{feature}` feature, which this build (the board's core) leaves out: use a full build (`cargo build -p linerate`, default features)"
    ))
}

/// The refusal of what is Linux by nature (`--capture`, `--profile`, `lab`...) on another
/// OS: one line that names it, exit code 2, before any traffic. `Ok` on Linux.
pub fn linux_only(what: &str) -> Result<(), UsageError> {
    match crate::sys::system::needs_linux(what) {
        Some(why) => Err(UsageError(why)),
        None => Ok(()),
    }
}

/// A command-line error from the parser as one line (without the `linerate: error:`
/// prefix the binary adds): clap's message, the lines that continue it (missing arguments,
/// tips) joined in, and where to look (`linerate CMD --help`).
pub fn parse_error_line(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    let help = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(command_of)
        .unwrap_or_else(|| "linerate".to_string());
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return format!("a command is needed: see `{help} --help`");
    }
    let mut lines = text.lines().map(str::trim);
    let first = lines.next().unwrap_or_default();
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let (mut more, mut tips) = (Vec::new(), Vec::new());
    for l in
        lines.take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
    {
        match l.strip_prefix("tip: ") {
            Some(t) => tips.push(t),
            None if !l.is_empty() => more.push(l),
            None => {}
        }
    }
    if !more.is_empty() {
        msg.push_str(if msg.ends_with(':') { " " } else { ": " });
        msg.push_str(&more.join(", "));
    }
    for t in tips {
        msg.push_str(&format!(" ({t})"));
    }
    let msg = linerate_wire::text::escape(&msg).into_owned();
    format!("{msg}; see `{help} --help`")
}

/// The command of a usage line: `linerate tcp [OPTIONS] <HOST>` -> `linerate tcp`.
fn command_of(usage: &str) -> String {
    usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::parse_error_line;
    use crate::cli::args::Args;
    use clap::Parser;

    fn line(argv: &[&str]) -> String {
        let e = Args::try_parse_from(argv).expect_err("a parse error");
        parse_error_line(&e)
    }

    #[test]
    fn parser_errors_are_one_line_that_says_where_to_look() {
        for argv in [
            &["linerate"][..],
            &["linerate", "frobnicate"],
            &["linerate", "tcp"],
            &["linerate", "tcp", "h", "--frobnicate"],
            &["linerate", "tcp", "h", "-l", "12Q"],
            &["linerate", "tcp", "h", "-t", "1", "-n", "1M"],
            &["linerate", "serve", "--max-streams", "40000"],
            &["linerate", "lab"],
        ] {
            let l = line(argv);
            assert!(!l.contains('\n') && !l.is_empty(), "{argv:?}: {l}");
            assert!(l.contains("--help`"), "{argv:?}: {l}");
            assert!(!l.starts_with("error:"), "{argv:?}: {l}");
        }
        let l = line(&["linerate", "tcp"]);
        assert!(
            l.contains("<HOST>") && l.contains("`linerate tcp --help`"),
            "{l}"
        );
        let l = line(&["linerate", "tcp", "h", "--paralel", "2"]);
        // clap's suggestions are the workstation's (the board's core leaves them out).
        if cfg!(feature = "workstation") {
            assert!(l.contains("--parallel"), "the tip is kept: {l}");
        } else {
            assert!(l.contains("'--paralel'"), "{l}");
        }
        let l = line(&["linerate"]);
        assert!(l.ends_with("see `linerate --help`"), "{l}");
    }
}
