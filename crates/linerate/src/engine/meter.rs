//! The meter both engines run: one thread that samples an engine's counters once per
//! interval, takes the warm-up baseline, and pushes [`IntervalReport`]s into a sink.
//!
//! The stream engine ([`super::Engine`]) and the request/response engine
//! ([`crate::rr::RrEngine`]) differ only in what they count, so each implements
//! [`SampleSource`] (read the counters, turn two readings into an interval's figures, and
//! optionally do more at the warm-up boundary) and shares the rest from here: the clock and
//! baseline of the measured window ([`Window`]), the tick and warm-up timing, the /proc/stat
//! readings, an interval's times, `omitted` flag and CPU figure ([`Meter`]), and the end of
//! the window in the final report ([`Window::end_now`], [`Window::baseline_or`],
//! [`window_cpu`]). Each stream thread keeps its own CPU time from the baseline on
//! ([`ThreadCpu`]).
//!
//! Nothing here touches the data path: stream threads only publish relaxed atomics and read
//! the baseline flag; the meter's mutex is taken once, at the warm-up boundary, and again
//! when the report is built.

use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_wire::report::{CpuReport, IntervalReport, ProcessCpu};

use crate::sys;
use crate::sys::cpu::CpuTimes;

/// How long the meter sleeps at most before it looks at its stop flag again.
const STOP_POLL: Duration = Duration::from_millis(20);

/// The warning of a test that ended inside its warm-up.
pub const WARM_UP_NOT_OVER: &str =
    "the test ended before the warm-up (--omit) was over: totals are empty; shorten --omit";

/// An engine's counters at one instant.
#[derive(Debug, Clone, Default)]
pub struct Sample<C> {
    /// Nanoseconds since the engine's epoch, read just before the counters.
    pub at_ns: u64,
    /// What the engine counts.
    pub counters: C,
}

/// The clock and start of an engine's measured window: the epoch every timestamp counts
/// from, and the baseline taken when the warm-up ends (at once without one).
#[derive(Debug)]
pub struct Window<C> {
    epoch: Instant,
    baseline: Mutex<Option<(Sample<C>, Option<CpuTimes>)>>,
    flag: Arc<AtomicBool>,
}

