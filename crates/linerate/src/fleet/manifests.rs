//! `linerate fleet manifests`: the objects an engine needs to run a fleet. The engine places
//! the processes; linerate only plans and runs the tests between them.
//!
//! * Docker Swarm: one stack file (`stack.yaml`): the agents as a replicated service (or a
//!   global one, one per node) on an overlay network, the coordinator as a replicated-job
//!   service (restart condition none) that finds the agents through `tasks.agent`, the
//!   credentials from two Docker secrets (the agents' users file and the coordinator's
//!   secret), the results database on a bind mount of a manager node.
//! * Kubernetes: `agents.yaml` (a DaemonSet of agents on the pod network or on the hosts'
//!   network, and a headless Service through whose DNS name the coordinator finds them) and
//!   `coordinator.yaml` (the coordinator as a Job), the credentials from one Secret with the
//!   keys `users` and `secret`, mounted read-only with mode 0400.
//!
//! No credential is ever written into a file: the objects only name the secrets, which the
//! user makes (README, "Fleets"). The YAML is written by the small emitter at the end of
//! this file: block style, every string that could be read as anything but itself quoted
//! (JSON's escapes are YAML's double-quoted scalar), file modes in decimal (YAML 1.1 and 1.2
//! read octal differently).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args as ClapArgs, ValueEnum};

/// The orchestrator the objects are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// A Docker Swarm stack file.
    Swarm,
    /// Kubernetes objects.
    Kubernetes,
}

/// Where the agents' sockets live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NetworkMode {
    /// The host's network (the host's own NICs are tested; Kubernetes only).
    Host,
    /// The pod's (Kubernetes) or the overlay's (Swarm) network.
    Pod,
}

