"""The test host keeps schedules and periodic system jobs idle unless the test opts in, and runs
one chosen job on request (issue 28 item 2; docs/guide/testing.md, "Scheduled jobs").

This module is about the host's defaults, so it keeps them (``HOST_DEFAULTS``): conformance
specs elsewhere run with schedules on, as production does.
"""

from __future__ import annotations

import pytest

from acta import Acta, JobContext, JobStatus
from acta_testing import Host, HostError

HOST_DEFAULTS = True


def _scheduled(app: Acta, fired: list[str]) -> None:
    @app.job("rollup", schedule="5m")
    def rollup(ctx: JobContext) -> None:
        fired.append(f"{ctx.firing.at:%H:%M}")


def test_a_declared_schedule_does_not_fire_unless_enabled(acta_app: Acta, acta_host: Host) -> None:
    fired: list[str] = []
    _scheduled(acta_app, fired)

    @acta_app.job("send-mail")
    def send_mail(to: str) -> str:
        return f"mail to {to}"

    ref = send_mail.enqueue("ada@example.com")
    assert acta_host.tick() == "completed"  # the test's job, not the schedule's slot
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1h")
    assert acta_host.tick() == "nothing-claimed"
    assert acta_host.run_until_idle() == 0
    assert fired == []
    assert acta_app.result(ref) == "mail to ada@example.com"


def test_a_host_call_turns_schedules_on(acta_app: Acta, acta_host: Host) -> None:
    fired: list[str] = []
    _scheduled(acta_app, fired)
    assert acta_host.tick() == "nothing-claimed"

    acta_host.enable_schedules()
    acta_host.advance("5m")
    assert acta_host.tick() == "completed"
    assert fired == ["00:05"]


@pytest.mark.acta_schedules
def test_the_marker_turns_schedules_on(acta_app: Acta, acta_host: Host) -> None:
    fired: list[str] = []
    _scheduled(acta_app, fired)
    acta_host.advance("10m")
    assert acta_host.tick() == "completed"
    assert fired == ["00:10"]


def test_a_scheduled_job_enqueued_by_hand_still_runs(acta_app: Acta, acta_host: Host) -> None:
    calls: list[str] = []

    @acta_app.job("reindex", schedule="1h")
    def reindex(ctx: JobContext) -> str:
        calls.append("firing" if ctx.firing else "by hand")
        return "ok"

    ref = acta_app.enqueue("reindex")
    assert acta_host.tick() == "completed"
    assert calls == ["by hand"]
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED


def test_run_runs_exactly_the_chosen_job(acta_app: Acta, acta_host: Host) -> None:
    ran: list[int] = []

    @acta_app.job("ship", priority=5)
    def ship(order: int) -> int:
        ran.append(order)
        return order

    first, chosen, last = (ship.enqueue(n) for n in (1, 2, 3))
    assert acta_host.run(chosen) == "completed"
    assert ran == [2]
    assert acta_host.job(chosen).status is JobStatus.SUCCEEDED
    assert [acta_host.job(r).status for r in (first, last)] == [JobStatus.READY] * 2
    assert acta_host.tick(job=str(last)) == "completed"  # the same through tick(job=...)
    assert ran == [2, 3]


def test_run_refuses_a_job_that_is_not_due(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("remind")
    def remind() -> None:
        pass

    later = remind.enqueue(delay="1h")
    with pytest.raises(HostError, match="cannot run now: it is ready, due at"):
        acta_host.run(later)
    assert acta_host.job(later).executions == 0


def test_run_until_idle_counts_system_runs_apart(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("render")
    def render(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.kill(first)
        return "rendered"

    ref = render.enqueue()
    assert acta_host.tick(first) == "killed"
    report = acta_host.run_until_idle(peer)  # waits out the lease; recovery runs first
    assert (report, report.user) == (1, 1)  # one handler run of a user job
    assert report.system >= 1  # recovery, once per heartbeat until the lease had lapsed
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
