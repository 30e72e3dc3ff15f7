"""``Acta``: the application object. Configuration, plus a facade over the parts it composes.

An application holds its settings (database, namespace, schema, clock, payload cap), a
``Registry`` of job definitions, a lazily opened ``Ledger``, a ``Producer`` (enqueue, sync and
async) and the read surface (``Reader``: get, jobs, events, result, workers, cancel). It owns no
worker loop: ``app.worker()`` builds one from ``app.deployment()``, a small value the runtime is
made of, so the runtime never sees the application.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from acta.alerting import Alerting
from acta.alerts import Alerts
from acta.bell import ProcessBell
from acta.clock import Clock, SystemClock
from acta.codec import DEFAULT_PAYLOAD_CAP, Codec
from acta.codec import codecs as codec_registry
from acta.definition import JobDefinition, JobRequest
from acta.errors import ConfigurationError
from acta.ids import JobRef
from acta.ledger.contract import POLICIES as DRIFT_POLICIES
from acta.ledger.facade import Ledger
from acta.names import validate_job_name, validate_namespace, validate_schema_name
from acta.namespaces import Namespaces
from acta.ops import Operations
from acta.options import JOB_OPTIONS, EnqueueOptions, JobOptions, check_options
from acta.outbox import staging as outbox
from acta.outbox.quarantine import Quarantine
from acta.outbox.source import OutboxSource
from acta.outcome import SignalOutcome
from acta.policy.job import JobPolicy
from acta.producer import Producer
from acta.provider.factory import open_provider
from acta.provider.protocol import Provider
from acta.reader import Reader
from acta.redis_bell import wire_from
from acta.registry import JobLike, Registry
from acta.repair import Repairs
from acta.runtime.deployment import Deployment
from acta.runtime.worker import Worker
from acta.schedules import Schedules
from acta.settings import Settings
from acta.telemetry import resolve as resolve_telemetry
from acta.telemetry.backlog import backlog
from acta.tenants import Tenants
from acta.waiting import wait_blocking, wait_for, wait_limit

if TYPE_CHECKING:
    from acta.telemetry.observer import Telemetry

F = TypeVar("F", bound=Callable[..., Any])

_serials = itertools.count(1)


def _plugin_isolation() -> Callable[[Acta], None] | None:
    """The isolation hook of a pytest session that loaded acta's plugin before acta (the
    plugin avoids importing acta; it installs its hook itself when acta came first)."""
    plugin = sys.modules.get("acta_testing.isolation")
    return None if plugin is None else plugin.current()


_isolation: Callable[[Acta], None] | None = _plugin_isolation()


def isolate(hook: Callable[[Acta], None] | None) -> Callable[[Acta], None] | None:
    """Install ``hook`` (None removes it) and return the one it replaces. acta's pytest plugin
    installs one: an application about to use the database it was configured with, not bound
    elsewhere (``bound``), is passed to it first, and it binds the application to the test's
    ledger or raises. Outside tests there is none, and nothing is checked."""
    global _isolation
    previous, _isolation = _isolation, hook
    return previous


def next_serial() -> int:
    """A number above every application's ``serial`` so far and below any made later."""
    return next(_serials)


