//! Tests of the module-level API: format names and dispatch.

use super::*;

#[test]
fn format_names_parse_and_print() {
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
        assert_eq!(f.to_string(), f.name());
    }
    assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
    assert_eq!("json_stream".parse::<Format>(), Ok(Format::JsonStream));
}

#[test]
fn unknown_format_lists_the_valid_names() {
    let err = "xml".parse::<Format>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown output format 'xml': valid formats are table, json, json-stream, csv, netperf, ttcp"
    );
}

#[test]
fn render_dispatches_to_each_exporter() {
    let rec = fixtures::tcp_send();
    assert_eq!(render(Format::Table, &rec), table::render(&rec));
    assert_eq!(render(Format::Json, &rec), json::render(&rec));
    assert_eq!(render(Format::Csv, &rec), self::csv::render(&rec));
    assert_eq!(render(Format::Netperf, &rec), netperf::render(&rec));
    assert_eq!(render(Format::Ttcp, &rec), ttcp::render(&rec));
}

#[test]
fn json_stream_renders_only_the_end_event() {
    let rec = fixtures::udp_send();
    let out = render(Format::JsonStream, &rec);
    assert_eq!(out.lines().count(), 1);
    let event: StreamEvent = serde_json::from_str(&out).unwrap();
    assert_eq!(
        event,
        StreamEvent::End {
            record: Box::new(rec)
        }
    );
    assert!(out.starts_with("{\"event\":\"end\","));
}

#[test]
fn every_format_is_deterministic() {
    for rec in fixtures::all() {
        for f in Format::ALL {
            assert_eq!(render(f, &rec), render(f, &rec.clone()), "{f}");
        }
    }
}
