//! Link impairments: rate limiting with `tc` (tbf or htb) and random loss with
//! nftables, plus reading the counters back.
//!
//! Invariants:
//! * Shaping is always installed as the *root* egress qdisc of one interface
//!   inside one namespace, with `tc qdisc replace`, so re-shaping an interface
//!   replaces the previous setting instead of stacking. tbf gets no explicit
//!   handle; htb is `1:` with a single class `1:1` that is also the default
//!   class, and an optional `bfifo` leaf `10:` when a byte limit is given.
//! * The buckets are never smaller than two full frames of the interface MTU,
//!   so a default [`Shaping`] cannot silently drop every full-sized packet.
//! * Loss lives in one nftables table, `inet linerate_lab`, in the namespace's
//!   own ruleset; setting loss replaces the whole table atomically (one
//!   `nft -f` transaction), loss 0 deletes it. The rule drops a packet when
//!   `numgen random mod 1000000` is below `fraction * 1000000`.
//! * Everything here is scoped by namespace name: nothing touches the root
//!   namespace.

use serde::Deserialize;

use crate::cmd;
use crate::error::{LabError, Result};

/// Which qdisc enforces a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShapingKind {
    /// Token bucket filter (`tc qdisc ... tbf`): simple, one queue.
    #[default]
    Tbf,
    /// Hierarchical token bucket with a single class (`tc ... htb`).
    Htb,
}

/// A rate limit for the egress of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaping {
    /// Rate in bits per second; must be > 0.
    pub rate_bps: u64,
    /// Bucket size in bytes; default: 10 ms at `rate_bps`, at least two
    /// MTU-sized frames.
    pub burst_bytes: Option<u32>,
    /// Queue length in bytes; default: `burst` + 100 ms at `rate_bps` (at
    /// least two frames). For htb this becomes a `bfifo` leaf when set.
    pub limit_bytes: Option<u32>,
    /// The qdisc used.
    pub kind: ShapingKind,
}

impl Shaping {
    /// A tbf rate limit with default burst and limit.
    pub fn tbf(rate_bps: u64) -> Self {
        Shaping {
            rate_bps,
            burst_bytes: None,
            limit_bytes: None,
            kind: ShapingKind::Tbf,
        }
    }

    /// An htb rate limit with default burst and limit.
    pub fn htb(rate_bps: u64) -> Self {
        Shaping {
            kind: ShapingKind::Htb,
            ..Shaping::tbf(rate_bps)
        }
    }

    /// Checks the values are usable.
    pub fn validate(&self) -> Result<()> {
        if self.rate_bps == 0 {
            return Err(LabError::InvalidOption(
                "shaping rate_bps must be > 0".into(),
            ));
        }
        if self.burst_bytes == Some(0) {
            return Err(LabError::InvalidOption(
                "shaping burst_bytes must be > 0".into(),
            ));
        }
        if self.limit_bytes == Some(0) {
            return Err(LabError::InvalidOption(
                "shaping limit_bytes must be > 0".into(),
            ));
        }
        Ok(())
    }

    /// Burst in bytes used on an interface of MTU `mtu`.
    pub fn effective_burst(&self, mtu: u32) -> u64 {
        let frames = 2 * (u64::from(mtu) + 14);
        match self.burst_bytes {
            Some(b) => u64::from(b),
            None => (self.rate_bps / 8 / 100).max(frames),
        }
    }

    /// Queue limit in bytes used on an interface of MTU `mtu`.
    pub fn effective_limit(&self, mtu: u32) -> u64 {
        let frames = 2 * (u64::from(mtu) + 14);
        match self.limit_bytes {
            Some(l) => u64::from(l),
            None => self.effective_burst(mtu) + (self.rate_bps / 8 / 10).max(frames),
        }
    }

