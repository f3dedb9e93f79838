//! JSON output and the JSON Schemas that document it.
//!
//! `--json` prints [`render`]; `--json-stream` prints one [`event_line`] per [`StreamEvent`] as
//! it happens. Every record with a published schema has a [`SchemaName`]: `linerate schema
//! NAME` prints [`SchemaName::schema`], generated from the model types, and a test keeps the
//! committed `docs/json-schema/NAME-v1.json` in step with it.

use crate::model::{RunRecord, StreamEvent};
use serde::Serialize;

/// A record with a published JSON Schema (`docs/json-schema/NAME-v1.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaName {
    /// A test's record (`--json` of tcp, udp, rr).
    Run,
    /// One line of `--json-stream`.
    Event,
    /// A repeated test's record (`--repeat`, `--confidence`).
    Trials,
    /// `linerate rfc2544 --json`.
    #[value(name = "rfc2544")]
    Rfc2544,
    /// `linerate analyze --json`.
    Analyze,
    /// `linerate doctor --json`.
    Doctor,
    /// `linerate history --json`.
    #[cfg(feature = "store")]
    History,
    /// `linerate history --changes --json`.
    #[cfg(feature = "store")]
    Changes,
    /// `linerate check --json`.
    #[cfg(feature = "store")]
    Check,
    /// `linerate sweep --json`.
    Sweep,
    /// `linerate campaign --json`.
    Campaign,
    /// `linerate fleet run --json`.
    #[cfg(feature = "fleet")]
    Fleet,
    /// `linerate udp GROUP --receivers ... --json`.
    Multicast,
}

impl SchemaName {
    /// The name on the command line and in the file name.
    pub fn name(self) -> &'static str {
        match self {
            SchemaName::Run => "run",
            SchemaName::Event => "event",
            SchemaName::Trials => "trials",
            SchemaName::Rfc2544 => "rfc2544",
            SchemaName::Analyze => "analyze",
            SchemaName::Doctor => "doctor",
            #[cfg(feature = "store")]
            SchemaName::History => "history",
            #[cfg(feature = "store")]
            SchemaName::Changes => "changes",
            #[cfg(feature = "store")]
            SchemaName::Check => "check",
            SchemaName::Sweep => "sweep",
            SchemaName::Campaign => "campaign",
            #[cfg(feature = "fleet")]
            SchemaName::Fleet => "fleet",
            SchemaName::Multicast => "multicast",
        }
    }

    /// The committed file under `docs/json-schema/`.
    pub fn file_name(self) -> String {
        format!("{}-v1.json", self.name())
    }

    /// The schema, generated from the types, pretty, with a trailing newline.
    pub fn schema(self) -> String {
        match self {
            SchemaName::Run => schema(),
            SchemaName::Event => event_schema(),
            SchemaName::Trials => trials_schema(),
            SchemaName::Rfc2544 => crate::rfc2544::record::schema(),
            SchemaName::Analyze => analyze_schema(),
            SchemaName::Doctor => doctor_schema(),
            #[cfg(feature = "store")]
            SchemaName::History => pretty(&schemars::schema_for!(crate::store::HistoryRecord)),
            #[cfg(feature = "store")]
            SchemaName::Changes => {
                pretty(&schemars::schema_for!(crate::model::changes::ChangesRecord))
            }
            #[cfg(feature = "store")]
            SchemaName::Check => pretty(&schemars::schema_for!(crate::model::check::CheckRecord)),
            SchemaName::Sweep => pretty(&schemars::schema_for!(crate::model::sweep::SweepRecord)),
            SchemaName::Campaign => pretty(&schemars::schema_for!(
                crate::model::campaign::CampaignRecord
            )),
            #[cfg(feature = "fleet")]
            SchemaName::Fleet => pretty(&schemars::schema_for!(crate::fleet::record::FleetRecord)),
            SchemaName::Multicast => pretty(&schemars::schema_for!(
                crate::model::multicast::MulticastRecord
            )),
        }
    }
}

/// The record as pretty JSON, with a trailing newline.
pub fn render(rec: &RunRecord) -> String {
    pretty(rec)
}

