"""The outbox relay's work on both sides: claiming staged rows, judging them, delivering them.

One relay cycle is three transactions in two databases, in this order:

1. ``claim`` (source): hold a batch of staged rows, oldest first, respecting lanes (a row
   naming a lane waits while an older row of its lane is held by someone else).
2. ``deliver`` (ledger, fenced by the run's lease on its slot): enqueue the admissible rows
   as jobs, each under a deduplication key derived from the row (``outbox:<source>:<row
   id>``, or the key the row was staged with), with a DELIVERED event naming the row; and a
   QUARANTINED event on the relay's own slot for each row that cannot be admitted.
3. ``settle`` (source): delete the delivered rows and move the refused ones to quarantine.

A crash between 2 and 3 leaves the rows staged; their holds lapse, a relay claims them again
and the deduplication keys hand back the jobs already written, so a repeated delivery is free.
If step 2 fails, ``release`` gives the rows back untouched (attempts counted, error kept): they
stay the oldest of their lanes, so a delivery retry holds the lane's line. Moving a row to
quarantine deletes it from the outbox, which releases the line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from acta.codec import check_size, codecs
from acta.errors import (
    ActaError,
    DefinitionRetiredError,
    PayloadTooLargeError,
    UnknownJobError,
    ValidationError,
)
from acta.ledger.enqueue import enqueue
from acta.ledger.events import event_params
from acta.model.codes import EventCode, JobStatus, audited
from acta.model.rows import DefinitionSpec, Enqueued, NewJob
from acta.names import validate_namespace
from acta.outbox.source import SourceConnection, shown
from acta.producer import build_request, new_job
from acta.provider.verb import Verb, execute_many, fetch_all, fetch_one
from acta.registry import Registry
from acta.shape import from_data

UNKNOWN_JOB = "unknown_job"
UNDECODABLE = "undecodable"
TOO_LARGE = "too_large"
BAD_NAMESPACE = "bad_namespace"
REJECTED = "rejected"
REASONS = (UNKNOWN_JOB, UNDECODABLE, TOO_LARGE, BAD_NAMESPACE, REJECTED)
"""Why a row was quarantined (a row naming a retired job is ``rejected``)."""


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One staged row as the relay claimed it.

    The table is the application's, and SQLite keeps any value in any column, so nothing here
    is trusted. The columns enqueue has an option for (job name, priority, keys, lane, tags)
    are kept as stored, whatever their type, for admission to judge exactly as enqueue judges
    that option. The others must be what they encode (instants, the codec, the input bytes):
    ``flaw`` names the first that is not, and admission quarantines the row for it.
    """

    id: int
    namespace: Any
    job_name: Any
    input_codec: int
    input: bytes
    priority: Any
    run_at: datetime | None
    dedup_key: Any
    correlation_key: Any
    tags: Any
    lane: Any
    concurrency_key: Any
    deadline_at: datetime | None
    deadline_strict: bool
    staged_at: datetime | None
    attempts: int
    flaw: str | None = None
    """Why the row cannot be read at all (``column: problem (rule)``); None when it can."""

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> OutboxRow:
        """The row as read (``SourceConnection`` leaves unreadable instants as stored); never
        raises, so one bad row cannot stop a batch."""
        values = dict(row)
        flaws = []
        for column in ("run_at", "deadline_at", "staged_at"):
            value = values[column]
            if not isinstance(value, datetime) and (value is not None or column == "staged_at"):
                flaws.append(f"{column}: {value!r} is not a timestamp ({INSTANT_RULE})")
                values[column] = None
        if isinstance(values["input"], str):
            values["input"] = values["input"].encode()  # SQLite text in the BLOB column
        if not isinstance(values["input"], bytes):
            flaws.append(f"input: {type(values['input']).__name__} is stored, not bytes")
            values["input"] = b""
        codec = values["input_codec"]
        if isinstance(codec, bool) or not isinstance(codec, int):
            flaws.append(f"input_codec: {codec!r} is not a codec number")
            values["input_codec"] = 0
        values["deadline_strict"] = bool(values["deadline_strict"])
        return cls(**values, flaw=flaws[0] if flaws else None)


