//! Trials on the network: each one is a UDP stream test against `linerate serve` on the far
//! side of the device (the machinery of `linerate udp`: [`client::run`] with a
//! [`StreamPlan`]).
//!
//! * A paced trial offers `fps` frames per second as a payload rate of
//!   `fps × payload × 8` bit/s, one stream per direction, for the trial length; a burst is a
//!   fixed byte count (`frames × payload`) with no pacing.
//! * What came back is read from the run record: frames sent = sender bytes / payload (every
//!   datagram has the same size, GSO included), frames received = distinct datagrams at the
//!   receiver, the tester's rate = the sender's datagrams over its active time.
//! * RFC 2544 §23's waits: before every trial but the first the tester waits `settle`; after
//!   the senders stop, both receivers drain until 50 ms pass without a frame (at most 2 s),
//!   which is the engine's normal end of a UDP test.
//! * Frames dropped at the tester's own receiving socket are the receiving host's
//!   `Udp.RcvbufErrors` (`Udp6.` over IPv6) over the trial, from the host counters each end
//!   reports; they are counted apart from the device's loss.
//! * One-way delay is only kept when both ends report the same kernel boot id (one clock).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::model::plan::Debug;
use crate::model::plan::StreamPlan;
use crate::model::{FlowDirection, RunRecord};
use crate::rfc2544::frame_sizes::{self, IpVersion};
use crate::rfc2544::record::Generator;
use crate::rfc2544::trial::{
    self as trial_mod, CountedAt, Trial, TrialOutcome, TrialProfile, Way, WayOutcome,
};
use crate::session::protocol::client;
use anyhow::{anyhow, bail};
use linerate_wire::control::{DelaySpec, Direction, Transport};
use linerate_wire::report::SideReport;
use linerate_wire::report::{StreamRole, TxPath};

/// Where and how trials run.
#[derive(Debug, Clone)]
pub struct NetTrialConfig {
    /// Server host.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// IP version of the path (decides the payload for a frame size).
    pub ip: IpVersion,
    /// Both directions at once.
    pub bidirectional: bool,
    /// Wait before each trial but the first.
    pub settle: Duration,
    /// How the tester writes its frames.
    pub generator: Generator,
    /// The kernel path of raw frames (`--raw-tx`).
    pub raw_tx: linerate_wire::control::RawTxChoice,
    /// Connection time-out.
    pub connect_timeout: Duration,
    /// Credentials for a server that requires authentication.
    pub auth: Option<crate::model::plan::Credentials>,
    /// `--profile`: both ends profile every trial's measured window.
    pub profile: Option<linerate_wire::profile::ProfileSpec>,
}

/// Send buffer of the datagram senders, bytes (the raw-frame ring asks for the same).
const TESTER_SNDBUF: u32 = 4 << 20;

/// Runs trials against a server (see the module docs).
pub struct NetTrial<'a> {
    cfg: NetTrialConfig,
    interrupt: &'a AtomicBool,
    last_end: Option<Instant>,
    /// Boot id of the server as last reported.
    pub server_boot_id: Option<String>,
    /// The device under test's counters session (`--dut`): a snapshot around every trial.
    pub dut: Option<crate::session::side::dut::DutProbe>,
}

/// The run was interrupted (Ctrl-C).
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

