//! A lab's lifecycle: building the namespaces, veths, addresses, routes, shaping and loss of
//! a [`Plan`] with `ip`, `tc`, `sysctl` and `nft`, running commands in its hosts, and tearing
//! it down.
//!
//! Invariants:
//! * Each namespace's `lo` carries an alias that is unique to the [`Lab`] value that
//!   created it; teardown from a `Lab` value only deletes namespaces that still carry its
//!   alias, so a stale value never deletes a lab re-created under the same name.
//!   [`Lab::down_by_name`] deletes regardless.
//! * If building fails half-way, everything created so far is deleted before the error is
//!   returned; dropping a `Lab` deletes its namespaces (errors are only logged).

use portable_atomic::AtomicU64;
use std::ffi::OsStr;
use std::net::IpAddr;
use std::process::{Child, Command, Output};
use std::sync::atomic::Ordering;

use crate::cmd;
use crate::error::{LabError, Result};
use crate::netns;
use crate::shape::{self, LossHook, QdiscStats, Shaping};
use crate::topology::{
    group_labs, parse_ifalias, parse_ns_name, plan, validate_name, HostPlan, Interface, LabInfo,
    LabOptions, Plan, Topology, PREFIX_LEN_V4, PREFIX_LEN_V6,
};

static LAB_COUNTER: AtomicU64 = AtomicU64::new(0);

fn new_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "linerate-lab:{}:{}:{}",
        std::process::id(),
        LAB_COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// A created topology. Dropping it deletes its namespaces (and with them its
/// veths, qdiscs and nftables tables); use [`Lab::down`] to see errors.
#[derive(Debug)]
pub struct Lab {
    plan: Plan,
    /// Identifies this value's namespaces (alias of each namespace's `lo`).
    token: String,
    /// Namespaces created so far, in creation order.
    created: Vec<String>,
}

impl Lab {
    /// Creates lab `name` with hosts `a` and `b` on one link
    /// (see [`Lab::up`]).
    pub fn pair(name: &str, opts: &LabOptions) -> Result<Lab> {
        Lab::up(name, Topology::Pair, opts)
    }

    /// Creates lab `name` with hosts `a` — `r` — `b` (see [`Lab::up`]).
    pub fn router(name: &str, opts: &LabOptions) -> Result<Lab> {
        Lab::up(name, Topology::Router, opts)
    }

    /// Creates lab `name` of `topology`.
    ///
    /// Idempotent by teardown-and-recreate: if namespaces of a lab with this
    /// name exist (from an earlier run, a crash, or another `Lab` value),
    /// they are deleted first. If creation fails half-way, everything created
    /// so far is deleted before the error is returned.
    pub fn up(name: &str, topology: Topology, opts: &LabOptions) -> Result<Lab> {
        let plan = plan(name, topology)?;
        opts.validate()?;
        cmd::require_privileges()?;
        cmd::tool_path("ip")?;
        if topology == Topology::Router {
            cmd::tool_path("sysctl")?;
        }
        if opts.rate_limit.is_some() {
            cmd::tool_path("tc")?;
        }
        if opts.loss.is_some_and(|l| l > 0.0) {
            cmd::tool_path("nft")?;
        }
        Lab::down_by_name(name)?;
        let mut lab = Lab {
            plan,
            token: new_token(),
            created: Vec::new(),
        };
        // On any error below, `lab` is dropped and deletes what was created.
        lab.build(opts)?;
        Ok(lab)
    }

