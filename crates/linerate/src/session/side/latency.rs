//! `--latency`: a stream test with light request/response probes beside it.
//!
//! Three sessions against the same server: first the two probes alone (TCP_RR on its own
//! connection and UDP_RR, [`PROBE_RATE_TPS`] a second each) for an idle baseline of
//! [`IDLE_BASELINE_MS`]; then the same probes, each on its own thread, started as soon as the
//! load has its streams (so that they never take a test slot the load needs) and stopped
//! when the load's session ends (the load's warm-up, `-O`, is left out of theirs too). The probes are ordinary rr tests of the server, so they obey its limits
//! (each takes a test slot) and need nothing new of it. The figures are assembled by
//! [`crate::model::latency`]; the diagnosis then names queueing delay when it sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use linerate_wire::control::{Direction, RrSpec, Transport};
use linerate_wire::report::{IntervalReport, SideReport};

use crate::model::latency::{
    self, LatencyUnderLoad, IDLE_BASELINE_MS, PROBE_BURST, PROBE_RATE_TPS, PROBE_UDP_TIMEOUT_MS,
};
use crate::model::plan::{default_spec, StreamPlan};
use crate::model::rr::RrSummary;
use crate::model::{PlanRecord, RunRecord};
use crate::session::protocol::client::{self, Observer, Quiet};

/// Bytes of a TCP probe's request and response.
const TCP_PROBE_BYTES: u32 = 1;
/// Bytes of a UDP probe's request and response: the smallest that carries the sequence
/// header.
const UDP_PROBE_BYTES: u32 = linerate_wire::probe::LEN as u32;
/// How much longer than the load a loaded probe is asked to run (it is stopped when the load
/// ends): room for the load's set-up and drain.
const PROBE_SLACK_MS: u64 = 30_000;
/// The probe length asked for beside a byte-count load (`-n`), whose length is not known.
const PROBE_UNTIMED_MS: u64 = 3_600_000;

/// A probe of the load's server: TCP_RR (`udp` false) or UDP_RR at [`PROBE_RATE_TPS`] for
/// `duration_ms`, its first `omit_ms` left out.
pub fn probe_plan(load: &StreamPlan, udp: bool, duration_ms: u64, omit_ms: u64) -> StreamPlan {
    let (transport, bytes) = if udp {
        (Transport::Udp, UDP_PROBE_BYTES)
    } else {
        (Transport::Tcp, TCP_PROBE_BYTES)
    };
    let mut spec = default_spec(transport, Direction::Send, bytes, duration_ms);
    spec.omit_ms = omit_ms;
    spec.nodelay = !udp;
    spec.tos = load.spec.tos;
    spec.rr = Some(RrSpec {
        request_bytes: bytes,
        response_bytes: bytes,
        burst: PROBE_BURST,
        connect_per_transaction: false,
        udp,
        timeout_ms: if udp { PROBE_UDP_TIMEOUT_MS } else { 0 },
        target_tps: Some(PROBE_RATE_TPS),
        bounceback: None,
    });
    let mut local = crate::model::plan::SockOpts {
        nodelay: !udp,
        tos: load.local.tos,
        ..Default::default()
    };
    local.congestion = None;
    StreamPlan {
        host: load.host.clone(),
        port: load.port,
        spec,
        local,
        client_cpu: None,
        connect_timeout: load.connect_timeout,
        debug: load.debug,
        auth: load.auth.clone(),
        max_time: None,
    }
}

/// Both probes by `plan_of(udp)` on two threads until they end or `stop` is set.
fn probes(
    plan_of: impl Fn(bool) -> StreamPlan + Sync,
    stop: &AtomicBool,
) -> [anyhow::Result<RunRecord>; 2] {
    std::thread::scope(|s| {
        let plan_of = &plan_of;
        let tcp = s.spawn(move || client::run(&plan_of(false), &mut Quiet, stop));
        let udp = s.spawn(move || client::run(&plan_of(true), &mut Quiet, stop));
        [join(tcp), join(udp)]
    })
}

fn join(
    h: std::thread::ScopedJoinHandle<'_, anyhow::Result<RunRecord>>,
) -> anyhow::Result<RunRecord> {
    h.join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the probe's thread panicked")))
}

/// Runs the load by `plan` with probes beside it (the idle baseline first) and returns its
/// record with `latency_under_load` filled and the diagnosis made again.
pub fn run(
    plan: &StreamPlan,
    observer: &mut dyn Observer,
    interrupt: &AtomicBool,
) -> anyhow::Result<RunRecord> {
    let idle = probes(|udp| probe_plan(plan, udp, IDLE_BASELINE_MS, 0), interrupt);
    let probe_ms = plan
        .spec
        .duration_ms
        .map_or(PROBE_UNTIMED_MS, |d| d + plan.spec.omit_ms + PROBE_SLACK_MS);
    let omit = plan.spec.omit_ms;
    let stop = AtomicBool::new(false);
    let (go, started) = mpsc::channel();
    let (load, loaded) = std::thread::scope(|s| {
        let stop = &stop;
        // The probes start once the load has its streams (so that they never take the slot
        // the load needs); a load that never starts leaves them out.
        let probes = s.spawn(move || match started.recv() {
            Ok(()) => probes(|udp| probe_plan(plan, udp, probe_ms, omit), stop),
            Err(_) => [(); 2].map(|_| Err(anyhow::anyhow!("the load did not start"))),
        });
        let mut gate = Gate {
            inner: observer,
            go: Some(go),
        };
        let load = client::run(plan, &mut gate, interrupt);
        drop(gate);
        stop.store(true, Ordering::SeqCst);
        let loaded = probes.join().unwrap_or_else(|_| {
            [
                Err(anyhow::anyhow!("the probes' thread panicked")),
                Err(anyhow::anyhow!("the probes' thread panicked")),
            ]
        });
        (load, loaded)
    });
    let mut rec = load?;
    let mut warnings = Vec::new();
    let [idle_tcp, idle_udp] = idle.map(|r| probe_summary(r, "idle", &mut warnings));
    let [loaded_tcp, loaded_udp] = loaded.map(|r| probe_summary(r, "loaded", &mut warnings));
    let idle_ns = Duration::from_millis(IDLE_BASELINE_MS).as_nanos() as u64;
    rec.latency_under_load = Some(assemble(
        &rec,
        idle_ns,
        [idle_tcp.as_ref(), idle_udp.as_ref()],
        [loaded_tcp.as_ref(), loaded_udp.as_ref()],
    ));
    rec.warnings.extend(warnings);
    rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
    Ok(rec)
}

