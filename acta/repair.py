"""The repair verbs of the operator surface: restart, reschedule, amend, pause, resume, retire
and purge, for one job or many.

``app.repairs`` (to be folded into ``app.ops``) changes jobs, definitions and the namespace of
one application. Every argument is checked before any statement runs (a typed error, nothing
written); each single verb is one transaction that writes its event with the verb, the actor
and the reason, and fails with ConflictError (``JobStateError`` when the job's state forbids
the verb) if the row moved under it. Bulk verbs (``*_many``, ``purge``) take a filter, work in
batches of one transaction each, and with ``dry_run=True`` only count. Sync and async twins run
the same verbs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from acta.errors import UnknownJobError, ValidationError
from acta.ids import JobRef
from acta.instant import check_instant
from acta.ledger import repair as verbs
from acta.ledger import repair_bulk as bulk
from acta.ledger.doubt import once
from acta.ledger.facade import Ledger
from acta.ledger.repair import Amendment
from acta.ledger.repair_bulk import BatchReport, JobFilter
from acta.model.codes import JobStatus
from acta.model.rows import JobInfo
from acta.names import (
    validate_job_name,
    validate_namespace,
    validate_tags,
)
from acta.policy.job import validate_priority
from acta.provider.verb import Verb
from acta.registry import Registry
from acta.repair_checks import check_max_attempts, check_who, job_filter

T = TypeVar("T")
DEFAULT_ACTOR = "api"
Batch = Callable[[int], Callable[[], Verb[BatchReport]]]

_TERMINAL = verbs.TERMINAL
_UNFINISHED = tuple(s for s in JobStatus if not s.terminal)

__all__ = ["BulkReport", "JobFilter", "Repairs"]


@dataclass(frozen=True, slots=True)
class BulkReport:
    """What a bulk verb did (or, for a dry run, would touch)."""

    matched: int
    """Jobs that matched the filter when counted (dry run) or walked."""
    changed: int
    """Jobs the verb changed (purge: deleted); 0 for a dry run."""
    skipped: int
    """Jobs that matched but moved before they could be changed (another worker or operator)."""
    batches: int
    dry_run: bool


class Repairs:
    """Repair verbs on the jobs and definitions of one namespace of ``ledger()``."""

    def __init__(self, ledger: Callable[[], Ledger], registry: Registry, namespace: str) -> None:
        self._ledger = ledger
        self._registry = registry
        self.namespace = namespace

    def _run(self, make: Callable[[], Verb[T]]) -> T:
        return self._ledger().run(make, name="repair")

    async def _run_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self._ledger().run_async(make, name="repair")

    # -- one job --------------------------------------------------------------------------

    def restart(
        self,
        ref: JobRef | str,
        *,
        reason: str = "restarted by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        """Run a finished (succeeded, failed, cancelled) job again with its stored input,
        under the same ref: ready now, with all its attempts back. Its old result is dropped;
        durable steps it completed are kept and not run again. The ``restarted`` event names
        the previous outcome."""
        return self._run(self._restart(ref, reason, actor))

    async def restart_async(
        self,
        ref: JobRef | str,
        *,
        reason: str = "restarted by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        return await self._run_async(self._restart(ref, reason, actor))

    def _restart(self, ref: JobRef | str, reason: str, actor: str) -> Callable[[], Verb[JobInfo]]:
        key, who, ns, now = _ref(ref), check_who(actor, reason), self.namespace, self._now()
        return once(verbs.restart, key, ns, who, now)

    def reschedule(
        self,
        ref: JobRef | str,
        *,
        at: datetime | None = None,
        reason: str = "rescheduled by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        """Move a ready job's next run to ``at`` (None: now). No attempt is spent."""
        return self._run(self._reschedule(ref, at, reason, actor))

    async def reschedule_async(
        self,
        ref: JobRef | str,
        *,
        at: datetime | None = None,
        reason: str = "rescheduled by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        return await self._run_async(self._reschedule(ref, at, reason, actor))

    def _reschedule(
        self, ref: JobRef | str, at: datetime | None, reason: str, actor: str
    ) -> Callable[[], Verb[JobInfo]]:
        key, who, ns, now = _ref(ref), check_who(actor, reason), self.namespace, self._now()
        when = None if at is None else check_instant(at, "at")
        return once(verbs.reschedule, key, ns, when, who, now)

    def amend(
        self,
        ref: JobRef | str,
        *,
        priority: int | None = None,
        max_attempts: int | None = None,
        tags: Iterable[str] | None = None,
        reason: str = "amended by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        """Change the priority, the attempt limit (this job's own, over its definition's) or
        the tags (replaced as a whole) of a job that has not finished."""
        return self._run(self._amend(ref, priority, max_attempts, tags, reason, actor))

    async def amend_async(
        self,
        ref: JobRef | str,
        *,
        priority: int | None = None,
        max_attempts: int | None = None,
        tags: Iterable[str] | None = None,
        reason: str = "amended by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> JobInfo:
        return await self._run_async(self._amend(ref, priority, max_attempts, tags, reason, actor))

    def _amend(
        self,
        ref: JobRef | str,
        priority: int | None,
        max_attempts: int | None,
        tags: Iterable[str] | None,
        reason: str,
        actor: str,
    ) -> Callable[[], Verb[JobInfo]]:
        key, who, ns, now = _ref(ref), check_who(actor, reason), self.namespace, self._now()
        change = Amendment(
            priority=None if priority is None else validate_priority(priority),
            max_attempts=None if max_attempts is None else check_max_attempts(max_attempts),
            tags=None if tags is None else validate_tags(tags),
        )
        if change == Amendment():
            raise ValidationError(
                "amend", "nothing to change", "give priority, max_attempts or tags"
            )
        return once(verbs.amend, key, ns, change, who, now)

    # -- definitions and the namespace ----------------------------------------------------

    def pause_definition(
        self, name: str, *, reason: str = "paused by an operator", actor: str = DEFAULT_ACTOR
    ) -> bool:
        """Stop claims of a definition from the next claim on (running jobs finish). False
        when it was paused already."""
        return self._definition_change(name, True, reason, actor)

    def resume_definition(
        self, name: str, *, reason: str = "resumed by an operator", actor: str = DEFAULT_ACTOR
    ) -> bool:
        """Claim a paused definition's jobs again. False when it was not paused."""
        return self._definition_change(name, False, reason, actor)

    async def pause_definition_async(
        self, name: str, *, reason: str = "paused by an operator", actor: str = DEFAULT_ACTOR
    ) -> bool:
        return await self._run_async(self._pause(name, True, reason, actor))

    async def resume_definition_async(
        self, name: str, *, reason: str = "resumed by an operator", actor: str = DEFAULT_ACTOR
    ) -> bool:
        return await self._run_async(self._pause(name, False, reason, actor))

    def _definition_change(self, name: str, paused: bool, reason: str, actor: str) -> bool:
        return self._run(self._pause(name, paused, reason, actor))

    def _pause(self, name: str, paused: bool, reason: str, actor: str) -> Callable[[], Verb[bool]]:
        job, who, ns, now = (
            validate_job_name(name),
            check_who(actor, reason),
            self.namespace,
            self._now(),
        )
        return once(lambda: self._known(verbs.pause_definition(ns, job, paused, who, now), job))

    def pause_namespace(
        self,
        namespace: str | None = None,
        *,
        reason: str = "paused by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        """Stop every claim in a namespace (default: this one). False when already paused."""
        return self._run(self._pause_ns(namespace, True, reason, actor))

    def resume_namespace(
        self,
        namespace: str | None = None,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        return self._run(self._pause_ns(namespace, False, reason, actor))

    async def pause_namespace_async(
        self,
        namespace: str | None = None,
        *,
        reason: str = "paused by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        return await self._run_async(self._pause_ns(namespace, True, reason, actor))

    async def resume_namespace_async(
        self,
        namespace: str | None = None,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        return await self._run_async(self._pause_ns(namespace, False, reason, actor))

    def _pause_ns(
        self, namespace: str | None, paused: bool, reason: str, actor: str
    ) -> Callable[[], Verb[bool]]:
        ns = self.namespace if namespace is None else validate_namespace(namespace)
        who, now = check_who(actor, reason), self._now()
        return once(verbs.pause_namespace, ns, paused, who, now)

    def retire_definition(
        self, name: str, *, reason: str = "retired by an operator", actor: str = DEFAULT_ACTOR
    ) -> BulkReport:
        """Pause a definition for good (resume refuses it) and cancel its waiting jobs, a
        batch per transaction; running jobs finish. Reports the jobs cancelled."""
        first, batch = self._retire(name, reason, actor)
        definition_id = self._run(first)
        return self._walk(lambda after: batch(definition_id, after), dry_run=False)

    async def retire_definition_async(
        self, name: str, *, reason: str = "retired by an operator", actor: str = DEFAULT_ACTOR
    ) -> BulkReport:
        first, batch = self._retire(name, reason, actor)
        definition_id = await self._run_async(first)
        return await self._walk_async(lambda after: batch(definition_id, after), dry_run=False)

    def _retire(
        self, name: str, reason: str, actor: str
    ) -> tuple[Callable[[], Verb[int]], Callable[[int, int], Callable[[], Verb[BatchReport]]]]:
        job, who, ns, now = (
            validate_job_name(name),
            check_who(actor, reason),
            self.namespace,
            self._now(),
        )

        def batch(definition_id: int, after: int) -> Callable[[], Verb[BatchReport]]:
            return once(bulk.cancel_queue, definition_id, who, now, after, bulk.BATCH)

        return (lambda: self._known(verbs.retire(ns, job, who, now), job)), batch

    def _known(self, verb: Verb[T], name: str) -> Verb[T]:
        """Run ``verb``; an unknown definition this app declares gets a hint."""
        try:
            return (yield from verb)
        except UnknownJobError as exc:
            if self._registry.get(name) is None:
                raise
            raise UnknownJobError(
                f"{exc}; this app declares {name!r} but the ledger has no row for it yet"
            ) from None

    # -- many jobs ------------------------------------------------------------------------

    def restart_many(
        self,
        *,
        dry_run: bool = False,
        reason: str = "restarted by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        """Restart every finished job matching the filters (status, name, tag,
        correlation_key, created_after, created_before, finished_before)."""
        return self._bulk(*self._restart_many(filters, reason, actor), dry_run)

    async def restart_many_async(
        self,
        *,
        dry_run: bool = False,
        reason: str = "restarted by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        return await self._bulk_async(*self._restart_many(filters, reason, actor), dry_run)

    def _restart_many(
        self, filters: dict[str, object], reason: str, actor: str
    ) -> tuple[JobFilter, Batch]:
        flt, who, ns, now = (
            job_filter(filters, _TERMINAL, "restart"),
            check_who(actor, reason),
            self.namespace,
            self._now(),
        )
        return flt, lambda after: once(bulk.restart_batch, ns, flt, who, now, after, bulk.BATCH)

    def cancel_many(
        self,
        *,
        dry_run: bool = False,
        reason: str = "cancelled by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        """Cancel every unfinished job matching the filters (running ones are asked to stop)."""
        return self._bulk(*self._cancel_many(filters, reason, actor), dry_run)

    async def cancel_many_async(
        self,
        *,
        dry_run: bool = False,
        reason: str = "cancelled by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        return await self._bulk_async(*self._cancel_many(filters, reason, actor), dry_run)

    def _cancel_many(
        self, filters: dict[str, object], reason: str, actor: str
    ) -> tuple[JobFilter, Batch]:
        flt, who, ns, now = (
            job_filter(filters, _UNFINISHED, "cancel"),
            check_who(actor, reason),
            self.namespace,
            self._now(),
        )
        return flt, lambda after: once(bulk.cancel_batch, ns, flt, who, now, after, bulk.BATCH)

    def reschedule_many(
        self,
        *,
        at: datetime | None = None,
        dry_run: bool = False,
        reason: str = "rescheduled by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        """Move every ready job matching the filters to ``at`` (None: now)."""
        return self._bulk(*self._reschedule_many(at, filters, reason, actor), dry_run)

    async def reschedule_many_async(
        self,
        *,
        at: datetime | None = None,
        dry_run: bool = False,
        reason: str = "rescheduled by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        return await self._bulk_async(*self._reschedule_many(at, filters, reason, actor), dry_run)

    def _reschedule_many(
        self, at: datetime | None, filters: dict[str, object], reason: str, actor: str
    ) -> tuple[JobFilter, Batch]:
        flt, who = job_filter(filters, verbs.RESCHEDULABLE, "reschedule"), check_who(actor, reason)
        when = None if at is None else check_instant(at, "at")
        ns, now = self.namespace, self._now()
        return (
            flt,
            lambda after: once(bulk.reschedule_batch, ns, flt, when, who, now, after, bulk.BATCH),
        )

    def purge(
        self,
        *,
        before: datetime,
        dry_run: bool = False,
        reason: str = "purged by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        """Delete finished jobs that reached their final status before ``before`` (and match
        the other filters). Their events stay, with a ``purged`` event each."""
        return self._bulk(*self._purge(before, filters, reason, actor), dry_run)

    async def purge_async(
        self,
        *,
        before: datetime,
        dry_run: bool = False,
        reason: str = "purged by an operator",
        actor: str = DEFAULT_ACTOR,
        **filters: object,
    ) -> BulkReport:
        return await self._bulk_async(*self._purge(before, filters, reason, actor), dry_run)

    def _purge(
        self, before: datetime, filters: dict[str, object], reason: str, actor: str
    ) -> tuple[JobFilter, Batch]:
        given = {**filters, "finished_before": check_instant(before, "before")}
        flt, who, ns, now = (
            job_filter(given, _TERMINAL, "purge"),
            check_who(actor, reason),
            self.namespace,
            self._now(),
        )
        return flt, lambda after: once(bulk.purge_batch, ns, flt, who, now, after, bulk.BATCH)

    def _bulk(self, flt: JobFilter, batch: Batch, dry_run: bool) -> BulkReport:
        if dry_run:
            ns = self.namespace
            return BulkReport(self._run(lambda: bulk.count(ns, flt, flt.statuses)), 0, 0, 0, True)
        return self._walk(batch, dry_run=False)

    async def _bulk_async(self, flt: JobFilter, batch: Batch, dry_run: bool) -> BulkReport:
        if dry_run:
            ns = self.namespace
            matched = await self._run_async(lambda: bulk.count(ns, flt, flt.statuses))
            return BulkReport(matched, 0, 0, 0, True)
        return await self._walk_async(batch, dry_run=False)

    def _walk(self, batch: Batch, *, dry_run: bool) -> BulkReport:
        changed = skipped = batches = 0
        after, more = 0, True
        while more:
            report = self._run(batch(after))
            changed, skipped = changed + len(report.changed), skipped + report.skipped
            batches, more = batches + 1, report.more and report.last_id > after
            after = report.last_id
        return BulkReport(changed + skipped, changed, skipped, batches, dry_run)

    async def _walk_async(self, batch: Batch, *, dry_run: bool) -> BulkReport:
        changed = skipped = batches = 0
        after, more = 0, True
        while more:
            report = await self._run_async(batch(after))
            changed, skipped = changed + len(report.changed), skipped + report.skipped
            batches, more = batches + 1, report.more and report.last_id > after
            after = report.last_id
        return BulkReport(changed + skipped, changed, skipped, batches, dry_run)

    def _now(self) -> datetime | None:
        return self._ledger().now()


def _ref(ref: JobRef | str) -> str:
    return str(JobRef.coerce(ref))
