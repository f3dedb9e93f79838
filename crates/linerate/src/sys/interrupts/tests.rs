//! Tests of `/proc/interrupts` parsing, interface matching and deltas. Fixture origins are
//! in `tests/fixtures/proc/README.md`; expected values are worked out in the comments.

use std::collections::BTreeSet;

use super::*;

const TWO: &str = include_str!("../../../tests/fixtures/proc/interrupts-2cpu.txt");
const TWO_LATER: &str = include_str!("../../../tests/fixtures/proc/interrupts-2cpu-later.txt");
const SIXTY_FOUR: &str = include_str!("../../../tests/fixtures/proc/interrupts-64cpu.txt");
const ODD: &str = include_str!("../../../tests/fixtures/proc/interrupts-odd.txt");
const ODD_LATER: &str = include_str!("../../../tests/fixtures/proc/interrupts-odd-later.txt");

fn set(irqs: &[String]) -> BTreeSet<String> {
    irqs.iter().cloned().collect()
}

#[test]
fn parses_two_cpu_virtio_machine() {
    let p = parse_proc_interrupts(TWO).unwrap();
    assert_eq!(p.cpus, vec![0, 1]);
    let l38 = p.lines.iter().find(|l| l.irq == "38").unwrap();
    assert_eq!(l38.counts, vec![0, 3166]);
    assert_eq!(
        l38.description,
        "PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0"
    );
    assert!(l38.is_device() && p.is_per_cpu(l38));
    let loc = p.lines.iter().find(|l| l.irq == "LOC").unwrap();
    assert_eq!(loc.counts, vec![4_194_583, 3_659_256]);
    assert_eq!(loc.description, "Local timer interrupts");
    assert!(!loc.is_device());
    // ERR and MIS print one total: kept as total-only rows.
    let err = p.lines.iter().find(|l| l.irq == "ERR").unwrap();
    assert_eq!(err.counts, vec![0]);
    assert!(!p.is_per_cpu(err) && err.description.is_empty());
    // 19 numbered rows + 16 architecture rows in the file.
    assert_eq!(p.lines.len(), 35);
}

#[test]
fn parses_64_cpus() {
    let p = parse_proc_interrupts(SIXTY_FOUR).unwrap();
    assert_eq!(p.cpus, (0..64).collect::<Vec<u32>>());
    let comp5 = p.lines.iter().find(|l| l.irq == "105").unwrap();
    assert_eq!(comp5.counts.len(), 64);
    // mlx5_comp5 fires only on CPU 5: 1_000_000 + 5 * 1000.
    assert_eq!(comp5.counts[5], 1_005_000);
    assert_eq!(comp5.total(), 1_005_000);
    assert_eq!(
        comp5.description,
        "PCI-MSIX-0000:3b:00.0 6-edge mlx5_comp5@pci:0000:3b:00.0"
    );
    let loc = p.lines.iter().find(|l| l.irq == "LOC").unwrap();
    assert_eq!(loc.counts[63], 100_063);
    let err = p.lines.iter().find(|l| l.irq == "ERR").unwrap();
    assert_eq!(err.counts, vec![3]);
}

#[test]
fn parses_odd_names_gaps_and_short_rows() {
    let p = parse_proc_interrupts(ODD).unwrap();
    // CPU2 is offline: no column.
    assert_eq!(p.cpus, vec![0, 1, 3]);
    // The hardware IRQ number after the counts ("27") belongs to the description.
    let timer = &p.lines[0];
    assert_eq!(timer.counts, vec![123_456, 98_765, 45_678]);
    assert_eq!(timer.description, "GICv3 27 Level arch_timer");
    let short = p.lines.iter().find(|l| l.irq == "52").unwrap();
    assert_eq!(short.counts, vec![4, 9]);
    assert!(!p.is_per_cpu(short));
    let ipi = p.lines.iter().find(|l| l.irq == "IPI0").unwrap();
    assert_eq!(ipi.counts, vec![5000, 6000, 4_294_967_290]);
    assert_eq!(ipi.description, "Rescheduling interrupts");
    let two_handlers = p.lines.iter().find(|l| l.irq == "51").unwrap();
    assert!(two_handlers
        .description
        .ends_with("mlx5_async0@pci:0000:3b:00.0, i2c designware"));
}

