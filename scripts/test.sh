#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit, integration and lab (network namespace) tests.
# Run as root on Debian: the lab tests create and remove their own namespaces. Installs the
# system tools it needs (iproute2, nftables, procps, fonts-dejavu-core) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v sysctl >/dev/null 2>&1 || need+=(procps)
# A font for the text of PNG charts (linerate rfc2544 --chart x.png; fontdb reads system fonts).
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
fi
if [ "$(id -u)" != 0 ]; then
    echo "scripts/test.sh: the lab tests need root (network namespaces): run it as root" >&2
    exit 2
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
