"""The certification checks of anvil/checks (``CERTIFY``), on SQLite and PostgreSQL: each can
fail.

A real run through the test host leaves a ledger the checks must pass: a job that succeeds at
once, one that fails its first attempt and then succeeds, one whose worker dies inside its
handler (a lost lease, recovered by a peer, run again), and one cancelled before it ran, each
recorded in the expected table with the status it must end in and leaving a handler-runs row
per run, as the certification's lab app does (anvil/certify). Then rows written directly, the
way a broken core (or a lost enqueue, or a zombie) would leave them, make each check return
exactly the violations planted. Rows are written and read through connections of the test's
own, never through acta.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from planting import certify_planter

from acta import Acta, EventCode, SyncJobContext
from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation
from acta_testing import Host
from anvil.certify.ledger import RUN_INSERT
from anvil.checks import CERTIFY, describe
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EXPECT = "INSERT INTO {schema}.expected (job_ref, workload, outcome) VALUES (:ref, :w, :outcome)"
MISSING = "job_00000000000000000000000000"


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the certification's tables beside it."""
    with certify_planter(acta_provider, BASE) as found:
        yield found


class Planned(Exception):
    """The flaky job's planned failure."""


def _run(acta_app: Acta, acta_host: Host, direct: Planter) -> dict[str, str]:
    """Four jobs, as described above; {label: job ref}."""
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("certify.probe", max_attempts=5, backoff="1s")
    def probe(label: str, ctx: SyncJobContext) -> None:
        _record_run(direct.location, str(ctx.job), ctx.execution)
        if label == "flaky" and ctx.attempt == 1:
            raise Planned("first attempt fails")
        if label == "killed" and ctx.execution == 1:
            acta_host.kill(first)  # the run happened; a dead worker records nothing more

    refs = {label: str(probe.enqueue(label)) for label in ("ok", "flaky", "killed", "cancelled")}
    acta_app.cancel(refs["cancelled"])
    for label, ref in refs.items():
        outcome = 102 if label == "cancelled" else 100
        direct.execute(EXPECT, ref=ref, w="probe", outcome=outcome)
    outcomes = [acta_host.tick(first) for _ in range(3)]  # ok, flaky's attempt 1, killed
    assert outcomes[-1] == "killed", outcomes
    acta_host.advance(first.lease + peer.heartbeat)
    acta_host.run_until_idle(peer)  # recovery, then flaky's retry and killed's execution 2
    statuses = {job.job_ref: job.status.label for job in acta_app.jobs()}
    assert [statuses[refs[k]] for k in refs] == ["succeeded"] * 3 + ["cancelled"]
    return refs


def _record_run(location: LedgerLocation, ref: str, execution: int) -> None:
    """What a lab-app handler does first: one handler-runs row, on a connection of its own."""
    row = {"job_ref": ref, "execution": execution, "pid": 1}
    sql = location.prepare(RUN_INSERT)
    if location.dialect == "sqlite":
        lite = sqlite3.connect(str(location.path), isolation_level=None, timeout=10)
        try:
            lite.execute(sql, row)
        finally:
            lite.close()
    else:
        import psycopg

        with psycopg.connect(str(location.dsn), autocommit=True) as conn:
            conn.execute(sql, row)


def _epoch(direct: Planter, ref: str, execution: int) -> int:
    [(epoch,)] = direct.execute(
        "SELECT epoch FROM {schema}.events WHERE job_ref = :ref AND code = 10 "
        "AND execution = :execution",
        ref=ref,
        execution=execution,
    )
    return int(epoch)


def _found(direct: Planter, name: str, *columns: str) -> set[tuple[Any, ...]]:
    return {tuple(row[c] for c in columns) for row in direct.check(name)}


