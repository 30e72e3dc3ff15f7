"""The PostgreSQL provider on a real server, whatever ``--acta-provider`` says.

Every test here runs on PostgreSQL (the ``acta_provider`` fixture is overridden), so the
default suite covers it too; without a server these tests skip, and under CI=true they fail.
Covered: backends named ``acta``, transactional enqueue on psycopg and SQLAlchemy connections
(sync and async), connection loss mid-drain, concurrent claims, migrations, and the errors for
an unreachable server or a missing schema.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, JobNotFoundError, JobRef, JobStatus
from acta.clock import ManualClock
from acta.errors import ConfigurationError, DatabaseUnavailableError, SchemaError
from acta.ledger import read
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres import PostgresProvider
    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def pg_schemas(request: pytest.FixtureRequest) -> PostgresSchemas:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas


@pytest.fixture
def acta_provider(pg_schemas: PostgresSchemas) -> Iterator[PostgresProvider]:
    """This module's ledger is always PostgreSQL."""
    with pg_schemas.provider(max_connections=4) as provider:
        yield provider


@pytest.fixture
def admin(pg_schemas: PostgresSchemas) -> Iterator[psycopg.Connection[Any]]:
    """A connection of the test's own, outside acta (not named ``acta``)."""
    import psycopg

    with psycopg.connect(
        pg_schemas.dsn, autocommit=True, application_name="acta-test-observer"
    ) as conn:
        yield conn


def _sqlalchemy_url(dsn: str) -> Any:
    from sqlalchemy.engine import URL

    from acta.provider.postgres.connect import Target

    params = Target(dsn).params
    return URL.create(
        "postgresql+psycopg",
        username=params.get("user"),
        password=params.get("password"),
        host=params.get("host"),
        port=int(params["port"]) if params.get("port") else None,
        database=params.get("dbname"),
    )


def _confirm_job(app: Acta, ran: list[str]) -> Any:
    @app.job("confirm-order")
    def confirm(item: str) -> str:
        ran.append(item)
        return f"confirmed {item}"

    return confirm


def _exists(app: Acta, ref: JobRef) -> bool:
    try:
        app.get(ref)
    except JobNotFoundError:
        return False
    return True


# -- connections ----------------------------------------------------------------------------


def test_acta_backends_are_named_acta_and_pooler_safe(acta_provider: PostgresProvider) -> None:
    with acta_provider.sync_pool().connection() as conn:
        name = conn.execute("SHOW application_name").fetchone()
        assert name is not None and name[0] == "acta"
        assert conn.prepare_threshold is None and conn.autocommit is False
        conn.rollback()


async def test_runtime_connections_are_pooler_safe_and_hold_no_advisory_locks(
    acta_app: Acta, acta_provider: PostgresProvider, acta_clock: ManualClock, admin: Any
) -> None:
    pool = await acta_provider.async_pool()
    async with pool.connection() as conn:
        assert conn.prepare_threshold is None and conn.autocommit is False
        cur = await conn.execute("SHOW application_name")
        assert await cur.fetchone() == ("acta",)
        await conn.rollback()

    seen: list[int] = []
    loop, all_seen = asyncio.get_running_loop(), asyncio.Event()

    @acta_app.job("look-around")
    def look_around(n: int) -> None:
        # Mid-drain, from outside: no session state a transaction-mode pooler could strand.
        (locks,) = admin.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND a.application_name = 'acta'"
        ).fetchone()
        seen.append(locks)
        if len(seen) == 12:
            loop.call_soon_threadsafe(all_seen.set)

    with acta_app.bound(acta_provider, acta_clock):
        await acta_app.enqueue_batch_async([look_around.request(n) for n in range(12)])
        worker = acta_app.worker(clock=acta_clock, executors=4)
        stopping = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stopping))
        await asyncio.wait_for(all_seen.wait(), 60)
        stopping.set()
        await serving
    assert seen == [0] * 12


