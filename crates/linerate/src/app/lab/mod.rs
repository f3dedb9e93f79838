//! `linerate lab`: create, list, use and remove network-namespace labs (linerate-lab), so
//! that linerate can be tried on one machine; the integration tests use the same code.

use std::process::ExitCode;
use std::time::Duration;

use linerate_lab::topology::{self, plan, Topology};
use linerate_lab::{netns, Lab, LabOptions, ShapedWays, Shaping, ShapingKind};

use super::write_out;
use crate::cli::lab::{LabArgs, LabCommand, LabUpArgs};
use crate::cli::UsageError;

pub mod delay;

/// Runs a `linerate lab` subcommand.
pub fn command(a: &LabArgs) -> anyhow::Result<ExitCode> {
    crate::cli::linux_only("linerate lab (network namespaces)")?;
    match &a.command {
        LabCommand::Up(u) => up(u),
        LabCommand::Down { name } => down(name),
        LabCommand::List => list(),
        LabCommand::DelayLine { name, delay, queue } => {
            delay::run(name, *delay, *queue).map(|()| ExitCode::SUCCESS)
        }
        LabCommand::Exec {
            name,
            host,
            command,
        } => exec(name, host, command),
    }
}

fn topology(s: &str) -> Result<Topology, UsageError> {
    match s {
        "pair" => Ok(Topology::Pair),
        "router" => Ok(Topology::Router),
        other => Err(UsageError(format!(
            "--topology {other}: use pair (a - b) or router (a - r - b)"
        ))),
    }
}

/// The options of `lab up`, validated.
pub fn options(u: &LabUpArgs) -> Result<(Topology, LabOptions), UsageError> {
    let topo = topology(&u.topology)?;
    let kind = match u.shaper.as_str() {
        "tbf" => ShapingKind::Tbf,
        "htb" => ShapingKind::Htb,
        other => {
            return Err(UsageError(format!("--shaper {other}: use tbf or htb")));
        }
    };
    let rate_limit = match u.rate {
        Some(0) => {
            return Err(UsageError(
                "--rate 0 is not a rate: leave it out for an unshaped link".into(),
            ))
        }
        Some(r) => Some(Shaping {
            kind,
            limit_bytes: match u.queue {
                Some(0) => return Err(UsageError("--queue 0 holds nothing: give bytes such as 32K, or leave it out for the default".into())),
                q => q,
            },
            ..Shaping::tbf(r)
        }),
        None => None,
    };
    let rate_ways = match u.rate_dir.as_str() {
        "both" => ShapedWays::Both,
        "to-b" => ShapedWays::TowardB,
        "to-a" => ShapedWays::TowardA,
        other => {
            return Err(UsageError(format!(
                "--rate-dir {other}: use both, to-b (a -> b) or to-a (b -> a)"
            )))
        }
    };
    let opts = LabOptions {
        mtu: u.mtu,
        rate_limit,
        rate_ways,
        loss: u.loss,
    };
    topology::validate_name(&u.name).map_err(|e| UsageError(e.to_string()))?;
    opts.validate().map_err(|e| UsageError(format!("{e}")))?;
    Ok((topo, opts))
}

