#!/usr/bin/env bash
# The RFC 2544 frame generator: speed, accuracy, and the zero-loss rate through a namespace
# router, side by side with an independent sender (trafgen, from Debian's netsniff-ng).
#
# Usage (root): [RUNS=3] [LINERATE=/path/to/linerate] bench/generator.sh [--write-doc]
#
# --write-doc puts the tables into docs/PERFORMANCE.md, section "RFC 2544 frame generator"
# (replacing it; bench/run.sh --write-doc keeps it).
#
# Every figure is counted by the kernel's interface counters (`ip -s -j link`), not by the
# generators themselves. The script builds its own namespaces (names lrgen-*), and removes them
# on exit. The machine may be shared: the figures are medians of RUNS interleaved runs, the
# ratios means of paired rounds with 95% intervals. The release build is the real one
# (Cargo.toml's [profile.release]).
#
# 1. speed: a - b veth pair, two receivers in b: full stack (the frames reach a UDP socket
#    read on CPU 1: linerate's server for linerate, a Python reader on port 9 for trafgen) and
#    early drop (b drops every 64-byte UDP test frame, UDP length 26, at its netdev ingress
#    hook with nftables, so the receiving side costs almost nothing; the streams' 24-byte
#    hellos still reach the server). Each sender runs unpaced on CPU 0 for 4 s; the rate is
#    b's rx_packets over the middle 2 s. Senders: `linerate udp B -l 18 --raw-frames --raw-tx
#    xdp -A 0,1` (AF_XDP; 64-byte frames: 18-byte payloads), the same with `--raw-tx afpacket`
#    (the AF_PACKET ring), and trafgen: the same 64-byte UDP frame from a TX ring (`trafgen
#    -P 1`, qdisc bypass, pinned to CPU 0). Rounds are paired: the three run back to back
#    (order rotated) and the ratios are taken within a round; mean and 95% interval over
#    the rounds.
# 2. accuracy: linerate paced at 10 kpps up to its speed from 1. (0.9 x, so it can keep up);
#    achieved = b's rx_packets over the middle 2 s of a 4 s run, against the offered rate.
# 3. router: a - r - b (linerate lab router, unshaped), `linerate serve` in b. linerate's
#    64-byte NDR (`linerate rfc2544 --frame-sizes 64`, raw frames) against trafgen's highest
#    rate with no frame lost in r (r's ingress rx_packets = r's egress tx_packets), found by
#    binary search of trafgen's -b (3 s steps, 7 of them: 1/128 of trafgen's speed). Ratio linerate / trafgen.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
WRITE_DOC=0
[ "${1:-}" = --write-doc ] && WRITE_DOC=1
if [ "$(id -u)" != 0 ]; then
    echo "bench/generator.sh: needs root (network namespaces, AF_PACKET)" >&2
    exit 2
fi
command -v trafgen >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq netsniff-ng >/dev/null; }
command -v nft >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq nftables >/dev/null; }
if [ -z "${LINERATE:-}" ]; then
    cargo build --release -q -p linerate
    LINERATE=${CARGO_TARGET_DIR:-target}/release/linerate
