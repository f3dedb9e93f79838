//! The command line: the subcommands, each with its arguments in `cli/COMMAND.rs` (the
//! argument groups several commands share are in [`super::common`]). Nothing here is
//! validated across flags; each command's file does that, so engines never see these types.

use clap::{Parser, Subcommand};

#[cfg(feature = "analyze")]
use super::analyze;
#[cfg(feature = "fleet")]
use super::fleet;
#[cfg(feature = "generate")]
use super::generate;
#[cfg(feature = "lab")]
use super::lab;
#[cfg(feature = "report")]
use super::report;
#[cfg(feature = "schema")]
use super::schema;
#[cfg(feature = "sweep")]
use super::{campaign, sweep};
#[cfg(feature = "store")]
use super::{check, history};
use super::{compare, demo, doctor, rfc2544, rr, serve, stream};

const EXIT_CODES: &str = "Exit codes: 0 success; 1 the run completed but a pass/fail criterion failed (udp and rr --udp: --max-loss exceeded; rfc2544: a throughput not confirmed by its full-length trial; check: a metric regressed); 2 usage, network, protocol or I/O error.";

/// linerate: how much data a system really moves, at what CPU cost, and what stops it.
#[derive(Debug, Parser)]
#[command(name = "linerate", version, about, after_help = EXIT_CODES)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a server that many clients can test against at once (netserver, iperf3 -s).
    #[command(
        after_help = "Examples:\n  linerate serve                      # port 5301, TCP and UDP, IPv4 and IPv6\n  linerate serve --port 6000 --max-tests 4 --max-duration 60\n  linerate serve --one-off            # serve one test, then exit\n  linerate serve --port 5201          # iperf3's port: iperf3 -c HOST works too\n\niperf3 clients (3.x) are served on the same port, TCP and UDP, several at once under the same\nlimits.\n\nSIGINT or SIGTERM end running tests cleanly."
    )]
    Serve(serve::ServeArgs),
    /// TCP stream test against a server (netperf TCP_STREAM / TCP_MAERTS, ttcp, iperf3).
    #[command(
        after_help = "Examples:\n  linerate tcp 192.0.2.10                   # send for 10 s\n  linerate tcp HOST -R                      # server sends (TCP_MAERTS)\n  linerate tcp HOST --bidir -P 4            # both ways, 4 streams each\n  linerate tcp HOST -n 16M -l 8K --format ttcp   # ttcp: buflen=8192 nbuf=2048\n  linerate tcp HOST -l 64K -s 256K -S 256K --format netperf\n  linerate tcp HOST -t 30 -O 2 --json > run.json"
    )]
    Tcp(stream::StreamArgs),
    /// UDP stream test: loss, duplicates, reordering, jitter, packets per second.
    #[command(
        after_help = "Examples:\n  linerate udp HOST -l 64                   # smallest datagrams, as fast as possible\n  linerate udp HOST -b 100M -l 1400         # paced at 100 Mbit/s\n  linerate udp HOST -R -b 1G --format netperf"
    )]
    Udp(stream::StreamArgs),
    /// QUIC stream test (quinn, TLS 1.3): N connections by M streams, each way or both.
    #[cfg(feature = "quic")]
    #[command(
        after_help = "Examples:\n  linerate quic HOST                        # send for 10 s, one connection, one stream\n  linerate quic HOST -R                     # server sends\n  linerate quic HOST --bidir -P 4 --streams 2   # both ways, 4 connections of 2 streams each\n  linerate quic HOST -n 1G                  # a byte count instead of a time\n  linerate quic HOST -b 500M                # paced\n\n-P is the number of QUIC connections, --streams the streams on each. The server is any\n`linerate serve` of a build with QUIC: it opens a UDP port for the test and pins its\nself-signed certificate's SHA-256 over the control connection."
    )]
    Quic(stream::QuicArgs),
    /// Request/response latency test (netperf TCP_RR, TCP_CRR with --connect, UDP_RR with --udp).
    #[command(
        after_help = "Examples:\n  linerate rr HOST                          # TCP_RR, 1-byte request and response, 10 s\n  linerate rr HOST -r 64,1024 --burst 8     # 8 transactions in flight\n  linerate rr HOST --connect                # TCP_CRR: a connection per transaction\n  linerate rr HOST --udp --timeout 50ms     # UDP_RR with lost-transaction accounting\n  linerate rr HOST --rate 10k               # paced; latency from the intended send time\n  linerate rr HOST -A 0,1 --format netperf  # netperf's TCP_RR table\n  linerate rr HOST --confidence 99,5 --json > b.json"
    )]
    Rr(rr::RrArgs),
    /// Compare results side by side: difference, ratio, confidence interval and a verdict per metric.
    #[command(
        after_help = "Examples:\n  linerate tcp HOST --repeat 5 --json > a.json   # (change something)\n  linerate tcp HOST --repeat 5 --json > b.json\n  linerate compare a.json b.json\n\nThe test is Welch's two-sided t-test at 95 % confidence; files with single runs are shown side\nby side without a verdict (use --repeat 5 or more)."
    )]
    Compare(compare::CompareArgs),
    /// Start a server on loopback and run a short suite: the quickest way to see linerate work.
    #[command(after_help = "Examples:\n  linerate demo\n  linerate demo --json > demo.json")]
    Demo(demo::DemoArgs),
    /// RFC 2544 benchmarks of a device between this host and a `linerate serve` beyond it:
    /// throughput, latency, frame loss rate, back-to-back frames per frame size.
    #[command(
        after_help = "Examples:\n  linerate rfc2544 198.51.100.2                        # throughput, RFC 2544 frame sizes\n  linerate rfc2544 HOST --bidir --line-rate 1G --chart tput.svg\n  linerate rfc2544 HOST --test all --loss 0,0.1 --json > rfc2544.json\n  linerate rfc2544 HOST --frame-sizes 64,512,1518 --trial-time 2 --confirm-time 10\n\nThe server runs `linerate serve` on the far side of the device."
    )]
    Rfc2544(rfc2544::Rfc2544Args),
    #[cfg(feature = "lab")]
    /// Network-namespace labs on this machine (needs root): try linerate without a second host.
    #[command(
        after_help = "Examples:\n  linerate lab up demo --topology router --rate 100M\n  linerate lab exec demo b -- linerate serve &\n  linerate lab exec demo a -- linerate rfc2544 B_ADDR --line-rate 1G\n  linerate lab list\n  linerate lab down demo"
    )]
    Lab(lab::LabArgs),
    /// Check this host's (and with HOST, the server's) settings that matter for throughput:
    /// socket buffer limits, TCP memory, congestion control, MTU, CPU governor, offloads,
    /// interrupt coalescing and affinity. Prints the commands that would fix them; changes
    /// nothing.
    #[command(
        after_help = "Examples:\n  linerate doctor                     # this host, the interface of the default route\n  linerate doctor 192.0.2.10          # both ends: asks `linerate serve` there for its findings\n  linerate doctor HOST -w 16M --json  # check limits against 16 MiB socket buffers"
    )]
    Doctor(doctor::DoctorArgs),
    #[cfg(feature = "analyze")]
    /// Analyse a packet capture (pcap or pcapng): per TCP connection retransmissions, RTT,
    /// windows, delayed-ACK stalls, window- and application-limited time, loss recovery;
    /// UDP flows; RFC 6349 metrics with --link-rate.
    #[command(
        after_help = "Examples:\n  linerate analyze trace.pcap\n  linerate analyze trace.pcapng --link-rate 100M --json > a.json\n  linerate analyze trace.pcap --graph graphs/       # time-sequence SVGs\n  tcpdump -i eth0 -s 128 -w - port 5301 | linerate analyze -"
    )]
    Analyze(analyze::AnalyzeArgs),
    #[cfg(feature = "sweep")]
    /// Run a test over a matrix of its options: every combination a point, with commands
    /// before each point, repeats and confidence intervals per point, and the best point
    /// by a metric compared with a baseline.
    #[command(
        after_help = "Examples:\n  linerate sweep --vary len=1K..64K:*2 -- tcp HOST -t 5\n  linerate sweep --vary P=1,2,4,8 --vary window=256K,4M --repeat 5 -- tcp HOST\n  linerate sweep --vary r=1,1K,16K --best p99 -- rr HOST\n  linerate sweep --vary mtu=1500,9000 --client-cmd 'ip link set dev eth1 mtu {mtu}' \\\n      --client-restore 'ip link set dev eth1 mtu 1500' -- udp HOST -l 1400\n  linerate sweep --vary len=1K,64K --journal s.jsonl -- tcp HOST    # then: ... --resume\n\nEach point's runs go to the results database as they finish (linerate history --sweep ID)."
    )]
    Sweep(sweep::SweepArgs),
    #[cfg(feature = "store")]
    /// List stored runs (every run of tcp, udp, rr, rfc2544, doctor and sweep is kept in a
    /// SQLite database unless --no-store), filtered by command, host, date, parameter, tag.
    #[command(
        after_help = "Examples:\n  linerate history\n  linerate history --command tcp --tag jumbo --since 2026-11-01\n  linerate history --param write_size=65536 --host lab-b --json\n  linerate history --command tcp --changes      # change points of each series\n  linerate compare 12 15               # two stored runs by id"
    )]
    History(history::HistoryArgs),
    #[cfg(feature = "store")]
    /// Pass or fail a new result against a baseline (stored runs, a tag, or the last K
    /// runs like it): a regression is a change for the worse beyond its threshold that is
    /// statistically significant. Exit 1 on a regression, 0 on none, 2 on error.
    #[command(
        after_help = "Examples:\n  linerate check --last 10 -- tcp HOST -t 5        # run now, against the last 10 like it\n  linerate check --baseline nightly-ok run.json --max-regress throughput=5%,p99=10%\n  linerate check --baseline 41 57 --junit > check.xml\n  linerate check --last 5 57 --json                  # stored run 57 against the 5 before it\n\nThe test: Welch's t-test (one-sided) when both sides have repeats; one new run against three\nor more baseline runs, the one-sample prediction t-test; otherwise \"not enough repeats to call it\".\nLoss and CPU thresholds are percentage points."
    )]
    Check(check::CheckArgs),
    #[cfg(feature = "sweep")]
    /// Run the sweeps a campaign file (TOML) describes, and print each sweep's best point
    /// and a best-case table (examples/xapp1127-temac.toml: Xilinx XAPP1127's matrix).
    #[command(
        after_help = "Examples:\n  linerate campaign examples/xapp1127-temac.toml --host 192.168.0.2\n  linerate campaign c.toml --dry-run          # check it, print the sweeps\n  linerate campaign c.toml --resume           # continue an interrupted campaign"
    )]
    Campaign(campaign::CampaignArgs),
    #[cfg(feature = "report")]
    /// Write one self-contained HTML page of results (no network needed to view it): charts
    /// of throughput, retransmits, RTT, cwnd and CPU per interval, latency histogram and CDF,
    /// sweep metrics with confidence intervals, RFC 2544 frame rates; the diagnosis, both
    /// hosts, parameters and warnings; two or more results compared in words.
    #[command(
        after_help = "Examples:\n  linerate tcp HOST -t 30 -i 0.1 --json > run.json\n  linerate report run.json -o run.html\n  linerate report a.json b.json -o ab.html        # compared on shared axes\n  linerate report 14 17 --chart-dir charts/       # stored runs; every chart as .svg and .png\n  linerate sweep --vary len=1K..64K:*2 --repeat 5 --json -- tcp HOST > s.json\n  linerate report s.json -o sweep.html\n  linerate report --fleet rack-7 -o rack-7.html   # a fleet run's mesh from the database\n\nThe same input gives the same bytes: the page holds no time of its making."
    )]
    Report(report::ReportArgs),
    #[cfg(feature = "fleet")]
    /// Test a mesh of hosts: every ordered pair of agents (`linerate serve --fleet-agent`)
    /// in rounds of disjoint pairs, each pair a third-party test one agent runs towards the
    /// other; results in the database, the mesh as a matrix (`fleet run`). `fleet
    /// manifests` writes an engine's objects (Docker Swarm, Kubernetes).
    #[command(
        after_help = "Examples:\n  linerate fleet run --agents 198.18.0.1,198.18.0.2,198.18.0.3 -- tcp -t 10\n  linerate fleet run --agents-dns tasks.agents --expect 6 --wait 60s -- udp -b 40M\n  linerate fleet run --agents-file hosts.txt --name rack7 -- rr\n  linerate fleet run --resume rack7 --agents-file hosts.txt -- rr   # what is missing or failed\n  linerate fleet manifests --engine kubernetes --out k8s/\n\nAgents: linerate serve --auth-users USERS --fleet-agent --fleet-coordinators USER (the coordinator authenticates with\n--auth-user and --auth-secret-file or LINERATE_AUTH_SECRET)."
    )]
    Fleet(fleet::FleetArgs),
    #[cfg(feature = "schema")]
    /// Print the JSON Schema of a record.
    #[command(hide = true)]
    Schema(schema::SchemaArgs),
    #[cfg(feature = "generate")]
    /// Write the man pages or a shell's completions (for packages: scripts/package.sh).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Args::command().debug_assert();
    }
}
