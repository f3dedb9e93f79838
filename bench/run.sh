#!/usr/bin/env bash
# linerate benchmark: linerate vs iperf3 vs netperf on loopback (127.0.0.1 only).
#
# Usage: [RUNS=6] [RR_RUNS=15] [DURATION=5] [PIN=0,1] [CASES="tcp udp rss rr"]
#        [LINERATE=/path/to/linerate]
#        bench/run.sh [--write-doc]
#
# CASES picks groups of cases (default the four compared with peers: tcp udp rss rr): tcp
# (tcp1 tcp4 tcpR), udp, rss, rr (rr00 rr01 crr); and, not in the default, profile (ptcp prr:
# linerate with and without --profile) and zc (linerate against itself with its copy-free
# options, about RUNS x 5 x (DURATION + 1.5) s: CASES=zc bench/run.sh). --write-doc refuses
# anything but the four default groups, so docs/PERFORMANCE.md always shows every peer case.
#
# What it does
#   1. Installs iperf3, netperf (Debian non-free; a sources entry is added with the mirror the
#      machine already uses when apt has no candidate) and GNU time if missing, and builds
#      linerate in release mode (CARGO_TARGET_DIR is honoured) unless LINERATE is set.
#   2. Starts `linerate serve`, `iperf3 -s` and `netserver` bound to 127.0.0.1 on their own
#      ports (LR_PORT=15301, IPERF_PORT=15201, NETPERF_PORT=12866 by default, so they don't
#      clash with servers someone else runs) and stops them at exit.
#   3. Runs every case RUNS times (6 by default: fewer paired rounds give no 95 % interval,
#      and every target with a peer is decided by one), DURATION seconds each, interleaved
#      round-robin (for run: for case: for tool), rotating the order of the tools every round.
#      The TCP_RR and TCP_CRR cases run RR_RUNS rounds (default 15, never fewer than RUNS):
#      linerate and netperf make the same system calls per TCP_RR transaction (per TCP_CRR
#      one, linerate's client fewer) and wait on the same wake-ups, so their ratios sit
#      near 1 and five runs cannot tell which side of 1 they are on; the rounds after RUNS
#      run those cases alone.
#      Both ends of every test are pinned (PIN=CLIENT,SERVER CPUs, default 0,1: linerate
#      -A 0,1, iperf3 -A 0,1, netperf -T 0,1): unpinned, loopback TCP on a 2-CPU machine
#      swings from 17 to 42 Gbit/s between runs of the same tool with where the scheduler puts
#      sender and receiver. The TCP_RR cases keep their own placements (0,0 and 0,1).
#   4. Prints a markdown table: per tool the median [min-max] of the runs, and the ratio of
#      the medians linerate/peer; and the targets, each comparison with a peer (TCP and UDP
#      with iperf3, TCP_RR and TCP_CRR with netperf) decided by the 95 % interval of the
#      median of the rounds' paired figures (linerate/peer of one round; for p99, the
#      difference): met when the interval lies at or above the target, not met when below
#      it, indistinguishable when it holds the target. --write-doc also regenerates
#      docs/PERFORMANCE.md and keeps the raw figures and facts in bench/doc-run/.
#
# Cases
#   tcp1  TCP, one stream, 128 KiB writes: linerate -l 128K, iperf3 -l 128K,
#         netperf TCP_STREAM -m 131072. Receiver bits/s.
#   tcp4  TCP, -P 4: linerate vs iperf3 (every stream of an end on that end's CPU).
#   tcpR  TCP reverse: linerate -R, iperf3 -R, netperf TCP_MAERTS (remote send size 131072).
#   udp   64-byte datagrams, received packets/s with at most 0.1 % loss:
#         an unpaced run first (linerate udp -l 64 without -b; iperf3 -u -l 64 -b 0;
#         netperf UDP_STREAM -m 64). If its loss is <= 0.1 %, its received pps is the result.
#         Otherwise binary-search the offered rate (-b) between 0 and the unpaced sender rate,
#         UDP_STEPS (default 6) steps, for the highest rate with loss <= 0.1 %, and report the
#         received pps at that rate (0 when no step passes). netperf can't pace (no
#         --enable-burst), so it is run unpaced only and its received pps and loss reported.
#         linerate uses UDP GSO/GRO by default; on loopback the kernel then never splits the
#         64-datagram super-packets, so linerate is also run with --no-offload (one datagram per
#         packet through the stack, like iperf3 and netperf) as a like-for-like row, and
#         iperf3 also with -w 4M, the receive buffer linerate asks for by default. The UDP
#         target is judged on that pair (one datagram per packet for both); the defaults'
#         figure is context.
#   rss   linerate TCP -P 8 against a freshly started linerate server: client peak RSS from
#         /usr/bin/time -v, server VmHWM from /proc/PID/status after the test.
#   size  stat -c %s of the (stripped) release binary.
#   rr00  TCP_RR, 1-byte request and response, both ends pinned to CPU 0: linerate
#         `rr -A 0,0` vs netperf `-t TCP_RR -T 0,0`. Transactions/s and p99 latency (netperf
#         `-- -o THROUGHPUT,P99_LATENCY`; linerate `.rr.latency.p99_ns`).
#   rr01  the same with the client on CPU 0 and the server on CPU 1 (-A 0,1 / -T 0,1).
#   ptcp  profile group: linerate TCP as tcp1, with and without --profile (999 Hz, both ends
#         profiled; the server runs with --allow-profile), interleaved: the cost of profiling
#         in throughput. Target: at most 3 % below the run without (issue 15).
#   prr   the same for TCP_RR 1 B as rr01 (transactions/s).
#   zc    linerate TCP, one stream, 128 KiB writes, pinned as PIN, with each copy-free option
#         against the copying default: (none), --zerocopy, --sendfile, --no-rx-copy,
#         --sendfile --no-rx-copy, interleaved and rotated like the other cases. Per option:
#         receiver throughput; the host's service demand (µs of CPU per KB, both ends'
#         /proc/stat: on one host the two ends' figures are the same CPUs); and each end's own
#         threads' CPU per KB (sender and receiver, system calls included: where the copies are
#         made); the ratios are option / copy of the medians (below 1: less CPU per KB). For
#         --zerocopy also how many sends the kernel reported as copied after all (on loopback:
#         all of them, it always copies to a local socket).
#   crr   TCP_CRR (a new connection per transaction), 1 byte each way, pinned as PIN:
#         linerate `rr --connect -A 0,1` vs netperf `-t TCP_CRR -T 0,1`. Both leave TIME_WAIT sockets behind
#         (one per transaction); the interleaving gives both the same backlog.
#
# Time: per round 3+2+3 TCP tests, up to 4x(1+UDP_STEPS)+1 UDP tests, one RSS test and 6
# TCP_RR/CRR tests, i.e. at most 44 x (DURATION + ~1.2 s), and RR_RUNS - RUNS rounds of the 6
# TCP_RR/CRR tests alone: RUNS=6 RR_RUNS=15 DURATION=5 takes about 35 minutes.
#
# Traffic goes to 127.0.0.1 only; the address is not configurable on purpose.

