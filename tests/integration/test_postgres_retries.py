"""Whole-verb retries against real PostgreSQL errors: a trigger makes the server itself refuse a
write with a serialization failure or a deadlock a given number of times (a sequence counts
them, outside any transaction), and the verb must come through once, or fail cleanly with
nothing written when the errors outlast acta's attempts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobContext, JobStatus
from acta.provider.postgres.provider import ATTEMPTS
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
def admin(request: pytest.FixtureRequest) -> Iterator[psycopg.Connection[Any]]:
    import psycopg

    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with psycopg.connect(schemas.dsn, autocommit=True) as conn:
        yield conn


def _refuse(
    admin: psycopg.Connection[Any], schema: str, table: str, when: str, times: int, state: str
) -> None:
    """Make inserts into ``table`` matching ``when`` fail ``times`` times with SQLSTATE
    ``state``, then succeed."""
    admin.execute(f'CREATE SEQUENCE "{schema}".flaky_count')
    admin.execute(
        f'CREATE FUNCTION "{schema}".flaky() RETURNS trigger LANGUAGE plpgsql AS $$ '
        f"BEGIN IF {when} AND nextval('\"{schema}\".flaky_count') <= {times} THEN "
        f"RAISE EXCEPTION 'simulated {state}' USING ERRCODE = '{state}'; END IF; "
        "RETURN NEW; END $$"
    )
    admin.execute(
        f'CREATE TRIGGER flaky BEFORE INSERT ON "{schema}".{table} '
        f'FOR EACH ROW EXECUTE FUNCTION "{schema}".flaky()'
    )


@pytest.mark.parametrize("state", ["40001", "40P01"])  # serialization failure, deadlock
def test_an_enqueue_refused_twice_comes_through_once(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, admin: Any, state: str
) -> None:
    acta_app.define("ship-parcel")
    acta_app.enqueue("ship-parcel")  # the catalog rows exist before the trigger
    _refuse(admin, acta_provider.schema, "jobs", "true", 2, state)
    ref = acta_app.enqueue("ship-parcel")
    assert acta_app.get(ref).status is JobStatus.READY
    (jobs,) = admin.execute(f'SELECT count(*) FROM "{acta_provider.schema}".jobs').fetchone()
    assert jobs == 2  # the first one and this one: no duplicate from the retries
    (tries,) = admin.execute(
        f'SELECT last_value FROM "{acta_provider.schema}".flaky_count'
    ).fetchone()
    assert tries == 3


def test_errors_that_outlast_every_attempt_reach_the_caller_with_nothing_written(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, admin: Any
) -> None:
    import psycopg

    acta_app.define("ship-parcel")
    _refuse(admin, acta_provider.schema, "jobs", "true", ATTEMPTS, "40001")
    with pytest.raises(psycopg.errors.SerializationFailure):
        acta_app.enqueue("ship-parcel")
    (jobs,) = admin.execute(f'SELECT count(*) FROM "{acta_provider.schema}".jobs').fetchone()
    assert jobs == 0


def test_a_settle_refused_twice_settles_the_run_once(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, admin: Any
) -> None:
    runs: list[int] = []

    @acta_app.job("ship-parcel")
    def ship() -> str:
        runs.append(1)
        return "shipped"

    assert acta_host.tick() == "nothing-claimed"  # registers the worker (and its recovery slot)
    ref = ship.enqueue()
    _refuse(
        admin, acta_provider.schema, "events", f"NEW.code = {int(EventCode.SUCCEEDED)}", 2, "40001"
    )
    assert acta_host.tick() == "completed"
    job = acta_host.job(ref)
    assert job.status is JobStatus.SUCCEEDED and job.executions == 1
    assert acta_host.event_names(ref).count("succeeded") == 1
    assert acta_app.result(ref) == "shipped" and runs == [1]


def test_a_settle_whose_second_transaction_fails_goes_on_after_its_committed_part(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, admin: Any
) -> None:
    # A run that fails with a cancel pending: instead of its retry, the cancel applies. The
    # one-statement settle commits by itself and leaves this row out; the portable path that
    # follows applies the cancel. That part fails once: the retry must not start the settle
    # over (its first statement committed) but replay what it had done and go on.
    @acta_app.job("ship-parcel")
    def ship(ctx: JobContext) -> str:
        acta_app.cancel(ctx.job, reason="address changed")
        raise RuntimeError("carrier down")

    assert acta_host.tick() == "nothing-claimed"  # registers the worker
    ref = ship.enqueue()
    _refuse(
        admin, acta_provider.schema, "events", f"NEW.code = {int(EventCode.CANCELLED)}", 1, "40001"
    )
    assert acta_host.tick() == "cancelled"
    job = acta_host.job(ref)
    assert job.status is JobStatus.CANCELLED and job.executions == 1
    names = acta_host.event_names(ref)
    assert names.count("cancelled") == 1 and names.count("execution-finished") == 1
    assert "write-fenced" not in names
    (tries,) = admin.execute(
        f'SELECT last_value FROM "{acta_provider.schema}".flaky_count'
    ).fetchone()
    assert tries == 2  # refused once, then written
