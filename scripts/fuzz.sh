#!/usr/bin/env bash
# Bounded fuzzing of what a peer sends (issue 18): the control-frame reader
# (linerate::session::conn) and the message parser (linerate-wire), with cargo-fuzz and
# libFuzzer, FUZZ_SECONDS per target (default 60). The same entry points run as bounded
# property tests in every `cargo test`; this goes further.
#
# Needs rustup's nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Without them
# it says so and exits 0, or 2 with FUZZ_REQUIRED=1. A crash leaves its input in
# fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "scripts/fuzz.sh: needs rustup's nightly toolchain and cargo-fuzz (cargo install cargo-fuzz): not run" >&2
    if [ "${FUZZ_REQUIRED:-0}" = 1 ]; then exit 2; fi
    exit 0
fi
for target in control_frame read_frames iperf3; do
    mkdir -p "fuzz/corpus/$target"
    seeds=()
    if [ -d "fuzz/seeds/$target" ]; then seeds=("seeds/$target"); fi
    (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536)
done
echo "scripts/fuzz.sh: ${secs} s per target, no crash"
