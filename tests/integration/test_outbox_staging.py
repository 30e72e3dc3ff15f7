"""Staging job requests in the outbox, on real databases, in the caller's transaction.

The ledger here is a SQLite file (the integration conftest's ``acta_provider``); the outbox is
always somewhere else: another SQLite file, or a PostgreSQL schema of its own. A staged row
must exist exactly when the caller's transaction commits, hold everything an enqueue needs,
and never appear in the ledger by staging alone (delivery is the relay's job). A request that
fails validation raises what enqueue raises and writes nothing.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, ConfigurationError, UnknownJobError, ValidationError
from acta.cli.main import main
from acta.outbox import create_outbox, create_outbox_async, provisioning_sql
from acta_testing import Host

if TYPE_CHECKING:
    from conftest import Ledger

    from acta_testing.schemas import PostgresSchemas

COLUMNS = "job_name, input, priority, run_at, dedup_key, tags, lane, concurrency_key, staged_at"


def _declare(app: Acta) -> Any:
    @app.job("ship-order", priority=3)
    def ship(order_id: int) -> None:
        raise AssertionError("staging never runs a handler")

    return ship


def _sqlite_instant(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """The application's own database: another file than the ledger, with the outbox in it."""
    with closing(sqlite3.connect(tmp_path / "shop.sqlite3")) as conn:
        create_outbox(conn)
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        conn.commit()
        yield conn


