#!/usr/bin/env python3
"""Helper for bench/run.sh (standard library only).

Subcommands:
  parse KIND FILE       print the figures bench/run.sh needs from one tool's output
  debian-mirror         print "URI<TAB>SUITES<TAB>SIGNED_BY" of the Debian mirror apt already uses
  machine-facts LINERATE
                        print this machine's facts (CPU, kernel, tool versions) as MACHINE_*=value
  report RESULTS META [--doc PATH]
                        print the markdown table (and with --doc, write docs/PERFORMANCE.md);
                        `report bench/doc-run/results.tsv bench/doc-run/meta --doc
                        docs/PERFORMANCE.md` renders the page again from the last doc run

RESULTS is a TSV written by run.sh: run, case, tool, metric, value ("NA" when a test failed).
META is a small key=value file written by run.sh (RUNS, DURATION, LINERATE, loadavg, ...).
"""

import datetime
import glob
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys

LOSS_LIMIT = 0.1  # percent

# --------------------------------------------------------------------------------------------
# parse


# Heading of the section bench/generator.sh writes into docs/PERFORMANCE.md.
GENERATOR_SECTION = "## RFC 2544 frame generator"

def _load_json(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # linerate prints one record; be lenient about anything before the first '{'.
    start = text.find("{")
    if start < 0:
        raise ValueError(f"{path}: no JSON object")
    return json.loads(text[start:])


def _num(v, what):
    if v is None:
        raise ValueError(f"missing {what}")
    return float(v)


def parse(kind, path):
    """Print space-separated numbers for run.sh."""
    if kind == "linerate-tcp":
        flow = _load_json(path)["summary"]["flows"][0]
        print(f"{_num(flow.get('receiver_bps'), 'receiver_bps'):.0f}")
    elif kind == "linerate-udp":
        flow = _load_json(path)["summary"]["flows"][0]
        rx_pps = _num(flow.get("receiver_pps"), "receiver_pps")
        tx_pps = _num(flow.get("sender_pps"), "sender_pps")
        loss = _num(flow.get("loss_percent"), "loss_percent")
        tx_bps = _num(flow.get("sender_bps"), "sender_bps")
        print(f"{rx_pps:.0f} {tx_pps:.0f} {loss:.6f} {tx_bps:.0f}")
    elif kind == "linerate-zc":
        # Throughput, the host's service demand (one host: both ends read the same CPUs),
        # each end's own threads' CPU per KB moved (their system calls, where the copies
        # are made, included), and the zero-copy sends and those the kernel copied.
        d = _load_json(path)
        flow = d["summary"]["flows"][0]
        bps = _num(flow.get("receiver_bps"), "receiver_bps")
        kb = _num(flow.get("receiver_bytes"), "receiver_bytes") / 1024
        ends = {}
        for end in ("client", "server"):
            e = d["summary"].get(end) or {}
            own = _num(e.get("tool_cpu_percent"), f"{end} tool_cpu_percent")
            dur = _num(e.get("duration_ns"), f"{end} duration_ns") / 1e9
            ends[end] = (own / 100 * dur * 1e6 / kb, _num(e.get("service_demand_us_per_kb"), f"{end} service demand"))
        sends = copied = 0
        for end in ("client", "server"):
            for st in (d.get(end) or {}).get("streams", []):
                z = st.get("zerocopy")
                if z:
                    sends += z["sends"]
                    copied += z["copied"]
        print(f"{bps:.0f} {ends['client'][1]:.6f} {ends['client'][0]:.6f} {ends['server'][0]:.6f} {sends} {copied}")
    elif kind == "iperf3-tcp":
        d = _load_json(path)
        if "error" in d:
            raise ValueError(f"iperf3: {d['error']}")
        print(f"{_num(d['end']['sum_received'].get('bits_per_second'), 'bits_per_second'):.0f}")
    elif kind == "iperf3-udp":
        d = _load_json(path)
        if "error" in d:
            raise ValueError(f"iperf3: {d['error']}")
        sent = d["end"]["sum_sent"]
        recv = d["end"]["sum_received"]
        secs_rx = _num(recv.get("seconds"), "seconds")
        secs_tx = _num(sent.get("seconds"), "seconds")
        packets = _num(recv.get("packets"), "packets")
        lost = _num(recv.get("lost_packets"), "lost_packets")
        rx_pps = (packets - lost) / secs_rx
        tx_pps = _num(sent.get("packets"), "packets") / secs_tx
        loss = _num(recv.get("lost_percent"), "lost_percent")
        tx_bps = _num(sent.get("bits_per_second"), "bits_per_second")
        print(f"{rx_pps:.0f} {tx_pps:.0f} {loss:.6f} {tx_bps:.0f}")
    elif kind == "linerate-rr":
        rr = _load_json(path)["rr"]
        tps = _num(rr.get("transactions_per_sec"), "transactions_per_sec")
        p99 = _num((rr.get("latency") or {}).get("p99_ns"), "latency.p99_ns") / 1000
        print(f"{tps:.2f} {p99:.3f}")
    elif kind == "netperf-rr":
        # -P 0 ... -o THROUGHPUT,P99_LATENCY  ->  "55425.73,18"  (trans/s, microseconds)
        f = _last_csv_line(path).split(",")
        print(f"{float(f[0]):.2f} {float(f[1]):.3f}")
    elif kind == "netperf-tcp":
        # -P 0 ... -o THROUGHPUT,THROUGHPUT_UNITS  ->  "17506.95,10^6bits/s"
        line = _last_csv_line(path)
        value, units = line.split(",")[:2]
        if units.strip() != "10^6bits/s":
            raise ValueError(f"netperf: unexpected units {units!r}")
        print(f"{float(value) * 1e6:.0f}")
    elif kind == "netperf-udp":
        # -o THROUGHPUT,THROUGHPUT_UNITS,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS,ELAPSED_TIME
        line = _last_csv_line(path)
        f = line.split(",")
        sent, recvd, elapsed = float(f[2]), float(f[3]), float(f[4])
        if elapsed <= 0 or sent <= 0:
            raise ValueError(f"netperf: bad figures {line!r}")
        rx_pps = recvd / elapsed
        tx_pps = sent / elapsed
        loss = max(0.0, 100.0 * (1.0 - recvd / sent))
        print(f"{rx_pps:.0f} {tx_pps:.0f} {loss:.6f} {tx_pps * 64 * 8:.0f}")
    elif kind == "time-maxrss":
        with open(path, encoding="utf-8") as f:
            m = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", f.read())
        if not m:
            raise ValueError("no 'Maximum resident set size' line")
        print(m.group(1))
    else:
        raise SystemExit(f"unknown parse kind {kind}")


def _last_csv_line(path):
    with open(path, encoding="utf-8") as f:
        lines = [l.strip() for l in f if l.strip() and "," in l]
    if not lines:
        raise ValueError(f"{path}: no CSV line")
    return lines[-1]


# --------------------------------------------------------------------------------------------
# debian-mirror


def debian_mirror():
    """Find the URI apt uses for the main Debian archive (not security), deb822 or one-line."""
    stanzas = []
    for p in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        if os.path.basename(p).startswith("linerate-bench-"):
            continue  # our own entry (non-free only)
        with open(p, encoding="utf-8", errors="replace") as f:
            for block in re.split(r"\n\s*\n", f.read()):
                fields = {}
                for line in block.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" not in fields.get("types", "").split():
                    continue
                for uri in fields.get("uris", "").split():
                    stanzas.append((uri, fields.get("suites", "").split(), fields.get("signed-by", "")))
    one_line = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
    for p in one_line:
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                m = re.match(r"deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
                if m:
                    opts = m.group(1) or ""
                    sb = re.search(r"signed-by=(\S+?)\]?(\s|$)", opts)
                    stanzas.append((m.group(2), [m.group(3)], sb.group(1) if sb else ""))
    codename = _os_release().get("VERSION_CODENAME", "bookworm")
    for uri, suites, signed_by in stanzas:
        if "security" in uri or "debian" not in uri:
            continue
        keep = [s for s in suites if s == codename or s in (f"{codename}-updates",)]
        if codename in keep:
            print(f"{uri}\t{' '.join(keep)}\t{signed_by}")
            return
    # Fall back to the default mirror.
    print(f"http://deb.debian.org/debian\t{codename} {codename}-updates\t")


def _os_release():
    out = {}
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    out[k] = v.strip('"')
    except OSError:
        pass
    return out


# --------------------------------------------------------------------------------------------
# report

TOOLS = ["linerate", "iperf3", "netperf"]

# (cases per tool, metric, label, unit scale, unit label, ratio?). A plain string means the
# same case for every tool.
LIKE = {"linerate": "udpno_unpaced", "iperf3": "udpw_unpaced"}
LIKE_NDR = {"linerate": "udpno_ndr", "iperf3": "udpw_ndr"}
ROWS = [
    ("tcp1", "bps", "TCP, 1 stream, 128 KiB writes", 1e9, "Gbit/s", True),
    ("tcp4", "bps", "TCP, 4 streams (-P 4)", 1e9, "Gbit/s", True),
    ("tcpR", "bps", "TCP reverse, 1 stream (-R; netperf TCP_MAERTS)", 1e9, "Gbit/s", True),
    ("udp_unpaced", "rx_pps", "UDP 64 B, defaults, unpaced: received", 1e3, "kpps", True),
    ("udp_unpaced", "tx_pps", "UDP 64 B, defaults, unpaced: sent", 1e3, "kpps", True),
    ("udp_unpaced", "loss", "UDP 64 B, defaults, unpaced: loss", 1, "%", False),
    ("udp_ndr", "rx_pps", "UDP 64 B, defaults, received at <= 0.1 % loss", 1e3, "kpps", True),
    ("udp_ndr", "rate_pps", "UDP 64 B, defaults, offered rate found (-b)", 1e3, "kpps", False),
    (LIKE, "rx_pps", "UDP 64 B, like-for-like, unpaced: received", 1e3, "kpps", True),
    (LIKE, "loss", "UDP 64 B, like-for-like, unpaced: loss", 1, "%", False),
    (LIKE_NDR, "rx_pps", "**UDP 64 B, like-for-like, received at <= 0.1 % loss**", 1e3, "kpps", True),
    (LIKE_NDR, "rate_pps", "UDP 64 B, like-for-like, offered rate found (-b)", 1e3, "kpps", False),
    ("tcp8", "bps", "TCP, 8 streams (-P 8, RSS run)", 1e9, "Gbit/s", True),
    ("rss", "client_kib", "Peak RSS, client, TCP -P 8", 1024, "MiB", True),
    ("rss", "server_kib", "Peak RSS, server (fresh), TCP -P 8", 1024, "MiB", True),
    ("size", "bytes", "Release binary size (stripped)", 1e6, "MB", True),
    ("rr00", "tps", "**TCP_RR 1 B, both ends on CPU 0 (-A 0,0 / -T 0,0)**", 1e3, "k trans/s", True),
    ("rr00", "p99_us", "TCP_RR 1 B, CPU 0,0: p99 latency", 1, "us", True),
    ("rr01", "tps", "**TCP_RR 1 B, client CPU 0, server CPU 1 (-A 0,1 / -T 0,1)**", 1e3, "k trans/s", True),
    ("rr01", "p99_us", "TCP_RR 1 B, CPU 0,1: p99 latency", 1, "us", True),
    ("crr", "tps", "**TCP_CRR 1 B, a connection per transaction (rr --connect)**", 1e3, "k trans/s", True),
    ("crr", "p99_us", "TCP_CRR 1 B: p99 latency", 1, "us", True),
]


def case_for(cases, tool):
    if isinstance(cases, str):
        return cases
    return cases.get(tool)


def read_results(path):
    """(data, fails, rounds): the values of each (case, metric, tool) in run order, the
    failed runs of each (case, tool), and each (case, metric, tool)'s values by round."""
    data = {}  # (case, metric, tool) -> [values]
    fails = {}  # (case, tool) -> count
    rounds = {}  # (case, metric, tool) -> {round: value}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                continue
            run, case, tool, metric, value = parts
            key = (case, metric, tool)
            if value == "NA":
                fails[(case, tool)] = fails.get((case, tool), 0) + 1
                continue
            data.setdefault(key, []).append(float(value))
            rounds.setdefault(key, {})[run] = float(value)
    return data, fails, rounds


def paired(rounds, case, metric, combine, peer="netperf"):
    """combine(linerate, peer) of each round in which both tools measured `case` (a case
    name, or a dict of each tool's case as in ROWS); a round whose combine gives None (a
    ratio over a peer's 0) is left out.

    >>> r = {("rr00", "tps", "linerate"): {"1": 10.0, "2": 12.0, "10": 9.0},
    ...      ("rr00", "tps", "netperf"): {"1": 5.0, "10": 3.0}}
    >>> paired(r, "rr00", "tps", lambda a, b: a / b)
    [2.0, 3.0]
    >>> r = {("udpno_ndr", "rx_pps", "linerate"): {"1": 300.0, "2": 280.0},
    ...      ("udpw_ndr", "rx_pps", "iperf3"): {"1": 150.0, "2": 0.0}}
    >>> paired(r, LIKE_NDR, "rx_pps", per, peer="iperf3")
    [2.0]
    """
    a = rounds.get((case_for(case, "linerate"), metric, "linerate"), {})
    b = rounds.get((case_for(case, peer), metric, peer), {})
    out = (combine(a[r], b[r]) for r in sorted(a, key=int) if r in b)
    return [v for v in out if v is not None]


def per(a, b):
    """a / b, None when b is 0 (no ratio)."""
    return a / b if b else None


def median_interval(xs, level=0.95):
    """Distribution-free interval of the median of xs (order statistics, sign test): the
    k-th smallest and k-th largest value, with the largest k for which the binomial(n, 1/2)
    probability of fewer than k values below the median is at most (1 - level) / 2 on each
    side. None when there are too few values for any interval at that level (n < 6 at 95 %).

    >>> median_interval([5, 1, 4, 2, 3, 6])
    (1, 6)
    >>> median_interval(list(range(1, 16)))
    (4, 12)
    >>> median_interval([1, 2, 3, 4, 5]) is None
    True
    """
    xs = sorted(xs)
    n = len(xs)
    tail = (1 - level) / 2
    k, below = 0, 0.0
    # below: P(Binomial(n, 1/2) <= k - 1) for the next k.
    while k < n // 2:
        below += math.comb(n, k) / 2**n
        if below > tail:
            break
        k += 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]


# Fewer paired rounds than this give no 95 % interval of their median (median_interval).
MIN_PAIRED = 6


def decide(iv, target, higher=True):
    """A target judged by the 95 % interval of the median of the paired per-round figures:
    "met" when the whole interval is on the target's side (lower end at or above the
    target; for a figure that must stay low, upper end at or below it), "not met" when the
    whole interval is on the other side, "indistinguishable" when the interval holds the
    target or there is no interval (too few rounds).

    Made-up rounds, linerate against netperf trans/s, target 1.0x:

    >>> def rounds(lr, np):
    ...     return {("crr", "tps", "linerate"): {str(i): v for i, v in enumerate(lr, 1)},
    ...             ("crr", "tps", "netperf"): {str(i): v for i, v in enumerate(np, 1)}}
    >>> def judge(lr, np, target=1.0):
    ...     iv = median_interval(paired(rounds(lr, np), "crr", "tps", per))
    ...     return iv, decide(iv, target)
    >>> judge([11, 12, 11, 13, 12, 12], [10, 10, 10, 10, 10, 10])
    ((1.1, 1.3), 'met')
    >>> judge([10, 10, 10, 10, 10, 10], [11, 12, 11, 13, 12, 12])[1]
    'not met'

    The medians alone would call this one not met (0.95x); the paired rounds straddle 1:

    >>> judge([9.5, 12, 8, 10.5, 9, 11], [10, 10, 10, 10, 10, 10])
    ((0.8, 1.2), 'indistinguishable')
    >>> judge([12, 12, 12, 12, 12], [10, 10, 10, 10, 10])
    (None, 'indistinguishable')

    A lower-is-better figure, p99 difference in us against 0 (the interval's upper end
    at 0 meets it):

    >>> decide((-12.0, 0.0), 0, higher=False), decide((1.0, 9.0), 0, higher=False)
    ('met', 'not met')
    >>> decide((-5.0, 4.0), 0, higher=False)
    'indistinguishable'
    """
    if iv is None:
        return "indistinguishable"
    lo, hi = iv
    if higher:
        return "met" if lo >= target else "not met" if hi < target else "indistinguishable"
    return "met" if hi <= target else "not met" if lo > target else "indistinguishable"


def read_meta(path):
    meta = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def fmt(v, scale):
    x = v / scale
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def cell(vals, scale):
    if not vals:
        return "–"
    med = statistics.median(vals)
    if len(vals) == 1:
        return f"{fmt(med, scale)}"
    return f"{fmt(med, scale)} [{fmt(min(vals), scale)}–{fmt(max(vals), scale)}]"


def ratio(a, b):
    if not a or not b:
        return "–"
    mb = statistics.median(b)
    if mb == 0:
        return "–"
    return f"{statistics.median(a) / mb:.2f}x"


def table(data, fails):
    lines = [
        "| Test | unit | linerate | iperf3 | netperf | linerate/iperf3 | linerate/netperf |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cases, metric, label, scale, unit, with_ratio in ROWS:
        vals = {t: data.get((case_for(cases, t), metric, t), []) for t in TOOLS}
        if not vals["linerate"] and not fails.get((case_for(cases, "linerate"), "linerate")):
            continue
        cells = []
        for t in TOOLS:
            c = cell(vals[t], scale)
            nf = fails.get((case_for(cases, t), t), 0)
            if nf and metric in ("bps", "rx_pps", "client_kib", "bytes", "tps"):
                c += f" ({nf} failed)"
            cells.append(c)
        r1 = ratio(vals["linerate"], vals["iperf3"]) if with_ratio else ""
        r2 = ratio(vals["linerate"], vals["netperf"]) if with_ratio else ""
        lines.append(f"| {label} | {unit} | " + " | ".join(cells) + f" | {r1} | {r2} |")
    return "\n".join(lines)


def targets(data, meta, rounds):
    """The targets table. The comparisons with a peer (TCP, UDP, TCP_RR, TCP_CRR) are
    decided by decide() on the paired per-round interval; the ratio of the medians is shown
    beside it and decides nothing. RSS and size are limits on linerate alone."""
    out = []

    def med(case, metric, tool):
        v = data.get((case, metric, tool))
        return statistics.median(v) if v else None

    def status(ok):
        return "**met**" if ok else "**not met**"

    def judged(label, medians, pairs, target, higher, show):
        """A row decided by the paired rounds: pairs are the per-round figures, show
        formats one of them (a ratio or a difference)."""
        iv = median_interval(pairs)
        verdict = decide(iv, target, higher)
        if iv:
            interval = f"{len(pairs)} rounds: median {show(statistics.median(pairs))}, {show(iv[0])} to {show(iv[1])}"
        elif pairs:
            interval = f"{len(pairs)} rounds: too few for a 95 % interval ({MIN_PAIRED} needed)"
        else:
            interval = "no paired round"
        out.append(f"| {label} | {medians} | {interval} | **{verdict}** |")

    def ratio_of_medians(a_key, b_key):
        a, b = med(*a_key), med(*b_key)
        return f"{a / b:.3f}x" if a is not None and b else "–"

    def x(v):
        return f"{v:.3f}x"

    def us(v):
        return f"{v:+.1f} us"

    def missing(label):
        out.append(f"| {label} | not measured | – | **not met** |")

    label = "TCP one stream >= 1.0x iperf3"
    if med("tcp1", "bps", "linerate") is not None and med("tcp1", "bps", "iperf3"):
        judged(
            label,
            ratio_of_medians(("tcp1", "bps", "linerate"), ("tcp1", "bps", "iperf3")),
            paired(rounds, "tcp1", "bps", per, peer="iperf3"),
            1.0,
            True,
            x,
        )
    else:
        missing(label)

    iperf_w = meta.get("IPERF_UDP_WINDOW", "4M")
    label = (
        "UDP 64 B received pps (<= 0.1 % loss) >= 1.5x iperf3, one datagram per packet"
        f" (linerate --no-offload vs iperf3 -w {iperf_w})"
    )
    if med("udpno_ndr", "rx_pps", "linerate") is not None and med("udpw_ndr", "rx_pps", "iperf3"):
        judged(
            label,
            ratio_of_medians(("udpno_ndr", "rx_pps", "linerate"), ("udpw_ndr", "rx_pps", "iperf3")),
            paired(rounds, LIKE_NDR, "rx_pps", per, peer="iperf3"),
            1.5,
            True,
            x,
        )
    else:
        missing(label)
    a, b = med("udp_ndr", "rx_pps", "linerate"), med("udp_ndr", "rx_pps", "iperf3")
    if a is not None and b:
        pairs = paired(rounds, "udp_ndr", "rx_pps", per, peer="iperf3")
        iv = median_interval(pairs)
        interval = f"{len(pairs)} rounds: {iv[0]:.1f}x to {iv[1]:.1f}x" if iv else "–"
        out.append(
            "| context, not a target: the same with each tool's defaults (linerate's UDP GSO/GRO"
            f" carries up to 64 datagrams per packet) | {a / b:.1f}x | {interval} | context |"
        )

    for metric, who in (("client_kib", "client"), ("server_kib", "server")):
        v = data.get(("rss", metric, "linerate"))
        if v:
            worst = max(v) / 1024
            out.append(
                f"| Peak RSS of the {who} <= 32 MiB at TCP -P 8 | {worst:.1f} MiB (worst of {len(v)}) | – | {status(worst <= 32)} |"
            )
        else:
            missing(f"Peak RSS of the {who} <= 32 MiB at TCP -P 8")

    pin = meta.get("PIN", "0,1")
    for case, test, cpus in (("rr00", "TCP_RR", "0,0"), ("rr01", "TCP_RR", "0,1"), ("crr", "TCP_CRR", pin)):
        label = f"{test} trans/s >= 1.0x netperf, CPUs {cpus}"
        if med(case, "tps", "linerate") is not None and med(case, "tps", "netperf"):
            judged(
                label,
                ratio_of_medians((case, "tps", "linerate"), (case, "tps", "netperf")),
                paired(rounds, case, "tps", per),
                1.0,
                True,
                x,
            )
        else:
            missing(label)
        label = f"{test} p99 latency <= netperf's, CPUs {cpus}"
        a, b = med(case, "p99_us", "linerate"), med(case, "p99_us", "netperf")
        if a is not None and b is not None:
            # netperf prints whole microseconds: each round's linerate p99 is rounded to the
            # nearest one before the difference is taken (see the method).
            judged(
                label,
                f"{a:.1f} vs {b:.1f} us",
                paired(rounds, case, "p99_us", lambda l, n: math.floor(l + 0.5) - n),
                0.0,
                False,
                us,
            )
        else:
            missing(label)

    v = data.get(("size", "bytes", "linerate"))
    if v:
        size = v[0]
        out.append(
            f"| Release binary <= 8 MB (8,000,000 bytes) | {size / 1e6:.2f} MB ({int(size):,} bytes) | – | {status(size <= 8_000_000)} |"
        )
    else:
        missing("Release binary <= 8 MB")
    return (
        "| Target | medians: linerate, or linerate / peer | paired rounds: median, 95 % interval | status |\n"
        "| --- | --- | --- | --- |\n" + "\n".join(out)
    )


def _first_line(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        text = (r.stdout or r.stderr).strip()
        return text.splitlines()[0].strip() if text else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "not installed"


MACHINE_ROWS = [
    ("CPUS", "CPUs (nproc)"),
    ("CPU_MODEL", "CPU model"),
    ("KERNEL", "kernel"),
    ("DEBIAN", "Debian"),
    ("LINERATE_VERSION", "linerate"),
    ("IPERF3_VERSION", "iperf3"),
    ("NETPERF_VERSION", "netperf"),
]


def machine_facts(linerate):
    """This machine's facts as MACHINE_KEY=value lines: run.sh appends them to its meta
    file, so a stored doc run renders with the machine it was measured on."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/etc/debian_version", encoding="utf-8") as f:
            debian = f.read().strip()
    except OSError:
        debian = "unknown"
    osr = _os_release().get("PRETTY_NAME", "")
    return {
        "CPUS": str(os.cpu_count()),
        "CPU_MODEL": model,
        "KERNEL": platform.release(),
        "DEBIAN": f"{debian} ({osr})" if osr else debian,
        "LINERATE_VERSION": _first_line([linerate, "--version"]),
        "IPERF3_VERSION": _first_line(["iperf3", "--version"]),
        "NETPERF_VERSION": _first_line(["netperf", "-V"]),
    }


def machine(meta):
    """The machine table: the facts stored in meta (MACHINE_*), else this machine's."""
    live = None
    rows = []
    for key, label in MACHINE_ROWS:
        v = meta.get(f"MACHINE_{key}")
        if v is None:
            live = live or machine_facts(meta.get("LINERATE", "linerate"))
            v = live[key]
        rows.append((label, v))
    rows.append(("load average before / after", f"{meta.get('LOAD_BEFORE', '?')} / {meta.get('LOAD_AFTER', '?')}"))
    return "| | |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def profile_cost(data):
    """The profile group: linerate with and without --profile, side by side."""
    lines = []
    for case, metric, label, scale, unit in (
        ("ptcp", "bps", "TCP, 1 stream, 128 KiB writes", 1e9, "Gbit/s"),
        ("prr", "tps", "TCP_RR 1 B, CPU 0,1", 1e3, "k trans/s"),
    ):
        a, b = data.get((case, metric, "linerate")), data.get((case, metric, "linerate-profile"))
        if not a or not b:
            continue
        cost = (1 - statistics.median(b) / statistics.median(a)) * 100
        ok = "met" if cost <= 3.0 else "NOT met"
        lines.append(f"| {label} | {unit} | {cell(a, scale)} | {cell(b, scale)} | {cost:.1f} % | {ok} |")
    if not lines:
        return ""
    return "\n".join([
        "Profiling cost (--profile at 999 Hz on both ends; target: at most 3 % of the throughput)",
        "",
        "| Test | unit | without | with --profile | cost | target |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ] + lines)


ZC_VARIANTS = [
    ("copy", "send + recv (copy)"),
    ("zerocopy", "--zerocopy"),
    ("sendfile", "--sendfile"),
    ("norx", "--no-rx-copy"),
    ("sendfile_norx", "--sendfile --no-rx-copy"),
]


def zc_table(data):
    """The zc group: linerate against itself with each copy-free option, side by side."""
    def vals(v, metric):
        return data.get((f"zc_{v}", metric, "linerate"), [])

    def r(v, metric):
        return ratio(vals(v, metric), vals("copy", metric)) if v != "copy" else "1"

    if not vals("copy", "bps"):
        return ""
    lines = [
        "| option | Gbit/s | host µs/KB | sender own µs/KB | receiver own µs/KB | "
        "Gbit/s ratio | host demand ratio | sender own ratio | receiver own ratio | zero-copy sends copied |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for v, label in ZC_VARIANTS:
        if not vals(v, "bps"):
            continue
        sends, copied = sum(vals(v, "zc_sends")), sum(vals(v, "zc_copied"))
        zc = f"{copied:.0f} of {sends:.0f}" if sends else "–"
        lines.append(
            f"| {label} | {cell(vals(v, 'bps'), 1e9)} | {cell(vals(v, 'host_sd'), 1)} | "
            f"{cell(vals(v, 'snd_own_sd'), 1)} | {cell(vals(v, 'rcv_own_sd'), 1)} | "
            f"{r(v, 'bps')} | {r(v, 'host_sd')} | {r(v, 'snd_own_sd')} | {r(v, 'rcv_own_sd')} | {zc} |"
        )
    return "\n".join(lines)


def report(results, meta_path, doc=None):
    data, fails, rounds = read_results(results)
    meta = read_meta(meta_path)
    zc = zc_table(data)
    if zc:
        print(zc)
        print()
    if not data.get(("tcp1", "bps", "linerate")) and not any(
        k[0] in ("udp_unpaced", "rss", "rr00") for k in data
    ):
        return
    tbl = table(data, fails)
    tgt = targets(data, meta, rounds)
    print(tbl)
    print()
    print(tgt)
    pc = profile_cost(data)
    if pc:
        print()
        print(pc)
    if doc is None:
        return
    runs, dur = meta.get("RUNS", "?"), meta.get("DURATION", "?")
    rr_runs = meta.get("RR_RUNS", runs)
    min_paired = MIN_PAIRED
    steps = meta.get("UDP_STEPS", "6")
    pin = meta.get("PIN", "0,1")
    rmem_default = meta.get("RMEM_DEFAULT", "?")
    rmem_max = meta.get("RMEM_MAX", "?")
    tw_max = meta.get("TW_MAX", "?")
    iperf_w = meta.get("IPERF_UDP_WINDOW", "4M")
    date = meta.get("DATE") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    elapsed = meta.get("ELAPSED", "?")
    text = f"""# linerate performance

Generated by `bench/run.sh --write-doc`; do not edit by hand: rerun the script instead.
Every number below was measured by that run; nothing here is a hand-written claim.

## What is measured and how

linerate is compared with iperf3 and netperf on the loopback interface (127.0.0.1 only) of
one machine, client and server on the same host.

- **Interleaved runs.** Each case is run {runs} times, {dur} s each, and the TCP_RR and
  TCP_CRR cases {rr_runs} times (the rounds after the {runs}th run those cases alone). The
  runs are interleaved round-robin (run 1 of every tool and case, then run 2, ...), and the
  order of the tools rotates from one round to the next, so slow drifts of the machine hit
  every tool alike.
- **Medians.** Each cell is the median of the runs, with [min–max] beside it. The ratio
  columns are the ratio of the medians (linerate / peer); above 1 means linerate is faster
  (or, for RSS and size, larger).
- **Noise.** Run-to-run noise on this machine is 10–20 % (shared 2-core host, other jobs may
  run on it); only ratios measured side by side in the same run of the script count. Compare
  absolute numbers across machines or dates with care. When other jobs load the machine
  (see the load average below) the spread can be much wider, as the [min–max] ranges show.
- **Pinned ends.** Every test pins the client and the server to fixed CPUs: the stream
  tests (TCP, UDP, the RSS run) and TCP_CRR to CPUs {pin} (linerate `-A {pin}`, iperf3
  `-A {pin}`, netperf `-T {pin}`), TCP_RR to its own placements below. Left to the
  scheduler, loopback TCP on this 2-CPU machine swings from 17 to 42 Gbit/s between runs of
  the same tool, with where sender and receiver happen to run; pinned, every tool gets the
  same placement in every run.
- **TCP.** Receiver throughput: linerate `.summary.flows[0].receiver_bps`, iperf3
  `end.sum_received.bits_per_second`, netperf `THROUGHPUT` (10^6 bits/s). 128 KiB writes
  (`-l 128K`, netperf `-m 131072`). Reverse is `-R` (netperf `TCP_MAERTS`, remote send size
  131072).
- **UDP, 64-byte datagrams.** First an unpaced run (linerate `udp -l 64` without `-b`,
  iperf3 `-u -l 64 -b 0`, netperf `UDP_STREAM -m 64`). If its loss is at most 0.1 %, its
  received packets per second are the result. Otherwise the offered rate (`-b`) is
  binary-searched between 0 and the unpaced sender rate, {steps} steps, for the highest
  rate with loss <= 0.1 %, and the received pps at that rate is reported (0 if no step
  passed). netperf cannot pace (built without `--enable-burst`), so it only has the unpaced
  row (it appears in the "<= 0.1 % loss" row only when its unpaced loss was that low).
  Two comparisons are made:
  - *defaults*: each tool as it comes. linerate then uses UDP GSO/GRO where the kernel has
    them, sendmmsg/recvmmsg, and asks for a 4 MiB receive buffer; iperf3 and netperf send one
    datagram per system call and keep the system's default receive buffer
    (net.core.rmem_default = {rmem_default} bytes here). On loopback a GSO super-packet of
    up to 64 datagrams reaches a GRO-enabled receiving socket whole, never split, so
    linerate's default figure counts datagrams that the stack carried up to 64 at a time.
    It is shown for context; no target is judged on it.
  - *like-for-like*: linerate `--no-offload` (one datagram per packet through the stack,
    still batched system calls) against iperf3 `-w {iperf_w}` (the receive buffer linerate
    asks for; net.core.rmem_max = {rmem_max} here, left unchanged): both tools put one
    datagram in each packet and read with the same socket buffer. The UDP target is
    defined on this comparison. netperf has no column in these rows.

  The "offered rate found" rows give the `-b` rate (in 64-byte datagrams per second) at which
  the received figure was measured; received can be lower than offered with no loss when the
  sender cannot keep up with the rate it was asked for.
- **Memory.** linerate client and a freshly started linerate server, TCP `-P 8`: client peak
  RSS from `/usr/bin/time -v` ("Maximum resident set size"), server `VmHWM` from
  `/proc/PID/status` after the test. The target is judged on the worst run.
- **Binary size.** `stat -c %s` of the release binary (the release profile strips symbols).
- **TCP_RR.** 1-byte request and response, one transaction in flight: linerate
  `rr -A C,S` against netperf `-t TCP_RR -T C,S`, both ends on CPU 0 (`0,0`) and split
  (`0,1`). Transactions per second (linerate `.rr.transactions_per_sec`, netperf
  `THROUGHPUT`) and p99 latency (linerate `.rr.latency.p99_ns` from its HDR histogram, 0.1 %
  resolution; netperf `P99_LATENCY`, from its own histogram of `gettimeofday` differences,
  which netperf prints in whole microseconds). For p99 a ratio below 1 means linerate's is
  lower. The p99 targets compare at netperf's resolution: each round's linerate p99 rounded
  to the nearest whole microsecond against netperf's of the same round, so that a
  difference netperf cannot show decides nothing either way.
- **Targets: paired rounds.** Every target that compares linerate with a peer (TCP and UDP
  with iperf3, TCP_RR and TCP_CRR with netperf) is decided by the rounds, not by the ratio
  of the medians: each round gives one paired figure (linerate's run over the peer's run of
  the same round; for p99, linerate's p99 rounded to netperf's whole microseconds minus
  netperf's), and the table gives the median of these and a 95 % interval of that median
  (distribution-free, from order statistics; {min_paired} rounds at least give one). A
  target is **met** when the whole interval lies on its side (for a ratio, the lower end at
  or above the target; for p99, the upper end at or below 0 us), **not met** when the whole
  interval lies on the other side, and **indistinguishable** when the interval holds the
  target: the two tools could not be told apart in this run, whichever side of the line the
  medians fell. The ratio of the medians is shown beside it and decides nothing: this
  machine moves whole runs of either tool between a fast and a slow state (the [min–max]
  ranges), and pairing within a round cancels what the two runs of a round share. The TCP_RR
  and TCP_CRR ratios sit near 1 (linerate and netperf make the same system calls per TCP_RR
  transaction; per TCP_CRR one, linerate's client fewer: no bind, setsockopt or getsockopt,
  and both wait on the same wake-ups), so these cases get more rounds. RSS and the binary's
  size are limits on linerate alone, judged on the worst run and the one measurement.
- **TCP_CRR.** The same with a new TCP connection per transaction (linerate `rr --connect`,
  netperf `-t TCP_CRR`), pinned to CPUs {pin}. Each transaction leaves a TIME_WAIT socket on the
  host (on the server's side with both tools); the interleaved runs give both tools the same
  backlog. At ~10k transactions/s the table reaches its cap (`net.ipv4.tcp_max_tw_buckets`,
  {tw_max} here) in seconds; past it the kernel closes sockets without TIME_WAIT, so TCP_CRR rates
  depend on how much TCP_CRR ran in the last minute, and only the interleaved ratios compare.

Run: {date}, {runs} runs × {dur} s ({rr_runs} for TCP_RR and TCP_CRR), total {elapsed} s.

## Machine

{machine(meta)}

## Results

{tbl}

## Targets

{tgt}

## Reproduce

```sh
RUNS={runs} RR_RUNS={rr_runs} DURATION={dur} bench/run.sh --write-doc
```

`bench/run.sh` installs iperf3, netperf (Debian non-free) and GNU time when missing, builds
linerate in release mode (or uses `LINERATE=/path/to/linerate`), starts the three servers on
127.0.0.1 and stops them at exit. `--write-doc` keeps the run's raw figures (every tool's
value of every case in every round) and its facts in `bench/doc-run/`;
`python3 bench/report.py report bench/doc-run/results.tsv bench/doc-run/meta --doc docs/PERFORMANCE.md`
renders this page again from them.
"""
    # The generator section belongs to bench/generator.sh --write-doc: keep it.
    try:
        with open(doc, encoding="utf-8") as f:
            old = f.read()
        at = old.find(GENERATOR_SECTION)
        if at >= 0:
            text = text.rstrip("\n") + "\n\n" + old[at:]
    except OSError:
        pass
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"\nwrote {doc}", file=sys.stderr)


def main(argv):
    if len(argv) >= 3 and argv[0] == "parse":
        try:
            parse(argv[1], argv[2])
        except (ValueError, KeyError, IndexError, TypeError, json.JSONDecodeError, OSError) as e:
            print(f"parse {argv[1]} {argv[2]}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 2 and argv[0] == "machine-facts":
        for k, v in machine_facts(argv[1]).items():
            print(f"MACHINE_{k}={v}")
        return 0
    if argv and argv[0] == "debian-mirror":
        debian_mirror()
        return 0
    if len(argv) >= 3 and argv[0] == "report":
        doc = None
        if len(argv) >= 5 and argv[3] == "--doc":
            doc = argv[4]
        report(argv[1], argv[2], doc)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