class Acta(Reader):
    """A job application: declare jobs, enqueue them, read them, run workers for them.

    ``database`` is a SQLite path (``jobs.db`` or ``sqlite:///jobs.db``) or a PostgreSQL URL;
    by default ``$ACTA_DATABASE`` or ``./acta.sqlite3``. Nothing connects until first use.
    ``telemetry``: metrics and spans through OpenTelemetry (docs/guide/observability.md); by
    default on when the API is installed, over its global providers. ``codecs``: payload codecs
    to register (process-wide, as ``acta.codecs.register``) for ``codec=`` on jobs
    (docs/guide/codecs.md). ``bell``: a Redis URL whose channel wakes idle workers in other
    processes (``$ACTA_BELL`` by default; docs/guide/redis-bell.md), for databases without
    NOTIFY.
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
        outbox: OutboxSource | None = None,
        telemetry: Telemetry | bool | None = None,
        contract_drift: str = "warn",
        codecs: Iterable[Codec] = (),
        bell: str | None = None,
        **provider_options: Any,
    ) -> None:
        self.namespace = validate_namespace(namespace)
        # Codecs live in the process-wide registry (acta.codecs): a stored row names its codec
        # by code, and every reader of the process (CLI, results, the outbox relay) decodes it.
        for codec in codecs:
            codec_registry.register(codec)
        self.schema = validate_schema_name(schema)
        self.database = database
        self.apply_migrations = apply_migrations
        if contract_drift not in DRIFT_POLICIES:
            raise ConfigurationError(
                f"contract_drift={contract_drift!r}: use 'warn' (the default), 'refuse' or 'off'"
            )
        self.contract_drift = contract_drift
        self.registry = Registry(payload_cap)
        self.payload_cap = payload_cap
        if outbox is not None and not isinstance(outbox, OutboxSource):
            raise ConfigurationError(f"outbox= takes an OutboxSource, got {type(outbox).__name__}")
        self.outbox = outbox
        """The outbox source this application's workers relay from (opened only by them)."""
        self._provider_options = provider_options
        self._provider: Provider | None = None
        self._schema_checked = False
        self._lock = threading.Lock()
        self.bell = ProcessBell(wire_from(bell, schema=self.schema, namespace=self.namespace))
        self._ledger = Ledger(self._open, clock or SystemClock())
        self._home = self._ledger
        self.serial = next(_serials)
        """The order this application was made in (the test plugin tells apart those a test
        made itself from those it imported)."""
        self._ledger.telemetry = watch = resolve_telemetry(telemetry)
        if watch is not None and watch.backlog:
            watch.watch_backlog(self.namespace, self._read_backlog)
        self.producer = Producer(self._current_ledger, self.registry, self.namespace, self.bell)
        self.registry.bind(self.producer)
        self.alerting = Alerting(self.registry)
        """Alert channels, routes and intervals (see docs/guide/alerts.md)."""
        super().__init__(self._current_ledger, self.registry, self.namespace)

    # -- configuration --------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._ledger.clock

    @property
    def ledger(self) -> Ledger:
        """The ledger this application reads and writes (opened on first use)."""
        return self._current_ledger()

    @property
    def ops(self) -> Operations:
        """The operator surface (acta.ops): explain a job, and the repair verbs, schedules,
        alerts and settings (``ops.repairs``, ``ops.schedules``, ``ops.alerts``,
        ``ops.settings``)."""
        return Operations(self._current_ledger, self.namespace, self.registry)

    def _current_ledger(self) -> Ledger:
        if _isolation is not None and self._ledger is self._home:
            _isolation(self)  # under the test plugin: never the configured database
        return self._ledger

    def _read_backlog(self) -> dict[str, int]:
        """The backlog gauge's read of this namespace, on the ledger in use right now."""
        ledger, namespace = self._ledger, self.namespace
        return ledger.run(lambda: backlog(namespace, ledger.now()), name="backlog")

    @property
    def settings(self) -> Settings:
        """Durable named settings seen from this namespace (see docs/guide/settings.md)."""
        return Settings(self._current_ledger, self.namespace)

    @property
    def schedules(self) -> Schedules:
        """The recurring schedules of this namespace: list, preview, pause, resume, trigger,
        override (see docs/guide/schedules.md)."""
        return Schedules(self._current_ledger, self.namespace)

    @property
    def alerts(self) -> Alerts:
        """The alerts of this namespace: list, get, acknowledge, resolve (see
        docs/guide/alerts.md)."""
        return Alerts(self._current_ledger, self.namespace)

    @property
    def repairs(self) -> Repairs:
        """Repair verbs: restart, reschedule, amend, pause, resume, retire, purge, one job or
        many (see docs/guide/repair.md)."""
        return Repairs(self._current_ledger, self.registry, self.namespace)

    @property
    def tenants(self) -> Tenants:
        """Tenants: register, list, suspend, resume, update (see docs/guide/tenants.md)."""
        return self.ops.tenants

    @property
    def namespaces(self) -> Namespaces:
        """Namespaces: list, suspend, resume, update (see docs/guide/tenants.md)."""
        return self.ops.namespaces

    @property
    def provider(self) -> Provider:
        """The ledger backend, opened (and schema-checked or migrated) on first use."""
        return self._current_ledger().provider

    def _open(self) -> Provider:
        with self._lock:
            provider = self._own_provider()
            if not self._schema_checked:
                if self.apply_migrations:
                    provider.migrate()
                else:
                    provider.check_schema()
                self._schema_checked = True
            return provider

    def _own_provider(self) -> Provider:
        """This application's provider, built on first use (nothing connects); call it with
        the lock held."""
        if self._provider is None:
            self._provider = open_provider(
                self.database, schema=self.schema, **self._provider_options
            )
        return self._provider

    @property
    def where(self) -> str:
        """Where this application's ledger lives, for messages (no password). Nothing is
        connected or checked to say it."""
        with self._lock:
            return self._own_provider().where

    @contextlib.contextmanager
    def bound(self, provider: Provider, clock: Clock | None = None) -> Iterator[Acta]:
        """Temporarily point this app at another ledger and clock (the test host uses it)."""
        saved = self._ledger
        self._ledger = Ledger(provider, clock or saved.clock)
        self._ledger.hooks = saved.hooks  # what observes this app observes it there too
        self._ledger.telemetry = saved.telemetry
        try:
            yield self
        finally:
            self._ledger = saved

    def migrate(self) -> list[str]:
        """Apply pending schema migrations; returns what was applied."""
        if self._current_ledger() is not self._home:
            return self._ledger.provider.migrate()  # bound elsewhere (a test's ledger)
        with self._lock:
            applied = self._own_provider().migrate()
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
        codec: str | Codec | None = None,
        **policy: Unpack[JobOptions],
    ) -> Callable[[F], JobDefinition[Any, Any]]:
        """Declare a job; ``policy`` is ``JobOptions`` (max_attempts, backoff, timeout,
        priority, audit, schedule, ...). An option it does not take is an UnknownOptionError
        naming it, before the decorated function is looked at."""
        validate_job_name(name)
        check_options(policy, JOB_OPTIONS, "job")
        parsed = JobPolicy.build(**policy)
        chosen = None if codec is None else codec_registry.resolve(codec)  # unknown: fails now

        def register(handler: F) -> JobDefinition[Any, Any]:
            if not callable(handler):
                raise ConfigurationError(f"@job({name!r}) must decorate a function")
            definition: JobDefinition[Any, Any] = JobDefinition(
                name, handler, parsed, input_type=input, result_type=result, codec=chosen
            )
            return self.add(definition)

        return register

    def define(
        self,
        name: str,
        /,
        *,
        input: Any = None,
        result: Any = None,
        codec: str | Codec | None = None,
        **policy: Unpack[JobOptions],
    ) -> JobDefinition[Any, Any]:
        """Declare a job without a handler, for producers that only enqueue it."""
        validate_job_name(name)
        check_options(policy, JOB_OPTIONS, "define")
        definition: JobDefinition[Any, Any] = JobDefinition(
            name,
            None,
            JobPolicy.build(**policy),
            input_type=input,
            result_type=result,
            codec=codec,
        )
        return self.add(definition)

    def add(self, definition: JobDefinition[Any, Any]) -> JobDefinition[Any, Any]:
        """Register a definition object."""
        return self.registry.add(definition)

    @property
    def definitions(self) -> Mapping[str, JobDefinition[Any, Any]]:
        return self.registry.definitions

    def definition(self, job: JobLike) -> JobDefinition[Any, Any]:
        """The registered definition for a name or definition object."""
        return self.registry.resolve(job)

    # -- enqueue (the producer) -----------------------------------------------------------

    def request(
        self, job: JobLike, input: object = None, **options: Unpack[EnqueueOptions]
    ) -> JobRequest:
        """Build a validated request for ``enqueue_batch``."""
        return self.producer.request(job, input, **options)

    def enqueue(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """Enqueue one job and return its ref (an existing job's ref for a duplicate dedup_key).

        ``connection``: the caller's open database connection; the job then commits or rolls
        back with the caller's transaction. Options (``EnqueueOptions``): delay, not_before,
        priority, dedup_key, correlation_key, tags, lane, concurrency_key, deadline,
        deadline_policy, tenant; any other name is an UnknownOptionError naming it.
        """
        return self.producer.enqueue(job, input, connection=connection, **options)

    async def enqueue_async(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """Async twin of ``enqueue``."""
        return await self.producer.enqueue_async(job, input, connection=connection, **options)

    def enqueue_batch(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        """Enqueue many jobs in one transaction: all of them or none."""
        return self.producer.enqueue_batch(requests, connection=connection)

    async def enqueue_batch_async(
        self, requests: Sequence[JobRequest], *, connection: object = None
    ) -> list[JobRef]:
        """Async twin of ``enqueue_batch``."""
        return await self.producer.enqueue_batch_async(requests, connection=connection)

    # -- the outbox (staging only; acta.outbox) ----------------------------------------------

    def add_to_outbox(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object,
        outbox_schema: str | None = None,
        **options: Any,
    ) -> int:
        """Stage one job request in the outbox of the database ``connection`` belongs to, in
        its open transaction (never committed here); return the staged row's id.

        Validated like ``enqueue`` (same options, same errors, nothing written on an error).
        ``outbox_schema``: the PostgreSQL schema of ``acta_outbox`` (default ``public``).
        """
        request = self.producer.request(job, input, **options)
        return outbox.stage(
            request,
            namespace=self.namespace,
            connection=connection,
            now=self.clock.now(),
            schema=outbox_schema,
        )

    async def add_to_outbox_async(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object,
        outbox_schema: str | None = None,
        **options: Any,
    ) -> int:
        """Async twin of ``add_to_outbox``."""
        request = self.producer.request(job, input, **options)
        return await outbox.stage_async(
            request,
            namespace=self.namespace,
            connection=connection,
            now=self.clock.now(),
            schema=outbox_schema,
        )

    def outbox_quarantine(self, source: OutboxSource | None = None) -> Quarantine:
        """The quarantine of ``source`` (default: this app's outbox source): read, requeue,
        discard; each decision is also recorded in this app's ledger."""
        chosen = source or self.outbox
        if chosen is None:
            raise ConfigurationError("no outbox source: pass one or give Acta(outbox=...)")
        return Quarantine(chosen, self._current_ledger, self.namespace)

    # -- results ------------------------------------------------------------------------

    def _after_signal(self, outcome: SignalOutcome) -> None:
        if outcome is SignalOutcome.RELEASED:
            self.bell.ring_all()

    async def wait_async(self, ref: JobRef | str, *, timeout: Any = None) -> Any:
        """Wait until the job is terminal and return its result; JobFailedError if it failed
        or was cancelled, WaitTimeoutError if ``timeout`` passes first (the job goes on)."""
        return await wait_for(self, JobRef.coerce(ref), timeout)

    def wait(self, ref: JobRef | str, *, timeout: Any = None) -> Any:
        """Blocking ``wait_async`` (not from inside a running event loop). It reads with the
        blocking API, so it does not share async connections with a worker's event loop."""
        return wait_blocking(self, JobRef.coerce(ref), timeout)

    async def run_and_wait_async(
        self,
        job: JobLike,
        input: object = None,
        *,
        timeout: Any = None,
        **options: Unpack[EnqueueOptions],
    ) -> Any:
        """Enqueue a job and wait for its outcome: its result, or JobFailedError."""
        wait_limit(timeout)  # a bad timeout is refused before anything is enqueued
        ref = await self.enqueue_async(job, input, **options)
        return await self.wait_async(ref, timeout=timeout)

    def run_and_wait(
        self,
        job: JobLike,
        input: object = None,
        *,
        timeout: Any = None,
        **options: Unpack[EnqueueOptions],
    ) -> Any:
        """Blocking ``run_and_wait_async`` (not from inside a running event loop)."""
        wait_limit(timeout)
        ref = self.enqueue(job, input, **options)
        return self.wait(ref, timeout=timeout)

    # -- workers --------------------------------------------------------------------------

    def deployment(self) -> Deployment:
        """What a worker of this application is built from (the ledger it uses right now).
        Alert routes are checked here, as ``app.alerting.validation`` says."""
        self.alerting.validate()
        return Deployment(
            self._current_ledger(),
            self.registry,
            self.namespace,
            self.bell,
            outbox=self.outbox,
            contract_drift=self.contract_drift,
        )

    def worker(self, **settings: Any) -> Worker:
        """Build a worker for this app's handlers (see acta.runtime.worker.Worker)."""
        return Worker(self.deployment(), **settings)

    def run_worker(self, **settings: Any) -> None:
        """Run a worker in the foreground until SIGINT or SIGTERM, then shut down gracefully."""
        self.worker(**settings).run_forever()