def test_instants_come_back_as_aware_utc(acta_app: Acta, acta_host: Host) -> None:
    ref = _confirm_job(acta_app, []).enqueue("A-1")
    job = acta_host.job(ref)
    assert job.created_at == acta_host.clock.now()
    assert job.created_at.utcoffset() is not None and job.created_at.tzname() == "UTC"


# -- the caller's transaction ---------------------------------------------------------------


def test_psycopg_transaction_decides_for_the_job(
    acta_app: Acta, acta_host: Host, pg_schemas: PostgresSchemas
) -> None:
    import psycopg

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    with psycopg.connect(pg_schemas.dsn) as conn:
        conn.execute("CREATE TEMP TABLE orders (item text PRIMARY KEY)")
        conn.commit()

        conn.execute("INSERT INTO orders VALUES ('lost')")
        lost = confirm.enqueue("lost", connection=conn)
        conn.rollback()
        assert not _exists(acta_app, lost)

        kept = confirm.enqueue("kept", connection=conn)  # the first statement of this transaction
        conn.execute("INSERT INTO orders VALUES ('kept')")
        assert not _exists(acta_app, kept)  # not visible before the caller commits
        conn.commit()
        orders = conn.execute("SELECT item FROM orders").fetchall()
    assert orders == [("kept",)]
    assert acta_host.tick() == "completed"
    assert ran == ["kept"] and acta_host.job(kept).status is JobStatus.SUCCEEDED


def test_autocommit_psycopg_connection_commits_the_enqueue_itself(
    acta_app: Acta, acta_host: Host, pg_schemas: PostgresSchemas
) -> None:
    import psycopg

    confirm = _confirm_job(acta_app, [])
    with psycopg.connect(pg_schemas.dsn, autocommit=True) as conn:
        ref = confirm.enqueue("now", connection=conn)
    assert _exists(acta_app, ref)


async def test_async_psycopg_transaction_decides_for_the_job(
    acta_app: Acta, acta_async_host: AsyncHost, pg_schemas: PostgresSchemas
) -> None:
    import psycopg

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    async with await psycopg.AsyncConnection.connect(pg_schemas.dsn) as conn:
        lost = await confirm.enqueue_async("lost", connection=conn)
        await conn.rollback()
        kept = await confirm.enqueue_async("kept", connection=conn)
        await conn.commit()
    with pytest.raises(JobNotFoundError):
        await acta_app.get_async(lost)
    assert await acta_async_host.tick() == "completed"
    assert ran == ["kept"] and (await acta_async_host.job(kept)).status is JobStatus.SUCCEEDED


