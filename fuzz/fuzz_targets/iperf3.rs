//! What an iperf3 client sends to `linerate serve` (cookie, lengths, state bytes, parameters
//! and results JSON), from arbitrary bytes (linerate-wire).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_wire::fuzz::iperf3(data);
});
