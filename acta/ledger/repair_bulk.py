"""Repair verbs over many jobs chosen by a filter: restart, cancel, reschedule and purge, a
batch per transaction; and the cancellation of a retired definition's queue.

A bulk verb walks the matching jobs in id order, one batch (``BATCH`` jobs) per call, and each
call is one transaction: a fault costs that batch, never the work already committed. Every job
is changed by the same guarded single-job verb as ``acta.ledger.repair``; a job that moved
since the batch was read is counted as skipped, not retried. The caller (``acta.repair``)
loops while a batch says there is more.

A batch answers its report with the probe of the last event it wrote, and the caller runs it
with ``acta.ledger.doubt.once``: a batch whose COMMIT reply was lost and that the provider runs
again answers the first attempt's report (read again, the jobs it changed no longer match, and
the walk would stop early, counting nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from acta.errors import ConflictError, JobStateError
from acta.ledger import read
from acta.ledger.control import cancel
from acta.ledger.doubt import job_event_probe
from acta.ledger.events import Who, event_params
from acta.ledger.repair import reschedule_row, restart_row
from acta.model.codes import EventCode, JobStatus, Reason
from acta.provider.verb import Op, Verb, execute, fetch_all, fetch_one

BATCH = 100
"""Jobs one bulk transaction changes."""


@dataclass(frozen=True, slots=True)
class JobFilter:
    """Which jobs of a namespace a bulk verb takes; every given field must match.

    ``statuses`` narrows the verb's own statuses (restart: finished ones; cancel: unfinished;
    reschedule: ready; purge: finished). Instants compare with ``created_at`` (``created_after``
    inclusive, ``created_before`` exclusive) and, for ``finished_before``, with the instant a
    finished job reached its final status. acta's own jobs and recurring slots never match.
    """

    statuses: tuple[JobStatus, ...] = ()
    name: str | None = None
    tag: str | None = None
    correlation_key: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    finished_before: datetime | None = None
    tenant: str | None = None
    """Only the jobs of this tenant (by key)."""

    @property
    def empty(self) -> bool:
        """Whether nothing narrows it (a bulk change refuses that: name at least one field)."""
        return not (
            self.statuses
            or self.name
            or self.tag
            or self.correlation_key
            or self.created_after
            or self.created_before
            or self.finished_before
            or self.tenant
        )


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What one batch did."""

    changed: list[str] = field(default_factory=list)
    """Refs of the jobs the verb changed (for purge: deleted)."""
    skipped: int = 0
    """Jobs that matched when read but moved before they could be changed."""
    last_id: int = 0
    more: bool = False


def _params(namespace: str, flt: JobFilter, statuses: tuple[JobStatus, ...]) -> dict[str, object]:
    return {
        "namespace": namespace,
        "statuses": json.dumps([int(s) for s in statuses]),
        "name": flt.name,
        "tag": flt.tag,
        "correlation_key": flt.correlation_key,
        "created_after": flt.created_after,
        "created_before": flt.created_before,
        "finished_before": flt.finished_before,
        "tenant": flt.tenant,
    }


def count(namespace: str, flt: JobFilter, statuses: tuple[JobStatus, ...]) -> Verb[int]:
    """How many jobs match (a dry run)."""
    row = yield fetch_one("repair_count", _params(namespace, flt, statuses))
    return int(row["matched"])


def _batch(
    namespace: str, flt: JobFilter, statuses: tuple[JobStatus, ...], after_id: int, limit: int
) -> Verb[list[tuple[int, str]]]:
    params = {**_params(namespace, flt, statuses), "after_id": after_id, "limit": limit}
    rows = yield fetch_all("repair_select", params)
    return [(row["job_id"], row["job_ref"]) for row in rows]


def restart_batch(
    namespace: str, flt: JobFilter, who: Who, now: datetime | None, after_id: int, limit: int
) -> Verb[tuple[BatchReport, Op | None]]:
    """Restart the next batch of matching finished jobs."""
    refs = yield from _batch(namespace, flt, flt.statuses, after_id, limit)
    report = BatchReport(more=len(refs) >= limit)
    last = max([after_id, *(job_id for job_id, _ in refs)])
    wrote: int | None = None
    for _, ref in refs:
        info = yield from read.job(ref, namespace)
        if info is None:
            report = _skip(report)
            continue
        try:
            done = yield from restart_row(info, who, now)
        except JobStateError:
            done = False  # matched as finished, restarted by someone else since
        report = _did(report, ref) if done else _skip(report)
        wrote = info.job_id if done else wrote
    return _at(report, last), (yield from _probe(wrote, EventCode.RESTARTED))


def reschedule_batch(
    namespace: str,
    flt: JobFilter,
    at: datetime | None,
    who: Who,
    now: datetime | None,
    after_id: int,
    limit: int,
) -> Verb[tuple[BatchReport, Op | None]]:
    """Move the next batch of matching ready jobs to ``at`` (None: now)."""
    refs = yield from _batch(namespace, flt, flt.statuses, after_id, limit)
    report = BatchReport(more=len(refs) >= limit)
    last = max([after_id, *(job_id for job_id, _ in refs)])
    wrote: int | None = None
    for _, ref in refs:
        info = yield from read.job(ref, namespace)
        if info is None:
            report = _skip(report)
            continue
        try:
            done = yield from reschedule_row(info, at, who, now)
        except JobStateError:
            done = False
        report = _did(report, ref) if done else _skip(report)
        wrote = info.job_id if done else wrote
    return _at(report, last), (yield from _probe(wrote, EventCode.RUN_AT_CHANGED))


