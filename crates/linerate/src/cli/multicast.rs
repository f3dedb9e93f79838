//! `linerate udp GROUP`: the multicast options of `udp` ([`McastArgs`]) and their checks
//! into a [`McastPlan`], before any traffic. What a multicast test cannot do (a reverse
//! direction, parallel streams, an iperf3 server, ...) is refused here, one line each.

use std::net::IpAddr;

use super::stream::{StreamArgs, DEFAULT_TIME, DEFAULT_UDP_LEN};
use super::UsageError;
use crate::model::multicast::McastPlan;
use crate::model::plan::Debug;

/// The group's default UDP port: iperf2's, so that `iperf -s -u -B GROUP` receivers hear it.
pub const DEFAULT_GROUP_PORT: u16 = 5001;
/// Default rate: iperf2's UDP default.
pub const DEFAULT_RATE_BPS: u64 = 1_000_000;

/// The group `host` names, if it is a multicast address.
pub fn group_of(host: &str) -> Option<IpAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.parse::<IpAddr>().ok().filter(IpAddr::is_multicast)
}

/// The flags of `udp` a multicast test cannot honour, the first one named.
fn unsupported(a: &StreamArgs) -> Option<&'static str> {
    let checks: [(bool, &'static str); 12] = [
        (a.iperf3, "--iperf3"),
        (a.reverse, "-R"),
        (a.bidir, "--bidir"),
        (a.parallel != 1, "-P"),
        (a.bytes.is_some(), "-n"),
        (a.latency, "--latency"),
        (a.raw_frames, "--raw-frames"),
        (a.dut.dut.is_some(), "--dut"),
        (a.capture.capture.is_some(), "--capture"),
        (a.repeat.is_set(), "--repeat/--confidence"),
        (a.profile.profile, "--profile"),
        (
            a.remote_buffer.is_some() || a.remote_sndbuf.is_some() || a.remote_rcvbuf.is_some(),
            "-S/--remote-sndbuf/--remote-rcvbuf",
        ),
    ];
    checks.iter().find(|(on, _)| *on).map(|(_, f)| *f)
}

/// The plan of `udp GROUP ...`, every default applied; bad input is one line.
pub fn multicast_plan(a: &StreamArgs, group: IpAddr) -> Result<McastPlan, UsageError> {
    let m = &a.mcast;
    if let Some(flag) = unsupported(a) {
        return Err(UsageError(format!(
            "{flag} does not apply to a multicast test (udp to the group {group}): leave it out"
        )));
    }
    let ttl = m.ttl.unwrap_or(1);
    if !(1..=255).contains(&ttl) {
        return Err(UsageError(format!(
            "-T/--ttl {ttl}: give a TTL (hop limit) from 1 to 255; 0 would never leave this host"
        )));
    }
    if let Some(s) = m.ssm_source {
        if s.is_multicast() || s.is_unspecified() || s.is_ipv4() != group.is_ipv4() {
            return Err(UsageError(format!(
                "--ssm-source {s}: give a unicast address of the group's IP version ({group})"
            )));
        }
        if s.is_ipv6() {
            return Err(UsageError(
                "--ssm-source: source-specific multicast over IPv6 is not supported yet: use an IPv4 group (232.0.0.0/8) or leave out --ssm-source".into(),
            ));
        }
    }
    if let Some(i) = &m.mcast_interface {
        crate::sys::iface::validate_ifname(i)
            .map_err(|e| UsageError(format!("--mcast-interface: {e}")))?;
    }
    let len = a.len.unwrap_or(DEFAULT_UDP_LEN);
    let max = if group.is_ipv4() { 65_507 } else { 65_527 };
    let min = linerate_wire::probe::LEN as u32;
    if !(min..=max).contains(&len) || len > linerate_wire::multicast::MAX_DATAGRAM {
        return Err(UsageError(format!(
            "-l {len}: a multicast datagram's payload is {min} to {} bytes",
            max.min(linerate_wire::multicast::MAX_DATAGRAM)
        )));
    }
    let rate_bps = match a.rate {
        Some(0) => {
            return Err(UsageError(
                "-b 0: give a rate above zero, e.g. -b 10M".into(),
            ))
        }
        Some(r) => r,
        None => DEFAULT_RATE_BPS,
    };
    Ok(McastPlan {
        group,
        port: a.port.unwrap_or(DEFAULT_GROUP_PORT),
        source: m.ssm_source,
        ttl,
        interface: m.mcast_interface.clone(),
        len,
        rate_bps,
        duration: a.time.unwrap_or(DEFAULT_TIME),
        receivers: m.receivers.clone(),
        connect_timeout: a.connect_timeout,
        auth: a.auth.credentials()?,
        debug: Debug(a.debug_protocol),
    })
}

/// The multicast options given to a test that is not multicast: the one-line error.
pub fn without_group(a: &StreamArgs) -> Result<(), UsageError> {
    if a.mcast.any() {
        return Err(UsageError(format!(
            "--receivers, -T/--ttl, --ssm-source and --mcast-interface are for a multicast test: {} is not a multicast group (give one in 224.0.0.0/4 or ff00::/8)",
            a.host
        )));
    }
    Ok(())
}
