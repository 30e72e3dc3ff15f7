"""Repair verbs on one job: restart, reschedule and amend, with their events and their refusals."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from acta import Acta, EventCode, JobPurgedError, JobStatus
from acta.errors import JobNotFoundError, JobStateError, ValidationError
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def _detail(acta_app: Acta, ref: object, code: EventCode) -> dict[str, object]:
    [event] = [e for e in acta_app.events(str(ref)) if e.code is code]
    assert event.detail is not None
    return dict(json.loads(event.detail))


# -- restart -------------------------------------------------------------------------------


def test_restart_a_failed_job_runs_its_stored_input_again(acta_app: Acta, acta_host: Host) -> None:
    seen: list[str] = []
    healthy = {"ok": False}

    @acta_app.job("charge", max_attempts=2, backoff="1s")
    def charge(card: str) -> str:
        seen.append(card)
        if not healthy["ok"]:
            raise RuntimeError("gateway down")
        return f"charged {card}"

    ref = charge.enqueue("4242")
    acta_host.run_until_idle()
    failed = acta_app.get(ref)
    assert failed.status is JobStatus.FAILED and failed.attempts == 2

    healthy["ok"] = True
    info = acta_app.repairs.restart(ref, reason="gateway is back", actor="ops:ada")
    assert info.job_ref == str(ref) and info.status is JobStatus.READY and info.attempts == 0
    assert acta_host.run_until_idle() == 1
    assert seen == ["4242", "4242", "4242"]
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    assert acta_app.result(ref) == "charged 4242"
    detail = _detail(acta_app, ref, EventCode.RESTARTED)
    assert detail == {
        "verb": "restart",
        "reason": "gateway is back",
        "previous": "failed",
        "attempts": 2,
    }
    # The actor has a column of its own: "what did ops:ada change" is a plain filter.
    actors = {e.code: e.actor for e in acta_app.events(str(ref))}
    assert actors.pop(EventCode.RESTARTED) == "ops:ada"
    assert set(actors.values()) == {None}  # what the runtime did names no one
    codes = [e.code for e in acta_app.events(ref)]
    # The lineage stays on one timeline: the failure, the restart, the new run's success.
    assert codes.index(EventCode.FAILED) < codes.index(EventCode.RESTARTED)
    assert codes.index(EventCode.RESTARTED) < codes.index(EventCode.SUCCEEDED)


def test_restart_a_succeeded_job_drops_its_old_result(acta_app: Acta, acta_host: Host) -> None:
    runs = {"n": 0}

    @acta_app.job("count")
    def count() -> int:
        runs["n"] += 1
        return runs["n"]

    ref = count.enqueue()
    acta_host.run_until_idle()
    assert acta_app.result(ref) == 1
    acta_app.repairs.restart(ref)
    assert acta_app.result(ref) is None  # not the old run's answer while the new one waits
    acta_host.run_until_idle()
    assert acta_app.result(ref) == 2
    restarted = [e for e in acta_app.events(ref) if e.code is EventCode.RESTARTED]
    assert restarted[0].message is not None and "succeeded" in restarted[0].message


def test_restart_refuses_unfinished_unknown_and_system_jobs(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("later")
    def later() -> None:
        pass

    waiting = later.enqueue(delay="1h")
    acta_host.tick()  # registers the worker: the recovery slot (a sys.* job) now exists
    before = ledger.snapshot()
    with pytest.raises(JobStateError) as refused:
        acta_app.repairs.restart(waiting)
    assert refused.value.state == "ready"
    assert refused.value.allowed == ("succeeded", "failed", "cancelled")
    assert "is ready" in str(refused.value)
    with pytest.raises(JobNotFoundError):
        acta_app.repairs.restart("job_00000000000000000000000000")
    system_ref = ledger.value(
        "SELECT job_ref FROM {schema}.jobs_view WHERE job_name = 'sys.recovery'"
    )
    with pytest.raises(JobStateError, match="acta's own"):
        acta_app.repairs.restart(system_ref)
    with pytest.raises(ValidationError):
        acta_app.repairs.restart(waiting, reason="")
    with pytest.raises(ValidationError):
        acta_app.repairs.restart(waiting, actor="\x1b[31m")
    assert ledger.snapshot() == before


# -- reschedule ----------------------------------------------------------------------------


def test_reschedule_moves_a_ready_job_to_an_instant_or_now(acta_app: Acta, acta_host: Host) -> None:
    ran: list[int] = []

    @acta_app.job("report")
    def report(n: int) -> None:
        ran.append(n)

    soon = report.enqueue(1, delay="1h")
    later = report.enqueue(2, delay="1h")
    now = acta_host.clock.now()
    moved = acta_app.repairs.reschedule(later, at=now + timedelta(days=1), reason="after audit")
    assert moved.next_run_at == now + timedelta(days=1)
    pulled = acta_app.repairs.reschedule(soon)
    assert pulled.next_run_at == now and pulled.attempts == 0
    assert acta_host.tick().name != "NOTHING_CLAIMED"
    assert ran == [1]
    acta_host.advance("2h")
    acta_host.tick()
    assert ran == [1]  # the other one now waits for its new instant
    acta_host.advance("1d")
    acta_host.run_until_idle()
    assert ran == [1, 2]
    detail = _detail(acta_app, later, EventCode.RUN_AT_CHANGED)
    assert detail["verb"] == "reschedule" and detail["reason"] == "after audit"


def test_reschedule_refuses_finished_jobs_and_bad_instants(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("done")
    def done() -> None:
        pass

    finished = done.enqueue()
    waiting = done.enqueue(delay="1h")
    acta_host.tick()
    before = ledger.snapshot()
    with pytest.raises(JobStateError) as refused:
        acta_app.repairs.reschedule(finished)
    assert refused.value.state == "succeeded" and refused.value.allowed == ("ready",)
    with pytest.raises(ValidationError, match="at"):
        acta_app.repairs.reschedule(waiting, at="tomorrow")  # type: ignore[arg-type]
    assert ledger.snapshot() == before


# -- amend ---------------------------------------------------------------------------------


def test_amend_changes_priority_attempts_and_tags_with_an_event(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("flaky", max_attempts=5, backoff="1s")
    def flaky() -> None:
        raise RuntimeError("still broken")

    ref = flaky.enqueue(tags=["eu"], delay="1m")
    info = acta_app.repairs.amend(ref, priority=50, max_attempts=2, tags=["eu", "vip"])
    assert info.priority == 50 and info.max_attempts == 2 and info.tags == ("eu", "vip")
    assert (
        ledger.value(
            "SELECT max_attempts FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
        )
        == 2
    )
    detail = _detail(acta_app, ref, EventCode.AMENDED)
    assert detail["old"] == {"priority": 0, "max_attempts": 5, "tags": ["eu"]}
    assert detail["new"] == {"priority": 50, "max_attempts": 2, "tags": ["eu", "vip"]}
    acta_host.advance("1m")
    acta_host.run_until_idle()
    # The job's own limit governs the worker: it fails for good after 2 attempts, not 5.
    done = acta_app.get(ref)
    assert done.status is JobStatus.FAILED and done.attempts == 2


def test_amend_refuses_finished_jobs_and_bad_values(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("quick")
    def quick() -> None:
        pass

    finished = quick.enqueue()
    waiting = quick.enqueue(delay="1h")
    acta_host.tick()
    before = ledger.snapshot()
    with pytest.raises(JobStateError) as refused:
        acta_app.repairs.amend(finished, priority=1)
    assert refused.value.state == "succeeded"
    for bad in (
        {"priority": 1000},
        {"max_attempts": 0},
        {"max_attempts": True},
        {"tags": "vip"},
        {},
    ):
        with pytest.raises(ValidationError):
            acta_app.repairs.amend(waiting, **bad)  # type: ignore[arg-type]
    assert ledger.snapshot() == before


# -- the async twins -----------------------------------------------------------------------


async def test_async_twins_run_the_same_verbs(acta_app: Acta, acta_async_host: AsyncHost) -> None:
    healthy = {"ok": False}

    @acta_app.job("ping", max_attempts=1)
    async def ping(n: int) -> int:
        if not healthy["ok"]:
            raise RuntimeError("down")
        return n

    refs = [await ping.enqueue_async(n) for n in range(2)]
    await acta_async_host.run_until_idle()
    repairs = acta_app.repairs
    healthy["ok"] = True
    one = await repairs.restart_async(refs[0], actor="async-op")
    assert one.status is JobStatus.READY
    counted = await repairs.restart_many_async(name="ping", dry_run=True)
    assert counted.matched == 1  # the other one is ready now, not finished
    assert (await repairs.restart_many_async(name="ping")).changed == 1
    assert await repairs.pause_definition_async("ping")
    later = await ping.enqueue_async(7, delay="1h")
    moved = await repairs.reschedule_async(later)
    assert moved.next_run_at == acta_async_host.clock.now()
    amended = await repairs.amend_async(later, priority=3)
    assert amended.priority == 3
    await acta_async_host.run_until_idle()
    assert (await acta_app.get_async(later)).status is JobStatus.READY  # paused: not claimed
    assert await repairs.resume_definition_async("ping")
    assert await repairs.pause_namespace_async() and await repairs.resume_namespace_async()
    await acta_async_host.run_until_idle()
    assert [await acta_app.result_async(r) for r in [*refs, later]] == [0, 1, 7]
    assert (await repairs.cancel_many_async(name="ping", dry_run=True)).matched == 0
    before = acta_async_host.clock.now() + timedelta(seconds=1)
    # A younger row first: SQLite keeps the newest job row (its id would be reused).
    await acta_app.define("bystander").enqueue_async()
    assert (await repairs.purge_async(before=before, name="ping")).changed == 3
    with pytest.raises(JobPurgedError):  # purged like retention purges: the ref still resolves
        await acta_app.get_async(refs[0])
    report = await repairs.retire_definition_async("ping")
    assert report.changed == 0