    fn build(&mut self, opts: &LabOptions) -> Result<()> {
        for host in &self.plan.hosts {
            netns::add(&host.ns)?;
            self.created.push(host.ns.clone());
            ip(
                &host.ns,
                &["link", "set", "dev", "lo", "up", "alias", &self.token],
            )?;
            if host.forwarding {
                cmd::run(
                    "ip",
                    &[
                        "netns",
                        "exec",
                        &host.ns,
                        "sysctl",
                        "-q",
                        "-w",
                        "net.ipv4.ip_forward=1",
                        "net.ipv6.conf.all.forwarding=1",
                    ],
                )?;
            }
        }
        let mtu = opts.mtu.map(|m| m.to_string());
        for link in &self.plan.links {
            let (lh, li) = link.left;
            let (rh, ri) = link.right;
            let (left, right) = (&self.plan.hosts[lh], &self.plan.hosts[rh]);
            let mut args = vec!["link", "add", &left.ifaces[li].name, "netns", &left.ns];
            if let Some(m) = &mtu {
                args.extend(["mtu", m]);
            }
            args.extend(["type", "veth", "peer", "name", &right.ifaces[ri].name]);
            args.extend(["netns", &right.ns]);
            if let Some(m) = &mtu {
                args.extend(["mtu", m]);
            }
            cmd::run("ip", &args)?;
        }
        for host in &self.plan.hosts {
            for iface in &host.ifaces {
                let v4 = format!("{}/{PREFIX_LEN_V4}", iface.addr);
                let v6 = format!("{}/{PREFIX_LEN_V6}", iface.addr6);
                ip(&host.ns, &["addr", "add", &v4, "dev", &iface.name])?;
                ip(
                    &host.ns,
                    &["-6", "addr", "add", &v6, "dev", &iface.name, "nodad"],
                )?;
                ip(&host.ns, &["link", "set", "dev", &iface.name, "up"])?;
            }
            if let Some((gw, gw6)) = host.gateway {
                ip(
                    &host.ns,
                    &["route", "add", "default", "via", &gw.to_string()],
                )?;
                ip(
                    &host.ns,
                    &["-6", "route", "add", "default", "via", &gw6.to_string()],
                )?;
            }
        }
        if let Some(shaping) = &opts.rate_limit {
            for (on, (h, i)) in [
                (opts.rate_ways.toward_b(), self.plan.shaped),
                (opts.rate_ways.toward_a(), self.plan.shaped_back),
            ] {
                if on {
                    let host = &self.plan.hosts[h];
                    shape::apply(&host.ns, &host.ifaces[i].name, shaping)?;
                }
            }
        }
        if let Some(loss) = opts.loss {
            if loss > 0.0 {
                let host = self.plan.hosts[self.plan.lossy].name.clone();
                self.set_loss(&host, loss)?;
            }
        }
        Ok(())
    }

