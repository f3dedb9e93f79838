//! CSV: a header row, then one row per flow (one for send or receive, two for both).
//!
//! The columns are the fields of [`CsvRow`], in order, so a column cannot be added to the
//! header and forgotten in the rows. An unmeasured value is an empty cell.

use super::sender_bytes;
use crate::model::{FlowDirection, FlowSummary, RunRecord};
use linerate_wire::control::Transport;
use serde::Serialize;

/// One flow of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CsvRow {
    /// Start of the test, RFC 3339 UTC.
    pub started_at: String,
    /// "tcp" or "udp".
    pub transport: &'static str,
    /// "client_to_server" or "server_to_client" (the JSON names).
    pub direction: &'static str,
    /// Parallel streams per direction.
    pub streams: u16,
    /// Write (TCP) or datagram payload (UDP) size, bytes.
    pub write_size: u32,
    /// The client's measured window, nanoseconds.
    pub duration_ns: u64,
    /// Payload bytes written; empty when the sender did not report.
    pub sender_bytes: Option<u64>,
    /// Payload bytes read; empty when the receiver did not report.
    pub receiver_bytes: Option<u64>,
    /// Sender throughput, bits per second.
    pub sender_bps: Option<f64>,
    /// Receiver throughput, bits per second: the figure to quote.
    pub receiver_bps: Option<f64>,
    /// UDP datagrams per second sent (the sockets' count).
    pub sender_datagrams_pps: Option<f64>,
    /// UDP datagrams per second received (the sockets' count).
    pub receiver_datagrams_pps: Option<f64>,
    /// UDP: packets per second the sender's interface sent, the control connection's left
    /// out (fewer than datagrams with UDP GSO).
    pub sender_interface_pps: Option<f64>,
    /// UDP: packets per second the receiver's interface received, the control
    /// connection's left out.
    pub receiver_interface_pps: Option<f64>,
    /// UDP: datagrams per packet at the sender's interface (up to 64 with GSO).
    pub datagrams_per_packet: Option<f64>,
    /// TCP segments retransmitted by the sender.
    pub retransmits: Option<u64>,
    /// UDP loss, percent of datagrams sent.
    pub loss_percent: Option<f64>,
    /// UDP datagrams lost: sequence gaps plus those sent after the last one received.
    pub lost_datagrams: Option<u64>,
    /// UDP interarrival jitter (RFC 3550), nanoseconds.
    pub jitter_ns: Option<u64>,
    /// Client CPU utilisation, percent of all its CPUs.
    pub client_cpu_util_percent: Option<f64>,
    /// Server CPU utilisation, percent of all its CPUs.
    pub server_cpu_util_percent: Option<f64>,
    /// Client service demand, µs of CPU per KB.
    pub client_service_demand_us_per_kb: Option<f64>,
    /// Server service demand, µs of CPU per KB.
    pub server_service_demand_us_per_kb: Option<f64>,
    /// The test was cut short.
    pub interrupted: bool,
    /// The strongest verdict of the diagnosis for this flow (`none` when nothing stands
    /// out); empty when the record has no diagnosis.
    pub verdict: &'static str,
    /// Its message, with the numbers behind it.
    pub verdict_message: String,
    /// `--dut` (columns added after the first release, so at the end): the device's
    /// busiest CPU's busy share over the test, percent of that CPU.
    pub dut_busiest_cpu_busy_percent: Option<f64>,
    /// `--dut`: that CPU's softirq share, percent of that CPU.
    pub dut_busiest_cpu_softirq_percent: Option<f64>,
    /// `--dut`: packets out of the device's busiest interface (for a router, its egress).
    pub dut_egress_tx_packets: Option<u64>,
    /// `--dut`: packets dropped or missed at the device's ingress, all interfaces.
    pub dut_ingress_drops: Option<u64>,
}