    /// The `tc` argument lists (without the leading `tc -n NS`) that install
    /// this shaping on `iface`, whose MTU is `mtu`.
    pub fn tc_commands(&self, iface: &str, mtu: u32) -> Vec<Vec<String>> {
        let rate = format!("{}bit", self.rate_bps);
        let burst = self.effective_burst(mtu).to_string();
        let limit = self.effective_limit(mtu).to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self.kind {
            ShapingKind::Tbf => vec![s(&[
                "qdisc", "replace", "dev", iface, "root", "tbf", "rate", &rate, "burst", &burst,
                "limit", &limit,
            ])],
            ShapingKind::Htb => {
                let mut cmds = vec![
                    s(&[
                        "qdisc", "replace", "dev", iface, "root", "handle", "1:", "htb", "default",
                        "1",
                    ]),
                    s(&[
                        "class", "replace", "dev", iface, "parent", "1:", "classid", "1:1", "htb",
                        "rate", &rate, "ceil", &rate, "burst", &burst, "cburst", &burst,
                    ]),
                ];
                if self.limit_bytes.is_some() {
                    cmds.push(s(&[
                        "qdisc", "replace", "dev", iface, "parent", "1:1", "handle", "10:",
                        "bfifo", "limit", &limit,
                    ]));
                }
                cmds
            }
        }
    }
}

/// Counters of the root qdisc of an interface.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QdiscStats {
    /// Qdisc kind, e.g. `tbf`, `htb`, `noqueue`.
    pub kind: String,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Times the qdisc was over its limit (throttled).
    pub overlimits: u64,
    /// Requeues.
    pub requeues: u64,
}

#[derive(Deserialize)]
struct TcQdiscJson {
    kind: String,
    #[serde(default)]
    root: bool,
    #[serde(default)]
    bytes: u64,
    #[serde(default)]
    packets: u64,
    #[serde(default)]
    drops: u64,
    #[serde(default)]
    overlimits: u64,
    #[serde(default)]
    requeues: u64,
}

/// Parses `tc -s -j qdisc show dev X` output and returns the root qdisc.
pub fn parse_qdisc_json(text: &str) -> std::result::Result<QdiscStats, String> {
    let list: Vec<TcQdiscJson> =
        serde_json::from_str(text.trim()).map_err(|e| format!("invalid JSON: {e}"))?;
    let root = list
        .into_iter()
        .find(|q| q.root)
        .ok_or_else(|| "no root qdisc in output".to_string())?;
    Ok(QdiscStats {
        kind: root.kind,
        sent_bytes: root.bytes,
        sent_packets: root.packets,
        dropped: root.drops,
        overlimits: root.overlimits,
        requeues: root.requeues,
    })
}

/// Parses plain `tc -s qdisc show dev X` output (for `tc` without `-j`) and
/// returns the root qdisc. Expects, for the root qdisc:
///
/// ```text
/// qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 16Kb lat 104.9ms
///  Sent 1234 bytes 10 pkt (dropped 1, overlimits 2 requeues 0)
/// ```
pub fn parse_qdisc_text(text: &str) -> std::result::Result<QdiscStats, String> {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() != Some(&"qdisc") || !words.contains(&"root") {
            continue;
        }
        let kind = words
            .get(1)
            .ok_or_else(|| format!("no kind in {line:?}"))?
            .to_string();
        let sent = lines
            .find(|l| l.trim_start().starts_with("Sent "))
            .ok_or_else(|| "no `Sent` line after root qdisc".to_string())?;
        // "Sent 1234 bytes 10 pkt (dropped 1, overlimits 2 requeues 0)"
        let cleaned = sent.replace(['(', ')', ','], " ");
        let words: Vec<&str> = cleaned.split_whitespace().collect();
        let after = |key: &str| -> std::result::Result<u64, String> {
            let pos = words
                .iter()
                .position(|w| *w == key)
                .ok_or_else(|| format!("no `{key}` in {sent:?}"))?;
            let value = if matches!(key, "bytes" | "pkt") {
                pos.checked_sub(1).and_then(|p| words.get(p))
            } else {
                words.get(pos + 1)
            };
            value
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("bad `{key}` value in {sent:?}"))
        };
        return Ok(QdiscStats {
            kind,
            sent_bytes: after("bytes")?,
            sent_packets: after("pkt")?,
            dropped: after("dropped")?,
            overlimits: after("overlimits")?,
            requeues: after("requeues")?,
        });
    }
    Err("no root qdisc in output".to_string())
}

