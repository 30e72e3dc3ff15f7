"""``Telemetry``: the one object the rest of acta calls to record metrics and spans.

An application holds one (``Acta(telemetry=...)``) and hands it to its ledger, which everything
above it reaches: the producer asks it for the trace context to store, the worker wraps each run
in ``execution`` and reports claims, settles, lost leases and alerts. Each call site checks for
None first, so an application without telemetry pays that check and nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Status, StatusCode, TracerProvider

from acta.clock import Clock
from acta.model.codes import JobStatus
from acta.model.rows import Claimed
from acta.names import SYSTEM_PREFIX
from acta.telemetry.metrics import (
    CHANNEL,
    DELIVERY,
    LOCK_OUTCOME,
    NAMESPACE,
    NOTICE,
    OUTCOME,
    SEVERITY,
    STATUS,
    STEP_OUTCOME,
    BacklogReader,
    Instruments,
    count_by_name,
    job_attributes,
)
from acta.telemetry.spans import Spans

T = TypeVar("T")
log = logging.getLogger("acta.telemetry")

FAILED = frozenset({"failed", "crashed"})
"""Run outcomes that mark the execution span as an error (a failure that will be retried ends
its run as ``rearmed``: its settle says ``ready``)."""


class Telemetry:
    """Metrics and spans of acta on OpenTelemetry providers.

    ``meter_provider``/``tracer_provider``: default, OpenTelemetry's global ones (set by the
    application's SDK setup, before or after this object is made). ``backlog``: also report the
    backlog gauge, read from the ledger by one query at each collection."""

    def __init__(
        self,
        *,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        backlog: bool = False,
    ) -> None:
        self.instruments = Instruments(meter_provider or metrics.get_meter_provider())
        self.spans = Spans(tracer_provider or trace.get_tracer_provider())
        self.backlog = backlog
        # Attribute sets are few (namespaces x job names x outcomes) and asked for on every
        # run: built once each, and never changed once handed to an instrument.
        self._attributes: dict[tuple[str, ...], dict[str, str]] = {}

    def _labels(self, namespace: str, name: str, key: str = "", value: str = "") -> dict[str, str]:
        found = self._attributes.get((namespace, name, key, value))
        if found is None:
            found = job_attributes(namespace, name)
            if key:
                found[key] = value
            self._attributes[(namespace, name, key, value)] = found
        return found

    # -- the producer -----------------------------------------------------------------------

    def trace_context(self) -> str | None:
        """What an enqueue made now stores in ``jobs.trace_context`` (None: untraced)."""
        return self.spans.current_context()

    # -- the worker -----------------------------------------------------------------------

    def claimed(self, namespace: str, names: Iterable[str]) -> None:
        """A claim leased jobs of these names (system jobs already left out)."""
        for name, count in count_by_name(list(names)).items():
            self.instruments.claims.add(count, self._labels(namespace, name))

    async def execution(
        self, namespace: str, job: Claimed, clock: Clock, run: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``run`` (one job's run, to its end) inside its execution span, counting it.

        The outcome recorded is what ``run`` returned (the runtime's ``RunEnd`` value), or
        ``crashed`` when it raised, ``abandoned`` when its task was cancelled."""
        attributes = self._labels(namespace, job.name)
        span = self.spans.start_execution(
            namespace, job.name, job.job_ref, job.attempts + 1, job.trace_context
        )
        # Current for the run's task and what it starts (the handler's task or thread), so a
        # handler's own spans nest under its execution.
        token = otel_context.attach(trace.set_span_in_context(span))
        self.instruments.executing.add(1, attributes)
        started = clock.monotonic()
        outcome = "crashed"
        try:
            ended = await run()
            outcome = str(ended)
            return ended
        except asyncio.CancelledError:
            outcome = "abandoned"
            raise
        except Exception as exc:
            span.record_exception(exc)
            raise
        finally:
            otel_context.detach(token)
            seconds = max(0.0, clock.monotonic() - started)
            self.instruments.executing.add(-1, attributes)
            ended_with = self._labels(namespace, job.name, OUTCOME, outcome)
            self.instruments.executions.add(1, ended_with)
            self.instruments.duration.record(seconds, ended_with)
            span.set_attribute(OUTCOME, outcome)
            if outcome in FAILED:
                span.set_status(Status(StatusCode.ERROR, outcome))
            span.end()

    def settled(
        self, namespace: str, name: str, status: JobStatus, alerted: str | None = None
    ) -> None:
        """A worker's settle committed, writing ``status`` (acta's own jobs are left out);
        ``alerted``: the severity of the failure it reported to alerting, if it did."""
        if name.startswith(SYSTEM_PREFIX):
            return
        self.instruments.settles.add(1, self._labels(namespace, name, STATUS, status.label))
        if alerted is not None:
            self.instruments.alert_failures.add(1, self._labels(namespace, name, SEVERITY, alerted))
        current = trace.get_current_span()
        if current.is_recording():
            current.set_attribute(STATUS, status.label)

    def leases_lost(self, namespace: str, count: int) -> None:
        """Recovery took back ``count`` lapsed leases in ``namespace``."""
        if count:
            self.instruments.lease_losses.add(count, {NAMESPACE: namespace})

    def alert_opened(self, namespace: str, name: str, severity: str) -> None:
        """An alert was opened for a job of ``name``."""
        self.instruments.alerts_opened.add(1, self._labels(namespace, name, SEVERITY, severity))

    def alert_notice(self, namespace: str, channel: str, notice: str, delivered: bool) -> None:
        """sys.alerts handed a notice (``open``, ``reminder``, ``resolved``) to ``channel``."""
        self.instruments.alert_notices.add(
            1,
            {
                NAMESPACE: namespace,
                CHANNEL: channel,
                NOTICE: notice,
                DELIVERY: "delivered" if delivered else "failed",
            },
        )

    def alerts_resolved(self, namespace: str, count: int) -> None:
        """sys.alerts resolved ``count`` incidents whose job recovered."""
        if count:
            self.instruments.alerts_resolved.add(count, {NAMESPACE: namespace})

    def step_ended(
        self, namespace: str, name: str, outcome: str, seconds: float | None = None
    ) -> None:
        """A durable step of a job of ``name`` ended: ``completed``, ``failed`` (its body
        raised, or its result could not be stored), ``replayed`` (its stored result was
        returned, nothing ran) or ``interrupted`` (an at-most-once step found begun and never
        finished). ``seconds``: how long its body ran, for steps that ran."""
        if name.startswith(SYSTEM_PREFIX):
            return
        attributes = self._labels(namespace, name, STEP_OUTCOME, outcome)
        self.instruments.steps.add(1, attributes)
        if seconds is not None:
            self.instruments.step_duration.record(max(0.0, seconds), attributes)

    def lock_waited(self, namespace: str, name: str, outcome: str, seconds: float) -> None:
        """A handler of a job of ``name`` found a lock held and waited ``seconds``; ``outcome``
        is ``acquired``, ``timed-out`` or ``abandoned`` (its run ended while it waited). Lock
        keys are not attributes: they are unbounded."""
        attributes = self._labels(namespace, name, LOCK_OUTCOME, outcome)
        self.instruments.lock_waits.add(1, attributes)
        self.instruments.lock_wait_duration.record(max(0.0, seconds), attributes)

    # -- the application ----------------------------------------------------------------

    def watch_backlog(self, namespace: str, read: Callable[[], Mapping[str, int]]) -> None:
        """Report ``namespace``'s backlog gauge from ``read`` (a query on its ledger). A read
        that fails is logged and reported as nothing for that collection."""

        def guarded() -> Mapping[str, int]:
            try:
                return read()
            except Exception as exc:
                log.warning("backlog of namespace %r not read for metrics: %s", namespace, exc)
                return {}

        reader: BacklogReader = guarded
        self.instruments.watch_backlog(namespace, reader)
