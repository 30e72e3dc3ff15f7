"""The direct profile (claim and start in one commit) keeps every guarantee of the buffered one:
retries, recovery of a killed worker, fencing, hand-back without a handler, graceful stop.

The bulk profile runs the same specs: driven one job at a time (the test host's ticks) it must
keep them all. Its flush window, the one thing it relaxes, has its own specs (test_bulk)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acta import Acta, EventCode, JobContext, JobStatus
from acta.clock import ManualClock
from acta.provider.protocol import Provider
from acta_testing import Host


@pytest.fixture(params=["direct", "bulk"])
def direct(
    acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock, request: pytest.FixtureRequest
) -> Iterator[Host]:
    host = Host(acta_app, acta_provider, acta_clock, profile=request.param)
    yield host
    host.close()


def test_direct_retries_and_succeeds(acta_app: Acta, direct: Host) -> None:
    @acta_app.job("flaky-sync", backoff="10s", max_attempts=3)
    def flaky(ctx: JobContext) -> int:
        if ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt} failed")
        return ctx.execution

    ref = flaky.enqueue()
    assert direct.run_until_idle() == 3
    assert direct.job(ref).status is JobStatus.SUCCEEDED
    assert acta_app.result(ref) == 3
    names = direct.event_names(ref)
    assert names.count("execution-started") == 3 and names.count("retry-scheduled") == 2
    assert names[-2:] == ["execution-finished", "succeeded"]


def test_direct_killed_worker_is_recovered_by_a_peer(acta_app: Acta, direct: Host) -> None:
    first, peer = direct.worker, direct.add_worker()

    @acta_app.job("render")
    def render(ctx: JobContext) -> str:
        if ctx.execution == 1:
            direct.kill(first)
        return "ok"

    ref = render.enqueue()
    assert direct.tick(first) == "killed"
    direct.advance(first.lease + peer.heartbeat)
    assert direct.tick(peer) == "completed"
    codes = [e.code for e in direct.events(ref)]
    assert codes.count(EventCode.LEASE_LOST) == 1 and codes[-1] is EventCode.SUCCEEDED


def test_direct_zombie_is_fenced(acta_app: Acta, direct: Host) -> None:
    zombie, peer = direct.worker, direct.add_worker()

    @acta_app.job("export")
    def export(ctx: JobContext) -> int:
        if ctx.execution == 1:
            direct.pause(zombie)
            direct.advance(zombie.lease + peer.heartbeat)
            assert direct.tick(peer) == "completed"
            direct.resume(zombie)
        return ctx.execution

    ref = export.enqueue()
    assert direct.tick(zombie) == "lease-lost"
    assert acta_app.result(ref) == 2
    assert direct.event_names(ref).count("write-fenced") == 1


@pytest.mark.parametrize("profile", ["direct", "bulk"])
def test_direct_without_a_handler_hands_back_without_starting(
    acta_provider: Provider, acta_clock: ManualClock, profile: str
) -> None:
    producer, other_build = Acta(), Acta()
    producer.define("old-report")

    @other_build.job("new-report")
    def new_report() -> None:
        return None

    with producer.bound(acta_provider, acta_clock):
        ref = producer.enqueue("old-report")
    host = Host(other_build, acta_provider, acta_clock, profile=profile)
    try:
        assert host.tick() == "rearmed"
        job = other_build.get(ref)
        # The claim starts only definitions this build has a handler for: no execution is
        # spent on a job it can only hand back.
        assert job.status is JobStatus.READY and (job.attempts, job.executions) == (0, 0)
        assert host.event_names(ref) == ["enqueued", "handed-back"]
        assert host.tick() == "nothing-claimed"  # the definition is skipped from now on
    finally:
        host.close()


def test_direct_graceful_stop_hands_back(acta_app: Acta, direct: Host) -> None:
    leaving, peer = direct.worker, direct.add_worker()

    @acta_app.job("reindex")
    def reindex(ctx: JobContext) -> int:
        if ctx.execution == 1:
            direct.stop(leaving)
            ctx.raise_if_cancelled()
        return ctx.execution

    ref = reindex.enqueue()
    assert direct.tick(leaving) == "rearmed"
    assert direct.job(ref).attempts == 0
    assert direct.tick(peer) == "completed"


def test_profile_is_validated(acta_app: Acta) -> None:
    from acta import ValidationError

    with pytest.raises(ValidationError, match="profile"):
        acta_app.worker(profile="eager")


def test_direct_respects_the_audit_level_of_starts(acta_app: Acta, direct: Host) -> None:
    @acta_app.job("quiet", audit="failures")
    def quiet() -> None:
        return None

    @acta_app.job("loud")
    def loud() -> None:
        return None

    hushed, chatty = quiet.enqueue(), loud.enqueue()
    assert direct.run_until_idle() == 2
    assert direct.event_names(hushed) == []
    assert direct.event_names(chatty) == [
        "enqueued",
        "execution-started",
        "execution-finished",
        "succeeded",
    ]
