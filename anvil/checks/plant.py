"""Planting: write ledger rows by hand, the way a broken core would, to show a check can fail.

A check that never returned a row would prove nothing. ``Planter`` opens a connection of its
own to a ledger (acta is not involved), appends events with chosen codes, epochs, details and
instants, runs arbitrary statements, and runs the checks on the result. The integration test
of the checks uses it, and so can a certification run that wants to test its own checks first.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

from acta.model.codes import EventCode
from acta.provider.testing import LedgerLocation
from anvil.checks import Row, run_check


class Planter:
    """A connection of one's own to the ledger at ``location``: plants rows, runs checks.

    Events planted without an instant are spaced 10 ms apart from ``start``; their order in
    the ledger is the order they were planted in (ids), which is what the lane and
    concurrency checks go by."""

    def __init__(self, location: LedgerLocation, start: datetime) -> None:
        self.location = location
        self.dialect = location.dialect
        self.conn: Any
        if self.dialect == "sqlite":
            self.conn = sqlite3.connect(str(location.path), isolation_level=None)
        else:
            import psycopg

            self.conn = psycopg.connect(str(location.dsn), autocommit=True)
        self.clock = start

    def close(self) -> None:
        self.conn.close()

    def check(self, name: str, **params: Any) -> list[Row]:
        return run_check(self.conn, name, self.dialect, self.location.schema, params)

    def execute(self, text: str, **params: Any) -> list[tuple[Any, ...]]:
        """Run ``text`` (``{schema}.`` tokens, ``:name`` params); the rows it returned."""
        cursor = self.conn.execute(self.location.prepare(text), params)
        return list(cursor.fetchall()) if cursor.description else []

    def job(self, ref: object) -> tuple[int, int]:
        """(job id, namespace id) of a job."""
        [(job_id, namespace_id)] = self.execute(
            "SELECT id, namespace_id FROM {schema}.jobs WHERE job_ref = :ref", ref=str(ref)
        )
        return job_id, namespace_id

    def event(
        self,
        ref: object,
        code: EventCode,
        execution: int | None = None,
        epoch: int | None = None,
        detail: dict[str, Any] | None = None,
        at: datetime | None = None,
        message: str | None = None,
    ) -> None:
        """Append one event about job ``ref``, as a verb of the core would."""
        job_id, namespace_id = self.job(ref)
        if at is None:
            self.clock += timedelta(milliseconds=10)
            at = self.clock
        # SQLite keeps instants as UTC millisecond text (acta.provider.sqlite.transport).
        stored = at.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "milliseconds")
        self.execute(
            "INSERT INTO {schema}.events (at, namespace_id, job_id, job_ref, code, execution, "
            "epoch, message, detail) "
            "VALUES (:at, :ns, :job_id, :ref, :code, :execution, :epoch, :message, :detail)",
            at=stored if self.dialect == "sqlite" else at,
            ns=namespace_id,
            job_id=job_id,
            ref=str(ref),
            code=int(code),
            execution=execution,
            epoch=epoch,
            message=message,
            detail=None if detail is None else json.dumps(detail),
        )

    def run(self, ref: object, execution: int = 1, epoch: int = 1, end: bool = True) -> None:
        """One execution: started and, with ``end``, finished."""
        self.event(ref, EventCode.EXECUTION_STARTED, execution, epoch)
        if end:
            self.event(ref, EventCode.EXECUTION_FINISHED, execution, epoch)
