//! The renderings of `linerate analyze` on the captures in `tests/fixtures/pcap/`: the
//! table, CSV, JSON (against its schema) and time-sequence graphs, deterministic and never
//! panicking on hostile input.

use std::path::PathBuf;

use crate::analyze::{analyze_reader, AnalyzeOptions, DirectionGraph, PeriodKind};
use crate::model::trace::AnalysisRecord;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pcap")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn analyze_bytes(bytes: &[u8], opts: AnalyzeOptions) -> (AnalysisRecord, Vec<DirectionGraph>) {
    analyze_reader(bytes, "fixture", &opts).expect("analysis")
}

#[test]
fn outputs_are_deterministic_and_json_matches_the_schema() {
    let opts = AnalyzeOptions {
        link_rate_bps: Some(20_000_000),
        graphs: true,
        ..AnalyzeOptions::default()
    };
    let (r, g) = analyze_bytes(&fixture("lossy-bulk.pcap"), opts.clone());
    let (r2, g2) = analyze_bytes(&fixture("lossy-bulk.pcap"), opts);
    let json = super::json::render_analysis(&r);
    assert_eq!(json, super::json::render_analysis(&r2));
    let schema: serde_json::Value = serde_json::from_str(&super::json::analyze_schema()).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(compiled.is_valid(&value));
    let table = super::analyze::table(&r);
    assert!(table.contains("TCP 2"), "{table}");
    assert!(table.contains("RFC 6349 a->b"), "{table}");
    let csv = super::analyze::csv(&r);
    assert_eq!(csv.lines().count(), 1 + 4);
    assert!(csv.starts_with("proto,index,direction,src,dst"));
    let svg = |gs: &[DirectionGraph]| {
        gs.iter()
            .find(|x| x.connection == 2 && x.direction == "a_to_b")
            .map(super::tsg::render_svg)
            .unwrap()
    };
    let s = svg(&g);
    assert_eq!(s, svg(&g2));
    assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    assert!(s.contains("#d62728"), "retransmissions are drawn in red");
    assert!(s.contains("time-sequence graph"));
}

#[test]
fn nagle_graph_shades_the_stalls() {
    let opts = AnalyzeOptions {
        graphs: true,
        ..AnalyzeOptions::default()
    };
    let (_, g) = analyze_bytes(&fixture("nagle-write-write-read.pcap"), opts);
    let a = g.iter().find(|x| x.direction == "a_to_b").unwrap();
    let stalls = a
        .periods
        .iter()
        .filter(|p| p.kind == PeriodKind::DelayedAck)
        .count();
    assert!(stalls >= 15);
    assert!(super::tsg::render_svg(a).contains("#f6b3b3"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn the_reader_never_panics_on_mutated_captures(
        which in 0usize..2,
        edits in proptest::collection::vec((0usize..5000, proptest::prelude::any::<u8>()), 1..8),
        cut in 0usize..20000,
    ) {
        let mut f = fixture(["sll2-any.pcap", "two-interfaces.pcapng"][which]);
        for (i, v) in edits {
            let n = f.len();
            f[i % n] = v;
        }
        f.truncate(cut.max(1));
        if let Ok((rec, g)) = analyze_reader(&f[..], "fuzz", &AnalyzeOptions { graphs: true, link_rate_bps: Some(1_000_000), mtu: None, top: Some(3) }) {
            let _ = super::analyze::table(&rec);
            let _ = super::analyze::csv(&rec);
            for x in &g { let _ = super::tsg::render_svg(x); }
        }
    }
}
