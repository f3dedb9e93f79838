#!/usr/bin/env bash
# Two linerate builds side by side on loopback (127.0.0.1 only): is B as fast as A?
#
# Usage: A=/path/to/linerate B=/path/to/other [RUNS=5] [DURATION=3] [PIN=0,1] bench/ab.sh
#
# For example the glibc release build against the static musl one (scripts/static.sh):
#   A=target/release/linerate B=target/x86_64-unknown-linux-musl/release/linerate bench/ab.sh
#
# Each build serves its own tests (its own `serve`, on its own port), so a difference in the
# server counts too. Cases, every one pinned (client CPU, server CPU = PIN; TCP_RR both on
# CPU 0 and on 0,1 as bench/run.sh):
#   tcp1   TCP, one stream, 128 KiB writes: receiver bit/s
#   udp64  UDP, 64-byte datagrams, unpaced: received datagrams/s
#   rr00   TCP_RR 1 byte, both ends on CPU 0: transactions/s
#   rr01   the same, client CPU 0, server CPU 1
#   crr    TCP_CRR 1 byte (PIN): transactions/s
# Runs are interleaved (for run: for case: A then B, the order swapped every other run);
# prints per case the median [min-max] of each build and the ratio of the medians B/A.
set -euo pipefail

A="${A:?set A=/path/to/linerate (the reference build)}"
B="${B:?set B=/path/to/linerate (the build to compare)}"
RUNS="${RUNS:-5}"
DURATION="${DURATION:-3}"
PIN="${PIN:-0,1}"
HOST=127.0.0.1
for bin in "$A" "$B"; do
    [[ -x "$bin" ]] || { echo "$bin is not an executable: build it first" >&2; exit 2; }
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "RUNS must be a positive integer" >&2; exit 2; }
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || { echo "DURATION must be a positive integer (seconds)" >&2; exit 2; }
[[ "$PIN" =~ ^[0-9]+,[0-9]+$ ]] || { echo "PIN must be CLIENT_CPU,SERVER_CPU (e.g. 0,1)" >&2; exit 2; }

TMP="$(mktemp -d /tmp/linerate-ab.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
declare -A PORT=([A]=15331 [B]=15332)
declare -A BIN=([A]="$A" [B]="$B")
for k in A B; do
    "${BIN[$k]}" serve --bind "$HOST" --port "${PORT[$k]}" >"$TMP/serve-$k.log" 2>&1 &
    PIDS+=($!)
done
sleep 0.5

# one KEY CASE: prints the figure of one run (empty when it failed).
one() {
    local k="$1" case="$2" bin="${BIN[$1]}" port="${PORT[$1]}" out="$TMP/out.json"
    local args=() jq
    case "$case" in
        tcp1) args=(tcp "$HOST" -l 128K -A "$PIN"); jq='flows_rx_bps' ;;
        udp64) args=(udp "$HOST" -l 64 -A "$PIN"); jq='flows_rx_pps' ;;
        rr00) args=(rr "$HOST" -A 0,0); jq='rr_tps' ;;
        rr01) args=(rr "$HOST" -A 0,1); jq='rr_tps' ;;
        crr) args=(rr "$HOST" --connect -A "$PIN"); jq='rr_tps' ;;
    esac
    "$bin" "${args[@]}" -p "$port" -t "$DURATION" --json >"$out" 2>/dev/null || { echo ""; return; }
    python3 - "$out" "$jq" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
what = sys.argv[2]
if what == "rr_tps":
    print(d["rr"]["transactions_per_sec"])
else:
    flows = d["summary"]["flows"]
    key = "receiver_bps" if what == "flows_rx_bps" else "receiver_pps"
    print(sum(f.get(key) or 0 for f in flows))
EOF
}

CASES=(tcp1 udp64 rr00 rr01 crr)
declare -A VALS
for ((r = 1; r <= RUNS; r++)); do
    order=(A B)
    ((r % 2 == 0)) && order=(B A)
    for c in "${CASES[@]}"; do
        for k in "${order[@]}"; do
            v="$(one "$k" "$c")"
            VALS[$c,$k]="${VALS[$c,$k]:-} ${v:-NA}"
            printf '[ab] run %d %-5s %s: %s\n' "$r" "$c" "$k" "${v:-failed}" >&2
        done
    done
done

python3 - "$A" "$B" "$RUNS" "$DURATION" "$PIN" <<EOF
import statistics, sys
a, b, runs, dur, pin = sys.argv[1:]
vals = {$(for c in "${CASES[@]}"; do printf '"%s": ("%s", "%s"), ' "$c" "${VALS[$c,A]}" "${VALS[$c,B]}"; done)}
units = {"tcp1": ("Gbit/s", 1e9), "udp64": ("M dgram/s", 1e6), "rr00": ("k trans/s", 1e3),
         "rr01": ("k trans/s", 1e3), "crr": ("k trans/s", 1e3)}
print(f"A = {a}\nB = {b}\n{runs} interleaved runs of {dur} s, PIN={pin}\n")
print("| case | unit | A median [min-max] | B median [min-max] | B/A |")
print("|---|---|---|---|---|")
for case, (va, vb) in vals.items():
    unit, div = units[case]
    xa = [float(x) / div for x in va.split() if x != "NA"]
    xb = [float(x) / div for x in vb.split() if x != "NA"]
    fmt = lambda xs: f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]" if xs else "failed"
    ratio = f"{statistics.median(xb) / statistics.median(xa):.3f}x" if xa and xb else "-"
    print(f"| {case} | {unit} | {fmt(xa)} | {fmt(xb)} | {ratio} |")
EOF