set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
HOST=127.0.0.1

RUNS="${RUNS:-6}"
RR_RUNS="${RR_RUNS:-15}"
DURATION="${DURATION:-5}"
UDP_STEPS="${UDP_STEPS:-6}"
LOSS_LIMIT="${LOSS_LIMIT:-0.1}"
# linerate asks for a 4 MiB UDP receive buffer by default; iperf3 keeps the system default
# (net.core.rmem_default) unless -w is given, so iperf3 also runs with -w 4M (capped by
# net.core.rmem_max, which this script does not change).
IPERF_UDP_WINDOW="${IPERF_UDP_WINDOW:-4M}"
LR_PORT="${LR_PORT:-15301}"
LR_RSS_PORT="${LR_RSS_PORT:-15302}"
IPERF_PORT="${IPERF_PORT:-15201}"
NETPERF_PORT="${NETPERF_PORT:-12866}"
WRITE_DOC=0
CASES="${CASES:-tcp udp rss rr}"
# CPUs of the client and the server in every stream test (TCP, UDP, RSS) and TCP_CRR.
PIN="${PIN:-0,1}"

for arg in "$@"; do
    case "$arg" in
        --write-doc) WRITE_DOC=1 ;;
        -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $arg (try --help)" >&2; exit 2 ;;
    esac
done

for g in $CASES; do
    [[ " tcp udp rss rr profile zc " == *" $g "* ]] || { echo "CASES: unknown group '$g' (use tcp, udp, rss, rr, profile, zc)" >&2; exit 2; }
