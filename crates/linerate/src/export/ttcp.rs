//! ttcp's output: the sending end's lines as `ttcp-t:` and the receiving end's as `ttcp-r:`.
//!
//! ```text
//! ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp  -> picard
//! ttcp-t: 16777216 bytes in 15.10 real seconds = 1085.36 KB/sec +++
//! ttcp-t: 2048 I/O calls, msec/call = 7.55, calls/sec = 135.67
//! ttcp-t: 0.0user 1.0sys 0:15real 7%
//! ```
//!
//! The arithmetic is ttcp's own, quirks included, so numbers compare with real ttcp runs:
//! * KB/sec = bytes / 1024 / seconds; Mbit/sec = bytes × 8 / 1024 / 1024 / seconds, and so
//!   on for ttcp's other `-f` units ([`TtcpUnit`]; ttcp's `outfmt` uses binary prefixes);
//! * msec/call = **1024** × seconds / calls (ttcp multiplies by 1024, not 1000; the table and
//!   JSON carry the true µs per call);
//! * user/sys are truncated to tenths, real prints as `m:ss` (`h:mm:ss` from an hour), and the
//!   percentage is (user + sys) / real in 10 ms ticks, truncated, as ttcp's `prusage`;
//! * a zero real time counts as 1 ms, as ttcp does.
//!
//! "real seconds" is that end's active time (window start to its last byte; for a sender the
//! end of the test stopped, to that stop, time blocked on a stalled path included), `buflen` the
//! write size, `nbuf` bytes / buflen, `port` the server's port, and `sockbufsize` is printed
//! only when a socket buffer was requested for that end (ttcp's `-b`). An end whose report is
//! missing prints no lines; an unmeasured CPU time prints as "-".
//!
//! "I/O calls" are system calls. A UDP end moves many datagrams per call (sendmmsg,
//! recvmmsg, GSO/GRO), where ttcp makes one call per datagram; [`call_notes`] says so with
//! the per-datagram figures, for stderr. After repeated runs [`average_lines`] adds one
//! line per end.

use super::{receiver_report, sender_report};
use crate::model::labels::split_host_port;
use crate::model::{FlowDirection, FlowSummary, RunRecord};
use linerate_wire::control::Transport;
use linerate_wire::report::{ProcessCpu, SideReport, StreamRole};

/// Unit of the throughput figure: ttcp's `-f` letters, binary prefixes as ttcp's `outfmt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtcpUnit {
    /// "Kbit/sec", 1 Kbit = 1024 bits (`-f k`).
    KBits,
    /// "KB/sec", 1 KB = 1024 bytes (ttcp's default, `-f K`).
    #[default]
    KBytes,
    /// "Mbit/sec", 1 Mbit = 1024 × 1024 bits (`-f m`).
    MBits,
    /// "MB/sec" (`-f M`).
    MBytes,
    /// "Gbit/sec", 1 Gbit = 1024³ bits (`-f g`).
    GBits,
    /// "GB/sec" (`-f G`).
    GBytes,
}

impl TtcpUnit {
    /// ttcp's `-f` letter: k, m, g (bits) or K, M, G (bytes).
    pub fn from_letter(s: &str) -> Option<TtcpUnit> {
        Some(match s {
            "k" => TtcpUnit::KBits,
            "K" => TtcpUnit::KBytes,
            "m" => TtcpUnit::MBits,
            "M" => TtcpUnit::MBytes,
            "g" => TtcpUnit::GBits,
            "G" => TtcpUnit::GBytes,
            _ => return None,
        })
    }

    /// `bytes` over `secs` as ttcp's `outfmt` prints it, with "/sec".
    fn rate(self, bytes: f64, secs: f64) -> String {
        let b = bytes / secs;
        let (v, name) = match self {
            TtcpUnit::KBits => (b / 1024.0 * 8.0, "Kbit"),
            TtcpUnit::KBytes => (b / 1024.0, "KB"),
            TtcpUnit::MBits => (b / 1024.0 / 1024.0 * 8.0, "Mbit"),
            TtcpUnit::MBytes => (b / 1024.0 / 1024.0, "MB"),
            TtcpUnit::GBits => (b / 1024.0 / 1024.0 / 1024.0 * 8.0, "Gbit"),
            TtcpUnit::GBytes => (b / 1024.0 / 1024.0 / 1024.0, "GB"),
        };
        format!("{v:.2} {name}/sec")
    }
}

