//! `linerate lab` arguments: network-namespace labs on one machine (see linerate-lab).

use clap::{Args as ClapArgs, Subcommand};

use super::units;

/// `linerate lab` arguments.
#[derive(Debug, ClapArgs)]
pub struct LabArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LabCommand,
}

/// `linerate lab` subcommands.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create a lab (an existing lab of the same name is removed first).
    #[command(
        after_help = "Examples:\n  linerate lab up demo                              # hosts a and b on one link\n  linerate lab up edge --topology router            # a - r - b, r forwards\n  linerate lab up slow --topology router --rate 20M --loss 0.5%\n  linerate lab up up --rate 10M --rate-dir to-b          # shape a -> b only\n  linerate lab up jumbo --mtu 9000\n  linerate lab up far --topology router --delay 10ms   # 10 ms each way through r"
    )]
    Up(LabUpArgs),
    /// Remove a lab and everything it made (nothing to do if it does not exist).
    Down {
        /// Lab name.
        name: String,
    },
    /// List the labs on this machine with their hosts and addresses.
    List,
    /// The delay line of `lab up --delay` (run in the router namespace by `lab up` itself).
    #[command(hide = true)]
    DelayLine {
        /// Lab name.
        name: String,
        /// The delay each packet is held.
        #[arg(long, value_parser = units::parse_duration)]
        delay: std::time::Duration,
        /// Packets held at most.
        #[arg(long)]
        queue: usize,
    },
    /// Run a command on a lab host; its exit status is passed through.
    #[command(
        after_help = "Examples:\n  linerate lab exec demo b -- linerate serve\n  linerate lab exec demo a -- linerate tcp 198.19.0.2"
    )]
    Exec {
        /// Lab name.
        name: String,
        /// Host: a, b, or r (router topology).
        host: String,
        /// The command and its arguments (after --).
        #[arg(
            required = true,
            num_args = 1..,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "COMMAND"
        )]
        command: Vec<String>,
    },
}

/// `linerate lab up` arguments.
#[derive(Debug, ClapArgs)]
pub struct LabUpArgs {
    /// Lab name: 1 to 12 characters from a-z, 0-9 and '-'.
    pub name: String,
    /// pair (a - b) or router (a - r - b, r forwarding).
    #[arg(long, default_value = "pair")]
    pub topology: String,
    /// Rate-limit the link (e.g. 20M): both directions, each with its own shaper, unless
    /// --rate-dir says otherwise.
    #[arg(long, value_parser = units::parse_rate)]
    pub rate: Option<u64>,
    /// Which directions --rate shapes: both, to-b (a -> b) or to-a (b -> a).
    #[arg(long, default_value = "both", requires = "rate")]
    pub rate_dir: String,
    /// Qdisc that enforces --rate: tbf or htb.
    #[arg(long, default_value = "tbf", requires = "rate")]
    pub shaper: String,
    /// Queue of each shaper in bytes (e.g. 1M for a deep, bufferbloated queue, 32K for a
    /// shallow one); default: the shaper's burst plus 100 ms at --rate.
    #[arg(long, value_parser = units::parse_size32, requires = "rate")]
    pub queue: Option<u32>,
    /// Drop this share of the packets towards b with nftables: a fraction (0.01) or a
    /// percentage (1%).
    #[arg(long, value_parser = parse_loss)]
    pub loss: Option<f64>,
    /// MTU of every link (1280 to 65535).
    #[arg(long)]
    pub mtu: Option<u32>,
    /// Hold every packet this long in each direction (e.g. 10ms) in the router, by a delay
    /// line of linerate's own (a TUN device in r; no netem needed). Router topology only.
    #[arg(long, value_parser = units::parse_duration)]
    pub delay: Option<std::time::Duration>,
    /// Packets the delay line holds at most; more are dropped and counted.
    #[arg(long, requires = "delay", default_value_t = 10_000)]
    pub delay_queue: usize,
}

/// A loss given as a fraction (`0.01`) or a percentage (`1%`), as a fraction.
pub fn parse_loss(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("invalid loss '{s}': use a fraction such as 0.01 or a percentage such as 1%")
    })?;
    let f = v / scale;
    if !(0.0..=1.0).contains(&f) {
        return Err(format!(
            "invalid loss '{s}': it must be between 0 and 1 (0% and 100%)"
        ));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_as_fraction_or_percent() {
        assert_eq!(parse_loss("0.01"), Ok(0.01));
        assert_eq!(parse_loss("1%"), Ok(0.01));
        assert_eq!(parse_loss(" 50 % "), Ok(0.5));
        assert!(parse_loss("2").is_err());
        assert!(parse_loss("x").is_err());
    }
}