INSTANT_RULE = "ISO 8601 text such as '2026-01-01 09:30:00.000' in UTC, years 1 to 9999"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a row cannot become a job here: one of ``REASONS``, the details, and the name of
    the error enqueue raises for the same values (None for what only a stored row can get
    wrong, an unreadable column)."""

    reason: str
    message: str
    error: str | None = None

    @classmethod
    def of(cls, reason: str, exc: Exception) -> Refusal:
        return cls(reason, f"{type(exc).__name__}: {exc}", type(exc).__name__)


def delivery_key(source: str, row: OutboxRow) -> str:
    """The deduplication key a row's job is enqueued under: the row's own, else one derived
    from the source's name and the row's id (stable across repeated deliveries)."""
    return row.dedup_key if row.dedup_key is not None else f"outbox:{source}:{row.id}"


# -- 1. claiming (source) -----------------------------------------------------------------------


def claim(
    conn: SourceConnection, namespace: str, me: str, now: datetime, hold: timedelta, batch: int
) -> list[OutboxRow]:
    """Hold up to ``batch`` rows of ``namespace`` (and rows whose namespace is not a valid
    name, which only quarantine can take) for ``hold``, in one source transaction."""
    with conn.transaction():
        conn.execute("lock")
        names = [namespace]
        for staged in conn.rows("namespaces"):
            if staged["namespace"] != namespace and not _valid_namespace(staged["namespace"]):
                names.append(staged["namespace"])
        found: list[OutboxRow] = []
        for name in names:
            params = {"namespace": name, "now": now, "batch": batch}
            found.extend(OutboxRow.of(r) for r in conn.rows("candidates", params))
        found.sort(key=lambda r: r.id)
        taken = _one_key_each(found[:batch])
        if taken:
            conn.execute("hold", {"me": me, "until": now + hold, "ids": [r.id for r in taken]})
    return taken


def _valid_namespace(name: str) -> bool:
    try:
        validate_namespace(name)
    except ActaError:
        return False
    return True


def _one_key_each(rows: list[OutboxRow]) -> list[OutboxRow]:
    """Leave for a later cycle a row whose staged deduplication key an older row of this batch
    already uses (one enqueue refuses a repeated key), and the later rows of its lane."""
    keys: set[str] = set()
    blocked: set[tuple[str, str]] = set()
    taken = []
    for row in rows:
        lane = (row.namespace, row.lane) if row.lane is not None else None
        if lane in blocked or (row.dedup_key is not None and row.dedup_key in keys):
            if lane is not None:
                blocked.add(lane)
            continue
        if row.dedup_key is not None:
            keys.add(row.dedup_key)
        taken.append(row)
    return taken


# -- judging -------------------------------------------------------------------------------------


def admit(
    row: OutboxRow, registry: Registry, source: str, job_ref: str
) -> tuple[NewJob, DefinitionSpec] | Refusal:
    """The job ``row`` becomes in the ledger, or why it cannot become one here. Past reading
    the row, it is admitted by enqueue's own validation (``build_request``), so a row is
    refused exactly when enqueue would refuse the same values, with the same error."""
    try:
        validate_namespace(row.namespace)
    except ValidationError as exc:
        return Refusal.of(BAD_NAMESPACE, exc)
    if row.flaw is not None or row.staged_at is None:
        return Refusal(UNDECODABLE, row.flaw or "staged_at: missing")
    try:
        definition = registry.resolve(row.job_name)
        # The size first, as enqueue does after encoding: a huge input is not decoded.
        check_size(row.input, registry.payload_cap, "input")
        try:
            value = from_data(
                codecs.by_code(row.input_codec).decode(row.input), definition.input_type
            )
        except Exception as exc:  # any failure to read it back means the handler could not either
            return Refusal(UNDECODABLE, f"input cannot be decoded: {type(exc).__name__}: {exc}")
        request = build_request(
            registry,
            definition,
            value,
            priority=row.priority,
            not_before=row.run_at,
            dedup_key=delivery_key(source, row),
            correlation_key=row.correlation_key,
            tags=_json_list(row.tags),
            lane=row.lane,
            concurrency_key=row.concurrency_key,
            deadline=row.deadline_at,
            deadline_policy="strict" if row.deadline_strict else "advisory",
        )
    except UnknownJobError as exc:
        return Refusal.of(UNKNOWN_JOB, exc)
    except PayloadTooLargeError as exc:
        return Refusal.of(TOO_LARGE, exc)
    except ActaError as exc:  # ValidationError and its kinds, or any other refusal
        return Refusal.of(REJECTED, exc)
    # The row's own lane, even NULL: enqueue would give a NULL lane the definition's default,
    # but the outbox ordered this row by its column, so the ledger's lane must be that one.
    job = new_job(replace(request, lane=row.lane), job_ref, row.staged_at)
    return job, definition.spec()


def _json_list(text: object) -> list[Any]:
    """The stored tags (a JSON array); ValidationError when they are not one."""
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, list):
        raise ValidationError("tags", f"stored {text!r}", "a JSON array of tags, '[]' for none")
    return value


# -- 2. delivering (ledger) ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SlotLease:
    """The relay run's lease on its ``sys.outbox`` slot: every delivery is fenced by it."""

    job_id: int
    job_ref: str
    epoch: int
    worker_id: int