/// One event as a single compact JSON line, with a trailing newline.
pub fn event_line(event: &StreamEvent) -> String {
    let mut line = serde_json::to_string(event).unwrap_or_else(|e| error_json(&e));
    line.push('\n');
    line
}

/// JSON Schema of [`RunRecord`] (`docs/json-schema/run-v1.json`), pretty, trailing newline.
pub fn schema() -> String {
    pretty(&schemars::schema_for!(RunRecord))
}

/// JSON Schema of a repeated run's record (`docs/json-schema/trials-v1.json`).
pub fn trials_schema() -> String {
    pretty(&schemars::schema_for!(crate::model::RunSetRecord))
}

/// JSON Schema of `linerate doctor --json` (`docs/json-schema/doctor-v1.json`).
pub fn doctor_schema() -> String {
    pretty(&schemars::schema_for!(crate::model::doctor::DoctorRecord))
}

/// JSON Schema of `linerate analyze --json` (`docs/json-schema/analyze-v1.json`).
pub fn analyze_schema() -> String {
    pretty(&schemars::schema_for!(crate::model::trace::AnalysisRecord))
}

/// The analysis record as pretty JSON, with a trailing newline.
pub fn render_analysis(rec: &crate::model::trace::AnalysisRecord) -> String {
    pretty(rec)
}

/// JSON Schema of one `--json-stream` line (`docs/json-schema/event-v1.json`).
pub fn event_schema() -> String {
    pretty(&schemars::schema_for!(StreamEvent))
}

/// Any record as pretty JSON, with a trailing newline.
pub fn pretty<T: Serialize>(value: &T) -> String {
    let mut text = linerate_wire::json::to_string_pretty(value).unwrap_or_else(|e| error_json(&e));
    text.push('\n');
    text
}

