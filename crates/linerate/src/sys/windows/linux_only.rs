//! What is Linux by nature, with the Linux backend's names and signatures: every call that
//! would start one fails with an error saying it needs Linux (so a caller refuses the
//! option before any traffic), and the types that only a successful start makes are
//! uninhabited (`Never`), so their methods cannot be reached.

/// A value that cannot exist: what only Linux makes.
#[derive(Debug)]
pub enum Never {}

/// AF_PACKET's transmit ring (raw-frame UDP and RFC 2544 frames).
pub mod afpacket {
    use super::Never;
    use std::io;

    /// Frames the kernel took from the ring since the last look.
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Completed {
        /// Frames the kernel took and handed to the interface (or its qdisc).
        pub sent: usize,
        /// Frames the kernel refused as malformed.
        pub refused: usize,
        /// Frames the kernel took but the driver dropped.
        pub dropped: usize,
    }

    /// A transmit ring: never made here.
    pub struct TxRing(Never);

    impl TxRing {
        /// Refused: AF_PACKET is Linux's.
        pub fn open(_ifindex: u32, _max_frame: usize, _bypass: bool) -> io::Result<TxRing> {
            Err(crate::sys::os::needs_linux(
                "sending raw frames (AF_PACKET)",
            ))
        }
        /// Unreachable.
        pub fn qdisc_bypass(&self) -> bool {
            match self.0 {}
        }
        /// Unreachable.
        pub fn prefill(&mut self, _frame: &[u8]) {
            match self.0 {}
        }
        /// Unreachable.
        pub fn queue(
            &mut self,
            _n: usize,
            _len: usize,
            _fill: impl FnMut(&mut [u8], usize),
        ) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn flush(&mut self) -> io::Result<Completed> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn reap(&mut self) {
            match self.0 {}
        }
        /// Unreachable.
        pub fn unsent(&self) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn in_ring(&self) -> usize {
            match self.0 {}
        }
    }
}

/// AF_XDP's transmit socket (raw-frame UDP and RFC 2544 frames).
pub mod xdp {
    use super::afpacket::Completed;
    use super::Never;
    use std::io;

    /// Chunks frames are sent from.
    pub const TX_FRAMES: usize = 512;

    /// How the socket is bound.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum XdpMode {
        /// The driver sends straight from the UMEM.
        Zerocopy,
        /// The kernel copies each frame into a socket buffer.
        Copy,
    }

    /// Why an AF_XDP socket could not be opened.
    #[derive(Debug)]
    pub struct XdpError(pub String);

    /// An AF_XDP socket: never made here.
    pub struct XdpTx(Never);

    impl XdpTx {
        /// Refused: AF_XDP is Linux's.
        pub fn open(_ifindex: u32, _max_frame: usize) -> Result<XdpTx, XdpError> {
            Err(XdpError("AF_XDP sockets need Linux".into()))
        }
        /// Unreachable.
        pub fn mode(&self) -> XdpMode {
            match self.0 {}
        }
        /// Unreachable.
        pub fn prefill(&mut self, _frame: &[u8]) {
            match self.0 {}
        }
        /// Unreachable.
        pub fn queue(
            &mut self,
            _n: usize,
            _len: usize,
            _fill: impl FnMut(&mut [u8], usize),
        ) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn flush(&mut self) -> io::Result<Completed> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn reap(&mut self) {
            match self.0 {}
        }
        /// Unreachable.
        pub fn unsent(&self) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn in_ring(&self) -> usize {
            match self.0 {}
        }
    }
}

/// `--capture`: AF_PACKET with a BPF filter.
pub mod capture {
    use super::Never;
    use std::io;
    use std::net::{IpAddr, SocketAddr};
    use std::path::Path;

    /// What a capture saw.
    #[derive(Debug, Clone, Default)]
    pub struct CaptureStats {
        /// The interface captured on.
        pub interface: String,
        /// Packets written.
        pub packets: u64,
        /// Packets the kernel dropped.
        pub kernel_drops: Option<u64>,
        /// Packets over the byte cap, not written.
        pub over_cap: u64,
    }

