"""Checks the records of scripts/wine-test.sh: both ends' bytes, datagrams and transactions
agree exactly, every linerate record validates against the published schema, the Windows
end has its CPU and process-CPU sections and its host's TCP and UDP counters, and
SIO_TCP_INFO's absence is one warning.

Usage: python3 scripts/wine/check.py DIR SCHEMA
"""
import json
import sys
from pathlib import Path

import jsonschema

out, schema_path = Path(sys.argv[1]), Path(sys.argv[2])
schema = json.loads(schema_path.read_text())
failures = []


def fail(name, why):
    failures.append(f"{name}: {why}")


def check_record(name, windows_side):
    rec = json.loads((out / name).read_text())
    try:
        jsonschema.validate(rec, schema)
    except jsonschema.ValidationError as e:
        fail(name, f"does not validate against {schema_path}: {e.message}")
    c, s = rec.get("client") or {}, rec.get("server") or {}
    ct, st = c.get("totals") or {}, s.get("totals") or {}
    pairs = [("tx_bytes", "rx_bytes"), ("rx_bytes", "tx_bytes")]
    if "udp" in name:
        pairs.append(("tx_packets", "rx_packets"))
    for a, b in pairs:
        if ct.get(a) != st.get(b):
            fail(name, f"client {a} {ct.get(a)} != server {b} {st.get(b)}")
    moved = ct.get("tx_bytes", 0) + ct.get("rx_bytes", 0)
    if moved <= 0:
        fail(name, "no bytes moved")
    if windows_side is None:
        return
    w = rec.get(windows_side) or {}
    for section in ("cpu", "process_cpu"):
        if not w.get(section):
            fail(name, f"the Windows end ({windows_side}) has no {section} section")
    # The host's TCP and UDP counters (the IP Helper API, by /proc/net/snmp's names) of a
    # stream test (an RR test's end has none).
    snmp = (w.get("host_counters") or {}).get("snmp") or {}
    proto = "Udp.OutDatagrams" if "udp" in name else "Tcp.OutSegs"
    if "rr" not in name and proto not in snmp:
        fail(name, f"the Windows end's host counters have no {proto}: {sorted(snmp)[:8]}")
    tcp_info = [x for x in w.get("warnings", []) if "TCP_INFO not readable" in x]
    # One TCP connection's worth of TCP_INFO (tcp, rr; TCP_CRR's connections have none).
    if ("tcp" in name or name.endswith("-rr.json")) and len(tcp_info) != 1:
        fail(name, f"{len(tcp_info)} warnings about TCP_INFO on the Windows end, not 1: {tcp_info}")


def check_rr(name, windows_side):
    """Every request sent had its response: the transactions are the server's responses."""
    check_record(name, windows_side)
    rec = json.loads((out / name).read_text())
    rr, s = rec.get("rr") or {}, (rec.get("server") or {}).get("totals") or {}
    n, resp = rr.get("transactions", 0), rr.get("response_bytes", 0)
    if n <= 0:
        fail(name, "no transactions")
    elif s.get("tx_bytes") != n * resp:
        fail(name, f"{n} transactions of {resp} bytes, the server sent {s.get('tx_bytes')} bytes")


for name in ["wserve-tcp.json", "wserve-tcp-R.json", "wserve-udp.json"]:
    check_record(name, "server")
for name in ["wclient-tcp.json", "wclient-tcp-R.json", "wclient-udp.json"]:
    check_record(name, "client")
check_rr("wserve-rr.json", "server")
check_rr("wserve-crr.json", "server")
check_rr("wclient-rr.json", "client")
check_rr("wclient-crr.json", "client")

# iperf3's client against linerate.exe serve: iperf3's own end and linerate's agree.
ip = json.loads((out / "iperf3c-wserve.json").read_text())
if "error" in ip:
    fail("iperf3c-wserve.json", ip["error"])
else:
    end = ip["end"]
    sent, received = end["sum_sent"]["bytes"], end["sum_received"]["bytes"]
    if sent != received or sent <= 0:
        fail("iperf3c-wserve.json", f"iperf3 sent {sent} bytes, the server received {received}")

# linerate.exe against iperf3 -s: the record holds iperf3's end.
rec = json.loads((out / "wclient-iperf3.json").read_text())
try:
    jsonschema.validate(rec, schema)
except jsonschema.ValidationError as e:
    fail("wclient-iperf3.json", f"does not validate: {e.message}")
sent = (rec.get("client") or {}).get("totals", {}).get("tx_bytes")
got = (rec.get("server") or {}).get("totals", {}).get("rx_bytes")
if sent is None or sent != got or sent <= 0:
    fail("wclient-iperf3.json", f"linerate.exe sent {sent} bytes, iperf3 received {got}")

if failures:
    print("wine-test: FAILED\n" + "\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("wine-test: records agree at both ends and validate", file=sys.stderr)
