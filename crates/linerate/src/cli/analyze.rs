//! Raw arguments of `linerate analyze`, and of `--capture` on the test commands.

use clap::Args as ClapArgs;

use super::units;

/// `linerate analyze` arguments.
#[derive(Debug, ClapArgs)]
pub struct AnalyzeArgs {
    /// Capture file: pcap or pcapng (tcpdump -w, linerate --capture, Wireshark); "-" reads
    /// standard input.
    pub file: std::path::PathBuf,
    /// The path's bottleneck rate (e.g. 100M), for RFC 6349's transfer time ratio, TCP
    /// efficiency and buffer delay.
    #[arg(long, value_parser = units::parse_rate)]
    pub link_rate: Option<u64>,
    /// Path MTU for RFC 6349's ideal rate (default: the MSS seen plus headers, else 1500).
    #[arg(long, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub mtu: Option<u32>,
    /// Write a time-sequence graph (SVG) of every direction that carried data into DIR (of
    /// the connections shown: the --top largest).
    #[arg(long, value_name = "DIR")]
    pub graph: Option<std::path::PathBuf>,
    /// Show the N largest TCP connections and the N largest UDP flows (by payload bytes,
    /// then packets) in full and sum the rest under "others"; 0 shows every one.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub top: usize,
    /// One JSON record (its schema: `linerate schema analyze`).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV: a header and one row per TCP direction and UDP flow.
    #[arg(long)]
    pub csv: bool,
}

/// `--capture` on `tcp`, `udp` and `rr`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct CaptureArgs {
    /// Record the test's own packets at this end into FILE (pcap; needs CAP_NET_RAW) and add
    /// what the trace analysis finds to the diagnosis. The server's capture comes back too
    /// when it allows it; it is written next to FILE as FILE.server.pcap.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<std::path::PathBuf>,
    /// Bytes kept of each packet (default 128: every header, no payload).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(64..=262144), requires = "capture")]
    pub snaplen: u32,
}
