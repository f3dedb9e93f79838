//! `linerate tcp` and `linerate udp`: a stream test, once with live output or repeated;
//! exit code 1 when it fails `--max-loss`.

use std::process::ExitCode;

use linerate_wire::control::Transport;

use super::keep::Keeper;
use super::run;
use crate::cli::common::DutArgs;
use crate::cli::output::output;
use crate::cli::repeat::repeat_plan;
use crate::cli::stream::{criteria, cross_flag_checks, stream_plan, StreamArgs};
use crate::model::plan::StreamPlan;
use crate::session::protocol::client;
use crate::session::side::dut::DutProbe;

/// Runs `linerate tcp` or `linerate udp`.
pub fn command(a: &StreamArgs, transport: Transport) -> anyhow::Result<ExitCode> {
    command_with(a, transport, None)
}

/// Runs `linerate quic`: `-P` connections of `--streams` streams each.
#[cfg(feature = "quic")]
pub fn quic(a: &crate::cli::stream::QuicArgs) -> anyhow::Result<ExitCode> {
    crate::cli::stream::quic_checks(a)?;
    command_with(&a.stream, Transport::Quic, Some(a.streams))
}

/// A stream test; for QUIC with its streams per connection.
fn command_with(
    a: &StreamArgs,
    transport: Transport,
    quic_streams: Option<u16>,
) -> anyhow::Result<ExitCode> {
    if let Some(group) = crate::cli::multicast::group_of(&a.host) {
        if transport == Transport::Udp {
            return super::multicast::command(a, group);
        }
        let what = if transport == Transport::Tcp {
            "TCP"
        } else {
            "QUIC"
        };
        return Err(crate::cli::UsageError(format!(
            "{group} is a multicast group: {what} cannot send to one, use `linerate udp {group} --receivers ...`"
        ))
        .into());
    }
    crate::cli::multicast::without_group(a)?;
    cross_flag_checks(a)?;
    let mut plan = stream_plan(a, transport)?;
    if let Some(m) = quic_streams {
        crate::cli::stream::quic_layout(&mut plan, m)?;
    }
    let out = output(&a.output)?;
    let rp = repeat_plan(&a.repeat)?;
    let criteria = criteria(a, transport)?;
    a.store.validate()?;
    let keeper = Keeper::new(
        &a.store,
        match transport {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Quic => "quic",
        },
    );
    let mut dut = open_dut(&a.dut, &plan)?;
    let how = run::Once {
        link_rate_bps: a.link_rate,
        capture: &a.capture,
        latency: a.latency,
        prom: a.output.prom.as_deref(),
        profile_out: a.profile.profile_out.as_deref(),
        iperf3: a.iperf3,
    };
    if !a.repeat.is_set() {
        return run::run_once(&plan, out, &how, &criteria, &keeper, dut.as_mut());
    }
    run::run_repeated(&plan, out, rp, &how, &criteria, &keeper, dut.as_mut())
}

/// The counters session to the device under test (`--dut`), with the test's credentials
/// and connect time-out; an unreachable device or an old server is the error.
pub fn open_dut(a: &DutArgs, plan: &StreamPlan) -> anyhow::Result<Option<DutProbe>> {
    let Some((host, port)) = &a.dut else {
        return Ok(None);
    };
    let target = client::Target {
        addr: client::resolve(host, *port)?,
        server: format!("{host}:{port}"),
        connect_timeout: plan.connect_timeout,
        debug: plan.debug,
        auth: plan.auth.clone(),
    };
    DutProbe::open(&target).map(Some)
}
