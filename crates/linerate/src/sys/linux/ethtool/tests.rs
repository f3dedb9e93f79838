//! Tests of the ethtool struct decoders on buffers laid out by hand from
//! `include/uapi/linux/ethtool.h` (offsets checked with `offsetof`), and of the live ioctls
//! on loopback.

use super::*;

fn put_str(b: &mut [u8], at: usize, s: &str) {
    b[at..at + s.len()].copy_from_slice(s.as_bytes());
}

#[test]
fn drvinfo_fields() {
    // As virtio_net answers on this VM: `ethtool -i eth0` printed driver virtio_net,
    // version 1.0.0, empty firmware-version, bus-info 0000:00:03.0.
    let mut b = request(cmd::GDRVINFO, 196);
    put_str(&mut b, 4, "virtio_net");
    put_str(&mut b, 36, "1.0.0");
    put_str(&mut b, 100, "0000:00:03.0");
    let d = parse_drvinfo(&b);
    assert_eq!(d.driver.as_deref(), Some("virtio_net"));
    assert_eq!(d.version.as_deref(), Some("1.0.0"));
    assert_eq!(d.firmware, None);
    assert_eq!(d.bus_info.as_deref(), Some("0000:00:03.0"));
    // A field filling all 32 bytes without NUL is still read.
    put_str(&mut b, 4, &"x".repeat(32));
    assert_eq!(parse_drvinfo(&b).driver.map(|s| s.len()), Some(32));
    assert_eq!(parse_drvinfo(&[0u8; 10]), DrvInfo::default());
}

#[test]
fn link_settings_and_unknowns() {
    let mut b = vec![0u8; 48];
    put_u32(&mut b, 4, 10_000);
    b[8] = 1; // DUPLEX_FULL
    b[11] = 0; // AUTONEG_DISABLE
    assert_eq!(
        parse_link_settings(&b),
        Some(LinkSettings {
            speed_mbps: Some(10_000),
            duplex: Some(Duplex::Full),
            autoneg: Some(false)
        })
    );
    // virtio_net without a configured speed: SPEED_UNKNOWN (-1), DUPLEX_UNKNOWN (0xff).
    put_u32(&mut b, 4, u32::MAX);
    b[8] = 0xff;
    let l = parse_link_settings(&b).unwrap();
    assert_eq!((l.speed_mbps, l.duplex), (None, None));
    put_u32(&mut b, 4, 0);
    assert_eq!(parse_link_settings(&b).unwrap().speed_mbps, None);
    assert_eq!(parse_link_settings(&b[..8]), None);
}

#[test]
fn legacy_link_speed_has_two_halves() {
    let mut b = vec![0u8; 44];
    // 100000 Mbit/s = 0x0001_86a0: speed = 0x86a0, speed_hi = 0x0001.
    b[12..14].copy_from_slice(&0x86a0u16.to_ne_bytes());
    b[28..30].copy_from_slice(&1u16.to_ne_bytes());
    b[14] = 0; // half
    b[18] = 1; // autoneg on
    let l = parse_legacy_link(&b).unwrap();
    assert_eq!(l.speed_mbps, Some(100_000));
    assert_eq!(l.duplex, Some(Duplex::Half));
    assert_eq!(l.autoneg, Some(true));
    // SPEED_UNKNOWN as the legacy u16 pair (0xffff, 0xffff) and as 0xffff alone.
    b[12..14].copy_from_slice(&u16::MAX.to_ne_bytes());
    b[28..30].copy_from_slice(&u16::MAX.to_ne_bytes());
    assert_eq!(parse_legacy_link(&b).unwrap().speed_mbps, None);
    b[28..30].copy_from_slice(&0u16.to_ne_bytes());
    assert_eq!(parse_legacy_link(&b).unwrap().speed_mbps, None);
}

