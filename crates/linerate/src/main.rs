//! The `linerate` binary: parse, run, print one error line, exit with a documented code.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match linerate::cli::args::Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
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
