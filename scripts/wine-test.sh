#!/usr/bin/env bash
# Tests the Windows build (x86_64-pc-windows-gnu, Debian's mingw-w64) under Wine on this
# Linux host (README.md, "On Windows"): the Win32 API use, the protocol and the records, not
# Windows's speed or its TCP (no figure of speed is judged here). scripts/test.sh runs it as
# one stage; it installs wine64 and python3-jsonschema when missing (as root on Debian 12).
#
#  1. linerate-wire's and linerate-stats's unit tests, built for Windows, run by wine64.
#  2. linerate.exe `serve` under Wine, tested by the Linux client: tcp both ways, udp, rr,
#     rr --connect.
#  3. linerate.exe as the client of a Linux `serve` (tcp both ways, udp, rr, rr --connect),
#     of `iperf3 -s`, and `iperf3 -c` against linerate.exe `serve`.
# Each run's bytes (datagrams, transactions) agree at both ends exactly, its JSON validates
# against docs/json-schema/run-v1.json, the Windows end has its CPU and process-CPU
# sections, and its TCP_INFO's absence (Wine has no SIO_TCP_INFO) is one warning, not many
# (scripts/wine/check.py).
#
# Wine 8.0 has no bcryptprimitives.dll, whose ProcessPrng Rust's std imports: a small DLL
# built here from scripts/wine/bcryptprimitives.c (a test fixture, never shipped) goes
# beside each .exe. Under Wine, CPU times are the Linux host's.
set -euo pipefail
cd "$(dirname "$0")/.."
T=x86_64-pc-windows-gnu
start=$SECONDS

WINE=/usr/lib/wine/wine64
if [ ! -x "$WINE" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq wine64 >&2
fi
python3 -c 'import jsonschema' 2>/dev/null || apt-get install -y -qq python3-jsonschema >&2
eval "$(bash scripts/cross.sh $T --env)"
export WINEPREFIX=$PWD/target/wine/prefix WINEDEBUG=-all
mkdir -p target/wine
x86_64-w64-mingw32-gcc -O2 -shared -o target/wine/bcryptprimitives.dll \
    scripts/wine/bcryptprimitives.c -ladvapi32

# 1. The portable crates' unit tests.
cargo test --locked --target $T -p linerate-wire -p linerate-stats --no-run >&2
cp target/wine/bcryptprimitives.dll target/$T/debug/deps/
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$WINE \
    cargo test --locked --target $T -p linerate-wire -p linerate-stats -q 2>&1 | grep -E '^test result|FAILED|panicked' >&2

# 2 and 3: linerate.exe (a dev build: nothing here measures speed) and the Linux build.
# The Linux peer: LINERATE_LINUX_BIN (scripts/test.sh passes the build its tests ran),
# or a build of this tree.
cargo build --locked --target $T -p linerate >&2
exe=target/$T/debug/linerate.exe
cp target/wine/bcryptprimitives.dll target/$T/debug/
lin=${LINERATE_LINUX_BIN:-}
if [ -z "$lin" ]; then
    cargo build --locked -p linerate >&2
    lin=target/debug/linerate
fi
out=target/wine/runs
rm -rf "$out" && mkdir -p "$out"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 1 300); do
        # A listening socket, not a connection: `iperf3 -s -1` would take it for its test.
        ss -Hltn "sport = :$1" | grep -q . && return 0
        sleep 0.1
    done
    echo "wine-test: nothing listens on port $1" >&2
    return 1
}

# Windows serve, Linux client. UDP at 1 Mbit/s: the second's ~90 datagrams fit the
# receiver's default socket buffer however slowly Wine reads them (at 10 Mbit/s on a busy
# host Wine's server read a third), so the counts can agree exactly.
wport=$(free_port)
"$WINE" "$exe" serve --bind 127.0.0.1 -p "$wport" >"$out/wserve.log" 2>&1 &
pids+=($!)
wait_port "$wport"
"$lin" tcp 127.0.0.1 -p "$wport" -t 1 --no-store --format json >"$out/wserve-tcp.json"
"$lin" tcp 127.0.0.1 -p "$wport" -t 1 -R --no-store --format json >"$out/wserve-tcp-R.json"
"$lin" udp 127.0.0.1 -p "$wport" -t 1 -b 1M --no-store --format json >"$out/wserve-udp.json"
"$lin" rr 127.0.0.1 -p "$wport" -t 1 --no-store --format json >"$out/wserve-rr.json"
"$lin" rr 127.0.0.1 -p "$wport" -t 1 --connect --no-store --format json >"$out/wserve-crr.json"
iperf3 -c 127.0.0.1 -p "$wport" -t 1 -J >"$out/iperf3c-wserve.json"

# Linux serve, Windows client.
lport=$(free_port)
"$lin" serve --bind 127.0.0.1 -p "$lport" >"$out/lserve.log" 2>&1 &
pids+=($!)
wait_port "$lport"
"$WINE" "$exe" tcp 127.0.0.1 -p "$lport" -t 1 --no-store --format json >"$out/wclient-tcp.json"
"$WINE" "$exe" tcp 127.0.0.1 -p "$lport" -t 1 -R --no-store --format json >"$out/wclient-tcp-R.json"
"$WINE" "$exe" udp 127.0.0.1 -p "$lport" -t 1 -b 1M --no-store --format json >"$out/wclient-udp.json"
"$WINE" "$exe" rr 127.0.0.1 -p "$lport" -t 1 --no-store --format json >"$out/wclient-rr.json"
"$WINE" "$exe" rr 127.0.0.1 -p "$lport" -t 1 --connect --no-store --format json >"$out/wclient-crr.json"

# iperf3 server, Windows client.
iport=$(free_port)
iperf3 -s -1 -B 127.0.0.1 -p "$iport" >"$out/iperf3s.log" 2>&1 &
pids+=($!)
wait_port "$iport"
"$WINE" "$exe" tcp 127.0.0.1 --iperf3 -p "$iport" -t 1 --no-store --format json >"$out/wclient-iperf3.json"

python3 scripts/wine/check.py "$out" docs/json-schema/run-v1.json
echo "wine-test: passed in $((SECONDS - start)) s" >&2