/// Root qdisc counters of `iface` in namespace `ns`.
///
/// Uses `tc -s -j`; if that fails or prints something that is not the
/// expected JSON (old `tc` without `-j`), falls back to parsing plain
/// `tc -s qdisc show`, and reports both problems if that fails too.
pub fn qdisc_stats(ns: &str, iface: &str) -> Result<QdiscStats> {
    let json_args = ["-n", ns, "-s", "-j", "qdisc", "show", "dev", iface];
    let json_problem = match cmd::run("tc", &json_args) {
        Ok(out) => match parse_qdisc_json(&String::from_utf8_lossy(&out.stdout)) {
            Ok(stats) => return Ok(stats),
            Err(e) => e,
        },
        // A missing tool or a missing device will not get better without -j.
        Err(e @ LabError::MissingTool { .. }) => return Err(e),
        Err(e) => e.to_string(),
    };
    let text_args = ["-n", ns, "-s", "qdisc", "show", "dev", iface];
    let out = cmd::run("tc", &text_args)?;
    parse_qdisc_text(&String::from_utf8_lossy(&out.stdout)).map_err(|text_problem| {
        LabError::Parse {
            cmdline: cmd::cmdline("tc", &text_args),
            reason: format!("{text_problem} (and the JSON form failed: {json_problem})"),
        }
    })
}

#[derive(Deserialize)]
struct IpLinkJson {
    mtu: u32,
}

/// Parses `ip -j link show dev X` and returns the MTU.
pub fn parse_link_mtu(text: &str) -> std::result::Result<u32, String> {
    let links: Vec<IpLinkJson> =
        serde_json::from_str(text.trim()).map_err(|e| format!("invalid JSON: {e}"))?;
    links
        .first()
        .map(|l| l.mtu)
        .ok_or_else(|| "no link in output".to_string())
}

/// MTU of `iface` in namespace `ns`.
pub fn link_mtu(ns: &str, iface: &str) -> Result<u32> {
    let args = ["-n", ns, "-j", "link", "show", "dev", iface];
    let out = cmd::run("ip", &args)?;
    parse_link_mtu(&String::from_utf8_lossy(&out.stdout)).map_err(|reason| LabError::Parse {
        cmdline: cmd::cmdline("ip", &args),
        reason,
    })
}

/// Installs `shaping` as the root egress qdisc of `iface` in namespace `ns`.
pub fn apply(ns: &str, iface: &str, shaping: &Shaping) -> Result<()> {
    shaping.validate()?;
    let mtu = link_mtu(ns, iface)?;
    for args in shaping.tc_commands(iface, mtu) {
        let mut full = vec!["-n".to_string(), ns.to_string()];
        full.extend(args);
        cmd::run("tc", &full)?;
    }
    Ok(())
}

/// Removes any root qdisc from `iface` in `ns` (back to the default).
/// Succeeds if there was none.
pub fn clear(ns: &str, iface: &str) -> Result<()> {
    let args = ["-n", ns, "qdisc", "del", "dev", iface, "root"];
    match cmd::run("tc", &args) {
        Ok(_) => Ok(()),
        Err(e) => match qdisc_stats(ns, iface) {
            // Deleting the default qdisc fails ("handle of zero"): nothing to do.
            Ok(stats) if matches!(stats.kind.as_str(), "noqueue" | "noop") => Ok(()),
            _ => Err(e),
        },
    }
}

/// Name of the nftables table (family `inet`) holding the loss rule.
pub const NFT_TABLE: &str = "linerate_lab";

/// Denominator of the random draw in the loss rule.
pub const LOSS_MODULUS: u64 = 1_000_000;

/// Where a loss rule applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LossHook {
    /// Packets arriving for the namespace itself through interface `iif`.
    Input {
        /// Incoming interface.
        iif: String,
    },
    /// Packets forwarded by the namespace out of interface `oif`.
    Forward {
        /// Outgoing interface.
        oif: String,
    },
}

/// Validates a loss fraction (finite, within 0..=1).
pub fn validate_loss(fraction: f64) -> Result<()> {
    if fraction.is_finite() && (0.0..=1.0).contains(&fraction) {
        Ok(())
    } else {
        Err(LabError::InvalidOption(format!(
            "loss must be a fraction within 0..=1, got {fraction}"
        )))
    }
}

