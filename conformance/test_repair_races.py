"""Repair verbs racing a live worker on the test host: the verb wins or loses cleanly, never
half-applied. The worker's own run calls the verb (its lease is held, its claim committed), or
the verb acts on a read that a worker has since made stale."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acta import Acta, EventCode, JobStatus
from acta.errors import JobStateError
from acta.ledger.repair import Who, reschedule_row, restart_row
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

WHO = Who("test", "racing a worker")


def test_restart_while_the_restarted_run_is_claimed_is_refused(
    acta_app: Acta, acta_host: Host
) -> None:
    refusals: list[JobStateError] = []

    @acta_app.job("fragile", max_attempts=1)
    def fragile(n: int) -> str:
        attempt = acta_app.get(acta_app.jobs(name="fragile")[0].job_ref).executions
        if attempt == 1:
            raise RuntimeError("first run fails")
        # A second operator restarts while this re-run holds its lease.
        try:
            acta_app.repairs.restart(acta_app.jobs(name="fragile")[0].job_ref)
        except JobStateError as exc:
            refusals.append(exc)
        return "second run"

    ref = fragile.enqueue(1)
    acta_host.run_until_idle()
    assert acta_app.get(ref).status is JobStatus.FAILED
    acta_app.repairs.restart(ref)
    acta_host.run_until_idle()
    assert [r.state for r in refusals] == ["executing"]
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    assert [e.code for e in acta_app.events(ref)].count(EventCode.RESTARTED) == 1


def test_restart_on_a_stale_read_writes_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("once", max_attempts=1)
    def once() -> None:
        raise RuntimeError("boom")

    ref = once.enqueue()
    acta_host.run_until_idle()
    stale = acta_app.get(ref)  # operator B reads: failed
    acta_app.repairs.restart(ref)  # operator A restarts first
    acta_host.tick()  # a worker claims the re-run, and it fails again: failed, a new epoch
    assert acta_app.get(ref).status is JobStatus.FAILED
    before = ledger.snapshot()
    now = acta_app.ledger.now()
    # B's restart, on its stale read, loses against the guard: nothing written.
    assert acta_app.ledger.run(lambda: restart_row(stale, WHO, now)) is False
    assert ledger.snapshot() == before


def test_reschedule_while_claimed_is_refused_and_the_run_settles(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    refusals: list[JobStateError] = []

    @acta_app.job("slow")
    def slow() -> str:
        try:
            acta_app.repairs.reschedule(acta_app.jobs(name="slow")[0].job_ref)
        except JobStateError as exc:
            refusals.append(exc)
        return "ran"

    ref = slow.enqueue(delay="1h")
    stale = acta_app.get(ref)
    acta_host.advance("1h")
    acta_host.run_until_idle()
    assert [r.state for r in refusals] == ["executing"]
    assert acta_app.get(ref).status is JobStatus.SUCCEEDED
    before = ledger.snapshot()
    now = acta_app.ledger.now()
    with pytest.raises(JobStateError):
        acta_app.repairs.reschedule(ref)
    # A reschedule that read the job while it was still ready loses against the guard.
    assert acta_app.ledger.run(lambda: reschedule_row(stale, None, WHO, now)) is False
    assert ledger.snapshot() == before
    assert EventCode.RUN_AT_CHANGED not in [e.code for e in acta_app.events(ref)]


def test_amend_during_a_run_applies_from_the_next_claim(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("stubborn", max_attempts=10, backoff="1s")
    def stubborn() -> None:
        ref = acta_app.jobs(name="stubborn")[0].job_ref
        if acta_app.get(ref).executions == 1:
            acta_app.repairs.amend(ref, max_attempts=2, reason="stop retrying soon")
        raise RuntimeError("always fails")

    ref = stubborn.enqueue()
    acta_host.run_until_idle()
    done = acta_app.get(ref)
    # The first run read 10 when it was claimed and retried; the second was claimed with 2.
    assert done.status is JobStatus.FAILED and done.executions == 2 and done.max_attempts == 2