/// What `lab up` prints: each host's addresses, which directions are shaped and where, and
/// how to start.
pub fn describe(p: &topology::Plan, opts: &LabOptions) -> String {
    let mut out = format!(
        "lab {} is up ({}):\n",
        p.name,
        match p.topology {
            Topology::Pair => "a - b",
            Topology::Router => "a - r - b, r forwards",
        }
    );
    for h in &p.hosts {
        let addrs: Vec<String> = h
            .ifaces
            .iter()
            .map(|i| format!("{} / {} (towards {})", i.addr, i.addr6, i.peer))
            .collect();
        out.push_str(&format!(
            "  {:<2} {:<12} {}\n",
            h.name,
            h.ns,
            addrs.join(", ")
        ));
    }
    if let Some(s) = &opts.rate_limit {
        let at = |(h, i): (usize, usize)| {
            let host = &p.hosts[h];
            format!("{} on {}", host.ifaces[i].name, host.name)
        };
        let mut ways = Vec::new();
        if opts.rate_ways.toward_b() {
            ways.push(format!("a -> b ({})", at(p.shaped)));
        }
        if opts.rate_ways.toward_a() {
            ways.push(format!("b -> a ({})", at(p.shaped_back)));
        }
        let other = match opts.rate_ways {
            ShapedWays::Both => String::new(),
            ShapedWays::TowardB => "; b -> a is not shaped (--rate-dir both shapes it too)".into(),
            ShapedWays::TowardA => "; a -> b is not shaped (--rate-dir both shapes it too)".into(),
        };
        let queue = s
            .limit_bytes
            .map_or(String::new(), |q| format!(", queue {q} bytes"));
        out.push_str(&format!(
            "  shaped to {} bit/s ({}{queue}): {}{other}\n",
            s.rate_bps,
            match s.kind {
                ShapingKind::Tbf => "tbf",
                ShapingKind::Htb => "htb",
            },
            ways.join(", ")
        ));
    }
    let b = p
        .hosts
        .iter()
        .find(|h| h.name == "b")
        .and_then(|h| h.ifaces.first())
        .map_or_else(|| "B_ADDR".to_string(), |i| i.addr.to_string());
    out.push_str(&format!(
        "try it:\n  linerate lab exec {n} b -- linerate serve &\n  linerate lab exec {n} a -- linerate tcp {b}\nremove it with: linerate lab down {n}\n",
        n = p.name
    ));
    out
}

