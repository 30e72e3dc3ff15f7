"""Explain (issue 12, item 1): every state the ledger can hold gets a specific verdict, the facts
behind it and the next step, from the job's rows alone.

The spec is a table: each case drives the test host (and its clock) into one situation and
names the verdict code and the key facts ``app.ops.explain`` must give for it. The cases of
waiting and leased jobs are in conformance/explain_support.py, those of parked and finished
jobs here. Two tests hold the table to the ledger: every ``JobStatus`` and every ``Verdict``
appear in it. Bad input is a typed error that writes nothing.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, Cancel, Fail, JobRef, JobStatus, Pause, SyncJobContext
from acta.errors import InvalidJobRefError, JobNotFoundError
from acta.ops import Verdict
from acta.ops.verdict import VERDICTS, Stage
from acta_testing import Host
from conformance.explain_support import CASES, Case, case, iso

if TYPE_CHECKING:
    from conformance.conftest import Ledger

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
        "timed_out": False,
        "timeout_at": iso(host.clock.now() + timedelta(days=1)),
    }


@case(JobStatus.SUSPENDED, Verdict.WAITING_FOR_SIGNAL)
def signal_wait_timed_out(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    ref, _ = waiting_for_a_signal(app, host, ledger)
    host.advance("25h")  # past the timeout; nothing has claimed it yet
    return ref, {"timed_out": True, "ahead": None, "workers_alive": None}


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


# -- stopped by an operator, and schedule slots -------------------------------------------------


@case(JobStatus.READY, Verdict.DEFINITION_PAUSED)
def its_definition_paused(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    host.advance(0)
    ref = app.enqueue("report")
    app.repairs.pause_definition("report", reason="bad deploy")
    return ref, {"definition_paused": True, "definition_retired": False}


@case(JobStatus.READY, Verdict.NAMESPACE_PAUSED)
def its_namespace_paused(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    app.define("report")
    host.advance(0)
    ref = app.enqueue("report")
    app.repairs.pause_namespace(reason="database maintenance")
    return ref, {"namespace_paused": True}


@case(JobStatus.READY, Verdict.SCHEDULE_SLOT)
def a_schedule_slot(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("rollup", schedule="5m")
    def rollup() -> None: ...

    host.advance(0)  # registers the worker, which puts the slot in place
    slot = app.schedules.get("rollup").slot_ref
    return JobRef.parse(slot), {"wakes_at": iso(host.clock.now() + timedelta(minutes=5))}


@case(JobStatus.SUCCEEDED, Verdict.SUCCEEDED)
def succeeded(app: Acta, host: Host, ledger: Ledger) -> tuple[JobRef, dict[str, Any]]:
    @app.job("add", backoff="30s", max_attempts=2)
    def add(ctx: SyncJobContext) -> int:
        if ctx.attempt == 1:
            raise RuntimeError("once")
        return 2

    ref = add.enqueue()
    host.run_until_idle()
    return ref, {
        "finished_at": iso(host.clock.now()),
        "took": 30.0,
        "executions": 2,
        "cancel_requested": False,
    }


@case(JobStatus.SUCCEEDED, Verdict.SUCCEEDED)
def succeeded_before_a_cancel_reached_it(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("export")
    def export(ctx: SyncJobContext) -> str:
        app.cancel(ctx.job, "too late")  # the run ends before a heartbeat carries it
        return "done"

    ref = export.enqueue()
    assert host.tick() == "completed"
    return ref, {"cancel_requested": True}


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
def cancelled_by_an_operator_while_running(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("export")
    def export(ctx: SyncJobContext) -> None:
        app.cancel(ctx.job, "wrong month")
        host.advance(host.worker.heartbeat)  # the heartbeat carries the request to the run
        ctx.raise_if_cancelled()

    ref = export.enqueue()
    assert host.tick() == "cancelled"
    return ref, {"cancelled_by": "operator", "cancel_reason": "wrong month"}


@case(JobStatus.CANCELLED, Verdict.CANCELLED)
def cancelled_with_no_timeline(
    app: Acta, host: Host, ledger: Ledger
) -> tuple[JobRef, dict[str, Any]]:
    @app.job("order", audit="off")
    def order() -> Any:
        return Cancel("the order was withdrawn")

    ref = order.enqueue()
    assert host.tick() == "cancelled"
    assert host.events(ref) == []
    return ref, {"cancelled_by": None, "cancel_reason": None}  # not guessed


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
    if entry.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        assert f"acta jobs restart {ref}" in found.next_step  # the verb that exists, named
    assert found.facts["checked_at"] == iso(acta_host.clock.now())
    assert json.loads(found.to_json()) == found.to_data()  # JSON through and through
    assert ledger.snapshot() == before  # explaining writes nothing


def _shown(key: str, value: Any) -> Any:
    # An error's message carries its traceback after the first line; the cases name the line.
    return value.splitlines()[0] if key == "last_error" and isinstance(value, str) else value


def test_the_table_covers_every_status_and_every_verdict() -> None:
    assert {c.status for c in CASES} == set(JobStatus)
    assert {c.verdict for c in CASES} == set(Verdict)


def test_every_status_ends_in_a_catch_all_verdict() -> None:
    for status in JobStatus:
        names = VERDICTS.names(status)
        assert names, status
        last = next(e for e in VERDICTS.entries() if e.name == names[-1])
        assert last.stage is Stage.GENERAL, (status, names)


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
