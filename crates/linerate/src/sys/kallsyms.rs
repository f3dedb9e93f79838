//! Kernel symbols from `/proc/kallsyms` (the kernel's and every loaded module's), for
//! `--profile`: an address resolves to the text symbol at or below it.
//!
//! With `kernel.kptr_restrict` set (or without CAP_SYSLOG) the file lists every address as
//! zero: [`Kallsyms::read`] then fails and says what to change, rather than resolving every
//! sample to one symbol.

use std::path::Path;

/// Farthest an address may be past its symbol's start and still count as in it, bytes (the
/// last symbol of a region has no end in the file).
const MAX_SYMBOL_SPAN: u64 = 1 << 20;

/// Text symbols sorted by address.
#[derive(Debug, Default)]
pub struct Kallsyms {
    /// (address, start and end of the name in `names`).
    syms: Vec<(u64, u32, u32)>,
    /// Every name, `name` or `name [module]`, one after the other.
    names: String,
}

impl Kallsyms {
    /// Reads `/proc/kallsyms`.
    pub fn read() -> Result<Kallsyms, String> {
        let path = Path::new("/proc/kallsyms");
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let k = Kallsyms::parse(&text);
        if k.syms.is_empty() {
            return Err(
                "/proc/kallsyms shows no kernel addresses (kernel.kptr_restrict): run as root with `sysctl kernel.kptr_restrict=0`"
                    .into(),
            );
        }
        Ok(k)
    }

    /// Parses the text of `/proc/kallsyms`: `ADDR TYPE NAME [MODULE]` per line; only text
    /// symbols (`t`, `T`) with a nonzero address are kept. Lines that do not parse are
    /// skipped (the file is the kernel's, and one odd line must not lose the rest).
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms::default();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            let start = k.names.len();
            k.names.push_str(name);
            if let Some(module) = it.next() {
                k.names.push(' ');
                k.names.push_str(module);
            }
            let (Ok(s), Ok(e)) = (u32::try_from(start), u32::try_from(k.names.len())) else {
                break;
            };
            k.syms.push((addr, s, e));
        }
        // Stable: of aliases at one address the first listed is kept first (`_stext`
        // after `srso_alias_untrain_ret`, say); resolve picks the last one at or below.
        k.syms.sort_by_key(|s| s.0);
        k
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True without symbols.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol `addr` is in, or `None` below the first one or too far past the nearest.
    pub fn resolve(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (start, s, e) = *self.syms.get(i.checked_sub(1)?)?;
        if addr - start > MAX_SYMBOL_SPAN {
            return None;
        }
        self.names.get(s as usize..e as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 T copy_user_enhanced_fast_string
ffffffff81001100 t tcp_sendmsg_locked
ffffffff81001200 D some_data
ffffffff81001300 T tcp_sendmsg
garbage line
ffffffffc0001000 t virtnet_poll\t[virtio_net]
";

    #[test]
    fn resolves_to_the_symbol_at_or_below() {
        let k = Kallsyms::parse(FIXTURE);
        assert_eq!(k.len(), 5);
        assert_eq!(
            k.resolve(0xffffffff81001000),
            Some("copy_user_enhanced_fast_string")
        );
        assert_eq!(
            k.resolve(0xffffffff810010ff),
            Some("copy_user_enhanced_fast_string")
        );
        // Data symbols are not functions: the text symbol before them owns the address.
        assert_eq!(k.resolve(0xffffffff81001250), Some("tcp_sendmsg_locked"));
        assert_eq!(k.resolve(0xffffffff81001301), Some("tcp_sendmsg"));
        assert_eq!(
            k.resolve(0xffffffffc0001010),
            Some("virtnet_poll [virtio_net]")
        );
        assert_eq!(k.resolve(0x1000), None);
        assert_eq!(k.resolve(0xffffffff81001300 + (2 << 20)), None);
    }

    #[test]
    fn restricted_addresses_give_no_symbols() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t tcp_sendmsg\n");
        assert!(k.is_empty());
        assert_eq!(k.resolve(0xffffffff81000000), None);
    }

    #[test]
    fn this_hosts_kallsyms_resolve_its_own_entries() {
        // Whatever this host allows: either addresses (root) or none (restricted).
        match Kallsyms::read() {
            Ok(k) => assert!(k.len() > 1000, "{} symbols", k.len()),
            Err(e) => assert!(
                e.contains("kptr_restrict") || e.contains("cannot read"),
                "{e}"
            ),
        }
    }
}
