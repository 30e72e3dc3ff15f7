"""Staging a job request in the outbox, on the caller's connection and in its transaction.

``Acta.add_to_outbox`` validates and encodes exactly as an enqueue does (``JobRequest``) and
hands the request here. One INSERT then runs on the connection the caller holds: a sqlite3 or
psycopg connection as is, a SQLAlchemy Connection or Session unwrapped to its driver connection
(``acta.provider.caller_tx``). Nothing here commits or rolls back: the row exists exactly
when the caller's transaction commits, together with its business rows.

Durations are turned into instants at staging (a delay or a deadline counts from the moment
the request was staged, not from its later delivery), so the row means the same thing
whenever the relay gets to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.definition import JobRequest
from acta.errors import ConfigurationError, ValidationError
from acta.outbox.provisioning import Driver, driver_of, table_name
from acta.producer import deadline_of
from acta.provider import caller_tx
from acta.provider import outbox as dialects

COLUMNS = (
    "namespace",
    "job_name",
    "input_codec",
    "input",
    "priority",
    "run_at",
    "dedup_key",
    "correlation_key",
    "tags",
    "lane",
    "concurrency_key",
    "deadline_at",
    "deadline_strict",
    "staged_at",
)


@dataclass(frozen=True, slots=True)
class StagedRow:
    """One outbox row as it is written, before the database gives it its id."""

    namespace: str
    job_name: str
    input_codec: int
    input: bytes
    priority: int
    run_at: datetime | None
    dedup_key: str | None
    correlation_key: str | None
    tags: tuple[str, ...]
    lane: str | None
    concurrency_key: str | None
    deadline_at: datetime | None
    deadline_strict: bool
    staged_at: datetime

    @classmethod
    def of(cls, request: JobRequest, namespace: str, now: datetime) -> StagedRow:
        """The row for a validated request staged at ``now``."""
        if request.tenant is not None:
            # The outbox table lives in the application's database and acta never migrates
            # it, so it has no tenant column; dropping the tenant silently would be worse.
            raise ValidationError(
                "tenant",
                f"{request.tenant!r} cannot be staged in the outbox",
                "the outbox carries no tenant: enqueue tenant jobs on the ledger "
                "(app.enqueue(..., tenant=..., connection=...) when it is in your database)",
            )
        if request.dedup_mode != 1:
            # No mode column either: the relay would enqueue it in mode forever.
            raise ValidationError(
                "dedup_mode",
                "a dedup mode other than 'forever' (or a dedup_window) cannot be staged in the "
                "outbox",
                "the outbox delivers keys in mode forever: enqueue on the ledger for 'unfinished' "
                "or a window",
            )
        run_at = request.run_at
        if run_at is None and request.delay:
            run_at = now + request.delay
        return cls(
            namespace=namespace,
            job_name=request.definition.name,
            input_codec=request.definition.input_codec.code,
            input=request.payload,
            priority=request.priority,
            run_at=run_at,
            dedup_key=request.dedup_key,
            correlation_key=request.correlation_key,
            tags=request.tags,
            lane=request.lane,
            concurrency_key=request.concurrency_key,
            deadline_at=deadline_of(request, now),
            deadline_strict=request.deadline_strict,
            staged_at=now,
        )

    def params(self, dialect: str) -> dict[str, Any]:
        """The values by ``COLUMNS`` name, bound the way ``dialect`` stores them."""
        bind = dialects.dialect(dialect).bind
        values = {
            "namespace": self.namespace,
            "job_name": self.job_name,
            "input_codec": self.input_codec,
            "input": self.input,
            "priority": self.priority,
            "run_at": self.run_at,
            "dedup_key": self.dedup_key,
            "correlation_key": self.correlation_key,
            "tags": json.dumps(list(self.tags)),
            "lane": self.lane,
            "concurrency_key": self.concurrency_key,
            "deadline_at": self.deadline_at,
            "deadline_strict": self.deadline_strict,
            "staged_at": self.staged_at,
        }
        return {name: bind(values[name]) for name in COLUMNS}


def insert_sql(dialect: str, schema: str | None) -> str:
    """The INSERT of one row, in the driver's paramstyle; the new id comes back as the
    provider's outbox dialect says (a returned row, or the cursor's lastrowid)."""
    table = table_name(dialect, schema)  # checked first: a bad schema writes nothing
    sql, _ = dialects.stage_sql(dialect, COLUMNS)
    return sql.replace("{table}", table)


def stage(
    request: JobRequest,
    *,
    namespace: str,
    connection: object,
    now: datetime,
    schema: str | None = None,
) -> int:
    """Write ``request`` to the outbox on the caller's ``connection``; return the row's id."""
    conn = caller_tx.unwrap(connection)
    driver = driver_of(conn)
    if driver.is_async:
        raise ConfigurationError(
            f"an async {type(conn).__name__} was given to add_to_outbox; use add_to_outbox_async"
        )
    sql, params = _statement(driver, request, namespace, now, schema)
    cursor: Any = dialects.dialect(driver.dialect).execute(conn, sql, params)
    returns = dialects.dialect(driver.dialect).stage_returns_id
    return _row_id(driver, cursor, cursor.fetchone() if returns else None)


async def stage_async(
    request: JobRequest,
    *,
    namespace: str,
    connection: object,
    now: datetime,
    schema: str | None = None,
) -> int:
    """The async twin of ``stage`` (a sync connection is accepted too)."""
    conn = await caller_tx.unwrap_async(connection)
    driver = driver_of(conn)
    sql, params = _statement(driver, request, namespace, now, schema)
    cursor: Any = dialects.dialect(driver.dialect).execute(conn, sql, params)
    if driver.is_async:
        cursor = await cursor
    row = None
    if dialects.dialect(driver.dialect).stage_returns_id:
        row = cursor.fetchone()
        if driver.is_async:
            row = await row
    return _row_id(driver, cursor, row)


def _statement(
    driver: Driver, request: JobRequest, namespace: str, now: datetime, schema: str | None
) -> tuple[str, dict[str, Any]]:
    # The table name is checked before anything is bound, so a bad schema writes nothing.
    sql = insert_sql(driver.dialect, schema)
    return sql, StagedRow.of(request, namespace, now).params(driver.dialect)


def _row_id(driver: Driver, cursor: Any, row: Any) -> int:
    if row is not None:
        return int(row[0])
    return int(cursor.lastrowid)