fn up(u: &LabUpArgs) -> anyhow::Result<ExitCode> {
    let (topo, opts) = options(u)?;
    let delay = delay_option(u, topo)?;
    // Re-creating a lab: end what still runs in the old one, or it would live on unseen.
    if let Some(old) = Lab::list()?.into_iter().find(|l| l.name == u.name) {
        linerate_lab::cmd::require_privileges()?;
        stop_processes(&u.name, &old.hosts);
    }
    let lab = Lab::up(&u.name, topo, &opts)?;
    let mut text = describe(lab.plan(), &opts);
    if let Some(d) = delay {
        // On an error `lab` is dropped, which deletes it: no lab without its delay.
        start_delay_line(&lab, d, u.delay_queue)?;
        text.push_str(&format!(
            "  delayed {} ms each way in r (the delay line's {} device, queue {} packets, counters in {})\n",
            d.as_secs_f64() * 1e3,
            delay::DEVICE,
            u.delay_queue,
            delay::stats_path(&u.name).display()
        ));
    }
    lab.detach();
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--delay`, refused where it cannot apply: in a pair (there is no router to hold packets),
/// zero, over 10 s, or with an empty queue.
fn delay_option(u: &LabUpArgs, topo: Topology) -> Result<Option<Duration>, UsageError> {
    let Some(d) = u.delay else { return Ok(None) };
    if topo != Topology::Router {
        return Err(UsageError(
            "--delay needs a router to hold the packets: add --topology router".into(),
        ));
    }
    if d.is_zero() || d > Duration::from_secs(10) {
        return Err(UsageError(format!(
            "--delay {d:?}: give a delay above 0 and at most 10s (e.g. 10ms), or leave it out"
        )));
    }
    if u.delay_queue == 0 {
        return Err(UsageError(
            "--delay-queue 0 holds nothing: give a number of packets such as 1000".into(),
        ));
    }
    Ok(Some(d))
}

/// Starts `linerate lab delay-line` in the lab's router namespace, in a process group of its
/// own so that it outlives this command, and waits for its `ready`.
fn start_delay_line(lab: &Lab, d: Duration, queue: usize) -> anyhow::Result<()> {
    use std::io::BufRead;
    use std::process::Stdio;
    let exe = std::env::current_exe()?;
    let mut cmd = lab.command("r", exe)?;
    cmd.args(["lab", "delay-line", lab.name(), "--delay"])
        .arg(format!("{}us", d.as_nanos() as f64 / 1e3))
        .args(["--queue", &queue.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::process::own_group(&mut cmd);
    let mut child = cmd.spawn()?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        std::io::BufReader::new(out).read_line(&mut line)?;
    }
    if line.trim() == "ready" {
        return Ok(());
    }
    let _ = child.kill();
    let out = child.wait_with_output()?;
    anyhow::bail!(
        "the delay line did not start: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    )
}

fn down(name: &str) -> anyhow::Result<ExitCode> {
    topology::validate_name(name).map_err(|e| UsageError(e.to_string()))?;
    let lab = Lab::list()?.into_iter().find(|l| l.name == name);
    if let Some(l) = &lab {
        linerate_lab::cmd::require_privileges()?;
        let stopped = stop_processes(name, &l.hosts);
        if stopped > 0 {
            eprintln!("stopped {stopped} process(es) still running in lab {name}");
        }
    }
    Lab::down_by_name(name)?;
    let _ = std::fs::remove_file(delay::stats_path(name));
    if lab.is_some() {
        write_out(&format!("lab {name} removed\n"))?;
    } else {
        write_out(&format!("no lab {name}: nothing to remove\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Ends the processes still running in the lab's namespaces (a `linerate serve` started with
/// `lab exec`, say): deleting a namespace only unnames it, and a process inside keeps it, its
/// links and their qdiscs alive. SIGTERM, then SIGKILL after a second. Returns how many there
/// were.
fn stop_processes(name: &str, hosts: &[String]) -> usize {
    use crate::sys::process::{alive, signal, Signal};
    let mut pids = Vec::new();
    for h in hosts {
        let ns = topology::ns_name_for(name, h);
        if let Ok(out) = linerate_lab::cmd::run("ip", &["netns", "pids", &ns]) {
            pids.extend(
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                    .filter(|p| *p > 1 && *p != std::process::id() as i32),
            );
        }
    }
    for p in &pids {
        let _ = signal(*p, Signal::Term);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while std::time::Instant::now() < deadline && pids.iter().any(|p| alive(*p)) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for p in &pids {
        let _ = signal(*p, Signal::Kill);
    }
    pids.len()
}

fn list() -> anyhow::Result<ExitCode> {
    let labs = Lab::list()?;
    if labs.is_empty() {
        write_out("no labs (create one with: linerate lab up NAME)\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for l in labs {
        let topo = if l.hosts.iter().any(|h| h == "r") {
            Topology::Router
        } else {
            Topology::Pair
        };
        let addrs = plan(&l.name, topo)
            .map(|p| {
                p.hosts
                    .iter()
                    .filter(|h| l.hosts.contains(&h.name))
                    .map(|h| {
                        let a: Vec<String> = h.ifaces.iter().map(|i| i.addr.to_string()).collect();
                        format!("{}={}", h.name, a.join("+"))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<12} {:<6} {}\n",
            l.name,
            if topo == Topology::Router {
                "router"
            } else {
                "pair"
            },
            addrs
        ));
    }
    write_out(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn exec(name: &str, host: &str, command: &[String]) -> anyhow::Result<ExitCode> {
    topology::validate_name(name).map_err(|e| UsageError(e.to_string()))?;
    let ns = topology::ns_name_for(name, host);
    if topology::parse_ns_name(&ns).is_none() || !netns::exists(&ns) {
        let known = Lab::list()?
            .into_iter()
            .find(|l| l.name == name)
            .map(|l| l.hosts.join(", "));
        return Err(match known {
            Some(hosts) => UsageError(format!("lab {name} has no host {host}: use one of {hosts}")),
            None => UsageError(format!(
                "no lab {name}: create it with `linerate lab up {name}`"
            )),
        }
        .into());
    }
    linerate_lab::cmd::require_privileges()?;
    let ip = linerate_lab::cmd::tool_path("ip")?;
    // Replace this process with `ip netns exec NS COMMAND...`: the command's exit status and
    // the signals sent to it need no passing on.
    let mut cmd = std::process::Command::new(ip);
    cmd.args(["netns", "exec", &ns]).args(command);
    let err = crate::sys::process::exec(&mut cmd);
    Err(anyhow::anyhow!("cannot run `ip netns exec {ns}`: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Args, Command};
    use clap::Parser;

    fn up_args(argv: &[&str]) -> LabUpArgs {
        let mut full = vec!["linerate", "lab", "up"];
        full.extend_from_slice(argv);
        match Args::try_parse_from(full).unwrap().command {
            Command::Lab(LabArgs {
                command: LabCommand::Up(u),
            }) => u,
            _ => unreachable!(),
        }
    }

    #[test]
    fn up_options_are_validated() {
        let (t, o) = options(&up_args(&[
            "x",
            "--topology",
            "router",
            "--rate",
            "20M",
            "--shaper",
            "htb",
            "--loss",
            "1%",
            "--mtu",
            "9000",
        ]))
        .unwrap();
        let (_, q) = options(&up_args(&["x", "--rate", "20M", "--queue", "1M"])).unwrap();
        assert_eq!(q.rate_limit.and_then(|s| s.limit_bytes), Some(1 << 20));
        // A queue belongs to a shaper: --queue without --rate does not parse.
        assert!(Args::try_parse_from(["linerate", "lab", "up", "x", "--queue", "1M"]).is_err());
        assert_eq!(t, Topology::Router);
        assert_eq!(o.rate_limit, Some(Shaping::htb(20_000_000)));
        assert_eq!(o.loss, Some(0.01));
        assert_eq!(o.mtu, Some(9000));
        for bad in [
            vec!["x", "--topology", "star"],
            vec!["x", "--rate", "1M", "--shaper", "cake"],
            vec!["Bad_Name"],
            vec!["x", "--mtu", "100"],
            vec!["x", "--rate", "1M", "--queue", "0"],
        ] {
            // Refused by the parser (clap's `requires`) or by the validation.
            let mut full = vec!["linerate", "lab", "up"];
            full.extend_from_slice(&bad);
            let refused = match Args::try_parse_from(full) {
                Err(_) => true,
                Ok(a) => match a.command {
                    Command::Lab(LabArgs {
                        command: LabCommand::Up(u),
                    }) => options(&u).is_err(),
                    _ => false,
                },
            };
            assert!(refused, "{bad:?}");
        }
    }

    #[test]
    fn exec_keeps_the_command_verbatim() {
        let a = Args::try_parse_from([
            "linerate", "lab", "exec", "demo", "b", "--", "linerate", "serve", "-p", "6000",
        ])
        .unwrap();
        match a.command {
            Command::Lab(LabArgs {
                command:
                    LabCommand::Exec {
                        name,
                        host,
                        command,
                    },
            }) => {
                assert_eq!((name.as_str(), host.as_str()), ("demo", "b"));
                assert_eq!(command, ["linerate", "serve", "-p", "6000"]);
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn describe_prints_addresses_and_an_example() {
        let p = plan("demo", Topology::Router).unwrap();
        let text = describe(&p, &LabOptions::default());
        let b = p.hosts[2].ifaces[0].addr.to_string();
        assert!(
            text.contains(&format!("linerate lab exec demo a -- linerate tcp {b}")),
            "{text}"
        );
        assert!(text.contains("lr-demo-r"), "{text}");
        assert!(!text.contains("shaped"), "{text}");
    }

    #[test]
    fn rate_shapes_both_ways_by_default_and_says_where() {
        let args = |extra: &[&str]| {
            let mut argv = vec!["linerate", "lab", "up", "demo", "--topology", "router"];
            argv.extend_from_slice(extra);
            match Args::try_parse_from(argv).unwrap().command {
                Command::Lab(LabArgs {
                    command: LabCommand::Up(u),
                }) => u,
                _ => unreachable!(),
            }
        };
        let (topo, opts) = options(&args(&["--rate", "20M"])).unwrap();
        assert_eq!(opts.rate_ways, ShapedWays::Both);
        let p = plan("demo", topo).unwrap();
        let text = describe(&p, &opts);
        let (to_b, to_a) = (&p.hosts[1].ifaces[1].name, &p.hosts[1].ifaces[0].name);
        assert!(
            text.contains(&format!(
                "shaped to 20000000 bit/s (tbf): a -> b ({to_b} on r), b -> a ({to_a} on r)"
            )),
            "{text}"
        );
        let (_, opts) = options(&args(&["--rate", "20M", "--rate-dir", "to-b"])).unwrap();
        assert_eq!(opts.rate_ways, ShapedWays::TowardB);
        assert!(describe(&p, &opts).contains("b -> a is not shaped"));
        let e = options(&args(&["--rate", "20M", "--rate-dir", "up"])).unwrap_err();
        assert!(e.0.contains("--rate-dir up"), "{}", e.0);
    }
}