def _staged(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT {COLUMNS} FROM acta_outbox ORDER BY id").fetchall()


# -- sqlite3 ------------------------------------------------------------------------------


def test_sqlite3_rollback_leaves_no_row_and_commit_keeps_everything(
    acta_app: Acta, acta_host: Host, shop: sqlite3.Connection, ledger: Ledger
) -> None:
    _declare(acta_app)
    shop.execute("INSERT INTO orders VALUES (1)")
    acta_app.add_to_outbox("ship-order", 1, connection=shop)
    assert shop.in_transaction  # staged inside the caller's transaction, not committed by acta
    shop.rollback()
    assert _staged(shop) == []

    shop.execute("INSERT INTO orders VALUES (2)")
    row_id = acta_app.add_to_outbox(
        "ship-order",
        2,
        connection=shop,
        delay="5m",
        dedup_key="order-2",
        tags=["shop", "eu"],
        lane="customer-7",
        concurrency_key="warehouse-1",
        deadline="1h",
    )
    shop.commit()

    now = acta_host.clock.now()
    cursor = shop.execute("SELECT * FROM acta_outbox")
    [row] = cursor.fetchall()
    got = dict(zip([d[0] for d in cursor.description], row, strict=True))
    assert got["id"] == row_id
    assert got["namespace"] == "default" and got["job_name"] == "ship-order"
    definition = acta_app.definition("ship-order")
    assert got["input_codec"] == definition.input_codec.code
    assert got["input"] == acta_app.request("ship-order", 2).payload  # enqueue's very bytes
    assert got["priority"] == 3  # the definition's, as enqueue would use
    assert _sqlite_instant(got["staged_at"]) == now
    assert _sqlite_instant(got["run_at"]) == now + timedelta(minutes=5)  # counted from staging
    assert _sqlite_instant(got["deadline_at"]) == now + timedelta(hours=1)
    assert got["deadline_strict"] == 1
    assert (got["dedup_key"], got["correlation_key"]) == ("order-2", None)
    assert json.loads(got["tags"]) == list(
        acta_app.request("ship-order", 2, tags=["shop", "eu"]).tags
    )
    assert (got["lane"], got["concurrency_key"]) == ("customer-7", "warehouse-1")
    assert (got["claimed_by"], got["claimed_until"], got["attempts"], got["last_error"]) == (
        None,
        None,
        0,
        None,
    )
    assert shop.execute("SELECT id FROM orders").fetchall() == [(2,)]
    # The ledger is another database and staging never touches it.
    assert ledger.user_jobs() == 0


def test_staging_order_follows_the_ids(
    acta_app: Acta, acta_host: Host, shop: sqlite3.Connection
) -> None:
    _declare(acta_app)
    ids = [acta_app.add_to_outbox("ship-order", n, connection=shop, lane="l") for n in (5, 6, 7)]
    shop.commit()
    assert ids == sorted(ids)
    assert [json.loads(r[1]) for r in _staged(shop)] == [5, 6, 7]


def test_a_bad_request_raises_like_enqueue_and_writes_nothing(
    acta_app: Acta, acta_host: Host, shop: sqlite3.Connection
) -> None:
    _declare(acta_app)
    shop.execute("INSERT INTO orders VALUES (3)")
    with pytest.raises(ValidationError) as staged_error:
        acta_app.add_to_outbox("ship-order", "not a number", connection=shop)
    with pytest.raises(ValidationError) as enqueue_error:
        acta_app.request("ship-order", "not a number")
    assert str(staged_error.value) == str(enqueue_error.value)
    with pytest.raises(ValidationError):
        acta_app.add_to_outbox("ship-order", 3, connection=shop, priority="high")
    with pytest.raises(ValidationError):
        acta_app.add_to_outbox(
            "ship-order", 3, connection=shop, delay="5m", not_before=datetime.now(UTC)
        )
    with pytest.raises(UnknownJobError):
        acta_app.add_to_outbox("no-such-job", 3, connection=shop)
    # The caller's transaction is untouched and still commits its own row.
    shop.commit()
    assert _staged(shop) == []
    assert shop.execute("SELECT id FROM orders").fetchall() == [(3,)]


def test_refusals_name_what_is_wrong(
    acta_app: Acta, acta_host: Host, shop: sqlite3.Connection
) -> None:
    _declare(acta_app)
    with pytest.raises(ConfigurationError, match="SQLite has no schemas"):
        acta_app.add_to_outbox("ship-order", 1, connection=shop, outbox_schema="shop")
    with pytest.raises(ConfigurationError, match=r"cannot use a builtins\.object"):
        acta_app.add_to_outbox("ship-order", 1, connection=object())
    shop.commit()
    assert _staged(shop) == []


def test_a_dedup_mode_the_outbox_cannot_carry_is_refused_not_dropped(
    acta_app: Acta, acta_host: Host, shop: sqlite3.Connection
) -> None:
    # The outbox table has no mode column: the relay would enqueue the job in mode forever.
    _declare(acta_app)
    with pytest.raises(ValidationError, match="cannot be staged") as refused:
        acta_app.add_to_outbox(
            "ship-order", 1, connection=shop, dedup_key="o-1", dedup_mode="unfinished"
        )
    assert refused.value.field == "dedup_mode"
    with pytest.raises(ValidationError, match="cannot be staged"):
        acta_app.add_to_outbox("ship-order", 1, connection=shop, dedup_key="o-1", dedup_window=60)
    acta_app.add_to_outbox("ship-order", 1, connection=shop, dedup_key="o-1", dedup_mode="forever")
    shop.commit()
    assert len(_staged(shop)) == 1


def test_the_outbox_can_share_the_ledgers_sqlite_file(
    acta_app: Acta, acta_host: Host, acta_provider: Any, ledger: Ledger
) -> None:
    _declare(acta_app)
    with closing(sqlite3.connect(acta_provider.path)) as conn:
        create_outbox(conn)
        acta_app.add_to_outbox("ship-order", 9, connection=conn)
        conn.commit()
    assert ledger.value("SELECT count(*) FROM acta_outbox") == 1
    assert ledger.user_jobs() == 0
    acta_provider.check_schema()  # the ledger does not mind a neighbour table


# -- SQLAlchemy on SQLite -------------------------------------------------------------------


def test_sqlalchemy_session_and_connection_decide_for_the_row(
    acta_app: Acta, acta_host: Host, tmp_path: Path
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    _declare(acta_app)
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'shop.sqlite3'}")
    try:
        with engine.connect() as conn:
            create_outbox(conn)  # begins SQLAlchemy's transaction, which we commit
            conn.commit()
        with Session(engine) as session:
            acta_app.add_to_outbox("ship-order", 1, connection=session)
            session.rollback()
            kept = acta_app.add_to_outbox("ship-order", 2, connection=session)
            session.commit()
        with engine.connect() as conn:
            acta_app.add_to_outbox("ship-order", 3, connection=conn)
            conn.rollback()
            also = acta_app.add_to_outbox("ship-order", 4, connection=conn)
            conn.commit()
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT id, input FROM acta_outbox ORDER BY id").fetchall()
    finally:
        engine.dispose()
    assert [(i, json.loads(b)) for i, b in rows] == [(kept, 2), (also, 4)]


async def test_async_sqlalchemy_on_aiosqlite_decides_for_the_row(
    acta_app: Acta, acta_host: Host, tmp_path: Path
) -> None:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("aiosqlite")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    _declare(acta_app)
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'shop.sqlite3'}")
    try:
        async with engine.connect() as conn:
            await create_outbox_async(conn)
            await conn.commit()
        async with AsyncSession(engine) as session:
            await acta_app.add_to_outbox_async("ship-order", 1, connection=session)
            await session.rollback()
            kept = await acta_app.add_to_outbox_async("ship-order", 2, connection=session)
            await session.commit()
        async with engine.connect() as conn:
            result = await conn.exec_driver_sql("SELECT id, input FROM acta_outbox")
            rows = result.fetchall()
    finally:
        await engine.dispose()
    assert [(i, json.loads(b)) for i, b in rows] == [(kept, 2)]