#[test]
fn coalesce_keeps_core_zeros_only() {
    let mut b = request(cmd::GCOALESCE, 92);
    // virtio_net here (`ethtool -c eth0`): rx-usecs 0, rx-frames 1, tx-usecs 0,
    // tx-frames 1, adaptive off. Add pkt-rate-high 7 (field 16 at 4 + 64).
    put_u32(&mut b, 8, 1);
    put_u32(&mut b, 4 + 5 * 4, 1);
    put_u32(&mut b, 4 + 16 * 4, 7);
    let c = parse_coalesce(&b).unwrap();
    let expected: BTreeMap<String, u32> = [
        ("adaptive-rx", 0),
        ("adaptive-tx", 0),
        ("pkt-rate-high", 7),
        ("rx-frames", 1),
        ("rx-usecs", 0),
        ("tx-frames", 1),
        ("tx-usecs", 0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(c, expected);
    // The last field, sample-interval, sits at 88.
    put_u32(&mut b, 88, 3);
    assert_eq!(parse_coalesce(&b).unwrap()["sample-interval"], 3);
    assert_eq!(parse_coalesce(&b[..91]), None);
}

#[test]
fn rings_and_channels() {
    let mut b = vec![0u8; 36];
    for (at, v) in [(4, 4096), (16, 4096), (20, 256), (32, 512)] {
        put_u32(&mut b, at, v);
    }
    assert_eq!(
        parse_ringparam(&b),
        Some(RingSizes {
            rx: 256,
            rx_max: 4096,
            tx: 512,
            tx_max: 4096
        })
    );
    let mut c = vec![0u8; 36];
    for (at, v) in [(20, 2), (24, 3), (28, 1), (32, 8)] {
        put_u32(&mut c, at, v);
    }
    assert_eq!(
        parse_channels(&c),
        Some(Channels {
            rx: 2,
            tx: 3,
            other: 1,
            combined: 8
        })
    );
    assert_eq!(parse_ringparam(&b[..35]), None);
}

#[test]
fn strings_values_and_feature_bits() {
    let mut b = vec![0u8; 12 + 3 * 32];
    put_str(&mut b, 12, "peer_ifindex");
    put_str(&mut b, 44, &"q".repeat(32));
    assert_eq!(
        parse_strings(&b, 12, 3).unwrap(),
        vec!["peer_ifindex".to_string(), "q".repeat(32), String::new()]
    );
    assert_eq!(parse_strings(&b, 12, 4), None);
    let mut v = vec![0u8; 8 + 16];
    v[8..16].copy_from_slice(&7u64.to_ne_bytes());
    v[16..24].copy_from_slice(&u64::MAX.to_ne_bytes());
    assert_eq!(parse_u64s(&v, 8, 2), Some(vec![7, u64::MAX]));
    assert_eq!(parse_u64s(&v, 8, 3), None);
    // Two blocks; active words at 8 + 8 = 16 and 8 + 16 + 8 = 32. Bits 0, 2 and 33 set.
    let mut f = vec![0u8; 8 + 32];
    put_u32(&mut f, 16, 0b101);
    put_u32(&mut f, 32, 0b10);
    let a = parse_active_features(&f, 34).unwrap();
    let on: Vec<usize> = a
        .iter()
        .enumerate()
        .filter(|(_, x)| **x)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(on, vec![0, 2, 33]);
    assert_eq!(parse_active_features(&f, 65), None);
}

#[test]
fn classic_offload_names() {
    let names: Vec<String> = [
        "tx-checksum-ipv4",
        "tx-checksum-ip-generic",
        "tx-tcp-segmentation",
        "tx-tcp6-segmentation",
        "rx-gro",
        "rx-lro",
        "",
        "rx-gro-hw",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let active = [false, true, false, true, true, false, true, false];
    let m = offloads_from_features(&names, &active);
    assert!(m["tx-checksumming"]);
    assert!(m["tcp-segmentation-offload"]);
    assert!(m["generic-receive-offload"]);
    assert!(!m["large-receive-offload"]);
    assert!(!m["rx-gro-hw"]);
    assert!(!m["tx-tcp-segmentation"]);
    // Classic names without any of their features are absent, as are empty names.
    assert!(!m.contains_key("scatter-gather") && !m.contains_key(""));
    assert_eq!(m.len(), 7 + 4);
}

#[test]
fn live_loopback() {
    let e = Ethtool::open().unwrap();
    assert_eq!(e.mtu("lo").unwrap(), 65536);
    // Loopback has no driver info, link settings, rings or statistics: None, not errors
    // (`ethtool -i lo`: "Operation not supported").
    assert_eq!(e.drvinfo("lo").unwrap(), None);
    assert_eq!(e.rings("lo").unwrap(), None);
    assert_eq!(e.stats("lo").unwrap(), None);
    assert_eq!(e.link("lo").unwrap(), None);
    // Features are generic: loopback has receive checksumming and GSO on.
    let k = e.offloads("lo").unwrap().unwrap();
    assert_eq!(k.get("rx-checksumming"), Some(&true), "{k:?}");
    assert_eq!(k.get("generic-segmentation-offload"), Some(&true));
    assert!(k.contains_key("tx-scatter-gather"));
    // A missing interface is an error naming it.
    let err = e.drvinfo("nosuch0").unwrap_err().to_string();
    assert!(
        err.contains("nosuch0") && err.contains("driver info"),
        "{err}"
    );
    assert!(e.mtu("bad/name").is_err());
}
