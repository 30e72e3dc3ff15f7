"""The schedule checks of anvil/checks, on SQLite and PostgreSQL: each one can fail.

``schedule_fired_once``, ``schedule_no_gap`` and ``schedule_witness_once`` judge recurring
slots from their fired events (and, for the last, the witness rows their handlers leave,
anvil/checks/witness.py). A real run through the test host leaves a ledger on which all three
return nothing, though it holds what the rules must allow: a worker killed inside a firing
after its effect (the firing runs again in the next execution, after a lease loss), a firing
whose handler raised once (retried, same instant), a late period where ``skip`` dropped
instants and ``catch_up`` covered them, and an operator's trigger. Then fired events and
witness rows written directly, the way a broken core would leave them, make each check return
exactly the violations planted. Rows are written and read through connections of the test's
own, never through acta.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from planting import witness_planter

from acta import Acta, EventCode, Schedule, SyncJobContext
from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation
from acta_testing import Host
from anvil.checks import SCHEDULES, WITNESSED, describe
from anvil.checks import witness as witnesses
from anvil.checks.plant import Planter

START = datetime(2026, 1, 1, tzinfo=UTC)  # where the test clock starts


def at(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the witness table made beside it."""
    with witness_planter(acta_provider, START) as found:
        yield found


def _witness(location: LedgerLocation, ref: str, instant: str, execution: int) -> None:
    """What a scheduled handler does: one witness row, on a connection of its own, committed."""
    row = {"job_ref": ref, "step": instant, "execution": execution, "pid": 1, "token": instant}
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


@dataclass(frozen=True)
class Fired:
    """One fired event as the checks see it."""

    event_id: int
    slot: str
    execution: int
    message: str


def _fired(direct: Planter, job: str) -> list[Fired]:
    rows = direct.execute(
        "SELECT e.id, e.job_ref, e.execution, e.message FROM {schema}.events e "
        "JOIN {schema}.jobs j ON j.id = e.job_id "
        "JOIN {schema}.definitions d ON d.id = j.definition_id "
        "WHERE e.code = 46 AND d.name = :job ORDER BY e.id",
        job=job,
    )
    return [Fired(int(i), str(ref), int(x), str(m)) for i, ref, x, m in rows]


