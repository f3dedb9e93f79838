//! `--capture`: the test's own packets, recorded with an AF_PACKET socket on the interface
//! toward the peer and a classic BPF filter on the peer's address and the server's port
//! ([`super::bpf`]), written as a nanosecond pcap file.
//!
//! The capture runs on its own thread, reading with a 100 ms time-out so that it sees its
//! stop flag; the kernel cuts each packet to the snap length (the filter's return value)
//! and stamps it (`SO_TIMESTAMPNS`); each record's original length is the packet's length
//! before that cut (`PACKET_AUXDATA`), as libpcap writes it, so that readers such as tshark
//! take segment lengths from it. On loopback every packet passes the tap twice (going
//! out and coming in); the outgoing copy is skipped, as libpcap does. The file is capped
//! at `max_bytes`; packets past the cap are counted, not written. Needs CAP_NET_RAW.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use linerate_wire::capture::{
    pcap_file_header, pcap_record_header, LINKTYPE_ETHERNET, LINKTYPE_RAW,
};

use super::bpf;

/// What a capture recorded.
#[derive(Debug, Clone, Default)]
pub struct CaptureStats {
    /// The interface captured on.
    pub interface: String,
    /// Packets written to the file.
    pub packets: u64,
    /// Packets the kernel dropped because the capture did not keep up.
    pub kernel_drops: Option<u64>,
    /// Packets not written because the file reached its cap.
    pub over_cap: u64,
}

/// A capture running on its thread.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<CaptureStats>>>,
    path: PathBuf,
}

impl Capture {
    /// Starts capturing the packets to or from `server` (TCP and UDP) on the interface of
    /// the route to it, into `path`.
    pub fn start(
        path: &Path,
        server: SocketAddr,
        snaplen: u32,
        max_bytes: u64,
    ) -> io::Result<Capture> {
        Self::start_filtered(path, server, server.ip(), snaplen, max_bytes)
    }