/// ttcp lines in KB/sec.
pub fn render(rec: &RunRecord) -> String {
    render_with_unit(rec, TtcpUnit::KBytes)
}

/// ttcp lines with the throughput in `unit`.
pub fn render_with_unit(rec: &RunRecord, unit: TtcpUnit) -> String {
    ends(rec)
        .iter()
        .map(|(flow, end)| end.lines(rec, flow, unit))
        .collect()
}

/// Every end that reported, flow by flow: the sender (`ttcp-t`), then the receiver
/// (`ttcp-r`).
fn ends(rec: &RunRecord) -> Vec<(&FlowSummary, End<'_>)> {
    let mut out = Vec::new();
    for flow in &rec.summary.flows {
        if let Some(sender) = sender_report(rec, flow.direction) {
            let end = End {
                tag: "ttcp-t",
                report: sender,
                bytes: flow.sender_bytes,
                real_ns: flow.sender_duration_ns,
                calls: sender.totals.tx_calls,
                datagrams: sender.totals.tx_packets,
            };
            out.push((flow, end));
        }
        if let Some(receiver) = receiver_report(rec, flow.direction) {
            let end = End {
                tag: "ttcp-r",
                report: receiver,
                bytes: flow.receiver_bytes.unwrap_or(receiver.totals.rx_bytes),
                real_ns: flow
                    .receiver_duration_ns
                    .unwrap_or(receiver.totals.rx_duration_ns),
                calls: receiver.totals.rx_calls,
                datagrams: receiver.totals.rx_packets,
            };
            out.push((flow, end));
        }
    }
    out
}

/// After repeated runs, one line per end with the means over the runs:
/// `ttcp-t: average of 3 runs = 8.48 Mbit/sec, msec/call = 7.55, calls/sec = 135.67`.
/// The rate is the mean of each run's bytes ÷ real seconds; msec/call and calls/sec are
/// ttcp's figures averaged the same way. Ends are matched by position (flow, then sender
/// before receiver); a run without that end is left out of its mean.
pub fn average_lines(runs: &[RunRecord], unit: TtcpUnit) -> String {
    let per_run: Vec<Vec<(&FlowSummary, End<'_>)>> = runs.iter().map(ends).collect();
    let Some(shape) = per_run.first() else {
        return String::new();
    };
    let mut out = String::new();
    for (i, (_, e0)) in shape.iter().enumerate() {
        let same: Vec<&End<'_>> = per_run
            .iter()
            .filter_map(|r| r.get(i).map(|(_, e)| e))
            .filter(|e| e.tag == e0.tag)
            .collect();
        let n = same.len() as f64;
        // Bytes per second, msec/call and calls/sec of each run, as its own lines print them.
        let bps = same
            .iter()
            .map(|e| e.bytes as f64 / e.real_secs())
            .sum::<f64>()
            / n;
        // Each run's calls, when every run counted them (an iperf3 server does not).
        let calls: Option<Vec<(u64, f64)>> = same
            .iter()
            .map(|e| e.calls.map(|c| (c, e.real_secs())))
            .collect();
        let msec = calls
            .as_ref()
            .filter(|c| !c.is_empty() && c.iter().all(|(k, _)| *k > 0))
            .map(|c| {
                c.iter()
                    .map(|(k, real)| 1024.0 * real / *k as f64)
                    .sum::<f64>()
                    / n
            });
        let cps = calls
            .as_ref()
            .map(|c| c.iter().map(|(k, real)| *k as f64 / real).sum::<f64>() / n);
        out.push_str(&format!(
            "{}: average of {} runs = {}, msec/call = {}, calls/sec = {}\n",
            e0.tag,
            same.len(),
            unit.rate(bps, 1.0),
            msec.map_or("-".to_string(), |m| format!("{m:.2}")),
            cps.map_or("-".to_string(), |c| format!("{c:.2}")),
        ));
    }
    out
}

/// What ttcp's "I/O calls" means here, where it differs from ttcp: a UDP end moves many
/// datagrams per system call (sendmmsg/recvmmsg, GSO/GRO), while ttcp makes one call per
/// datagram. One line per such end, with the per-datagram figure ttcp's msec/call would
/// show; for stderr after the lines.
pub fn call_notes(rec: &RunRecord) -> Vec<String> {
    ends(rec)
        .iter()
        .filter_map(|(_, e)| {
            let d = e.datagrams?;
            let calls = e.calls?;
            if rec.plan.transport != Transport::Udp || calls == 0 || d <= calls {
                return None;
            }
            let real = e.real_secs();
            Some(format!(
                "{}: the {} I/O calls are system calls that carried {d} datagrams ({:.1} per \
                 call, sendmmsg/recvmmsg with GSO/GRO); ttcp makes one call per datagram, which \
                 would be msec/call = {:.4}, calls/sec = {:.2}",
                e.tag,
                calls,
                d as f64 / calls as f64,
                1024.0 * real / d as f64,
                d as f64 / real,
            ))
        })
        .collect()
}

/// One end of one flow, as ttcp would have reported it.
struct End<'a> {
    tag: &'static str,
    report: &'a SideReport,
    bytes: u64,
    real_ns: u64,
    /// I/O calls; absent when the end did not count them (an iperf3 server).
    calls: Option<u64>,
    /// Datagrams moved by those calls (UDP).
    datagrams: Option<u64>,
}

