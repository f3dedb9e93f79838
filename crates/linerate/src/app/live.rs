//! One client test with live output, shared by `linerate tcp|udp` and `linerate rr`: the
//! Ctrl-C flag, interval lines or JSON-stream events as they arrive, then the record in the
//! chosen format (warnings on stderr where the format has no place for them).

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use linerate_wire::control::Transport;
use linerate_wire::report::{IntervalReport, Role};

use super::{signal_flag, write_out};
use crate::export::{self, Format};
use crate::model::{PlanRecord, RunRecord, StreamEvent};
use crate::session::client::{self, Observer, StreamPlan};

/// The interval lines of a table: stream tests show both ends, RR tests the client's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lines {
    Stream(Transport),
    Rr,
}

/// Prints intervals as they arrive, in the chosen format.
pub struct LiveOutput {
    format: Format,
    lines: Lines,
    header_done: bool,
}

impl LiveOutput {
    /// Live output of a test run by `plan`.
    pub fn new(format: Format, plan: &StreamPlan) -> LiveOutput {
        LiveOutput {
            format,
            lines: match plan.spec.rr {
                Some(_) => Lines::Rr,
                None => Lines::Stream(plan.spec.transport),
            },
            header_done: false,
        }
    }

    fn table_line(&mut self, side: Role, iv: &IntervalReport) {
        let (header, row) = match self.lines {
            Lines::Stream(t) => (
                export::table::interval_header(t),
                export::table::interval_line(side, iv, t),
            ),
            Lines::Rr if side == Role::Client => (
                export::rr::interval_header(),
                export::rr::interval_line(side, iv),
            ),
            Lines::Rr => return,
        };
        if !self.header_done {
            self.header_done = true;
            let _ = write_out(&line(header));
        }
        let _ = write_out(&line(row));
    }
}

impl Observer for LiveOutput {
    fn started(&mut self, plan: &PlanRecord, started_at: &str) {
        if self.format == Format::JsonStream {
            let _ = write_out(&export::json::event_line(&StreamEvent::Start {
                plan: plan.clone(),
                started_at: started_at.to_string(),
            }));
        }
    }

    fn interval(&mut self, side: Role, iv: &IntervalReport) {
        match self.format {
            Format::Table => self.table_line(side, iv),
            Format::JsonStream => {
                let _ = write_out(&export::json::event_line(&StreamEvent::Interval {
                    side,
                    interval: iv.clone(),
                }));
            }
            _ => {}
        }
    }
}

/// Ends `s` with exactly one newline.
fn line(mut s: String) -> String {
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Runs one test by `plan` with live output (Ctrl-C ends it early and still reports), gives
/// the record the `--link-rate` hint, records and analyses its packets with `--capture`, and
/// prints it in `format`.
pub fn run_once(
    plan: &StreamPlan,
    format: Format,
    link_rate_bps: Option<u64>,
    capture: &crate::cli::analyze::CaptureArgs,
) -> anyhow::Result<ExitCode> {
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_flag(&interrupt)?;
    let mut live = LiveOutput::new(format, plan);
    let rec = super::analyze::with_capture(capture, plan, |plan| {
        let mut rec = client::run(plan, &mut live, &interrupt)?;
        crate::diagnose::apply_link_rate(&mut rec, link_rate_bps);
        Ok(rec)
    })?;
    emit(format, &rec)?;
    Ok(ExitCode::SUCCESS)
}

fn emit(format: Format, rec: &RunRecord) -> anyhow::Result<()> {
    if !matches!(format, Format::Table | Format::Json | Format::JsonStream) {
        for w in &rec.warnings {
            eprintln!("warning: {w}");
        }
    }
    // The emulated formats keep their classic stdout; the diagnosis (stream and RR tests
    // alike) goes to stderr as `# linerate:` comment lines.
    if let (Format::Netperf | Format::Ttcp, Some(d)) = (format, &rec.diagnosis) {
        for l in export::diagnosis::comment_lines(d) {
            eprintln!("{l}");
        }
    }
    let text = export::render(format, rec);
    if format == Format::Table && !rec.client.intervals.is_empty() {
        write_out("\n")?;
    }
    write_out(&text)?;
    Ok(())
}
