#!/usr/bin/env bash
# Builds linerate for another CPU as one static executable: copy that one file to the board
# and run it (README.md, "On a board"). Installs what it needs when missing (as root on
# Debian 12): the Rust target's standard library (rustup) and, for the glibc targets,
# Debian's cross compiler and its libc (gcc-TRIPLE, libc6-dev-ARCH-cross).
#
# Usage: bash scripts/cross.sh TARGET [--board] [--check] [--floor] [--env]
#   --board   the board's core alone (`--no-default-features --features board`, Cargo.toml's
#             [profile.board]: built for size); without it, every tool (--release).
#   --check   `cargo check` for TARGET instead of a build (the same features and cross C
#             compiler for build scripts); prints nothing on stdout. scripts/test.sh checks
#             the targets it does not emulate this way.
#   --floor   instead of linerate, the two smallest programs its board build could be
#             (bench/size-floor: std alone, and std with clap and serde_json), built the
#             board's way for TARGET; prints their two paths. scripts/sizes.sh measures them.
#   --env     builds nothing: prints the environment of TARGET's build (linker, C compiler,
#             RUSTFLAGS) as bash `declare -x` lines, for `eval` (scripts/bloat.sh).
# stdout: the path of the executable, as the last and only line (--floor: two lines);
# progress goes to stderr.
#
# Targets, and how each is linked:
#   x86_64-unknown-linux-gnu        host gcc, glibc, static-pie
#   x86_64-unknown-linux-musl       musl-gcc (musl-tools), static-pie (as scripts/static.sh)
#   aarch64-unknown-linux-gnu       aarch64-linux-gnu-gcc, glibc, static (not PIE: rustc's
#                                   target makes no static-pie; it runs the same)
#   aarch64-unknown-linux-musl      rust-lld (the linker rustup ships) with the target's own
#                                   self-contained musl (crt objects and libc.a come with the
#                                   Rust target); static (not PIE). Debian's aarch64-linux-gnu-gcc
#                                   cannot be its linker (it brings glibc's start files and
#                                   libraries). The board build only: the full build's SQLite
#                                   is C and Debian has no aarch64 musl C compiler.
#   armv7-unknown-linux-gnueabihf   arm-linux-gnueabihf-gcc, glibc, static (not PIE)
#   powerpc-unknown-linux-gnu       powerpc-linux-gnu-gcc, glibc, static (not PIE)
#   powerpc64-unknown-linux-gnu     powerpc64-linux-gnu-gcc, glibc, static (not PIE)
#   riscv64gc-unknown-linux-gnu     riscv64-linux-gnu-gcc, glibc, static (not PIE)
#   x86_64-pc-windows-gnu           x86_64-w64-mingw32-gcc (Debian's mingw-w64): linerate.exe,
#                                   its C runtime and libgcc linked in, so that it imports only
#                                   Windows's own DLLs (scripts/win-imports.sh); at most 8 MB
#                                   (8,000,000 bytes, as docs/PERFORMANCE.md counts a MB).
#                                   Linux-only options are refused there (README, "On Windows").
# Only the x86_64 targets come out static-pie: the others are plain static executables at
# a fixed address (no address-space randomisation of the executable; it runs the same).
# Static-pie with glibc needs its rcrt1.o, which Debian 12 builds only for amd64 and arm64,
# and rustc's aarch64 targets (glibc and musl) link static executables without PIE.
#
# Host names: the board's core (--board) looks names up in /etc/hosts alone and never calls
# the C library's resolver (src/sys/resolve.rs): an IP address always works, a name works
# when /etc/hosts has it, and otherwise linerate stops with one line and exit code 2. The
# full build resolves through glibc's getaddrinfo, which goes through NSS
# (/etc/nsswitch.conf), whose modules are shared libraries that a static program loads with
# dlopen at run time, and only from the same glibc version as the one it was linked with
# (the linker warns: "Using 'getaddrinfo' in statically linked applications requires at
# runtime the shared libraries from the glibc version used for linking"). On a board with
# busybox and uClibc or musl, or another glibc, there are none to load: a host name may not
# resolve, and then linerate says so in one line, never a crash. The musl targets have
# their resolver built in (/etc/hosts, then the servers of /etc/resolv.conf).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: bash scripts/cross.sh TARGET [--board] [--check] [--floor] [--env]  (TARGET: x86_64-unknown-linux-gnu, x86_64-unknown-linux-musl, aarch64-unknown-linux-gnu, aarch64-unknown-linux-musl, armv7-unknown-linux-gnueabihf, powerpc-unknown-linux-gnu, powerpc64-unknown-linux-gnu, riscv64gc-unknown-linux-gnu, x86_64-pc-windows-gnu)" >&2
    exit 2
}
[ $# -ge 1 ] || usage
TARGET=$1
shift
BOARD=0 CHECK=0 FLOOR=0 ENV=0
for a in "$@"; do
    case $a in
    --board) BOARD=1 ;;
    --check) CHECK=1 ;;
    --floor) FLOOR=1 ;;
    --env) ENV=1 ;;
    *) usage ;;
    esac
done

# Debian's cross compiler (gcc-$CC_PKG) and libc (libc6-dev-$LIBC_ARCH-cross) per target.
gcc_triple="" libc_arch="" pie=1
case $TARGET in
x86_64-unknown-linux-gnu) gcc_triple="" ;;
x86_64-unknown-linux-musl) ;;
aarch64-unknown-linux-gnu) gcc_triple=aarch64-linux-gnu libc_arch=arm64 pie=0 ;;
aarch64-unknown-linux-musl) pie=0 ;;
armv7-unknown-linux-gnueabihf) gcc_triple=arm-linux-gnueabihf libc_arch=armhf pie=0 ;;
powerpc-unknown-linux-gnu) gcc_triple=powerpc-linux-gnu libc_arch=powerpc pie=0 ;;
powerpc64-unknown-linux-gnu) gcc_triple=powerpc64-linux-gnu libc_arch=ppc64 pie=0 ;;
riscv64gc-unknown-linux-gnu) gcc_triple=riscv64-linux-gnu libc_arch=riscv64 pie=0 ;;
x86_64-pc-windows-gnu) gcc_triple=x86_64-w64-mingw32 pie=0 ;;
*) usage ;;
esac

