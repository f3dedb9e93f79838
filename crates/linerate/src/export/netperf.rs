//! netperf's classic ("MIGRATED" omni, netperf 2.6/2.7) output, so that scripts written for
//! netperf keep working.
//!
//! The layouts are netperf's own `printf` formats (src/nettest_omni.c, `send_tcp_stream`,
//! `send_tcp_maerts`, `send_udp_stream`), reproduced column for column, trailing blanks
//! included: TCP rows end in netperf's `" %s\n"` with an empty result brand.
//!
//! * TCP client→server: TCP_STREAM with both CPU columns (`-c -C` shape) always.
//! * TCP server→client: TCP_MAERTS, "Recv Socket" local (client rcvbuf), "Send Socket" remote
//!   (server sndbuf), Utilization/Service Demand headed "Recv local / Send remote".
//! * UDP: UDP_STREAM's two rows, sender first and receiver second; CPU columns only when an end
//!   measured CPU. Server→client UDP has no netperf test; it prints the same table with the
//!   server as sender, and the banner says so ("from HOST ... to 0.0.0.0").
//! * Both directions: one table per direction, client→server first.
//!
//! Unmeasured values use netperf's own placeholders: -1.00 utilisation, -1.000 service demand,
//! -1 for a socket size or count that is unknown. The UDP "Errors" column counts sends that
//! failed: netperf gives up such a datagram (ENOBUFS), linerate's sender retries it until the
//! kernel takes it, so none fails and the column is 0 (-1 without the sender's report).
//! Repeated runs (`--repeat`, `--confidence`) print one table of means, as netperf `-i`/`-I`
//! does ([`render_average`]). Throughput is receiver bytes × 8 / elapsed; when the
//! receiver's report is missing it falls back to the sender's bytes, as netperf does without a
//! remote result. Elapsed is the client's measured window. Warnings are not printed here.

use super::{receiver_end, receiver_report, sender_end, sender_report};
use crate::model::labels::split_host_port;
use crate::model::{EndSummary, FlowDirection, FlowSummary, RunRecord};
use linerate_wire::control::Transport;

/// netperf's CPU method letter for /proc/stat ("S"), which is how linerate measures CPU.
const CPU_METHOD: char = 'S';

const TCP_STREAM_TITLE: &str = "\
Recv   Send    Send                          Utilization       Service Demand
Socket Socket  Message  Elapsed              Send     Recv     Send    Recv
Size   Size    Size     Time     Throughput  local    remote   local   remote
";

const TCP_MAERTS_TITLE: &str = "\
Recv   Send    Send                          Utilization       Service Demand
Socket Socket  Message  Elapsed              Recv     Send     Recv    Send
Size   Size    Size     Time     Throughput  local    remote   local   remote
";

const UDP_TPUT_TITLE: &str = "\
Socket  Message  Elapsed      Messages                
Size    Size     Time         Okay Errors   Throughput
bytes   bytes    secs            #      #   10^6bits/sec

";

const UDP_CPU_TITLE: &str = "\
Socket  Message  Elapsed      Messages                   CPU      Service
Size    Size     Time         Okay Errors   Throughput   Util     Demand
";

/// Renders one netperf table per flow.
pub fn render(rec: &RunRecord) -> String {
    if let Some(rr) = &rec.rr {
        return super::rr::netperf(rec, rr);
    }
    blocks(rec).iter().map(Block::text).collect()
}

/// One netperf table per flow, as numbers (placeholders already applied).
pub(crate) fn blocks(rec: &RunRecord) -> Vec<Block> {
    rec.summary
        .flows
        .iter()
        .map(|flow| match (rec.plan.transport, flow.direction) {
            // QUIC streams are byte streams too: netperf's TCP blocks, which carry no
            // TCP-only figure.
            (Transport::Tcp | Transport::Quic, FlowDirection::ClientToServer) => {
                tcp_stream(rec, flow)
            }
            (Transport::Tcp | Transport::Quic, FlowDirection::ServerToClient) => {
                tcp_maerts(rec, flow)
            }
            (Transport::Udp, _) => udp_stream(rec, flow),
        })
        .collect()
}

