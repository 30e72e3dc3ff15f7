"""The rest of the meter, read back with the SDK's in-memory reader: durable steps (how each
ended, how long its body ran on the worker's clock), live executing jobs seen from inside a run,
alert activity (failures reported, notices per channel, incidents resolved) and the lock
contention instruments. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from telemetry_support import Sdk, job, telemetry_of

from acta import Acta, JobStatus, StepInterruptedError, SyncJobContext
from acta.alerting import Notice
from acta.provider.protocol import Provider
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
    return Acta(telemetry=telemetry_of(sdk))


def test_steps_are_counted_by_how_they_ended_with_their_body_time(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    @acta_app.job("ship-order", max_attempts=3, backoff="1s")
    def ship(ctx: SyncJobContext) -> str:
        def pick() -> str:
            acta_host.advance("3s")  # the body runs three seconds on the host's clock
            return "picked"

        def label() -> str:
            acta_host.advance("500ms")
            if ctx.execution == 1:
                raise ConnectionError("label printer offline")
            return "labelled"

        ctx.step("pick", pick)
        return ctx.step("label", label)

    ref = ship.enqueue()
    assert acta_host.tick() == "rearmed"  # pick completed, label failed
    acta_host.advance("1s")
    assert acta_host.tick() == "completed"  # pick replayed, label completed
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED

    seen = sdk.metrics()
    name = "ship-order"
    assert seen["acta.steps"] == {
        job(name, **{"acta.step.outcome": "completed"}): 2,
        job(name, **{"acta.step.outcome": "failed"}): 1,
        job(name, **{"acta.step.outcome": "replayed"}): 1,
    }
    # (count, sum of seconds): a replayed step ran no body, so it has no duration.
    assert seen["acta.step.duration"] == {
        job(name, **{"acta.step.outcome": "completed"}): (2, 3.5),
        job(name, **{"acta.step.outcome": "failed"}): (1, 0.5),
    }


def test_an_interrupted_at_most_once_step_is_counted(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("pay", max_attempts=2)
    def pay(ctx: SyncJobContext) -> None:
        def charge() -> None:
            if ctx.execution == 1:
                acta_host.kill(first)  # the worker dies inside the at-most-once body

        try:
            ctx.step("charge", charge, at_most_once=True)
        except StepInterruptedError:
            return None

    pay.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.run_until_idle(peer)
    assert sdk.metrics()["acta.steps"] == {job("pay", **{"acta.step.outcome": "interrupted"}): 1}


def test_executing_counts_the_run_in_progress_and_returns_to_zero(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    during: list[object] = []

    @acta_app.job("resize")
    def resize() -> None:
        during.append(sdk.metrics()["acta.executing"])

    resize.enqueue()
    resize.enqueue()
    assert acta_host.run_until_idle() == 2
    assert during == [{job("resize"): 1}, {job("resize"): 1}]
    assert sdk.metrics()["acta.executing"] == {job("resize"): 0}


def test_alert_activity_failures_notices_and_resolutions(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    chat: list[Notice] = []

    def pager(notice: Notice) -> None:
        raise ConnectionError("pager unreachable")

    acta_app.alerting.callable("chat", chat.append)
    acta_app.alerting.callable("pager", pager)
    healthy = [False]

    @acta_app.job("export", max_attempts=2, backoff="1s", alerts="all")
    def export() -> None:
        if not healthy[0]:
            raise RuntimeError("bucket gone")

    export.enqueue()
    assert acta_host.tick() == "rearmed"  # a retryable failure: reported as a warning
    acta_host.advance("1s")
    assert acta_host.tick() == "failed"  # the last attempt: critical
    acta_host.advance("1m")
    acta_host.tick()  # sys.alerts: the open notices (one alert per severity) to both channels
    assert sorted((n.severity, n.state) for n in chat) == [
        ("critical", "open"),
        ("warning", "open"),
    ]
    healthy[0] = True
    export.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    acta_host.run_until_idle()  # sys.alerts: the incident recovered; resolved notices

    seen = sdk.metrics()
    assert seen["acta.alerts.failures"] == {
        job("export", **{"acta.alert.severity": "warning"}): 1,
        job("export", **{"acta.alert.severity": "critical"}): 1,
    }
    # Two alerts (one per severity), each told to both channels when opened and resolved; the
    # pager took none of them. Resolution runs first in a round, so the resolved alerts owed
    # the pager nothing more.
    ns = {"acta.namespace": "default"}
    assert sdk.metrics()["acta.alerts.notices"] == {
        _attrs(ns, "chat", "open", "delivered"): 2,
        _attrs(ns, "pager", "open", "failed"): 2,
        _attrs(ns, "chat", "resolved", "delivered"): 2,
        _attrs(ns, "pager", "resolved", "failed"): 2,
    }
    assert seen["acta.alerts.resolved"] == {tuple(ns.items()): 2}
    assert [n.state for n in chat] == ["open", "open", "resolved", "resolved"]


def _attrs(
    ns: dict[str, str], channel: str, notice: str, delivery: str
) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            {
                **ns,
                "acta.alert.channel": channel,
                "acta.alert.notice": notice,
                "acta.alert.delivery": delivery,
            }.items()
        )
    )


def test_lock_contention_instruments_record_waits_by_outcome(sdk: Sdk) -> None:
    telemetry = telemetry_of(sdk)
    telemetry.lock_waited("default", "sync-stock", "acquired", 0.25)
    telemetry.lock_waited("default", "sync-stock", "acquired", 1.0)
    telemetry.lock_waited("default", "sync-stock", "timed-out", 5.0)
    seen = sdk.metrics()
    assert seen["acta.lock.waits"] == {
        job("sync-stock", **{"acta.lock.outcome": "acquired"}): 2,
        job("sync-stock", **{"acta.lock.outcome": "timed-out"}): 1,
    }
    assert seen["acta.lock.wait.duration"] == {
        job("sync-stock", **{"acta.lock.outcome": "acquired"}): (2, 1.25),
        job("sync-stock", **{"acta.lock.outcome": "timed-out"}): (1, 5.0),
    }
