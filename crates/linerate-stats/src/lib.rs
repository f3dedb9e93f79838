//! Pure numeric code for linerate: no I/O, no clock, no global state.
//!
//! * [`SeqTracker`] — UDP receiver accounting per stream (received, lost, duplicates,
//!   reordered) with iperf semantics, in bounded memory.
//! * [`JitterEstimator`] — RFC 3550 §6.4.1 / Appendix A.8 interarrival jitter.
//! * [`Summary`] — descriptive statistics of a set of samples (mean, sample standard
//!   deviation, R-7 percentiles) and a Student-t confidence interval for the mean, with
//!   [`student_t_quantile`] behind it.
//! * [`outlier`] — modified Z-scores (Iglewicz & Hoaglin) to flag outlying trials.
//! * [`compare`] — Welch's t-test, the interval of a difference and of a ratio of means,
//!   and the test of one new value against a baseline's sample.
//! * [`changepoint`] — change points of a series: E-divisive means with a permutation test.
//!
//! Every value that cannot be computed from the data given is `None`, never a made-up 0.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod changepoint;
pub mod compare;
pub mod jitter;
pub mod outlier;
pub mod seq;
pub mod summary;
pub mod tdist;

pub use compare::{new_value_test, welch, welch_one_sided, NewValueTest, WelchResult};
pub use jitter::JitterEstimator;
pub use outlier::{modified_z_scores, outliers, MODIFIED_Z_THRESHOLD};
pub use seq::{SeqCounts, SeqTracker, SEQ_WINDOW};
pub use summary::Summary;
pub use tdist::{student_t_cdf, student_t_quantile};