/// The one table netperf `-i`/`-I` prints for repeated runs: every figure is the mean over
/// the runs, netperf's placeholder when any run did not measure it; socket and message
/// sizes are the first run's. Runs whose tables differ in shape (another transport or
/// direction) are left out of the mean. RR runs: [`super::rr::netperf_average`]. `None`
/// without runs.
pub fn render_average(runs: &[RunRecord]) -> Option<String> {
    let first = runs.first()?;
    if first.rr.is_some() {
        return super::rr::netperf_average(runs);
    }
    let per_run: Vec<Vec<Block>> = runs.iter().map(blocks).collect();
    let shape = &per_run[0];
    let mut out = String::new();
    for (i, b) in shape.iter().enumerate() {
        let same: Vec<&Block> = per_run
            .iter()
            .filter_map(|bs| bs.get(i))
            .filter(|o| o.same_shape(b))
            .collect();
        out.push_str(&Block::average(b, &same).text());
    }
    Some(out)
}

/// One netperf table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Tcp(TcpBlock),
    Udp(UdpBlock),
}

/// TCP_STREAM or TCP_MAERTS.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TcpBlock {
    banner: String,
    maerts: bool,
    recv_size: i64,
    send_size: i64,
    message: u32,
    elapsed: f64,
    tput: f64,
    local_util: f64,
    remote_util: f64,
    local_sd: f64,
    remote_sd: f64,
}

/// UDP_STREAM's two rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UdpBlock {
    banner: String,
    tx_socket: i64,
    message: u32,
    elapsed: f64,
    tx_msgs: i128,
    errors: i64,
    tx_tput: f64,
    rx_socket: i64,
    rx_msgs: i128,
    rx_tput: f64,
    /// (sender util, sender SD, receiver util, receiver SD) when an end measured CPU.
    cpu: Option<[f64; 4]>,
}

/// Mean of figures where every one is measured (netperf's placeholders are negative), else
/// the placeholder -1.
fn mean_or_unknown(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = v.clone().count();
    if n == 0 || v.clone().any(|x| x < 0.0) {
        return -1.0;
    }
    v.sum::<f64>() / n as f64
}

fn mean_count(v: impl Iterator<Item = i128> + Clone) -> i128 {
    let n = v.clone().count() as i128;
    if n == 0 || v.clone().any(|x| x < 0) {
        return -1;
    }
    (v.sum::<i128>() + n / 2) / n
}

impl Block {
    fn same_shape(&self, other: &Block) -> bool {
        match (self, other) {
            (Block::Tcp(a), Block::Tcp(b)) => a.maerts == b.maerts,
            (Block::Udp(a), Block::Udp(b)) => {
                a.banner == b.banner && a.cpu.is_some() == b.cpu.is_some()
            }
            _ => false,
        }
    }

    /// The mean of `blocks` (all of `first`'s shape), with `first`'s sizes and banner.
    fn average(first: &Block, blocks: &[&Block]) -> Block {
        match first {
            Block::Tcp(t) => {
                let all: Vec<&TcpBlock> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Tcp(t) => Some(t),
                        Block::Udp(_) => None,
                    })
                    .collect();
                let m = |f: fn(&TcpBlock) -> f64| mean_or_unknown(all.iter().map(|t| f(t)));
                Block::Tcp(TcpBlock {
                    elapsed: m(|t| t.elapsed),
                    tput: m(|t| t.tput),
                    local_util: m(|t| t.local_util),
                    remote_util: m(|t| t.remote_util),
                    local_sd: m(|t| t.local_sd),
                    remote_sd: m(|t| t.remote_sd),
                    ..t.clone()
                })
            }
            Block::Udp(u) => {
                let all: Vec<&UdpBlock> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Udp(u) => Some(u),
                        Block::Tcp(_) => None,
                    })
                    .collect();
                let m = |f: fn(&UdpBlock) -> f64| mean_or_unknown(all.iter().map(|u| f(u)));
                let c = |f: fn(&UdpBlock) -> i128| mean_count(all.iter().map(|u| f(u)));
                let cpu = u.cpu.map(|_| {
                    let k = |i: usize| {
                        mean_or_unknown(all.iter().map(move |u| u.cpu.map_or(-1.0, |c| c[i])))
                    };
                    [k(0), k(1), k(2), k(3)]
                });
                Block::Udp(UdpBlock {
                    elapsed: m(|u| u.elapsed),
                    tx_msgs: c(|u| u.tx_msgs),
                    errors: i64::try_from(c(|u| i128::from(u.errors))).unwrap_or(-1),
                    tx_tput: m(|u| u.tx_tput),
                    rx_msgs: c(|u| u.rx_msgs),
                    rx_tput: m(|u| u.rx_tput),
                    cpu,
                    ..u.clone()
                })
            }
        }
    }

    /// The table as netperf prints it.
    pub(crate) fn text(&self) -> String {
        match self {
            Block::Tcp(t) => {
                let mut out = t.banner.clone();
                out.push_str(if t.maerts {
                    TCP_MAERTS_TITLE
                } else {
                    TCP_STREAM_TITLE
                });
                out.push_str(&tcp_units_line());
                out.push_str(&tcp_row(t));
                out
            }
            Block::Udp(u) => udp_text(u),
        }
    }
}

