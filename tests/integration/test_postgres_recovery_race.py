"""Recovery decides from the row it read: the owner of a lapsed lease cannot start the run
between recovery's read and recovery's write (PostgreSQL, where the two run concurrently).

Found by the Tier A certification: recovery read a lapsed lease as dispatched without a lock,
its owner then started the run (a lapsed lease is still the owner's until it is taken), and
recovery's guard, which accepts a dispatched or a started row, let it write the dispatched
job's plan. The run was left open in the history (no lease-lost for its execution), no
attempt was charged, and the job ran again. ``lapsed_leases`` now locks what it reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, JobStatus
from acta_testing import Host

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres import PostgresProvider
    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def acta_provider(request: pytest.FixtureRequest) -> Iterator[PostgresProvider]:
    """This module always runs on PostgreSQL."""
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider() as provider:
        yield provider


@pytest.fixture
def dsn(request: pytest.FixtureRequest) -> str:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas.dsn


def _run(
    conn: psycopg.Connection[Any], provider: PostgresProvider, name: str, **params: Any
) -> Any:
    statement = provider.statements[name]
    return conn.execute(statement.sql, {key: params.get(key) for key in statement.params})


def test_a_lapsed_lease_read_by_recovery_cannot_be_started_before_recovery_decides(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, dsn: str
) -> None:
    import psycopg

    acta_app.define("report")
    acta_host.advance(0)  # the worker registers
    ref = acta_app.enqueue("report")
    job_id, owner = acta_app.get(ref).job_id, acta_host.worker.worker_id
    schema = acta_provider.schema
    with psycopg.connect(dsn, autocommit=True) as admin:
        # Claimed by the worker, which then went quiet: dispatched, its lease lapsed.
        admin.execute(
            f'UPDATE "{schema}".runtime SET status = 20, lease_owner = %s, '
            "lease_epoch = lease_epoch + 1, lease_expires_at = now() - interval '1 minute' "
            "WHERE job_id = %s",
            (owner, job_id),
        )
        (namespace_id, epoch) = admin.execute(
            f'SELECT namespace_id, lease_epoch FROM "{schema}".runtime WHERE job_id = %s',
            (job_id,),
        ).fetchone()

    with psycopg.connect(dsn) as recovery, psycopg.connect(dsn) as worker:
        lapsed = _run(
            recovery, acta_provider, "lapsed_leases", namespace_id=namespace_id, limit=50
        ).fetchall()
        assert [row[0] for row in lapsed] == [job_id]  # recovery read it as dispatched
        worker.execute("SET lock_timeout = '300ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            _run(worker, acta_provider, "start", job_id=job_id, epoch=epoch, worker_id=owner)
        worker.rollback()
        recovery.rollback()  # recovery gave up this pass: the owner may start it after all
        started = _run(
            worker, acta_provider, "start", job_id=job_id, epoch=epoch, worker_id=owner
        ).fetchall()
        worker.commit()
    assert len(started) == 1
    assert acta_app.get(ref).status is JobStatus.EXECUTING
