"""The durable-step checks of anvil/checks, on SQLite and PostgreSQL: each one can fail.

``durable_steps_once`` and ``durable_amo_once`` judge step bodies by the witness rows they
leave (anvil/checks/witness.py). A real run through the test host, with workers killed inside
step bodies (a normal step that must run again, an at-most-once step interrupted after its
body ran and one interrupted before), leaves a ledger on which both return nothing. Then
witness rows, steps rows and events written directly, the way a broken core (or a body run
again) would leave them, make each check return exactly the violations planted. Rows are
written and read through connections of the test's own, never through acta.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from planting import witness_planter

from acta import Acta, EventCode, StepInterruptedError, SyncJobContext
from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation
from acta_testing import Host
from anvil.checks import WITNESSED, describe
from anvil.checks import witness as witnesses
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the witness table made beside it."""
    with witness_planter(acta_provider, BASE) as found:
        yield found


def _witness(location: LedgerLocation, ref: str, step: str, execution: int) -> str:
    """What a step body does: one witness row, on a connection of its own, committed."""
    row = {"job_ref": ref, "step": step, "execution": execution, "pid": 1, "token": step}
    sql = witnesses.prepare_insert(location.dialect, location.schema)
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
    return f"{step}@{execution}"


class Gone(Exception):
    """What a body raises where a real process would have died before doing its work."""


def _run(acta_app: Acta, acta_host: Host, direct: Planter) -> dict[str, str]:
    """Six jobs through s1, amo (at most once), s2: three plain, one whose worker dies inside
    s2's body after its witness, one inside amo's body after its witness, one inside amo's
    body before it. Returns {label: job ref}; all end succeeded."""
    first = acta_host.worker
    peer = acta_host.add_worker()
    location = direct.location

    def body(ref: str, step: str, execution: int, label: str) -> str:
        if label == f"dies-before-{step}" and execution == 1:
            acta_host.kill(first)
            raise Gone("the process died before the body's effect")
        done = _witness(location, ref, step, execution)
        if label == f"dies-in-{step}" and execution == 1:
            acta_host.kill(first)  # the effect happened; a dead worker records nothing more
        return done

    @acta_app.job("flow", max_attempts=10)
    def flow(label: str, ctx: SyncJobContext) -> dict[str, str]:
        ref, run = str(ctx.job), ctx.execution
        out = {"s1": ctx.step("s1", body, ref, "s1", run, label)}
        try:
            out["amo"] = ctx.step("amo", body, ref, "amo", run, label, at_most_once=True)
        except StepInterruptedError:
            out["amo"] = "interrupted"
        out["s2"] = ctx.step("s2", body, ref, "s2", run, label)
        return out

    refs: dict[str, str] = {}
    for label in ("a", "b", "c", "dies-in-s2", "dies-in-amo", "dies-before-amo"):
        refs[label] = str(flow.enqueue(label))  # one at a time: the next tick claims it
        if not label.startswith("dies"):
            assert acta_host.tick(first) == "completed"
            continue
        assert acta_host.tick(first) == "killed", label
        acta_host.advance(first.lease + peer.heartbeat)
        assert acta_host.tick(peer) == "completed", label  # recovery, then execution 2
        first = acta_host.add_worker()
    return refs


def _found(direct: Planter, name: str) -> set[tuple[str, str, str]]:
    return {(row["job_ref"], row["step"], row["problem"]) for row in direct.check(name)}