    /// Deletes the namespaces of lab `name`, whoever created them.
    /// Succeeds if none exist (without needing root in that case).
    pub fn down_by_name(name: &str) -> Result<()> {
        validate_name(name)?;
        let mut existing: Vec<String> = netns::list_namespaces()?
            .into_iter()
            .filter(|ns| parse_ns_name(ns).is_some_and(|(n, _)| n == name))
            .collect();
        if existing.is_empty() {
            return Ok(());
        }
        cmd::require_privileges()?;
        existing.reverse();
        let errors: Vec<String> = existing
            .iter()
            .filter_map(|ns| netns::delete(ns).err().map(|e| e.to_string()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(LabError::Teardown {
                lab: name.to_string(),
                errors,
            })
        }
    }

    /// Labs whose namespaces exist on this machine (namespaces named
    /// `lr-NAME-HOST`), sorted by name.
    pub fn list() -> Result<Vec<LabInfo>> {
        Ok(group_labs(&netns::list_namespaces()?))
    }

    /// Deletes this lab's namespaces, reporting errors.
    pub fn down(mut self) -> Result<()> {
        self.teardown()
    }

    /// Leaves the lab in place: dropping the value no longer deletes it. For
    /// `linerate lab up`, whose process ends while the lab lives on; remove it later
    /// with [`Lab::down_by_name`].
    pub fn detach(mut self) {
        self.created.clear();
    }

    /// Deletes the namespaces this value created, newest first, skipping any
    /// that no longer carry this value's token (deleted or re-created).
    fn teardown(&mut self) -> Result<()> {
        let mut errors = Vec::new();
        while let Some(ns) = self.created.pop() {
            if !netns::exists(&ns) {
                continue;
            }
            match cmd::run("ip", &["-n", &ns, "-j", "link", "show", "dev", "lo"]) {
                Ok(out) => {
                    let alias = parse_ifalias(&String::from_utf8_lossy(&out.stdout));
                    if alias.as_deref() != Some(self.token.as_str()) {
                        // Re-created by someone else under the same name.
                        continue;
                    }
                }
                // Gone in the meantime: nothing to do.
                Err(_) if !netns::exists(&ns) => continue,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            }
            if let Err(e) = netns::delete(&ns) {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(LabError::Teardown {
                lab: self.plan.name.clone(),
                errors,
            })
        }
    }

    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    /// The lab's topology.
    pub fn topology(&self) -> Topology {
        self.plan.topology
    }

    /// The lab's plan (names and addresses).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Host names in topology order: `["a", "b"]` or `["a", "r", "b"]`.
    pub fn hosts(&self) -> Vec<&str> {
        self.plan.hosts.iter().map(|h| h.name.as_str()).collect()
    }

    fn host(&self, host: &str) -> Option<&HostPlan> {
        self.plan.hosts.iter().find(|h| h.name == host)
    }

    fn host_or_err(&self, host: &str) -> Result<&HostPlan> {
        self.host(host).ok_or_else(|| LabError::UnknownHost {
            lab: self.plan.name.clone(),
            host: host.to_string(),
            hosts: self.hosts().join(", "),
        })
    }

    fn path_iface(&self, host: &str) -> Option<&Interface> {
        self.host(host).map(|h| &h.ifaces[h.path_iface])
    }

    /// Namespace name of `host` (`lr-NAME-HOST`).
    pub fn ns_name(&self, host: &str) -> Option<&str> {
        self.host(host).map(|h| h.ns.as_str())
    }

    /// IPv4 address of `host` on the test path (for `r`: the one facing `b`;
    /// see [`Lab::interfaces`] for both).
    pub fn addr(&self, host: &str) -> Option<IpAddr> {
        self.path_iface(host).map(|i| IpAddr::V4(i.addr))
    }

    /// IPv6 address of `host` on the test path (for `r`: the one facing `b`).
    pub fn addr6(&self, host: &str) -> Option<IpAddr> {
        self.path_iface(host).map(|i| IpAddr::V6(i.addr6))
    }

    /// Path interface of `host` inside its namespace (for `r`: the one
    /// facing `b`, where the lab's shaping goes).
    pub fn iface(&self, host: &str) -> Option<&str> {
        self.path_iface(host).map(|i| i.name.as_str())
    }

    /// All interfaces of `host`, in link order (`r` has two).
    pub fn interfaces(&self, host: &str) -> Option<&[Interface]> {
        self.host(host).map(|h| h.ifaces.as_slice())
    }

    /// (host, interface) whose egress carries [`LabOptions::rate_limit`] towards `b`.
    pub fn shaped_link(&self) -> (&str, &str) {
        let (h, i) = self.plan.shaped;
        let host = &self.plan.hosts[h];
        (&host.name, &host.ifaces[i].name)
    }

    /// (host, interface) whose egress carries traffic towards `a`, where
    /// [`crate::ShapedWays::TowardA`] and [`crate::ShapedWays::Both`] put a shaper.
    pub fn shaped_link_back(&self) -> (&str, &str) {
        let (h, i) = self.plan.shaped_back;
        let host = &self.plan.hosts[h];
        (&host.name, &host.ifaces[i].name)
    }

    /// Host whose namespace holds the loss rule of [`LabOptions::loss`]
    /// (`b` in a pair, `r` in a router).
    pub fn lossy_host(&self) -> &str {
        &self.plan.hosts[self.plan.lossy].name
    }

    /// Runs `args` (program first) in `host`'s namespace via
    /// `ip netns exec` and returns its output, whatever its exit status.
    pub fn exec(&self, host: &str, args: &[&str]) -> Result<Output> {
        let ns = &self.host_or_err(host)?.ns;
        if args.is_empty() {
            return Err(LabError::InvalidOption(
                "exec needs a program to run".into(),
            ));
        }
        let mut full = vec!["netns", "exec", ns.as_str()];
        full.extend_from_slice(args);
        cmd::output("ip", &full)
    }

    /// A `Command` that runs `program` in `host`'s namespace
    /// (`ip netns exec NS program`); add arguments, stdio etc. and spawn it.
    pub fn command(&self, host: &str, program: impl AsRef<OsStr>) -> Result<Command> {
        let ns = &self.host_or_err(host)?.ns;
        let mut command = Command::new(cmd::tool_path("ip")?);
        command.args([OsStr::new("netns"), OsStr::new("exec"), OsStr::new(ns)]);
        command.arg(program);
        Ok(command)
    }

    /// Spawns `cmd` inside `host`'s namespace via `ip netns exec`, copying
    /// its program, arguments, environment changes and working directory.
    /// Stdio cannot be copied from a `Command`: the child inherits it; use
    /// [`Lab::command`] for control over stdio. `env_clear` is not carried
    /// over either. The caller must reap the child, and a child still
    /// running keeps the namespace alive after the lab is torn down.
    pub fn spawn(&self, host: &str, cmd: &Command) -> Result<Child> {
        let mut command = self.command(host, cmd.get_program())?;
        command.args(cmd.get_args());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(v) => command.env(key, v),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            command.current_dir(dir);
        }
        let line = cmd::cmdline("ip", &command.get_args().collect::<Vec<_>>());
        command
            .spawn()
            .map_err(|e| LabError::io(format!("starting `{line}`"), e))
    }

    /// Runs `f` on a thread inside `host`'s namespace (see [`crate::run_in`]).
    pub fn run_in<F, R>(&self, host: &str, f: F) -> Result<R>
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        netns::run_in(&self.host_or_err(host)?.ns, f)
    }