/// Passes everything to the load's observer and says "go" once, when the load starts.
struct Gate<'a> {
    inner: &'a mut dyn Observer,
    go: Option<mpsc::Sender<()>>,
}

impl Observer for Gate<'_> {
    fn interval(&mut self, side: linerate_wire::report::Role, iv: &IntervalReport) {
        self.inner.interval(side, iv);
    }

    fn started(&mut self, plan: &PlanRecord, started_at: &str) {
        self.inner.started(plan, started_at);
        if let Some(go) = self.go.take() {
            // The probes' thread is gone only if it panicked; the load goes on regardless.
            let _ = go.send(());
        }
    }
}

/// A probe's rr summary, or a warning that says why there is none.
fn probe_summary(
    r: anyhow::Result<RunRecord>,
    phase: &str,
    warnings: &mut Vec<String>,
) -> Option<RrSummary> {
    match r {
        Ok(rec) => {
            let rr = rec.rr;
            if rr.as_ref().is_none_or(|s| s.latency.is_none()) {
                warnings.push(format!(
                    "--latency: the {phase} probe completed no transaction"
                ));
            }
            rr
        }
        Err(e) => {
            warnings.push(format!("--latency: the {phase} probe failed: {e:#}"));
            None
        }
    }
}

/// The loaded flows' smoothed-RTT samples, µs: the sending ends' measured intervals.
fn loaded_srtt_us(rec: &RunRecord) -> Vec<f64> {
    let side = |r: Option<&SideReport>| -> Vec<f64> {
        r.map_or(Vec::new(), |r| {
            r.intervals
                .iter()
                .filter(|iv| !iv.omitted)
                .filter_map(|iv| iv.rtt_us.map(f64::from))
                .collect()
        })
    };
    let d = rec.plan.direction;
    let mut v = Vec::new();
    if d.client_sends() {
        v.extend(side(Some(&rec.client)));
    }
    if d.client_receives() {
        v.extend(side(rec.server.as_ref()));
    }
    v
}

/// The record's section from the probes' summaries ([TCP, UDP] idle and loaded).
fn assemble(
    rec: &RunRecord,
    idle_duration_ns: u64,
    idle: [Option<&RrSummary>; 2],
    loaded: [Option<&RrSummary>; 2],
) -> LatencyUnderLoad {
    let lat = |s: Option<&RrSummary>| s.and_then(|s| s.latency.clone());
    let (idle_tcp, idle_udp) = (lat(idle[0]), lat(idle[1]));
    let (loaded_tcp, loaded_udp) = (lat(loaded[0]), lat(loaded[1]));
    let srtt = loaded_srtt_us(rec);
    let inc = |p: &str, i: &Option<_>, l: &Option<_>| match (i, l) {
        (Some(i), Some(l)) => latency::increase(i, l).map(|x| (p.to_string(), x)),
        _ => None,
    };
    let increase =
        inc("tcp", &idle_tcp, &loaded_tcp).or_else(|| inc("udp", &idle_udp, &loaded_udp));
    let probe_bytes = |s: Option<&RrSummary>| {
        s.map_or(0, |s| {
            let sent = s.transactions + s.lost_transactions.unwrap_or(0);
            sent * u64::from(s.request_bytes) + s.transactions * u64::from(s.response_bytes)
        })
    };
    let responsiveness = loaded_tcp.as_ref().and_then(|l| {
        latency::responsiveness(
            &l.histogram,
            &srtt,
            idle_tcp.as_ref().map_or(&[][..], |i| &i.histogram[..]),
        )
    });
    LatencyUnderLoad {
        probe_rate_tps: PROBE_RATE_TPS,
        idle_duration_ns,
        loaded_udp_lost: loaded[1].and_then(|s| s.lost_transactions),
        loaded_probe_bytes: probe_bytes(loaded[0]) + probe_bytes(loaded[1]),
        loaded_srtt_p50_us: latency::median(&srtt),
        loaded_srtt_trimmed_mean_us: latency::trimmed_mean(&srtt, latency::TRIM_KEEP),
        loaded_srtt_samples: (!srtt.is_empty()).then_some(srtt.len() as u64),
        increase_probe: increase.as_ref().map(|(p, _)| p.clone()),
        increase_ratio: increase.as_ref().map(|(_, (r, _))| *r),
        added_delay_ns: increase.as_ref().map(|(_, (_, d))| *d),
        responsiveness,
        idle_tcp,
        idle_udp,
        loaded_tcp,
        loaded_udp,
    }
}