/// `linerate fleet manifests` arguments.
#[derive(Debug, Clone, ClapArgs)]
pub struct ManifestsArgs {
    /// The orchestrator.
    #[arg(long, value_enum)]
    pub engine: Engine,
    /// The directory the files are written to (made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The image that holds linerate (scripts/image.sh builds one and prints its tag).
    #[arg(long, default_value = "linerate:latest")]
    pub image: String,
    /// How many agents: Swarm's replicas (with --per-node: the number of nodes); with
    /// Kubernetes, the number of nodes the DaemonSet runs on. The coordinator waits for
    /// this many (its --expect).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub agents: u32,
    /// Swarm: one agent on every node (a global service) instead of --agents replicas.
    #[arg(long)]
    pub per_node: bool,
    /// Host or pod network for the agents (Swarm: pod, the overlay, only).
    #[arg(long, value_enum, default_value = "pod")]
    pub network: NetworkMode,
    /// Swarm: the overlay network's subnet (e.g. 198.18.0.0/24); Docker picks one if not
    /// given.
    #[arg(long, value_name = "CIDR")]
    pub subnet: Option<String>,
    /// The agents' port.
    #[arg(long, default_value_t = crate::session::DEFAULT_PORT)]
    pub port: u16,
    /// The secret that holds the credentials. Kubernetes: a Secret with the keys `users`
    /// (the agents' users file, `USER:SECRET`) and `secret` (the coordinator's secret).
    /// Swarm: two secrets, NAME-users and NAME-secret, with the same contents.
    #[arg(long, default_value = "linerate-auth", value_name = "NAME")]
    pub auth_secret_name: String,
    /// The user the coordinator authenticates as (a user of the users file).
    #[arg(long, default_value = "fleet", value_name = "USER")]
    pub auth_user: String,
    /// The objects' name prefix (Kubernetes: NAME-agent, NAME-agents, NAME-coordinator).
    #[arg(long, default_value = "linerate", value_name = "NAME")]
    pub name: String,
    /// Kubernetes: the namespace of the objects (default: kubectl's).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Where the coordinator's results database (fleet.db) is kept, a directory on the
    /// node: Swarm bind-mounts it (it must exist on the manager node), Kubernetes mounts it
    /// as a hostPath (made if missing).
    #[arg(long, default_value = "/var/lib/linerate", value_name = "DIR")]
    pub results_dir: PathBuf,
    /// How long the coordinator waits for all the agents, seconds.
    #[arg(long = "wait", default_value_t = 300, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub wait_secs: u64,
    /// The fleet run's name (the coordinator's --name; default: its own fleet-TIME).
    #[arg(long, value_name = "NAME", conflicts_with = "resume")]
    pub run_name: Option<String>,
    /// The coordinator continues the fleet run NAME (its --resume): only the pairs that are
    /// missing or failed run.
    #[arg(long, value_name = "NAME")]
    pub resume: Option<String>,
    /// Agents the coordinator tests besides those it finds by DNS, HOST[:PORT],... (e.g. an
    /// agent that came back at its old address after its task failed: Swarm's DNS names
    /// only running tasks).
    #[arg(long, value_delimiter = ',', value_name = "HOST[:PORT],...")]
    pub extra_agents: Vec<String>,
    /// The coordinator's interference check: K pairs re-run alone at the end (its
    /// --interference; default: the coordinator's).
    #[arg(long, value_name = "K")]
    pub interference: Option<usize>,
    /// The test each pair runs, after `--`: tcp|udp|rr [its options] (default: tcp -t 10).
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// Where the secret files are mounted in a Kubernetes pod.
const K8S_SECRET_DIR: &str = "/etc/linerate";
/// Where the results directory is mounted in the coordinator's container.
const RESULTS_MOUNT: &str = "/results";
/// Read by the owner only: `serve --auth-users` refuses a users file readable by others.
const SECRET_MODE: i64 = 0o400;

/// Writes the engine's objects into `--out` and prints each file's path.
pub fn run(args: &ManifestsArgs) -> anyhow::Result<()> {
    let files = render(args)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot make the directory {}", args.out.display()))?;
    for (name, text) in &files {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

/// The files of `args`' engine: (file name, YAML text).
pub fn render(args: &ManifestsArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
    check(args)?;
    Ok(match args.engine {
        Engine::Swarm => vec![("stack.yaml", swarm_stack(args))],
        Engine::Kubernetes => vec![
            ("agents.yaml", kubernetes_agents(args)),
            ("coordinator.yaml", kubernetes_coordinator(args)),
        ],
    })
}

/// Usage errors, each one line that says how to fix it.
fn check(a: &ManifestsArgs) -> anyhow::Result<()> {
    let bad = |m: String| Err(anyhow::anyhow!(m));
    if a.agents < 2 {
        return bad(format!(
            "--agents {}: a fleet needs at least 2 agents (one pair)",
            a.agents
        ));
    }
    if a.image.is_empty() || a.image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad(format!(
            "--image '{}' is not an image reference: give e.g. linerate:0.1.0 (scripts/image.sh prints the tag it built)",
            a.image.escape_default()
        ));
    }
    if a.port == 0 {
        return bad("--port 0: the agents need a fixed port the coordinator can reach".into());
    }
    if !a.results_dir.is_absolute() {
        return bad(format!(
            "--results-dir {}: give an absolute path on the node",
            a.results_dir.display()
        ));
    }
    check_name("--auth-secret-name", &a.auth_secret_name)?;
    check_name("--name", &a.name)?;
    if let Some(ns) = &a.namespace {
        check_name("--namespace", ns)?;
    }
    if a.auth_user.is_empty()
        || a.auth_user.len() > crate::session::protocol::auth::MAX_USER_LEN
        || a.auth_user.contains([':', '\n', '\r'])
    {
        return bad(format!(
            "--auth-user '{}': give a user name of 1 to {} bytes without ':'",
            a.auth_user.escape_default(),
            crate::session::protocol::auth::MAX_USER_LEN
        ));
    }
    if let Some(x) = a
        .extra_agents
        .iter()
        .find(|x| x.is_empty() || x.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return bad(format!(
            "--extra-agents '{}': give HOST[:PORT],... without spaces",
            x.escape_default()
        ));
    }
    for (flag, v) in [("--run-name", &a.run_name), ("--resume", &a.resume)] {
        if let Some(v) = v {
            if v.is_empty() || v.chars().any(|c| c.is_control()) {
                return bad(format!("{flag}: give a name without control characters"));
            }
        }
    }
    if let Some(first) = a.test.first() {
        if !matches!(first.as_str(), "tcp" | "udp" | "rr") {
            return bad(format!(
                "the test after -- starts with '{}': give tcp, udp or rr and its options, e.g. -- tcp -t 10",
                first.escape_default()
            ));
        }
    }
    match a.engine {
        Engine::Swarm => {
            if a.network == NetworkMode::Host {
                return bad("--engine swarm --network host: Swarm finds the agents (tasks.SERVICE) only on an overlay network; use --network pod, or start the agents with `docker run --network host` and give the coordinator --agents".into());
            }
            if let Some(s) = &a.subnet {
                check_cidr(s)?;
            }
        }
        Engine::Kubernetes => {
            if a.per_node {
                return bad("--per-node is Swarm's: Kubernetes' agents are a DaemonSet, one per node already".into());
            }
            if a.subnet.is_some() {
                return bad("--subnet is Swarm's overlay network's: Kubernetes' pod network is the cluster's".into());
            }
        }
    }
    Ok(())
}

/// A DNS-1123 label (Kubernetes' object names; fine for Docker's too).
fn check_name(flag: &str, name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "{flag} '{}': give 1 to 40 lower-case letters, digits and '-', not at either end",
            name.escape_default()
        ))
    }
}

/// ADDRESS/PREFIX.
fn check_cidr(s: &str) -> anyhow::Result<()> {
    let ok = s.split_once('/').is_some_and(|(addr, len)| {
        match (addr.parse::<std::net::IpAddr>(), len.parse::<u8>()) {
            (Ok(std::net::IpAddr::V4(_)), Ok(l)) => l <= 32,
            (Ok(std::net::IpAddr::V6(_)), Ok(l)) => l <= 128,
            _ => false,
        }
    });
    if ok {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "--subnet '{}' is not ADDRESS/PREFIX: give e.g. 198.18.0.0/24",
            s.escape_default()
        ))
    }
}

/// The test the coordinator runs for every pair.
fn test_args(a: &ManifestsArgs) -> Vec<String> {
    if a.test.is_empty() {
        ["tcp", "-t", "10"].map(String::from).to_vec()
    } else {
        a.test.clone()
    }
}