    /// A running capture: never made here.
    pub struct Capture(Never);

    impl Capture {
        /// Refused: packet capture is Linux's (AF_PACKET).
        pub fn start(
            _path: &Path,
            _server: SocketAddr,
            _snaplen: u32,
            _max_bytes: u64,
        ) -> io::Result<Capture> {
            Err(crate::sys::os::needs_linux("--capture (AF_PACKET)"))
        }
        /// Refused: packet capture is Linux's (AF_PACKET).
        pub fn start_filtered(
            _path: &Path,
            _filter: SocketAddr,
            _toward: IpAddr,
            _snaplen: u32,
            _max_bytes: u64,
        ) -> io::Result<Capture> {
            Err(crate::sys::os::needs_linux("--capture (AF_PACKET)"))
        }
        /// Unreachable.
        pub fn stop(self) -> io::Result<CaptureStats> {
            match self.0 {}
        }
    }
}

/// The ethtool ioctls.
pub mod ethtool {
    use super::Never;
    use std::collections::BTreeMap;
    use std::io;

    pub use crate::sys::nic::{Channels, DrvInfo, EthtoolError, EthtoolResult, LinkSettings};
    use linerate_wire::host::RingSizes;

    /// An ethtool socket: never made here.
    #[derive(Debug)]
    pub struct Ethtool(Never);

    impl Ethtool {
        /// Refused: the ethtool ioctls are Linux's.
        pub fn open() -> io::Result<Ethtool> {
            Err(crate::sys::os::needs_linux("ethtool"))
        }
        /// Unreachable.
        pub fn drvinfo(&self, _iface: &str) -> EthtoolResult<DrvInfo> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn link(&self, _iface: &str) -> EthtoolResult<LinkSettings> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn coalesce(&self, _iface: &str) -> EthtoolResult<BTreeMap<String, u32>> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn rings(&self, _iface: &str) -> EthtoolResult<RingSizes> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn channels(&self, _iface: &str) -> EthtoolResult<Channels> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn stats(&self, _iface: &str) -> EthtoolResult<Vec<(String, u64)>> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn offloads(&self, _iface: &str) -> EthtoolResult<BTreeMap<String, bool>> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn mtu(&self, _iface: &str) -> io::Result<u32> {
            match self.0 {}
        }
    }
}

/// `--profile`: perf events.
pub mod perf {
    use super::Never;

    pub use crate::sys::samples::{
        RawSample, RawSamples, SamplerConfig, MAX_CHAIN, MAX_CHAIN_FRAMES, MAX_SAMPLES,
    };

    /// A running sampler: never made here.
    pub struct Sampler(Never);

    impl Sampler {
        /// Refused: perf events are Linux's.
        pub fn start(_cfg: SamplerConfig) -> Result<Sampler, String> {
            Err("--profile needs Linux (perf_event_open)".into())
        }
        /// Unreachable.
        pub fn stop(self) -> RawSamples {
            match self.0 {}
        }
    }
}

/// Restartable sequences: Linux's.
pub mod rseq {
    /// Nothing to leave: false.
    pub fn leave() -> std::io::Result<bool> {
        Ok(false)
    }
}

/// The board build's fork supervisor of `serve`: fork is POSIX's.
#[cfg(any(test, panic = "abort"))]
pub mod supervise {
    /// Which process returned from [`fork_restarting`].
    #[derive(Debug, PartialEq, Eq)]
    pub enum Role {
        /// The only process: serve.
        Child {
            /// Always 0 here.
            restarts: u32,
        },
        /// Never here.
        Parent(u8),
    }

    /// No fork here: this process serves, unsupervised.
    pub fn fork_restarting(_log: &dyn Fn(&str)) -> anyhow::Result<Role> {
        Ok(Role::Child { restarts: 0 })
    }
}

