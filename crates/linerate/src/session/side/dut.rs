//! The tester's side of `--dut HOST[:PORT]`: a counters-only control session to the
//! `linerate serve` on the device under test (feature `device_counters`), asked for a
//! snapshot before and after every trial or measured window.
//!
//! The session is opened (and the device's version checked) before the first test, so an
//! unreachable device or an old server is a one-line error up front. Once the run has
//! started, a device that stops answering costs a warning: the probe closes, every later
//! window has no device section, and the run goes on (each wait is bounded by
//! `DUT_ANSWER_WAIT`).

use std::time::Instant;

use linerate_wire::control::Feature;
use linerate_wire::device::DeviceSnapshot;

use crate::model::dut::DutCounters;
use crate::session::protocol::client::{self, Connection, Target, WindowWatch};

/// An open counters session to the device under test.
pub struct DutProbe {
    /// The device as the user named it (`HOST:PORT`).
    name: String,
    conn: Option<Connection>,
    tester_boot_id: Option<String>,
    /// Why the probe stopped, once it did (said once).
    lost: Option<String>,
    /// The snapshot at the start of the window being watched, if any.
    before: Option<DeviceSnapshot>,
}

impl DutProbe {
    /// Connects to the device's `linerate serve` and checks that it offers device
    /// counters; the error says what to fix.
    pub fn open(t: &Target) -> anyhow::Result<DutProbe> {
        let conn = client::connect(t).map_err(|e| anyhow::anyhow!("--dut {}: {e}", t.server))?;
        if !conn.features().has(Feature::DeviceCounters) {
            let software = conn
                .welcome()
                .map(|w| w.software.clone())
                .unwrap_or_default();
            anyhow::bail!(
                "{}'s linerate serve is too old for --dut: it does not offer device counters ({}): upgrade linerate there, or leave out --dut",
                t.server,
                linerate_wire::text::clip(&software, 64)
            );
        }
        Ok(DutProbe {
            name: t.server.clone(),
            conn: Some(conn),
            tester_boot_id: crate::sys::host::boot_id(),
            lost: None,
            before: None,
        })
    }

    /// The device as named.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A snapshot now; `None` once the device stopped answering (see [`DutProbe::take_lost`]).
    pub fn snapshot(&mut self) -> Option<DeviceSnapshot> {
        let conn = self.conn.as_mut()?;
        match conn.counters(Instant::now()) {
            Ok(s) => Some(s),
            Err(e) => {
                self.conn = None;
                self.lost = Some(format!(
                    "--dut {}: the device stopped answering ({e}); the device's counters end here",
                    self.name
                ));
                None
            }
        }
    }

    /// The device's counters from `before` to `after`.
    pub fn between(&self, before: &DeviceSnapshot, after: &DeviceSnapshot) -> DutCounters {
        DutCounters::between(&self.name, before, after, self.tester_boot_id.as_deref())
    }

    /// The warning of a device that stopped answering, once.
    pub fn take_lost(&mut self) -> Option<String> {
        self.lost.take()
    }

    /// Whether the device still answers.
    pub fn is_open(&self) -> bool {
        self.conn.is_some()
    }
}

/// A window of a test seen by the device: a snapshot at its start and at its end.
impl WindowWatch for DutProbe {
    /// The window starts: snapshot now.
    fn window_start(&mut self) {
        self.before = self.snapshot();
    }

    /// The window ends: snapshot now and the differences, or the warnings of why not.
    fn window_end(&mut self) -> (Option<DutCounters>, Vec<String>) {
        let probe = self;
        let mut w = Vec::new();
        let before = probe.before.take();
        let after = before.as_ref().and_then(|_| probe.snapshot());
        w.extend(probe.take_lost());
        match (before, after) {
            (Some(b), Some(a)) => (Some(probe.between(&b, &a)), w),
            _ => {
                if w.is_empty() {
                    w.push(format!(
                        "--dut {}: the device's counters are not available for this window (it stopped answering earlier)",
                        probe.name()
                    ));
                }
                (None, w)
            }
        }
    }
}