done
if [[ $WRITE_DOC == 1 && "$(echo $CASES | tr ' ' '\n' | sort | tr '\n' ' ')" != "rr rss tcp udp " ]]; then
    echo "--write-doc needs every case group: unset CASES" >&2; exit 2
fi
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "RUNS must be a positive integer" >&2; exit 2; }
[[ "$RR_RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "RR_RUNS must be a positive integer" >&2; exit 2; }
(( RR_RUNS >= RUNS )) || RR_RUNS=$RUNS
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || { echo "DURATION must be a positive integer (seconds)" >&2; exit 2; }
[[ "$PIN" =~ ^[0-9]+,[0-9]+$ ]] || { echo "PIN must be CLIENT_CPU,SERVER_CPU (e.g. 0,1)" >&2; exit 2; }
for cpu in ${PIN/,/ } 0 1; do
    # The RR cases use CPUs 0 and 1 whatever PIN says.
    [[ -d /sys/devices/system/cpu/cpu$cpu ]] \
        || { echo "CPU $cpu does not exist here: the benchmark needs CPUs 0 and 1 and those in PIN=$PIN" >&2; exit 2; }
done

REPORT=(python3 "$HERE/report.py")
log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# ------------------------------------------------------------------------------------------
# 1. dependencies and build

APT_UPDATED=0
apt_update() {
    if [[ $APT_UPDATED == 0 ]]; then
        log "apt-get update"
        apt-get update -qq >&2
        APT_UPDATED=1
    fi
}
apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

ensure_nonfree_source() {
    local codename uri suites signed_by file
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    IFS=$'\t' read -r uri suites signed_by < <("${REPORT[@]}" debian-mirror)
    file=/etc/apt/sources.list.d/linerate-bench-nonfree.sources
    log "adding $file ($uri $suites non-free)"
    {
        echo "Types: deb"
        echo "URIs: $uri"
        echo "Suites: ${suites:-$codename}"
        echo "Components: non-free"
        if [[ -n "$signed_by" ]]; then echo "Signed-By: $signed_by"; fi
    } > "$file"
    APT_UPDATED=0
    apt_update
}

install_deps() {
    if ! command -v iperf3 >/dev/null; then apt_update; apt_install iperf3; fi
    if [[ ! -x /usr/bin/time ]]; then apt_update; apt_install time; fi
    if ! command -v netperf >/dev/null || ! command -v netserver >/dev/null; then
        apt_update
        if apt-cache policy netperf | grep -q 'Candidate: (none)' || [[ -z "$(apt-cache policy netperf)" ]]; then
            ensure_nonfree_source
        fi
        apt_install netperf
        # The package may start its own netserver on the default port; ours uses NETPERF_PORT.
    fi
}

build_linerate() {
    if [[ -n "${LINERATE:-}" ]]; then
        [[ -x "$LINERATE" ]] || { echo "LINERATE=$LINERATE is not executable" >&2; exit 2; }
        return
    fi
    local target="${CARGO_TARGET_DIR:-$ROOT/target}"
    log "cargo build --release -p linerate (target dir $target)"
    (cd "$ROOT" && CARGO_TARGET_DIR="$target" cargo build --release -q -p linerate) >&2
    LINERATE="$target/release/linerate"
}

install_deps
build_linerate
LINERATE="$(cd "$(dirname "$LINERATE")" && pwd)/$(basename "$LINERATE")"

# ------------------------------------------------------------------------------------------
# 2. servers

WORK="$(mktemp -d /tmp/linerate-bench.XXXXXX)"
RESULTS="$WORK/results.tsv"
META="$WORK/meta"
: > "$RESULTS"
SERVER_PIDS=()

cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [[ "${KEEP_WORK:-0}" != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() { ss -Htanl "sport = :$1" 2>/dev/null | grep -q . ; }

wait_port() { # PORT PID NAME
    local i
    for ((i = 0; i < 100; i++)); do
        if ! kill -0 "$2" 2>/dev/null; then
            echo "$3 exited at start; log:" >&2; cat "$WORK/$3.log" >&2 || true; exit 1
        fi
        if port_busy "$1"; then return 0; fi
        sleep 0.1
    done
    echo "$3 did not listen on $HOST:$1" >&2
    exit 1
}

for p in "$LR_PORT" "$LR_RSS_PORT" "$IPERF_PORT" "$NETPERF_PORT"; do
    if port_busy "$p"; then echo "port $p is already in use; set LR_PORT/IPERF_PORT/NETPERF_PORT" >&2; exit 1; fi
done

"$LINERATE" serve --bind "$HOST" -p "$LR_PORT" -q --allow-profile > "$WORK/linerate-serve.log" 2>&1 &
LR_PID=$!; SERVER_PIDS+=("$LR_PID")
iperf3 -s -B "$HOST" -p "$IPERF_PORT" > "$WORK/iperf3-server.log" 2>&1 &
IPERF_PID=$!; SERVER_PIDS+=("$IPERF_PID")
netserver -D -L "$HOST" -p "$NETPERF_PORT" > "$WORK/netserver.log" 2>&1 &
NETSERVER_PID=$!; SERVER_PIDS+=("$NETSERVER_PID")
wait_port "$LR_PORT" "$LR_PID" linerate-serve
wait_port "$IPERF_PORT" "$IPERF_PID" iperf3-server
wait_port "$NETPERF_PORT" "$NETSERVER_PID" netserver
log "servers up: linerate $LR_PID, iperf3 $IPERF_PID, netserver $NETSERVER_PID ($WORK)"

# ------------------------------------------------------------------------------------------
# 3. measurements

ROUND=0
FAILS=0
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$ROUND" "$1" "$2" "$3" "$4" >> "$RESULTS"; }

# try NAME OUTFILE CMD...: run CMD (stdout to OUTFILE), retrying twice (iperf3's server can be
# briefly busy after a test). Returns non-zero if every attempt failed.
try() {
    local name="$1" out="$2" attempt
    shift 2
    local rc
    for attempt in 1 2 3; do
        timeout $((DURATION + 30)) "$@" > "$out" 2> "$out.err" && rc=0 || rc=$?
        if [[ $rc == 0 ]]; then
            sleep 0.5
            return 0
        fi
        log "$name: attempt $attempt failed (exit $rc): $(tail -c 300 "$out.err" | tr '\n' ' ') $(tail -c 300 "$out" | tr '\n' ' ')"
        sleep 2
    done
    return 1
}

# parse KIND FILE: prints the parsed figures, or nothing (and logs) on failure.
parse() { "${REPORT[@]}" parse "$1" "$2" || true; }

N=0
next() { N=$((N + 1)); printf '%s/%03d' "$WORK" "$N"; }

tcp_case() { # CASE TOOL
    local case="$1" tool="$2" out v="" lr=() ip=() np=()
    out="$(next)"
    case "$case" in
        tcp1) lr=(-l 128K); ip=(-l 128K); np=(TCP_STREAM -m 131072) ;;
        tcp4) lr=(-l 128K -P 4); ip=(-l 128K -P 4) ;;
        tcpR) lr=(-l 128K -R); ip=(-l 128K -R); np=(TCP_MAERTS -m 131072,131072) ;;
    esac
    lr+=(-A "$PIN"); ip+=(-A "$PIN")
    case "$tool" in
        linerate)
            try "$case linerate" "$out" "$LINERATE" tcp "$HOST" -p "$LR_PORT" -t "$DURATION" "${lr[@]}" --json \
                && v="$(parse linerate-tcp "$out")" ;;
        iperf3)
            try "$case iperf3" "$out" iperf3 -c "$HOST" -p "$IPERF_PORT" -t "$DURATION" "${ip[@]}" -J \
                && v="$(parse iperf3-tcp "$out")" ;;
        netperf)
            [[ ${#np[@]} -gt 0 ]] || return 0
            try "$case netperf" "$out" netperf -P 0 -H "$HOST" -p "$NETPERF_PORT" -t "${np[0]}" -l "$DURATION" \
                -T "$PIN" -- "${np[@]:1}" -o THROUGHPUT,THROUGHPUT_UNITS \
                && v="$(parse netperf-tcp "$out")" ;;
    esac
    if [[ -z "$v" ]]; then FAILS=$((FAILS + 1)); v=NA; fi
    record "$case" "$tool" bps "$v"
    log "round $ROUND $case $tool: $v bit/s"
}

profile_case() { # CASE TOOL: ptcp or prr, TOOL linerate or linerate-profile
    local case="$1" tool="$2" out v="" args=() kind
    out="$(next)"
    case "$case" in
        ptcp) args=(tcp "$HOST" -l 128K -A "$PIN"); kind=linerate-tcp ;;
        prr) args=(rr "$HOST" -A 0,1); kind=linerate-rr ;;
    esac
    [[ "$tool" == linerate-profile ]] && args+=(--profile)
    try "$case $tool" "$out" "$LINERATE" "${args[@]}" -p "$LR_PORT" -t "$DURATION" --json \
        && v="$(parse "$kind" "$out")"
    if [[ -z "$v" ]]; then FAILS=$((FAILS + 1)); v=NA; fi
    if [[ "$case" == ptcp ]]; then
        record "$case" "$tool" bps "$v"
    else
        record "$case" "$tool" tps "${v%% *}"
    fi
    log "round $ROUND $case $tool: $v"
}