impl CsvRow {
    /// The row for one flow of `rec`.
    pub fn new(rec: &RunRecord, flow: &FlowSummary) -> Self {
        let client = &rec.summary.client;
        let server = rec.summary.server.as_ref();
        let verdict = rec
            .diagnosis
            .as_ref()
            .and_then(|d| d.primary_for(flow.direction));
        let dut_cpu = rec.dut.as_ref().and_then(|d| d.cpu.as_ref());
        CsvRow {
            started_at: rec.started_at.clone(),
            transport: match rec.plan.transport {
                Transport::Tcp => "tcp",
                Transport::Udp => "udp",
                Transport::Quic => "quic",
            },
            direction: match flow.direction {
                FlowDirection::ClientToServer => "client_to_server",
                FlowDirection::ServerToClient => "server_to_client",
            },
            streams: rec.plan.streams,
            write_size: rec.plan.write_size,
            duration_ns: client.duration_ns,
            sender_bytes: sender_bytes(rec, flow),
            receiver_bytes: flow.receiver_bytes,
            sender_bps: flow.sender_bps,
            receiver_bps: flow.receiver_bps,
            sender_datagrams_pps: flow.sender_pps,
            receiver_datagrams_pps: flow.receiver_pps,
            sender_interface_pps: flow.sender_interface_pps,
            receiver_interface_pps: flow.receiver_interface_pps,
            datagrams_per_packet: flow
                .sender_datagrams_per_packet
                .or(flow.receiver_datagrams_per_packet),
            retransmits: flow.retransmits,
            loss_percent: flow.loss_percent,
            lost_datagrams: flow.lost_datagrams,
            jitter_ns: flow.udp.as_ref().and_then(|u| u.jitter_ns),
            client_cpu_util_percent: client.cpu_util_percent,
            server_cpu_util_percent: server.and_then(|s| s.cpu_util_percent),
            client_service_demand_us_per_kb: client.service_demand_us_per_kb,
            server_service_demand_us_per_kb: server.and_then(|s| s.service_demand_us_per_kb),
            interrupted: rec.interrupted,
            verdict: verdict.map_or("", |v| v.kind.name()),
            verdict_message: verdict.map(|v| v.message.clone()).unwrap_or_default(),
            dut_busiest_cpu_busy_percent: dut_cpu.map(|c| c.busiest_busy_percent),
            dut_busiest_cpu_softirq_percent: dut_cpu.map(|c| c.busiest_softirq_percent),
            dut_egress_tx_packets: rec
                .dut
                .as_ref()
                .and_then(|d| d.busiest_tx())
                .map(|i| i.tx_packets),
            dut_ingress_drops: rec
                .dut
                .as_ref()
                .filter(|d| !d.interfaces.is_empty())
                .map(|d| d.interfaces.iter().map(|i| i.ingress_drops()).sum()),
        }
    }
}

/// Header row, then one row per flow.
pub fn render(rec: &RunRecord) -> String {
    if let Some(rr) = &rec.rr {
        return super::rr::csv(rec, rr);
    }
    let rows: Vec<CsvRow> = rec
        .summary
        .flows
        .iter()
        .map(|f| CsvRow::new(rec, f))
        .collect();
    match write_rows(&rows) {
        Ok(text) => text,
        // Writing plain numbers and strings into memory cannot fail; keep the output CSV-shaped.
        Err(e) => format!(
            "error\n\"cannot write CSV: {}\"\n",
            e.to_string().replace('"', "'")
        ),
    }
}

/// The header row alone, derived from [`CsvRow`]'s fields.
pub fn header() -> String {
    let text = write_rows(&[CsvRow::default()]).unwrap_or_default();
    text.lines()
        .next()
        .map(|h| format!("{h}\n"))
        .unwrap_or_default()
}

