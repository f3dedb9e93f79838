//! The classic BPF program `--capture` attaches to its packet socket: accept TCP and UDP to
//! or from one address and port (the test's server), cut to the snap length; reject the
//! rest in the kernel. Pure: [`program`] builds the instructions, [`run`] interprets them
//! (for tests; the kernel runs the real thing).
//!
//! The link-layer protocol is read from the socket buffer (`SKF_AD_PROTOCOL`), so the same
//! program works for Ethernet frames (`link_len` 14) and for cooked packets (`link_len` 0).
//! IPv4 non-first fragments are rejected (they carry no ports); IPv6 packets are matched when
//! TCP or UDP follows the fixed header directly, which is what linerate's tests send.

use std::net::IpAddr;

/// One instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Constant.
    pub k: u32,
}

const LD_W_ABS: u16 = 0x20;
const LD_H_ABS: u16 = 0x28;
const LD_B_ABS: u16 = 0x30;
const LD_H_IND: u16 = 0x48;
const LDX_B_MSH: u16 = 0xb1;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const SKF_AD_PROTOCOL: u32 = 0xffff_f000;

/// Instruction with symbolic jump targets, resolved by [`assemble`].
#[derive(Clone, Copy)]
enum Op {
    Ld(u16, u32),
    Jeq(u32, Target, Target),
    Jset(u32, Target, Target),
    Ret(u32),
}

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Next,
    Label(usize),
}

/// The filter `host ADDR and port PORT` (TCP or UDP only), returning at most `snaplen` bytes
/// of each packet; `link_len` is the length of the link header before the IP header. At the
/// client ADDR is the server; at the server it is the client, PORT the server's port.
pub fn program(addr: IpAddr, port: u16, snaplen: u32, link_len: u32) -> Vec<Insn> {
    const ACCEPT: usize = 1000;
    const REJECT: usize = 1001;
    const PORTS: usize = 1002;
    const CHECK_DST: usize = 1003;
    const L4: usize = 100;
    let l = link_len;
    let p = u32::from(port);
    let mut ops: Vec<(Option<usize>, Op)> = Vec::new();
    let mut push = |label: Option<usize>, op: Op| ops.push((label, op));
    use Target::{Label, Next};
    push(None, Op::Ld(LD_H_ABS, SKF_AD_PROTOCOL));
    match addr {
        IpAddr::V4(a) => {
            let w = u32::from(a);
            push(None, Op::Jeq(0x0800, Next, Label(REJECT)));
            push(None, Op::Ld(LD_B_ABS, l + 9));
            push(None, Op::Jeq(6, Label(L4), Next));
            push(None, Op::Jeq(17, Label(L4), Label(REJECT)));
            // Fragments after the first carry no ports.
            push(Some(L4), Op::Ld(LD_H_ABS, l + 6));
            push(None, Op::Jset(0x1fff, Label(REJECT), Next));
            push(None, Op::Ld(LD_W_ABS, l + 12));
            push(None, Op::Jeq(w, Label(PORTS), Next));
            push(None, Op::Ld(LD_W_ABS, l + 16));
            push(None, Op::Jeq(w, Label(PORTS), Label(REJECT)));
            push(Some(PORTS), Op::Ld(LDX_B_MSH, l));
            push(None, Op::Ld(LD_H_IND, l));
            push(None, Op::Jeq(p, Label(ACCEPT), Next));
            push(None, Op::Ld(LD_H_IND, l + 2));
            push(None, Op::Jeq(p, Label(ACCEPT), Label(REJECT)));
        }
        IpAddr::V6(a) => {
            let o = a.octets();
            let words: Vec<u32> = o
                .chunks(4)
                .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            push(None, Op::Jeq(0x86dd, Next, Label(REJECT)));
            push(None, Op::Ld(LD_B_ABS, l + 6));
            push(None, Op::Jeq(6, Label(L4), Next));
            push(None, Op::Jeq(17, Label(L4), Label(REJECT)));
            // Source address, word by word; on a mismatch try the destination.
            for (i, w) in words.iter().enumerate() {
                let label = if i == 0 { Some(L4) } else { None };
                push(label, Op::Ld(LD_W_ABS, l + 8 + 4 * i as u32));
                let hit = if i == 3 { Label(PORTS) } else { Next };
                push(None, Op::Jeq(*w, hit, Label(CHECK_DST)));
            }
            for (i, w) in words.iter().enumerate() {
                let label = if i == 0 { Some(CHECK_DST) } else { None };
                push(label, Op::Ld(LD_W_ABS, l + 24 + 4 * i as u32));
                push(None, Op::Jeq(*w, Next, Label(REJECT)));
            }
            push(Some(PORTS), Op::Ld(LD_H_ABS, l + 40));
            push(None, Op::Jeq(p, Label(ACCEPT), Next));
            push(None, Op::Ld(LD_H_ABS, l + 42));
            push(None, Op::Jeq(p, Label(ACCEPT), Label(REJECT)));
        }
    }
    push(Some(ACCEPT), Op::Ret(snaplen));
    push(Some(REJECT), Op::Ret(0));
    assemble(&ops)
}