def slot_lease(job_ref: str, namespace: str, worker_id: int) -> Verb[SlotLease | None]:
    """The lease this worker holds on the slot ``job_ref`` now (None: it holds none)."""
    row = yield fetch_one("job_by_ref", {"job_ref": job_ref, "namespace": namespace})
    if row is None or row["lease_owner"] != worker_id or row["status"] != int(JobStatus.EXECUTING):
        return None
    return SlotLease(row["job_id"], row["job_ref"], row["lease_epoch"], worker_id)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one cycle hands the ledger: admitted rows with their jobs, and refused rows."""

    source: str
    namespace: str
    namespace_id: int
    lease: SlotLease
    jobs: list[tuple[OutboxRow, NewJob]]
    specs: dict[str, DefinitionSpec]
    refused: list[tuple[OutboxRow, Refusal]]


def deliver(
    d: Delivery,
    now: datetime | None,
    known: tuple[int, Mapping[str, int]] | None,
    *,
    fused: bool,
    channel: str | None,
) -> Verb[
    tuple[list[Enqueued], tuple[int, Mapping[str, int]] | None, list[tuple[OutboxRow, Refusal]]]
    | None
]:
    """Enqueue the admitted rows (lanes in staging order: the batch is in row order) and write
    the DELIVERED and QUARANTINED events, all in one ledger transaction, fenced by the relay
    slot's lease (None, and nothing written, when the run no longer holds it)."""
    lease = d.lease
    held = yield fetch_one(
        "lease_guard", {"job_id": lease.job_id, "epoch": lease.epoch, "worker_id": lease.worker_id}
    )
    if held is None:
        return None
    written: list[Enqueued] = []
    events: list[dict[str, object]] = []
    # A job an operator retired takes no new jobs (enqueue would refuse the whole batch): its
    # rows are quarantined instead, and returned so the source settles them as such.
    names = sorted({job.definition for _, job in d.jobs})
    rows = yield fetch_all("retired_named", {"namespace": d.namespace, "names": json.dumps(names)})
    retired = {row["name"] for row in rows}
    late = [
        (row, Refusal.of(REJECTED, DefinitionRetiredError(job.definition)))
        for row, job in d.jobs
        if job.definition in retired
    ]
    admitted = [pair for pair in d.jobs if pair[1].definition not in retired]
    # Lane members take enqueue's row-by-row path (each books its place in line, in batch
    # order, which is staging order); the rest go in one statement where the dialect can.
    # Both parts are in this one transaction.
    laned = [pair for pair in admitted if pair[1].lane is not None]
    unlaned = [pair for pair in admitted if pair[1].lane is None]
    delivered: list[tuple[OutboxRow, NewJob]] = []
    for part in (unlaned, laned):
        if not part:
            continue
        jobs = [job for _, job in part]
        part_written, known = yield from enqueue(
            d.namespace, d.specs, jobs, now, known, fused=fused, channel=channel
        )
        written.extend(part_written)
        delivered.extend(part)
    if delivered:
        for (row, job), made in zip(delivered, written, strict=True):
            # A repeated delivery found its job already there: nothing new to record.
            if made.created and audited(job.audit_level, EventCode.DELIVERED):
                events.append(delivered_event(now, d, made, row))
    for row, refusal in [*d.refused, *late]:
        events.append(quarantined_event(now, d, row, refusal))
    if events:
        yield execute_many("insert_event", events)
    return written, known, late


def delivered_event(
    now: datetime | None, d: Delivery, done: Enqueued, row: OutboxRow
) -> dict[str, object]:
    return event_params(
        now,
        d.namespace_id,
        done.job_id,
        done.job_ref,
        EventCode.DELIVERED,
        message=f"delivered from outbox row {row.id} of source {d.source!r}",
        detail=json.dumps({"source": d.source, "row": row.id}),
    )


def quarantined_event(
    now: datetime | None, d: Delivery, row: OutboxRow, refusal: Refusal
) -> dict[str, object]:
    detail = {
        "source": d.source,
        "row": row.id,
        "job": shown(row.job_name),
        "reason": refusal.reason,
        "error": refusal.error,
    }
    return event_params(
        now,
        d.namespace_id,
        d.lease.job_id,
        d.lease.job_ref,
        EventCode.QUARANTINED,
        message=f"outbox row {row.id} of source {d.source!r} quarantined: {refusal.message}",
        detail=json.dumps(detail),
    )


# -- 3. settling (source) ------------------------------------------------------------------------


def settle(
    conn: SourceConnection,
    delivered: Sequence[int],
    refused: Sequence[tuple[OutboxRow, Refusal]],
    me: str,
    now: datetime,
) -> None:
    """Delete the delivered rows; move the refused ones to quarantine. One source transaction."""
    with conn.transaction():
        for row, refusal in refused:
            params = {"id": row.id, "reason": refusal.reason, "message": refusal.message}
            conn.execute("quarantine", {**params, "now": now, "me": me})
        gone = [*delivered, *(row.id for row, _ in refused)]
        if gone:
            conn.execute("remove", {"ids": gone})


def release(conn: SourceConnection, rows: Sequence[int], me: str, error: str) -> None:
    """Give back rows whose delivery failed: they stay first in their lanes' lines."""
    with conn.transaction():
        conn.execute("release", {"ids": list(rows), "me": me, "error": error})
