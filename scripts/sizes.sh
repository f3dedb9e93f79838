#!/usr/bin/env bash
# Measures linerate's stripped static executable for every target, the board's core
# (scripts/cross.sh --board) and the full build, the floor under the board's core (the two
# programs of bench/size-floor built the same way: std alone, std with clap and serde_json;
# scripts/cross.sh --floor), plus the server's peak RSS while it serves
# one TCP test (the x86_64 board build natively; the powerpc board build under
# qemu-ppc-static, whose figure includes the emulator's own memory: a size, never a speed),
# and writes the table into docs/PERFORMANCE.md between the `sizes:` markers (the sizes the
# README and docs/PERFORMANCE.md state are keyed to it: tests/it/figures.rs).
#
# Usage: bash scripts/sizes.sh [TARGET[:BUILD]...]  (default: every target scripts/cross.sh knows)
#        SIZES_BUILDS=board bash scripts/sizes.sh ...   (only these builds: board, full, floor)
#        bash scripts/sizes.sh x86_64-unknown-linux-gnu powerpc-unknown-linux-gnu:board
#          (TARGET:BUILD measures that one build of the target)
# With targets named, the table's rows of the builds this run did not measure are kept as
# they were (their earlier measurement); with none, every row is written again.
# x86_64-pc-windows-gnu (linerate.exe, the full build only: scripts/cross.sh checks its 8 MB
# and its import table) is measured when named.
# A build that fails or that scripts/cross.sh refuses is listed as not measured, with why.
# Release builds are slow (fat LTO, one codegen unit): about 5-15 minutes per build on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu aarch64-unknown-linux-musl
        armv7-unknown-linux-gnueabihf powerpc-unknown-linux-gnu powerpc64-unknown-linux-gnu
        riscv64gc-unknown-linux-gnu)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rows=() floors=()
declare -A built bytes_of floor_std floor_crates
for arg in "${targets[@]}"; do
    t=${arg%%:*}
    builds=${SIZES_BUILDS:-board full floor}
    [ "$arg" != "$t" ] && builds=${arg#*:}
    for build in $builds; do
        if [ "$build" = floor ]; then
            echo "scripts/sizes.sh: $t floor" >&2
            if paths=$(bash scripts/cross.sh "$t" --floor 2>"$tmp/err" | tail -n 2) && [ "$(echo "$paths" | wc -l)" = 2 ]; then
                floor_std[$t]=$(stat -c %s "$(echo "$paths" | head -n 1)")
                floor_crates[$t]=$(stat -c %s "$(echo "$paths" | tail -n 1)")
            else
                why=$(grep -v '^\s*$' "$tmp/err" | tail -n 1 | cut -c1-160 | tr '|' '/')
                floors+=("| $t | not measured: ${why:-build failed} | | | | |")
            fi
            continue
        fi
        flag=$([ "$build" = board ] && echo --board || true)
        echo "scripts/sizes.sh: $t $build" >&2
        if bin=$(bash scripts/cross.sh "$t" $flag 2>"$tmp/err" | tail -n 1) && [ -f "$bin" ]; then
            bytes=$(stat -c %s "$bin")
            if [ "${bin%.exe}" != "$bin" ]; then
                kind="PE32+, imports Windows's own DLLs only"
            else
                kind=$(readelf -h "$bin" | awk '/Type:/ {print ($2 == "DYN") ? "static-pie" : "static"}')
            fi
            built[$t.$build]=$bin
            bytes_of[$t.$build]=$bytes
            rows+=("| $t | $build | $(printf "%'d" "$bytes") | $kind |")
        else
            why=$(grep -v '^\s*$' "$tmp/err" | tail -n 1 | cut -c1-160 | tr '|' '/')
            rows+=("| $t | $build | not measured | ${why:-build failed} |")
        fi
    done
done

# The floor under each measured board build: what std, and std with clap and serde_json,
# weigh before any of linerate's own code, and how much room that leaves under 2 MB.
for t in "${!floor_crates[@]}"; do
    board=${bytes_of[$t.board]:-}
    if [ -n "$board" ]; then
        board_cells="$(printf "%'d" "$board") | $(printf "%'d" $((board - floor_crates[$t])))"
    else
        board_cells="not measured | not measured"
    fi
    floors+=("| $t | $(printf "%'d" "${floor_std[$t]}") | $(printf "%'d" "${floor_crates[$t]}") | $(printf "%'d" $((2000000 - floor_crates[$t]))) | $board_cells |")
done

# Peak RSS (VmHWM) of `serve` while one 3-second TCP test runs against it over loopback.
serve_rss() { # BIN [RUNNER...]
    local port_file="$tmp/port" pid port n
    "$@" serve --bind 127.0.0.1 --port 0 >"$port_file" 2>&1 &
    pid=$!
    for n in $(seq 100); do
        port=$(grep -oE '127\.0\.0\.1:[0-9]+' "$port_file" | head -n 1 | cut -d: -f2 || true)
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "${port:-}" ]; then
        kill "$pid" 2>/dev/null || true
        echo "no port"
        return
    fi
    "${built[x86_64-unknown-linux-gnu.board]}" tcp 127.0.0.1 -p "$port" -t 3 --no-store >/dev/null 2>&1 || true
    # The board build's serve is a parent that forks the serving process (src/sys/
    # supervise.rs): the figure is the serving process's, the parent's beside it.
    local hwm child parent_hwm
    child=$(pgrep -P "$pid" | head -n 1 || true)
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/${child:-$pid}/status" 2>/dev/null || echo "")
    parent_hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "")
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ -n "$child" ]; then
        echo "${hwm:-?} KiB (its supervising parent: ${parent_hwm:-?} KiB, pages shared with it)"
    else
        echo "${hwm:-?} KiB"
    fi
}
rss=()
if [ -n "${built[x86_64-unknown-linux-gnu.board]:-}" ]; then
    rss+=("| x86_64-unknown-linux-gnu | board | $(serve_rss "${built[x86_64-unknown-linux-gnu.board]}") | native |")
    if [ -n "${built[powerpc-unknown-linux-gnu.board]:-}" ] && command -v qemu-ppc-static >/dev/null 2>&1; then
        rss+=("| powerpc-unknown-linux-gnu | board | $(serve_rss qemu-ppc-static "${built[powerpc-unknown-linux-gnu.board]}") | under qemu-ppc-static (its own memory included) |")
    fi
