//! The table, CSV and chart of RFC 2544 records from a simulated device
//! ([`crate::rfc2544::tests::fixture`]): complete and deterministic.

#[cfg(feature = "chart")]
use super::chart;
use super::render_table;
use crate::rfc2544::record::Benchmark;
use crate::rfc2544::tests::fixture;
#[cfg(feature = "chart")]
use crate::rfc2544::throughput::ThroughputStatus;

#[test]
fn table_has_the_throughput_tab_columns() {
    let rec = fixture(true, vec![Benchmark::Throughput]);
    let t = super::render_table(&rec);
    assert!(t.contains("Throughput (NDR: no frame lost)"), "{t}");
    assert!(
        t.contains("Throughput (PDR: at most 0.1% of frames lost)"),
        "{t}"
    );
    for col in [
        "frames/s",
        "Mbit/s L2",
        "% line",
        "max frames/s",
        "tester max",
        "trials",
        "status",
    ] {
        assert!(t.contains(col), "{col}: {t}");
    }
    // 64 B theoretical maximum at 100 Mbit/s: 148,809.5 per direction, 297,619.0 in total.
    assert!(t.contains("148,809.5") && t.contains("297,619.0"), "{t}");
    assert!(
        t.contains(" fwd ") && t.contains(" rev ") && t.contains(" total "),
        "{t}"
    );
    assert!(t.contains("Deviations from RFC 2544:"), "{t}");
    assert_eq!(t, super::render_table(&rec.clone()));
}

#[test]
fn fps_formatting() {
    assert_eq!(super::format_fps(1_488_095.238), "1,488,095.2");
    assert_eq!(super::format_fps(999.96), "1,000.0");
    assert_eq!(super::format_fps(12.0), "12.0");
    assert_eq!(super::format_fps(f64::NAN), "-");
}

#[test]
fn csv_has_one_row_per_result() {
    let rec = fixture(false, Benchmark::ALL.to_vec());
    let text = super::render_csv(&rec);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("benchmark,frame_size,direction,goal_loss_percent"),
        "{header}"
    );
    let rows: Vec<&str> = lines.collect();
    // Per size: 2 throughput goals, 1 latency direction, the loss points, 1 back-to-back.
    let expected: usize = rec
        .frame_sizes
        .iter()
        .map(|f| 2 + 1 + f.frame_loss.as_ref().unwrap().points.len() + 1)
        .sum();
    assert_eq!(rows.len(), expected, "{text}");
    assert!(
        rows.iter().any(|r| r.starts_with("throughput,64,fwd,0.0,")),
        "{text}"
    );
}

#[test]
#[cfg(feature = "chart")]
fn svg_chart_is_deterministic_and_complete() {
    let rec = fixture(true, vec![Benchmark::Throughput]);
    let svg = chart::render_svg(&rec);
    assert_eq!(svg, chart::render_svg(&rec.clone()));
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>\n"));
    for label in [
        "64",
        "512",
        "1518",
        "frame size (bytes, FCS included)",
        "frames per second",
    ] {
        assert!(svg.contains(&format!(">{label}<")), "{label}");
    }
    // Theoretical line, per-direction and total series.
    assert_eq!(svg.matches("<polyline").count(), 3);
    assert!(svg.contains("stroke-dasharray"));
    // 3 sizes × 3 series of markers.
    assert_eq!(svg.matches("<circle").count(), 9);
    // The theoretical maximum per direction, 148,810 fps at 64 B, rounds the axis up to 200k.
    assert!(svg.contains(">200k<"), "{svg}");
    if let Ok(dir) = std::env::var("LINERATE_CHART_DIR") {
        std::fs::write(format!("{dir}/fixture.svg"), &svg).unwrap();
        let (png, _) = chart::png(&rec).unwrap();
        std::fs::write(format!("{dir}/fixture.png"), png).unwrap();
    }
    assert!(svg.contains("198.51.100.2:5301"));
}

#[test]
#[cfg(feature = "chart")]
fn png_chart_is_a_png() {
    let rec = fixture(false, vec![Benchmark::Throughput]);
    let (png, warnings) = chart::png(&rec).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // scripts/test.sh installs fonts-dejavu-core: the labels are drawn as glyph outlines.
    let font = crate::export::chart::system_font();
    assert!(font.is_some(), "no system font: install fonts-dejavu-core");
    assert!(warnings.is_empty(), "{warnings:?}");
    // Text-free rasterization of the plain SVG gives a smaller image than with the labels.
    let bare = crate::export::chart::rasterize(&chart::render_svg(&rec)).unwrap();
    assert!(
        png.len() > bare.len(),
        "labels missing: {} vs {} bytes",
        png.len(),
        bare.len()
    );
}