#[test]
fn rejects_garbage() {
    assert!(parse_proc_interrupts("").is_err());
    let e = parse_proc_interrupts("  CPU0 CPUx\n").unwrap_err();
    assert!(e.reason.contains("CPUx"), "{e}");
    let e = parse_proc_interrupts("  CPU0\n 1: 5 x\nno colon here\n").unwrap_err();
    assert_eq!(e.line, Some(3));
}

#[test]
fn words_match_whole() {
    assert!(contains_word("1-edge eth0-TxRx-0", "eth0"));
    assert!(contains_word("eth0", "eth0"));
    assert!(!contains_word("eth10-TxRx-0", "eth1"));
    assert!(!contains_word("veth0-irq", "eth0"));
    assert!(contains_word("mlx5_comp0@pci:0000:3b:00.0", "0000:3b:00.0"));
    assert!(!contains_word("x", ""));
    assert!(looks_like_pci_address("0000:3b:00.0"));
    assert!(!looks_like_pci_address("virtio2"));
    assert!(!looks_like_pci_address("0000:3b:00:0"));
}

#[test]
fn matches_interface_by_name_virtio_and_pci_address() {
    let two = parse_proc_interrupts(TWO).unwrap();
    // eth0 on this machine is virtio2: no IRQ names eth0, so the virtio queues are used
    // and virtio2-config (IRQ 37) is not a queue.
    let eth0 = IrqMatcher {
        iface: "eth0".into(),
        virtio: Some("virtio2".into()),
        bus_info: Some("0000:00:03.0".into()),
    };
    assert_eq!(eth0.matching_irqs(&two), vec!["38", "39"]);
    assert!(IrqMatcher::new("lo").matching_irqs(&two).is_empty());

    let big = parse_proc_interrupts(SIXTY_FOUR).unwrap();
    // By name: eth2's four queues and its misc IRQ, not eth20's.
    assert_eq!(
        IrqMatcher::new("eth2").matching_irqs(&big),
        vec!["120", "121", "122", "123", "124"]
    );
    // By PCI address: mlx5's 16 completion IRQs and its async one (IRQ 99).
    let mlx = IrqMatcher {
        iface: "ens1f0np0".into(),
        virtio: None,
        bus_info: Some("0000:3b:00.0".into()),
    };
    let irqs = mlx.matching_irqs(&big);
    assert_eq!(irqs.len(), 17);
    assert_eq!(irqs[0], "100");
    assert!(irqs.contains(&"99".to_string()));

    let odd = parse_proc_interrupts(ODD).unwrap();
    assert_eq!(
        IrqMatcher::new("eth0").matching_irqs(&odd),
        vec!["47", "48"]
    );
    assert_eq!(IrqMatcher::new("eth10").matching_irqs(&odd), vec!["49"]);
}

#[test]
fn two_cpu_delta_is_exact() {
    let a = parse_proc_interrupts(TWO).unwrap();
    let b = parse_proc_interrupts(TWO_LATER).unwrap();
    let iface = set(&["38".into(), "39".into()]);
    let (d, warnings) = interrupt_delta(&a, &b, Some(&iface));
    assert!(warnings.is_empty(), "{warnings:?}");
    // interrupts-2cpu-later.txt adds: IRQ 36 +100 on CPU1, 38 +1000 on CPU1, 39 +500 on
    // CPU0, LOC +1000/+2000, ERR +2 (total only).
    assert_eq!(d.cpus, vec![0, 1]);
    assert_eq!(d.all.per_cpu, vec![1500, 3100]);
    assert_eq!(d.all.total, 4602);
    let i = d.interface.unwrap();
    assert_eq!(i.per_cpu, vec![500, 1000]);
    assert_eq!(i.total, 1500);
    let rows: Vec<(&str, u64, bool)> = d
        .rows
        .iter()
        .map(|r| (r.irq.as_str(), r.total, r.matched_interface))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("36", 100, false),
            ("38", 1000, true),
            ("39", 500, true),
            ("LOC", 3000, false),
            ("ERR", 2, false)
        ]
    );
    assert_eq!(d.rows[1].per_cpu, vec![0, 1000]);
    assert_eq!(
        d.rows[1].description,
        "PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0"
    );
    assert!(d.rows[4].per_cpu.is_empty());
    assert_eq!(d.rows_omitted, 0);
}

