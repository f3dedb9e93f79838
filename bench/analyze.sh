#!/usr/bin/env bash
# linerate analyze vs `tshark -q -z conv,tcp`: time to read the same large capture.
#
# Usage: [RUNS=3] [SECONDS_OF_TRAFFIC=20] [LINERATE=/path/to/linerate] bench/analyze.sh [FILE]
#
# Without FILE it makes one: a `linerate lab` pair (namespaces lrdbench-a/b, removed at exit),
# a `linerate serve` in b and `linerate tcp -P 4 -t SECONDS_OF_TRAFFIC --capture` in a
# (headers only, 128 bytes), after `ethtool -K` turned TSO/GSO off in a so that every
# wire-sized segment is one record. Then it runs, RUNS times each and interleaved,
#   tshark -q -z conv,tcp -r FILE      (Debian's tshark: per-conversation statistics)
#   linerate analyze FILE              (per-connection analysis, table output)
# and prints the median wall time of each and the ratio tshark / linerate. The machine is
# shared: compare the ratio, not the absolute times. Target: ratio >= 10.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SECS=${SECONDS_OF_TRAFFIC:-20}
export DEBIAN_FRONTEND=noninteractive
command -v tshark >/dev/null || {
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq && apt-get install -y -qq tshark
}
command -v ethtool >/dev/null || apt-get install -y -qq ethtool
command -v bc >/dev/null || apt-get install -y -qq bc
if [ -z "${LINERATE:-}" ]; then
    cargo build --release -q -p linerate
    LINERATE="${CARGO_TARGET_DIR:-target}/release/linerate"
fi
FILE=${1:-}
tmp=$(mktemp -d)
cleanup() { "$LINERATE" lab down lrdbench >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
if [ -z "$FILE" ]; then
    FILE=$tmp/bench.pcap
    "$LINERATE" lab up lrdbench --topology pair >/dev/null
    b=$("$LINERATE" lab list | awk '$1=="lrdbench"{for(i=1;i<=NF;i++) if ($i ~ /^b=/) print substr($i,3)}')
    ifa=$(ip -n lr-lrdbench-a -br link | awk '$1!="lo"{sub(/@.*/,"",$1); print $1}')
    ip netns exec lr-lrdbench-a ethtool -K "$ifa" tso off gso off >/dev/null 2>&1 || true
    ip netns exec lr-lrdbench-b "$LINERATE" serve --bind "$b" -q &
    srv=$!
    sleep 0.5
    ip netns exec lr-lrdbench-a "$LINERATE" tcp "$b" -P 4 -t "$SECS" --capture "$FILE" >/dev/null
    kill "$srv"; wait "$srv" 2>/dev/null || true
fi
echo "capture: $FILE, $(stat -c %s "$FILE") bytes, $(tshark -r "$FILE" -q -z io,stat,0 2>/dev/null | awk '/<>/{print $6}') frames"
now() { date +%s.%N; }
declare -a T_TS T_LR
for ((i = 0; i < RUNS; i++)); do
    s=$(now); tshark -q -z conv,tcp -r "$FILE" >/dev/null 2>&1; e=$(now)
    T_TS+=("$(echo "$e - $s" | bc)")
    s=$(now); "$LINERATE" analyze "$FILE" >/dev/null; e=$(now)
    T_LR+=("$(echo "$e - $s" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
ts=$(median "${T_TS[@]}")
lr=$(median "${T_LR[@]}")
printf 'tshark -q -z conv,tcp   median %8.3f s\n' "$ts"
printf 'linerate analyze        median %8.3f s\n' "$lr"
printf 'ratio tshark/linerate   %.1f x\n' "$(echo "$ts / $lr" | bc -l)"