def test_a_run_with_killed_bodies_passes_both_checks(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    assert all(job.status.label == "succeeded" for job in acta_app.jobs())
    assert acta_app.result(refs["dies-in-s2"]) == {"s1": "s1@1", "amo": "amo@1", "s2": "s2@2"}
    assert acta_app.result(refs["dies-in-amo"])["amo"] == "interrupted"
    assert acta_app.result(refs["dies-before-amo"])["amo"] == "interrupted"
    # The bodies really ran again where they may: s2 twice, the at-most-once body once.
    runs = [
        (ref, step, x)
        for ref, step, x, *_ in witnesses.rows(direct.conn, direct.dialect, direct.location.schema)
    ]
    assert [(s, x) for r, s, x in runs if r == refs["dies-in-s2"]] == [
        ("s1", 1),
        ("amo", 1),
        ("s2", 1),
        ("s2", 2),
    ]
    assert [(s, x) for r, s, x in runs if r == refs["dies-in-amo"]] == [
        ("s1", 1),
        ("amo", 1),
        ("s2", 2),
    ]
    for name in WITNESSED:
        found = direct.check(name)
        assert found == [], describe(name, found)


def _witness_row(direct: Planter, ref: str, step: str, execution: int) -> None:
    direct.execute(witnesses.INSERT, job_ref=ref, step=step, execution=execution, pid=2, token="x")


def test_a_step_body_run_again_is_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    refs = _run(acta_app, acta_host, direct)
    a, b, killed = refs["a"], refs["b"], refs["dies-in-s2"]
    _witness_row(direct, a, "s1", 2)  # a later execution ran the recorded s1 again
    _witness_row(direct, a, "s2", 1)  # s2 ran twice in the execution that recorded it
    _witness_row(direct, b, "s9", 1)  # a body that ran and was never recorded
    # The killed job's recording run left no witness: its stored result came from nowhere.
    direct.execute(
        "DELETE FROM {schema}.witness WHERE job_ref = :ref AND step = 's2' AND execution = 2",
        ref=killed,
    )
    assert _found(direct, "durable_steps_once") == {
        (a, "s1", "ran again after it was recorded"),
        (a, "s2", "ran more than once in the execution that recorded it"),
        (b, "s9", "ran, never recorded, yet its job succeeded"),
        (killed, "s2", "recorded by an execution in which it did not run"),
    }
    [row] = [r for r in direct.check("durable_steps_once") if r["step"] == "s1"]
    assert (row["bodies"], row["recorded_execution"], row["last_execution"]) == (2, 1, 2)
    assert direct.check("durable_amo_once") == []  # at-most-once steps are the other check's


def test_an_at_most_once_body_run_twice_is_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    a, b, c = refs["a"], refs["b"], refs["c"]
    interrupted, never = refs["dies-in-amo"], refs["dies-before-amo"]
    _witness_row(direct, interrupted, "amo", 2)  # the interrupted body ran once more
    _witness_row(direct, never, "amo", 2)  # no intent of execution 2 came before this body
    direct.event(a, EventCode.STEP_BEGUN, execution=2, epoch=2, message="amo")  # a 2nd intent
    direct.execute(  # b's completed body left no witness
        "DELETE FROM {schema}.witness WHERE job_ref = :ref AND step = 'amo'", ref=b
    )
    direct.execute(  # c's outcome written by another run than its intent's
        "UPDATE {schema}.steps SET execution = 2 WHERE name = 'amo' AND job_id = "
        "(SELECT id FROM {schema}.jobs WHERE job_ref = :ref)",
        ref=c,
    )
    assert _found(direct, "durable_amo_once") == {
        (interrupted, "amo", "ran more than once"),
        (never, "amo", "ran outside the execution that recorded its intent"),
        (a, "amo", "intent recorded more than once"),
        (b, "amo", "completed without its body running"),
        (c, "amo", "completed by another execution than its intent's"),
    }
    rows: dict[str, dict[str, Any]] = {r["job_ref"]: r for r in direct.check("durable_amo_once")}
    assert (rows[interrupted]["bodies"], rows[interrupted]["intent_execution"]) == (2, 1)
    assert rows[interrupted]["state"] == 3  # interrupted: the ledger itself looked fine
    assert (rows[a]["intents"], rows[c]["state_execution"]) == (2, 2)
    assert direct.check("durable_steps_once") == []


# -- what building the clean run found in the core (fixed since) --------------------------------


def test_a_worker_killed_inside_a_step_body_records_nothing(
    acta_app: Acta, acta_host: Host
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    def body(execution: int) -> str:
        if execution == 1:
            acta_host.kill(first)  # "no write of any kind from now on" (Worker.kill)
        return f"ran in execution {execution}"

    @acta_app.job("once")
    def once(n: int, ctx: SyncJobContext) -> str:
        return str(ctx.step("s", body, ctx.execution))

    ref = once.enqueue(1)
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    # A real process killed there never stores the body's result: execution 2 runs it again.
    assert acta_app.result(ref) == "ran in execution 2"
