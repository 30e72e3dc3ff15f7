"""``Evidence``: the rows explain judges a job by, read in one transaction.

``gather`` is a ledger verb (a generator of named statements from ``queries/explain.sql``): the
job with its runtime row, definition, lease holder and lane head; the newest event of each
kind; the namespace's live workers; and, only when the job's state makes them matter, its
place in the claim order, the wait it is parked on and the gates that can bounce it. The
database's own clock is read in the same transaction (``now``), so every age and every "due"
is judged as the claim would judge it. Nothing here decides anything: verdicts do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from acta.ledger.read import event_info
from acta.model.codes import EventCode, JobStatus, Outcome, WaitKind
from acta.model.rows import EventInfo
from acta.provider.verb import Verb, fetch_all, fetch_one

SILENT_AFTER = 2
"""Heartbeat intervals without a beat after which a worker counts as silent (its lease, four
intervals long, still stands; recovery declares it dead at seven)."""


@dataclass(frozen=True, slots=True)
class LiveWorker:
    """A worker of the job's namespace that has neither stopped nor been declared dead."""

    incarnation: str
    host: str
    heartbeat_at: datetime
    heartbeat_ms: int
    lacks_handler: bool
    """It handed back a job of this definition for want of a handler (it skips it now).
    Read only when the job is due; False otherwise."""

    def silent(self, now: datetime) -> bool:
        return now - self.heartbeat_at > timedelta(milliseconds=self.heartbeat_ms * SILENT_AFTER)


@dataclass(frozen=True, slots=True)
class Wait:
    """The durable wait a suspended job is parked on."""

    kind: WaitKind
    name: str
    due_at: datetime | None
    armed_at: datetime
    signalled: bool


@dataclass(frozen=True, slots=True)
class Gate:
    """A gate that can turn the job away: a concurrency gate (``key`` or ``job``) or a meter."""

    source: str
    """``"key"``, ``"job"`` (concurrency gates) or ``"meter"`` (a rate)."""
    name: str
    limit: int
    held: int
    booked_until: datetime | None


@dataclass(frozen=True, slots=True)
class Evidence:
    """A job's rows as explain reads them (``job``: the explain_job row, by column)."""

    job: dict[str, Any]
    now: datetime
    events: tuple[EventInfo, ...]
    workers: tuple[LiveWorker, ...]
    ahead: int | None = None
    """Claimable jobs before this one in claim order (read only when it is due)."""
    wait: Wait | None = None
    gates: tuple[Gate, ...] = field(default=())
    locks: tuple[str, ...] = field(default=())
    """The ``ctx.lock`` keys a running job holds under its current lease."""

    # -- the job row, typed ------------------------------------------------------------------

    @property
    def ref(self) -> str:
        return str(self.job["job_ref"])

    @property
    def status(self) -> JobStatus:
        return JobStatus(self.job["status"])

    def at(self, column: str) -> datetime | None:
        value = self.job[column]
        return value if isinstance(value, datetime) else None

    @property
    def due(self) -> bool:
        """Whether the claim would take it now (its next_run_at has come)."""
        return bool(self.job["next_run_at"] <= self.now)

    # -- events --------------------------------------------------------------------------------

    def newest(self, *codes: EventCode, outcomes: tuple[Outcome, ...] = ()) -> EventInfo | None:
        """The newest event with one of ``codes`` (and, if given, one of ``outcomes``)."""
        for event in reversed(self.events):
            if event.code in codes and (not outcomes or event.outcome in outcomes):
                return event
        return None

    def last_error(self) -> EventInfo | None:
        """The newest event that records a failure: a failed or timed-out run, a lost lease,
        or the failure that ended the job."""
        for event in reversed(self.events):
            if event.code in (EventCode.FAILED, EventCode.LEASE_LOST):
                return event
            if event.code is EventCode.EXECUTION_FINISHED and event.outcome in _FAILED_RUNS:
                return event
        return None


_FAILED_RUNS = (Outcome.FAILED, Outcome.TIMED_OUT)
_DUE_STATES = (JobStatus.READY, JobStatus.SUSPENDED)
_GATE_SOURCES = {1: "key", 2: "job", 0: "meter"}


def gather(job_ref: str, namespace: str, now: datetime | None) -> Verb[Evidence | None]:
    """Read everything explain needs about one job; None when there is no such job."""
    job = yield fetch_one("explain_job", {"now": now, "job_ref": job_ref, "namespace": namespace})
    if job is None:
        return None
    job = dict(job)
    clock: datetime = job["now_at"]
    event_rows = yield fetch_all("explain_events", {"job_id": job["job_id"]})
    worker_rows = yield fetch_all(
        "explain_workers",
        {"namespace_id": job["namespace_id"], "definition_id": job["definition_id"]},
    )
    status = JobStatus(job["status"])
    ahead: int | None = None
    lacking: set[str] = set()
    if status in _DUE_STATES and job["next_run_at"] <= clock:
        if worker_rows:
            handed = yield fetch_all(
                "explain_handed_back",
                {"namespace_id": job["namespace_id"], "definition_id": job["definition_id"]},
            )
            lacking = {r["incarnation"] for r in handed}
        row = yield fetch_one(
            "explain_ahead",
            {
                "now": now,
                "namespace_id": job["namespace_id"],
                "priority": job["priority"],
                "next_run_at": job["next_run_at"],
                "job_id": job["job_id"],
            },
        )
        ahead = int(row["ahead"])
    wait = None
    if status is JobStatus.SUSPENDED:
        row = yield fetch_one("explain_wait", {"job_id": job["job_id"]})
        if row is not None:
            wait = Wait(
                WaitKind(row["kind"]),
                row["name"],
                row["due_at"],
                row["armed_at"],
                bool(row["signalled"]),
            )
    gates: tuple[Gate, ...] = ()
    if status is JobStatus.READY and (
        job["concurrency_key"] or job["concurrency_limit"] or job["meter"]
    ):
        rows = yield fetch_all(
            "explain_gates",
            {
                "namespace_id": job["namespace_id"],
                "concurrency_key": job["concurrency_key"],
                "name": job["name"],
                "meter": job["meter"],
            },
        )
        gates = tuple(
            Gate(
                _GATE_SOURCES[int(r["kind"])] if r["source"] == "gate" else "meter",
                r["name"],
                int(r["slot_limit"]),
                int(r["held"]),
                r["booked_until_at"],
            )
            for r in rows
        )
    locks: tuple[str, ...] = ()
    if status is JobStatus.EXECUTING:
        held = yield fetch_all(
            "explain_locks", {"job_id": job["job_id"], "epoch": job["lease_epoch"]}
        )
        locks = tuple(str(r["name"]) for r in held)
    return Evidence(
        job=job,
        now=clock,
        events=tuple(event_info(r) for r in event_rows),
        workers=tuple(
            LiveWorker(
                r["incarnation"],
                r["host"],
                r["heartbeat_at"],
                int(r["heartbeat_ms"]),
                r["incarnation"] in lacking,
            )
            for r in worker_rows
        ),
        ahead=ahead,
        wait=wait,
        gates=gates,
        locks=locks,
    )