    /// Starts capturing `host FILTER.ip and port FILTER.port` (TCP and UDP) on the interface
    /// of the route to `toward`, into `path`: at a server, the client's address and the
    /// server's port.
    pub fn start_filtered(
        path: &Path,
        filter: SocketAddr,
        toward: std::net::IpAddr,
        snaplen: u32,
        max_bytes: u64,
    ) -> io::Result<Capture> {
        let server = filter;
        let ifname = super::iface::route_interface(toward)?;
        let ifindex = nix::net::if_::if_nametoindex(ifname.as_str()).map_err(io::Error::from)?;
        let hw_type = std::fs::read_to_string(format!("/sys/class/net/{ifname}/type"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        // Ethernet (1) and loopback (772) frames carry a 14-byte Ethernet header; anything
        // else (tun, ip tunnels) is captured cooked, from the IP header on.
        let ether = matches!(hw_type, Some(1) | Some(772) | None);
        let loopback = hw_type == Some(772) || ifname == "lo";
        let (sock_type, link_type, link_len) = if ether {
            (libc::SOCK_RAW, LINKTYPE_ETHERNET, 14)
        } else {
            (libc::SOCK_DGRAM, LINKTYPE_RAW, 0)
        };
        let prog = bpf::program(server.ip(), server.port(), snaplen, link_len);
        let fd = open_socket(sock_type, ifindex, &prog)?;
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(&pcap_file_header(snaplen, link_type))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lr-capture".into())
            .spawn(move || {
                let mut stats = CaptureStats {
                    interface: ifname,
                    ..CaptureStats::default()
                };
                let r = capture_loop(
                    &fd, &mut out, &flag, loopback, snaplen, max_bytes, &mut stats,
                );
                out.flush()?;
                stats.kernel_drops = read_drops(&fd);
                r.map(|()| stats)
            })?;
        Ok(Capture {
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
        })
    }

    /// Stops the capture (after a last read of what the kernel holds) and closes the file.
    pub fn stop(mut self) -> io::Result<CaptureStats> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other(format!(
                "the capture thread for {} panicked",
                self.path.display()
            ))),
            None => Err(io::Error::other("capture already stopped")),
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn capture_loop(
    fd: &OwnedFd,
    out: &mut BufWriter<File>,
    stop: &AtomicBool,
    loopback: bool,
    snaplen: u32,
    max_bytes: u64,
    stats: &mut CaptureStats,
) -> io::Result<()> {
    let mut buf = vec![0u8; snaplen as usize];
    let mut written: u64 = 24;
    let mut draining = false;
    loop {
        if stop.load(Ordering::SeqCst) && !draining {
            draining = true;
        }
        let got = match recv_packet(fd, &mut buf, draining) {
            Ok(g) => g,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {
                if draining {
                    return Ok(());
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let Received {
            caplen,
            wire_len,
            ts_ns,
            outgoing,
        } = got;
        if loopback && outgoing {
            continue;
        }
        let rec_len = 16 + caplen as u64;
        if written + rec_len > max_bytes {
            stats.over_cap += 1;
            continue;
        }
        out.write_all(&pcap_record_header(
            ts_ns,
            caplen as u32,
            u32::try_from(wire_len).unwrap_or(u32::MAX),
        ))?;
        out.write_all(&buf[..caplen])?;
        written += rec_len;
        stats.packets += 1;
    }
}

/// PACKET_AUXDATA (linux/if_packet.h): with it on, each read carries a `tpacket_auxdata`
/// whose `tp_len` is the packet's length before the filter cut it to the snap length.
const PACKET_AUXDATA: libc::c_int = 8;

/// One packet read from the capture socket.
struct Received {
    /// Bytes captured (at most the snap length).
    caplen: usize,
    /// The packet's length on the wire (a GSO super-packet's whole length), which the pcap
    /// record's `orig_len` must carry: tools such as tshark take the segment length from it.
    wire_len: usize,
    /// Kernel time stamp, ns since the epoch (0 when the kernel gave none).
    ts_ns: u64,
    /// The host sent it (PACKET_OUTGOING).
    outgoing: bool,
}

/// Reads one packet into `buf` with its time stamp, its length before the snap-length cut
/// (PACKET_AUXDATA) and its direction.
fn recv_packet(fd: &OwnedFd, buf: &mut [u8], nonblocking: bool) -> io::Result<Received> {
    // 8-byte aligned room for SCM_TIMESTAMPNS (16 bytes of data) and PACKET_AUXDATA (20),
    // each with its cmsghdr.
    let mut control = [0u64; 16];
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value for the kernel to
    // fill in.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid before the fields are set.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = std::ptr::addr_of_mut!(addr).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // `as _`: msg_controllen is a size_t in glibc, a socklen_t in musl.
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let flags = libc::MSG_TRUNC | if nonblocking { libc::MSG_DONTWAIT } else { 0 };
    // SAFETY: `msg` points at `addr`, `iov` (over `buf`) and `control`, all live and
    // writable for this call, with their true lengths; the kernel writes within them.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    let mut got = Received {
        caplen: n.min(buf.len()),
        wire_len: n,
        ts_ns: 0,
        outgoing: addr.sll_pkttype == libc::PACKET_OUTGOING,
    };
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/CMSG_NXTHDR stay within
    // msg_controllen and return null at its end.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !c.is_null() {
        // SAFETY: `c` is a non-null cmsghdr inside `control`, as CMSG_*HDR returned it.
        let h = unsafe { std::ptr::read_unaligned(c) };
        // SAFETY: CMSG_DATA of a header inside `control` points inside `control`.
        let data = unsafe { libc::CMSG_DATA(c) };
        // SAFETY: CMSG_LEN is arithmetic on a constant.
        let hdr_len = unsafe { libc::CMSG_LEN(0) } as usize;
        // cmsg_len is a size_t in glibc, a socklen_t in musl.
        #[allow(clippy::unnecessary_cast)]
        let len = (h.cmsg_len as usize).saturating_sub(hdr_len);
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= size_of::<libc::timespec>()
        {
            // SAFETY: the kernel wrote a timespec there (checked length); read unaligned.
            let t = unsafe { std::ptr::read_unaligned(data.cast::<libc::timespec>()) };
            got.ts_ns = (t.tv_sec.max(0) as u64) * 1_000_000_000 + t.tv_nsec.max(0) as u64;
        } else if h.cmsg_level == libc::SOL_PACKET && h.cmsg_type == PACKET_AUXDATA && len >= 8 {
            // tpacket_auxdata: u32 tp_status, u32 tp_len, ...
            // SAFETY: at least 8 bytes of data are there (checked length); read unaligned.
            let tp_len = unsafe { std::ptr::read_unaligned(data.add(4).cast::<u32>()) };
            got.wire_len = (tp_len as usize).max(n);
        }
        // SAFETY: as for CMSG_FIRSTHDR; `c` is a header inside `control`.
        c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
    }
    Ok(got)
}

/// Opens the packet socket: filter attached before it is bound to the interface, so no
/// unfiltered packet is ever queued; 8 MiB receive buffer; kernel timestamps; 100 ms read
/// time-out.
fn open_socket(sock_type: i32, ifindex: u32, prog: &[bpf::Insn]) -> io::Result<OwnedFd> {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket(2) call with constant arguments; the result is checked.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            sock_type | libc::SOCK_CLOEXEC,
            i32::from(proto),
        )
    };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot open a packet socket ({e}): --capture needs root or CAP_NET_RAW"),
        ));
    }
    // SAFETY: `raw` is a descriptor socket(2) just returned and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let filter: Vec<libc::sock_filter> = prog
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let fprog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    setsockopt(&fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)?;
    let rcvbuf: libc::c_int = 8 << 20;
    if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &rcvbuf).is_err() {
        let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &rcvbuf);
    }
    let on: libc::c_int = 1;
    setsockopt(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &on)?;
    setsockopt(&fd, libc::SOL_PACKET, PACKET_AUXDATA, &on)?;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)?;
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value before the fields
    // are set.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a live, initialised sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::addr_of!(sll).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn setsockopt<T>(fd: &OwnedFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live reference to a `T` and the length passed is its size; the
    // kernel copies the option in and keeps no pointer to it (SO_ATTACH_FILTER copies the
    // program the sock_fprog points to, which the caller keeps alive across this call).
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// PACKET_STATISTICS: packets the kernel dropped (the counters reset when read).
fn read_drops(fd: &OwnedFd) -> Option<u64> {
    let mut st = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: `st` is a live, writable tpacket_stats and `len` holds its size; the kernel
    // writes at most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            std::ptr::addr_of_mut!(st).cast::<libc::c_void>(),
            &mut len,
        )
    };
    (rc == 0).then_some(u64::from(st.tp_drops))
}