/// Threshold `k` such that `numgen random mod LOSS_MODULUS < k` drops
/// `fraction` of the packets.
pub fn loss_threshold(fraction: f64) -> u64 {
    let k = (fraction.clamp(0.0, 1.0) * LOSS_MODULUS as f64).round();
    (k as u64).min(LOSS_MODULUS)
}

/// The `nft -f` script that (re)creates the loss table with a rule dropping
/// `fraction` of the packets at `hook`. Loss 0 yields a script that only
/// deletes the table, loss 1 drops without drawing. The script is one atomic transaction and works whether
/// or not the table already exists.
pub fn loss_script(hook: &LossHook, fraction: f64) -> String {
    let mut script = format!("table inet {NFT_TABLE} {{\n}}\ndelete table inet {NFT_TABLE}\n");
    let threshold = loss_threshold(fraction);
    if threshold == 0 {
        return script;
    }
    let (hook_name, matcher) = match hook {
        LossHook::Input { iif } => ("input", format!("iifname \"{iif}\"")),
        LossHook::Forward { oif } => ("forward", format!("oifname \"{oif}\"")),
    };
    // numgen's range is 0..modulus, so "< modulus" is rejected: drop all
    // packets without the draw instead.
    let draw = if threshold >= LOSS_MODULUS {
        String::new()
    } else {
        format!(" numgen random mod {LOSS_MODULUS} < {threshold}")
    };
    script.push_str(&format!(
        "table inet {NFT_TABLE} {{\n\
         \tchain loss {{\n\
         \t\ttype filter hook {hook_name} priority 0; policy accept;\n\
         \t\t{matcher}{draw} counter drop comment \"linerate-lab loss {fraction}\"\n\
         \t}}\n\
         }}\n"
    ));
    script
}

/// Installs (or with `fraction == 0`, removes) random loss in namespace `ns`.
pub fn set_loss(ns: &str, hook: &LossHook, fraction: f64) -> Result<()> {
    validate_loss(fraction)?;
    let iface = match hook {
        LossHook::Input { iif } => iif,
        LossHook::Forward { oif } => oif,
    };
    if !iface
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
    {
        return Err(LabError::InvalidOption(format!(
            "interface name {iface:?} is not usable in an nft rule"
        )));
    }
    let script = loss_script(hook, fraction);
    cmd::run_with_stdin("ip", &["netns", "exec", ns, "nft", "-f", "-"], &script).map(drop)
}

/// Parses `nft -j list table inet linerate_lab` and sums the packet counters
/// of its rules (the packets dropped by the loss rule).
pub fn parse_nft_counter(text: &str) -> std::result::Result<u64, String> {
    let value: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("invalid JSON: {e}"))?;
    let items = value
        .get("nftables")
        .and_then(|v| v.as_array())
        .ok_or_else(|| "no `nftables` array".to_string())?;
    let mut total = 0;
    for item in items {
        let Some(exprs) = item
            .get("rule")
            .and_then(|r| r.get("expr"))
            .and_then(|e| e.as_array())
        else {
            continue;
        };
        for expr in exprs {
            if let Some(packets) = expr
                .get("counter")
                .and_then(|c| c.get("packets"))
                .and_then(|p| p.as_u64())
            {
                total += packets;
            }
        }
    }
    Ok(total)
}