#[test]
fn odd_delta_handles_new_cpu_new_row_wrap_and_short_rows() {
    let a = parse_proc_interrupts(ODD).unwrap();
    let b = parse_proc_interrupts(ODD_LATER).unwrap();
    let matched = set(&IrqMatcher::new("eth0").matching_irqs(&b));
    assert_eq!(matched, set(&["47".into(), "48".into(), "61".into()]));
    let (d, warnings) = interrupt_delta(&a, &b, Some(&matched));
    // CPU2 came online: left out of per-CPU deltas, with a warning.
    assert_eq!(d.cpus, vec![0, 1, 3]);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("new: [2]"), "{}", warnings[0]);
    // Per row (CPUs 0, 1, 3): 11 [100,100,100]; 47 [0,500,0]; 48 [0,0,10]; 52 total-only
    // 13 -> 16 = 3; 61 new row [2,0,3]; IPI0 [10,0,11] (CPU3 wrapped 4294967290 -> 5 is
    // 6 + 5 = 11); Err total-only +1. IRQ 60 is gone and not reported.
    let rows: Vec<(&str, u64)> = d.rows.iter().map(|r| (r.irq.as_str(), r.total)).collect();
    assert_eq!(
        rows,
        vec![
            ("11", 300),
            ("47", 500),
            ("48", 10),
            ("52", 3),
            ("61", 5),
            ("IPI0", 21),
            ("Err", 1)
        ]
    );
    assert_eq!(d.rows[5].per_cpu, vec![10, 0, 11]);
    assert_eq!(d.all.per_cpu, vec![112, 600, 124]);
    assert_eq!(d.all.total, 840);
    let i = d.interface.unwrap();
    assert_eq!(i.per_cpu, vec![2, 500, 13]);
    assert_eq!(i.total, 515);
}

#[test]
fn no_interface_and_unchanged_rows() {
    let a = parse_proc_interrupts(SIXTY_FOUR).unwrap();
    let (d, w) = interrupt_delta(&a, &a, None);
    assert!(w.is_empty());
    assert!(d.rows.is_empty() && d.interface.is_none());
    assert_eq!(d.all.total, 0);
    assert_eq!(d.all.per_cpu.len(), 64);
    // An interface whose IRQs did not move still reports a zero interface sum.
    let m = set(&IrqMatcher::new("eth2").matching_irqs(&a));
    let (d, _) = interrupt_delta(&a, &a, Some(&m));
    assert_eq!(d.interface.map(|i| i.total), Some(0));
}

#[test]
fn rows_are_capped_interface_rows_kept() {
    // 40 device IRQs on one CPU, IRQ n rising by n + 1; IRQs 0 and 1 are the interface's.
    let mk = |scale: u64| ProcInterrupts {
        cpus: vec![0],
        lines: (0..40u64)
            .map(|n| IrqLine {
                irq: n.to_string(),
                counts: vec![scale * (n + 1)],
                description: format!("dev{n}"),
            })
            .collect(),
    };
    let iface = set(&["0".into(), "1".into()]);
    let (d, _) = interrupt_delta(&mk(0), &mk(1), Some(&iface));
    // 2 interface rows + the 32 largest others (IRQs 8..=39); 6 left out.
    assert_eq!(d.rows.len(), 34);
    assert_eq!(d.rows_omitted, 6);
    assert_eq!(d.rows[0].irq, "0");
    assert_eq!(d.rows[1].irq, "1");
    assert_eq!(d.rows[2].irq, "8");
    assert_eq!(d.rows[33].irq, "39");
    // Totals still count every row: 1 + 2 + ... + 40 = 820.
    assert_eq!(d.all.total, 820);
}
