"""Trace context across the ledger: stored at enqueue, restored around the execution.

An enqueue that runs inside a recording span stores that span's W3C trace context (the
``traceparent`` and, when present, ``tracestate`` headers) as a small JSON object in
``jobs.trace_context``. The worker that claims the job later, maybe in another process and
hours on, opens the execution span as a child of that context, so a trace reads "request ->
enqueue -> execution" end to end; each retry is another execution span under the same parent.
"""

from __future__ import annotations

import json
import logging

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from acta.telemetry.metrics import JOB_NAME, NAMESPACE, acta_version

TRACER = "acta"
JOB_REF = "acta.job.ref"
ATTEMPT = "acta.job.attempt"
CONTEXT_MAX = 1024
"""A stored context longer than this is not a real traceparent/tracestate pair: ignored."""

log = logging.getLogger("acta.telemetry")
_propagator = TraceContextTextMapPropagator()


class Spans:
    """The ``acta`` tracer of ``provider``: the context to store, the span of an execution."""

    def __init__(self, provider: TracerProvider) -> None:
        self.tracer: Tracer = provider.get_tracer(TRACER, acta_version())

    @staticmethod
    def current_context() -> str | None:
        """The trace context to store with a job enqueued now: the current span's, if it is
        recording (None otherwise, so an untraced enqueue stores nothing)."""
        if not trace.get_current_span().is_recording():
            return None
        carrier: dict[str, str] = {}
        _propagator.inject(carrier)
        return json.dumps(carrier, separators=(",", ":"), sort_keys=True) if carrier else None

    def start_execution(
        self, namespace: str, name: str, job_ref: str, attempt: int, stored: str | None
    ) -> Span:
        """Start (not yet current) the span of one execution, the child of ``stored``."""
        return self.tracer.start_span(
            f"acta.execute {name}",
            context=parent_context(stored),
            kind=SpanKind.CONSUMER,
            attributes={NAMESPACE: namespace, JOB_NAME: name, JOB_REF: job_ref, ATTEMPT: attempt},
        )


def parent_context(stored: str | None) -> otel_context.Context:
    """The context an execution span starts under: the stored one, or a fresh root (never
    whatever span happens to be current in the worker's task)."""
    empty = otel_context.Context()
    if stored is None or len(stored) > CONTEXT_MAX:
        return empty
    try:
        carrier = json.loads(stored)
    except ValueError:
        log.debug("ignoring a stored trace context that is not JSON: %.80r", stored)
        return empty
    if not isinstance(carrier, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in carrier.items()
    ):
        return empty
    return _propagator.extract(carrier, context=empty)