def test_sqlalchemy_session_and_connection_decide_for_the_job(
    acta_app: Acta, acta_host: Host, pg_schemas: PostgresSchemas
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    engine = sqlalchemy.create_engine(_sqlalchemy_url(pg_schemas.dsn))
    try:
        with Session(engine) as session:
            lost = confirm.enqueue("lost", connection=session)
            session.rollback()
            kept = confirm.enqueue("kept", connection=session)
            session.commit()
        with engine.connect() as conn:  # no statement yet: acta begins SQLAlchemy's transaction
            also = confirm.enqueue("also", connection=conn)
            conn.commit()
    finally:
        engine.dispose()
    assert not _exists(acta_app, lost)
    assert acta_host.run_until_idle() == 2
    assert sorted(ran) == ["also", "kept"]
    assert acta_host.job(also).status is JobStatus.SUCCEEDED
    assert acta_host.job(kept).status is JobStatus.SUCCEEDED


async def test_async_sqlalchemy_session_decides_for_the_job(
    acta_app: Acta, acta_async_host: AsyncHost, pg_schemas: PostgresSchemas
) -> None:
    pytest.importorskip("greenlet", reason="async SQLAlchemy needs greenlet (sqlalchemy[asyncio])")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    engine = create_async_engine(_sqlalchemy_url(pg_schemas.dsn))
    try:
        async with AsyncSession(engine) as session:
            lost = await confirm.enqueue_async("lost", connection=session)
            await session.rollback()
            kept = await confirm.enqueue_async("kept", connection=session)
            await session.commit()
            with pytest.raises(ConfigurationError, match="async"):
                confirm.enqueue("sync call", connection=session)
    finally:
        await engine.dispose()
    with pytest.raises(JobNotFoundError):
        await acta_app.get_async(lost)
    assert await acta_async_host.tick() == "completed"
    assert ran == ["kept"] and (await acta_async_host.job(kept)).status is JobStatus.SUCCEEDED


def test_a_foreign_object_is_refused_by_name(acta_app: Acta, acta_host: Host) -> None:
    confirm = _confirm_job(acta_app, [])
    with pytest.raises(ConfigurationError, match="not dict"):
        confirm.enqueue("x", connection={})


def test_each_event_loop_gets_its_own_pool(acta_provider: PostgresProvider) -> None:
    # A script may call asyncio.run twice: the first loop's pool cannot serve the second.
    first = asyncio.run(acta_provider.run_async(lambda: read.workers(None)))
    second = asyncio.run(acta_provider.run_async(lambda: read.workers(None)))
    assert first == second == []


# -- connection loss ------------------------------------------------------------------------


def test_terminated_backends_mid_drain_settle_every_job_once(
    acta_app: Acta, acta_clock: ManualClock, pg_schemas: PostgresSchemas, admin: Any
) -> None:
    # A name of its own, so that only this test's backends are terminated, not those of
    # other test processes sharing the server.
    name = f"acta-loss-{secrets.token_hex(3)}"
    killed: list[int] = []

    def terminate() -> None:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            [name],
        ).fetchall()
        killed.append(len(rows))

    @acta_app.job("settle-me")
    def settle(n: int) -> int:
        if n % 2 == 0:
            terminate()  # mid-run: the settle that follows finds its connection gone
        return n

    with pg_schemas.provider(max_connections=3, application_name=name) as provider:
        host = Host(acta_app, provider, acta_clock)
        try:
            refs = [settle.enqueue(n) for n in range(6)]
            outcomes = []
            for turn in range(6):
                if turn % 3 == 1:
                    terminate()  # between ticks: the claim finds its connection gone
                outcomes.append(host.tick())
            assert outcomes == ["completed"] * 6
            assert host.tick() == "nothing-claimed"
            for ref in refs:
                job = host.job(ref)
                assert job.status is JobStatus.SUCCEEDED and job.executions == 1
                names = host.event_names(ref)
                assert names.count("succeeded") == 1 and names.count("execution-started") == 1
        finally:
            host.close()
    assert sum(killed) > 0, "no acta backend was terminated: the test proved nothing"


# -- claiming -------------------------------------------------------------------------------


