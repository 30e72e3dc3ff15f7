"""Readers shared by the durable wait specs (test_durable_sleep.py, test_signals.py): a job's
waits and its place as an operator sees them in SQL, with timestamps made comparable across
providers (SQLite keeps UTC text, PostgreSQL timestamptz).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acta import JobRef

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def instant(value: Any) -> datetime | None:
    """A timestamp column as an aware datetime (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime), value
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def stamped(value: Any) -> datetime:
    """A NOT NULL timestamp column as an aware datetime."""
    found = instant(value)
    assert found is not None
    return found


@dataclass(frozen=True)
class WaitRow:
    """One row of waits_view."""

    kind: str
    name: str
    due_at: datetime | None
    armed_at: datetime
    execution: int
    released_at: datetime | None
    signalled: bool


def waits(ledger: Ledger, ref: JobRef) -> list[WaitRow]:
    """The job's waits in the order they were armed."""
    rows = ledger.rows(
        "SELECT kind, name, due_at, armed_at, execution, released_at, signalled "
        "FROM {schema}.waits_view WHERE job_ref = :ref ORDER BY armed_at, name",
        {"ref": str(ref)},
    )
    return [
        WaitRow(
            kind=row[0],
            name=row[1],
            due_at=instant(row[2]),
            armed_at=stamped(row[3]),
            execution=int(row[4]),
            released_at=instant(row[5]),
            signalled=bool(row[6]),
        )
        for row in rows
    ]


def the_wait(ledger: Ledger, ref: JobRef, kind: str | None = None) -> WaitRow:
    """The job's only wait, or its only wait of ``kind`` (the spec fails if there is none or
    more than one)."""
    [row] = [w for w in waits(ledger, ref) if kind is None or w.kind == kind]
    return row


@dataclass(frozen=True)
class Place:
    """Where a job stands, from jobs_view: status, lease holder, next run and open wait."""

    status: str
    lease_worker: str | None
    next_run_at: datetime | None
    waiting_for: str | None
    executions: int


def place(ledger: Ledger, ref: JobRef) -> Place:
    [row] = ledger.rows(
        "SELECT status, lease_worker, next_run_at, waiting_for, executions "
        "FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return Place(row[0], row[1], instant(row[2]), row[3], int(row[4]))
