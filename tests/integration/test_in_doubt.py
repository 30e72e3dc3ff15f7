"""Writes whose commit reply is lost (in doubt), on PostgreSQL through the fault proxy.

The proxy lets the server run a statement, COMMIT included, and drops its reply: the client sees
a dropped connection and must retry without knowing whether anything was written. Each spec aims
the drop at one statement's SQL text, so the fault is deterministic; the manual clock drives the
worker. After the retry the ledger must read as if the reply had arrived: no orphan lease, no
false write-fenced event, nothing charged, and the worker's own answer right.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobStatus
from acta.ledger.claim import claim, start_many
from acta.provider.postgres import PostgresProvider
from acta.provider.postgres.provider import ATTEMPTS
from acta_testing import Host
from acta_testing.faultproxy import FaultProxy, postgres_proxy

if TYPE_CHECKING:
    import psycopg

    from acta_testing.schemas import PostgresSchemas

# Pieces of SQL text that only one statement sends (see the dialect's fused.sql/worker.sql).
FUSED_SETTLE = b".settle_batch("
FUSED_CLAIM = b".claim_batch("
FUSED_START = b".start_batch("


@pytest.fixture
def proxy(request: pytest.FixtureRequest) -> Iterator[FaultProxy]:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with postgres_proxy(schemas.dsn) as running:
        yield running


@pytest.fixture
def acta_provider(request: pytest.FixtureRequest, proxy: FaultProxy) -> Iterator[PostgresProvider]:
    """A PostgreSQL ledger reached through the proxy."""
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = schemas.take()
    provider = PostgresProvider(proxy.dsn(schemas.dsn), schema=name, max_connections=4)
    try:
        yield provider
    finally:
        provider.close()
        schemas.give_back(name)


@pytest.fixture
def admin(request: pytest.FixtureRequest) -> Iterator[psycopg.Connection[Any]]:
    """A direct connection (not through the proxy) for assertions and triggers."""
    import psycopg

    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with psycopg.connect(schemas.dsn, autocommit=True) as conn:
        yield conn


def _codes(admin: Any, schema: str, job_id: int) -> list[int]:
    rows = admin.execute(
        f'SELECT code FROM "{schema}".events WHERE job_id = %s ORDER BY id', [job_id]
    ).fetchall()
    return [code for (code,) in rows]


def test_a_settle_whose_commit_reply_is_lost_is_not_recorded_as_fenced(
    acta_app: Acta, acta_host: Host, proxy: FaultProxy
) -> None:
    runs: list[int] = []

    @acta_app.job("ship-parcel")
    def ship() -> str:
        runs.append(1)
        proxy.drop_reply_to(FUSED_SETTLE)  # the settle commits; its reply never arrives
        return "shipped"

    assert acta_host.tick() == "nothing-claimed"  # registers the worker
    ref = ship.enqueue()
    assert acta_host.tick() == "completed"  # not lease-lost: the write was its own
    assert proxy.counts["dropped_replies"] == 1
    job = acta_host.job(ref)
    assert job.status is JobStatus.SUCCEEDED and job.executions == 1 and runs == [1]
    names = acta_host.event_names(ref)
    assert names.count("execution-finished") == 1 and names.count("succeeded") == 1
    assert "write-fenced" not in names
    assert acta_app.result(ref) == "shipped"


def test_a_claim_whose_commit_reply_is_lost_leaves_no_orphan_lease(
    acta_app: Acta, acta_host: Host, proxy: FaultProxy
) -> None:
    runs: list[int] = []

    @acta_app.job("ship-parcel", max_attempts=1)
    def ship() -> str:
        runs.append(1)
        return "shipped"

    assert acta_host.tick() == "nothing-claimed"  # registers the worker
    ref = ship.enqueue()
    proxy.drop_reply_to(FUSED_CLAIM)
    assert acta_host.tick() == "completed"  # the retry found the job its first try leased
    assert proxy.counts["dropped_replies"] == 1
    # Long past any lease: recovery has nothing to take back and charges nothing.
    acta_host.advance(acta_host.worker.lease * 3)
    assert acta_host.tick() == "nothing-claimed"
    job = acta_host.job(ref)
    assert job.status is JobStatus.SUCCEEDED
    assert (job.executions, job.attempts) == (1, 0) and runs == [1]
    names = acta_host.event_names(ref)
    assert names.count("execution-started") == 1
    assert "lease-lost" not in names and "write-fenced" not in names


def test_a_start_whose_commit_reply_is_lost_is_not_refused(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, proxy: FaultProxy, admin: Any
) -> None:
    acta_app.define("ship-parcel")
    assert acta_host.tick() == "nothing-claimed"  # registers the worker
    ref = acta_app.enqueue("ship-parcel")
    worker = acta_host.worker
    lease_ms = worker.lease // timedelta(milliseconds=1)
    now = worker.now()
    # Lease it without starting it, as a buffered worker does for runs it will start later.
    [(job, started)] = acta_provider.run(
        lambda: claim(
            worker.worker_id, worker.namespace_id, 1, (), lease_ms, now, (), (), start=0, fused=True
        )
    )
    assert started is None
    proxy.drop_reply_to(FUSED_START)
    [answer] = acta_provider.run(lambda: start_many([(job, True)], worker.worker_id, now, True))
    assert proxy.counts["dropped_replies"] == 1
    assert answer is not None and answer.execution == 1  # what the committed start wrote
    assert acta_host.job(ref).status is JobStatus.EXECUTING
    codes = _codes(admin, acta_provider.schema, job.job_id)
    assert codes.count(int(EventCode.EXECUTION_STARTED)) == 1
    assert int(EventCode.WRITE_FENCED) not in codes


def test_a_registration_whose_commit_reply_is_lost_registers_once(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, proxy: FaultProxy, admin: Any
) -> None:
    acta_app.define("ship-parcel")
    proxy.drop_reply_to(b"COMMIT")  # the first write is the registration's transaction
    assert acta_host.tick() == "nothing-claimed"
    assert proxy.counts["dropped_replies"] == 1
    schema = acta_provider.schema
    (workers,) = admin.execute(f'SELECT count(*) FROM "{schema}".workers').fetchone()
    (started,) = admin.execute(
        f'SELECT count(*) FROM "{schema}".events WHERE code = %s',
        [int(EventCode.WORKER_STARTED)],
    ).fetchone()
    assert (workers, started) == (1, 1)


def test_a_recovery_fault_loses_only_its_batch(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, admin: Any
) -> None:
    @acta_app.job("ship-parcel")
    def ship() -> str:
        return "shipped"

    first = acta_host.worker
    peer = acta_host.add_worker()
    assert acta_host.tick(first) == "nothing-claimed"  # registers
    refs = [acta_app.enqueue("ship-parcel") for _ in range(120)]
    lease_ms = first.lease // timedelta(milliseconds=1)
    now = first.now()
    leased = acta_provider.run(
        lambda: claim(
            first.worker_id, first.namespace_id, 120, (), lease_ms, now, (), (), start=0, fused=True
        )
    )
    assert len(leased) == 120
    acta_host.kill(first)
    # From the 51st lease-lost event on, the server refuses the insert as often as acta tries:
    # the second batch fails for good; the first must stay recovered.
    schema = acta_provider.schema
    admin.execute(f'CREATE SEQUENCE "{schema}".lost_count')
    admin.execute(
        f'CREATE FUNCTION "{schema}".flaky() RETURNS trigger LANGUAGE plpgsql AS $$ '
        f"DECLARE n bigint; BEGIN IF NEW.code = {int(EventCode.LEASE_LOST)} THEN "
        f"n := nextval('\"{schema}\".lost_count'); "
        f"IF n > 50 AND n <= {50 + ATTEMPTS} THEN "
        "RAISE EXCEPTION 'simulated fault' USING ERRCODE = '40001'; END IF; END IF; "
        "RETURN NEW; END $$"
    )
    admin.execute(
        f'CREATE TRIGGER flaky BEFORE INSERT ON "{schema}".events '
        f'FOR EACH ROW EXECUTE FUNCTION "{schema}".flaky()'
    )
    acta_host.advance(first.lease + peer.heartbeat)
    acta_host.tick(peer)  # recovery runs (its second batch fails), then one job

    def ready() -> int:
        (count,) = admin.execute(
            f'SELECT count(*) FROM "{schema}".runtime WHERE status = %s AND job_id = ANY(%s)',
            [int(JobStatus.READY), [job.job_id for job, _ in leased]],
        ).fetchone()
        return int(count)

    assert ready() == 50 - 1  # the first batch is back (the tick then ran one of them)
    acta_host.advance(peer.heartbeat)
    acta_host.tick(peer)  # recovery again: the rest come back
    (lost,) = admin.execute(
        f'SELECT count(*) FROM "{schema}".events WHERE code = %s', [int(EventCode.LEASE_LOST)]
    ).fetchone()
    assert lost == 120  # one per lease, none twice
    statuses = [acta_host.job(ref).status for ref in refs]
    assert statuses.count(JobStatus.DISPATCHED) == 0