fn write_rows(rows: &[CsvRow]) -> Result<String, ::csv::Error> {
    if rows.is_empty() {
        return Ok(header());
    }
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(true)
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for row in rows {
        w.serialize(row)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| ::csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    const HEADER: &str = "started_at,transport,direction,streams,write_size,duration_ns,\
sender_bytes,receiver_bytes,sender_bps,receiver_bps,sender_datagrams_pps,\
receiver_datagrams_pps,sender_interface_pps,receiver_interface_pps,datagrams_per_packet,\
retransmits,loss_percent,lost_datagrams,jitter_ns,\
client_cpu_util_percent,server_cpu_util_percent,client_service_demand_us_per_kb,\
server_service_demand_us_per_kb,interrupted,verdict,verdict_message,dut_busiest_cpu_busy_percent,dut_busiest_cpu_softirq_percent,dut_egress_tx_packets,dut_ingress_drops\n";

    /// The `verdict,verdict_message` cells of a record's first flow, quoted as CSV quotes
    /// them (the messages are tested in `diagnose`).
    /// The verdict's two cells, then the four `--dut` cells (empty: no fixture has --dut).
    fn verdict_cells(rec: &RunRecord) -> String {
        let v = rec.diagnosis.as_ref().unwrap().primary().unwrap();
        let m = &v.message;
        let m = if m.contains([',', '"']) {
            format!("\"{}\"", m.replace('"', "\"\""))
        } else {
            m.clone()
        };
        format!("{},{m},,,,", v.kind.name())
    }

    #[test]
    fn tcp_send_header_and_row() {
        // 374,048,125 B × 8 / 10.25 s = 291,940,000 bit/s; service demands as in netperf's
        // test: 27.847… and 23.896… µs/KB, at full precision.
        let rec = fixtures::tcp_send();
        let client_sd = rec.summary.client.service_demand_us_per_kb.unwrap();
        let server_sd = rec
            .summary
            .server
            .as_ref()
            .unwrap()
            .service_demand_us_per_kb
            .unwrap();
        let expected = format!(
            "{HEADER}2024-05-01T12:00:00Z,tcp,client_to_server,1,65535,10250000000,\
             374048125,374048125,291940000.0,291940000.0,,,,,,3,,,,24.81,85.16,{client_sd},\
             {server_sd},false,{}\n",
            verdict_cells(&rec)
        );
        assert_eq!(render(&rec), expected);
        assert!(expected.contains(",false,tester_limited,linerate's 1 data thread(s)"));
        assert!(client_sd.to_string().starts_with("27.847"));
        assert!(server_sd.to_string().starts_with("23.896"));
    }

    #[test]
    fn absent_values_are_empty_cells() {
        // No server: receiver bytes, receiver bps, server CPU and every CPU figure are empty.
        let rec = fixtures::no_server();
        let expected = format!(
            "{HEADER}2024-05-01T12:00:00Z,tcp,client_to_server,1,131072,5000000000,\
             5000000000,,8000000000.0,,,,,,,,,,,,,,,true,{}\n",
            verdict_cells(&rec)
        );
        assert_eq!(render(&rec), expected);
        assert!(expected.contains(",true,none,"));
    }

    #[test]
    fn udp_row_has_loss_jitter_and_pps() {
        let out = render(&fixtures::udp_send());
        let row = out.lines().nth(1).unwrap();
        let cells: Vec<&str> = row.split(',').collect();
        let col = |name: &str| {
            let i = HEADER
                .trim_end()
                .split(',')
                .position(|h| h == name)
                .unwrap();
            cells[i]
        };
        assert_eq!(col("receiver_datagrams_pps"), "99005.0");
        assert_eq!(col("sender_datagrams_pps"), "100000.0");
        assert_eq!(col("sender_interface_pps"), "");
        assert_eq!(col("loss_percent"), "1.0");
        assert_eq!(col("jitter_ns"), "12345");
        assert_eq!(col("retransmits"), "");
        assert_eq!(col("transport"), "udp");
    }

    #[test]
    fn header_comes_from_the_row_type() {
        assert_eq!(header(), HEADER);
        let mut rec = fixtures::tcp_send();
        rec.summary.flows.clear();
        assert_eq!(render(&rec), HEADER);
    }

    #[test]
    fn both_directions_give_two_rows() {
        let mut rec = fixtures::tcp_send();
        let mut back = rec.summary.flows[0].clone();
        back.direction = FlowDirection::ServerToClient;
        rec.summary.flows.push(back);
        let out = render(&rec);
        assert_eq!(out.lines().count(), 3);
        assert!(out.lines().nth(2).unwrap().contains(",server_to_client,"));
    }
}
