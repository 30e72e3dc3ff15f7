"""Every statement the dashboard runs reads jobs, runtime and events through an index on
PostgreSQL, with no exception.

Two ledgers of some thousands of jobs, built through acta's own verbs: backlog-heavy (almost
every job ready) and history-heavy (almost every job cancelled, most of them more than an hour
before the overview's instant), each with a real worker run for a few, so there are finished
jobs, events, alerts and workers. Each is checked twice: VACUUM ANALYZEd (the visibility map
lets the counts run index-only, as on a ledger autovacuum keeps), and ANALYZEd only (as
right after a burst, before autovacuum came by: an index walk then visits the heap too, and
a pass over the table looks cheaper). Each page's reads are captured with their real
parameters and EXPLAINed. The planner must pick an index on both: a count that walks a
partial index on the backlog-heavy ledger is the case where a whole-table pass looks cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from acta import Acta
from acta.dashboard import queries
from acta.dashboard.filters import parse
from acta.dashboard.source import Source
from acta_testing import Host
from tests.dashboard.plans import capture_ops, nodes, plan

JOBS = 6000
CAP = 1000
"""The count cap in this test: below the ledger's backlog, as 10,000 is below a real one's."""
COUNTING_READS = {"dash_job_counts", "dash_backlog"}
COUNTING_INDEXES = {"runtime_by_status", "runtime_leases", "runtime_lane_line"}


@pytest.fixture(params=["postgres"])
def acta_provider(request: pytest.FixtureRequest) -> Any:
    schemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider(max_connections=4) as provider:
        yield provider


@pytest.mark.parametrize("vacuumed", [True, False], ids=["vacuumed", "analyzed-only"])
@pytest.mark.parametrize("ledger", ["backlog-heavy", "history-heavy"])
def test_no_dashboard_statement_scans_jobs_runtime_or_events(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Any,
    ledger: str,
    vacuumed: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A ledger of thousands stands in for one of millions: the cap it counts to is lowered
    # with it, so its backlog is past the cap as a real backlog is past 10,000. Below the
    # cap every count reads its whole range, and on a table this small a pass over it is
    # then truly the cheaper plan.
    monkeypatch.setattr(queries, "COUNT_CAP", CAP)

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
    if ledger == "history-heavy":
        # Almost the whole ledger finished, most of it before the overview's window.
        acta_app.repairs.cancel_many(name="mail.send", reason="test: history")
        acta_host.advance("2h")
        acta_app.repairs.cancel_many(name="bill.charge", tag="t1", reason="test: recent")
    for _ in range(3):
        acta_host.tick()  # a few claims: finished jobs, events, an alert, a live worker
    schema = acta_provider.schema
    dsn = acta_provider.target.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        by_status = dict(
            conn.execute(f'SELECT status, count(*) FROM "{schema}".runtime GROUP BY 1').fetchall()
        )
        finished = sum(n for status, n in by_status.items() if status >= 100)
        if ledger == "history-heavy":
            assert finished > JOBS * 0.6, by_status
        else:
            assert by_status.get(10, 0) > JOBS * 0.9, by_status
        for table in (
            "jobs",
            "runtime",
            "events",
            "job_tags",
            "definitions",
            "workers",
            "tenants",
        ):
            conn.execute(f'{"VACUUM ANALYZE" if vacuumed else "ANALYZE"} "{schema}".{table}')

    source = Source(acta_app)
    ref = source.jobs(parse({}, []))["jobs"][0]["job_ref"]
    reads: list[Callable[[], object]] = [
        source.overview,
        source.workers,
        source.definitions,
        source.namespaces,
        source.schedules,
        source.gates,
        lambda: source.job(ref),
        lambda: source.tenants(None, 50),
        lambda: source.tenants("tenant-05", 5),
    ]
    for query in (
        {},
        {"status": "failed"},
        {"error": "refused"},
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
            assert not scanned, f"{ledger} {op.statement} {dict(op.params)}: seq scan {scanned}"
            if op.statement in COUNTING_READS:
                # The overview's counts read runtime through the index made for them (the
                # lease index for leased jobs, or the blocked-only lane index for blocked
                # ones), each one a range with a LIMIT; a bitmap scan names its index on a
                # node of its own.
                used = {
                    str(n["Index Name"])
                    for n in nodes(tree)
                    if str(n.get("Index Name", "")).startswith("runtime_")
                }
                assert used <= COUNTING_INDEXES, (ledger, op.statement, used)
                assert "runtime_by_status" in used, (ledger, op.statement, used)
            checked.add(op.statement)
    assert {
        "dash_job_counts",
        "dash_backlog",
        "dash_throughput",
        "dash_jobs",
        "dash_job_view",
        "dash_tenants",
    } <= checked