/// The agent's command line (after the image's entry point).
fn agent_command(a: &ManifestsArgs, users_file: &str) -> Vec<String> {
    let port = a.port.to_string();
    [
        "serve",
        "--fleet-agent",
        "--auth-users",
        users_file,
        "--fleet-coordinators",
        &a.auth_user,
        "--port",
        &port,
    ]
    .map(String::from)
    .to_vec()
}

/// The coordinator's command line.
fn coordinator_command(a: &ManifestsArgs, agents_dns: &str, secret_file: &str) -> Vec<String> {
    let db = format!("{RESULTS_MOUNT}/fleet.db");
    let mut c: Vec<String> = [
        "fleet",
        "run",
        "--agents-dns",
        agents_dns,
        "--expect",
        &a.agents.to_string(),
        "--wait",
        &format!("{}s", a.wait_secs),
        "--auth-user",
        &a.auth_user,
        "--auth-secret-file",
        secret_file,
        "--db",
        &db,
    ]
    .map(String::from)
    .to_vec();
    if !a.extra_agents.is_empty() {
        c.extend(["--agents".to_string(), a.extra_agents.join(",")]);
    }
    if let Some(k) = a.interference {
        c.extend(["--interference".to_string(), k.to_string()]);
    }
    if let Some(n) = &a.run_name {
        c.extend(["--name".to_string(), n.clone()]);
    }
    if let Some(n) = &a.resume {
        c.extend(["--resume".to_string(), n.clone()]);
    }
    c.push("--".into());
    c.extend(test_args(a));
    c
}

fn strs(v: Vec<String>) -> Y {
    Y::Seq(v.into_iter().map(Y::Str).collect())
}

