"""The read and control surface of an application: look jobs up, list them, read their events
and results, and cancel them. Sync and async twins run the same verbs.

A ``Reader`` is built from the ledger it reads (a callable, so an application can point it at
another ledger), the registry (to decode results into their declared types) and the namespace.
Every filter is checked before a statement runs: a bad one is a ValidationError, the same on
every provider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from acta.codec import codecs, decode_value
from acta.errors import JobNotFoundError, JobPurgedError, ValidationError
from acta.ids import ROW_ID_MAX, JobRef
from acta.ledger import read
from acta.ledger.control import cancel, check_actor
from acta.ledger.facade import Ledger
from acta.ledger.retention import PurgedJob, purged
from acta.model.codes import JobStatus
from acta.model.rows import EventInfo, JobInfo, WorkerInfo
from acta.names import validate_job_name, validate_key
from acta.provider.verb import Verb
from acta.registry import Registry
from acta.shape import from_data
from acta.signals import Signals

T = TypeVar("T")
MAX_PAGE = 1000


class Reader(Signals):
    """Reads and operator controls over the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger], registry: Registry, namespace: str) -> None:
        self._read_ledger = ledger
        self._registry = registry
        self.namespace = namespace

    # -- jobs -----------------------------------------------------------------------------

    def get(self, ref: JobRef | str) -> JobInfo:
        """The job with this ref; raises JobPurgedError for a job retention purged,
        JobNotFoundError for a ref the ledger never had (or forgot, past event retention)."""
        key, ns = str(JobRef.coerce(ref)), self.namespace
        info = self._run(lambda: read.job(key, ns))
        if info is None:
            _not_found(self._run(lambda: purged(key, ns)), key, ns)
        return info

    async def get_async(self, ref: JobRef | str) -> JobInfo:
        key, ns = str(JobRef.coerce(ref)), self.namespace
        info = await self._run_async(lambda: read.job(key, ns))
        if info is None:
            _not_found(await self._run_async(lambda: purged(key, ns)), key, ns)
        return info

    def purged(self, ref: JobRef | str) -> PurgedJob | None:
        """What is left of a job retention purged (None if it was not purged)."""
        key, ns = str(JobRef.coerce(ref)), self.namespace
        return self._run(lambda: purged(key, ns))

    async def purged_async(self, ref: JobRef | str) -> PurgedJob | None:
        """Async twin of ``purged``."""
        key, ns = str(JobRef.coerce(ref)), self.namespace
        return await self._run_async(lambda: purged(key, ns))

    def jobs(
        self,
        *,
        status: JobStatus | str | None = None,
        name: str | None = None,
        limit: int = 50,
        before: int | None = None,
        include_system: bool = False,
        all_namespaces: bool = False,
        tenant: str | None = None,
    ) -> list[JobInfo]:
        """Jobs newest first; ``before`` is the ``job_id`` to page past; ``tenant`` keeps
        only that tenant's jobs."""
        args = self._list_args(status, name, limit, before, include_system, all_namespaces)
        args["tenant"] = None if tenant is None else validate_key(tenant, field="tenant")
        return self._run(lambda: read.jobs(**args))

    async def jobs_async(
        self,
        *,
        status: JobStatus | str | None = None,
        name: str | None = None,
        limit: int = 50,
        before: int | None = None,
        include_system: bool = False,
        all_namespaces: bool = False,
        tenant: str | None = None,
    ) -> list[JobInfo]:
        """Async twin of ``jobs``."""
        args = self._list_args(status, name, limit, before, include_system, all_namespaces)
        args["tenant"] = None if tenant is None else validate_key(tenant, field="tenant")
        return await self._run_async(lambda: read.jobs(**args))

    def _list_args(
        self,
        status: JobStatus | str | None,
        name: str | None,
        limit: int,
        before: int | None,
        include_system: bool,
        all_namespaces: bool,
    ) -> dict[str, Any]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise ValidationError("limit", f"got {limit!r}", f"an int from 1 to {MAX_PAGE}")
        if before is not None and (
            isinstance(before, bool) or not isinstance(before, int) or not 1 <= before <= ROW_ID_MAX
        ):
            raise ValidationError(
                "before", f"got {before!r:.80}", f"a job_id (an int from 1 to {ROW_ID_MAX})"
            )
        if name is not None:
            try:
                validate_job_name(name, allow_system=True)
            except ValidationError as exc:  # name the argument the caller passed
                raise type(exc)("name", exc.problem, exc.rule) from None
        for flag, value in (("include_system", include_system), ("all_namespaces", all_namespaces)):
            if not isinstance(value, bool):
                raise ValidationError(flag, f"got {value!r:.80}", "True or False")
        return {
            "namespace": None if all_namespaces else self.namespace,
            "status": parse_status(status),
            "name": name,
            "before_id": before,
            "limit": limit,
            "include_system": include_system,
        }

    # -- events and results ---------------------------------------------------------------

    def events(self, ref: JobRef | str) -> list[EventInfo]:
        """The job's timeline, oldest first; a purged job's too (events outlive the job)."""
        key, ns = str(JobRef.coerce(ref)), self.namespace
        job_id = self._run(lambda: _timeline_id(key, ns))
        if job_id is None:
            raise JobNotFoundError(f"no job {key} in namespace {ns!r}")
        return self._run(lambda: read.events(job_id))

    async def events_async(self, ref: JobRef | str) -> list[EventInfo]:
        key, ns = str(JobRef.coerce(ref)), self.namespace
        job_id = await self._run_async(lambda: _timeline_id(key, ns))
        if job_id is None:
            raise JobNotFoundError(f"no job {key} in namespace {ns!r}")
        return await self._run_async(lambda: read.events(job_id))

    def result(self, ref: JobRef | str) -> Any:
        """The handler's decoded return value; None if it returned nothing or has not finished."""
        info = self.get(ref)
        stored = self._run(lambda: read.result(info.job_id))
        return self._decode_result(info, stored)

    async def result_async(self, ref: JobRef | str) -> Any:
        info = await self.get_async(ref)
        stored = await self._run_async(lambda: read.result(info.job_id))
        return self._decode_result(info, stored)

    def _decode_result(self, info: JobInfo, stored: tuple[int, bytes] | None) -> Any:
        if stored is None:
            return None
        code, body = stored
        # A user codec that raises is reported as the InputDecodeError ``result`` documents.
        value = decode_value(codecs.by_code(code), body, "result")
        definition = self._registry.get(info.name)
        if definition is not None and definition.result_type is not None:
            return from_data(value, definition.result_type, "result")
        return value

    def workers(self, *, all_namespaces: bool = False) -> list[WorkerInfo]:
        """Worker incarnations, oldest first."""
        namespace = None if all_namespaces else self.namespace
        return self._run(lambda: read.workers(namespace))

    async def workers_async(self, *, all_namespaces: bool = False) -> list[WorkerInfo]:
        """Async twin of ``workers``."""
        namespace = None if all_namespaces else self.namespace
        return await self._run_async(lambda: read.workers(namespace))

    # -- control --------------------------------------------------------------------------

    def cancel(
        self,
        ref: JobRef | str,
        reason: str = "cancelled by an operator",
        *,
        actor: str = "operator",
    ) -> JobStatus:
        """Cancel a job. A waiting job is cancelled now; a running one is asked to stop and is
        cancelled when its run ends. Returns the status after the call. ``actor`` names who
        asked; it is recorded on the event."""
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self._read_ledger().now()
        who = check_actor(actor)
        return self._run(lambda: cancel(key, ns, reason, now, actor=who))

    async def cancel_async(
        self,
        ref: JobRef | str,
        reason: str = "cancelled by an operator",
        *,
        actor: str = "operator",
    ) -> JobStatus:
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self._read_ledger().now()
        who = check_actor(actor)
        return await self._run_async(lambda: cancel(key, ns, reason, now, actor=who))


def parse_status(status: JobStatus | str | None) -> JobStatus | None:
    """A status given as an enum or as its name (``"failed"``)."""
    if status is None or isinstance(status, JobStatus):
        return status
    for member in JobStatus:
        if member.label == status:
            return member
    names = ", ".join(m.label for m in JobStatus)
    raise ValidationError("status", f"got {status!r}", f"one of {names}")


def _not_found(tombstone: PurgedJob | None, ref: str, namespace: str) -> NoReturn:
    if tombstone is not None:
        raise JobPurgedError(
            ref,
            tombstone.name,
            tombstone.status.label,
            tombstone.finished_at,
            tombstone.purged_at,
        )
    raise JobNotFoundError(f"no job {ref} in namespace {namespace!r}")


def _timeline_id(ref: str, namespace: str) -> Verb[int | None]:
    """The id whose events are this ref's timeline: the job's, or its tombstone's."""
    info = yield from read.job(ref, namespace)
    if info is not None:
        return info.job_id
    tombstone = yield from purged(ref, namespace)
    return None if tombstone is None else tombstone.job_id