fi
LR=$LINERATE
PAIR=lrgen-p
ROUTER=lrgen-r
TMP=$(mktemp -d)
SERVER_PIDS=()
cleanup() {
    for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    "$LR" lab down "$PAIR" >/dev/null 2>&1 || true
    "$LR" lab down "$ROUTER" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT

ns() { echo "lr-$1-$2"; }
# iface NS: the namespace's one non-loopback interface (towards the path).
iface() { ip -n "$1" -j link show | python3 -c 'import json,sys; print([l["ifname"] for l in json.load(sys.stdin) if l["ifname"]!="lo"][0])'; }
# counter NS IF rx|tx
counter() { ip -n "$1" -s -j link show dev "$2" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['stats64']['$3']['packets'])"; }
median() { python3 -c 'import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print("%.0f" % statistics.median(v))' "$@"; }
ratio() { python3 -c "import sys; print('%.3f' % (float(sys.argv[1])/float(sys.argv[2])))" "$1" "$2"; }

# trafgen config for one 64-byte UDP frame from NS (a) to DST port PORT via its next hop.
trafgen_cfg() {
    local nsa=$1 dst=$2 port=$3 dev src smac dmac gw
    dev=$(iface "$nsa")
    src=$(ip -n "$nsa" -j route get "$dst" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["prefsrc"])')
    gw=$(ip -n "$nsa" -j route get "$dst" | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r.get("gateway", r["dst"]))')
    # Resolve the next hop: one empty datagram to its discard port, then wait for the entry.
    ip netns exec "$nsa" python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'', ('$gw', 9))" || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        ip -n "$nsa" -j neigh show to "$gw" dev "$(iface "$nsa")" | grep -q lladdr && break
        sleep 0.1
    done
    smac=$(ip -n "$nsa" -j link show dev "$dev" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
    dmac=$(ip -n "$nsa" -j neigh show to "$gw" dev "$dev" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["lladdr"])')
    cat > "$TMP/frame.cfg" <<EOF
{
  eth(da=$dmac, sa=$smac, type=0x0800),
  ipv4(saddr=$src, daddr=$dst, ttl=64, df),
  udp(sp=40000, dp=$port),
  fill(0x00, 18)
}
EOF
}

# rate_mid NS IF rx|tx PID: packets per second over seconds 1-3 of a running sender.
rate_mid() {
    local a b t0 t1
    sleep 1
    a=$(counter "$1" "$2" "$3"); t0=$(date +%s.%N)
    sleep 2
    b=$(counter "$1" "$2" "$3"); t1=$(date +%s.%N)
    python3 -c "print('%.0f' % (($b-$a)/($t1-$t0)))"
}

exec > >(tee "$TMP/out.md")
echo "Measured $(date -u '+%F %H:%M UTC') by \`RUNS=$RUNS bench/generator.sh --write-doc\` on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)); load average at the start $(cut -d' ' -f1-3 /proc/loadavg)."

# ---------------------------------------------------------------- 1 and 2: pair
"$LR" lab up "$PAIR" --topology pair >/dev/null
NA=$(ns "$PAIR" a); NB=$(ns "$PAIR" b)
IA=$(iface "$NA"); IB=$(iface "$NB")
B=$(ip -n "$NB" -j -4 addr show dev "$IB" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["addr_info"][0]["local"])')
ip netns exec "$NB" taskset -c 1 "$LR" serve --bind "$B" -q >/dev/null 2>&1 &
SERVER_PIDS+=($!)
# trafgen's full-stack receiver: a UDP socket on port 9 read on CPU 1, as linerate's server
# reads its stream's socket there (-A 0,1).
ip netns exec "$NB" taskset -c 1 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", 9))
while True:
    s.recv(2048)
' &
SERVER_PIDS+=($!)
sleep 0.5
trafgen_cfg "$NA" "$B" 9

# early_drop on|off: b drops every 64-byte UDP test frame (UDP length 26) at its netdev
# ingress hook (nftables), before IP; the streams' 24-byte hellos still reach the server.
early_drop() {
    ip netns exec "$NB" nft delete table netdev lrgen 2>/dev/null || true
    [ "$1" = on ] || return 0
    printf 'table netdev lrgen {\n  chain in { type filter hook ingress device "%s" priority 0; udp dport { 5301, 9 } udp length 26 drop; }\n}\n' "$IB" \
        | ip netns exec "$NB" nft -f -
}
# speed SENDER: b's rx_packets per second over the middle 2 s of a 4 s unpaced run on CPU 0.
speed() {
    local p r want
    case "$1" in
        xdp|afpacket)
            ip netns exec "$NA" "$LR" udp "$B" -l 18 -t 4 --raw-frames --raw-tx "$1" -A 0,1 --json >"$TMP/speed.json" 2>/dev/null &
            p=$!; r=$(rate_mid "$NB" "$IB" rx); wait "$p" || true
            # The path the record names must be the one asked for.
            want=$1; [ "$want" = xdp ] && want=xdp_
            python3 -c "import json,sys; s=[s for s in json.load(open('$TMP/speed.json'))['client']['streams'] if s['role']=='tx'][0]; sys.exit(0 if s.get('raw_tx','').startswith('$want') else 1)" \
                || { echo "bench/generator.sh: linerate --raw-tx $1 did not send through $1" >&2; exit 1; } ;;
        trafgen)
            ip netns exec "$NA" timeout -s INT 4 taskset -c 0 trafgen -o "$IA" -i "$TMP/frame.cfg" -P 1 --no-sock-mem -Q -C >/dev/null 2>&1 &
            p=$!; r=$(rate_mid "$NB" "$IB" rx); wait "$p" || true ;;
    esac
    echo "$r"
}
# ci RATIOS...: mean of paired ratios with its 95% Student-t interval.
ci() { python3 -c '
import sys, statistics as st
v = [float(x) for x in sys.argv[1:]]
t = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
m = st.mean(v)
h = t.get(len(v) - 1, 2.0) * st.stdev(v) / len(v) ** 0.5 if len(v) > 1 else float("nan")
print("%.2f [%.2f, %.2f]" % (m, m - h, m + h))' "$@"; }

echo
echo "## 1. speed: 64-byte frames into a veth, one sender on CPU 0, counted at b's rx_packets"
echo "Paired rounds: each round runs the three senders back to back (order rotated) into the"
echo "same receiver; a ratio is taken within each round, and the table gives the mean of the"
echo "rounds' ratios with its 95% interval (Student t over $RUNS rounds). linerate: \`udp -l 18"
echo "--raw-frames --raw-tx xdp|afpacket -A 0,1\`; trafgen: \`-P 1\` (TX ring), pinned to CPU 0."
echo
echo "| receiver | AF_XDP pps (median) | AF_PACKET ring pps | trafgen pps | AF_XDP / AF_PACKET | AF_XDP / trafgen |"
echo "|---|---|---|---|---|---|"
RUNLOG=()
for regime in full early; do
    if [ "$regime" = early ]; then early_drop on; else early_drop off; fi
    xs=(); as=(); ts=(); r_xa=(); r_xt=()
    order=(xdp afpacket trafgen)
    for run in $(seq "$RUNS"); do
        declare -A rnd=()
        for s in "${order[@]}"; do rnd[$s]=$(speed "$s"); done
        xs+=("${rnd[xdp]}"); as+=("${rnd[afpacket]}"); ts+=("${rnd[trafgen]}")
        r_xa+=("$(ratio "${rnd[xdp]}" "${rnd[afpacket]}")"); r_xt+=("$(ratio "${rnd[xdp]}" "${rnd[trafgen]}")")
        order=("${order[@]:1}" "${order[0]}")
    done
    name="full stack (a UDP socket reads)"; [ "$regime" = early ] && name="early drop (nftables ingress)"
    echo "| $name | $(median "${xs[@]}") | $(median "${as[@]}") | $(median "${ts[@]}") | $(ci "${r_xa[@]}") | $(ci "${r_xt[@]}") |"
    RUNLOG+=("$regime: AF_XDP ${xs[*]}; AF_PACKET ${as[*]}; trafgen ${ts[*]}")
    if [ "$regime" = early ]; then LR_MAX=$(median "${xs[@]}"); TG_MAX=$(median "${ts[@]}"); fi
done
echo
echo "Runs (pps, round by round): ${RUNLOG[0]}. ${RUNLOG[1]}."
echo
echo "Targets: AF_XDP at least 1.2x the AF_PACKET ring and 1.4x trafgen into the full-stack"
echo "receiver, at least 1.8x trafgen into the early-drop one."

echo
echo "## 2. accuracy: linerate paced for 4 s, 64-byte raw frames, achieved = b's rx_packets over the whole run / 4 s"
echo "| offered pps | achieved pps (median) | achieved/offered | runs |"
echo "|---|---|---|---|"
TOP=$(python3 -c "print(int($LR_MAX*0.9))")
for pps in 10000 30000 100000 300000 "$TOP"; do
    [ "$pps" -le "$TOP" ] || continue
    got=()
    for run in $(seq "$RUNS"); do
        # Every frame of the run over the run's 4 s: no window timed around `ip` calls (their
        # jitter was 1-2 % of a 2 s window). The count includes the control connection's and
        # the hello's few dozen packets (under 0.1 % at 10 kpps).
        c0=$(counter "$NB" "$IB" rx)
        ip netns exec "$NA" "$LR" udp "$B" -l 18 -t 4 --raw-frames -A 0,1 -b $((pps * 18 * 8)) --json >/dev/null 2>&1 || true
        c1=$(counter "$NB" "$IB" rx)
        got+=("$(( (c1 - c0) / 4 ))")
    done
    m=$(median "${got[@]}")
    echo "| $pps | $m | $(ratio "$m" "$pps") | ${got[*]} |"
done
kill "${SERVER_PIDS[@]}" 2>/dev/null || true
SERVER_PIDS=()
"$LR" lab down "$PAIR" >/dev/null

# ---------------------------------------------------------------- 3: router
"$LR" lab up "$ROUTER" --topology router >/dev/null
NA=$(ns "$ROUTER" a); NR=$(ns "$ROUTER" r); NB=$(ns "$ROUTER" b)
IA=$(iface "$NA"); IB=$(iface "$NB")
B=$(ip -n "$NB" -j -4 addr show dev "$IB" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["addr_info"][0]["local"])')
# r's interfaces: the one whose peer is a (ingress) and the other (egress).
read -r RIN ROUT < <(ip -n "$NR" -j route get "$B" | python3 -c '
import json,sys,subprocess
out=json.load(sys.stdin)[0]["dev"]
links=json.loads(subprocess.check_output(["ip","-n","'"$NR"'","-j","link","show"]))
inn=[l["ifname"] for l in links if l["ifname"] not in ("lo",out)][0]
print(inn,out)')
ip netns exec "$NB" "$LR" serve --bind "$B" -q >/dev/null 2>&1 &
SERVER_PIDS+=($!)
sleep 0.5
trafgen_cfg "$NA" "$B" 9

# trafgen_try PPS: frames lost in r at PPS over 3 s (r ingress rx - r egress tx), and the rate.
trafgen_try() {
    local i0 o0 i1 o1
    i0=$(counter "$NR" "$RIN" rx); o0=$(counter "$NR" "$ROUT" tx)
    ip netns exec "$NA" timeout -s INT 3 taskset -c 0 trafgen -o "$IA" -i "$TMP/frame.cfg" -P 1 --no-sock-mem -Q -C -b "${1}pps" >/dev/null 2>&1 || true
    sleep 0.3
    i1=$(counter "$NR" "$RIN" rx); o1=$(counter "$NR" "$ROUT" tx)
    echo "$(( (i1 - i0) - (o1 - o0) )) $(( (i1 - i0) / 3 ))"
}
# trafgen_ndr TOP: binary search of trafgen's -b between 0 and TOP, 7 steps (TOP/128). The
# result is the rate r *received* at the highest step without loss (trafgen -b may send less
# than asked), not the rate asked for.
trafgen_ndr() {
    local lo=0 hi=$1 mid lost rate best=0
    for _ in 1 2 3 4 5 6 7; do
        mid=$(( (lo + hi) / 2 ))
        read -r lost rate < <(trafgen_try "$mid")
        if [ "$lost" -le 0 ]; then
            lo=$mid
            [ "$rate" -gt "$best" ] && best=$rate
        else
            hi=$mid
        fi
    done
    echo "$best"
}

ndr_lr=(); ndr_tg=(); st_lr=(); verdicts=()
# The figures that decide an NDR's verdict: the tester's ceiling (the highest rate it reached
# in a trial where it fell short of the offered rate, or its unpaced calibration) against the
# lowest rate at which the router lost frames while the tester kept up.
cat > "$TMP/verdict.py" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["frame_sizes"][0]
g = f["throughput"]["goals"][0]
trials = f["throughput"]["trials"] + ([f["calibration"]] if f.get("calibration") else [])
short = [t["effective_fps"] for t in trials if t.get("tester_limited")]
cal = f.get("calibration") or {}
lost = [t["offered_fps"] for t in f["throughput"]["trials"]
        if not t.get("tester_limited") and t.get("loss_percent", 0) > 0 and t.get("offered_fps")]
paths = sorted({w.get("raw_tx", "?") for t in trials for w in t.get("ways", [])})
print("%s at %.0f fps (tester ceiling %s fps, calibration %.0f fps; lowest lossy rate %s fps; path %s)" % (
    g["status"], g.get("throughput_fps") or 0,
    "%.0f" % max(short) if short else "none",
    cal.get("effective_fps", 0),
    "%.0f" % min(lost) if lost else "none",
    "/".join(paths)))
PY
for run in $(seq "$RUNS"); do
    ip netns exec "$NA" "$LR" rfc2544 "$B" --frame-sizes 64 --line-rate 1G --trial-time 2 \
        --confirm-time 5 --settle 0.2 --resolution 1 --calibrate-time 1 --json > "$TMP/rfc.json" 2>/dev/null || true
    ndr_lr+=("$(python3 -c "import json; g=json.load(open('$TMP/rfc.json'))['frame_sizes'][0]['throughput']['goals'][0]; print('%.0f' % (g.get('throughput_fps') or 0))")")
    st_lr+=("$(python3 -c "import json; print(json.load(open('$TMP/rfc.json'))['frame_sizes'][0]['throughput']['goals'][0]['status'])")")
    verdicts+=("$(python3 "$TMP/verdict.py" "$TMP/rfc.json")")
    ndr_tg+=("$(trafgen_ndr "$TG_MAX")")
done
LRN=$(median "${ndr_lr[@]}"); TGN=$(median "${ndr_tg[@]}")
echo
echo "## 3. router: highest 64-byte rate with no frame lost in r (a - r - b, unshaped)"
echo "| sender | median fps | runs |"
echo "|---|---|---|"
echo "| linerate rfc2544 (NDR, confirmed 5 s) | $LRN | ${ndr_lr[*]} |"
echo "| trafgen -b, loss 0 at r's counters (rate r received) | $TGN | ${ndr_tg[*]} |"
echo "ratio linerate/trafgen: $(ratio "$LRN" "$TGN") (linerate's status per run: ${st_lr[*]})"
echo
echo "Verdict per run (linerate rfc2544, raw frames through --raw-tx auto):"
for v in "${verdicts[@]}"; do echo "- $v"; done
if [ "$WRITE_DOC" = 1 ]; then
    exec >&2
    sleep 0.2
    python3 - "$TMP/out.md" docs/PERFORMANCE.md <<'PY'
import sys
out, doc = sys.argv[1], sys.argv[2]
head = "## RFC 2544 frame generator"
body = open(out, encoding="utf-8").read().replace("\n## ", "\n### ")
intro = """
`bench/generator.sh` (root) measures the raw-frame generator of `linerate rfc2544` against
trafgen (netsniff-ng) in namespaces it builds and removes. Every rate is counted by the kernel's
interface counters (`ip -s -j link`), not by the generators; each figure is the median of
interleaved runs. See the script's header for the method.

"""
text = open(doc, encoding="utf-8").read()
at = text.find(head)
rest = ""
if at >= 0:
    nxt = text.find("\n## ", at + len(head))
    rest = text[nxt:] if nxt >= 0 else ""
    text = text[:at]
text = text.rstrip("\n") + "\n\n" + head + "\n" + intro + body.rstrip("\n") + "\n" + rest
open(doc, "w", encoding="utf-8").write(text)
print("wrote " + doc)
PY
fi