    /// Rate-limits the egress of `iface` in `host`'s namespace, replacing any
    /// previous shaping there.
    pub fn shape(&self, host: &str, iface: &str, shaping: &Shaping) -> Result<()> {
        shape::apply(&self.host_or_err(host)?.ns, iface, shaping)
    }

    /// Removes shaping from `iface` in `host`'s namespace.
    pub fn clear_shaping(&self, host: &str, iface: &str) -> Result<()> {
        shape::clear(&self.host_or_err(host)?.ns, iface)
    }

    /// Root qdisc counters of `iface` in `host`'s namespace.
    pub fn qdisc_stats(&self, host: &str, iface: &str) -> Result<QdiscStats> {
        shape::qdisc_stats(&self.host_or_err(host)?.ns, iface)
    }

    /// Drops `fraction` (`0..=1`) of the packets towards `b` in `host`'s
    /// namespace, replacing any previous loss there; 0 removes it. For a
    /// forwarding host (`r`) the rule matches packets forwarded out of its
    /// `b`-facing interface; for `a`/`b` it matches packets arriving on their
    /// path interface.
    pub fn set_loss(&self, host: &str, fraction: f64) -> Result<()> {
        let h = self.host_or_err(host)?;
        let iface = h.ifaces[h.path_iface].name.clone();
        let hook = if h.forwarding {
            LossHook::Forward { oif: iface }
        } else {
            LossHook::Input { iif: iface }
        };
        shape::set_loss(&h.ns, &hook, fraction)
    }

    /// Packets dropped so far by the loss rule in `host`'s namespace.
    pub fn loss_dropped(&self, host: &str) -> Result<u64> {
        shape::loss_dropped(&self.host_or_err(host)?.ns)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("linerate-lab: {e}");
        }
    }
}

fn ip(ns: &str, args: &[&str]) -> Result<()> {
    let mut full = vec!["-n", ns];
    full.extend_from_slice(args);
    cmd::run("ip", &full).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique() {
        assert_ne!(new_token(), new_token());
    }
}
