"""Pausing, resuming and retiring a definition or a namespace: claims stop at the commit of the
change, running jobs finish, and every change is an event with the actor and the reason."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from acta import Acta, EventCode, JobStatus
from acta.errors import DefinitionRetiredError, JobStateError, UnknownJobError, ValidationError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def _scope_events(ledger: Ledger, code: EventCode) -> list[tuple[str, dict[str, object]]]:
    """(message, detail with the actor column folded in) of each namespace-wide event."""
    rows = ledger.rows(
        "SELECT message, detail, actor FROM {schema}.events WHERE code = :code "
        "AND job_id IS NULL ORDER BY id",
        {"code": int(code)},
    )
    return [(message, {**json.loads(detail), "actor": actor}) for message, detail, actor in rows]


def test_pause_a_definition_stops_its_claims_until_resumed(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[str] = []

    @acta_app.job("export")
    def export(name: str) -> None:
        ran.append(name)

    @acta_app.job("email")
    def email(name: str) -> None:
        ran.append(name)

    export.enqueue("e1")
    email.enqueue("m1")
    acta_host.tick()  # registers both definitions and runs one job
    ran.clear()
    export.enqueue("e2")
    assert acta_app.repairs.pause_definition("export", reason="disk full", actor="ops:lin")
    assert not acta_app.repairs.pause_definition("export")  # already paused: nothing written
    acta_host.run_until_idle()
    assert "e2" not in ran
    waiting = [j for j in acta_app.jobs(name="export") if j.status is JobStatus.READY]
    assert len(waiting) == 1
    assert acta_app.repairs.resume_definition("export", reason="disk cleaned")
    acta_host.run_until_idle()
    assert "e2" in ran
    assert [j.status for j in acta_app.jobs(name="export")] == [JobStatus.SUCCEEDED] * 2
    [(message, detail)] = _scope_events(ledger, EventCode.CLAIMS_PAUSED)
    assert message == "definition export"
    assert detail == {
        "verb": "pause",
        "actor": "ops:lin",
        "reason": "disk full",
        "definition": "export",
    }
    assert len(_scope_events(ledger, EventCode.CLAIMS_RESUMED)) == 1


def test_pause_the_namespace_stops_every_claim(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[int] = []

    @acta_app.job("work")
    def work(n: int) -> None:
        ran.append(n)

    work.enqueue(1)
    acta_host.tick()
    work.enqueue(2)
    assert acta_app.repairs.pause_namespace(reason="maintenance window")
    assert acta_host.tick().name == "NOTHING_CLAIMED"
    assert acta_host.run_until_idle() == 0  # paused work waits for an operator, not for time
    assert ran == [1]
    assert acta_app.repairs.resume_namespace()
    acta_host.run_until_idle()
    assert ran == [1, 2]
    [(message, _)] = _scope_events(ledger, EventCode.CLAIMS_PAUSED)
    assert message == f"namespace {acta_app.namespace}"


def test_a_running_job_finishes_when_its_definition_is_paused_mid_run(
    acta_app: Acta, acta_host: Host
) -> None:
    """The race with a live worker: the pause commits while a run holds its lease. The run
    settles normally; the next claim skips the definition."""
    ran: list[int] = []

    @acta_app.job("batch")
    def batch(n: int) -> str:
        if n == 1:
            acta_app.repairs.pause_definition("batch", reason="pause mid-run")
        ran.append(n)
        return f"done {n}"

    first = batch.enqueue(1)
    second = batch.enqueue(2)
    acta_host.run_until_idle()
    assert ran == [1]
    assert acta_app.get(first).status is JobStatus.SUCCEEDED
    assert acta_app.result(first) == "done 1"
    assert acta_app.get(second).status is JobStatus.READY
    acta_app.repairs.resume_definition("batch")
    acta_host.run_until_idle()
    assert ran == [1, 2]


def test_retire_cancels_the_queue_and_refuses_resume(
    acta_app: Acta, acta_host: Host, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acta.ledger import repair_bulk

    monkeypatch.setattr(repair_bulk, "BATCH", 2)  # several batches for five jobs

    @acta_app.job("legacy")
    def legacy(n: int) -> None:
        pass

    @acta_app.job("current")
    def current() -> None:
        pass

    legacy.enqueue(0)
    acta_host.tick()  # registers the definitions; runs one job
    queued = [legacy.enqueue(n, delay="1h") for n in range(1, 6)]
    other = current.enqueue()
    report = acta_app.repairs.retire_definition("legacy", reason="replaced by current")
    assert report.changed == 5 and report.skipped == 0 and report.batches == 3
    assert {acta_app.get(ref).status for ref in queued} == {JobStatus.CANCELLED}
    assert acta_app.get(other).status is JobStatus.READY
    [(message, detail)] = _scope_events(ledger, EventCode.RETIRED)
    assert message == "definition legacy" and detail["reason"] == "replaced by current"
    assert ledger.value("SELECT paused FROM {schema}.definitions WHERE name = 'legacy'") in (
        1,
        True,
    )
    before = ledger.snapshot()
    with pytest.raises(JobStateError, match="retired"):
        acta_app.repairs.resume_definition("legacy")
    with pytest.raises(JobStateError, match="retired"):
        acta_app.repairs.pause_definition("legacy")
    again = acta_app.repairs.retire_definition("legacy")  # idempotent: no second event
    assert again.changed == 0
    assert ledger.snapshot() == before
    # A retired definition takes no new jobs: refused at commit, nothing written.
    with pytest.raises(DefinitionRetiredError, match="legacy"):
        legacy.enqueue(9)
    assert ledger.snapshot() == before
    acta_host.run_until_idle()
    assert acta_app.get(other).status is JobStatus.SUCCEEDED


def test_retire_while_a_job_of_it_runs_lets_that_run_finish(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("old")
    def old(n: int) -> str:
        if n == 0:
            report = acta_app.repairs.retire_definition("old")
            assert report.changed == 2  # the queued ones, not this running one
        return f"ran {n}"

    running = old.enqueue(0)
    queued = [old.enqueue(1), old.enqueue(2)]
    acta_host.run_until_idle()
    assert acta_app.get(running).status is JobStatus.SUCCEEDED
    assert acta_app.result(running) == "ran 0"
    assert [acta_app.get(r).status for r in queued] == [JobStatus.CANCELLED] * 2


def test_scope_verbs_refuse_unknown_names_and_bad_input(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("declared-only")
    def declared() -> None:
        pass

    acta_host.tick()
    acta_app.repairs.pause_definition("declared-only")
    acta_app.repairs.resume_definition("declared-only")
    before = ledger.snapshot()
    with pytest.raises(UnknownJobError, match="no definition 'nope'"):
        acta_app.repairs.pause_definition("nope")
    with pytest.raises(UnknownJobError):
        acta_app.repairs.retire_definition("nope")
    with pytest.raises(UnknownJobError, match="no namespace"):
        acta_app.repairs.pause_namespace("elsewhere")
    with pytest.raises(ValidationError):
        acta_app.repairs.pause_definition("sys.recovery")
    with pytest.raises(ValidationError):
        acta_app.repairs.pause_definition("Bad Name!")
    with pytest.raises(ValidationError):
        acta_app.repairs.pause_namespace("bad name")
    with pytest.raises(ValidationError):
        acta_app.repairs.pause_definition("declared-only", reason=" ")
    assert ledger.snapshot() == before


def test_a_paused_namespace_still_runs_acta_own_jobs(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    """Recovery keeps leases honest during a pause: the namespace's sys.* jobs are still
    claimed, only the application's jobs wait."""

    @acta_app.job("user-work")
    def user_work() -> None:
        pass

    acta_host.tick()  # registers the worker and the recovery slot
    acta_app.repairs.pause_namespace()
    waiting = user_work.enqueue()
    runs_before = ledger.value(
        "SELECT executions FROM {schema}.jobs_view WHERE job_name = 'sys.recovery'"
    )
    acta_host.advance("5m")
    acta_host.tick()
    acta_host.tick()
    runs_after = ledger.value(
        "SELECT executions FROM {schema}.jobs_view WHERE job_name = 'sys.recovery'"
    )
    assert runs_after > runs_before
    assert acta_app.get(waiting).status is JobStatus.READY