impl End<'_> {
    fn is_sender(&self) -> bool {
        self.tag == "ttcp-t"
    }

    /// Real seconds, a zero time counting as 1 ms as ttcp does (`if (realt <= 0.0) realt =
    /// 0.001`).
    fn real_secs(&self) -> f64 {
        if self.real_ns == 0 {
            0.001
        } else {
            self.real_ns as f64 / 1e9
        }
    }

    fn lines(&self, rec: &RunRecord, flow: &FlowSummary, unit: TtcpUnit) -> String {
        let tag = self.tag;
        let buflen = rec.plan.write_size;
        let nbuf = self.bytes.checked_div(u64::from(buflen)).unwrap_or(0);
        let (host, port) = split_host_port(&rec.plan.server);
        let port = port.unwrap_or("-");
        let proto = match rec.plan.transport {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Quic => "quic",
        };
        let mut first = format!("{tag}: buflen={buflen}, nbuf={nbuf}, align=16384/0, port={port}");
        if let Some(size) = self.requested_sockbuf(rec, flow.direction) {
            first.push_str(&format!(", sockbufsize={size}"));
        }
        if self.is_sender() {
            let dest = match flow.direction {
                FlowDirection::ClientToServer => host.to_string(),
                FlowDirection::ServerToClient => self.peer_host(rec),
            };
            first.push_str(&format!("  {proto}  -> {dest}\n"));
        } else {
            first.push_str(&format!("  {proto}\n"));
        }

        let real = self.real_secs();
        let rate = unit.rate(self.bytes as f64, real);
        let msec_per_call = match self.calls {
            Some(n) if n > 0 => format!("{:.2}", 1024.0 * real / n as f64),
            _ => "-".to_string(),
        };
        let (calls, per_sec) = match self.calls {
            Some(n) => (n.to_string(), format!("{:.2}", n as f64 / real)),
            None => ("-".to_string(), "-".to_string()),
        };
        format!(
            "{first}\
             {tag}: {} bytes in {real:.2} real seconds = {rate} +++\n\
             {tag}: {calls} I/O calls, msec/call = {msec_per_call}, calls/sec = {per_sec}\n\
             {tag}: {}\n",
            self.bytes,
            prusage(self.report.process_cpu.as_ref(), self.real_ns),
        )
    }

    /// The socket buffer the user asked for on this end (ttcp's `-b`), if any.
    fn requested_sockbuf(&self, rec: &RunRecord, dir: FlowDirection) -> Option<u32> {
        let p = &rec.plan;
        match (dir, self.is_sender()) {
            (FlowDirection::ClientToServer, true) => p.local_sndbuf,
            (FlowDirection::ClientToServer, false) => p.remote_rcvbuf,
            (FlowDirection::ServerToClient, true) => p.remote_sndbuf,
            (FlowDirection::ServerToClient, false) => p.local_rcvbuf,
        }
    }

    /// Where a server-side sender's data went: the peer of its first sending stream, else the
    /// client's host name.
    fn peer_host(&self, rec: &RunRecord) -> String {
        self.report
            .streams
            .iter()
            .find(|s| s.role == StreamRole::Tx)
            .and_then(|s| s.remote_addr.as_deref())
            .map(|addr| split_host_port(addr).0.to_string())
            .or_else(|| rec.client.host.hostname.clone())
            .unwrap_or_else(|| "client".to_string())
    }
}

