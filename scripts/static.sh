#!/usr/bin/env bash
# Builds linerate as one static executable (musl libc, static-pie): no shared library needed
# on the target, so the same file runs on any x86_64 Linux (an embedded board's rootfs, a
# router, a minimal container). Installs what it needs when missing (as root on Debian):
# the Rust musl target (rustup) and musl-gcc (musl-tools, for the bundled SQLite's C code).
#
# Usage: bash scripts/static.sh        # prints the path of the binary it built
#        bash scripts/static.sh --no-default-features --features board   # the board's core
#        (arguments go to `cargo build`)
#
# Speed against the usual glibc build: bench/ab.sh (A=glibc build, B=this one).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=x86_64-unknown-linux-musl
if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET" >&2
fi
if ! command -v musl-gcc >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/static.sh: musl-gcc is missing: install musl-tools (apt-get install musl-tools) or run as root" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq musl-tools >&2
fi
cargo build --release --locked --target "$TARGET" -p linerate "$@" >&2
bin=$(realpath "${CARGO_TARGET_DIR:-target}/$TARGET/release/linerate")
# A static executable has no interpreter (ld.so) to load it.
if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
    echo "scripts/static.sh: $bin is not static (it asks for a program interpreter)" >&2
    exit 1
fi
echo "$bin"