def test_a_run_with_a_killed_worker_passes_every_check(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    # The run did what the checks judge: a lease lost, a retry, two handler runs of one job.
    codes = [code for (code,) in direct.execute("SELECT code FROM {schema}.events")]
    assert int(EventCode.LEASE_LOST) in codes and int(EventCode.RETRY_SCHEDULED) in codes
    runs = direct.execute(
        "SELECT execution FROM {schema}.handler_runs WHERE job_ref = :ref", ref=refs["killed"]
    )
    assert sorted(x for (x,) in runs) == [1, 2]
    for name in CERTIFY:
        found = direct.check(name)
        assert found == [], describe(name, found)


def test_lost_wrong_and_unexpected_jobs_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    direct.execute(EXPECT, ref=MISSING, w="planted", outcome=100)  # acknowledged, never written
    direct.execute(
        "UPDATE {schema}.expected SET outcome = 102 WHERE job_ref = :ref", ref=refs["ok"]
    )
    direct.execute("DELETE FROM {schema}.expected WHERE job_ref = :ref", ref=refs["flaky"])
    direct.execute(
        "UPDATE {schema}.expected SET outcome = 0 WHERE job_ref = :ref", ref=refs["cancelled"]
    )
    assert _found(direct, "certify_lost", "job_ref") == {(MISSING,)}
    assert _found(direct, "certify_outcome", "job_ref", "status") == {(refs["ok"], 100)}
    assert _found(direct, "certify_unexpected", "job_ref", "problem") == {
        (refs["flaky"], "never enqueued by the run"),
        (refs["cancelled"], "its enqueue was rolled back"),
    }


def test_a_run_settled_twice_is_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    ok = refs["ok"]
    direct.event(ok, EventCode.EXECUTION_FINISHED, 1, _epoch(direct, ok, 1))
    direct.event(ok, EventCode.SUCCEEDED, 1, _epoch(direct, ok, 1))
    assert _found(direct, "certify_settled_twice", "job_ref", "execution", "problem") == {
        (ok, 1, "one run closed more than once"),
        (ok, None, "terminal status reached more than once"),
    }


def test_unexplained_runs_are_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    ok, flaky = refs["ok"], refs["flaky"]
    # ok succeeded in execution 1, yet runs again: nothing lost, nothing to retry.
    direct.run(ok, execution=2, epoch=_epoch(direct, ok, 1) + 1)
    direct.execute(RUN_INSERT, job_ref=flaky, execution=9, pid=2)  # no claim recorded run 9
    direct.execute(RUN_INSERT, job_ref=flaky, execution=1, pid=2)  # run 1 ran twice
    assert _found(direct, "certify_extra_runs", "job_ref", "execution", "problem") == {
        (ok, 1, "a later run followed a run that was not lost or retried"),
        (flaky, 9, "a witnessed run has no execution-started event"),
        (flaky, 1, "one execution ran its handler more than once"),
    }


def test_a_write_by_a_fenced_worker_is_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    killed, ok = refs["killed"], refs["ok"]
    # The dead worker's run settles after the peer's run took the job over: a zombie's write.
    direct.event(killed, EventCode.EXECUTION_FINISHED, 1, _epoch(direct, killed, 1))
    # ok: recovery takes its lease, and its holder writes again under that epoch before any
    # new claim; the epochs never go down, so only the lease-lost rule sees it.
    ok_epoch = _epoch(direct, ok, 1)
    direct.event(ok, EventCode.LEASE_LOST, 1, ok_epoch)
    direct.event(ok, EventCode.EXECUTION_FINISHED, 1, ok_epoch)
    direct.execute(
        "UPDATE {schema}.runtime SET lease_epoch = 0 WHERE job_id = :id", id=direct.job(ok)[0]
    )
    after = "written by the holder after recovery took its lease"
    assert _found(direct, "certify_fenced_writes", "job_ref", "problem") == {
        (killed, "written under an older epoch than an earlier event"),
        (killed, after),  # its run 1 was taken back by recovery before the peer ran it
        (ok, after),
        (ok, "runtime row behind the epochs of its events"),
    }


def test_miscounted_attempts_are_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    direct.execute(
        "UPDATE {schema}.runtime SET attempts = attempts + 1 WHERE job_id = :id",
        id=direct.job(refs["ok"])[0],
    )
    direct.execute(
        "UPDATE {schema}.runtime SET executions = executions + 1 WHERE job_id = :id",
        id=direct.job(refs["killed"])[0],
    )
    assert _found(direct, "certify_attempts", "job_ref") == {(refs["ok"],), (refs["killed"],)}


def test_a_stuck_job_is_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    direct.execute(
        "UPDATE {schema}.runtime SET status = 10 WHERE job_id = :id", id=direct.job(refs["ok"])[0]
    )
    assert _found(direct, "certify_stuck", "job_ref", "status") == {(refs["ok"], 10)}


def test_a_broken_timeline_is_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    ok, cancelled, flaky = refs["ok"], refs["cancelled"], refs["flaky"]
    # ok: a run started after the job ended, and never closed.
    direct.event(ok, EventCode.EXECUTION_STARTED, 2, _epoch(direct, ok, 1) + 1)
    # cancelled: a success recorded after the cancellation it holds.
    direct.event(cancelled, EventCode.SUCCEEDED)
    # flaky: its first event is not the enqueue any more, and a run is numbered 7.
    direct.execute(
        "UPDATE {schema}.events SET code = 44 WHERE job_ref = :ref AND code = 1", ref=flaky
    )
    direct.execute(
        "UPDATE {schema}.events SET execution = 7 WHERE job_ref = :ref AND code = 10 "
        "AND execution = 2",
        ref=flaky,
    )
    assert _found(direct, "certify_history", "job_ref", "problem") == {
        (ok, "a run started and never closed"),
        (ok, "a run event after the job ended"),
        (cancelled, "last terminal event does not match the status"),
        (flaky, "first event is not enqueued"),
        (flaky, "runs not numbered 1, 2, ... in order"),
        (flaky, "a run started and never closed"),
    }


SLOT = (
    "INSERT INTO {schema}.schedules (namespace_id, definition_id, name, slot_id, every_ms, "
    "declared, cursor_at, created_at, updated_at) SELECT j.namespace_id, j.definition_id, "
    "'default', j.id, 1000, '{}', :at, :at, :at FROM {schema}.jobs j WHERE j.job_ref = :ref"
)


def test_a_slots_current_run_may_be_open(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    ok = refs["ok"]
    # ok, made a recurring slot whose run 2 started and still holds the lease: the fleet was
    # stopped with its holder killed and no recovery after it. That open run is not a break.
    epoch = _epoch(direct, ok, 1) + 1
    direct.execute(SLOT, ref=ok, at=BASE)
    direct.execute(
        "UPDATE {schema}.runtime SET status = 21, lease_epoch = :epoch, executions = 2 "
        "WHERE job_id = :id",
        epoch=epoch,
        id=direct.job(ok)[0],
    )
    direct.execute("DELETE FROM {schema}.events WHERE job_ref = :ref AND code = 20", ref=ok)
    direct.event(ok, EventCode.EXECUTION_STARTED, 2, epoch)
    assert _found(direct, "certify_history", "job_ref", "problem") == set()
    # Once the slot's row moved on to a later run, the open one is reported.
    direct.execute(
        "UPDATE {schema}.runtime SET lease_epoch = :epoch, executions = 3 WHERE job_id = :id",
        epoch=epoch + 1,
        id=direct.job(ok)[0],
    )
    assert _found(direct, "certify_history", "job_ref", "problem") == {
        (ok, "a run started and never closed")
    }
