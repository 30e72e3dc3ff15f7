"""Metrics and spans through OpenTelemetry, read back with the SDK's in-memory reader and exporter.

One scripted run on the test host (successes, failures with retries, a worker killed mid-run
whose lease recovery takes back, an alert, a backlog read before anything ran) must show exact
counts on every instrument; execution spans must be children of the span that enqueued their
job, through the trace context stored in the ledger; and without OpenTelemetry importable, acta
must run as before and record nothing. Each test runs on SQLite and on PostgreSQL (whose
enqueue is the fused one-statement path).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import Sdk, job

import acta.telemetry
from acta import Acta, JobContext, JobStatus, SyncJobContext
from acta.errors import ConfigurationError
from acta.provider.protocol import Provider
from acta.telemetry import Telemetry
from acta_testing import Host


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    return either_dialect


@pytest.fixture
def sdk() -> Iterator[Sdk]:
    made = Sdk()
    yield made
    made.close()


@pytest.fixture
def acta_app(sdk: Sdk) -> Acta:
    telemetry = Telemetry(
        meter_provider=sdk.meter_provider, tracer_provider=sdk.tracer_provider, backlog=True
    )
    return Acta(telemetry=telemetry)


def test_a_scripted_run_shows_exact_counts_on_every_instrument(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("render-report")
    def render(ctx: SyncJobContext) -> str:
        if ctx.execution == 1:
            acta_host.kill(first)  # the process dies mid-run; recovery takes the lease back
        return "rendered"

    @acta_app.job("send-email")
    def send(to: str) -> None:
        acta_host.advance("2s")  # the run takes two seconds on the host's clock

    @acta_app.job("charge-card", max_attempts=2, backoff="1s")
    def charge(order: int) -> None:
        raise RuntimeError(f"card declined for order {order}")

    @acta_app.job("audit-ledger")
    def audit(ctx: SyncJobContext) -> None:
        ctx.alert("ledger drift", "3 entries differ", severity="warning")

    render.enqueue()
    for to in ("ann", "bob", "cy"):
        send.enqueue(to)
    charge.enqueue(1)
    charge.enqueue(2)
    audit.enqueue()

    # The backlog is read from the ledger when the metrics are collected: all seven are due.
    assert sdk.metrics()["acta.backlog"] == {
        job("render-report"): 1,
        job("send-email"): 3,
        job("charge-card"): 2,
        job("audit-ledger"): 1,
    }

    assert acta_host.tick(first) == "killed"  # render-report was first in line
    acta_host.run_until_idle(peer)
    assert {j.name: j.status for j in acta_host.jobs()} == {
        "render-report": JobStatus.SUCCEEDED,
        "send-email": JobStatus.SUCCEEDED,
        "charge-card": JobStatus.FAILED,
        "audit-ledger": JobStatus.SUCCEEDED,
    }

    seen = sdk.metrics()
    assert seen["acta.claims"] == {
        job("render-report"): 2,  # once by the worker that died, once by its peer
        job("send-email"): 3,
        job("charge-card"): 4,  # two jobs, two attempts each
        job("audit-ledger"): 1,
    }
    assert seen["acta.executions"] == {
        job("render-report", **{"acta.outcome": "killed"}): 1,
        job("render-report", **{"acta.outcome": "completed"}): 1,
        job("send-email", **{"acta.outcome": "completed"}): 3,
        job("charge-card", **{"acta.outcome": "rearmed"}): 2,
        job("charge-card", **{"acta.outcome": "failed"}): 2,
        job("audit-ledger", **{"acta.outcome": "completed"}): 1,
    }
    durations = seen["acta.execution.duration"]
    assert set(durations) == set(seen["acta.executions"])  # one point set per outcome
    assert durations[job("send-email", **{"acta.outcome": "completed"})] == (3, 6.0)
    assert durations[job("charge-card", **{"acta.outcome": "failed"})] == (2, 0.0)
    assert seen["acta.settles"] == {
        job("render-report", **{"acta.status": "succeeded"}): 1,  # the killed run wrote none
        job("send-email", **{"acta.status": "succeeded"}): 3,
        job("charge-card", **{"acta.status": "ready"}): 2,  # failed, to be retried
        job("charge-card", **{"acta.status": "failed"}): 2,
        job("audit-ledger", **{"acta.status": "succeeded"}): 1,
    }
    assert seen["acta.lease_losses"] == {(("acta.namespace", "default"),): 1}
    # Every run that began also ended, the killed one included.
    assert seen["acta.executing"] == {
        job(name): 0 for name in ("render-report", "send-email", "charge-card", "audit-ledger")
    }
    assert seen["acta.alerts.opened"] == {
        job("audit-ledger", **{"acta.alert.severity": "warning"}): 1
    }
    # Nothing is due any more: the gauge reports no job name at all.
    assert seen.get("acta.backlog", {}) == {}

    executions = [s for s in sdk.exporter.get_finished_spans() if s.name.startswith("acta.")]
    assert sorted(s.name for s in executions) == sorted(
        ["acta.execute render-report"] * 2
        + ["acta.execute send-email"] * 3
        + ["acta.execute charge-card"] * 4
        + ["acta.execute audit-ledger"]
    )
    failed = [s for s in sdk.spans("acta.execute charge-card") if s.status.is_ok is False]
    assert len(failed) == 2  # the final failures; the retried ones settled ready
    assert all(s.attributes and s.attributes["acta.outcome"] == "failed" for s in failed)


def test_an_execution_span_is_a_child_of_the_span_that_enqueued_its_job(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    smtp_parents: list[int] = []

    @acta_app.job("send-email")
    def send(to: str) -> None:
        # A sync handler runs in a thread; its own spans still nest under its execution.
        with sdk.tracer.start_as_current_span("smtp") as smtp:
            assert smtp.parent is not None
            smtp_parents.append(smtp.parent.span_id)

    with sdk.tracer.start_as_current_span("POST /orders") as request:
        traced = send.enqueue("ann")
    untraced = send.enqueue("bob")

    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "completed"

    runs = {s.attributes["acta.job.ref"]: s for s in sdk.spans("acta.execute send-email")}  # type: ignore[index]
    assert set(runs) == {str(traced), str(untraced)}
    child = runs[str(traced)]
    asked = request.get_span_context()
    assert child.context.trace_id == asked.trace_id
    assert child.parent is not None and child.parent.span_id == asked.span_id
    assert child.kind is SpanKind.CONSUMER
    assert child.status.status_code is StatusCode.UNSET
    assert child.attributes is not None and child.attributes["acta.job.attempt"] == 1
    assert child.attributes["acta.outcome"] == "completed"
    assert child.attributes["acta.status"] == "succeeded"
    alone = runs[str(untraced)]
    assert alone.parent is None and alone.context.trace_id != asked.trace_id
    # The handler's span is the child of the execution span of its own job.
    assert sorted(smtp_parents) == sorted(s.context.span_id for s in runs.values())


def test_a_child_job_spawned_in_a_handler_continues_its_parents_trace(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    @acta_app.job("resize")
    async def resize(size: int) -> int:
        return size

    @acta_app.job("publish")
    async def publish(ctx: JobContext) -> None:
        await ctx.spawn(resize, 64, name="thumb")

    publish.enqueue()
    acta_host.run_until_idle()
    [parent] = sdk.spans("acta.execute publish")
    [child] = sdk.spans("acta.execute resize")
    assert parent.parent is None  # enqueued outside any span
    assert child.context.trace_id == parent.context.trace_id
    assert child.parent is not None and child.parent.span_id == parent.context.span_id


def test_the_stored_trace_context_is_the_w3c_header_and_only_when_traced(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    @acta_app.job("send-email")
    def send(to: str) -> None:
        pass

    with sdk.tracer.start_as_current_span("POST /orders") as request:
        traced = send.enqueue("ann")
    untraced = send.enqueue("bob")  # no span current: nothing stored
    with sdk.tracer.start_as_current_span("ended") as ended:
        pass
    with trace.use_span(ended):  # current, but no longer recording
        after_end = send.enqueue("cy")

    # What the claim reads back is what the enqueue stored.
    runs = acta_host._portal.call(acta_host.worker.claim(10))
    stored = {run.job.job_ref: run.job.trace_context for run in runs}
    ids = request.get_span_context()
    assert json.loads(stored[str(traced)] or "null") == {
        "traceparent": f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{ids.trace_flags:02x}"
    }
    assert stored[str(untraced)] is None
    assert stored[str(after_end)] is None


def test_without_opentelemetry_acta_runs_and_records_nothing(
    acta_provider: Provider, acta_clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the extra were not installed: importing any opentelemetry module fails.
    for name in [n for n in sys.modules if n == "opentelemetry" or n.startswith("opentelemetry.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(acta.telemetry, "_shared", [])
    assert not acta.telemetry.available()
    with pytest.raises(ConfigurationError, match=r"acta-jobs\[otel\]"):
        Acta(telemetry=True)

    app = Acta()
    assert app.ledger.telemetry is None
    ran: list[str] = []

    @app.job("send-email")
    def send(to: str) -> None:
        ran.append(to)

    host = Host(app, acta_provider, acta_clock)
    try:
        ref = send.enqueue("ann")
        assert host.tick() == "completed"
        assert host.job(ref).status is JobStatus.SUCCEEDED
    finally:
        host.close()
    assert ran == ["ann"]
    assert app.ledger.telemetry is None  # still: no hook ran, nothing was recorded


def test_telemetry_false_records_nothing_and_a_bad_option_is_refused() -> None:
    app = Acta(telemetry=False)
    assert app.ledger.telemetry is None
    with pytest.raises(ConfigurationError, match="telemetry must be None, True, False or"):
        Acta(telemetry="yes")  # type: ignore[arg-type]
    default, again = Acta(), Acta(telemetry=True)
    # With the API installed, the default is one shared Telemetry over the global providers.
    assert default.ledger.telemetry is not None
    assert default.ledger.telemetry is again.ledger.telemetry
    assert default.ledger.telemetry.backlog is False


def test_a_backlog_that_cannot_be_read_is_logged_and_reported_as_nothing(
    sdk: Sdk, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = Telemetry(meter_provider=sdk.meter_provider, tracer_provider=sdk.tracer_provider)

    def unreachable() -> dict[str, int]:
        raise ConnectionError("the database is away")

    telemetry.watch_backlog("billing", unreachable)
    telemetry.watch_backlog("mail", lambda: {"send-email": 4})
    assert sdk.metrics()["acta.backlog"] == {
        (("acta.job.name", "send-email"), ("acta.namespace", "mail")): 4
    }
    assert "backlog of namespace 'billing' not read for metrics" in caplog.text