zc_case() { # VARIANT: copy zerocopy sendfile norx sendfile_norx
    local variant="$1" out v="" flags=()
    out="$(next)"
    case "$variant" in
        copy) flags=() ;;
        zerocopy) flags=(--zerocopy) ;;
        sendfile) flags=(--sendfile) ;;
        norx) flags=(--no-rx-copy) ;;
        sendfile_norx) flags=(--sendfile --no-rx-copy) ;;
    esac
    try "zc $variant" "$out" "$LINERATE" tcp "$HOST" -p "$LR_PORT" -t "$DURATION" -l 128K -A "$PIN" \
        "${flags[@]}" --json && v="$(parse linerate-zc "$out")"
    if [[ -z "$v" ]]; then
        FAILS=$((FAILS + 1))
        record "zc_$variant" linerate bps NA
        return 0
    fi
    local bps hsd snd rcv sends copied
    read -r bps hsd snd rcv sends copied <<< "$v"
    record "zc_$variant" linerate bps "$bps"
    record "zc_$variant" linerate host_sd "$hsd"
    record "zc_$variant" linerate snd_own_sd "$snd"
    record "zc_$variant" linerate rcv_own_sd "$rcv"
    record "zc_$variant" linerate zc_sends "$sends"
    record "zc_$variant" linerate zc_copied "$copied"
    log "round $ROUND zc $variant: $bps bit/s, host $hsd us/KB, sender own $snd us/KB, receiver own $rcv us/KB, zero-copy sends $sends (copied $copied)"
}

