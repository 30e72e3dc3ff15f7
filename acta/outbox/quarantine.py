"""The outbox quarantine: rows the relay could not admit, and the operator's decisions on them.

The relay moves a row it cannot admit into ``acta_outbox_quarantine`` in the source database,
with the reason. Operators read the entries and decide, once per entry:

- ``requeue`` puts the row back into ``acta_outbox`` under its original id, so it keeps its
  deduplication key and is once more the oldest remaining row of its lane (later rows of the
  lane that were delivered while it sat in quarantine stay delivered; those still staged wait
  for it again). Requeue after fixing what was wrong: deploying the missing job, say.
- ``discard`` drops the row's input; the entry stays as the record of the decision.

Each decision is written twice: on the entry (``decided_at``, ``decision``, ``actor``,
``decision_reason``), readable where the rows are, and as a QUARANTINE_DECIDED event on the
namespace's ``sys.outbox`` slot in the ledger. The source transaction commits only after the
ledger event did, so a decision is never kept without its event (a crash between the two
commits could leave an event for a decision that was rolled back; the entry then still reads
undecided and the decision can simply be made again).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.errors import ActaError
from acta.ledger.control import check_actor
from acta.ledger.events import event_params
from acta.ledger.facade import Ledger
from acta.model.codes import EventCode
from acta.names import validate_text
from acta.outbox.source import OutboxSource, SourceConnection, shown
from acta.provider.verb import Verb, execute, fetch_one

OUTBOX_SLOT = "sys.outbox"
DECISIONS = ("requeue", "discard")


class QuarantineEntryNotFoundError(ActaError, LookupError):
    """No quarantine entry exists for that outbox row id."""


class QuarantineDecidedError(ActaError):
    """The row's quarantine entry was already decided; nothing was changed."""


@dataclass(frozen=True, slots=True)
class QuarantinedRow:
    """One quarantine entry: the staged row, why it was refused, and any decision on it."""

    entry: int
    row: int
    """The outbox row's id (what add_to_outbox returned)."""
    namespace: str
    job_name: str
    reason: str
    message: str
    quarantined_at: datetime
    quarantined_by: str
    attempts: int
    lane: str | None
    dedup_key: str | None
    staged_at: datetime | None
    """None when the stored value is no timestamp (the row may have been quarantined for it;
    the table keeps what was stored)."""
    input_codec: int
    input: bytes | None
    """None once discarded."""
    decided_at: datetime | None
    decision: str | None
    actor: str | None
    decision_reason: str | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> QuarantinedRow:
        """An entry as read. The row's columns hold what another program may have written
        (SQLite keeps any value in any column): each comes back as the type named here, a
        value of another type as its repr, an instant that is none as None."""
        staged_at = row["staged_at"]
        stored = row["input"]
        return cls(
            entry=row["id"],
            row=row["outbox_id"],
            namespace=shown(row["namespace"]),
            job_name=shown(row["job_name"]),
            reason=row["reason"],
            message=row["message"],
            quarantined_at=row["quarantined_at"],
            quarantined_by=row["quarantined_by"],
            attempts=row["attempts"],
            lane=_text_or_none(row["lane"]),
            dedup_key=_text_or_none(row["dedup_key"]),
            staged_at=staged_at if isinstance(staged_at, datetime) else None,
            input_codec=row["input_codec"],
            input=stored.encode() if isinstance(stored, str) else stored,
            decided_at=row["decided_at"],
            decision=row["decision"],
            actor=row["actor"],
            decision_reason=row["decision_reason"],
        )


def _text_or_none(value: object) -> str | None:
    return None if value is None else shown(value)