/// Packets dropped so far by the loss rule in namespace `ns` (0 if no loss
/// is configured).
pub fn loss_dropped(ns: &str) -> Result<u64> {
    // Listing a missing table fails; avoid treating that as an error by
    // listing only when the table exists.
    let tables = cmd::run("ip", &["netns", "exec", ns, "nft", "list", "tables"])?;
    let wanted = format!("table inet {NFT_TABLE}");
    if !String::from_utf8_lossy(&tables.stdout)
        .lines()
        .any(|l| l.trim() == wanted)
    {
        return Ok(0);
    }
    let args = [
        "netns", "exec", ns, "nft", "-j", "list", "table", "inet", NFT_TABLE,
    ];
    let out = cmd::run("ip", &args)?;
    parse_nft_counter(&String::from_utf8_lossy(&out.stdout)).map_err(|reason| LabError::Parse {
        cmdline: cmd::cmdline("ip", &args),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TBF_JSON: &str = r#"[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":1250000,"burst":32767,"lat":26214},"bytes":15140,"packets":10,"drops":3,"overlimits":7,"requeues":0,"backlog":0,"qlen":0}]"#;
    const HTB_JSON: &str = r#"[{"kind":"htb","handle":"1:","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000},"bytes":110,"packets":1,"drops":0,"overlimits":4,"requeues":0,"backlog":0,"qlen":0},{"kind":"bfifo","handle":"10:","parent":"1:1","options":{"limit":30000},"bytes":110,"packets":1,"drops":2,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#;
    const TBF_TEXT: &str = "qdisc tbf 8001: root refcnt 3 rate 10Mbit burst 32Kb lat 26.2ms \n Sent 15140 bytes 10 pkt (dropped 3, overlimits 7 requeues 1) \n backlog 0b 0p requeues 1\n";
    const HTB_TEXT: &str = "qdisc htb 1: root refcnt 3 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000\n Sent 110 bytes 1 pkt (dropped 0, overlimits 4 requeues 0) \n backlog 0b 0p requeues 0\nqdisc bfifo 10: parent 1:1 limit 30000b\n Sent 110 bytes 1 pkt (dropped 2, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n";

    #[test]
    fn parses_tbf_json() {
        let s = parse_qdisc_json(TBF_JSON).unwrap();
        assert_eq!(
            s,
            QdiscStats {
                kind: "tbf".into(),
                sent_bytes: 15140,
                sent_packets: 10,
                dropped: 3,
                overlimits: 7,
                requeues: 0
            }
        );
    }

    #[test]
    fn parses_root_of_htb_json() {
        let s = parse_qdisc_json(HTB_JSON).unwrap();
        assert_eq!(s.kind, "htb");
        assert_eq!(s.overlimits, 4);
        assert_eq!(s.dropped, 0);
    }

    #[test]
    fn json_errors_are_reported() {
        assert!(parse_qdisc_json("qdisc noqueue 0: root").is_err());
        assert_eq!(
            parse_qdisc_json("[]").unwrap_err(),
            "no root qdisc in output"
        );
    }

    #[test]
    fn parses_text_fallback() {
        let s = parse_qdisc_text(TBF_TEXT).unwrap();
        assert_eq!(
            s,
            QdiscStats {
                kind: "tbf".into(),
                sent_bytes: 15140,
                sent_packets: 10,
                dropped: 3,
                overlimits: 7,
                requeues: 1
            }
        );
        let h = parse_qdisc_text(HTB_TEXT).unwrap();
        assert_eq!((h.kind.as_str(), h.overlimits, h.dropped), ("htb", 4, 0));
        assert!(parse_qdisc_text("").is_err());
    }

    #[test]
    fn text_and_json_agree() {
        assert_eq!(
            parse_qdisc_json(HTB_JSON).unwrap(),
            parse_qdisc_text(HTB_TEXT).unwrap()
        );
    }

    #[test]
    fn parses_link_mtu() {
        let j = r#"[{"ifindex":2,"link_index":2,"ifname":"lr0123abcdab","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1400,"qdisc":"noqueue"}]"#;
        assert_eq!(parse_link_mtu(j).unwrap(), 1400);
        assert!(parse_link_mtu("[]").is_err());
    }

    #[test]
    fn default_buckets_fit_frames() {
        let slow = Shaping::tbf(1_000_000);
        assert_eq!(slow.effective_burst(1500), 3028);
        assert_eq!(slow.effective_limit(1500), 3028 + 12_500);
        let fast = Shaping::tbf(1_000_000_000);
        assert_eq!(fast.effective_burst(1500), 1_250_000);
        let jumbo = Shaping::tbf(1_000_000);
        assert_eq!(jumbo.effective_burst(9000), 18_028);
        let fixed = Shaping {
            burst_bytes: Some(5000),
            limit_bytes: Some(9000),
            ..Shaping::htb(1_000_000)
        };
        assert_eq!(fixed.effective_burst(1500), 5000);
        assert_eq!(fixed.effective_limit(1500), 9000);
    }

    #[test]
    fn tbf_command() {
        let cmds = Shaping::tbf(2_000_000).tc_commands("lrabcdef01rb", 1500);
        assert_eq!(
            cmds,
            vec![
                "qdisc replace dev lrabcdef01rb root tbf rate 2000000bit burst 3028 limit 28028"
                    .split(' ')
                    .map(String::from)
                    .collect::<Vec<_>>()
            ]
        );
    }

    #[test]
    fn htb_commands() {
        let join = |c: Vec<Vec<String>>| c.into_iter().map(|v| v.join(" ")).collect::<Vec<_>>();
        assert_eq!(
            join(Shaping::htb(8_000_000).tc_commands("x", 1500)),
            vec![
                "qdisc replace dev x root handle 1: htb default 1",
                "class replace dev x parent 1: classid 1:1 htb rate 8000000bit ceil 8000000bit burst 10000 cburst 10000",
            ]
        );
        let limited = Shaping {
            limit_bytes: Some(30_000),
            ..Shaping::htb(8_000_000)
        };
        let cmds = join(limited.tc_commands("x", 1500));
        assert_eq!(cmds.len(), 3);
        assert_eq!(
            cmds[2],
            "qdisc replace dev x parent 1:1 handle 10: bfifo limit 30000"
        );
    }

    #[test]
    fn shaping_validation() {
        assert!(Shaping::tbf(0).validate().is_err());
        assert!(Shaping::tbf(1).validate().is_ok());
        let zero_burst = Shaping {
            burst_bytes: Some(0),
            ..Shaping::tbf(1000)
        };
        assert!(zero_burst.validate().is_err());
    }

    #[test]
    fn loss_thresholds() {
        assert_eq!(loss_threshold(0.0), 0);
        assert_eq!(loss_threshold(0.1), 100_000);
        assert_eq!(loss_threshold(0.0000004), 0);
        assert_eq!(loss_threshold(1.0), LOSS_MODULUS);
        assert!(validate_loss(0.5).is_ok());
        assert!(validate_loss(-0.1).is_err());
        assert!(validate_loss(1.5).is_err());
        assert!(validate_loss(f64::NAN).is_err());
    }

    #[test]
    fn loss_script_input() {
        let script = loss_script(
            &LossHook::Input {
                iif: "lr0123abcdba".into(),
            },
            0.25,
        );
        assert_eq!(
            script,
            "table inet linerate_lab {\n}\n\
             delete table inet linerate_lab\n\
             table inet linerate_lab {\n\
             \tchain loss {\n\
             \t\ttype filter hook input priority 0; policy accept;\n\
             \t\tiifname \"lr0123abcdba\" numgen random mod 1000000 < 250000 counter drop comment \"linerate-lab loss 0.25\"\n\
             \t}\n\
             }\n"
        );
    }

    #[test]
    fn loss_script_forward_and_zero() {
        let hook = LossHook::Forward {
            oif: "lr0123abcdrb".into(),
        };
        let script = loss_script(&hook, 1.0);
        assert!(script.contains("type filter hook forward priority 0;"));
        assert!(script.contains("\t\toifname \"lr0123abcdrb\" counter drop comment"));
        assert!(!script.contains("numgen"));
        let almost = loss_script(&hook, 0.999999);
        assert!(almost.contains("numgen random mod 1000000 < 999999 counter drop"));
        assert_eq!(
            loss_script(&hook, 0.0),
            "table inet linerate_lab {\n}\ndelete table inet linerate_lab\n"
        );
    }

    #[test]
    fn parses_nft_counter() {
        let j = r#"{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "linerate_lab", "handle": 1}}, {"chain": {"family": "inet", "table": "linerate_lab", "name": "loss", "handle": 1, "type": "filter", "hook": "input", "prio": 0, "policy": "accept"}}, {"rule": {"family": "inet", "table": "linerate_lab", "chain": "loss", "handle": 2, "comment": "linerate-lab loss", "expr": [{"match": {"op": "<", "left": {"numgen": {"mode": "random", "mod": 1000000, "offset": 0}}, "right": 100000}}, {"counter": {"packets": 42, "bytes": 4200}}, {"drop": null}]}}]}"#;
        assert_eq!(parse_nft_counter(j).unwrap(), 42);
        assert_eq!(parse_nft_counter(r#"{"nftables": []}"#).unwrap(), 0);
        assert!(parse_nft_counter("table inet x").is_err());
    }
}