rr_case() { # CASE TOOL: 1 byte each way; CASE rr00 (TCP_RR, CPUs 0,0), rr01 (CPUs 0,1) or crr (TCP_CRR)
    local case="$1" tool="$2" out v="" lr=() np=()
    out="$(next)"
    case "$case" in
        rr00) lr=(-A 0,0); np=(-t TCP_RR -T 0,0) ;;
        rr01) lr=(-A 0,1); np=(-t TCP_RR -T 0,1) ;;
        crr) lr=(--connect -A "$PIN"); np=(-t TCP_CRR -T "$PIN") ;;
    esac
    case "$tool" in
        linerate)
            try "$case linerate" "$out" "$LINERATE" rr "$HOST" -p "$LR_PORT" -t "$DURATION" "${lr[@]}" --json \
                && v="$(parse linerate-rr "$out")" ;;
        netperf)
            try "$case netperf" "$out" netperf -P 0 -H "$HOST" -p "$NETPERF_PORT" -l "$DURATION" "${np[@]}" \
                -- -o THROUGHPUT,P99_LATENCY \
                && v="$(parse netperf-rr "$out")" ;;
        *) return 0 ;;
    esac
    if [[ -z "$v" ]]; then FAILS=$((FAILS + 1)); v="NA NA"; fi
    local tps p99
    read -r tps p99 <<< "$v"
    record "$case" "$tool" tps "$tps"
    record "$case" "$tool" p99_us "$p99"
    log "round $ROUND $case $tool: $tps trans/s, p99 $p99 us"
}