class Quarantine:
    """Read and decide the quarantine of one outbox source (``app.outbox_quarantine()``)."""

    def __init__(self, source: OutboxSource, ledger: Callable[[], Ledger], namespace: str) -> None:
        self.source = source
        self._ledger = ledger
        self.namespace = namespace

    # -- reading --------------------------------------------------------------------------

    def entries(self, *, everything: bool = False) -> list[QuarantinedRow]:
        """Undecided entries, oldest first (``everything=True``: decided ones too)."""
        with _opened(self.source) as conn:
            found = conn.rows("quarantined", {"everything": everything})
        return [QuarantinedRow.of(row) for row in found]

    def show(self, row: int) -> QuarantinedRow:
        """The entry of outbox row ``row`` (its undecided one, else its latest)."""
        with _opened(self.source) as conn:
            return self._entry(conn, row)

    @staticmethod
    def _entry(conn: SourceConnection, row: int) -> QuarantinedRow:
        if isinstance(row, bool) or not isinstance(row, int):
            raise QuarantineEntryNotFoundError(f"an outbox row id is an int, got {row!r}")
        found = conn.rows("quarantine_entries", {"outbox_id": row})
        if not found:
            raise QuarantineEntryNotFoundError(
                f"outbox row {row} is not in quarantine; `acta outbox quarantine list` shows "
                "the rows that are"
            )
        return QuarantinedRow.of(found[0])

    # -- deciding -------------------------------------------------------------------------

    def requeue(self, row: int, *, actor: str, reason: str | None = None) -> QuarantinedRow:
        """Put outbox row ``row`` back in the outbox, under its id, for the relay to try again."""
        return self._decide(row, "requeue", actor, reason)

    def discard(self, row: int, *, actor: str, reason: str | None = None) -> QuarantinedRow:
        """Give up on outbox row ``row``: its input is dropped, the decision kept."""
        return self._decide(row, "discard", actor, reason)

    async def entries_async(self, *, everything: bool = False) -> list[QuarantinedRow]:
        return await asyncio.to_thread(lambda: self.entries(everything=everything))

    async def show_async(self, row: int) -> QuarantinedRow:
        return await asyncio.to_thread(self.show, row)

    async def requeue_async(
        self, row: int, *, actor: str, reason: str | None = None
    ) -> QuarantinedRow:
        return await asyncio.to_thread(lambda: self.requeue(row, actor=actor, reason=reason))

    async def discard_async(
        self, row: int, *, actor: str, reason: str | None = None
    ) -> QuarantinedRow:
        return await asyncio.to_thread(lambda: self.discard(row, actor=actor, reason=reason))

    def _decide(self, row: int, decision: str, actor: str, reason: str | None) -> QuarantinedRow:
        actor = check_actor(actor)
        if reason is not None:
            reason = validate_text(reason, field="reason", max_length=2000)
        ledger = self._ledger()
        now = ledger.clock.now()
        with _opened(self.source) as conn, conn.transaction():
            entry = self._entry(conn, row)
            if entry.decided_at is not None:
                raise QuarantineDecidedError(
                    f"outbox row {row} was already decided ({entry.decision} by {entry.actor} "
                    f"at {entry.decided_at.isoformat()}); nothing was changed"
                )
            params = {"entry": entry.entry, "now": now, "decision": decision}
            conn.execute("decide", {**params, "actor": actor, "reason": reason})
            if decision == "requeue":
                conn.execute("requeue", {"entry": entry.entry})
            detail = {"source": self.source.name, "row": row, "decision": decision}
            message = f"outbox row {row} of source {self.source.name!r}: {decision} by {actor}"
            if reason:
                message += f" ({reason})"
            ns, sql_now = self.namespace, ledger.now()
            said = (message, json.dumps(detail), actor)
            ledger.run(lambda: _decided(ns, sql_now, *said), name="decide")
            return self._entry(conn, row)


def _decided(
    namespace: str, now: datetime | None, message: str, detail: str, actor: str
) -> Verb[None]:
    """The QUARANTINE_DECIDED event, on the namespace's relay slot when there is one."""
    # A ledger where no worker of the namespace ever ran has no namespace row yet.
    yield execute("ensure_namespace", {"now": now, "namespace": namespace})
    found = yield fetch_one("namespace_id", {"namespace": namespace})
    namespace_id = found["namespace_id"]
    slot = yield fetch_one(
        "job_by_ref_or_dedup_key",
        {
            "namespace_id": namespace_id,
            "job_ref": None,
            "dedup_key": OUTBOX_SLOT,
            "parent_id": None,
            "child_name": None,
        },
    )
    job_id, job_ref = (slot["job_id"], slot["job_ref"]) if slot else (None, None)
    event = event_params(
        now,
        namespace_id,
        job_id,
        job_ref,
        EventCode.QUARANTINE_DECIDED,
        message=message,
        detail=detail,
        actor=actor,
    )
    yield execute("insert_event", event)


class _opened:
    """``with _opened(source) as conn``: a source connection closed on the way out."""

    def __init__(self, source: OutboxSource) -> None:
        self.conn = source.open()

    def __enter__(self) -> SourceConnection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()
