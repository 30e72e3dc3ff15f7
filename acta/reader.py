"""The read and control surface of an application: look jobs up, list them, read their events
and results, and cancel them. Sync and async twins run the same verbs.

Mixed into ``Acta``; it relies on ``self.provider``, ``self.namespace``, ``self.clock`` and the
registry for decoding results into their declared types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from acta.codec import codecs
from acta.errors import JobNotFoundError, ValidationError
from acta.ids import JobRef
from acta.ledger import read
from acta.ledger.control import cancel
from acta.model.codes import JobStatus
from acta.model.rows import EventInfo, JobInfo, WorkerInfo
from acta.provider.verb import Verb
from acta.shape import from_data

if TYPE_CHECKING:
    from acta.clock import Clock
    from acta.job import JobDefinition
    from acta.provider.protocol import Provider

T = TypeVar("T")
MAX_PAGE = 1000


class ReadSurface:
    """Reads and operator controls over the ledger."""

    namespace: str
    _definitions: dict[str, JobDefinition[Any, Any]]

    if TYPE_CHECKING:

        @property
        def provider(self) -> Provider: ...

        @property
        def clock(self) -> Clock: ...

    def _run(self, make: Callable[[], Verb[T]]) -> T:
        return self.provider.run(make)

    async def _run_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self.provider.run_async(make)

    # -- jobs -----------------------------------------------------------------------------

    def get(self, ref: JobRef | str) -> JobInfo:
        """The job with this ref; raises JobNotFoundError."""
        key, ns = str(JobRef.coerce(ref)), self.namespace
        return _found(self._run(lambda: read.job(key, ns)), key, ns)

    async def get_async(self, ref: JobRef | str) -> JobInfo:
        key, ns = str(JobRef.coerce(ref)), self.namespace
        return _found(await self._run_async(lambda: read.job(key, ns)), key, ns)

    def jobs(
        self,
        *,
        status: JobStatus | str | None = None,
        name: str | None = None,
        limit: int = 50,
        before: int | None = None,
        include_system: bool = False,
        all_namespaces: bool = False,
    ) -> list[JobInfo]:
        """Jobs newest first; ``before`` is the ``job_id`` to page past."""
        args = self._list_args(status, name, limit, before, include_system, all_namespaces)
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
    ) -> list[JobInfo]:
        """Async twin of ``jobs``."""
        args = self._list_args(status, name, limit, before, include_system, all_namespaces)
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
        """The job's timeline, oldest first."""
        info = self.get(ref)
        return self._run(lambda: read.events(info.job_id))

    async def events_async(self, ref: JobRef | str) -> list[EventInfo]:
        info = await self.get_async(ref)
        return await self._run_async(lambda: read.events(info.job_id))

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
        value = codecs.by_code(code).decode(body)
        definition = self._definitions.get(info.name)
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

    def cancel(self, ref: JobRef | str, reason: str = "cancelled by an operator") -> JobStatus:
        """Cancel a job. A waiting job is cancelled now; a running one is asked to stop and is
        cancelled when its run ends. Returns the status after the call."""
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self.clock.sql_now()
        return self._run(lambda: cancel(key, ns, reason, now))

    async def cancel_async(
        self, ref: JobRef | str, reason: str = "cancelled by an operator"
    ) -> JobStatus:
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self.clock.sql_now()
        return await self._run_async(lambda: cancel(key, ns, reason, now))


def parse_status(status: JobStatus | str | None) -> JobStatus | None:
    """A status given as an enum or as its name (``"failed"``)."""
    if status is None or isinstance(status, JobStatus):
        return status
    for member in JobStatus:
        if member.label == status:
            return member
    names = ", ".join(m.label for m in JobStatus)
    raise ValidationError("status", f"got {status!r}", f"one of {names}")


def _found(info: JobInfo | None, ref: str, namespace: str) -> JobInfo:
    if info is None:
        raise JobNotFoundError(f"no job {ref} in namespace {namespace!r}")
    return info
