//! The progress line on stderr of `--repeat` and `rfc2544`: indicatif's bar in a build with
//! the `progress` feature (the workstation's), none in the board's core, whose binary it
//! would grow by indicatif and its terminal crates (about 45 KB; docs/PERFORMANCE.md). A
//! board is driven from a shell over a serial line or ssh, where a redrawn line is noise.

use std::time::Duration;

/// A progress line: a counter with a bar, a spinner, or nothing.
#[derive(Clone)]
pub struct Bar {
    #[cfg(feature = "progress")]
    inner: indicatif::ProgressBar,
}

impl Bar {
    /// No line.
    pub fn hidden() -> Self {
        Bar {
            #[cfg(feature = "progress")]
            inner: indicatif::ProgressBar::hidden(),
        }
    }

    /// A counter to `len` drawn with `template` (indicatif's syntax) when `show`.
    pub fn counter(len: u64, template: &str, show: bool) -> Self {
        #[cfg(feature = "progress")]
        {
            use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
            let target = if show {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            };
            let inner = ProgressBar::with_draw_target(Some(len), target);
            if let Ok(style) = ProgressStyle::with_template(template) {
                inner.set_style(style.progress_chars("=> "));
            }
            Bar { inner }
        }
        #[cfg(not(feature = "progress"))]
        {
            let _ = (len, template, show);
            Bar::hidden()
        }
    }

    /// A spinner drawn with `template`, redrawn every `tick`.
    pub fn spinner(template: &str, tick: Duration) -> Self {
        #[cfg(feature = "progress")]
        {
            let inner = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                inner.set_style(style);
            }
            inner.enable_steady_tick(tick);
            Bar { inner }
        }
        #[cfg(not(feature = "progress"))]
        {
            let _ = (template, tick);
            Bar::hidden()
        }
    }

    pub fn set_message(&self, msg: String) {
        #[cfg(feature = "progress")]
        self.inner.set_message(msg);
        #[cfg(not(feature = "progress"))]
        drop(msg);
    }

    pub fn inc(&self, n: u64) {
        #[cfg(feature = "progress")]
        self.inner.inc(n);
        #[cfg(not(feature = "progress"))]
        let _ = n;
    }

    pub fn finish_and_clear(&self) {
        #[cfg(feature = "progress")]
        self.inner.finish_and_clear();
    }
}
