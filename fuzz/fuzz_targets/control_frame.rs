//! A control frame header and message body from arbitrary bytes (linerate-wire).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_wire::fuzz::control_frame(data);
});
