#!/usr/bin/env python3
"""Made tests/data/results-v1.db: a results database as schema version 1 wrote it (before
sweeps), with a tcp run and a doctor run. Kept to show how the fixture was made; the test
(store::tests::opens_and_migrates_a_database_made_by_schema_1) only reads the .db file.

usage: make-results-v1.py RUN.json DOCTOR.json OUT.db
(RUN.json: `linerate tcp HOST --json`; DOCTOR.json: `linerate doctor --json`.)
"""
import json
import sqlite3
import sys

V1 = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    command TEXT NOT NULL,
    kind TEXT NOT NULL,
    started_at TEXT NOT NULL,
    stored_at TEXT NOT NULL,
    server TEXT,
    client_host TEXT,
    server_host TEXT,
    tool_version TEXT NOT NULL,
    argv TEXT NOT NULL,
    params TEXT NOT NULL,
    hosts TEXT NOT NULL,
    headline TEXT,
    primary_metric TEXT,
    primary_value REAL,
    exit_code INTEGER,
    record TEXT NOT NULL
);
CREATE TABLE run_tags (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
CREATE INDEX runs_started_at ON runs(started_at);
"""

run = json.load(open(sys.argv[1]))
doctor = json.load(open(sys.argv[2]))
db = sqlite3.connect(sys.argv[3])
db.executescript(V1)
db.execute("PRAGMA user_version = 1")
bps = run["summary"]["flows"][0]["receiver_bps"]
db.execute(
    "INSERT INTO runs (uuid, command, kind, started_at, stored_at, server, client_host, server_host,"
    " tool_version, argv, params, hosts, headline, primary_metric, primary_value, exit_code, record)"
    " VALUES (?, 'tcp', 'run', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'throughput_bps', ?, 0, ?)",
    (
        "6f1c1d2e-0000-4000-8000-000000000001",
        run["started_at"],
        run["started_at"],
        run["plan"]["server"],
        run["client"]["host"].get("hostname"),
        (run.get("server") or {}).get("host", {}).get("hostname"),
        run["tool_version"],
        json.dumps(["linerate", "tcp", run["plan"]["server"]]),
        json.dumps({k: v for k, v in run["plan"].items() if not isinstance(v, (dict, list))}),
        json.dumps({"client": {"host": run["client"]["host"]}}),
        "throughput %.0f bit/s" % bps,
        bps,
        json.dumps(run),
    ),
)
db.execute("INSERT INTO run_tags (run_id, tag) VALUES (1, 'v1')")
db.execute(
    "INSERT INTO runs (uuid, command, kind, started_at, stored_at, server, client_host, server_host,"
    " tool_version, argv, params, hosts, headline, exit_code, record)"
    " VALUES (?, 'doctor', 'doctor', ?, ?, NULL, NULL, NULL, ?, ?, '{}', '{}', 'doctor', 0, ?)",
    (
        "6f1c1d2e-0000-4000-8000-000000000002",
        run["started_at"],
        run["started_at"],
        doctor["tool_version"],
        json.dumps(["linerate", "doctor"]),
        json.dumps(doctor),
    ),
)
db.commit()
db.execute("VACUUM")
db.close()
