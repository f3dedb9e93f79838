//! The control connection's frame reader over an arbitrary byte stream (linerate).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate::session::conn::fuzz_read_frames(data);
});