impl<C: Clone> Window<C> {
    /// A window whose timestamps count from `epoch`, without a baseline yet.
    pub fn new(epoch: Instant) -> Window<C> {
        Window {
            epoch,
            baseline: Mutex::new(None),
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The engine's epoch.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Set once the baseline is taken; stream threads read it to start their own accounting
    /// (thread CPU time, latencies).
    pub fn baseline_flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    fn set_baseline(&self, s: Sample<C>, cpu: Option<CpuTimes>) {
        if let Ok(mut b) = self.baseline.lock() {
            *b = Some((s, cpu));
        }
        self.flag.store(true, Relaxed);
    }

    /// The baseline and its /proc/stat reading; when the test ended inside the warm-up,
    /// `fin` (totals are empty) without CPU, after telling `warn`.
    pub fn baseline_or(
        &self,
        fin: &Sample<C>,
        warn: impl FnOnce(String),
    ) -> (Sample<C>, Option<CpuTimes>) {
        self.baseline
            .lock()
            .ok()
            .and_then(|b| b.clone())
            .unwrap_or_else(|| {
                warn(WARM_UP_NOT_OVER.to_string());
                (fin.clone(), None)
            })
    }

    /// Ends the measured window now: the time and a /proc/stat reading.
    pub fn end_now(&self) -> (u64, Option<CpuTimes>) {
        (self.now_ns(), sys::cpu::read_proc_stat().ok())
    }
}

/// What an engine gives the meter.
pub trait SampleSource: Send + Sync + 'static {
    /// Every stream's counters at one instant.
    type Counters: Clone + Send;

    /// The engine's clock and baseline.
    fn window(&self) -> &Window<Self::Counters>;

    /// Reads every stream's counters now (relaxed loads; no lock on the data path).
    fn read(&self) -> Self::Counters;

    /// The counted figures of the interval from `prev` to `now`. The meter sets the times,
    /// `omitted` and `cpu_percent` over whatever this returns for them.
    fn interval(&self, prev: &Self::Counters, now: &Self::Counters) -> IntervalReport;

    /// At the warm-up boundary, before the baseline counters are read: gets the /proc/stat
    /// reading and returns what to keep of it; more baseline readings (host counters) go
    /// here. The default keeps the reading if there is one.
    fn at_baseline(&self, cpu: Result<CpuTimes, sys::SysError>) -> Option<CpuTimes> {
        cpu.ok()
    }

    /// A sampler of the host counters to put in every interval, made when the meter starts;
    /// `None` (the default) leaves them out.
    fn host_sampler(&self) -> Option<sys::hostsnap::IntervalSampler> {
        None
    }

    /// The counters now, timestamped.
    fn sample(&self) -> Sample<Self::Counters> {
        Sample {
            at_ns: self.window().now_ns(),
            counters: self.read(),
        }
    }

    /// Takes the baseline: /proc/stat, [`SampleSource::at_baseline`], the counters; then
    /// raises the baseline flag.
    fn take_baseline(&self) {
        let cpu = self.at_baseline(sys::cpu::read_proc_stat());
        let s = self.sample();
        self.window().set_baseline(s, cpu);
    }
}

/// The meter thread of a running engine.
#[derive(Debug)]
pub struct Meter {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Meter {
    /// Starts a thread `name` that samples `src` every `interval` from its epoch, takes the
    /// baseline when `omit` has passed (the caller takes it before the streams start when
    /// there is no warm-up), and pushes each interval into `sink`.
    pub fn start<S: SampleSource>(
        name: &str,
        src: Arc<S>,
        interval: Duration,
        omit: Duration,
        mut sink: impl FnMut(IntervalReport) + Send + 'static,
    ) -> std::io::Result<Meter> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&*src, &flag, interval, omit, &mut sink))?;
        Ok(Meter {
            stop,
            thread: Some(thread),
        })
    }

    /// Tells the thread to stop; it ends within [`STOP_POLL`] or after the interval it is
    /// reporting.
    pub fn signal_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Stops the thread and waits for it.
    pub fn join(&mut self) {
        self.signal_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run<S: SampleSource>(
    src: &S,
    stop: &AtomicBool,
    interval: Duration,
    omit: Duration,
    out: &mut dyn FnMut(IntervalReport),
) {
    let epoch = src.window().epoch();
    let mut prev = src.sample();
    let mut prev_cpu = sys::cpu::read_proc_stat().ok();
    let mut host = src.host_sampler();
    let mut baseline_done = omit.is_zero();
    let mut next = interval;
    loop {
        // Sleep until the next tick, or the warm-up boundary, looking at the stop flag.
        let target = if baseline_done { next } else { next.min(omit) };
        loop {
            if stop.load(Relaxed) {
                return;
            }
            let el = epoch.elapsed();
            if el >= target {
                break;
            }
            std::thread::sleep((target - el).min(STOP_POLL));
        }
        if !baseline_done && epoch.elapsed() >= omit {
            src.take_baseline();
            baseline_done = true;
        }
        if epoch.elapsed() < next {
            continue;
        }
        // The interval is the warm-up's when it was due within it: with -i equal to -O (or
        // dividing it) the tick that ends the warm-up comes just after the baseline, a few
        // µs past the boundary, and its interval is still all warm-up.
        let in_warm_up = !omit.is_zero() && next <= omit;
        next += interval;
        let now = src.sample();
        let cpu = sys::cpu::read_proc_stat().ok();
        let iv = IntervalReport {
            start_ns: prev.at_ns,
            end_ns: now.at_ns,
            omitted: in_warm_up,
            cpu_percent: match (&prev_cpu, &cpu) {
                (Some(a), Some(b)) => sys::cpu::util_percent(a, b),
                _ => None,
            },
            host: host.as_mut().map(|h| Box::new(h.sample())),
            ..src.interval(&prev.counters, &now.counters)
        };
        prev = now;
        prev_cpu = cpu;
        out(iv);
    }
}

/// A stream thread's CPU time at the warm-up boundary, saved by the thread itself
/// (`getrusage(RUSAGE_THREAD)` reads only the calling thread).
#[derive(Debug, Default)]
pub struct ThreadCpu {
    user_ns: AtomicU64,
    system_ns: AtomicU64,
}

impl ThreadCpu {
    /// Saves the calling thread's CPU time the first time it sees `baseline` raised; a
    /// relaxed load per call until then, nothing after.
    #[inline]
    pub fn save_once(&self, baseline: &AtomicBool, taken: &mut bool) {
        if !*taken && baseline.load(Relaxed) {
            *taken = true;
            if let Some(c) = sys::rusage::thread_cpu() {
                self.user_ns.store(c.user_ns, Relaxed);
                self.system_ns.store(c.system_ns, Relaxed);
            }
        }
    }

    /// The calling thread's CPU time since it was saved (since it started, if never).
    pub fn since_baseline(&self) -> Option<ProcessCpu> {
        sys::rusage::thread_cpu().map(|c| ProcessCpu {
            user_ns: c.user_ns.saturating_sub(self.user_ns.load(Relaxed)),
            system_ns: c.system_ns.saturating_sub(self.system_ns.load(Relaxed)),
        })
    }
}

/// CPU utilisation over the measured window from /proc/stat at its two ends; without both,
/// a warning (unless one about CPU utilisation is there already).
pub fn window_cpu(
    base: Option<&CpuTimes>,
    end: Option<&CpuTimes>,
    warnings: &mut Vec<String>,
) -> Option<CpuReport> {
    let cpu = match (base, end) {
        (Some(a), Some(b)) => sys::cpu::cpu_report(a, b),
        _ => None,
    };
    if cpu.is_none() && !warnings.iter().any(|w| w.starts_with("CPU utilisation")) {
        warnings.push(
            "CPU utilisation not measured: /proc/stat could not be read at both ends of the window"
                .into(),
        );
    }
    cpu
}

/// Folds the end of one stream thread into its engine's report: its error and warnings (each
/// warning once) into `warnings`, its CPU time into `process_cpu`.
pub fn fold_thread_end(
    index: u16,
    error: Option<&str>,
    thread_warnings: &[String],
    cpu: Option<&ProcessCpu>,
    warnings: &mut Vec<String>,
    process_cpu: &mut Option<ProcessCpu>,
) {
    if let Some(e) = error {
        warnings.push(format!("stream {index} ended with an error: {e}"));
    }
    for w in thread_warnings {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    if let Some(c) = cpu {
        let p = process_cpu.get_or_insert_with(ProcessCpu::default);
        p.user_ns += c.user_ns;
        p.system_ns += c.system_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that counts one "byte" per read, so every interval's figure is known.
    struct Ticker {
        window: Window<u64>,
        reads: AtomicU64,
    }

    impl SampleSource for Ticker {
        type Counters = u64;
        fn window(&self) -> &Window<u64> {
            &self.window
        }
        fn read(&self) -> u64 {
            self.reads.fetch_add(1, Relaxed) + 1
        }
        fn interval(&self, prev: &u64, now: &u64) -> IntervalReport {
            IntervalReport {
                tx_bytes: now - prev,
                // The meter overwrites these.
                start_ns: u64::MAX,
                omitted: true,
                ..IntervalReport::default()
            }
        }
    }

    #[test]
    fn meter_reports_intervals_takes_the_baseline_and_stops() {
        let src = Arc::new(Ticker {
            window: Window::new(Instant::now()),
            reads: AtomicU64::new(0),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let mut meter = Meter::start(
            "lr-test-meter",
            src.clone(),
            Duration::from_millis(30),
            Duration::from_millis(45),
            move |iv| {
                let _ = tx.send(iv);
            },
        )
        .unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let second = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        meter.join();
        // Reads: 1 at the start, one per interval, and one for the baseline at 45 ms, which
        // comes before the second interval (due at 60 ms) and, unless the thread was held
        // up past 30 ms, after the first. So the two intervals span reads 1 to 4, and either
        // the first interval is read 2 and the baseline read 3, or (held up) the baseline
        // is read 2 and the first interval read 3: baseline + first interval's count = 4.
        assert_eq!(first.tx_bytes + second.tx_bytes, 3);
        let fin = src.sample();
        let (base, _) = src.window.baseline_or(&fin, |w| panic!("{w}"));
        assert_eq!(base.counters + first.tx_bytes, 4);
        assert!(src.window.baseline_flag().load(Relaxed));
        // The meter sets the times and `omitted` over what the source returned.
        assert!(first.start_ns < first.end_ns && first.end_ns == second.start_ns);
        assert!(second.end_ns >= 60_000_000);
        // The first interval was due at 30 ms, within the warm-up; the second at 60 ms.
        assert!(first.omitted);
        assert!(!second.omitted);
    }

    #[test]
    fn no_baseline_means_empty_totals_and_a_warning() {
        let w: Window<u64> = Window::new(Instant::now());
        let fin = Sample {
            at_ns: 7,
            counters: 9,
        };
        let mut said = None;
        let (base, cpu) = w.baseline_or(&fin, |m| said = Some(m));
        assert_eq!((base.at_ns, base.counters, cpu), (7, 9, None));
        assert_eq!(said.as_deref(), Some(WARM_UP_NOT_OVER));
    }

    #[test]
    fn thread_ends_fold_once() {
        let mut warnings = vec!["a".to_string()];
        let mut cpu = None;
        let c = ProcessCpu {
            user_ns: 2,
            system_ns: 3,
        };
        let ws = ["a".to_string(), "b".to_string()];
        fold_thread_end(4, Some("boom"), &ws, Some(&c), &mut warnings, &mut cpu);
        fold_thread_end(5, None, &ws, Some(&c), &mut warnings, &mut cpu);
        assert_eq!(warnings, ["a", "stream 4 ended with an error: boom", "b"]);
        assert_eq!(
            cpu,
            Some(ProcessCpu {
                user_ns: 4,
                system_ns: 6
            })
        );
        let mut w = Vec::new();
        assert!(window_cpu(None, None, &mut w).is_none());
        assert_eq!(w.len(), 1);
        assert!(window_cpu(None, None, &mut w).is_none());
        assert_eq!(w.len(), 1, "warned once");
    }
}
