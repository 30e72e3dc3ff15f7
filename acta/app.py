"""``Acta``: the application object. It holds configuration and the job registry, and offers
the producer surface (enqueue, sync and async) and the read surface (get, events, result).

It owns no worker loop: ``app.worker()`` builds one. Verbs are built once (acta.ledger) and run
through the provider's sync or async executor, so both surfaces share every line of logic.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from acta.clock import Clock, SystemClock
from acta.codec import DEFAULT_PAYLOAD_CAP
from acta.errors import ConfigurationError, UnknownJobError, ValidationError
from acta.ids import JobRef
from acta.job import JobDefinition, JobPolicy
from acta.ledger import enqueue as enqueue_verbs
from acta.model.rows import NewJob
from acta.names import validate_job_name, validate_namespace, validate_schema_name
from acta.provider.factory import open_provider
from acta.provider.protocol import Provider
from acta.reader import ReadSurface
from acta.request import JobRequest
from acta.runtime.bell import ProcessBell

if TYPE_CHECKING:
    from acta.runtime.worker import Worker

F = TypeVar("F", bound=Callable[..., Any])
JobLike = JobDefinition[Any, Any] | str


class Acta(ReadSurface):
    """A job application: declare jobs, enqueue them, read them, run workers for them.

    ``database`` is a SQLite path (``jobs.db`` or ``sqlite:///jobs.db``) or a PostgreSQL URL;
    by default ``$ACTA_DATABASE`` or ``./acta.sqlite3``. Nothing connects until first use.
    """

    def __init__(
        self,
        database: str | Path | None = None,
        *,
        namespace: str = "default",
        schema: str = "acta",
        clock: Clock | None = None,
        apply_migrations: bool = False,
        payload_cap: int = DEFAULT_PAYLOAD_CAP,
        **provider_options: Any,
    ) -> None:
        self.namespace = validate_namespace(namespace)
        self.schema = validate_schema_name(schema)
        self.database = database
        self.apply_migrations = apply_migrations
        if isinstance(payload_cap, bool) or not isinstance(payload_cap, int) or payload_cap < 1:
            raise ValidationError("payload_cap", f"got {payload_cap!r}", "a positive int of bytes")
        self.payload_cap = payload_cap
        self._provider_options = provider_options
        self._clock: Clock = clock or SystemClock()
        self._provider: Provider | None = None
        self._schema_checked = False
        self._lock = threading.Lock()
        self._definitions: dict[str, JobDefinition[Any, Any]] = {}
        # (namespace id, definition ids) once our own committed transaction has seen them.
        self._known: tuple[int, dict[str, int]] | None = None
        self.bell = ProcessBell()

    # -- configuration --------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def provider(self) -> Provider:
        """The ledger backend, opened (and schema-checked or migrated) on first use."""
        with self._lock:
            if self._provider is None:
                self._provider = open_provider(
                    self.database, schema=self.schema, **self._provider_options
                )
            if not self._schema_checked:
                if self.apply_migrations:
                    self._provider.migrate()
                else:
                    self._provider.check_schema()
                self._schema_checked = True
            return self._provider

    @contextlib.contextmanager
    def bound(self, provider: Provider, clock: Clock | None = None) -> Iterator[Acta]:
        """Temporarily point this app at another ledger and clock (the test host uses it)."""
        saved = (self._provider, self._clock, self._schema_checked, self._known)
        self._provider, self._schema_checked, self._known = provider, True, None
        if clock is not None:
            self._clock = clock
        try:
            yield self
        finally:
            self._provider, self._clock, self._schema_checked, self._known = saved

    def migrate(self) -> list[str]:
        """Apply pending schema migrations; returns what was applied."""
        with self._lock:
            if self._provider is None:
                self._provider = open_provider(
                    self.database, schema=self.schema, **self._provider_options
                )
            applied = self._provider.migrate()
            self._schema_checked = True
            return applied

    def close(self) -> None:
        with self._lock:
            if self._provider is not None:
                self._provider.close()
                self._provider = None
                self._schema_checked = False

    # -- declaring jobs -------------------------------------------------------------------

    def job(
        self,
        name: str,
        /,
        *,
        input: Any = None,
        result: Any = None,
        **policy: Any,
    ) -> Callable[[F], JobDefinition[Any, Any]]:
        """Declare a job. Policy: max_attempts, backoff, timeout, priority, audit."""
        validate_job_name(name)
        parsed = JobPolicy.build(**policy)

        def register(handler: F) -> JobDefinition[Any, Any]:
            if not callable(handler):
                raise ConfigurationError(f"@job({name!r}) must decorate a function")
            definition: JobDefinition[Any, Any] = JobDefinition(
                self, name, handler, parsed, input_type=input, result_type=result
            )
            return self.add(definition)

        return register

    def define(
        self, name: str, /, *, input: Any = None, result: Any = None, **policy: Any
    ) -> JobDefinition[Any, Any]:
        """Declare a job without a handler, for producers that only enqueue it."""
        validate_job_name(name)
        definition: JobDefinition[Any, Any] = JobDefinition(
            self, name, None, JobPolicy.build(**policy), input_type=input, result_type=result
        )
        return self.add(definition)

    def add(self, definition: JobDefinition[Any, Any]) -> JobDefinition[Any, Any]:
        """Register a definition object (system jobs use this)."""
        existing = self._definitions.get(definition.name)
        # Only the very same object may be added again: a second declaration, even of the same
        # handler or of two handler-less definitions, would silently replace types and policy.
        if existing is not None and existing is not definition:
            raise ConfigurationError(f"job {definition.name!r} is declared twice")
        self._definitions[definition.name] = definition
        return definition

    @property
    def definitions(self) -> Mapping[str, JobDefinition[Any, Any]]:
        return dict(self._definitions)

    def definition(self, job: JobLike) -> JobDefinition[Any, Any]:
        """The registered definition for a name or definition object."""
        name = job.name if isinstance(job, JobDefinition) else job
        found = self._definitions.get(name) if isinstance(name, str) else None
        if found is None:
            known = (
                ", ".join(sorted(n for n in self._definitions if not n.startswith("sys.")))
                or "none"
            )
            raise UnknownJobError(
                f"job {name!r} is not declared in this application (declared: {known}); "
                "declare it with @app.job or app.define"
            )
        if isinstance(job, JobDefinition) and job is not found:
            # Same name, other declaration: its input type and policy are not the ones here.
            raise UnknownJobError(
                f"job {name!r} was passed as a definition of another application; pass this "
                "application's definition or the name"
            )
        return found

    # -- enqueue --------------------------------------------------------------------------

    def request(self, job: JobLike, input: object = None, **options: Any) -> JobRequest:
        """Build a validated request for ``enqueue_batch``."""
        return JobRequest.build(self.definition(job), input, **options)

    def _new_jobs(self, requests: Sequence[JobRequest]) -> tuple[list[NewJob], dict[str, JobRef]]:
        ms = int(self.clock.now().timestamp() * 1000)
        made = JobRef.many(ms, len(requests))
        jobs = [
            NewJob(
                job_ref=text,
                definition=r.definition.name,
                input_codec=r.definition.input_codec.code,
                input=r.payload,
                priority=r.priority,
                run_at=r.run_at,
                delay_ms=r.delay // _MS,
                dedup_key=r.dedup_key,
                correlation_key=r.correlation_key,
                tags=r.tags,
                audit_level=r.definition.policy.audit,
            )
            for r, (_, text) in zip(requests, made, strict=True)
        ]
        return jobs, {text: ref for ref, text in made}

    def _enqueue_factory(
        self, requests: Sequence[JobRequest]
    ) -> tuple[Callable[[], Any], dict[str, JobRef]]:
        for r in requests:
            if not isinstance(r, JobRequest):
                raise ValidationError(
                    "requests",
                    f"got {type(r).__name__}",
                    "JobRequest objects from job.request(...) or app.request(...)",
                )
            if (
                r.definition.app is not self
                and self._definitions.get(r.definition.name) is not r.definition
            ):
                raise UnknownJobError(f"job {r.definition.name!r} belongs to another application")
        jobs, refs = self._new_jobs(requests)
        specs = {r.definition.name: r.definition.spec() for r in requests}
        # Ids learnt from a committed transaction of acta's own hold in a caller's transaction
        # too (catalog rows are never deleted); a caller's transaction never teaches any, as it
        # may still roll back.
        known = self._known
        now = self.clock.sql_now()
        namespace = self.namespace
        provider = self.provider
        fused = "fused" in provider.features
        channel = provider.channel if "notify" in provider.features else None

        def make() -> Any:
            return enqueue_verbs.enqueue(
                namespace, specs, jobs, now, known, fused=fused, channel=channel
            )

        return make, refs

    def enqueue(
        self, job: JobLike, input: object = None, *, connection: object = None, **options: Any
    ) -> JobRef:
        """Enqueue one job and return its ref (an existing job's ref for a duplicate dedup_key).

        ``connection``: the caller's open database connection; the job then commits or rolls
        back with the caller's transaction. Options: delay, not_before, priority, dedup_key,
        correlation_key, tags.
        """
        return self.enqueue_batch([self.request(job, input, **options)], connection=connection)[0]

    async def enqueue_async(
        self, job: JobLike, input: object = None, *, connection: object = None, **options: Any
    ) -> JobRef:
        """Async twin of ``enqueue``."""
        refs = await self.enqueue_batch_async(
            [self.request(job, input, **options)], connection=connection
        )
        return refs[0]

    def enqueue_batch(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        """Enqueue many jobs in one transaction: all of them or none."""
        if not requests:
            return []
        make, refs = self._enqueue_factory(requests)
        done = self.provider.run(make, tx=connection)
        return self._after_enqueue(done, connection is None, refs)

    async def enqueue_batch_async(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        """Async twin of ``enqueue_batch``."""
        if not requests:
            return []
        make, refs = self._enqueue_factory(requests)
        done = await self.provider.run_async(make, tx=connection)
        return self._after_enqueue(done, connection is None, refs)

    def _after_enqueue(self, done: Any, own_tx: bool, refs: dict[str, JobRef]) -> list[JobRef]:
        written, known = done
        if own_tx:
            # Committed by us, so these ids exist; later enqueues skip the catalog upserts.
            self._known = (known[0], dict(known[1]))
            if any(d.created for d in written):
                self.bell.ring_all()  # wake this process's idle workers now, not at next poll
        return [refs.get(d.job_ref) or JobRef.parse(d.job_ref) for d in written]

    # -- workers --------------------------------------------------------------------------

    def worker(self, **settings: Any) -> Worker:
        """Build a worker for this app's handlers (see acta.runtime.worker.Worker)."""
        from acta.runtime.worker import Worker

        return Worker(self, **settings)

    def run_worker(self, **settings: Any) -> None:
        """Run a worker in the foreground until SIGINT or SIGTERM, then shut down gracefully."""
        self.worker(**settings).run_forever()


_MS = timedelta(milliseconds=1)