fn assemble(ops: &[(Option<usize>, Op)]) -> Vec<Insn> {
    let pos = |label: usize| ops.iter().position(|(l, _)| *l == Some(label));
    let off = |i: usize, t: Target| -> u8 {
        match t {
            Target::Next => 0,
            Target::Label(l) => {
                let p = pos(l).unwrap_or(ops.len() - 1);
                // Programs are short (< 40 instructions): every jump fits a u8.
                u8::try_from(p.saturating_sub(i + 1)).unwrap_or(0)
            }
        }
    };
    ops.iter()
        .enumerate()
        .map(|(i, (_, op))| match *op {
            Op::Ld(code, k) => Insn {
                code,
                jt: 0,
                jf: 0,
                k,
            },
            Op::Jeq(k, t, f) => Insn {
                code: JEQ_K,
                jt: off(i, t),
                jf: off(i, f),
                k,
            },
            Op::Jset(k, t, f) => Insn {
                code: JSET_K,
                jt: off(i, t),
                jf: off(i, f),
                k,
            },
            Op::Ret(k) => Insn {
                code: RET_K,
                jt: 0,
                jf: 0,
                k,
            },
        })
        .collect()
}

/// Runs `prog` on a packet whose link-layer protocol is `proto` (as the kernel's
/// `skb->protocol`): the number of bytes kept, 0 for rejected. Out-of-bounds loads reject,
/// as in the kernel.
pub fn run(prog: &[Insn], proto: u16, pkt: &[u8]) -> u32 {
    let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
    let load = |off: usize, n: usize| -> Option<u32> {
        let b = pkt.get(off..off + n)?;
        Some(b.iter().fold(0u32, |acc, v| (acc << 8) | u32::from(*v)))
    };
    while let Some(i) = prog.get(pc) {
        pc += 1;
        match i.code {
            LD_H_ABS if i.k == SKF_AD_PROTOCOL => a = u32::from(proto),
            LD_W_ABS | LD_H_ABS | LD_B_ABS | LD_H_IND => {
                let n = match i.code {
                    LD_W_ABS => 4,
                    LD_B_ABS => 1,
                    _ => 2,
                };
                let off = if i.code == LD_H_IND { x + i.k } else { i.k };
                match load(off as usize, n) {
                    Some(v) => a = v,
                    None => return 0,
                }
            }
            LDX_B_MSH => match load(i.k as usize, 1) {
                Some(v) => x = 4 * (v & 0xf),
                None => return 0,
            },
            JEQ_K | JSET_K => {
                let hit = if i.code == JEQ_K {
                    a == i.k
                } else {
                    a & i.k != 0
                };
                pc += usize::from(if hit { i.jt } else { i.jf });
            }
            RET_K => return i.k,
            _ => return 0,
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_packet(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        sport: u16,
        dport: u16,
        frag: u16,
    ) -> Vec<u8> {
        let mut p = vec![0u8; 14];
        p[12] = 0x08;
        p.extend_from_slice(&[0x45, 0, 0, 40, 0, 0]);
        p.extend_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&[64, proto, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&[0u8; 16]);
        p
    }

    #[test]
    fn ipv4_filter_keeps_the_tests_packets_both_ways() {
        let s: IpAddr = "10.0.0.2".parse().unwrap();
        let prog = program(s, 5301, 128, 14);
        let c = [10, 0, 0, 1];
        let srv = [10, 0, 0, 2];
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(c, srv, 6, 40000, 5301, 0)),
            128
        );
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(srv, c, 6, 5301, 40000, 0)),
            128
        );
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(c, srv, 17, 40000, 5301, 0)),
            128
        );
        // Another port, another host, another protocol, a later fragment, not IPv4.
        assert_eq!(run(&prog, 0x0800, &v4_packet(c, srv, 6, 40000, 22, 0)), 0);
        assert_eq!(
            run(
                &prog,
                0x0800,
                &v4_packet(c, [10, 0, 0, 3], 6, 40000, 5301, 0)
            ),
            0
        );
        assert_eq!(run(&prog, 0x0800, &v4_packet(c, srv, 1, 40000, 5301, 0)), 0);
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(c, srv, 6, 40000, 5301, 0x0010)),
            0
        );
        assert_eq!(run(&prog, 0x0806, &v4_packet(c, srv, 6, 40000, 5301, 0)), 0);
        // Server talking to itself on loopback: source matches, port in the destination.
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(srv, srv, 6, 40000, 5301, 0)),
            128
        );
        // Cut short: rejected, never read out of bounds.
        assert_eq!(
            run(&prog, 0x0800, &v4_packet(c, srv, 6, 40000, 5301, 0)[..30]),
            0
        );
    }

    #[test]
    fn ipv6_filter_and_cooked_offsets() {
        let s: IpAddr = "fd00::2".parse().unwrap();
        let prog = program(s, 5301, 96, 0);
        let mut p = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        let c: std::net::Ipv6Addr = "fd00::1".parse().unwrap();
        let srv: std::net::Ipv6Addr = "fd00::2".parse().unwrap();
        p.extend_from_slice(&c.octets());
        p.extend_from_slice(&srv.octets());
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&5301u16.to_be_bytes());
        p.extend_from_slice(&[0u8; 16]);
        assert_eq!(run(&prog, 0x86dd, &p), 96);
        p[43] = 0x20; // destination port 5408
        assert_eq!(run(&prog, 0x86dd, &p), 0);
        assert!(program(s, 5301, 96, 0).len() < 60);
    }
}
