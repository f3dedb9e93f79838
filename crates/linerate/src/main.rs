//! The `linerate` binary: parse, run, print one error line, exit with a documented code.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match linerate::cli::args::Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("linerate: error: {}", linerate::cli::parse_error_line(&e));
            return ExitCode::from(2);
        }
    };
    match linerate::app::run(args) {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`linerate ... | head`) is not an error.
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("linerate: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