# udp_once TOOL RATE: prints "rx_pps tx_pps loss tx_bps" (RATE 0 = unpaced), or nothing.
# TOOL linerate-nooff is linerate with --no-offload (no UDP GSO/GRO); iperf3-w is iperf3 -w 4M.
udp_once() {
    local tool="$1" rate="$2" out b=()
    out="$(next)"
    case "$tool" in
        linerate|linerate-nooff)
            b=(-A "$PIN")
            [[ "$rate" == 0 ]] || b+=(-b "$rate")
            [[ "$tool" == linerate ]] || b+=(--no-offload)
            try "udp $tool b=$rate" "$out" "$LINERATE" udp "$HOST" -p "$LR_PORT" -t "$DURATION" -l 64 "${b[@]}" --json \
                && parse linerate-udp "$out" ;;
        iperf3|iperf3-w)
            b=(-A "$PIN")
            [[ "$tool" == iperf3 ]] || b+=(-w "$IPERF_UDP_WINDOW")
            try "udp $tool b=$rate" "$out" iperf3 -c "$HOST" -p "$IPERF_PORT" -t "$DURATION" -u -l 64 -b "$rate" "${b[@]}" -J \
                && parse iperf3-udp "$out" ;;
        netperf)
            try "udp netperf" "$out" netperf -P 0 -H "$HOST" -p "$NETPERF_PORT" -t UDP_STREAM -l "$DURATION" \
                -T "$PIN" -- -m 64 -o THROUGHPUT,THROUGHPUT_UNITS,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS,ELAPSED_TIME \
                && parse netperf-udp "$out" ;;
    esac
    return 0
}

loss_ok() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$LOSS_LIMIT') else 1)"; }

udp_case() { # TOOL
    local tool="$1" res rx tx loss txbps lo hi mid best best_rate i pre=udp rtool
    res="$(udp_once "$tool" 0)"
    case "$tool" in linerate-nooff) pre=udpno ;; iperf3-w) pre=udpw ;; esac
    rtool="${tool%-nooff}"; rtool="${rtool%-w}"
    if [[ -z "$res" ]]; then
        FAILS=$((FAILS + 1))
        record "${pre}_unpaced" "$rtool" rx_pps NA; record "${pre}_ndr" "$rtool" rx_pps NA
        log "round $ROUND udp $tool: unpaced run failed"
        return 0
    fi
    read -r rx tx loss txbps <<< "$res"
    record "${pre}_unpaced" "$rtool" rx_pps "$rx"
    record "${pre}_unpaced" "$rtool" tx_pps "$tx"
    record "${pre}_unpaced" "$rtool" loss "$loss"
    log "round $ROUND udp $tool unpaced: rx $rx pps, tx $tx pps, loss $loss %, tx $txbps bit/s"
    if loss_ok "$loss"; then
        record "${pre}_ndr" "$rtool" rx_pps "$rx"
        record "${pre}_ndr" "$rtool" rate_pps "$tx"
        return 0
    fi
    [[ "$tool" != netperf ]] || return 0   # netperf can't pace
    lo=0; hi="$txbps"; best=0; best_rate=0
    for ((i = 1; i <= UDP_STEPS; i++)); do
        mid=$(( (lo + hi) / 2 ))
        res="$(udp_once "$tool" "$mid")"
        if [[ -z "$res" ]]; then
            log "round $ROUND udp $tool b=$mid: failed, treated as over the loss limit"
            hi=$mid; continue
        fi
        read -r rx tx loss txbps <<< "$res"
        if loss_ok "$loss"; then
            lo=$mid; best=$rx; best_rate=$mid
            log "round $ROUND udp $tool b=$mid: rx $rx pps, loss $loss % (ok)"
        else
            hi=$mid
            log "round $ROUND udp $tool b=$mid: rx $rx pps, loss $loss % (over)"
        fi
    done
    record "${pre}_ndr" "$rtool" rx_pps "$best"
    record "${pre}_ndr" "$rtool" rate_pps "$(( best_rate / (64 * 8) ))"
    log "round $ROUND udp $tool: $best pps received at <= $LOSS_LIMIT % loss (b=$best_rate)"
}

rss_case() {
    local out spid hwm crss bps=""
    out="$(next)"
    "$LINERATE" serve --bind "$HOST" -p "$LR_RSS_PORT" -q > "$WORK/linerate-rss-serve.log" 2>&1 &
    spid=$!; SERVER_PIDS+=("$spid")
    wait_port "$LR_RSS_PORT" "$spid" linerate-rss-serve
    if try "rss linerate -P 8" "$out" /usr/bin/time -v -o "$out.time" \
        "$LINERATE" tcp "$HOST" -p "$LR_RSS_PORT" -t "$DURATION" -l 128K -P 8 -A "$PIN" --json; then
        bps="$(parse linerate-tcp "$out")"
        crss="$(parse time-maxrss "$out.time")"
        hwm="$(awk '/^VmHWM:/ {print $2}' "/proc/$spid/status" 2>/dev/null || true)"
    fi
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    unset 'SERVER_PIDS[-1]'
    [[ -n "$bps" ]] || FAILS=$((FAILS + 1))
    record tcp8 linerate bps "${bps:-NA}"
    record rss linerate client_kib "${crss:-NA}"
    record rss linerate server_kib "${hwm:-NA}"
    log "round $ROUND rss: client ${crss:-NA} KiB, server ${hwm:-NA} KiB, -P 8 ${bps:-NA} bit/s"
}

