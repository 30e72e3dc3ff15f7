"""Recurring schedules (issue 11): a definition's schedules fire through one recurring slot, a
job row claimed like any other, with no job row per firing. Each firing is a ``fired`` event on
the slot's timeline, and its handler receives the scheduled instant (``ctx.firing``). Time
moves only when the spec moves the host's clock.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from acta import Acta, JobContext, SyncJobContext
from acta.errors import InvalidPolicyError
from acta.outcome import Firing
from acta.policy.schedule import Schedule
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

START = datetime(2026, 1, 1, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


def fired_events(ledger: Ledger, job: str) -> list[str]:
    """The ``fired`` events' messages on ``job``'s slot, oldest first."""
    rows = ledger.rows(
        "SELECT e.message FROM {schema}.events_view e WHERE e.event = 'fired' "
        "AND e.job_name = :job ORDER BY e.event_id",
        {"job": job},
    )
    return [r[0] for r in rows]


def test_an_interval_fires_on_its_grid_and_the_handler_gets_the_instant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[Firing | None] = []

    @acta_app.job("tick", schedule="1m")
    async def tick(ctx: JobContext) -> None:
        seen.append(ctx.firing)

    acta_host.add_worker()
    assert acta_host.tick() == "nothing-claimed"  # armed now: the first instant is 00:01
    acta_host.advance("59s")
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1s")
    assert acta_host.tick() == "completed"
    assert seen == [Firing(at(1), ("default",), 0, at(1), False)]
    assert acta_host.tick() == "nothing-claimed"  # once per instant
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert [f.at for f in seen if f] == [at(1), at(2)]
    # One slot row, whatever the number of firings; each firing is one event on it.
    assert ledger.value("SELECT count(*) FROM {schema}.jobs_view WHERE job_name = 'tick'") == 1
    assert fired_events(ledger, "tick") == [
        f"default fired for {at(1).isoformat()}: succeeded",
        f"default fired for {at(2).isoformat()}: succeeded",
    ]
    detail = ledger.value(
        "SELECT detail FROM {schema}.events_view WHERE event = 'fired' ORDER BY event_id LIMIT 1"
    )
    assert json.loads(detail) == {
        "at": at(1).isoformat(),
        "schedules": ["default"],
        "missed": 0,
        "through": at(1).isoformat(),
        "triggered": False,
        "outcome": "succeeded",
    }
    row = ledger.rows("SELECT schedule, kind, every_ms, misfire FROM {schema}.schedules_view")
    assert [tuple(r) for r in row] == [("default", "every", 60000, "skip")]
    info = acta_app.schedules.get("tick")
    assert (info.last_fired_at, info.next_at, info.paused) == (at(2), at(3), False)


def test_a_cron_schedule_fires_at_local_wall_time(acta_app: Acta, acta_host: Host) -> None:
    seen: list[datetime] = []

    @acta_app.job("nightly", schedule=Schedule(cron="30 2 * * *", zone="Europe/Paris"))
    def nightly(ctx: SyncJobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    acta_host.add_worker()
    acta_host.advance("1d")
    assert acta_host.tick() == "completed"
    # 02:30 in Paris on 1 January is 01:30 UTC.
    assert seen == [datetime(2026, 1, 1, 1, 30, tzinfo=UTC)]
    acta_host.advance("1d")
    assert acta_host.tick() == "completed"
    assert seen[-1] == datetime(2026, 1, 2, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize(("misfire", "fired_at", "through"), [("skip", 6, 6), ("catch_up", 2, 6)])
def test_a_late_schedule_fires_once_by_its_misfire_policy(
    acta_app: Acta, acta_host: Host, misfire: str, fired_at: int, through: int
) -> None:
    seen: list[Firing] = []

    @acta_app.job("late", schedule=Schedule(every="1m", misfire=misfire))
    async def late(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing)

    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    acta_host.advance("5m")  # 00:02 .. 00:06 fall due while nothing runs
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "nothing-claimed"
    assert seen[-1] == Firing(at(fired_at), ("default",), 4, at(through), False)
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert seen[-1].at == at(7) and seen[-1].missed == 0


def test_schedules_due_together_coalesce_into_one_run_naming_them(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[tuple[str, ...]] = []

    @acta_app.job("report", schedules={"often": "5m", "rarely": "10m"})
    async def report(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.schedules)

    acta_host.add_worker()
    acta_host.advance("5m")
    assert acta_host.tick() == "completed"
    acta_host.advance("5m")
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "nothing-claimed"
    assert seen == [("often",), ("often", "rarely")]
    assert fired_events(ledger, "report")[-1] == (
        f"often, rarely fired for {at(10).isoformat()}: succeeded"
    )


def test_a_clock_stepped_back_never_fires_an_instant_again(acta_app: Acta, acta_host: Host) -> None:
    seen: list[datetime] = []

    @acta_app.job("tick", schedule="1m")
    async def tick(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    acta_host.clock.set(at(0.5))  # the database's clock steps back 30 seconds
    acta_host.advance("45s")  # 00:01:15 again: 00:01 was fired already
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("45s")
    assert acta_host.tick() == "completed"
    assert seen == [at(1), at(2)]


def test_a_failing_firing_retries_the_same_instant_then_the_slot_rearms(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[tuple[datetime, int]] = []

    @acta_app.job("flaky", schedule="1h", max_attempts=2, backoff="1s")
    async def flaky(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append((ctx.firing.at, ctx.attempt))
        if ctx.firing.at == at(60):
            raise RuntimeError("the first hour always fails")

    acta_host.add_worker()
    acta_host.advance("1h")
    assert acta_host.tick() == "rearmed"  # the retry
    acta_host.advance("1s")
    assert acta_host.tick() == "failed"
    # The slot does not end: it waits for the next instant, with fresh attempts.
    assert ledger.value("SELECT status FROM {schema}.jobs_view WHERE job_name = 'flaky'") == (
        "ready"
    )
    acta_host.advance("1h")
    assert acta_host.tick() == "completed"
    assert seen == [(at(60), 1), (at(60), 2), (at(120), 1)]
    assert fired_events(ledger, "flaky") == [
        f"default fired for {at(60).isoformat()}: failed",
        f"default fired for {at(120).isoformat()}: succeeded",
    ]


def test_a_worker_dying_mid_firing_neither_loses_nor_repeats_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[tuple[str, datetime]] = []

    @acta_app.job("once", schedule="1m")
    def once(ctx: SyncJobContext) -> None:
        assert ctx.firing is not None
        seen.append((str(ctx.job), ctx.firing.at))
        if len(seen) == 1:
            acta_host.kill(first)  # the process dies in the middle of the firing

    first = acta_host.add_worker()
    second = acta_host.add_worker()

    acta_host.advance("1m")
    assert acta_host.tick(first) == "killed"
    acta_host.advance("5m")  # the lease lapses; recovery hands the slot to the living peer
    assert acta_host.tick(second) == "completed"
    assert [instant for _, instant in seen] == [at(1), at(1)]
    assert acta_host.tick(second) == "completed"  # then the instant that fell due meanwhile
    assert [instant for _, instant in seen] == [at(1), at(1), at(6)]
    messages = fired_events(ledger, "once")
    assert messages[0] == f"default fired for {at(1).isoformat()}: succeeded"
    assert len(messages) == 2


def test_two_peers_never_fire_one_instant_twice(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[datetime] = []

    @acta_app.job("tick", schedule="1m")
    async def tick(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    a, b = acta_host.add_worker(), acta_host.add_worker()
    for minute in range(1, 6):
        acta_host.advance("1m")
        first, second = (a, b) if minute % 2 else (b, a)
        assert acta_host.tick(first) == "completed"
        assert acta_host.tick(second) == "nothing-claimed"
    assert seen == [at(m) for m in range(1, 6)]
    assert len(fired_events(ledger, "tick")) == 5


def test_an_enqueued_run_of_a_scheduled_job_is_not_a_firing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[Firing | None] = []

    @acta_app.job("tick", schedule="1h")
    async def tick(ctx: JobContext) -> None:
        seen.append(ctx.firing)

    acta_host.add_worker()
    tick.enqueue()
    assert acta_host.tick() == "completed"
    assert seen == [None]
    assert fired_events(ledger, "tick") == []


def test_bad_schedules_fail_when_the_job_is_declared(acta_app: Acta) -> None:
    with pytest.raises(InvalidPolicyError, match="every"):
        acta_app.job("a", schedule="500ms")
    with pytest.raises(InvalidPolicyError, match="cron"):
        acta_app.job("b", schedule="61 * * * *")
    with pytest.raises(InvalidPolicyError, match="zone"):
        acta_app.job("c", schedule=Schedule(cron="0 3 * * *", zone="Mars/Olympus"))
    with pytest.raises(InvalidPolicyError, match="schedules"):
        acta_app.job("d", schedule="5m", schedules={"x": "1h"})
    with pytest.raises(InvalidPolicyError, match="schedules"):
        acta_app.job("e", schedules={"Bad Name": "1h"})
    with pytest.raises(InvalidPolicyError, match="schedule"):
        acta_app.job("f", schedule=42)
    # The docs promise InvalidPolicyError for a scheduled handler that takes an input too.
    with pytest.raises(InvalidPolicyError, match="no input") as raised:

        @acta_app.job("g", schedule="5m")
        def takes_input(x: int) -> None: ...

    assert raised.value.field == "schedule"

    assert "g" not in acta_app.definitions