/// MSG_ZEROCOPY, memfd and sendfile, recv(MSG_TRUNC).
pub mod zerocopy {
    use super::Never;
    use crate::sys::net::Sock;
    use std::io;
    use std::os::windows::io::{AsSocket, BorrowedSocket};

    pub use crate::sys::zc::Completion;

    /// A memory file for sendfile: never made here.
    pub struct MemFile(Never);

    impl AsSocket for MemFile {
        fn as_socket(&self) -> BorrowedSocket<'_> {
            match self.0 {}
        }
    }

    fn refused<T>() -> io::Result<T> {
        Err(crate::sys::os::needs_linux(
            "--zerocopy, --sendfile and --recv-trunc",
        ))
    }

    /// Refused.
    pub fn enable(_s: Sock<'_>) -> io::Result<()> {
        refused()
    }
    /// Refused.
    pub fn send_zerocopy(_s: Sock<'_>, _buf: &[u8]) -> io::Result<usize> {
        refused()
    }
    /// Refused.
    pub fn read_completions(_s: Sock<'_>, _out: &mut Vec<Completion>) -> io::Result<u64> {
        refused()
    }
    /// Refused.
    pub fn wait(_s: Sock<'_>, _want_out: bool, _timeout_ms: i32) -> io::Result<bool> {
        refused()
    }
    /// Refused.
    pub fn memfd_with(_len: usize, _fill: impl Fn(&mut [u8])) -> io::Result<MemFile> {
        refused()
    }
    /// Refused.
    pub fn sendfile(_s: Sock<'_>, _file: Sock<'_>, _count: usize) -> io::Result<usize> {
        refused()
    }
    /// Refused.
    pub fn recv_trunc(_s: Sock<'_>, _max: usize) -> io::Result<usize> {
        refused()
    }
    /// The options are Linux's: refused in one line, before any traffic.
    pub fn check_support(zerocopy: bool, sendfile_: bool, trunc: bool) -> Result<(), String> {
        if zerocopy || sendfile_ || trunc {
            return Err("--zerocopy, --sendfile and --recv-trunc need Linux".into());
        }
        Ok(())
    }
}

/// The lab's delay line: a TUN device and an absolute-deadline timer.
pub mod tun {
    use super::Never;
    use std::io;

    /// A TUN device: never made here.
    pub struct Tun(Never);

    impl Tun {
        /// Refused: TUN devices and network namespaces are Linux's.
        pub fn open(_name: &str) -> io::Result<Tun> {
            Err(crate::sys::os::needs_linux("the lab's delay line (TUN)"))
        }
        /// Unreachable.
        pub fn recv(&mut self, _buf: &mut [u8]) -> io::Result<Option<usize>> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn send(&mut self, _packet: &[u8]) -> io::Result<()> {
            match self.0 {}
        }
    }

    /// No network namespaces here.
    pub fn netns_inode() -> Option<u64> {
        None
    }

    /// A deadline timer: never made here.
    pub struct Deadline(Never);

    impl Deadline {
        /// Refused.
        pub fn new() -> io::Result<Deadline> {
            Err(crate::sys::os::needs_linux(
                "the lab's delay line (timerfd)",
            ))
        }
        /// Unreachable.
        pub fn arm(&self, _at_ns: u64) -> io::Result<()> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn disarm(&self) -> io::Result<()> {
            match self.0 {}
        }
    }

    /// What [`wait`] saw ready.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Ready {
        /// Packets wait on the device.
        pub packets: bool,
        /// The deadline passed.
        pub deadline: bool,
    }

    /// Unreachable: no [`Tun`] exists here.
    pub fn wait(tun: &Tun, _timer: &Deadline, _timeout_ms: u16) -> io::Result<Ready> {
        match tun.0 {}
    }

    /// Not used here.
    pub fn now_ns() -> u64 {
        0
    }

    /// Refused.
    pub fn tighten_timer_slack() -> io::Result<()> {
        Err(crate::sys::os::needs_linux("timer slack"))
    }
}
