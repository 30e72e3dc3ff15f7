"""The fault proxy of the test kit, against the real PostgreSQL server: it forwards, and each of
its faults does what the in-doubt specs rely on (a dropped reply after the server committed)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta.provider.postgres.connect import Target
from acta_testing.faultproxy import FaultProxy, postgres_proxy

if TYPE_CHECKING:
    import psycopg

    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def dsn(request: pytest.FixtureRequest) -> str:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas.dsn


@pytest.fixture
def proxy(dsn: str) -> Iterator[FaultProxy]:
    with postgres_proxy(dsn) as running:
        yield running


@pytest.fixture
def scratch(request: pytest.FixtureRequest, dsn: str) -> Iterator[str]:
    """A schema of the test's own (dropped at the end) with one table, ``marks``."""
    import psycopg

    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = f"{schemas.PREFIX}proxy_{id(request.node) % 10**8}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
        conn.execute(f'CREATE TABLE "{name}".marks (mark text)')
    try:
        yield name
    finally:
        schemas.drop(name)


def _connect(proxy: FaultProxy, dsn: str) -> psycopg.Connection[Any]:
    import psycopg

    return psycopg.connect(proxy.dsn(dsn), autocommit=True, connect_timeout=5)


def test_it_forwards_both_ways(proxy: FaultProxy, dsn: str) -> None:
    with _connect(proxy, dsn) as conn:
        assert conn.execute("SELECT 40 + 2").fetchone() == (42,)
    assert proxy.counts["connections"] == 1
    assert proxy.counts["to_server"] > 0 and proxy.counts["to_client"] > 0


def test_a_dropped_reply_hides_a_commit_the_server_made(
    proxy: FaultProxy, dsn: str, scratch: str
) -> None:
    import psycopg

    proxy.drop_reply_to(b"in-doubt-mark")
    with _connect(proxy, dsn) as conn:
        with pytest.raises(psycopg.OperationalError):
            conn.execute(f"INSERT INTO \"{scratch}\".marks VALUES ('in-doubt-mark')")
        assert conn.closed
    assert (proxy.counts["pattern_hits"], proxy.counts["dropped_replies"]) == (1, 1)
    assert proxy.armed == 0
    with psycopg.connect(dsn) as direct:
        rows = direct.execute(f'SELECT mark FROM "{scratch}".marks').fetchall()
    assert rows == [("in-doubt-mark",)]  # committed, though the client never heard so


def test_only_the_message_with_the_pattern_loses_its_reply(proxy: FaultProxy, dsn: str) -> None:
    import psycopg

    proxy.drop_reply_to(b"'aimed'")
    with _connect(proxy, dsn) as conn:
        assert conn.execute("SELECT 'other'").fetchone() == ("other",)
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 'aimed'")
    with _connect(proxy, dsn) as conn:
        assert conn.execute("SELECT 'aimed'").fetchone() == ("aimed",)  # once only


def test_a_drop_rate_of_one_loses_every_reply(dsn: str) -> None:
    import psycopg

    with postgres_proxy(dsn, drop_rate=1.0, seed=7) as proxy:
        with pytest.raises(psycopg.OperationalError):
            _connect(proxy, dsn)
        assert proxy.counts["dropped_replies"] == 1


def test_reset_refuse_and_accept(proxy: FaultProxy, dsn: str) -> None:
    import psycopg

    with _connect(proxy, dsn) as conn:
        conn.execute("SELECT 1")
        proxy.reset_all()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
    proxy.refuse()
    with pytest.raises(psycopg.OperationalError):
        _connect(proxy, dsn)
    assert proxy.counts["refused"] >= 1
    proxy.accept()
    with _connect(proxy, dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_it_runs_on_an_async_test_loop(dsn: str) -> None:
    import psycopg

    async def main() -> tuple[Any, int]:
        target = Target(dsn)
        proxy = FaultProxy(target.host, int(target.port))
        await proxy.listen()
        try:
            async with await psycopg.AsyncConnection.connect(
                proxy.dsn(dsn), autocommit=True
            ) as conn:
                cur = await conn.execute("SELECT 'async'")
                row = await cur.fetchone()
        finally:
            await proxy.aclose()
        return row, proxy.counts["connections"]

    assert asyncio.run(main()) == (("async",), 1)
