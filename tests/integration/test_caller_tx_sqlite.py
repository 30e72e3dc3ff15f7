"""Transactional enqueue on SQLite through SQLAlchemy and sqlite3, whatever ``--acta-provider``
says: the job commits or rolls back with the caller's transaction, and a committed job runs.

Async SQLAlchemy runs on aiosqlite, whose connection lives on a thread of its own; acta then
sends each statement through aiosqlite inside a savepoint of the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, JobNotFoundError, JobRef, JobStatus
from acta.provider.sqlite import SqliteProvider
from acta_testing import AsyncHost, Host
from acta_testing.schemas import sqlite_copy


@pytest.fixture
def acta_provider(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqliteProvider]:
    """This module's ledger is always SQLite."""
    path = sqlite_copy(tmp_path_factory.getbasetemp(), tmp_path / "ledger.sqlite3")
    provider = SqliteProvider(path)
    yield provider
    provider.close()


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


def test_sqlite3_transaction_decides_for_the_job(
    acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider
) -> None:
    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    with closing(sqlite3.connect(acta_provider.path)) as conn:  # Python's default mode
        lost = confirm.enqueue("lost", connection=conn)  # the first write of the transaction
        conn.rollback()
        kept = confirm.enqueue("kept", connection=conn)
        conn.commit()
    assert not _exists(acta_app, lost)
    assert acta_host.tick() == "completed"
    assert ran == ["kept"] and acta_host.job(kept).status is JobStatus.SUCCEEDED


def test_sqlalchemy_session_and_connection_decide_for_the_job(
    acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    engine = sqlalchemy.create_engine(f"sqlite:///{acta_provider.path}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE orders (item TEXT PRIMARY KEY)")
        with Session(engine) as session:
            lost = confirm.enqueue("lost", connection=session)
            session.execute(sqlalchemy.text("INSERT INTO orders VALUES ('lost')"))
            session.rollback()
            kept = confirm.enqueue("kept", connection=session)
            session.execute(sqlalchemy.text("INSERT INTO orders VALUES ('kept')"))
            session.commit()
        with engine.connect() as conn:  # no statement yet: acta begins SQLAlchemy's transaction
            also = confirm.enqueue("also", connection=conn)
            conn.commit()
        with engine.connect() as conn:
            orders = conn.exec_driver_sql("SELECT item FROM orders").fetchall()
    finally:
        engine.dispose()
    assert orders == [("kept",)]
    assert not _exists(acta_app, lost)
    assert acta_host.run_until_idle() == 2
    assert sorted(ran) == ["also", "kept"]
    assert acta_host.job(kept).status is JobStatus.SUCCEEDED
    assert acta_host.job(also).status is JobStatus.SUCCEEDED


async def test_async_sqlalchemy_on_aiosqlite_decides_for_the_job(
    acta_app: Acta, acta_async_host: AsyncHost, acta_provider: SqliteProvider
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    pytest.importorskip("aiosqlite")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    ran: list[str] = []
    confirm = _confirm_job(acta_app, ran)
    engine = create_async_engine(f"sqlite+aiosqlite:///{acta_provider.path}")
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE orders (item TEXT PRIMARY KEY)")
        async with AsyncSession(engine) as session:
            lost = await confirm.enqueue_async("lost", connection=session)  # its first write
            await session.execute(sqlalchemy.text("INSERT INTO orders VALUES ('lost')"))
            await session.rollback()
            kept = await confirm.enqueue_async("kept", connection=session)
            await session.execute(sqlalchemy.text("INSERT INTO orders VALUES ('kept')"))
            await session.commit()
        async with engine.connect() as conn:
            also = await confirm.enqueue_async("also", connection=conn)
            await conn.commit()  # no statement before it: acta began SQLAlchemy's transaction
            undone = await confirm.enqueue_async("undone", connection=conn)
            await conn.rollback()
        async with engine.connect() as conn:
            orders = (await conn.exec_driver_sql("SELECT item FROM orders")).fetchall()
    finally:
        await engine.dispose()
    assert orders == [("kept",)]
    for ref in (lost, undone):
        with pytest.raises(JobNotFoundError):
            await acta_app.get_async(ref)
    assert await acta_async_host.run_until_idle() == 2
    assert sorted(ran) == ["also", "kept"]
    for ref in (kept, also):
        assert (await acta_app.get_async(ref)).status is JobStatus.SUCCEEDED
