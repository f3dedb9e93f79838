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

/// `--dut` on a stream test: the table prints the device's CPU, counts and interfaces, the
/// CSV its busiest CPU, egress packets and ingress drops; without it neither appears.
#[test]
fn stream_table_and_csv_show_the_device() {
    let mut rec = fixtures::tcp_send();
    assert!(!table::render(&rec).contains("the device (--dut"));
    let plain = self::csv::render(&rec);
    let last = plain.lines().nth(1).unwrap();
    rec.dut = Some(crate::model::dut::DutCounters::between(
        "r:5301",
        &crate::model::dut::tests::snap(1, 2),
        &crate::model::dut::tests::snap(2, 2),
        None,
    ));
    let t = table::render(&rec);
    assert!(t.contains("the device (--dut r:5301) over 1.00 s:"), "{t}");
    assert!(
        t.contains("busiest CPU 1 97.0% busy, softirq 80.0%, irq 7.0%"),
        "{t}"
    );
    assert!(t.contains("interrupts 505, NET_RX softirqs 300"), "{t}");
    // eth0 received 1010 and dropped 2; eth1 sent 1000.
    let eth0 = t
        .lines()
        .find(|l| l.trim_start().starts_with("eth0"))
        .unwrap();
    let cells: Vec<&str> = eth0.split_whitespace().collect();
    assert_eq!(cells, ["eth0", "1010", "0", "2", "0", "0"], "{t}");
    let csv = self::csv::render(&rec);
    let mut r = ::csv::Reader::from_reader(csv.as_bytes());
    let h = r.headers().unwrap().clone();
    let row = r.records().next().unwrap().unwrap();
    let cell = |name: &str| row[h.iter().position(|c| c == name).unwrap()].to_string();
    assert_eq!(cell("dut_busiest_cpu_busy_percent"), "97.0");
    assert_eq!(cell("dut_busiest_cpu_softirq_percent"), "80.0");
    assert_eq!(cell("dut_egress_tx_packets"), "1000");
    assert_eq!(cell("dut_ingress_drops"), "2");
    // Without --dut those cells are empty.
    let mut r = ::csv::Reader::from_reader(plain.as_bytes());
    let h = r.headers().unwrap().clone();
    let row = r.records().next().unwrap().unwrap();
    let k = h.iter().position(|c| c == "dut_egress_tx_packets").unwrap();
    assert_eq!(&row[k], "", "{last}");
}