def cancel_batch(
    namespace: str, flt: JobFilter, who: Who, now: datetime | None, after_id: int, limit: int
) -> Verb[tuple[BatchReport, Op | None]]:
    """Cancel the next batch of matching unfinished jobs (a running one is asked to stop)."""
    refs = yield from _batch(namespace, flt, flt.statuses, after_id, limit)
    report = BatchReport(more=len(refs) >= limit)
    last = max([after_id, *(job_id for job_id, _ in refs)])
    wrote: tuple[int, EventCode] | None = None
    for _, ref in refs:
        info = yield from read.job(ref, namespace)
        if info is None or info.status.terminal:
            report = _skip(report)
            continue
        try:
            status = yield from cancel(ref, namespace, who.reason, now, actor=who.actor)
        except ConflictError:
            report = _skip(report)
            continue
        report = _did(report, ref)
        if status is JobStatus.CANCELLED:
            wrote = info.job_id, EventCode.CANCELLED
        elif not info.cancel_requested:  # asked before: this batch wrote nothing for it
            wrote = info.job_id, EventCode.CANCEL_REQUESTED
    probe = None if wrote is None else (yield from _probe(*wrote))
    return _at(report, last), probe


def purge_batch(
    namespace: str, flt: JobFilter, who: Who, now: datetime | None, after_id: int, limit: int
) -> Verb[tuple[BatchReport, Op | None]]:
    """Delete the next batch of matching finished jobs; their events stay, with one purged
    event each saying who removed them."""
    params = {**_params(namespace, flt, flt.statuses), "after_id": after_id, "limit": limit}
    rows = yield fetch_all("repair_select", params)
    more = len(rows) >= limit
    if not rows:
        return BatchReport(last_id=after_id, more=False), None
    ids = [row["job_id"] for row in rows]
    gone = yield fetch_all(
        "purgeable_before",
        {"job_ids": json.dumps(ids), "before": flt.finished_before or now},
    )
    if gone:
        # The same delete as retention's, with a tombstone per job so its ref still resolves.
        doomed = json.dumps([row["job_id"] for row in gone])
        yield execute("insert_tombstones", {"now": now, "job_ids": doomed})
        yield execute("purge_jobs", {"job_ids": doomed})
    events = [
        event_params(
            now,
            row["namespace_id"],
            row["job_id"],
            row["job_ref"],
            EventCode.PURGED,
            reason=int(Reason.OPERATOR),
            message="purged by an operator",
            detail=who.detail("purge"),
            actor=who.actor,
        )
        for row in gone
    ]
    for params_one in events:
        yield execute("insert_event", params_one)
    report = BatchReport(
        changed=sorted(row["job_ref"] for row in gone),
        skipped=len(ids) - len(gone),
        last_id=max(ids),
        more=more,
    )
    wrote = gone[-1]["job_id"] if gone else None
    return report, (yield from _probe(wrote, EventCode.PURGED))


def cancel_queue(
    definition_id: int, who: Who, now: datetime | None, after_id: int, limit: int
) -> Verb[tuple[BatchReport, Op | None]]:
    """Cancel up to ``limit`` waiting (not running) jobs of a retired definition, after
    job id ``after_id``. Recurring slots are left alone: paused with it, they never run."""
    params = {"definition_id": definition_id, "after_id": after_id, "limit": limit}
    rows = yield fetch_all("repair_queued_of", params)
    last = max([after_id, *(row["job_id"] for row in rows)])
    report = BatchReport(last_id=last, more=len(rows) >= limit)
    wrote: int | None = None
    for row in rows:
        info = yield from read.job(row["job_ref"], None)
        if info is None or info.status.terminal or info.status in _RUNNING:
            report = _skip(report)
            continue
        status = yield from cancel(
            info.job_ref, None, f"definition retired: {who.reason}", now, actor=who.actor
        )
        done = status is JobStatus.CANCELLED
        report = _did(report, info.job_ref) if done else _skip(report)
        wrote = info.job_id if done else wrote
    return report, (yield from _probe(wrote, EventCode.CANCELLED))


_RUNNING = (JobStatus.DISPATCHED, JobStatus.EXECUTING)


def _probe(job_id: int | None, code: EventCode) -> Verb[Op | None]:
    """The probe of the ``code`` event a batch wrote last, on job ``job_id`` (None: it wrote
    nothing, so a retry has nothing to find)."""
    if job_id is None:
        return None
    return (yield from job_event_probe(job_id, int(code)))


def _did(report: BatchReport, ref: str) -> BatchReport:
    return BatchReport([*report.changed, ref], report.skipped, report.last_id, report.more)


def _skip(report: BatchReport) -> BatchReport:
    return BatchReport(report.changed, report.skipped + 1, report.last_id, report.more)


def _at(report: BatchReport, last: int) -> BatchReport:
    return BatchReport(report.changed, report.skipped, last, report.more)