if [ "$TARGET" = aarch64-unknown-linux-musl ] && [ "$BOARD" = 0 ] && [ "$FLOOR" = 0 ] && [ "$ENV" = 0 ]; then
    echo "scripts/cross.sh: the full build for $TARGET needs a C compiler for aarch64 musl (SQLite is C) that Debian does not have: build the board's core (--board) or use aarch64-unknown-linux-gnu" >&2
    exit 2
fi

apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/cross.sh: $* missing: install them (apt-get install $*) or run as root" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "$@" >&2
}

if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET" >&2
fi

upper=$(echo "$TARGET" | tr 'a-z-' 'A-Z_')
lower=$(echo "$TARGET" | tr '-' '_')
flags="-C target-feature=+crt-static"
if [ "$TARGET" = x86_64-pc-windows-gnu ]; then
    command -v "$gcc_triple-gcc" >/dev/null 2>&1 || apt_install gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
    export "CARGO_TARGET_${upper}_LINKER=$gcc_triple-gcc"
    export "CC_${lower}=$gcc_triple-gcc" "AR_${lower}=$gcc_triple-ar"
elif [ -n "$gcc_triple" ]; then
    if ! command -v "$gcc_triple-gcc" >/dev/null 2>&1 || [ ! -e "/usr/$gcc_triple/lib/libc.a" ]; then
        apt_install "gcc-$gcc_triple" "libc6-dev-$libc_arch-cross"
    fi
    export "CARGO_TARGET_${upper}_LINKER=$gcc_triple-gcc"
    # The bundled SQLite's C code (the full build), compiled by the cc crate.
    export "CC_${lower}=$gcc_triple-gcc" "AR_${lower}=$gcc_triple-ar"
fi
case $TARGET in
x86_64-unknown-linux-musl)
    command -v musl-gcc >/dev/null 2>&1 || apt_install musl-tools
    ;;
aarch64-unknown-linux-musl)
    # rustc runs rust-lld itself as an ld.lld-style linker with the target's self-contained
    # start files and musl libc.a; nothing from Debian is needed.
    flags="$flags -C linker-flavor=ld.lld -C linker=rust-lld -C link-self-contained=yes"
    ;;
esac
export "CARGO_TARGET_${upper}_RUSTFLAGS=$flags"

if [ "$ENV" = 1 ]; then
    export -p | grep -E "^declare -x (CARGO_TARGET_${upper}_|CC_${lower}=|AR_${lower}=)" || true
    exit 0
fi
if [ "$FLOOR" = 1 ]; then
    dir=$(realpath "${CARGO_TARGET_DIR:-target}")/size-floor
    cargo build --locked --manifest-path bench/size-floor/Cargo.toml --target-dir "$dir" --target "$TARGET" --profile board >&2
    echo "$dir/$TARGET/board/std-floor"
    echo "$dir/$TARGET/board/crates-floor"
    exit 0
fi
if [ "$CHECK" = 1 ]; then
    if [ "$BOARD" = 1 ]; then
        cargo check --locked --target "$TARGET" -p linerate --no-default-features --features board >&2
    else
        cargo check --locked --target "$TARGET" -p linerate >&2
    fi
    echo "scripts/cross.sh: $TARGET$([ "$BOARD" = 1 ] && echo " (board)"): checked" >&2
    exit 0
fi
if [ "$BOARD" = 1 ]; then
    profile=board
    cargo build --locked --target "$TARGET" -p linerate --no-default-features --features board --profile board >&2
else
    profile=release
    cargo build --locked --target "$TARGET" -p linerate --release >&2
fi
# Absolute, so the path still names the file from another directory (cargo runs each
# test from its package's directory, not from the workspace root).
bin=$(realpath "${CARGO_TARGET_DIR:-target}/$TARGET/$profile/linerate")

if [ "$TARGET" = x86_64-pc-windows-gnu ]; then
    bin=$bin.exe
    # Only Windows's own DLLs (no libgcc_s, libwinpthread or libstdc++ of mingw's).
    dlls=$(bash scripts/win-imports.sh "$bin")
    size=$(stat -c %s "$bin")
    if [ "$size" -gt 8000000 ]; then
        echo "scripts/cross.sh: $bin is $size bytes, more than 8 MB (8,000,000 bytes): find what grew (cargo bloat, docs/PERFORMANCE.md)" >&2
        exit 1
    fi
    echo "scripts/cross.sh: $TARGET: $size bytes, imports $(echo $dlls)" >&2
    echo "$bin"
    exit 0
fi

# A static executable has no program interpreter (ld.so) to load it.
if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
    echo "scripts/cross.sh: $bin is not static (it asks for a program interpreter)" >&2
    exit 1
fi
kind=$(readelf -h "$bin" | awk '/Type:/ {print $2}')
if [ "$pie" = 1 ] && [ "$kind" != DYN ]; then
    echo "scripts/cross.sh: note: $bin is static but not position-independent (ELF type $kind)" >&2
fi
echo "scripts/cross.sh: $TARGET: $(stat -c %s "$bin") bytes, ELF type $kind ($([ "$kind" = DYN ] && echo static-pie || echo static))" >&2
echo "$bin"
