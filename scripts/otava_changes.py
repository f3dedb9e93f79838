#!/usr/bin/env python3
"""Change points of series by Apache Otava (the E-divisive detector Hunter introduced),
for linerate-stats' cross-check (crates/linerate-stats/tests/otava.rs).

Reads {"name": [values, ...], ...} as JSON on stdin; prints {"name": [index, ...], ...},
each index being the first point after a change (0-based), the way linerate numbers them.
"""
import json
import sys

from otava.analysis import compute_change_points


def main() -> int:
    series = json.load(sys.stdin)
    out = {}
    for name, values in series.items():
        points, _weak = compute_change_points(values, window_len=50, max_pvalue=0.001)
        out[name] = sorted(int(cp.index) for cp in points)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