fi

{
    echo "<!-- sizes:begin (written by scripts/sizes.sh on $(date -u +%Y-%m-%d); do not edit by hand) -->"
    echo "| target | build | stripped bytes | linked |"
    echo "|---|---|---:|---|"
    printf '%s\n' "${rows[@]}"
    if ((${#floors[@]})); then
        echo
        echo "The floor under the board's core (bench/size-floor, built the board's way):"
        echo
        echo "| target | std alone | std, clap, serde_json | room under 2,000,000 | board's core | board's core over the floor |"
        echo "|---|---:|---:|---:|---:|---:|"
        printf '%s\n' "${floors[@]}" | sort
    fi
    if ((${#rss[@]})); then
        echo
        echo "Peak RSS of \`linerate serve\` (VmHWM) while it serves one 3-second TCP test on loopback:"
        echo
        echo "| target | build | peak RSS | how |"
        echo "|---|---|---:|---|"
        printf '%s\n' "${rss[@]}"
    fi
    echo "<!-- sizes:end -->"
} >"$tmp/table"
doc=docs/PERFORMANCE.md
if (($# > 0)) && grep -q '<!-- sizes:begin' "$doc"; then
    # Some targets: the old table's other rows stay, this run's replace theirs.
    awk '/<!-- sizes:begin/ { on = 1 } on { print } /<!-- sizes:end -->/ { on = 0 }' "$doc" >"$tmp/old"
    sed -i "1s/;/, the rows of builds it did not measure from before;/" "$tmp/table"
    python3 - "$tmp/old" "$tmp/table" >"$tmp/merged" <<'PY'
import sys

def sections(text):
    """The tables of a sizes block: [(prose lines, header, separator, rows)], in order."""
    out, prose, lines = [], [], text.splitlines()
    i = 0
    while i < len(lines):
        l = lines[i]
        if l.startswith("| target |"):
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(lines[j])
                j += 1
            out.append((prose, l, lines[i + 1], rows))
            prose, i = [], j
        else:
            if not l.startswith("<!-- sizes:"):
                prose.append(l)
            i += 1
    return out

def key(header, row):
    cells = [c.strip() for c in row.strip("|").split("|")]
    return tuple(cells[:2]) if header.startswith("| target | build |") else cells[0]

old, new = (sections(open(f).read()) for f in sys.argv[1:3])
first = open(sys.argv[2]).read().splitlines()[0]
news = {h: (p, s, rows) for p, h, s, rows in new}
lines = [first]
for prose, h, sep, rows in old:
    if h in news:
        fresh = {key(h, r): r for r in news.pop(h)[2]}
        merged = [fresh.pop(key(h, r), r) for r in rows] + list(fresh.values())
    else:
        merged = rows
    lines += prose + [h, sep] + merged
for h, (prose, sep, rows) in news.items():
    lines += prose + [h, sep] + rows
lines.append("<!-- sizes:end -->")
print("\n".join(lines))
PY
    cp "$tmp/merged" "$tmp/table"
fi
cat "$tmp/table" >&2
if grep -q '<!-- sizes:begin' "$doc"; then
    awk -v f="$tmp/table" '
        /<!-- sizes:begin/ { while ((getline l < f) > 0) print l; skip = 1; next }
        /<!-- sizes:end -->/ { skip = 0; next }
        !skip { print }' "$doc" >"$tmp/doc"
    cat "$tmp/doc" >"$doc"
else
    {
        echo
        echo "## Binary sizes per target"
        echo
        echo "\`bash scripts/sizes.sh\` builds every target with scripts/cross.sh (static, stripped; the"
        echo "board's core with \`--board\`, [profile.board]: opt-level \"z\"; the full build with"
        echo "\`--release\`) and writes the table below. Targets: the board build of armv7 and powerpc"
        echo "at most 2 MB (2,000,000 bytes), the full x86_64 build at most 8 MB, the server's peak RSS"
        echo "while it serves one TCP test at most 8 MiB."
        echo
        cat "$tmp/table"
    } >>"$doc"
fi
# The README and docs/PERFORMANCE.md key their sizes to this table: say which no longer match.
echo "scripts/sizes.sh: wrote $doc; cargo test -p linerate --test it figures lists every stated size that no longer matches it" >&2