def _run(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    """Two slots, ``tick`` (1m, skip) and ``sync`` (1m, catch_up), through: two on-time
    minutes; at 00:03 a ``tick`` firing whose worker dies after the handler's effect (the
    lease takes minutes to lapse, so both slots are late when the peer takes over); at 00:08
    a ``tick`` firing that raises once (retried, same instant); five minutes with no worker
    running; an operator's trigger; one more on-time minute."""
    location = direct.location
    first = acta_host.add_worker()
    peer = acta_host.add_worker()
    done: set[datetime] = set()

    def handler(ctx: SyncJobContext) -> None:
        assert ctx.firing is not None
        _witness(location, str(ctx.job), ctx.firing.at.isoformat(), ctx.execution)
        if ctx.name != "tick" or ctx.firing.at in done:
            return
        if ctx.firing.at == at(3):
            done.add(ctx.firing.at)
            acta_host.kill(first)  # the effect happened; a dead worker records nothing more
        elif ctx.firing.at == at(8):
            done.add(ctx.firing.at)
            raise RuntimeError("the first try of this firing fails")

    acta_app.job("tick", schedule="1m", max_attempts=5)(handler)
    acta_app.job("sync", schedule=Schedule(every="1m", misfire="catch_up"), max_attempts=5)(handler)
    for _ in range(2):
        acta_host.advance("1m")
        acta_host.run_until_idle(first)
    acta_host.advance("1m")  # 00:03: the first worker dies inside a firing, after its effect
    outcomes = [acta_host.tick(first), acta_host.tick(first)]
    assert "killed" in outcomes, outcomes
    acta_host.advance(first.lease + peer.heartbeat)  # its leases lapse; the peer recovers
    acta_host.run_until_idle(peer)
    while acta_host.clock.now() < at(10):  # 00:08 fails once and is retried
        acta_host.advance("1m")
        acta_host.run_until_idle(peer)
    acta_host.advance("5m")  # nobody ran for five minutes
    acta_host.run_until_idle(peer)
    acta_app.schedules.trigger("tick", reason="one more for the checks")
    acta_host.run_until_idle(peer)
    acta_host.advance("1m")
    acta_host.run_until_idle(peer)


def _instant(message: str) -> str:
    """The instant a fired event's message names, as its text."""
    return message.split(" fired for ")[1].split(": ")[0]


def _problems(direct: Planter, name: str) -> set[tuple[str, str]]:
    return {(str(row["slot_ref"]), str(row["problem"])) for row in direct.check(name)}


def test_a_run_with_kills_failures_and_late_firings_passes_the_checks(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    _run(acta_app, acta_host, direct)
    ticks = [f.message for f in _fired(direct, "tick")]
    syncs = [f.message for f in _fired(direct, "sync")]
    iso = [at(n).isoformat() for n in range(4)]
    assert ticks[:3] == [f"default fired for {iso[n]}: succeeded" for n in (1, 2, 3)]
    # Late: skip fired the latest due instant and counted older ones, catch_up the oldest.
    assert sum(" more due instant(s)" in m for m in ticks) >= 2, ticks
    assert sum(" more due instant(s)" in m for m in syncs) >= 2, syncs
    assert sum("(triggered by an operator)" in m for m in ticks) == 1
    # The rules have something to allow: a firing run twice after a lease loss, and after a
    # failure, each in two executions.
    runs = witnesses.rows(direct.conn, direct.dialect, direct.location.schema)
    tick_ref = _fired(direct, "tick")[0].slot
    again = sorted(
        {
            step
            for ref, step, *_ in runs
            if ref == tick_ref and sum(1 for r, s, *_ in runs if (r, s) == (ref, step)) > 1
        }
    )
    assert again == [at(3).isoformat(), at(8).isoformat()]
    lost = direct.execute("SELECT count(*) FROM {schema}.events WHERE code = 30")[0][0]
    assert lost >= 1
    # The durable-step checks share the witness table and leave the slots' rows alone.
    for name in SCHEDULES + WITNESSED:
        found = direct.check(name)
        assert found == [], describe(name, found)


def test_an_instant_fired_twice_is_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    _run(acta_app, acta_host, direct)
    tick = _fired(direct, "tick")
    slot = tick[0].slot
    # A second peer fires 00:02 again; an operator's trigger at 00:01 repeats nothing.
    direct.event(slot, EventCode.FIRED, execution=40, epoch=40, message=tick[1].message)
    direct.event(
        slot,
        EventCode.FIRED,
        execution=41,
        epoch=41,
        message=f"default fired for {at(1).isoformat()}: succeeded (triggered by an operator)",
    )
    direct.event(slot, EventCode.FIRED, execution=42, epoch=42, message="default fired late")
    assert _problems(direct, "schedule_fired_once") == {
        (slot, "fired more than once"),
        (slot, "unreadable fired event"),
    }
    [twice] = [r for r in direct.check("schedule_fired_once") if r["firings"] == 2]
    assert (twice["instant"], twice["executions"]) == (at(2).isoformat(), f"{tick[1].execution},40")


def test_an_instant_lost_without_a_missed_count_is_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    _run(acta_app, acta_host, direct)
    tick, sync = _fired(direct, "tick"), _fired(direct, "sync")
    # tick: 00:02 vanishes (00:03 follows 00:01 with no missed count).
    direct.execute("DELETE FROM {schema}.events WHERE id = :id", id=tick[1].event_id)
    # sync: its first late catch-up firing claims to cover one instant fewer than it did.
    k, late = next((k, f) for k, f in enumerate(sync) if " more due" in f.message)
    missed = int(late.message.split("; ")[1].split()[0])
    direct.execute(
        "UPDATE {schema}.events SET message = :m WHERE id = :id",
        m=late.message.replace(f"; {missed} more", f"; {missed - 1} more"),
        id=late.event_id,
    )
    # tick: after the last firing, one off the grid, then one that goes back in time.
    off = at(30) + timedelta(seconds=30)
    for execution, instant in ((50, off), (51, at(6))):
        message = f"default fired for {instant.isoformat()}: succeeded"
        direct.event(tick[0].slot, EventCode.FIRED, execution, execution, message=message)
    found = direct.check("schedule_no_gap")
    catch_up = "catch-up firing does not start one interval after the last one covered"
    assert {(r["slot_ref"], r["problem"], r["at"]) for r in found} == {
        (tick[0].slot, "gap not covered by the missed count", at(3).isoformat()),
        (tick[0].slot, "not on the interval grid", off.isoformat()),
        (tick[0].slot, "not after what the previous firing covered", at(6).isoformat()),
        (sync[0].slot, catch_up, _instant(sync[k + 1].message)),
    }
    [gap] = [r for r in found if r["problem"].startswith("gap")]
    assert (gap["missed"], gap["intervals_apart"], gap["every_ms"]) == (0, 2, 60000)


def test_a_handler_run_the_ledger_cannot_explain_is_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    _run(acta_app, acta_host, direct)
    tick, sync = _fired(direct, "tick"), _fired(direct, "sync")
    slot, other = tick[0].slot, sync[0].slot
    one, two, last = tick[0], tick[1], tick[-1]

    def witness(ref: str, instant: str, execution: int) -> None:
        direct.execute(
            witnesses.INSERT, job_ref=ref, step=instant, execution=execution, pid=2, token="x"
        )

    # 00:01's recording run left no witness: the fired event came from a run that did nothing.
    direct.execute(
        "DELETE FROM {schema}.witness WHERE job_ref = :ref AND step = :step",
        ref=slot,
        step=_instant(one.message),
    )
    witness(slot, _instant(two.message), two.execution)  # 00:02 ran twice in its own run
    witness(slot, _instant(two.message), last.execution + 3)  # and again after it was closed
    witness(slot, at(40).isoformat(), last.execution)  # an instant that never fired
    # sync's 00:02 also ran in execution 1 (00:01's run): no lease loss, no failure explains it.
    [sync_two] = [f for f in sync if _instant(f.message) == at(2).isoformat()]
    witness(other, _instant(sync_two.message), 1)
    found = {
        (r["slot_ref"], r["instant"], r["execution"], r["problem"])
        for r in direct.check("schedule_witness_once")
    }
    assert found == {
        (slot, at(1).isoformat(), one.execution, "recorded without running"),
        (slot, at(2).isoformat(), two.execution, "ran more than once in the run that recorded it"),
        (slot, at(2).isoformat(), last.execution + 3, "ran again after its firing was recorded"),
        (slot, at(40).isoformat(), last.execution, "ran for an instant that never fired"),
        (other, at(2).isoformat(), 1, "ran in a run that did not record it, unexplained"),
    }
    assert direct.check("schedule_fired_once") == []  # the events themselves are fine
    assert direct.check("schedule_no_gap") == []
