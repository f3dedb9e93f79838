//! `--capture`: the test's own packets, recorded with an AF_PACKET socket on the interface
//! toward the peer and a classic BPF filter on the peer's address and the server's port
//! ([`super::bpf`]), written as a nanosecond pcap file.
//!
//! The capture runs on its own thread, reading with a 100 ms time-out so that it sees its
//! stop flag; the kernel cuts each packet to the snap length (the filter's return value)
//! and stamps it (`SO_TIMESTAMPNS`). On loopback every packet passes the tap twice (going
//! out and coming in); the outgoing copy is skipped, as libpcap does. The file is capped
//! at `max_bytes`; packets past the cap are counted, not written. Needs CAP_NET_RAW.

use std::fs::File;
use std::io::{self, BufWriter, IoSliceMut, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use linerate_wire::capture::{
    pcap_file_header, pcap_record_header, LINKTYPE_ETHERNET, LINKTYPE_RAW,
};
use nix::sys::socket::{recvmsg, ControlMessageOwned, LinkAddr, MsgFlags};

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
        let flags = if draining {
            MsgFlags::MSG_TRUNC | MsgFlags::MSG_DONTWAIT
        } else {
            MsgFlags::MSG_TRUNC
        };
        let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let (len, ts, outgoing) =
            match recvmsg::<LinkAddr>(fd.as_raw_fd(), &mut iov, Some(&mut cmsg), flags) {
                Ok(m) => {
                    let mut ts = None;
                    if let Ok(cm) = m.cmsgs() {
                        for c in cm {
                            if let ControlMessageOwned::ScmTimestampns(t) = c {
                                ts = Some(t);
                            }
                        }
                    }
                    let outgoing = m
                        .address
                        .map(|a| a.pkttype() == libc::PACKET_OUTGOING)
                        .unwrap_or(false);
                    (m.bytes, ts, outgoing)
                }
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => {
                    if draining {
                        return Ok(());
                    }
                    continue;
                }
                Err(e) => return Err(io::Error::from(e)),
            };
        if loopback && outgoing {
            continue;
        }
        let caplen = len.min(buf.len());
        let rec_len = 16 + caplen as u64;
        if written + rec_len > max_bytes {
            stats.over_cap += 1;
            continue;
        }
        let ts_ns = ts.map_or(0, |t| {
            (t.tv_sec().max(0) as u64) * 1_000_000_000 + t.tv_nsec().max(0) as u64
        });
        out.write_all(&pcap_record_header(
            ts_ns,
            caplen as u32,
            u32::try_from(len).unwrap_or(u32::MAX),
        ))?;
        out.write_all(&buf[..caplen])?;
        written += rec_len;
        stats.packets += 1;
    }
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
