"""The benchmark harness (``nox -s bench``) on MariaDB: its smallest pieces run on a fresh
MariaDB database each and drop it afterwards. Nothing here asserts a speed, only that every
measurement of the plan ran and counted its jobs.

The server is ``$ACTA_TEST_MARIADB_DSN`` or the local default; without one these tests skip,
and under CI=true a skip is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil.bench import Plan, run_provider
from anvil.gates import GatePlan
from anvil.workload import Target, _mariadb

pymysql = pytest.importorskip("pymysql")

DSN = os.environ.get("ACTA_TEST_MARIADB_DSN") or "mariadb://root@127.0.0.1:3306/test"

TINY = Plan(
    single=10,
    batch_jobs=30,
    batch_per_call=10,
    drain_warmup_jobs=20,
    drain_seconds=0.01,
    drain_max_jobs=20,
    processes=(1,),
    executors=(4,),
    bell_samples=2,
    poll_samples=2,
    poll=0.05,
    profiles=("buffered",),
    other_profile_drains=(),
    warmups=0,
    runs=1,
    gates=GatePlan(
        lane_jobs=4, lanes=2, laned_jobs=4, key_jobs=2, meter_seconds=0.2, processes=1, executors=4
    ),
)


def _bench_databases() -> set[str]:
    conn = _mariadb(DSN)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE 'acta\\_bench\\_%'")
            return {row[0] for row in cur.fetchall()}
    finally:
        conn.close()


def test_the_bench_measures_mariadb_and_drops_its_ledgers(tmp_path: Path) -> None:
    try:
        before = _bench_databases()
    except pymysql.err.Error as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"MariaDB must run in CI: {exc}")
        pytest.skip(str(exc))
    measurements = run_provider(Target("mariadb", tmp_path, DSN), TINY)

    assert [(m.name, m.params.get("wake")) for m in measurements] == [
        ("enqueue_single", None),
        ("enqueue_batch", None),
        ("drain", None),
        ("pickup", "poll (0.05 s)"),
        ("pickup", "in-process bell"),
        ("gate_lane_single", None),
        ("gate_lanes_round_robin", None),
        ("gate_unlaned", None),
        ("gate_hot_key", None),
        ("gate_meter", None),
    ]
    assert all(m.provider == "mariadb" for m in measurements)
    drain = measurements[2]
    assert drain.runs[0]["jobs"] == 20
    assert _bench_databases() == before