impl<'a> NetTrial<'a> {
    /// Trials per `cfg`; `interrupt` (Ctrl-C) ends the current trial and fails the next.
    pub fn new(cfg: NetTrialConfig, interrupt: &'a AtomicBool) -> NetTrial<'a> {
        NetTrial {
            cfg,
            interrupt,
            last_end: None,
            server_boot_id: None,
            dut: None,
        }
    }

    /// Sends a few frames each way so that the device and the hosts learn addresses before
    /// the first measured trial (RFC 2544 §23 "learning frames"): 0.5 s at 1000 fps.
    pub fn learn(&mut self, frame: u32) -> anyhow::Result<()> {
        let payload = self.payload(frame)?;
        let mut plan = self.plan(payload);
        plan.spec.duration_ms = Some(500);
        plan.spec.rate_bps = Some(frame_sizes::payload_bps(1000.0, payload));
        // Nothing of it is kept: it is not profiled.
        plan.spec.profile = None;
        self.execute(&plan, payload).map(drop)
    }

    fn settle(&self) -> anyhow::Result<()> {
        if let Some(end) = self.last_end {
            let until = end + self.cfg.settle;
            while Instant::now() < until {
                if self.interrupt.load(Relaxed) {
                    return Err(Interrupted.into());
                }
                std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
            }
        }
        if self.interrupt.load(Relaxed) {
            return Err(Interrupted.into());
        }
        Ok(())
    }

    fn plan(&self, payload: u32) -> StreamPlan {
        let direction = if self.cfg.bidirectional {
            Direction::Both
        } else {
            Direction::Send
        };
        let spec = crate::model::plan::default_spec(Transport::Udp, direction, payload, 1000);
        StreamPlan {
            host: self.cfg.host.clone(),
            port: self.cfg.port,
            spec: linerate_wire::control::TestSpec {
                udp_offload: self.cfg.generator == Generator::Gso,
                raw_frames: self.cfg.generator == Generator::Auto,
                raw_tx: self.cfg.raw_tx,
                server_sndbuf: self.cfg.bidirectional.then_some(TESTER_SNDBUF),
                smooth_pacing: true,
                profile: self.cfg.profile,
                ..spec
            },
            // A queue on the path (a shaper on this host) holds datagrams charged to the
            // sending socket: a large send buffer keeps it from pushing the tester back.
            local: crate::sys::sockets::SockOpts {
                sndbuf: Some(TESTER_SNDBUF),
                ..Default::default()
            },
            client_cpu: None,
            connect_timeout: self.cfg.connect_timeout,
            debug: Debug(false),
            auth: self.cfg.auth.clone(),
            max_time: None,
        }
    }

    fn execute(&mut self, plan: &StreamPlan, payload: u32) -> anyhow::Result<TrialOutcome> {
        self.settle()?;
        let dut = self.dut.as_mut().map(|d| d as &mut dyn client::WindowWatch);
        let rec = client::run_with_dut(plan, &mut client::Quiet, self.interrupt, dut);
        self.last_end = Some(Instant::now());
        let rec = rec?;
        if rec.interrupted {
            if self.interrupt.load(Relaxed) {
                return Err(Interrupted.into());
            }
            bail!("the trial ended early: {}", rec.warnings.join("; "));
        }
        if let Some(f) = &rec.failure {
            bail!("the trial failed: {f}");
        }
        if let Some(s) = &rec.server {
            self.server_boot_id = s.host.boot_id.clone();
        }
        let mut o = outcome(&rec, payload, self.cfg.ip)?;
        if plan.spec.profile.is_some() {
            o.profile = Some(profiles(&rec, &mut o.warnings));
        }
        Ok(o)
    }

    fn payload(&self, frame: u32) -> anyhow::Result<u32> {
        frame_sizes::udp_payload(frame, self.cfg.ip).map_err(|e| anyhow!(e))
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl Trial for NetTrial<'_> {
    fn run(&mut self, frame: u32, offered_fps: f64, dur: Duration) -> anyhow::Result<TrialOutcome> {
        let payload = self.payload(frame)?;
        let mut plan = self.plan(payload);
        plan.spec.duration_ms = Some(ms(dur));
        plan.spec.rate_bps = offered_fps
            .is_finite()
            .then(|| frame_sizes::payload_bps(offered_fps, payload));
        self.execute(&plan, payload)
    }

    fn run_tagged(
        &mut self,
        frame: u32,
        offered_fps: f64,
        dur: Duration,
    ) -> anyhow::Result<TrialOutcome> {
        let payload = self.payload(frame)?;
        let mut plan = self.plan(payload);
        plan.spec.duration_ms = Some(ms(dur));
        plan.spec.rate_bps = Some(frame_sizes::payload_bps(offered_fps, payload));
        // The frame sent half-way through the trial is the tagged one (RFC 2544 §26.2 tags
        // one after 60 s of a 120 s stream).
        let tag_seq = (offered_fps * dur.as_secs_f64() / 2.0).floor();
        plan.spec.one_way_delay = Some(DelaySpec {
            tag_seq: (tag_seq.is_finite() && tag_seq >= 0.0).then_some(tag_seq as u64),
        });
        self.execute(&plan, payload)
    }

    fn burst(&mut self, frame: u32, frames: u64) -> anyhow::Result<TrialOutcome> {
        let payload = self.payload(frame)?;
        let mut plan = self.plan(payload);
        plan.spec.duration_ms = None;
        plan.spec.bytes = Some(frames.max(1) * u64::from(payload));
        self.execute(&plan, payload)
    }
}

/// The snmp counter of frames dropped at a full UDP receive buffer.
fn rcvbuf_counter(ip: IpVersion) -> &'static str {
    match ip {
        IpVersion::V4 => "Udp.RcvbufErrors",
        IpVersion::V6 => "Udp6.RcvbufErrors",
    }
}

/// Frames the receiving host dropped at full UDP receive buffers during the trial, from the
/// host counters its end reported; `None` when it did not report them.
fn rcvbuf_drops(side: Option<&SideReport>, ip: IpVersion) -> Option<u64> {
    let counters = side?.host_counters.as_ref()?;
    counters.snmp.as_ref()?.get(rcvbuf_counter(ip)).copied()
}

/// Packets of the host's own TCP (the control connection) and ICMP over the trial, from
/// the SNMP counters an end reported: `(sent, received)`.
fn other_packets(side: &SideReport) -> Option<(u64, u64)> {
    let snmp = side.host_counters.as_ref()?.snmp.as_ref()?;
    let get = |k: &str| snmp.get(k).copied().unwrap_or(0);
    // Without the TCP counters nothing is known about the control connection.
    snmp.get("Tcp.OutSegs")?;
    let out =
        get("Tcp.OutSegs") + get("Tcp.RetransSegs") + get("Icmp.OutMsgs") + get("Icmp6.OutMsgs");
    let inn = get("Tcp.InSegs") + get("Icmp.InMsgs") + get("Icmp6.InMsgs");
    Some((out, inn))
}

/// An end's interface counts for the cross-check: `(name, tx_packets, rx_packets)` over the
/// trial with its TCP and ICMP packets taken off; `None` when it reported no interface
/// statistics, or the interface is loopback (it counts both ends' packets alike).
fn iface_counts(side: Option<&SideReport>) -> Option<(String, u64, u64)> {
    let side = side?;
    let hc = side.host_counters.as_ref()?;
    let name = hc.interface.clone()?;
    if name == "lo" {
        return None;
    }
    let st = hc.interface_stats.as_ref()?;
    let (out, inn) = other_packets(side)?;
    Some((
        name,
        st.tx_packets.saturating_sub(out),
        st.rx_packets.saturating_sub(inn),
    ))
}

/// How an end's sending stream put its frames on the wire.
fn tx_path(side: Option<&SideReport>) -> Option<TxPath> {
    side?
        .streams
        .iter()
        .filter(|s| s.role == StreamRole::Tx)
        .find_map(|s| s.tx_path)
}

/// Whether both ends ran on one kernel (one boot id): then they share a clock.
fn same_clock(rec: &RunRecord) -> bool {
    match (
        rec.client.host.boot_id.as_deref(),
        rec.server.as_ref().and_then(|s| s.host.boot_id.as_deref()),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Turns a run record into a trial outcome (pure; see the module docs).
pub fn outcome(rec: &RunRecord, payload: u32, ip: IpVersion) -> anyhow::Result<TrialOutcome> {
    let mut warnings = rec.warnings.clone();
    let same_clock = same_clock(rec);
    let mut ways = Vec::new();
    let mut names = std::collections::BTreeMap::new();
    for f in &rec.summary.flows {
        let (way, sender_cpu, sender, receiver) = match f.direction {
            FlowDirection::ClientToServer => (
                Way::Forward,
                Some(&rec.summary.client),
                Some(&rec.client),
                rec.server.as_ref(),
            ),
            FlowDirection::ServerToClient => (
                Way::Reverse,
                rec.summary.server.as_ref(),
                rec.server.as_ref(),
                Some(&rec.client),
            ),
        };
        let udp = f.udp.as_ref().ok_or_else(|| {
            anyhow!(
                "the receiver of the {} direction sent no figures: the trial cannot be counted",
                way.label()
            )
        })?;
        let sent = f.sender_bytes / u64::from(payload.max(1));
        let achieved_fps = if f.sender_duration_ns > 0 {
            sent as f64 * 1e9 / f.sender_duration_ns as f64
        } else {
            0.0
        };
        let tester_rx_dropped = rcvbuf_drops(receiver, ip);
        if tester_rx_dropped.is_none() {
            warnings.push(format!(
                "frames dropped at the tester's own receive socket are not counted apart: the receiving end reported no {} (older linerate, or /proc/net/snmp unreadable)",
                rcvbuf_counter(ip)
            ));
        }
        let mut delay = udp.one_way_delay.clone();
        if delay.is_some() && !same_clock {
            delay = None;
            warnings.push(
                "one-way delay left out: the two ends do not share a clock (different kernel boot ids)".into(),
            );
        }
        let tx = iface_counts(sender);
        let rx = iface_counts(receiver);
        if let (Some((a, ..)), Some((b, ..))) = (&tx, &rx) {
            names.insert((way, CountedAt::SenderTx), a.clone());
            names.insert((way, CountedAt::ReceiverRx), b.clone());
        }
        // Two ends on one host with one interface name (a shared bridge port, two
        // addresses on one NIC) mix both directions in one counter: not comparable.
        let shared =
            same_clock && tx.as_ref().map(|t| &t.0) == rx.as_ref().map(|r| &r.0) && tx.is_some();
        if shared {
            warnings.push(format!(
                "frames are not cross-checked with interface counters: both ends report interface {} on one host",
                tx.as_ref().map_or("", |t| t.0.as_str())
            ));
        } else if tx.is_none() || rx.is_none() {
            warnings.push(format!(
                "the {} frames are not cross-checked with the {} interface counters: that end reported none (older linerate, loopback, or unreadable statistics)",
                way.label(),
                if tx.is_none() { "sender's" } else { "receiver's" }
            ));
        }
        ways.push(WayOutcome {
            way,
            sent,
            received: udp.packets.saturating_sub(udp.duplicates),
            tester_rx_dropped,
            achieved_fps,
            sender_cpu_percent: sender_cpu.and_then(|e| e.tool_cpu_percent),
            delay,
            tx_path: tx_path(sender),
            raw_tx: raw_tx(sender),
            iface_tx_packets: tx.filter(|_| !shared).map(|t| t.1),
            iface_rx_packets: rx.filter(|_| !shared).map(|r| r.2),
        });
    }
    if ways.is_empty() {
        bail!("the trial carried no data in any direction");
    }
    let name = |w: Way, at: CountedAt| {
        names
            .get(&(w, at))
            .cloned()
            .unwrap_or_else(|| "the interface".into())
    };
    let mut o = trial_mod::checked(ways, warnings, &name);
    o.dut = rec.dut.clone();
    Ok(o)
}

/// The kernel path the sending end's raw frames took (AF_XDP or the AF_PACKET ring).
fn raw_tx(sender: Option<&SideReport>) -> Option<linerate_wire::report::RawTx> {
    sender.and_then(|s| {
        s.streams
            .iter()
            .filter(|s| s.role == StreamRole::Tx)
            .find_map(|s| s.raw_tx)
    })
}

/// `--profile`: both ends' profiles of the trial. An end
/// that did not profile says why in its own warnings; those are the trial's too, named by
/// end, so that the run's warnings carry them.
fn profiles(rec: &RunRecord, warnings: &mut Vec<String>) -> Box<TrialProfile> {
    let ends = [
        ("client", Some(&rec.client)),
        ("server", rec.server.as_ref()),
    ];
    for (end, side) in ends {
        let Some(side) = side else { continue };
        for w in side.warnings.iter().filter(|w| w.starts_with("--profile")) {
            let w = format!("the {end}: {w}");
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    Box::new(TrialProfile {
        client: rec.client.profile.clone(),
        server: rec.server.as_ref().and_then(|s| s.profile.clone()),
    })
}