async def test_concurrent_claims_take_disjoint_jobs(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    confirm = _confirm_job(acta_app, [])
    for n in range(30):
        await confirm.enqueue_async(f"item-{n}")
    first = acta_async_host.worker
    await first.ensure_registered()
    second = await acta_async_host.add_worker()
    a, b = await asyncio.gather(first.claim(10), second.claim(10))
    ids_a = {run.job.job_id for run in a}
    ids_b = {run.job.job_id for run in b}
    assert len(ids_a) == 10 and len(ids_b) == 10 and not ids_a & ids_b
    assert {run.job.epoch for run in [*a, *b]} == {1}


# -- schema and errors ----------------------------------------------------------------------


def test_migrations_apply_once_under_concurrent_migrators(pg_schemas: PostgresSchemas) -> None:
    from acta.provider.postgres import PostgresProvider

    schema = f"acta_t_migrate_{secrets.token_hex(3)}"
    results: list[list[str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def migrate() -> None:
        provider = PostgresProvider(pg_schemas.dsn, schema=schema, max_connections=1)
        try:
            start.wait()
            results.append(provider.migrate())
        except BaseException as exc:
            errors.append(exc)
        finally:
            provider.close()

    threads = [threading.Thread(target=migrate) for _ in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        # Each migration is its own transaction under the lock, so concurrent migrators may
        # share the work; what matters is that every file is applied exactly once, in order.
        applied = [name for names in results for name in names]
        assert sorted(applied) == [
            "0001_ledger",
            "0002_gates",
            "0003_durable",
            "0004_recurring",
            "0005_reserved",  # this branch's placeholders for migrations other branches own
            "0006_reserved",
            "0007_operations",
        ]
        assert all(names == sorted(names) for names in results)
        checker = PostgresProvider(pg_schemas.dsn, schema=schema, max_connections=1)
        checker.check_schema()
        checker.close()
    finally:
        pg_schemas.drop(schema)


def test_missing_schema_names_the_fix_without_the_password(pg_schemas: PostgresSchemas) -> None:
    from psycopg.conninfo import make_conninfo

    from acta.provider.postgres import PostgresProvider

    dsn = make_conninfo(pg_schemas.dsn, password="s3cret-pw")  # trust auth ignores it
    provider = PostgresProvider(dsn, schema=f"acta_t_absent_{secrets.token_hex(3)}")
    with pytest.raises(SchemaError) as caught:
        provider.check_schema()
    message = str(caught.value)
    assert "acta schema apply --database " in message and "--schema acta_t_absent_" in message
    assert "0001_ledger" in message and "s3cret-pw" not in message

    # A verb run without the check (the schema vanished under a running app) says the same.
    with pytest.raises(SchemaError, match="acta schema apply --database") as caught:
        provider.run(lambda: read.workers(None))
    assert "s3cret-pw" not in str(caught.value)
    provider.close()


def test_schema_behind_or_altered_is_a_schema_error(
    acta_provider: PostgresProvider, admin: Any
) -> None:
    table = f'"{acta_provider.schema}".migrations'
    admin.execute(f"UPDATE {table} SET checksum = 'edited'")
    with pytest.raises(SchemaError, match="checksum mismatch"):
        acta_provider.check_schema()
    admin.execute(f"DELETE FROM {table}")
    with pytest.raises(SchemaError, match="missing migrations 0001_ledger"):
        acta_provider.check_schema()


def test_unreachable_server_fails_fast_naming_the_host() -> None:
    pytest.importorskip("psycopg")
    from acta.provider.postgres import PostgresProvider

    # Port 1 on the loopback refuses at once: nothing listens there.
    dsn = "postgresql://someone:s3cret-pw@127.0.0.1:1/ledger"
    provider = PostgresProvider(dsn, connect_timeout=2)
    with pytest.raises(DatabaseUnavailableError) as caught:
        provider.check_schema()
    message = str(caught.value)
    assert "127.0.0.1:1/ledger" in message and "s3cret-pw" not in message
    assert "refused" in message.lower()

    with pytest.raises(DatabaseUnavailableError, match=re.escape("127.0.0.1")):
        asyncio.run(provider.run_async(lambda: read.job("job_none", None)))

    app = Acta(dsn)
    with pytest.raises(DatabaseUnavailableError, match=re.escape("127.0.0.1:1/ledger")):
        app.get("job_01J0000000000000000000000Z")
    provider.close()


def test_an_override_whose_commit_reply_is_lost_is_not_a_conflict(
    pg_schemas: PostgresSchemas, admin: Any
) -> None:
    from acta_testing.faultproxy import postgres_proxy

    name = pg_schemas.take()
    try:
        with postgres_proxy(pg_schemas.dsn) as proxy:
            app = Acta(proxy.dsn(pg_schemas.dsn), schema=name)
            try:
                assert app.gates() == []  # opens and checks the ledger first
                proxy.drop_reply_to(b"COMMIT")  # the override commits; its reply is lost
                version = app.set_concurrency_limit(key="acme", limit=3, expected_version=0)
                assert proxy.counts["dropped_replies"] == 1
            finally:
                app.close()
        row = admin.execute(f'SELECT limit_override, version FROM "{name}".gates').fetchall()
        assert row == [(3, 1)]  # written once
        assert version == 1  # and reported as written
    finally:
        pg_schemas.give_back(name)
