"""Audit levels: which per-job events a definition writes, and the lease-safety events that are
written whatever the level."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acta import Acta, EventCode, JobContext, JobStatus, Outcome, Reason
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def test_audit_failures_keeps_only_what_went_wrong(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("quiet-ok", audit="failures")
    def quiet_ok() -> str:
        return "fine"

    @acta_app.job("quiet-flaky", audit="failures", max_attempts=2, backoff="10s")
    def quiet_flaky(ctx: JobContext) -> None:
        raise RuntimeError(f"broken on attempt {ctx.attempt}")

    @acta_app.job("quiet-recovers", audit="failures", max_attempts=2, backoff="10s")
    def quiet_recovers(ctx: JobContext) -> str:
        if ctx.attempt == 1:
            raise RuntimeError("first try fails")
        return "second try works"

    ok = quiet_ok.enqueue()
    flaky = quiet_flaky.enqueue()
    recovers = quiet_recovers.enqueue()
    assert acta_host.run_until_idle() == 5

    assert acta_app.get(ok).status is JobStatus.SUCCEEDED
    assert acta_app.result(ok) == "fine"
    assert acta_host.events(ok) == []  # no enqueued, started, finished or succeeded

    job = acta_app.get(flaky)
    assert job.status is JobStatus.FAILED and (job.attempts, job.executions) == (2, 2)
    events = acta_host.events(flaky)
    assert [e.code for e in events] == [
        EventCode.EXECUTION_FINISHED,
        EventCode.RETRY_SCHEDULED,
        EventCode.EXECUTION_FINISHED,
        EventCode.FAILED,
    ]
    assert [(e.execution, e.outcome, e.reason) for e in events] == [
        (1, Outcome.FAILED, Reason.HANDLER_ERROR),
        (1, None, Reason.HANDLER_ERROR),
        (2, Outcome.FAILED, Reason.HANDLER_ERROR),
        (2, None, Reason.ATTEMPTS_EXHAUSTED),
    ]
    assert "broken on attempt 2" in (events[2].message or "")

    assert acta_app.result(recovers) == "second try works"
    assert acta_host.event_names(recovers) == ["execution-finished", "retry-scheduled"]

    # The operator's view agrees: the last error is there even without the full timeline.
    [(last_error, reason)] = ledger.rows(
        "SELECT last_error, last_error_reason FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(flaky)},
    )
    assert reason == "attempts-exhausted" and "broken on attempt 2" in last_error


def test_audit_off_writes_no_job_events(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("silent-ok", audit="off")
    def silent_ok() -> str:
        return "fine"

    @acta_app.job("silent-failing", audit="off", max_attempts=2, backoff="1s")
    def silent_failing() -> None:
        raise RuntimeError("nobody hears this")

    ok = silent_ok.enqueue()
    failing = silent_failing.enqueue()
    assert acta_host.run_until_idle() == 3
    assert acta_app.get(ok).status is JobStatus.SUCCEEDED
    job = acta_app.get(failing)
    assert job.status is JobStatus.FAILED and job.attempts == 2
    assert acta_host.events(ok) == [] and acta_host.events(failing) == []


def test_audit_off_still_records_an_operator_cancel(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("silent", audit="off")
    def silent() -> None:
        pass

    ref = silent.enqueue(delay="1h")
    assert acta_app.cancel(ref, reason="not needed") is JobStatus.CANCELLED
    events = acta_host.events(ref)
    assert [(e.code, e.reason, e.message) for e in events] == [
        (EventCode.CANCELLED, Reason.OPERATOR, "not needed")
    ]


def test_audit_off_keeps_lease_lost(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("silent-render", audit="off")
    def render(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.kill(first)
        return f"rendered by execution {ctx.execution}"

    ref = render.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"

    job = acta_app.get(ref)
    assert job.status is JobStatus.SUCCEEDED and (job.executions, job.attempts) == (2, 1)
    [lost] = acta_host.events(ref)
    assert lost.code is EventCode.LEASE_LOST
    assert lost.reason is Reason.LEASE_EXPIRED and lost.execution == 1
    assert acta_app.result(ref) == "rendered by execution 2"


def test_audit_off_keeps_write_fenced(acta_app: Acta, acta_host: Host) -> None:
    zombie = acta_host.worker
    peer = acta_host.add_worker()
    peer_outcomes: list[str] = []

    @acta_app.job("silent-export", audit="off")
    def export(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.pause(zombie)
            acta_host.advance(zombie.lease + peer.heartbeat)
            peer_outcomes.append(acta_host.tick(peer))
            acta_host.resume(zombie)
        return f"export {ctx.execution}"

    ref = export.enqueue()
    assert acta_host.tick(zombie) == "lease-lost"
    assert peer_outcomes == ["completed"]
    events = acta_host.events(ref)
    assert [e.code for e in events] == [EventCode.LEASE_LOST, EventCode.WRITE_FENCED]
    assert events[1].worker == zombie.incarnation and events[1].epoch == 1
    assert acta_app.result(ref) == "export 2"