/// "MIGRATED <TEST> from 0.0.0.0 (0.0.0.0) port 0 AF_INET to HOST () port 0 AF_INET".
fn banner(rec: &RunRecord, test: &str, toward_server: bool) -> String {
    let (host, _) = split_host_port(&rec.plan.server);
    let v6 = host.parse::<std::net::Ipv6Addr>().is_ok();
    let (any, family) = if v6 {
        ("::", "AF_INET6")
    } else {
        ("0.0.0.0", "AF_INET")
    };
    let local = format!("{any} ({any}) port 0 {family}");
    let remote = format!("{host} () port 0 {family}");
    if toward_server {
        format!("MIGRATED {test} TEST from {local} to {remote}\n")
    } else {
        format!("MIGRATED {test} TEST from {remote} to {local}\n")
    }
}

/// Elapsed seconds: the client's measured window.
fn elapsed_secs(rec: &RunRecord) -> f64 {
    rec.summary.client.duration_ns as f64 / 1e9
}

/// 10^6 bits/s for `bytes` over `secs`, or -1 when the time is zero.
fn mbps(bytes: Option<u64>, secs: f64) -> f64 {
    match bytes {
        Some(b) if secs > 0.0 => b as f64 * 8.0 / secs / 1e6,
        _ => -1.0,
    }
}

fn util(end: Option<&EndSummary>) -> f64 {
    end.and_then(|e| e.cpu_util_percent).unwrap_or(-1.0)
}

fn demand(end: Option<&EndSummary>) -> f64 {
    end.and_then(|e| e.service_demand_us_per_kb).unwrap_or(-1.0)
}

fn size(v: Option<u32>) -> i64 {
    v.map_or(-1, i64::from)
}

/// Receiver bytes, or the sender's when the receiver did not report.
fn flow_bytes(rec: &RunRecord, flow: &FlowSummary) -> Option<u64> {
    flow.receiver_bytes
        .or_else(|| sender_report(rec, flow.direction).map(|_| flow.sender_bytes))
}

/// netperf: `"%6d %6d %6d    %-6.2f     %7.2f   %-6.2f   %-6.2f   %-6.3f  %-6.3f %s\n"`.
fn tcp_row(t: &TcpBlock) -> String {
    format!(
        "{:>6} {:>6} {:>6}    {:<6.2}     {:>7.2}   {:<6.2}   {:<6.2}   {:<6.3}  {:<6.3} \n",
        t.recv_size,
        t.send_size,
        t.message,
        t.elapsed,
        t.tput,
        t.local_util,
        t.remote_util,
        t.local_sd,
        t.remote_sd
    )
}

fn tcp_units_line() -> String {
    format!(
        "bytes  bytes   bytes    secs.    10^6bits/s  % {CPU_METHOD}      % {CPU_METHOD}      \
         us/KB   us/KB\n\n"
    )
}

