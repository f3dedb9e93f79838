//! What `--profile`'s sampler (sys::perf, Linux's perf events) collects: plain data, the
//! same on every OS, so the profile's model builds everywhere.

/// Most samples one sampler keeps (about 1 hour of 2 CPUs at 999 Hz); more are counted in
/// [`RawSamples::dropped`].
pub const MAX_SAMPLES: usize = 8_000_000;
/// Most kernel frames kept of one call chain.
pub const MAX_CHAIN: usize = 64;
/// Most frames of all kept call chains together.
pub const MAX_CHAIN_FRAMES: usize = 16_000_000;

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Samples per second per CPU.
    pub frequency_hz: u32,
    /// Record kernel call chains.
    pub callchains: bool,
}

/// One sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    /// `CLOCK_MONOTONIC`, ns.
    pub time_ns: u64,
    /// Instruction pointer.
    pub ip: u64,
    /// Process (0: the idle task).
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// In user space (else the kernel).
    pub user: bool,
    /// Start of the kernel call chain in [`RawSamples::frames`] and its length (innermost
    /// first; the sampled function itself is the first frame).
    pub chain: (u32, u16),
}

/// Everything a sampler collected.
#[derive(Debug, Default)]
pub struct RawSamples {
    /// The samples in the order they were read (by CPU, then time).
    pub samples: Vec<RawSample>,
    /// Every kept call chain's frames.
    pub frames: Vec<u64>,
    /// Samples the kernel lost (ring full).
    pub lost: u64,
    /// Samples over [`MAX_SAMPLES`], not kept.
    pub dropped: u64,
    /// The CPUs sampled.
    pub cpus: Vec<u32>,
    /// The process names seen, by pid (read from `/proc/PID/comm` when first seen).
    pub comms: std::collections::HashMap<u32, String>,
}

impl RawSamples {
    /// A sample's kernel call chain, innermost first.
    pub fn chain(&self, s: &RawSample) -> &[u64] {
        let (start, len) = (s.chain.0 as usize, usize::from(s.chain.1));
        self.frames.get(start..start + len).unwrap_or(&[])
    }
}
