#!/usr/bin/env bash
# What the board's core is made of on TARGET: cargo-bloat's sizes of every function in the
# board build (scripts/cross.sh TARGET --board, built again unstripped in target/bloat),
# summed into linerate's own code, serde and serde_json, clap, std, and the C library and
# compiler runtime. The sums are of .text only, and cargo-bloat attributes an inlined or
# generic function to one crate by its symbol's name: a close estimate, not an exact count.
# docs/PERFORMANCE.md ("Binary sizes per target") quotes it for armv7 and powerpc.
#
# Usage: bash scripts/bloat.sh TARGET   (installs cargo-bloat when it is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# != 1 ]; then
    echo "usage: bash scripts/bloat.sh TARGET  (a target of scripts/cross.sh)" >&2
    exit 2
fi
target=$1
command -v cargo-bloat >/dev/null 2>&1 || cargo install --locked cargo-bloat >&2
eval "$(bash scripts/cross.sh "$target" --env)"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
CARGO_PROFILE_BOARD_STRIP=none CARGO_TARGET_DIR=target/bloat cargo bloat --target "$target" \
    -p linerate --no-default-features --features board --profile board -n 0 \
    --message-format json >"$json"
python3 - "$json" "$target" <<'PY'
import collections, json, re, sys

data = json.load(open(sys.argv[1]))
parts = collections.Counter()
for f in data["functions"]:
    # cargo-bloat marks a guessed crate with a trailing "?" and leaves out an unknown one.
    name, crate = f["name"], f.get("crate", "").rstrip("?")
    if re.search(r"serde|Serialize|Deserialize|json", name) or crate.startswith("serde"):
        part = "serde and serde_json (every record's reader and writer)"
    elif "clap" in name or crate.startswith("clap"):
        part = "clap (its builder and the derived command line)"
    elif crate.startswith("linerate"):
        part = "linerate's own code"
    elif crate == "std":
        part = "std"
    elif crate in ("", "[Unknown]"):
        part = "C library and compiler runtime (no crate)"
    else:
        part = "other crates"
    parts[part] += f["size"]
print(f"{sys.argv[2]}, board build: .text {data['text-section-size']:,} bytes, file (unstripped) {data['file-size']:,}")
for part, size in parts.most_common():
    print(f"{size:>12,}  {part}")
PY