fn tcp_stream(rec: &RunRecord, flow: &FlowSummary) -> Block {
    let client = Some(&rec.summary.client);
    let server = rec.summary.server.as_ref();
    let elapsed = elapsed_secs(rec);
    Block::Tcp(TcpBlock {
        banner: banner(rec, "TCP STREAM", true),
        maerts: false,
        recv_size: size(server.and_then(|s| s.rcvbuf_bytes)),
        send_size: size(rec.summary.client.sndbuf_bytes),
        message: rec.plan.write_size,
        elapsed,
        tput: mbps(flow_bytes(rec, flow), elapsed),
        local_util: util(client),
        remote_util: util(server),
        local_sd: demand(client),
        remote_sd: demand(server),
    })
}

fn tcp_maerts(rec: &RunRecord, flow: &FlowSummary) -> Block {
    let client = Some(&rec.summary.client);
    let server = rec.summary.server.as_ref();
    let elapsed = elapsed_secs(rec);
    Block::Tcp(TcpBlock {
        banner: banner(rec, "TCP MAERTS", true),
        maerts: true,
        recv_size: size(rec.summary.client.rcvbuf_bytes),
        send_size: size(server.and_then(|s| s.sndbuf_bytes)),
        message: rec.plan.write_size,
        elapsed,
        tput: mbps(flow_bytes(rec, flow), elapsed),
        local_util: util(client),
        remote_util: util(server),
        local_sd: demand(client),
        remote_sd: demand(server),
    })
}

fn udp_stream(rec: &RunRecord, flow: &FlowSummary) -> Block {
    let dir = flow.direction;
    let (tx_end, rx_end) = (sender_end(rec, dir), receiver_end(rec, dir));
    let tx_report = sender_report(rec, dir);
    let rx_report = receiver_report(rec, dir);
    let elapsed = elapsed_secs(rec);
    let measured = [tx_end, rx_end]
        .iter()
        .any(|e| e.is_some_and(|e| e.cpu_util_percent.is_some()));
    Block::Udp(UdpBlock {
        banner: banner(rec, "UDP STREAM", dir == FlowDirection::ClientToServer),
        tx_socket: size(tx_end.and_then(|e| e.sndbuf_bytes)),
        message: rec.plan.write_size,
        elapsed,
        tx_msgs: count(tx_report.and_then(|r| r.totals.tx_packets)),
        // netperf counts sends that failed (ENOBUFS) and moves on; linerate's sender retries
        // them until the kernel takes the datagram, so no message fails: 0 when the sender
        // reported, netperf's -1 when it did not.
        errors: if tx_report.is_some() { 0 } else { -1 },
        tx_tput: mbps(tx_report.map(|_| flow.sender_bytes), elapsed),
        rx_socket: size(rx_end.and_then(|e| e.rcvbuf_bytes)),
        rx_msgs: count(rx_report.and_then(|r| r.totals.rx_packets)),
        rx_tput: mbps(flow.receiver_bytes, elapsed),
        cpu: measured.then(|| [util(tx_end), demand(tx_end), util(rx_end), demand(rx_end)]),
    })
}

fn udp_text(u: &UdpBlock) -> String {
    let mut out = u.banner.clone();
    let (tx_socket, write_size, elapsed, tx_msgs, errors, tx_tput) = (
        u.tx_socket,
        u.message,
        u.elapsed,
        u.tx_msgs,
        u.errors,
        u.tx_tput,
    );
    let (rx_socket, rx_msgs, rx_tput) = (u.rx_socket, u.rx_msgs, u.rx_tput);
    if let Some([tx_util, tx_sd, rx_util, rx_sd]) = u.cpu {
        out.push_str(UDP_CPU_TITLE);
        out.push_str(&format!(
            "bytes   bytes    secs            #      #   10^6bits/sec % {CPU_METHOD}{CPU_METHOD}     \
             us/KB\n\n"
        ));
        // "%6d  %6d   %-7.2f   %7llu %6d    %7.1f     %-6.2f   %-6.3f\n"
        // "%6d           %-7.2f   %7llu           %7.1f     %-6.2f   %-6.3f\n\n"
        out.push_str(&format!(
            "{tx_socket:>6}  {write_size:>6}   {elapsed:<7.2}   {tx_msgs:>7} {errors:>6}    \
             {tx_tput:>7.1}     {tx_util:<6.2}   {tx_sd:<6.3}\n"
        ));
        out.push_str(&format!(
            "{rx_socket:>6}           {elapsed:<7.2}   {rx_msgs:>7}           {rx_tput:>7.1}     \
             {rx_util:<6.2}   {rx_sd:<6.3}\n\n"
        ));
    } else {
        out.push_str(UDP_TPUT_TITLE);
        // "%6d  %6d   %-7.2f   %7llu %6d    %7.2f\n"
        // "%6d           %-7.2f   %7llu           %7.2f\n\n"
        out.push_str(&format!(
            "{tx_socket:>6}  {write_size:>6}   {elapsed:<7.2}   {tx_msgs:>7} {errors:>6}    \
             {tx_tput:>7.2}\n"
        ));
        out.push_str(&format!(
            "{rx_socket:>6}           {elapsed:<7.2}   {rx_msgs:>7}           {rx_tput:>7.2}\n\n"
        ));
    }
    out
}

