#!/usr/bin/env bash
# Builds linerate's Debian package with cargo-deb (crates/linerate/Cargo.toml,
# [package.metadata.deb]) from the static build (scripts/static.sh: no library dependency,
# so the one .deb installs on any x86_64 Debian or Ubuntu): the binary, one man page per
# command and the bash, zsh and fish completions (`linerate generate`, from the same clap
# definitions as --help), the JSON schemas (docs/json-schema/), and linerate.service
# (packaging/) with its options in /etc/default/linerate. Installs cargo-deb (pinned,
# `cargo install --locked`, kept in ~/.cargo/bin) when it is missing.
#
# Usage: bash scripts/package.sh              # builds the static release binary, then the .deb
#        bash scripts/package.sh --no-build   # packages the static binary already built
#        bash scripts/package.sh --no-build --fast   # and compresses it faster, larger (CI)
# Prints the path of the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_DEB_VERSION=3.8.0
TARGET=x86_64-unknown-linux-musl
build=1
deb_args=()
for a in "$@"; do
    case "$a" in
    --no-build) build=0 ;;
    --fast) deb_args+=(--fast) ;;
    *)
        echo "scripts/package.sh: unknown argument '$a': use --no-build, --fast or neither" >&2
        exit 2
        ;;
    esac
done
if ! cargo deb --version 2>/dev/null | grep -qF "$CARGO_DEB_VERSION"; then
    cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" >&2
fi
if [ "$build" = 1 ]; then
    bash scripts/static.sh >/dev/null
fi
out="${CARGO_TARGET_DIR:-target}/$TARGET/release"
bin="$out/linerate"
if [ ! -x "$bin" ]; then
    echo "scripts/package.sh: $bin is missing: run bash scripts/static.sh first, or leave out --no-build" >&2
    exit 2
fi
# The man pages and completions the package's assets name (target/release/package/...,
# which cargo-deb reads from $out with --target). Man pages gzipped without a time stamp.
stage="$out/package"
rm -rf "$stage"
mkdir -p "$stage/completions"
"$bin" generate man "$stage/man" >/dev/null 2>&1
gzip -9n "$stage"/man/*.1
"$bin" generate completions bash >"$stage/completions/linerate"
"$bin" generate completions zsh >"$stage/completions/_linerate"
"$bin" generate completions fish >"$stage/completions/linerate.fish"
# The release profile strips symbols already.
deb=$(cargo deb -p linerate --no-build --no-strip "${deb_args[@]}" --target "$TARGET" --output "${CARGO_TARGET_DIR:-target}/debian/" | tail -n 1)
echo "$deb"
