"""The producer: turning validated requests into one enqueue verb, sync or async.

Requests are built and checked before any SQL (``acta.definition.JobRequest``); the producer
gives each job its ref, runs the enqueue verb through the ledger (in acta's own transaction or
inside the caller's open one) and, after a commit of its own, rings this process's bell so idle
workers claim at once. It knows the registry and the ledger, never the application.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

from acta.bell import ProcessBell
from acta.definition import JobRequest
from acta.errors import UnknownJobError, ValidationError
from acta.ids import JobRef
from acta.ledger import enqueue as enqueue_verbs
from acta.ledger.facade import Catalog, Ledger
from acta.model.rows import Enqueued, NewJob
from acta.options import EnqueueOptions
from acta.provider.verb import Verb
from acta.registry import JobLike, Registry

_MS = timedelta(milliseconds=1)
Written = tuple[list[Enqueued], Catalog]


def deadline_of(request: JobRequest, now: datetime) -> datetime | None:
    """A request's deadline as an instant (a duration counts from ``now``, the enqueue)."""
    if request.deadline_in is not None:
        return now + request.deadline_in
    return request.deadline_at


def new_job(request: JobRequest, job_ref: str, now: datetime, **lineage: Any) -> NewJob:
    """The row an enqueue writes for ``request`` under ``job_ref``, at ``now`` (a deadline
    given as a duration counts from it); ``lineage`` (parent_id, root_id, child_name) makes
    it a child job, and may carry the enqueuing span's ``trace_context``."""
    definition = request.definition
    return NewJob(
        job_ref=job_ref,
        definition=definition.name,
        input_codec=definition.input_codec.code,
        input=request.payload,
        priority=request.priority,
        run_at=request.run_at,
        delay_ms=request.delay // _MS,
        dedup_key=request.dedup_key,
        correlation_key=request.correlation_key,
        tags=request.tags,
        audit_level=definition.policy.audit,
        lane=request.lane,
        concurrency_key=request.concurrency_key,
        deadline_at=deadline_of(request, now),
        deadline_strict=request.deadline_strict,
        tenant=request.tenant,
        dedup_mode=request.dedup_mode,
        dedup_window_ms=None if request.dedup_window is None else request.dedup_window // _MS,
        **lineage,
    )


def build_request(
    registry: Registry, job: JobLike, input: object = None, **options: Any
) -> JobRequest:
    """enqueue's admission of one request: the job resolved in ``registry`` (UnknownJobError)
    and its input and options validated and encoded (ValidationError and its kinds). The
    outbox relay admits staged rows through this too, so both refuse the same things alike."""
    definition = registry.resolve(job)
    return JobRequest.build(definition, input, payload_cap=registry.payload_cap, **options)


class Producer:
    """Enqueue jobs of ``registry``'s definitions into ``namespace`` of the current ledger."""

    def __init__(
        self,
        ledger: Callable[[], Ledger],
        registry: Registry,
        namespace: str,
        bell: ProcessBell,
    ) -> None:
        self._ledger = ledger
        self.registry = registry
        self.namespace = namespace
        self.bell = bell

    def request(
        self, job: JobLike, input: object = None, **options: Unpack[EnqueueOptions]
    ) -> JobRequest:
        """Build a validated request for ``enqueue_batch``."""
        return build_request(self.registry, job, input, **options)

    def enqueue(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        return self.enqueue_batch([self.request(job, input, **options)], connection=connection)[0]

    async def enqueue_async(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        refs = await self.enqueue_batch_async(
            [self.request(job, input, **options)], connection=connection
        )
        return refs[0]

    def enqueue_batch(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        if not requests:
            return []
        ledger = self._ledger()
        make, refs = self._verb(ledger, requests)
        done = ledger.run(make, tx=connection, name="enqueue")
        return self._after(ledger, done, connection is None, refs)

    async def enqueue_batch_async(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        if not requests:
            return []
        ledger = self._ledger()
        make, refs = self._verb(ledger, requests)
        done = await ledger.run_async(make, tx=connection, name="enqueue")
        return self._after(ledger, done, connection is None, refs)

    # -- building the verb ----------------------------------------------------------------

    def _verb(
        self, ledger: Ledger, requests: Sequence[JobRequest]
    ) -> tuple[Callable[[], Verb[Written]], dict[str, JobRef]]:
        for r in requests:
            if not isinstance(r, JobRequest):
                raise ValidationError(
                    "requests",
                    f"got {type(r).__name__}",
                    "JobRequest objects from job.request(...) or app.request(...)",
                )
            if not self.registry.owns(r.definition):
                raise UnknownJobError(f"job {r.definition.name!r} belongs to another application")
        jobs, refs = self._new_jobs(ledger, requests)
        specs = {r.definition.name: r.definition.spec() for r in requests}
        # Ids learnt from a committed transaction of acta's own hold in a caller's transaction
        # too (catalog rows are never deleted); a caller's transaction never teaches any, as it
        # may still roll back.
        known = ledger.catalog(self.namespace)
        now, namespace, fused, channel = ledger.now(), self.namespace, ledger.fused, ledger.channel

        def make() -> Verb[Written]:
            return enqueue_verbs.enqueue(
                namespace, specs, jobs, now, known, fused=fused, channel=channel
            )

        return make, refs

    @staticmethod
    def _new_jobs(
        ledger: Ledger, requests: Sequence[JobRequest]
    ) -> tuple[list[NewJob], dict[str, JobRef]]:
        now = ledger.clock.now()
        made = JobRef.many(int(now.timestamp() * 1000), len(requests))
        trace = None if ledger.telemetry is None else ledger.telemetry.trace_context()
        jobs = [
            new_job(r, text, now, trace_context=trace)
            for r, (_, text) in zip(requests, made, strict=True)
        ]
        return jobs, {text: ref for ref, text in made}

    def _after(
        self, ledger: Ledger, done: Written, own_tx: bool, refs: dict[str, JobRef]
    ) -> list[JobRef]:
        written, known = done
        if own_tx:
            # Committed by us, so these ids exist; later enqueues skip the catalog upserts.
            ledger.learn_catalog(self.namespace, known)
            if any(d.created for d in written):
                self.bell.ring_all()  # wake this process's idle workers now, not at next poll
        return [refs.get(d.job_ref) or JobRef.parse(d.job_ref) for d in written]
