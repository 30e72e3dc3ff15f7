"""Every statement the dashboard runs reads jobs and events through an index on PostgreSQL.

A ledger of some thousands of jobs (batch enqueues, then a real worker run for some of them,
so there are finished jobs, events, alerts and workers) is ANALYZEd; each page's reads are
captured with their real parameters and EXPLAINed. jobs and events, the tables that grow
without bound, must never be read by a sequential scan. runtime is read whole by one statement
only, on purpose: ``dash_job_groups`` counts every job by status for the overview, and a count
of every row costs one pass whatever the index (docs/benchmarks/dashboard-overview.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from acta import Acta
from acta.dashboard.filters import parse
from acta.dashboard.source import Source
from acta_testing import Host
from tests.dashboard.plans import capture_ops, nodes, plan

JOBS = 6000
WHOLE_RUNTIME_READS = {"dash_job_groups"}


@pytest.fixture(params=["postgres"])
def acta_provider(request: pytest.FixtureRequest) -> Any:
    schemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider(max_connections=4) as provider:
        yield provider


def test_no_dashboard_statement_scans_jobs_or_events(
    acta_app: Acta, acta_host: Host, acta_provider: Any
) -> None:
    @acta_app.job("mail.send")
    def send(n: int) -> int:
        return n

    @acta_app.job("bill.charge", max_attempts=1)
    def charge(n: int) -> None:
        raise RuntimeError(f"declined {n}")

    for n in range(20):
        acta_app.tenants.register(f"tenant-{n:02}")
    for first in range(0, JOBS, 2000):
        acta_app.enqueue_batch(
            [
                acta_app.request(
                    "mail.send" if i % 2 else "bill.charge",
                    i,
                    tags=[f"t{i % 5}"],
                    tenant=f"tenant-{i % 20:02}" if i % 3 == 0 else None,
                )
                for i in range(first, first + 2000)
            ]
        )
    for _ in range(3):
        acta_host.tick()  # a few claims: finished jobs, events, an alert, a live worker
    schema = acta_provider.schema
    dsn = acta_provider.target.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in (
            "jobs",
            "runtime",
            "events",
            "job_tags",
            "definitions",
            "workers",
            "tenants",
        ):
            conn.execute(f'ANALYZE "{schema}".{table}')

    source = Source(acta_app)
    ref = source.jobs(parse({}, []))["jobs"][0]["job_ref"]
    reads: list[Callable[[], object]] = [
        source.overview,
        source.workers,
        source.definitions,
        source.namespaces,
        lambda: source.job(ref),
        lambda: source.tenants(None, 50),
        lambda: source.tenants("tenant-05", 5),
    ]
    for query in (
        {},
        {"status": "failed"},
        {"status": "ready", "job": "mail.send"},
        {"tag": "t3"},
        {"correlation_key": "order-1"},
        {"tenant": "tenant-03"},
        {"tenant": "tenant-07", "status": "ready"},
        {"created_from": "2026-01-01T00:00:00Z", "before": "100"},
    ):
        reads.append(lambda q=query: source.jobs(parse(q, list(q))))
    checked: set[str] = set()
    for read in reads:
        for op in capture_ops(acta_app, read):
            tree = plan(dsn, acta_app, op)
            scanned = [
                n["Relation Name"]
                for n in nodes(tree)
                if n["Node Type"] == "Seq Scan"
                and n.get("Relation Name") in ("jobs", "events", "runtime")
            ]
            allowed = {"runtime"} if op.statement in WHOLE_RUNTIME_READS else set()
            assert set(scanned) <= allowed, f"{op.statement} {dict(op.params)}: seq scan {scanned}"
            checked.add(op.statement)
    assert {
        "dash_job_groups",
        "dash_throughput",
        "dash_jobs",
        "dash_job_view",
        "dash_tenants",
    } <= checked