/// The model only holds strings, numbers, booleans and sequences, so serialization cannot fail;
/// should it ever, the output stays valid JSON and says why.
fn error_json(e: &serde_json::Error) -> String {
    serde_json::json!({ "error": format!("cannot serialize: {e}") }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use clap::ValueEnum;
    use linerate_wire::report::Role;
    use std::path::PathBuf;

    fn schema_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/json-schema")
    }

    /// The committed schemas (every file in `docs/json-schema/`) must match the code. After
    /// an intended change to the model, run
    /// `LINERATE_BLESS=1 cargo test -p linerate export::json` to rewrite the files in
    /// `docs/json-schema/`, and review the diff (an incompatible change also bumps
    /// `SCHEMA_VERSION` and the file names).
    #[test]
    fn committed_schemas_match_the_model() {
        let bless = std::env::var("LINERATE_BLESS").is_ok_and(|v| v == "1");
        for which in SchemaName::value_variants() {
            let (name, generated) = (which.file_name(), which.schema());
            let path = schema_dir().join(&name);
            if bless {
                std::fs::create_dir_all(schema_dir()).unwrap();
                std::fs::write(&path, &generated).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; run with LINERATE_BLESS=1 to create it",
                    path.display()
                )
            });
            assert!(
                committed == generated,
                "{} is out of date with the model; run with LINERATE_BLESS=1 to regenerate it",
                path.display()
            );
        }
        // And every committed file has a name `linerate schema` knows.
        for entry in std::fs::read_dir(schema_dir()).unwrap() {
            let file = entry.unwrap().file_name().to_string_lossy().into_owned();
            // The history, check and change-point records are the results database's, the
            // fleet record the coordinator's: not in a build without them.
            let store_only = ["history-v1.json", "check-v1.json", "changes-v1.json"];
            if (cfg!(not(feature = "store")) && store_only.contains(&file.as_str()))
                || (cfg!(not(feature = "fleet")) && file == "fleet-v1.json")
            {
                continue;
            }
            assert!(
                SchemaName::value_variants()
                    .iter()
                    .any(|w| w.file_name() == file),
                "docs/json-schema/{file} has no SchemaName"
            );
        }
    }

    #[test]
    fn schema_names_parse_as_printed() {
        for which in SchemaName::value_variants() {
            assert_eq!(SchemaName::from_str(which.name(), false), Ok(*which));
        }
    }

    fn compile(schema_text: &str) -> jsonschema::JSONSchema {
        let value: serde_json::Value = serde_json::from_str(schema_text).unwrap();
        jsonschema::JSONSchema::compile(&value).unwrap()
    }

    fn assert_valid(schema: &jsonschema::JSONSchema, text: &str) {
        let instance: serde_json::Value = serde_json::from_str(text).unwrap();
        let msgs: Vec<String> = match schema.validate(&instance) {
            Ok(()) => Vec::new(),
            Err(errors) => errors
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect(),
        };
        assert!(msgs.is_empty(), "invalid against the schema: {msgs:#?}");
    }

    #[test]
    fn rendered_records_validate_against_the_schema() {
        let schema = compile(&schema());
        for rec in fixtures::all() {
            assert_valid(&schema, &render(&rec));
        }
    }

    #[test]
    fn stream_events_validate_against_the_event_schema() {
        let schema = compile(&event_schema());
        let rec = fixtures::tcp_send();
        let events = [
            StreamEvent::Start {
                plan: rec.plan.clone(),
                started_at: rec.started_at.clone(),
            },
            StreamEvent::Interval {
                side: Role::Client,
                interval: rec.client.intervals[1].clone(),
            },
            StreamEvent::Warning {
                message: "server: CPU utilisation unavailable".to_string(),
            },
            StreamEvent::End {
                record: Box::new(rec),
            },
        ];
        for event in &events {
            let line = event_line(event);
            assert!(line.ends_with('\n'));
            assert_eq!(line.matches('\n').count(), 1, "one line per event: {line}");
            assert_valid(&schema, &line);
            let back = serde_json::from_str::<StreamEvent>(&line).unwrap();
            let (back, event) = (serde_json::to_value(back), serde_json::to_value(event));
            assert_same_json(&back.unwrap(), &event.unwrap(), "$");
        }
    }

    /// Equal JSON trees, numbers compared to 1e-15 relative. serde_json writes the shortest
    /// representation that round-trips, but without its `float_roundtrip` feature it parses
    /// long mantissas with "best effort" precision, one ulp off at worst (96.58536585365852
    /// reads back as …853). Everything that is not a float must match exactly.
    fn assert_same_json(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!(
                    (x - y).abs() <= 1e-15 * x.abs().max(y.abs()),
                    "{path}: {x} != {y}"
                );
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{path}");
                for (i, (x, y)) in x.iter().zip(y).enumerate() {
                    assert_same_json(x, y, &format!("{path}[{i}]"));
                }
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>(),
                    "{path}"
                );
                for (k, x) in x {
                    assert_same_json(x, &y[k], &format!("{path}.{k}"));
                }
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }

    #[test]
    fn json_round_trips() {
        for rec in fixtures::all() {
            let text = render(&rec);
            assert!(text.ends_with("}\n"));
            let back: RunRecord = serde_json::from_str(&text).unwrap();
            let (back, rec) = (serde_json::to_value(back), serde_json::to_value(rec));
            assert_same_json(&back.unwrap(), &rec.unwrap(), "$");
        }
    }

    #[test]
    fn json_round_trips_exactly_when_floats_are_short() {
        // With short mantissas (as most measured figures are) the parse is exact.
        let mut rec = fixtures::tcp_send();
        for e in [Some(&mut rec.summary.client), rec.summary.server.as_mut()]
            .into_iter()
            .flatten()
        {
            e.service_demand_us_per_kb = Some(27.847);
            e.tool_cpu_percent = Some(96.6);
            e.us_per_call = Some(1795.73);
            e.calls_per_sec = Some(556.88);
        }
        assert_eq!(
            serde_json::from_str::<RunRecord>(&render(&rec)).unwrap(),
            rec
        );
    }

    #[test]
    fn missing_values_are_absent_not_zero() {
        let text = render(&fixtures::no_server());
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(value.get("server").is_none());
        assert!(value["summary"]["client"].get("cpu_util_percent").is_none());
        assert!(value["summary"]["flows"][0].get("receiver_bps").is_none());
    }

    #[test]
    fn rendering_is_deterministic() {
        let rec = fixtures::udp_send();
        assert_eq!(render(&rec), render(&rec.clone()));
        assert_eq!(schema(), schema());
    }
}
