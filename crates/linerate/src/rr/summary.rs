//! The record's request/response figures from what the client measured: transactions per
//! second over the client's window, latency summaries of the merged histograms, lost
//! transactions, and service demand per transaction for both ends.

use linerate_wire::control::RrSpec;
use linerate_wire::report::SideReport;

use super::{latency, RrClientData};
use crate::model::rr::{service_demand_us_per_tran, RrKind, RrSummary};

/// The kind of test a spec asks for.
pub fn kind(spec: &RrSpec) -> RrKind {
    if spec.bounceback.is_some() {
        RrKind::TcpBounceback
    } else if spec.udp {
        RrKind::UdpRr
    } else if spec.connect_per_transaction {
        RrKind::TcpCrr
    } else {
        RrKind::TcpRr
    }
}

/// Builds the record's [`RrSummary`] from the client's data and both ends' reports, and
/// returns warnings about what it shows (a target rate not reached, lost transactions).
pub fn summarize(
    spec: &RrSpec,
    data: &RrClientData,
    client: &SideReport,
    server: Option<&SideReport>,
) -> (RrSummary, Vec<String>) {
    let window = client.totals.duration_ns;
    let tps = (window > 0).then(|| data.transactions as f64 * 1e9 / window as f64);
    let sd = |r: Option<&SideReport>| {
        r.and_then(|r| r.cpu.as_ref()).and_then(|c| {
            service_demand_us_per_tran(c.util_percent, c.cpu_count, window, data.transactions)
        })
    };
    let udp = spec.udp;
    let mut warnings = Vec::new();
    if let (Some(target), Some(got)) = (spec.target_tps, tps) {
        if got < 0.95 * target as f64 {
            warnings.push(format!(
                "the target rate of {target} transactions/s was not reached ({got:.0}/s): latencies include the time requests waited behind the schedule; lower --rate or add streams (-P)"
            ));
        }
    }
    if data.errors > 0 {
        warnings.push(format!(
            "{} TCP_CRR connections failed or closed early; they are not counted as transactions",
            data.errors
        ));
    }
    let lost_percent = (udp && data.transactions + data.lost > 0)
        .then(|| data.lost as f64 * 100.0 / (data.transactions + data.lost) as f64);
    let summary = RrSummary {
        kind: kind(spec),
        request_bytes: spec.request_bytes,
        response_bytes: spec.response_bytes,
        burst: spec.burst.max(1),
        bounceback: spec.bounceback.as_deref().copied(),
        target_tps: spec.target_tps,
        timeout_ms: udp.then_some(spec.timeout_ms),
        transactions: data.transactions,
        duration_ns: window,
        transactions_per_sec: tps,
        lost_transactions: udp.then_some(data.lost),
        lost_percent,
        late_responses: udp.then_some(data.late),
        connections: spec.connect_per_transaction.then_some(data.connections),
        latency: data.latency.as_ref().and_then(latency::summarize),
        latency_from_actual_send: data.actual.as_ref().and_then(latency::summarize),
        client_service_demand_us_per_tran: sd(Some(client)),
        server_service_demand_us_per_tran: sd(server),
    };
    (summary, warnings)
}

#[cfg(test)]
mod tests {
    use linerate_wire::control::RrSpec;

    use super::*;

    #[test]
    fn kinds() {
        let mut spec = RrSpec {
            request_bytes: 1,
            response_bytes: 1,
            burst: 1,
            connect_per_transaction: false,
            udp: false,
            timeout_ms: 0,
            target_tps: None,
            bounceback: None,
        };
        assert_eq!(kind(&spec), RrKind::TcpRr);
        spec.connect_per_transaction = true;
        assert_eq!(kind(&spec), RrKind::TcpCrr);
        spec.udp = true;
        assert_eq!(kind(&spec), RrKind::UdpRr);
    }
}
