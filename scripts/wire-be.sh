#!/usr/bin/env bash
# linerate-wire's tests on a big-endian 32-bit CPU: `cargo test -p linerate-wire --target
# powerpc-unknown-linux-gnu`, each test binary linked static and run by qemu-ppc-static (a
# cargo runner). Every wire format's golden bytes (tests/byte_order.rs), the unit tests and
# the bounded property tests then run where a byte written in the host's order instead of
# the format's would show. Counts and bytes only: no speed is measured under emulation.
# Installs what it needs when missing (as root on Debian 12): the Rust target, Debian's
# powerpc cross compiler and libc, qemu-user-static.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=powerpc-unknown-linux-gnu
need=()
command -v powerpc-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-powerpc-linux-gnu)
[ -e /usr/powerpc-linux-gnu/lib/libc.a ] || need+=(libc6-dev-powerpc-cross)
command -v qemu-ppc-static >/dev/null 2>&1 || need+=(qemu-user-static)
if ((${#need[@]})); then
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/wire-be.sh: ${need[*]} missing: install them (apt-get install ${need[*]}) or run as root" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "${need[@]}" >&2
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET" >&2
fi
# The same flags as scripts/cross.sh's, so both share the compiled dependencies.
export CARGO_TARGET_POWERPC_UNKNOWN_LINUX_GNU_LINKER=powerpc-linux-gnu-gcc
export CARGO_TARGET_POWERPC_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
export CARGO_TARGET_POWERPC_UNKNOWN_LINUX_GNU_RUNNER=qemu-ppc-static
cargo test --locked -p linerate-wire --target "$TARGET" "$@"