fn count(v: Option<u64>) -> i128 {
    v.map_or(-1, i128::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use crate::model::FlowDirection;
    use linerate_wire::control::Direction;

    const STREAM_HEAD: &str = "\
Recv   Send    Send                          Utilization       Service Demand
Socket Socket  Message  Elapsed              Send     Recv     Send    Recv
Size   Size    Size     Time     Throughput  local    remote   local   remote
bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB

";

    #[test]
    fn tcp_stream_matches_netperf_layout() {
        // Seed 004's row shape: 208896 253952  65535    10.25       291.94 ...
        // 374,048,125 B × 8 / 10.25 s = 291.94e6 bit/s.
        // Client SD: 0.2481 × 4 CPUs × 10.25e6 µs / (374,048,125 / 1024 KB) = 27.847 us/KB.
        // Server SD: 0.8516 × 1 CPU × 10.25e6 µs / 365,281.4 KB = 23.896 us/KB.
        let expected = format!(
            "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 192.168.0.4 () \
             port 0 AF_INET\n{STREAM_HEAD}\
             208896 253952  65535    10.25       291.94   24.81    85.16    27.847  23.896 \n"
        );
        assert_eq!(render(&fixtures::tcp_send()), expected);
    }

    #[test]
    fn tcp_maerts_swaps_socket_columns_and_marks_missing_cpu() {
        // 11,762,500,000 B × 8 / 10 s = 9410.00e6 bit/s; Recv socket = client rcvbuf 131072,
        // Send socket = server sndbuf 16384. Client SD: 0.312 × 8 × 10e6 / 11,486,816.4 KB =
        // 2.173; the server's CPU is unknown: -1.00 and -1.000, as netperf prints without -C.
        let expected = "\
MIGRATED TCP MAERTS TEST from :: (::) port 0 AF_INET6 to 2001:db8::7 () port 0 AF_INET6
Recv   Send    Send                          Utilization       Service Demand
Socket Socket  Message  Elapsed              Recv     Send     Recv    Send
Size   Size    Size     Time     Throughput  local    remote   local   remote
bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB

131072  16384  16384    10.00      9410.00   31.20    -1.00    2.173   -1.000 \n";
        assert_eq!(render(&fixtures::tcp_receive()), expected);
    }

    #[test]
    fn udp_stream_prints_sender_and_receiver_rows() {
        // Sender: 1,000,000 datagrams, 1.4e9 B × 8 / 10 s = 1120.0; SD 0.1255 × 4 × 10e6 /
        // 1,367,187.5 KB = 3.672. Receiver: 990,050 datagrams, 1,386,070,000 B → 1108.9;
        // SD 0.0812 × 4 × 10e6 / 1,353,583.98 KB = 2.400. No send failed: Errors 0.
        let expected = "\
MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 () port 0 AF_INET
Socket  Message  Elapsed      Messages                   CPU      Service
Size    Size     Time         Okay Errors   Throughput   Util     Demand
bytes   bytes    secs            #      #   10^6bits/sec % SS     us/KB

212992    1400   10.00     1000000      0     1120.0     12.55    3.672 
212992           10.00      990050            1108.9     8.12     2.400 

";
        assert_eq!(render(&fixtures::udp_send()), expected);
    }

    #[test]
    fn udp_without_cpu_uses_the_throughput_table() {
        let mut rec = fixtures::udp_send();
        rec.summary.client.cpu_util_percent = None;
        rec.summary.client.service_demand_us_per_kb = None;
        if let Some(s) = rec.summary.server.as_mut() {
            s.cpu_util_percent = None;
            s.service_demand_us_per_kb = None;
        }
        let expected = "\
MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 () port 0 AF_INET
Socket  Message  Elapsed      Messages                \n\
Size    Size     Time         Okay Errors   Throughput
bytes   bytes    secs            #      #   10^6bits/sec

212992    1400   10.00     1000000      0    1120.00
212992           10.00      990050           1108.86

";
        assert_eq!(render(&rec), expected);
    }

    #[test]
    fn missing_server_and_cpu_use_netperf_placeholders() {
        // No receiver report: throughput from the 5e9 bytes written in 5 s = 8000.00e6 bit/s;
        // remote socket size unknown (-1); no CPU anywhere.
        let expected = format!(
            "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to example.net () \
             port 0 AF_INET\n{STREAM_HEAD}\
             \x20   -1 4194304 131072    5.00       8000.00   -1.00    -1.00    -1.000  -1.000 \n"
        );
        let out = render(&fixtures::no_server());
        assert_eq!(out, expected);
        assert!(
            !out.contains("warning"),
            "warnings go to stderr, not into the table"
        );
    }

    #[test]
    fn both_directions_print_one_table_each() {
        let mut rec = fixtures::tcp_send();
        rec.plan.direction = Direction::Both;
        let mut back = rec.summary.flows[0].clone();
        back.direction = FlowDirection::ServerToClient;
        rec.summary.flows.push(back);
        let out = render(&rec);
        let stream = out.find("MIGRATED TCP STREAM TEST").unwrap();
        let maerts = out.find("MIGRATED TCP MAERTS TEST").unwrap();
        assert!(stream < maerts);
        assert_eq!(out.matches("MIGRATED").count(), 2);
    }

    #[test]
    fn repeated_runs_print_one_table_of_means() {
        // Two runs of XAPP1127's shape: 374,048,125 B and 380,000,000 B over 10.25 s =
        // 291.94 and 296.59 Mbit/s; mean 294.26. Client utilisation 24.81 % and 30.00 %:
        // mean 27.41 (27.405 rounds to even in binary: 27.40 or 27.41, both are the mean at
        // two decimals); the server's is unknown in the second run: -1.00.
        let a = fixtures::tcp_send();
        let mut b = fixtures::tcp_send();
        if let Some(s) = b.server.as_mut() {
            s.totals.rx_bytes = 380_000_000;
        }
        b.summary.flows[0].receiver_bytes = Some(380_000_000);
        b.summary.client.cpu_util_percent = Some(30.0);
        if let Some(s) = b.summary.server.as_mut() {
            s.cpu_util_percent = None;
        }
        let out = render_average(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(out.matches("MIGRATED").count(), 1, "{out}");
        assert_eq!(out.lines().count(), 7, "{out}");
        let row: Vec<&str> = out.lines().nth(6).unwrap().split_whitespace().collect();
        let want = (374_048_125.0 + 380_000_000.0) / 2.0 * 8.0 / 10.25 / 1e6;
        assert_eq!(row[4], format!("{want:.2}"), "{out}");
        assert_eq!(row[5], format!("{:.2}", (24.81 + 30.0) / 2.0), "{out}");
        assert_eq!(row[6], "-1.00", "{out}");
        // One run: the same table as a single run's.
        assert_eq!(
            render_average(std::slice::from_ref(&a)).unwrap(),
            render(&a)
        );
    }

    #[test]
    fn repeated_udp_means_keep_the_errors_column() {
        let a = fixtures::udp_send();
        let out = render_average(&[a.clone(), a.clone()]).unwrap();
        assert_eq!(out, render(&a));
    }
}