# -- PostgreSQL ----------------------------------------------------------------------------


@pytest.fixture
def pg_shop(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A PostgreSQL schema of the test's own for the outbox (the ledger stays on SQLite):
    the DSN and the schema name. Skips without a server, like the other PostgreSQL tests."""
    psycopg = pytest.importorskip("psycopg")
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = f"shop_{secrets.token_hex(4)}"
    with psycopg.connect(schemas.dsn, autocommit=True) as admin:
        create_outbox(admin, schema=name)
        try:
            yield schemas.dsn, name
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def test_psycopg_transaction_decides_for_the_row(
    acta_app: Acta, acta_host: Host, pg_shop: tuple[str, str], ledger: Ledger
) -> None:
    import psycopg

    _declare(acta_app)
    dsn, schema = pg_shop
    with psycopg.connect(dsn) as conn:
        acta_app.add_to_outbox("ship-order", 1, connection=conn, outbox_schema=schema)
        conn.rollback()
        kept = acta_app.add_to_outbox(
            "ship-order", 2, connection=conn, outbox_schema=schema, tags=["a"], delay="10s"
        )
        conn.commit()
        rows = conn.execute(
            f"SELECT id, {COLUMNS}, deadline_strict FROM {schema}.acta_outbox"
        ).fetchall()
    now = acta_host.clock.now()
    assert rows == [
        (
            kept,
            "ship-order",
            b"2",
            3,
            now + timedelta(seconds=10),
            None,
            '["a"]',
            None,
            None,
            now,
            True,
        )
    ]
    assert ledger.user_jobs() == 0


async def test_async_psycopg_transaction_decides_for_the_row(
    acta_app: Acta, acta_host: Host, pg_shop: tuple[str, str]
) -> None:
    import psycopg

    _declare(acta_app)
    dsn, schema = pg_shop
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        await acta_app.add_to_outbox_async("ship-order", 1, connection=conn, outbox_schema=schema)
        await conn.rollback()
        kept = await acta_app.add_to_outbox_async(
            "ship-order", 2, connection=conn, outbox_schema=schema, lane="customer-1"
        )
        await conn.commit()
        with pytest.raises(ConfigurationError, match="add_to_outbox_async"):
            acta_app.add_to_outbox("ship-order", 3, connection=conn, outbox_schema=schema)
        with pytest.raises(ValidationError):
            await acta_app.add_to_outbox_async(
                "ship-order", "x", connection=conn, outbox_schema=schema
            )
        await conn.commit()
        cur = await conn.execute(f"SELECT id, input, lane FROM {schema}.acta_outbox")
        rows = await cur.fetchall()
    assert rows == [(kept, b"2", "customer-1")]


# -- the CLI -------------------------------------------------------------------------------


def test_cli_prints_sql_that_creates_the_sqlite_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["outbox", "schema", "--dialect", "sqlite"]) == 0
    printed = capsys.readouterr().out
    assert printed == provisioning_sql("sqlite")
    with closing(sqlite3.connect(tmp_path / "app.sqlite3")) as conn:
        conn.executescript(printed)
        conn.executescript(printed)  # idempotent
        indexes = conn.execute("PRAGMA index_list(acta_outbox)").fetchall()
    assert any(name == "acta_outbox_by_lane" for _, name, *_ in indexes)


def test_cli_prints_sql_that_creates_the_postgres_table(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    psycopg = pytest.importorskip("psycopg")
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = f"cli_{secrets.token_hex(4)}"
    assert main(["outbox", "schema", "--dialect", "postgres", "--schema", name]) == 0
    printed = capsys.readouterr().out
    with psycopg.connect(schemas.dsn, autocommit=True) as conn:
        try:
            conn.execute(printed)  # the whole script in one simple-query round trip
            found = conn.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = %s AND table_name = 'acta_outbox'",
                (name,),
            ).fetchone()
        finally:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    assert found == (1,)


def test_cli_refuses_a_schema_on_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["outbox", "schema", "--dialect", "sqlite", "--schema", "shop"]) == 2
    assert "SQLite has no schemas" in capsys.readouterr().err
