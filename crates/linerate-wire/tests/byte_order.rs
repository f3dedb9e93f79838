//! Every binary wire format, as golden bytes: the same bytes on every host. These run on
//! the big-endian 32-bit PowerPC target too (scripts/test.sh, "big-endian wire tests":
//! `cargo test -p linerate-wire --target powerpc-unknown-linux-gnu` under qemu-ppc-static),
//! so a field written or read in the host's order instead of the format's would fail there
//! or here. Network formats are big-endian; the pcap files `--capture` writes are
//! little-endian (their magic says so to every reader).

use linerate_wire::capture::{pcap_file_header, pcap_record_header};
use linerate_wire::control::frame::{FrameHeader, MAX_CONTROL_FRAME};
use linerate_wire::iperf3::{json_len, server_error, UdpHeader};
use linerate_wire::probe::Probe;
use linerate_wire::stream_hello::StreamHello;

#[test]
fn control_frame_header_length_is_big_endian() {
    let golden = [b'L', b'R', 1, 0, 0x00, 0x01, 0x02, 0x03];
    let mut buf = [0u8; 8];
    FrameHeader { len: 0x0001_0203 }.emit(&mut buf);
    assert_eq!(buf, golden);
    assert_eq!(
        FrameHeader::parse(&golden, MAX_CONTROL_FRAME).map(|h| h.len),
        Ok(0x0001_0203)
    );
}

#[test]
fn stream_hello_index_is_big_endian() {
    let mut token = [0u8; 16];
    for (i, b) in token.iter_mut().enumerate() {
        *b = i as u8;
    }
    let hello = StreamHello {
        token,
        stream_index: 0x0102,
    };
    let mut golden = b"LRD1".to_vec();
    golden.extend_from_slice(&token);
    golden.extend_from_slice(&[0x01, 0x02, 0, 0]);
    assert_eq!(hello.to_bytes().to_vec(), golden);
    assert_eq!(StreamHello::parse(&golden), Ok(hello));
}

#[test]
fn udp_probe_header_is_big_endian() {
    let probe = Probe {
        seq: 0x0102_0304_0506_0708,
        tx_ns: 0x1112_1314_1516_1718,
    };
    let golden = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
        0x18,
    ];
    let mut buf = [0u8; 16];
    probe.emit(&mut buf);
    assert_eq!(buf, golden);
    assert_eq!(Probe::parse(&golden), Ok(probe));
}

#[test]
fn iperf3_udp_headers_are_big_endian() {
    let h = UdpHeader {
        sec: 0x0102_0304,
        usec: 0x0005_0607,
        seq: 0x0809_0a0b,
    };
    let golden32 = [1, 2, 3, 4, 0, 5, 6, 7, 8, 9, 0x0a, 0x0b];
    let mut buf = [0u8; 12];
    h.emit(&mut buf, false);
    assert_eq!(buf, golden32);
    assert_eq!(UdpHeader::parse(&golden32, false), Ok(h));

    let h64 = UdpHeader {
        seq: 0x0c0d_0e0f_1011_1213,
        ..h
    };
    let golden64 = [
        1, 2, 3, 4, 0, 5, 6, 7, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13,
    ];
    let mut buf = [0u8; 16];
    h64.emit(&mut buf, true);
    assert_eq!(buf, golden64);
    assert_eq!(UdpHeader::parse(&golden64, true), Ok(h64));
}

#[test]
fn iperf3_json_length_and_error_codes_are_big_endian() {
    assert_eq!(json_len([0, 0, 0x01, 0x02], 8192), Ok(0x0102));
    let e = server_error(0x0102_0304, 0x0506_0708);
    assert_eq!(e[1..], [1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn pcap_headers_are_little_endian_on_every_host() {
    let h = pcap_file_header(0x0001_0203, 0x0000_0114);
    assert_eq!(
        h,
        [
            0x4d, 0x3c, 0xb2, 0xa1, // nanosecond magic, little-endian
            2, 0, 4, 0, // version 2.4
            0, 0, 0, 0, 0, 0, 0, 0, // thiszone, sigfigs
            0x03, 0x02, 0x01, 0x00, // snaplen
            0x14, 0x01, 0, 0, // link type 276 (Linux SLL2)
        ]
    );
    let r = pcap_record_header(3_000_000_123, 0x0102, 0x0506);
    assert_eq!(
        r,
        [3, 0, 0, 0, 123, 0, 0, 0, 0x02, 0x01, 0, 0, 0x06, 0x05, 0, 0]
    );
}