/// ttcp's `prusage` with the format "%Uuser %Ssys %Ereal %P".
fn prusage(cpu: Option<&ProcessCpu>, real_ns: u64) -> String {
    let real = psecs(real_ns / 1_000_000_000);
    let Some(cpu) = cpu else {
        return format!("-user -sys {real}real -%");
    };
    let tenths = |ns: u64| {
        format!(
            "{}.{}",
            ns / 1_000_000_000,
            ns % 1_000_000_000 / 100_000_000
        )
    };
    // CPU and real time in 10 ms ticks, each truncated, as ttcp computes them.
    let ticks = cpu.user_ns / 10_000_000 + cpu.system_ns / 10_000_000;
    let real_ticks = (real_ns / 10_000_000).max(1);
    format!(
        "{}user {}sys {real}real {}%",
        tenths(cpu.user_ns),
        tenths(cpu.system_ns),
        ticks * 100 / real_ticks
    )
}

/// ttcp's `psecs`: "m:ss", or "h:mm:ss" from one hour.
fn psecs(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{}:{s:02}", secs / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    #[test]
    fn reproduces_seed_002_in_mbit() {
        // Seed 002, first run. 16,777,216 B over 15.0954 s:
        // × 8 / 1024² / 15.0954 = 8.48 Mbit/sec; 1024 × 15.0954 / 2048 = 7.55 msec/call;
        // 2048 / 15.0954 = 135.67 calls/sec; sys 1.06 s → "1.0sys"; (0.04 + 1.06) s = 110
        // ticks, 110 × 100 / 1509 ticks = 7%.
        // Receiver: 11,000 reads in 15.10 s: 1024 × 15.10 / 11000 = 1.41 msec/call,
        // 728.48 calls/sec; (2 + 51) ticks × 100 / 1510 = 3%.
        let expected = "\
ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp  -> picard
ttcp-t: 16777216 bytes in 15.10 real seconds = 8.48 Mbit/sec +++
ttcp-t: 2048 I/O calls, msec/call = 7.55, calls/sec = 135.67
ttcp-t: 0.0user 1.0sys 0:15real 7%
ttcp-r: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp
ttcp-r: 16777216 bytes in 15.10 real seconds = 8.48 Mbit/sec +++
ttcp-r: 11000 I/O calls, msec/call = 1.41, calls/sec = 728.48
ttcp-r: 0.0user 0.5sys 0:15real 3%
";
        assert_eq!(
            render_with_unit(&fixtures::ttcp_seed(), TtcpUnit::MBits),
            expected
        );
    }

    #[test]
    fn default_unit_is_kbytes() {
        // 16,777,216 / 1024 / 15.0954 = 1085.36; / 15.10 = 1085.03.
        let out = render(&fixtures::ttcp_seed());
        assert!(out.contains("ttcp-t: 16777216 bytes in 15.10 real seconds = 1085.36 KB/sec +++\n"));
        assert!(out.contains("ttcp-r: 16777216 bytes in 15.10 real seconds = 1085.03 KB/sec +++\n"));
    }

    #[test]
    fn udp_receive_and_sockbufsize() {
        // Server→client UDP: the server writes (ttcp-t, to the client's host name), the
        // client reads (ttcp-r, with its requested receive buffer).
        let mut rec = fixtures::udp_send();
        rec.plan.direction = linerate_wire::control::Direction::Receive;
        rec.plan.local_rcvbuf = Some(262_144);
        rec.summary.flows[0].direction = FlowDirection::ServerToClient;
        std::mem::swap(
            &mut rec.client.totals,
            &mut rec.server.as_mut().unwrap().totals,
        );
        let out = render(&rec);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 8);
        assert_eq!(
            lines[0],
            "ttcp-t: buflen=1400, nbuf=1000000, align=16384/0, port=5201  udp  -> tx-host"
        );
        assert_eq!(
            lines[4],
            "ttcp-r: buflen=1400, nbuf=990050, align=16384/0, port=5201, sockbufsize=262144  udp"
        );
        // The server's thread CPU was not measured in this fixture.
        assert_eq!(lines[3], "ttcp-t: -user -sys 0:10real -%");
    }

    #[test]
    fn missing_server_prints_only_the_sender() {
        // 5e9 B / 1024 / 5 s = 976562.50 KB/sec; 1024 × 5 / 38147 = 0.13 msec/call.
        let expected = "\
ttcp-t: buflen=131072, nbuf=38146, align=16384/0, port=5201  tcp  -> example.net
ttcp-t: 5000000000 bytes in 5.00 real seconds = 976562.50 KB/sec +++
ttcp-t: 38147 I/O calls, msec/call = 0.13, calls/sec = 7629.40
ttcp-t: -user -sys 0:05real -%
";
        assert_eq!(render(&fixtures::no_server()), expected);
    }

    #[test]
    fn real_time_formats_like_psecs() {
        assert_eq!(psecs(0), "0:00");
        assert_eq!(psecs(15), "0:15");
        assert_eq!(psecs(75), "1:15");
        assert_eq!(psecs(3725), "1:02:05");
    }

    #[test]
    fn every_ttcp_unit_letter() {
        // 16,777,216 B / 15.0954 s = 1,111,414.6 B/s.
        let rec = fixtures::ttcp_seed();
        let line = |u: &str| {
            render_with_unit(&rec, TtcpUnit::from_letter(u).unwrap())
                .lines()
                .nth(1)
                .unwrap()
                .to_string()
        };
        // × 8 / 1024 = 8682.91 Kbit; / 1024 = 1085.36 KB; each as ttcp's outfmt.
        assert!(
            line("k").ends_with("= 8682.91 Kbit/sec +++"),
            "{}",
            line("k")
        );
        assert!(line("K").ends_with("= 1085.36 KB/sec +++"), "{}", line("K"));
        assert!(line("m").ends_with("= 8.48 Mbit/sec +++"), "{}", line("m"));
        assert!(line("M").ends_with("= 1.06 MB/sec +++"), "{}", line("M"));
        assert!(line("g").ends_with("= 0.01 Gbit/sec +++"), "{}", line("g"));
        assert!(line("G").ends_with("= 0.00 GB/sec +++"), "{}", line("G"));
        assert_eq!(TtcpUnit::from_letter("x"), None);
    }

    #[test]
    fn average_line_per_end_after_repeats() {
        let rec = fixtures::ttcp_seed();
        let out = average_lines(&[rec.clone(), rec.clone()], TtcpUnit::MBits);
        assert_eq!(
            out,
            "ttcp-t: average of 2 runs = 8.48 Mbit/sec, msec/call = 7.55, calls/sec = 135.67\n\
             ttcp-r: average of 2 runs = 8.48 Mbit/sec, msec/call = 1.41, calls/sec = 728.48\n"
        );
    }

    /// An end that did not count its calls (an iperf3 server) shows none, not 0 and not a
    /// rate made of 0.
    #[test]
    fn uncounted_calls_are_dashes() {
        let mut rec = fixtures::ttcp_seed();
        if let Some(s) = rec.server.as_mut() {
            s.totals.tx_calls = None;
            s.totals.rx_calls = None;
        }
        let out = render(&rec);
        assert!(
            out.contains("ttcp-r: - I/O calls, msec/call = -, calls/sec = -\n"),
            "{out}"
        );
        assert!(out.contains("ttcp-t: 2048 I/O calls"), "{out}");
        let avg = average_lines(&[rec.clone(), rec], TtcpUnit::MBits);
        assert!(
            avg.contains(
                "ttcp-r: average of 2 runs = 8.48 Mbit/sec, msec/call = -, calls/sec = -\n"
            ),
            "{avg}"
        );
    }

    #[test]
    fn udp_io_calls_are_explained() {
        // The UDP fixture: 1,000,000 datagrams; make them 15,625 sendmmsg calls of 64.
        let mut rec = fixtures::udp_send();
        rec.client.totals.tx_calls = Some(15_625);
        let notes = call_notes(&rec);
        let t = notes.iter().find(|n| n.starts_with("ttcp-t:")).unwrap();
        assert!(
            t.starts_with(
                "ttcp-t: the 15625 I/O calls are system calls that carried 1000000 datagrams \
                 (64.0 per call"
            ),
            "{t}"
        );
        // A TCP run has nothing to explain.
        assert!(call_notes(&fixtures::ttcp_seed()).is_empty());
    }
}