# rotate ROUND TOOLS...: prints TOOLS rotated left by ROUND-1.
rotate() {
    local k=$(( ($1 - 1) % ($# - 1) )); shift
    local a=("$@")
    echo "${a[@]:k}" "${a[@]:0:k}"
}

START=$SECONDS
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
want() { [[ " $CASES " == *" $1 "* ]]; }
want rr || RR_RUNS=$RUNS
log "RUNS=$RUNS RR_RUNS=$RR_RUNS DURATION=$DURATION PIN=$PIN linerate=$LINERATE"
for ((ROUND = 1; ROUND <= RR_RUNS; ROUND++)); do
    # Past RUNS only the TCP_RR and TCP_CRR cases run (see RR_RUNS above).
    (( ROUND <= RUNS )) || CASES=rr
    want tcp && for case in tcp1 tcp4 tcpR; do
        for tool in $(rotate "$ROUND" linerate iperf3 netperf); do
            [[ "$case" == tcp4 && "$tool" == netperf ]] && continue
            tcp_case "$case" "$tool"
        done
    done
    want udp && for tool in $(rotate "$ROUND" linerate linerate-nooff iperf3 iperf3-w netperf); do
        udp_case "$tool"
    done
    want rss && rss_case
    want profile && for case in ptcp prr; do
        for tool in $(rotate "$ROUND" linerate linerate-profile); do
            profile_case "$case" "$tool"
        done
    done
    want zc && for variant in $(rotate "$ROUND" copy zerocopy sendfile norx sendfile_norx); do
        zc_case "$variant"
    done
    want rr && for case in rr00 rr01 crr; do
        for tool in $(rotate "$ROUND" linerate netperf); do
            rr_case "$case" "$tool"
        done
    done
done
ROUND=0
record size linerate bytes "$(stat -L -c %s "$LINERATE")"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

{
    echo "RUNS=$RUNS"
    echo "RR_RUNS=$RR_RUNS"
    echo "DURATION=$DURATION"
    echo "UDP_STEPS=$UDP_STEPS"
    echo "PIN=$PIN"
    echo "IPERF_UDP_WINDOW=$IPERF_UDP_WINDOW"
    echo "RMEM_MAX=$(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo '?')"
    echo "RMEM_DEFAULT=$(cat /proc/sys/net/core/rmem_default 2>/dev/null || echo '?')"
    echo "TW_MAX=$(cat /proc/sys/net/ipv4/tcp_max_tw_buckets 2>/dev/null || echo '?')"
    echo "LINERATE=$LINERATE"
    echo "LOAD_BEFORE=$LOAD_BEFORE"
    echo "LOAD_AFTER=$LOAD_AFTER"
    echo "ELAPSED=$((SECONDS - START))"
    echo "DATE=$(date -u '+%Y-%m-%d %H:%M UTC')"
    "${REPORT[@]}" machine-facts "$LINERATE"
} > "$META"

# ------------------------------------------------------------------------------------------
# 4. report

if [[ $WRITE_DOC == 1 ]]; then
    # The raw figures stay with the page, so it can be rendered again from them (report.py).
    mkdir -p "$HERE/doc-run"
    cp "$RESULTS" "$HERE/doc-run/results.tsv"
    cp "$META" "$HERE/doc-run/meta"
    "${REPORT[@]}" report "$RESULTS" "$META" --doc "$ROOT/docs/PERFORMANCE.md"
else
    "${REPORT[@]}" report "$RESULTS" "$META"
fi
if [[ -n "${SAVE_RESULTS:-}" ]]; then cp "$RESULTS" "$SAVE_RESULTS"; cp "$META" "$SAVE_RESULTS.meta"; fi
if [[ $FAILS -gt 0 ]]; then log "$FAILS test(s) failed; see the log above"; fi
