//! `--zerocopy`, `--sendfile` and `--no-rx-copy` end to end on loopback: every mode in every
//! direction moves exactly the bytes it claims, the stream reports say which mode each end
//! used, every `MSG_ZEROCOPY` send is accounted for by a completion, and strace (the system
//! calls as the kernel saw them) witnesses that the copy-free calls were really made.

use linerate_wire::control::{Direction, RecvMode, SendMode, Transport};
use linerate_wire::report::{SideReport, StreamRole};

use crate::common::{plan, run, run_usage_error, spec, TestServer};

const BYTES: u64 = 24 << 20;

fn modes_of(side: &SideReport) -> Vec<(StreamRole, Option<SendMode>, Option<RecvMode>)> {
    side.streams
        .iter()
        .map(|s| (s.role, s.send_mode, s.recv_mode))
        .collect()
}

#[test]
fn every_mode_in_every_direction_moves_the_bytes_it_claims() {
    let srv = TestServer::start();
    for dir in [Direction::Send, Direction::Receive, Direction::Both] {
        for (send, recv) in [
            (SendMode::Zerocopy, RecvMode::Copy),
            (SendMode::Sendfile, RecvMode::Copy),
            (SendMode::Copy, RecvMode::Trunc),
            (SendMode::Zerocopy, RecvMode::Trunc),
        ] {
            let mut s = spec(Transport::Tcp, dir);
            s.duration_ms = None;
            s.bytes = Some(BYTES);
            s.streams = 2;
            s.send_mode = send;
            s.recv_mode = recv;
            let rec = run(&plan(srv.addr, s));
            let what = format!("{dir:?} {send:?} {recv:?}");
            assert!(!rec.interrupted, "{what}");
            let server = rec.server.as_ref().expect("server report");
            assert_eq!(
                rec.summary.flows.len(),
                if dir == Direction::Both { 2 } else { 1 }
            );
            for f in &rec.summary.flows {
                // The receiver's count equals the sender's, and both the byte count asked.
                assert_eq!(f.sender_bytes, BYTES, "{what}");
                assert_eq!(f.receiver_bytes, Some(BYTES), "{what}");
            }
            assert_eq!((rec.plan.send_mode, rec.plan.recv_mode), (send, recv));
            for side in [&rec.client, server] {
                for (role, sm, rm) in modes_of(side) {
                    match role {
                        StreamRole::Tx => assert_eq!((sm, rm), (Some(send), None), "{what}"),
                        StreamRole::Rx => assert_eq!((sm, rm), (None, Some(recv)), "{what}"),
                    }
                }
                for st in side.streams.iter().filter(|s| s.role == StreamRole::Tx) {
                    let zc = st.zerocopy;
                    if send != SendMode::Zerocopy {
                        assert_eq!(zc, None, "{what}");
                        continue;
                    }
                    let zc = zc.expect("zero-copy completions");
                    // Every send that took bytes was numbered, and every one completed.
                    assert_eq!(Some(zc.sends), st.io_calls, "{what}: {zc:?}");
                    assert_eq!(zc.completed, zc.sends, "{what}: {zc:?}");
                    assert_eq!(zc.outstanding, 0, "{what}: {zc:?}");
                    assert!(zc.notifications >= 1 && zc.notifications <= zc.sends);
                    // Loopback delivers to a local socket: the kernel always copies then
                    // (Documentation/networking/msg_zerocopy.rst, "Loopback").
                    assert_eq!(zc.copied, zc.completed, "{what}: {zc:?}");
                    assert_eq!(zc.zero_copied(), 0);
                }
            }
        }
    }
}

/// The copy-free system calls as strace saw them (arguments, flags and return values decoded
/// by the kernel's tracer, not by linerate): their byte counts add up to the record's.
#[test]
fn strace_witnesses_the_copy_free_calls() {
    let srv = TestServer::start();
    let (host, port) = (srv.addr.ip().to_string(), srv.addr.port().to_string());
    let n = "8M";
    let cases: [(&str, &[&str], &str); 3] = [
        ("--zerocopy", &[], "sendto"),
        ("--sendfile", &[], "sendfile"),
        ("--no-rx-copy", &["-R"], "recvfrom"),
    ];
    for (flag, extra, call) in cases {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("strace.log");
        // -ff: one file per thread (log.TID), so that no call is split into
        // "<unfinished ...>" and "<... resumed>" lines by another thread's.
        let mut args = vec![
            "-ff".to_string(),
            "-qq".into(),
            "-e".into(),
            format!("trace={call}"),
            "-e".into(),
            "signal=none".into(),
            "-o".into(),
            log.display().to_string(),
            env!("CARGO_BIN_EXE_linerate").into(),
            "tcp".into(),
            host.clone(),
            "-p".into(),
            port.clone(),
            "-n".into(),
            n.into(),
            "-l".into(),
            "64K".into(),
            flag.into(),
            "--json".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = std::process::Command::new("strace")
            .args(&args)
            .env("LINERATE_NO_STORE", "1")
            .output()
            .expect("strace (apt-get install strace; scripts/test.sh installs it)");
        assert!(
            out.status.success(),
            "{flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut text = String::new();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let path = e.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("strace.log.")
            {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
        assert!(
            !text.contains("unfinished ..."),
            "{flag}: a split call\n{text:.2000}"
        );
        // Lines such as `123 sendto(5, "\0\1..."..., 65536, MSG_NOSIGNAL|MSG_ZEROCOPY, NULL, 0) = 65536`.
        let mut calls = 0u64;
        let mut bytes = 0u64;
        for l in text.lines().filter(|l| l.contains(&format!("{call}("))) {
            // The data calls ask for the write size (64 KiB); the kernel check that runs
            // before the test (`sys::zerocopy::check_support`) moves 16 bytes.
            let data = l.contains(", 65536,") || l.contains(", 65536)");
            let ok = data
                && match flag {
                    "--zerocopy" => l.contains("MSG_ZEROCOPY"),
                    "--sendfile" => true,
                    _ => l.contains("MSG_TRUNC") && l.contains("NULL, "),
                };
            let Some(ret) = l
                .rsplit(" = ")
                .next()
                .and_then(|r| r.split_whitespace().next())
            else {
                continue;
            };
            if let (true, Ok(v)) = (ok, ret.parse::<u64>()) {
                if v > 0 {
                    calls += 1;
                    bytes += v;
                }
            }
        }
        // The client's one stream: the sender, or with -R the receiver.
        let st = &rec["client"]["streams"][0];
        assert_eq!(
            bytes,
            8 << 20,
            "{flag}: strace saw {calls} calls, {bytes} bytes\n{text:.2000}"
        );
        assert_eq!(st["bytes"].as_u64(), Some(8 << 20), "{flag}");
        assert_eq!(st["io_calls"].as_u64(), Some(calls), "{flag}");
        if flag == "--zerocopy" {
            assert_eq!(st["zerocopy"]["sends"].as_u64(), Some(calls));
            assert_eq!(st["zerocopy"]["completed"].as_u64(), Some(calls));
        }
    }
}

#[test]
fn nonsense_combinations_are_refused_in_one_line() {
    for args in [
        &["udp", "127.0.0.1", "--zerocopy"][..],
        &["udp", "127.0.0.1", "--sendfile"],
        &["udp", "127.0.0.1", "--no-rx-copy"],
        &["tcp", "127.0.0.1", "--zerocopy", "--sendfile"],
    ] {
        let e = run_usage_error(args);
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("linerate: error: --"), "{args:?}: {e}");
    }
}
