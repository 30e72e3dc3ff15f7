"""Shared by the schedule chaos test: the lab app, and what the ledger says a schedule fired.

The app (``APP``, written to a file the worker processes import) has one job, ``chaos.tick``,
on a one-second interval schedule (misfire ``skip``, the default). Its handler takes a little
time on either side of one witness row that it writes on a connection of its own, committed
before it returns: the slot's ref, the scheduled instant (``ctx.firing.at.isoformat()``, the
very text the ``fired`` event's message carries), ``ctx.execution``, the process id and a
fresh uuid. So a kill can land before, inside or after the firing's effect.

``firings`` reads the slot's ``fired`` events back from the ledger, through the test's own
connection, and parses their message (schedules, instant, outcome, missed count): the events
carry no structured detail, so the message is the record (acta.ledger.schedule.describe_firing).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from datetime import datetime

from chaos.durable_support import Ledger

JOB = "chaos.tick"
EVERY_MS = 1000

APP = textwrap.dedent(
    """
    import os, random, threading, time, uuid
    from acta import Acta, SyncJobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])
    INSERT = os.environ["WITNESS_INSERT"]
    rng = random.Random(os.getpid())
    local = threading.local()

    def connection():
        # One connection per executor thread, of the handler's own (not acta's).
        if getattr(local, "conn", None) is None:
            if os.environ["WITNESS_DIALECT"] == "postgres":
                import psycopg
                local.conn = psycopg.connect(os.environ["ACTA_DATABASE"], autocommit=True)
            else:
                import sqlite3
                local.conn = sqlite3.connect(
                    os.environ["ACTA_DATABASE"], isolation_level=None, timeout=30
                )
        return local.conn

    @app.job("chaos.tick", schedule="1s", timeout="60s", max_attempts=100)
    def tick(ctx: SyncJobContext) -> None:
        time.sleep(rng.uniform(0.02, 0.15))
        row = {"job_ref": str(ctx.job), "step": ctx.firing.at.isoformat(),
               "execution": ctx.execution, "pid": os.getpid(), "token": str(uuid.uuid4())}
        connection().execute(INSERT, row)  # committed: the firing's effect happened
        time.sleep(rng.uniform(0.02, 0.15))
    """
)

# "default fired for 2026-12-03T15:30:01+00:00: succeeded; 2 more due instant(s) covered..."
_MESSAGE = re.compile(
    r"^(?P<names>.*) fired for (?P<at>\S+): (?P<outcome>\w+)"
    r"(?P<triggered> \(triggered by an operator\))?"
    r"(?:; (?P<missed>\d+) more due instant)?"
)


@dataclass(frozen=True)
class Fired:
    """One ``fired`` event of the slot, as its message tells it."""

    event_id: int
    execution: int | None
    schedules: str
    at: datetime
    outcome: str
    triggered: bool
    missed: int


def firings(ledger: Ledger, job: str = JOB) -> list[Fired]:
    """The ``fired`` events (code 46) of ``job``'s recurring slot, in the order written."""
    found = []
    for event_id, execution, message in ledger.rows(
        "SELECT e.id, e.execution, e.message FROM {schema}.events e "
        "JOIN {schema}.jobs j ON j.id = e.job_id "
        "JOIN {schema}.definitions d ON d.id = j.definition_id "
        "WHERE d.name = :job AND e.code = 46 ORDER BY e.id",
        job=job,
    ):
        match = _MESSAGE.match(message)
        assert match is not None, f"unreadable fired event {event_id}: {message!r}"
        found.append(
            Fired(
                event_id,
                execution,
                match["names"],
                datetime.fromisoformat(match["at"]),
                match["outcome"],
                match["triggered"] is not None,
                int(match["missed"] or 0),
            )
        )
    return found


def slot_ref(ledger: Ledger, job: str = JOB) -> str | None:
    """The public ref of ``job``'s recurring slot, once a worker registered it."""
    rows = ledger.rows(
        "SELECT j.job_ref FROM {schema}.schedules s JOIN {schema}.jobs j ON j.id = s.slot_id "
        "JOIN {schema}.definitions d ON d.id = s.definition_id WHERE d.name = :job",
        job=job,
    )
    return str(rows[0][0]) if rows else None


# The process holding the slot's lease now (dispatched or executing), if any, and whether the
# handler of the run in progress has already committed its witness row (its effect).
HOLDER = (
    "SELECT w.pid, r.status, "
    "CASE WHEN EXISTS (SELECT 1 FROM {schema}.witness x "
    "WHERE x.job_ref = j.job_ref AND x.execution = r.executions) THEN 1 ELSE 0 END "
    "FROM {schema}.runtime r "
    "JOIN {schema}.workers w ON w.id = r.lease_owner "
    "JOIN {schema}.jobs j ON j.id = r.job_id WHERE j.job_ref = :ref AND r.status IN (20, 21)"
)