/// With `--dut`, a note under the chart gives, per frame size, the device's busiest CPU and
/// its interrupt + softirq share in the trial at the throughput rate; without it none.
#[test]
#[cfg(feature = "chart")]
fn svg_chart_labels_the_device_at_the_throughput_rate() {
    let mut rec = fixture(false, vec![Benchmark::Throughput]);
    assert!(!chart::render_svg(&rec).contains("--dut"));
    let d = crate::model::dut::DutCounters::between(
        "r:5301",
        &crate::model::dut::tests::snap(1, 0),
        &crate::model::dut::tests::snap(2, 0),
        None,
    );
    let mut labelled = 0;
    for f in &mut rec.frame_sizes {
        let Some(t) = f.throughput.as_mut() else {
            continue;
        };
        let Some(fps) = t.goals.first().and_then(|g| g.throughput_fps) else {
            continue;
        };
        for tr in &mut t.trials {
            if tr.offered_fps == Some(fps) {
                tr.dut = Some(d.clone());
            }
        }
        labelled += 1;
    }
    assert!(labelled > 0);
    let svg = chart::render_svg(&rec);
    // One note per labelled frame size, under the chart.
    assert_eq!(
        svg.matches(": CPU1 97% busy, 87% interrupts + softirq<")
            .count(),
        labelled,
        "{svg}"
    );
    assert!(svg.contains("the device (--dut) at the throughput rate, 64 B"));
    assert!(chart::device_at_throughput(&rec.frame_sizes[0]).is_some());

    // The diagnosis's device rules over the same counters: one CPU of the device 97 % busy,
    // 87 % of it interrupts and softirq, names it interrupt bound at each size whose
    // throughput the tester did not limit; the table says so.
    crate::diagnose::rules::dut::rfc2544_device_verdicts(&mut rec.frame_sizes);
    let mut named = 0;
    for f in &rec.frame_sizes {
        let g = f.throughput.as_ref().and_then(|t| t.goals.first());
        match g.map(|g| g.status) {
            Some(ThroughputStatus::TesterLimited) | None => {
                assert!(f.device_verdicts.is_empty(), "{:?}", f.device_verdicts)
            }
            Some(_) if f.device_at_throughput().is_some() => {
                let kinds: Vec<&str> = f.device_verdicts.iter().map(|v| v.kind.name()).collect();
                assert!(kinds.contains(&"device_interrupt_bound"), "{kinds:?}");
                named += 1;
            }
            Some(_) => {}
        }
    }
    assert!(named > 0);
    let table = render_table(&rec);
    assert!(
        table.contains("The device (--dut) at the throughput rate:"),
        "{table}"
    );
    assert!(table.contains("device_interrupt_bound"), "{table}");
}

#[test]
fn the_table_shows_each_sizes_profiles_at_the_throughput_rate() {
    let rec = crate::rfc2544::tests::profiled_fixture(vec![Benchmark::Throughput]);
    let t = render_table(&rec);
    for f in &rec.frame_sizes {
        let fps = f.throughput.as_ref().unwrap().goals[0]
            .throughput_fps
            .unwrap();
        for end in ["client", "server"] {
            let head = format!(
                "profile of the {end}, {} B frames, confirmation trial at {} fps (the throughput rate): cpu-clock at 999 Hz",
                f.frame_size,
                super::format_fps(fps)
            );
            assert!(t.contains(&head), "{head}: {t}");
        }
    }
    assert!(
        t.contains("by category: data copy 60.0%, softirq 40.0%"),
        "{t}"
    );
    // A missing end is said, not left blank.
    let mut rec = rec;
    rec.frame_sizes[0].profile.as_mut().unwrap().server = None;
    let t = render_table(&rec);
    assert!(t.contains("no profile of the server, 64 B frames"), "{t}");
}

#[test]
fn a_profiles_own_warnings_stand_under_its_shares() {
    let mut rec = crate::rfc2544::tests::profiled_fixture(vec![Benchmark::Throughput]);
    let w = "uneven sampling: CPU 1 gave 615 of about 2338 busy samples";
    let kept = rec.frame_sizes[0].profile.as_mut().unwrap();
    kept.client.as_mut().unwrap().warnings.push(w.into());
    let t = render_table(&rec);
    let block = t
        .split("\nprofile of the ")
        .find(|b| b.starts_with("client"))
        .unwrap();
    assert!(block.contains(&format!("  warning: {w}\n")), "{block}");
    // The other end has none.
    let server = t
        .split("\nprofile of the ")
        .find(|b| b.starts_with("server"))
        .unwrap();
    assert!(!server.contains("warning:"), "{server}");
}
