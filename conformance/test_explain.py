"""Explain (issue 12, item 1): every state the ledger can hold gets a specific verdict, the facts
behind it and the next step, from the job's rows alone.

The spec is a table: each case drives the test host (and its clock) into one situation and
names the verdict code and the key facts ``app.ops.explain`` must give for it. Two tests hold
the table to the ledger: every ``JobStatus`` and every ``Verdict`` appear in it. Bad input is
a typed error that writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, Cancel, Fail, JobRef, JobStatus, Pause, SyncJobContext
from acta.errors import InvalidJobRefError, JobNotFoundError
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
    from acta import Reschedule

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
    return ref, {"attempt": 2, "attempts": 1, "last_error": "RuntimeError: bank timed out"}


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


# -- suspended and paused -------------------------------------------------------------------------


@case(JobStatus.SUSPENDED, Verdict.SLEEPING)
def sleeping(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("drip")
    def drip(ctx: SyncJobContext) -> None:
        ctx.sleep("2h", name="cool-off")

    ref = drip.enqueue()
    assert host.tick() == "suspended"
    return ref, {
        "wait_kind": "sleep",
        "wait_name": "cool-off",
        "wakes_at": iso(host.clock.now() + timedelta(hours=2)),
    }


@case(JobStatus.SUSPENDED, Verdict.NO_WORKER_ALIVE)
def sleep_over_and_nobody_alive(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    ref, _ = sleeping(app, host, ledger)
    host.kill()  # the only worker's process dies while the job sleeps
    host.advance("3h")
    return ref, {"workers_alive": 0}


@case(JobStatus.SUSPENDED, Verdict.WAITING_FOR_SIGNAL)
def waiting_for_a_signal(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("approve")
    def approve(ctx: SyncJobContext) -> None:
        ctx.wait_signal("approved", timeout="1d")

    ref = approve.enqueue()
    assert host.tick() == "suspended"
    return ref, {
        "signal": "approved",
        "signalled": False,
        "timeout_at": iso(host.clock.now() + timedelta(days=1)),
    }


@case(JobStatus.SUSPENDED, Verdict.WAITING_FOR_CHILDREN)
def waiting_for_children(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("quote")
    def quote(supplier: str) -> str:
        return supplier

    @app.job("tender")
    def tender(ctx: SyncJobContext) -> None:
        ctx.spawn(quote, "acme", name="acme")
        ctx.spawn(quote, "slowco", name="slowco", delay="1h")
        ctx.wait_children()

    ref = tender.enqueue()
    assert host.tick() == "suspended"
    assert host.tick() == "completed"  # acme
    return ref, {"open_children": 1, "timeout_at": None}


@case(JobStatus.SUSPENDED, Verdict.SUSPENDED)
def suspended_on_a_wait_no_longer_recorded(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    ref, _ = waiting_for_a_signal(app, host, ledger)
    ledger.execute(
        "DELETE FROM {schema}.waits WHERE job_id = (SELECT id FROM {schema}.jobs "
        "WHERE job_ref = :ref)",
        {"ref": str(ref)},
    )
    return ref, {}


@case(JobStatus.PAUSED, Verdict.PAUSED)
def paused_by_its_handler(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("ship")
    def ship() -> Any:
        return Pause("the address needs a human")

    ref = ship.enqueue()
    assert host.tick() == "paused"
    return ref, {"pause_reason": "the address needs a human", "paused_at": iso(host.clock.now())}


# -- finished -------------------------------------------------------------------------------------


@case(JobStatus.SUCCEEDED, Verdict.SUCCEEDED)
def succeeded(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("add", backoff="30s", max_attempts=2)
    def add(ctx: SyncJobContext) -> int:
        if ctx.attempt == 1:
            raise RuntimeError("once")
        return 2

    ref = add.enqueue()
    host.run_until_idle()
    return ref, {"finished_at": iso(host.clock.now()), "took": 30.0, "executions": 2}


@case(JobStatus.FAILED, Verdict.FAILED)
def failed_after_its_attempts(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("sync-crm", max_attempts=2, backoff="1s")
    def sync_crm() -> None:
        raise ConnectionError("crm is down")

    ref = sync_crm.enqueue()
    host.run_until_idle()
    return ref, {
        "reason": "attempts-exhausted",
        "attempts": 2,
        "last_error": "attempt 2 of 2 failed: ConnectionError: crm is down",
    }


@case(JobStatus.FAILED, Verdict.FAILED)
def failed_by_its_handler(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("close-account", max_attempts=5)
    def close_account() -> Any:
        return Fail("the account was closed by its owner")

    ref = close_account.enqueue()
    assert host.tick() == "failed"
    return ref, {"reason": "handler-decided", "last_error": "the account was closed by its owner"}


@case(JobStatus.CANCELLED, Verdict.CANCELLED)
def cancelled_by_an_operator(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    ref = app.enqueue("report", delay="1h")
    app.cancel(ref, "duplicate of last night's run")
    return ref, {"cancelled_by": "operator", "cancel_reason": "duplicate of last night's run"}


@case(JobStatus.CANCELLED, Verdict.CANCELLED)
def cancelled_by_its_handler(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("order")
    def order() -> Any:
        return Cancel("the order was withdrawn")

    ref = order.enqueue()
    assert host.tick() == "cancelled"
    return ref, {"cancelled_by": "handler", "cancel_reason": "the order was withdrawn"}


@case(JobStatus.CANCELLED, Verdict.CANCELLED)
def cancelled_because_its_parent_gave_up(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("quote")
    def quote(supplier: str) -> str:
        return supplier

    @app.job("tender")
    def tender(ctx: SyncJobContext) -> None:
        ctx.spawn(quote, "slowco", name="slowco", delay="1h")
        ctx.wait_children(timeout="10m")

    parent = tender.enqueue()
    assert host.tick() == "suspended"
    host.advance("10m")
    assert host.tick() == "completed"
    [child] = [j for j in host.jobs(name="quote")]
    return JobRef.parse(child.job_ref), {"cancelled_by": "parent", "parent_ref": str(parent)}


# -- the table ------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CASES, ids=[c.name for c in CASES])
def test_explain_gives_the_verdict_and_facts_of_each_state(
    acta_app: Acta, acta_host: Host, ledger: Ledger, entry: Case
) -> None:
    ref, expected = entry.setup(acta_app, acta_host, ledger)
    before = ledger.snapshot()
    found = acta_app.ops.explain(ref)
    assert (found.status, found.verdict) == (entry.status.label, entry.verdict)
    assert found.job_ref == str(ref)
    assert {key: _shown(key, found.facts.get(key)) for key in expected} == expected
    assert found.summary and found.next_step
    assert found.facts["checked_at"] == iso(acta_host.clock.now())
    assert json.loads(found.to_json()) == found.to_data()  # JSON through and through
    assert ledger.snapshot() == before  # explaining writes nothing


def _shown(key: str, value: Any) -> Any:
    # An error's message carries its traceback after the first line; the cases name the line.
    return value.splitlines()[0] if key == "last_error" and isinstance(value, str) else value


def test_the_table_covers_every_status_and_every_verdict() -> None:
    assert {c.status for c in CASES} == set(JobStatus)
    assert {c.verdict for c in CASES} == set(Verdict)


async def test_the_async_twin_explains_the_same(acta_app: Acta, acta_async_host: Any) -> None:
    acta_app.define("report")
    ref = await acta_app.enqueue_async("report", delay="10m")
    found = await acta_app.ops.explain_async(ref)
    assert found.verdict is Verdict.WAITING_FOR_RUN_AT
    assert found.to_data() == acta_app.ops.explain(ref).to_data()


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["job_nope", "", "42", 42, None, b"job_"])
def test_a_malformed_ref_is_a_typed_error_that_touches_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger, bad: Any
) -> None:
    acta_app.define("report")
    acta_app.enqueue("report")
    before = ledger.snapshot()
    with pytest.raises(InvalidJobRefError) as raised:
        acta_app.ops.explain(bad)
    assert raised.value.field == "job ref"
    assert ledger.snapshot() == before


def test_an_unknown_ref_is_job_not_found(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    acta_app.define("report")
    acta_app.enqueue("report")
    before = ledger.snapshot()
    missing = JobRef.parse("job_0" + "1" * 25)
    with pytest.raises(JobNotFoundError, match=str(missing)):
        acta_app.ops.explain(missing)
    assert ledger.snapshot() == before


def test_a_job_of_another_namespace_is_not_found_here(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_app.define("report")
    ref = acta_app.enqueue("report")
    other = Acta(namespace="elsewhere")
    with (
        other.bound(acta_host.provider, acta_host.clock),
        pytest.raises(JobNotFoundError, match="elsewhere"),
    ):
        other.ops.explain(ref)