/// The header comment of a file: what wrote it and how it is used.
fn header(lines: &[&str]) -> String {
    let mut s = String::from("# Written by `linerate fleet manifests` (README.md, \"Fleets\").\n");
    for l in lines {
        s.push_str("# ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// A Swarm secret as a service mounts it, under /run/secrets/NAME.
fn swarm_secret_ref(name: &str) -> Y {
    map(vec![
        ("source", s(name)),
        ("target", s(name)),
        ("mode", Y::Int(SECRET_MODE)),
    ])
}

/// The Swarm service of the agents: replicated (or one per node), never restarted by the
/// engine, the users' file from the secret `users`.
fn swarm_agent(a: &ManifestsArgs, users: &str) -> Y {
    let agent_deploy = if a.per_node {
        map(vec![
            ("mode", s("global")),
            ("restart_policy", map(vec![("condition", s("none"))])),
        ])
    } else {
        map(vec![
            ("mode", s("replicated")),
            ("replicas", Y::Int(i64::from(a.agents))),
            ("restart_policy", map(vec![("condition", s("none"))])),
        ])
    };
    map(vec![
        ("image", s(&a.image)),
        // Stable names (per slot, or per node for a global service), so an agent that is
        // started again is recognisably the same one.
        (
            "hostname",
            s(if a.per_node {
                "agent-{{.Node.Hostname}}"
            } else {
                "agent-{{.Task.Slot}}"
            }),
        ),
        (
            "command",
            strs(agent_command(a, &format!("/run/secrets/{users}"))),
        ),
        ("networks", Y::Seq(vec![s("fleet")])),
        ("secrets", Y::Seq(vec![swarm_secret_ref(users)])),
        ("deploy", agent_deploy),
    ])
}

/// The Swarm job of the coordinator: once, on a manager, its secret from `secret`, the
/// results in a directory bound from the host.
fn swarm_coordinator(a: &ManifestsArgs, secret: &str) -> Y {
    map(vec![
        ("image", s(&a.image)),
        (
            "command",
            strs(coordinator_command(
                a,
                &format!("tasks.agent:{}", a.port),
                &format!("/run/secrets/{secret}"),
            )),
        ),
        ("networks", Y::Seq(vec![s("fleet")])),
        ("secrets", Y::Seq(vec![swarm_secret_ref(secret)])),
        (
            "volumes",
            Y::Seq(vec![map(vec![
                ("type", s("bind")),
                ("source", s(&a.results_dir.to_string_lossy())),
                ("target", s(RESULTS_MOUNT)),
            ])]),
        ),
        (
            "deploy",
            map(vec![
                ("mode", s("replicated-job")),
                ("replicas", Y::Int(1)),
                ("restart_policy", map(vec![("condition", s("none"))])),
                (
                    "placement",
                    map(vec![(
                        "constraints",
                        Y::Seq(vec![s("node.role == manager")]),
                    )]),
                ),
            ]),
        ),
    ])
}

/// The Docker Swarm stack: `docker stack deploy -c stack.yaml NAME`.
fn swarm_stack(a: &ManifestsArgs) -> String {
    let users = format!("{}-users", a.auth_secret_name);
    let secret = format!("{}-secret", a.auth_secret_name);
    let agent = swarm_agent(a, &users);
    let coordinator = swarm_coordinator(a, &secret);
    let mut network = vec![("driver", s("overlay"))];
    if let Some(subnet) = &a.subnet {
        network.push((
            "ipam",
            map(vec![(
                "config",
                Y::Seq(vec![map(vec![("subnet", s(subnet))])]),
            )]),
        ));
    }
    let doc = Y::Map(vec![
        ("version".into(), s("3.9")),
        (
            "services".into(),
            map(vec![("agent", agent), ("coordinator", coordinator)]),
        ),
        ("networks".into(), map(vec![("fleet", map(network))])),
        (
            "secrets".into(),
            Y::Map(vec![
                (users.clone(), map(vec![("external", Y::Bool(true))])),
                (secret.clone(), map(vec![("external", Y::Bool(true))])),
            ]),
        ),
    ]);
    let dir = a.results_dir.display();
    let mut text = header(&[
        &format!("Secrets first: docker secret create {users} USERS_FILE (USER:SECRET lines);"),
        &format!("  docker secret create {secret} SECRET_FILE (the secret of --auth-user)."),
        &format!("On the manager: mkdir -p {dir}; docker stack deploy -c stack.yaml STACK."),
        &format!("Results: docker service logs STACK_coordinator; {dir}/fleet.db."),
    ]);
    emit(&doc, 0, &mut text);
    text
}

/// Kubernetes labels of a component.
fn labels(a: &ManifestsArgs, component: &str) -> Y {
    map(vec![
        ("app.kubernetes.io/name", s("linerate")),
        ("app.kubernetes.io/instance", s(&a.name)),
        ("app.kubernetes.io/component", s(component)),
    ])
}

fn metadata(a: &ManifestsArgs, name: &str, component: &str) -> Y {
    let mut m = vec![("name", s(name))];
    if let Some(ns) = &a.namespace {
        m.push(("namespace", s(ns)));
    }
    m.push(("labels", labels(a, component)));
    map(m)
}

/// The volume of the Secret's key `key`, as file `key`, mode 0400.
fn secret_volume(a: &ManifestsArgs, key: &str) -> Y {
    map(vec![
        ("name", s("auth")),
        (
            "secret",
            map(vec![
                ("secretName", s(&a.auth_secret_name)),
                ("defaultMode", Y::Int(SECRET_MODE)),
                (
                    "items",
                    Y::Seq(vec![map(vec![("key", s(key)), ("path", s(key))])]),
                ),
            ]),
        ),
    ])
}

fn auth_mount() -> Y {
    map(vec![
        ("name", s("auth")),
        ("mountPath", s(K8S_SECRET_DIR)),
        ("readOnly", Y::Bool(true)),
    ])
}

/// The DaemonSet of agents and the headless Service that names them.
fn kubernetes_agents(a: &ManifestsArgs) -> String {
    let port = i64::from(a.port);
    let ports = Y::Seq(
        ["TCP", "UDP"]
            .iter()
            .map(|proto| {
                map(vec![
                    ("name", s(&format!("linerate-{}", proto.to_lowercase()))),
                    ("containerPort", Y::Int(port)),
                    ("protocol", s(proto)),
                ])
            })
            .collect(),
    );
    let container = map(vec![
        ("name", s("agent")),
        ("image", s(&a.image)),
        (
            "args",
            strs(agent_command(a, &format!("{K8S_SECRET_DIR}/users"))),
        ),
        ("ports", ports),
        ("volumeMounts", Y::Seq(vec![auth_mount()])),
    ]);
    let mut pod = Vec::new();
    if a.network == NetworkMode::Host {
        // The host's own network: the NICs under test; the cluster's DNS still resolves.
        pod.push(("hostNetwork", Y::Bool(true)));
        pod.push(("dnsPolicy", s("ClusterFirstWithHostNet")));
    }
    pod.push(("containers", Y::Seq(vec![container])));
    pod.push(("volumes", Y::Seq(vec![secret_volume(a, "users")])));
    let agent_name = format!("{}-agent", a.name);
    let daemonset = map(vec![
        ("apiVersion", s("apps/v1")),
        ("kind", s("DaemonSet")),
        ("metadata", metadata(a, &agent_name, "agent")),
        (
            "spec",
            map(vec![
                ("selector", map(vec![("matchLabels", labels(a, "agent"))])),
                (
                    "template",
                    map(vec![
                        ("metadata", map(vec![("labels", labels(a, "agent"))])),
                        ("spec", map(pod)),
                    ]),
                ),
            ]),
        ),
    ]);
    let service_ports = Y::Seq(
        ["TCP", "UDP"]
            .iter()
            .map(|proto| {
                map(vec![
                    ("name", s(&format!("linerate-{}", proto.to_lowercase()))),
                    ("port", Y::Int(port)),
                    ("protocol", s(proto)),
                ])
            })
            .collect(),
    );
    let service = map(vec![
        ("apiVersion", s("v1")),
        ("kind", s("Service")),
        (
            "metadata",
            metadata(a, &format!("{}-agents", a.name), "agent"),
        ),
        (
            "spec",
            map(vec![
                // Headless: the name resolves to every ready agent's address.
                ("clusterIP", s("None")),
                ("selector", labels(a, "agent")),
                ("ports", service_ports),
            ]),
        ),
    ]);
    let variant = match a.network {
        NetworkMode::Host => "on the hosts' network (hostNetwork)",
        NetworkMode::Pod => "on the pod network",
    };
    let mut text = header(&[
        &format!("The agents {variant}, one per node, and the headless Service that names them."),
        &format!(
            "Secret first: kubectl create secret generic {} --from-file=users=USERS_FILE --from-file=secret=SECRET_FILE",
            a.auth_secret_name
        ),
        "Then: kubectl apply -f agents.yaml; kubectl apply -f coordinator.yaml.",
    ]);
    emit(&daemonset, 0, &mut text);
    text.push_str("---\n");
    emit(&service, 0, &mut text);
    text
}

/// The coordinator as a Job.
fn kubernetes_coordinator(a: &ManifestsArgs) -> String {
    let service = match &a.namespace {
        Some(ns) => format!("{}-agents.{ns}.svc", a.name),
        None => format!("{}-agents", a.name),
    };
    let container = map(vec![
        ("name", s("coordinator")),
        ("image", s(&a.image)),
        (
            "args",
            strs(coordinator_command(
                a,
                &format!("{service}:{}", a.port),
                &format!("{K8S_SECRET_DIR}/secret"),
            )),
        ),
        (
            "volumeMounts",
            Y::Seq(vec![
                auth_mount(),
                map(vec![
                    ("name", s("results")),
                    ("mountPath", s(RESULTS_MOUNT)),
                ]),
            ]),
        ),
    ]);
    let job = map(vec![
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        (
            "metadata",
            metadata(a, &format!("{}-coordinator", a.name), "coordinator"),
        ),
        (
            "spec",
            map(vec![
                // A failed run is resumed (--resume), never retried whole.
                ("backoffLimit", Y::Int(0)),
                (
                    "template",
                    map(vec![
                        ("metadata", map(vec![("labels", labels(a, "coordinator"))])),
                        (
                            "spec",
                            map(vec![
                                ("restartPolicy", s("Never")),
                                ("containers", Y::Seq(vec![container])),
                                (
                                    "volumes",
                                    Y::Seq(vec![
                                        secret_volume(a, "secret"),
                                        map(vec![
                                            ("name", s("results")),
                                            (
                                                "hostPath",
                                                map(vec![
                                                    ("path", s(&a.results_dir.to_string_lossy())),
                                                    ("type", s("DirectoryOrCreate")),
                                                ]),
                                            ),
                                        ]),
                                    ]),
                                ),
                            ]),
                        ),
                    ]),
                ),
            ]),
        ),
    ]);
    let mut text = header(&[
        "The coordinator: every ordered pair of agents in rounds, each pair kept in the database.",
        &format!(
            "Results: kubectl logs job/{}-coordinator; {}/fleet.db on the node it ran on.",
            a.name,
            a.results_dir.display()
        ),
        "To run it again (a Job is immutable): kubectl delete -f coordinator.yaml first.",
    ]);
    emit(&job, 0, &mut text);
    text
}

/// A YAML node: the few kinds the manifests need, maps in the order written.
#[derive(Debug, Clone)]
enum Y {
    Str(String),
    Int(i64),
    Bool(bool),
    Seq(Vec<Y>),
    Map(Vec<(String, Y)>),
}

fn s(v: &str) -> Y {
    Y::Str(v.to_string())
}

fn map(entries: Vec<(&str, Y)>) -> Y {
    Y::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// A string as a YAML scalar: plain when no YAML reader (1.1 or 1.2) can take it for
/// anything else, else double-quoted with JSON's escapes (a subset of YAML's).
fn scalar(v: &str) -> String {
    let plain = v
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-' | '+'))
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain {
        v.to_string()
    } else {
        serde_json::Value::String(v.to_string()).to_string()
    }
}

/// Writes `y` in block style at `indent` spaces; a map or a sequence ends with a newline.
fn emit(y: &Y, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match y {
        Y::Map(entries) => {
            for (k, v) in entries {
                let _ = write!(out, "{pad}{}:", scalar(k));
                match v {
                    Y::Map(m) if m.is_empty() => out.push_str(" {}\n"),
                    Y::Seq(q) if q.is_empty() => out.push_str(" []\n"),
                    Y::Map(_) | Y::Seq(_) => {
                        out.push('\n');
                        emit(v, indent + 2, out);
                    }
                    _ => {
                        out.push(' ');
                        emit(v, indent, out);
                    }
                }
            }
        }
        Y::Seq(items) => {
            for item in items {
                match item {
                    Y::Map(m) if !m.is_empty() => {
                        // The map's first line takes the dash in place of two of its spaces.
                        let mut inner = String::new();
                        emit(item, indent + 2, &mut inner);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                    Y::Map(_) => {
                        let _ = writeln!(out, "{pad}- {{}}");
                    }
                    Y::Seq(q) if q.is_empty() => {
                        let _ = writeln!(out, "{pad}- []");
                    }
                    Y::Seq(_) => {
                        let _ = writeln!(out, "{pad}-");
                        emit(item, indent + 2, out);
                    }
                    _ => {
                        out.push_str(&pad);
                        out.push_str("- ");
                        emit(item, indent, out);
                    }
                }
            }
        }
        Y::Str(v) => {
            out.push_str(&scalar(v));
            out.push('\n');
        }
        Y::Int(v) => {
            let _ = writeln!(out, "{v}");
        }
        Y::Bool(v) => {
            let _ = writeln!(out, "{v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use yaml_rust2::{Yaml, YamlLoader};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: ManifestsArgs,
    }

    fn args(line: &str) -> ManifestsArgs {
        let mut v = vec!["manifests"];
        v.extend(line.split_whitespace());
        Cli::try_parse_from(v).expect("parse").a
    }

    /// Every document of file `name` of `args`' output, parsed by a YAML reader.
    fn docs(a: &ManifestsArgs, name: &str) -> Vec<Yaml> {
        let files = render(a).expect("render");
        let text = &files
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .1;
        YamlLoader::load_from_str(text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"))
    }

    fn strings(y: &Yaml) -> Vec<String> {
        y.as_vec()
            .expect("a sequence")
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    }

    /// The value after `flag` in a command line.
    fn after<'a>(cmd: &'a [String], flag: &str) -> &'a str {
        let i = cmd
            .iter()
            .position(|c| c == flag)
            .unwrap_or_else(|| panic!("no {flag} in {cmd:?}"));
        &cmd[i + 1]
    }

    #[test]
    fn swarm_stack_has_replicated_agents_a_coordinator_job_and_external_secrets() {
        let a = args("--engine swarm --out x --image linerate:0.1.0-abc --agents 6 --subnet 198.18.0.0/24 --run-name mesh -- tcp -t 1");
        let d = docs(&a, "stack.yaml");
        assert_eq!(d.len(), 1);
        let st = &d[0];
        let agent = &st["services"]["agent"];
        assert_eq!(agent["image"].as_str(), Some("linerate:0.1.0-abc"));
        assert_eq!(agent["deploy"]["mode"].as_str(), Some("replicated"));
        assert_eq!(agent["deploy"]["replicas"].as_i64(), Some(6));
        assert_eq!(
            agent["deploy"]["restart_policy"]["condition"].as_str(),
            Some("none")
        );
        assert_eq!(agent["hostname"].as_str(), Some("agent-{{.Task.Slot}}"));
        let cmd = strings(&agent["command"]);
        assert_eq!(&cmd[..2], ["serve", "--fleet-agent"]);
        assert_eq!(
            after(&cmd, "--auth-users"),
            "/run/secrets/linerate-auth-users"
        );
        assert_eq!(after(&cmd, "--port"), "5301");
        assert_eq!(after(&cmd, "--fleet-coordinators"), "fleet");
        assert_eq!(
            agent["secrets"][0]["source"].as_str(),
            Some("linerate-auth-users")
        );
        assert_eq!(agent["secrets"][0]["mode"].as_i64(), Some(0o400));

        let co = &st["services"]["coordinator"];
        assert_eq!(co["deploy"]["mode"].as_str(), Some("replicated-job"));
        assert_eq!(
            co["deploy"]["restart_policy"]["condition"].as_str(),
            Some("none")
        );
        assert_eq!(
            strings(&co["deploy"]["placement"]["constraints"]),
            ["node.role == manager"]
        );
        let cmd = strings(&co["command"]);
        assert_eq!(&cmd[..2], ["fleet", "run"]);
        assert_eq!(after(&cmd, "--agents-dns"), "tasks.agent:5301");
        assert_eq!(after(&cmd, "--expect"), "6");
        assert_eq!(after(&cmd, "--wait"), "300s");
        assert_eq!(after(&cmd, "--auth-user"), "fleet");
        assert_eq!(
            after(&cmd, "--auth-secret-file"),
            "/run/secrets/linerate-auth-secret"
        );
        assert_eq!(after(&cmd, "--db"), "/results/fleet.db");
        assert_eq!(after(&cmd, "--name"), "mesh");
        assert!(!cmd.contains(&"--resume".to_string()));
        assert_eq!(&cmd[cmd.len() - 4..], ["--", "tcp", "-t", "1"]);
        assert_eq!(
            co["secrets"][0]["source"].as_str(),
            Some("linerate-auth-secret")
        );
        assert_eq!(co["volumes"][0]["type"].as_str(), Some("bind"));
        assert_eq!(
            co["volumes"][0]["source"].as_str(),
            Some("/var/lib/linerate")
        );
        assert_eq!(co["volumes"][0]["target"].as_str(), Some("/results"));

        // Both on the one overlay network, whose subnet is the one asked for.
        assert_eq!(strings(&agent["networks"]), ["fleet"]);
        assert_eq!(strings(&co["networks"]), ["fleet"]);
        let net = &st["networks"]["fleet"];
        assert_eq!(net["driver"].as_str(), Some("overlay"));
        assert_eq!(
            net["ipam"]["config"][0]["subnet"].as_str(),
            Some("198.18.0.0/24")
        );
        // The secrets are made beforehand: the file names them and holds no value.
        for name in ["linerate-auth-users", "linerate-auth-secret"] {
            assert_eq!(st["secrets"][name]["external"].as_bool(), Some(true));
            assert!(st["secrets"][name]["file"].is_badvalue());
        }
    }

    #[test]
    fn swarm_per_node_agents_are_a_global_service_and_resume_names_the_run() {
        let a = args("--engine swarm --out x --per-node --agents 4 --resume mesh --extra-agents 198.18.0.9,198.18.0.10:5302 --interference 0");
        let st = &docs(&a, "stack.yaml")[0];
        let agent = &st["services"]["agent"];
        assert_eq!(agent["deploy"]["mode"].as_str(), Some("global"));
        assert!(agent["deploy"]["replicas"].is_badvalue());
        assert_eq!(agent["hostname"].as_str(), Some("agent-{{.Node.Hostname}}"));
        let cmd = strings(&st["services"]["coordinator"]["command"]);
        assert_eq!(after(&cmd, "--resume"), "mesh");
        assert_eq!(after(&cmd, "--expect"), "4");
        assert_eq!(after(&cmd, "--agents"), "198.18.0.9,198.18.0.10:5302");
        assert_eq!(after(&cmd, "--interference"), "0");
        assert!(!cmd.contains(&"--name".to_string()));
        // The default test, and no subnet unless asked.
        assert_eq!(&cmd[cmd.len() - 4..], ["--", "tcp", "-t", "10"]);
        assert!(st["networks"]["fleet"]["ipam"].is_badvalue());
    }

    /// The DaemonSet, the Service and the Job of `a` (agents.yaml's two documents, then
    /// coordinator.yaml's one).
    fn kubernetes(a: &ManifestsArgs) -> (Yaml, Yaml, Yaml) {
        let agents = docs(a, "agents.yaml");
        assert_eq!(agents.len(), 2, "agents.yaml: a DaemonSet and a Service");
        let job = docs(a, "coordinator.yaml");
        assert_eq!(job.len(), 1);
        (agents[0].clone(), agents[1].clone(), job[0].clone())
    }

    #[test]
    fn kubernetes_pod_network_daemonset_headless_service_and_job() {
        let a = args(
            "--engine kubernetes --out x --image reg.example/linerate:1 --agents 5 -- rr -t 2",
        );
        let (ds, svc, job) = kubernetes(&a);
        assert_eq!(ds["apiVersion"].as_str(), Some("apps/v1"));
        assert_eq!(ds["kind"].as_str(), Some("DaemonSet"));
        assert_eq!(ds["metadata"]["name"].as_str(), Some("linerate-agent"));
        assert!(ds["metadata"]["namespace"].is_badvalue());
        let pod = &ds["spec"]["template"]["spec"];
        assert!(
            pod["hostNetwork"].is_badvalue(),
            "pod network: no hostNetwork"
        );
        let c = &pod["containers"][0];
        assert_eq!(c["image"].as_str(), Some("reg.example/linerate:1"));
        let cmd = strings(&c["args"]);
        assert_eq!(after(&cmd, "--auth-users"), "/etc/linerate/users");
        assert_eq!(
            c["volumeMounts"][0]["mountPath"].as_str(),
            Some("/etc/linerate")
        );
        assert_eq!(c["volumeMounts"][0]["readOnly"].as_bool(), Some(true));
        let vol = &pod["volumes"][0]["secret"];
        assert_eq!(vol["secretName"].as_str(), Some("linerate-auth"));
        assert_eq!(vol["defaultMode"].as_i64(), Some(0o400));
        assert_eq!(vol["items"][0]["key"].as_str(), Some("users"));
        // The selector picks the pods the template makes, and the Service the same pods.
        let sel = &ds["spec"]["selector"]["matchLabels"];
        assert_eq!(sel, &ds["spec"]["template"]["metadata"]["labels"]);
        assert_eq!(svc["kind"].as_str(), Some("Service"));
        assert_eq!(svc["spec"]["clusterIP"].as_str(), Some("None"));
        assert_eq!(&svc["spec"]["selector"], sel);
        let protos: Vec<&str> = svc["spec"]["ports"]
            .as_vec()
            .expect("ports")
            .iter()
            .map(|p| {
                assert_eq!(p["port"].as_i64(), Some(5301));
                p["protocol"].as_str().expect("protocol")
            })
            .collect();
        assert_eq!(protos, ["TCP", "UDP"]);

        assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
        assert_eq!(job["kind"].as_str(), Some("Job"));
        assert_eq!(job["spec"]["backoffLimit"].as_i64(), Some(0));
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
        let cmd = strings(&pod["containers"][0]["args"]);
        assert_eq!(after(&cmd, "--agents-dns"), "linerate-agents:5301");
        assert_eq!(after(&cmd, "--expect"), "5");
        assert_eq!(after(&cmd, "--auth-secret-file"), "/etc/linerate/secret");
        assert_eq!(&cmd[cmd.len() - 4..], ["--", "rr", "-t", "2"]);
        let vols = pod["volumes"].as_vec().expect("volumes");
        assert_eq!(
            vols[0]["secret"]["items"][0]["key"].as_str(),
            Some("secret")
        );
        assert_eq!(vols[0]["secret"]["defaultMode"].as_i64(), Some(0o400));
        assert_eq!(
            vols[1]["hostPath"]["path"].as_str(),
            Some("/var/lib/linerate")
        );
    }

    #[test]
    fn kubernetes_host_network_variant_and_namespace() {
        let a = args("--engine kubernetes --out x --network host --namespace perf --name mesh");
        let (ds, svc, job) = kubernetes(&a);
        let pod = &ds["spec"]["template"]["spec"];
        assert_eq!(pod["hostNetwork"].as_bool(), Some(true));
        assert_eq!(pod["dnsPolicy"].as_str(), Some("ClusterFirstWithHostNet"));
        for (obj, name) in [
            (&ds, "mesh-agent"),
            (&svc, "mesh-agents"),
            (&job, "mesh-coordinator"),
        ] {
            assert_eq!(obj["metadata"]["name"].as_str(), Some(name));
            assert_eq!(obj["metadata"]["namespace"].as_str(), Some("perf"));
        }
        let cmd = strings(&job["spec"]["template"]["spec"]["containers"][0]["args"]);
        assert_eq!(after(&cmd, "--agents-dns"), "mesh-agents.perf.svc:5301");
    }

    #[test]
    fn strings_that_look_like_other_things_read_back_as_themselves() {
        let tricky = [
            "",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "null",
            "~",
            "true",
            "1",
            "0400",
            "0o400",
            "1e3",
            ".5",
            "-x",
            "- x",
            "a: b",
            "a:b",
            "#c",
            "a #c",
            "x\ny",
            "tab\there",
            "quote\"s",
            "back\\slash",
            "{{.Task.Slot}}",
            "[a]",
            "*ref",
            "&anchor",
            "!tag",
            "%dir",
            "@at",
            "`tick",
            "node.role == manager",
            "é ü",
            " lead",
            "trail ",
            "---",
            "...",
            "?",
            "|",
            ">",
            "plain-name.v1/x_y+z",
        ];
        let doc = Y::Map(vec![
            ("list".into(), Y::Seq(tricky.iter().map(|t| s(t)).collect())),
            (
                "keys".into(),
                Y::Map(tricky.iter().map(|t| (t.to_string(), s(t))).collect()),
            ),
            (
                "nested".into(),
                Y::Seq(vec![
                    Y::Seq(vec![s("a"), Y::Int(-3)]),
                    Y::Map(vec![]),
                    Y::Seq(vec![]),
                ]),
            ),
        ]);
        let mut text = String::new();
        emit(&doc, 0, &mut text);
        let back = &YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))[0];
        assert_eq!(strings(&back["list"]), tricky);
        for t in tricky {
            assert_eq!(back["keys"][t].as_str(), Some(t), "key {t:?}\n{text}");
        }
        assert_eq!(back["nested"][0][0].as_str(), Some("a"));
        assert_eq!(back["nested"][0][1].as_i64(), Some(-3));
        assert!(back["nested"][1].as_hash().is_some_and(|h| h.is_empty()));
        assert!(back["nested"][2].as_vec().is_some_and(|v| v.is_empty()));
    }

    #[test]
    fn bad_arguments_are_one_line_usage_errors() {
        for (line, words) in [
            ("--engine swarm --out x --agents 1", "at least 2 agents"),
            ("--engine swarm --out x --network host", "overlay network"),
            (
                "--engine swarm --out x --subnet 198.18.0.0",
                "ADDRESS/PREFIX",
            ),
            (
                "--engine swarm --out x --subnet 198.18.0.0/33",
                "ADDRESS/PREFIX",
            ),
            ("--engine kubernetes --out x --per-node", "DaemonSet"),
            (
                "--engine kubernetes --out x --subnet 198.18.0.0/24",
                "Swarm's",
            ),
            ("--engine kubernetes --out x --name Linerate", "lower-case"),
            ("--engine kubernetes --out x --namespace x-", "lower-case"),
            (
                "--engine kubernetes --out x --auth-secret-name a_b",
                "lower-case",
            ),
            ("--engine swarm --out x --auth-user a:b", "without ':'"),
            ("--engine swarm --out x --image", "image reference"),
            (
                "--engine swarm --out x --results-dir results",
                "absolute path",
            ),
            ("--engine swarm --out x --port 0", "fixed port"),
            ("--engine swarm --out x -- iperf -t 1", "tcp, udp or rr"),
            (
                "--engine swarm --out x --extra-agents a,,b",
                "without spaces",
            ),
        ] {
            let mut v = vec!["manifests"];
            v.extend(line.split_whitespace());
            if line.ends_with("--image") {
                v.push("");
            }
            let a = Cli::try_parse_from(v).expect("parse").a;
            let e = render(&a).expect_err(line).to_string();
            assert!(e.contains(words), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: one line: {e}");
        }
    }

    #[test]
    fn run_writes_the_files_into_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("k8s");
        let a = args(&format!("--engine kubernetes --out {}", out.display()));
        run(&a).expect("run");
        for f in ["agents.yaml", "coordinator.yaml"] {
            let text = std::fs::read_to_string(out.join(f)).expect("written");
            assert!(text.starts_with("# Written by `linerate fleet manifests`"));
        }
    }
}
