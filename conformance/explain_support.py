"""The first half of explain's table (conformance/test_explain.py runs it): the machinery of
the table, and the cases of jobs waiting to be claimed (ready, retrying, bounced, blocked,
due with nobody to run them) and of jobs under a lease (live, silent, lost).

Each case drives the test host into one situation and returns the job's ref and the facts
``app.ops.explain`` must report for it; ``@case`` files it with the status and verdict
expected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from acta import Acta, JobRef, JobStatus, Reschedule, SyncJobContext
from acta.ops import Explanation, Verdict
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

Setup = Callable[[Acta, Host, "Ledger"], tuple[JobRef, dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    name: str
    status: JobStatus
    verdict: Verdict
    setup: Setup


CASES: list[Case] = []


def case(status: JobStatus, verdict: Verdict) -> Callable[[Setup], Setup]:
    def file(setup: Setup) -> Setup:
        CASES.append(Case(setup.__name__, status, verdict, setup))
        return setup

    return file


def iso(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def started(host: Host) -> None:
    """Register the host's worker without claiming anything (a live worker exists)."""
    host.advance(0)


# -- ready and blocked ---------------------------------------------------------------------------


@case(JobStatus.READY, Verdict.WAITING_FOR_RUN_AT)
def delayed(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    ref = app.enqueue("report", delay="10m")
    return ref, {"run_at": iso(host.clock.now() + timedelta(minutes=10)), "due_in": 600.0}


@case(JobStatus.READY, Verdict.WAITING_FOR_RUN_AT)
def rescheduled_by_its_handler(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("poll")
    def poll() -> Any:
        return Reschedule(delay=timedelta(minutes=5), reason="the feed is not ready")

    ref = poll.enqueue()
    assert host.tick() == "rescheduled"
    return ref, {"run_at": iso(host.clock.now() + timedelta(minutes=5)), "attempts": 0}


@case(JobStatus.READY, Verdict.READY)
def due_behind_others(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("work")
    def work(n: int) -> None:
        pass

    started(host)
    work.enqueue(1, priority=5)  # ahead: higher priority
    work.enqueue(2)  # ahead: same priority, older
    ref = work.enqueue(3)
    work.enqueue(4)  # behind: younger
    work.enqueue(5, priority=-1)  # behind: lower priority
    return ref, {"ahead": 2, "attempt": 1, "workers_alive": 1}


@case(JobStatus.READY, Verdict.READY)
def retry_now_due(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("flaky", max_attempts=3, backoff="1m")
    def flaky() -> None:
        raise RuntimeError("bank timed out")

    ref = flaky.enqueue()
    assert host.tick() == "rearmed"  # failed, and back in the queue for its retry
    host.advance("2m")
    # The recovery slot is due too, but system jobs never hold a user job back.
    return ref, {
        "attempt": 2,
        "attempts": 1,
        "ahead": 0,
        "last_error": "RuntimeError: bank timed out",
    }


@case(JobStatus.READY, Verdict.NO_WORKER_ALIVE)
def due_without_any_worker(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    return app.enqueue("report"), {"workers_alive": 0, "silent_workers": []}


@case(JobStatus.READY, Verdict.NO_WORKER_ALIVE)
def due_with_a_silent_worker(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    started(host)
    host.pause()  # frozen: no more heartbeats
    host.advance(host.worker.heartbeat * 3)
    ref = app.enqueue("report")
    return ref, {"workers_alive": 0, "silent_workers": [host.worker.incarnation]}


@case(JobStatus.READY, Verdict.NO_HANDLER)
def due_with_no_handler_here(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    app.define("import-orders")  # declared for enqueueing; this build has no handler
    first = app.enqueue("import-orders")
    ref = app.enqueue("import-orders")
    assert host.tick() == "rearmed"  # claimed, handed back, skipped from now on
    assert host.tick() == "nothing-claimed"
    assert host.job(first).status is JobStatus.READY
    return ref, {"workers_alive": 1, "workers_without_handler": [host.worker.incarnation]}


@case(JobStatus.READY, Verdict.RETRYING)
def retrying(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("charge", max_attempts=4, backoff="10m")
    def charge() -> None:
        raise ValueError("card declined")

    ref = charge.enqueue()
    assert host.tick() == "rearmed"
    return ref, {
        "attempt": 2,
        "attempts": 1,
        "max_attempts": 4,
        "last_error": "ValueError: card declined",
        "last_error_reason": "handler-error",
        "retry_at": iso(host.job(ref).next_run_at),
    }


@case(JobStatus.READY, Verdict.RETRYING)
def retrying_with_no_timeline(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("charge", max_attempts=4, backoff="10m", audit="off")
    def charge() -> None:
        raise ValueError("card declined")

    ref = charge.enqueue()
    assert host.tick() == "rearmed"
    assert host.events(ref) == []  # the row alone says it failed once and waits to retry
    return ref, {"attempt": 2, "last_error": None, "retry_at": iso(host.job(ref).next_run_at)}


@case(JobStatus.READY, Verdict.BOUNCED)
def bounced_by_a_concurrency_key(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("sync")
    def sync(n: int) -> None:
        if n == 1:
            app.enqueue("sync", 2, concurrency_key="acct-7")
            host.tick(peer)  # the second is turned away while this one holds the key

    peer = host.add_worker()
    first = sync.enqueue(1, concurrency_key="acct-7")
    assert host.tick() == "completed"
    [second] = [j for j in host.jobs(name="sync") if j.job_ref != str(first)]
    return JobRef.parse(second.job_ref), {"gate": "concurrency", "gate_name": "acct-7"}


@case(JobStatus.READY, Verdict.BOUNCED)
def bounced_by_a_rate(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("send-sms", rate_limit="1/m")
    def send(n: int) -> None:
        pass

    send.enqueue(1)
    ref = send.enqueue(2)
    assert host.tick() == "completed"
    assert host.tick() == "bounced"
    return ref, {"gate": "rate", "gate_name": "send-sms"}


@case(JobStatus.BLOCKED, Verdict.BLOCKED_IN_LANE)
def behind_its_lane_head(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    app.define("step", input=int)
    head = app.enqueue("step", 1, lane="cust-a")
    ref = app.enqueue("step", 2, lane="cust-a", priority=100)
    return ref, {
        "lane": "cust-a",
        "lane_seq": 2,
        "lane_head_ref": str(head),
        "lane_head_status": "ready",
    }


# -- leased -----------------------------------------------------------------------------------


def _leased(app: Acta, host: Host, ledger: Ledger) -> JobRef:
    """A job whose worker process died mid-run: it stays executing under that lease."""

    @app.job("render")
    def render() -> None:
        host.kill()

    ref = render.enqueue()
    assert host.tick() == "killed"
    return ref


@case(JobStatus.EXECUTING, Verdict.EXECUTING)
def executing_under_a_live_lease(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    ref = _leased(app, host, ledger)
    return ref, {
        "worker": host.worker.incarnation,
        "worker_status": "active",
        "heartbeat_age": 0.0,
        "execution": 1,
        "attempt": 1,
        "cancel_requested": False,
        "lease_expires_at": iso(host.clock.now() + host.worker.heartbeat * 4),
    }


@case(JobStatus.EXECUTING, Verdict.EXECUTING)
def executing_asked_to_cancel(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    seen: list[Explanation] = []

    @app.job("export")
    def export(ctx: SyncJobContext) -> None:
        app.cancel(ctx.job, "wrong month")
        seen.append(app.ops.explain(ctx.job))  # from inside the running handler
        host.kill()

    ref = export.enqueue()
    assert host.tick() == "killed"
    assert seen[0].verdict is Verdict.EXECUTING and seen[0].facts["cancel_requested"] is True
    return ref, {"cancel_requested": True}


@case(JobStatus.DISPATCHED, Verdict.DISPATCHED)
def dispatched_not_started(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    # Between claim and start: planted as the claim writes it (a fresh epoch, the lease
    # to a live worker, no execution yet), since a tick always goes on to start the run.
    app.define("report")
    started(host)
    ref = app.enqueue("report")
    ledger.execute(
        "UPDATE {schema}.runtime SET status = 20, lease_epoch = lease_epoch + 1, "
        "lease_owner = (SELECT id FROM {schema}.workers WHERE incarnation = :worker), "
        "lease_expires_at = next_run_at "
        "WHERE job_id = (SELECT id FROM {schema}.jobs WHERE job_ref = :ref)",
        {"worker": host.worker.incarnation, "ref": str(ref)},
    )
    return ref, {"worker": host.worker.incarnation, "execution": None, "lease_epoch": 1}


@case(JobStatus.EXECUTING, Verdict.HELD_BY_SILENT_WORKER)
def held_by_a_silent_worker(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    ref = _leased(app, host, ledger)
    expires = host.clock.now() + host.worker.heartbeat * 4
    host.advance(host.worker.heartbeat * 3)
    return ref, {
        "heartbeat_age": (host.worker.heartbeat * 3).total_seconds(),
        "recovery_from": iso(expires),
    }


@case(JobStatus.EXECUTING, Verdict.HELD_BY_LOST_WORKER)
def held_under_a_lapsed_lease(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    ref = _leased(app, host, ledger)
    expires = host.clock.now() + host.worker.heartbeat * 4
    host.advance(host.worker.heartbeat * 5)
    return ref, {"recovery_from": iso(expires), "worker_status": "active"}


@case(JobStatus.EXECUTING, Verdict.HELD_BY_LOST_WORKER)
def held_by_a_dead_worker(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    ref = _leased(app, host, ledger)
    ledger.execute(
        "UPDATE {schema}.workers SET status = 3 WHERE incarnation = :worker",
        {"worker": host.worker.incarnation},
    )
    return ref, {"worker_status": "dead"}
