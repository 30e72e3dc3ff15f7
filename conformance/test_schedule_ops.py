"""Operating schedules (issue 11): pause (optionally until an instant), resume, trigger now,
preview, and override the expression with an expected-version check. Every change is one
transaction with a ``schedule-changed`` event on the slot's timeline; a stale version is a
ConflictError that changes nothing. Redeploying a changed declaration keeps the cursor.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from acta import Acta, JobContext
from acta.errors import ConflictError, InvalidPolicyError, ScheduleNotFoundError, ValidationError
from acta.policy.job import JobPolicy
from acta.policy.schedule import Schedule
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

START = datetime(2026, 1, 1, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


def firings(seen: list[datetime]) -> list[float]:
    return [(instant - START) / timedelta(minutes=1) for instant in seen]


@pytest.fixture
def seen(acta_app: Acta) -> list[datetime]:
    instants: list[datetime] = []

    @acta_app.job("tick", schedule="1m")
    async def tick(ctx: JobContext) -> None:
        assert ctx.firing is not None
        instants.append(ctx.firing.at)

    return instants


def changes(ledger: Ledger) -> list[str]:
    rows = ledger.rows(
        "SELECT message FROM {schema}.events_view WHERE event = 'schedule-changed' "
        "ORDER BY event_id"
    )
    return [r[0] for r in rows]


def test_a_paused_schedule_fires_nothing_and_resumes_from_now(
    acta_app: Acta, acta_host: Host, ledger: Ledger, seen: list[datetime]
) -> None:
    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    [info] = acta_app.schedules.pause("tick", reason="maintenance window")
    assert info.paused and info.next_at is None
    acta_host.advance("5m")
    assert acta_host.tick() == "nothing-claimed"
    [info] = acta_app.schedules.resume("tick", reason="window over")
    assert not info.paused and info.next_at == at(7)
    # What fell due while paused (00:02 .. 00:06) is not fired late.
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert firings(seen) == [1, 7]
    assert changes(ledger) == ["paused default: maintenance window", "resumed default: window over"]


def test_a_pause_with_an_end_lifts_by_itself(
    acta_app: Acta, acta_host: Host, seen: list[datetime]
) -> None:
    acta_host.add_worker()
    acta_app.schedules.pause("tick", until=at(3.5))
    acta_host.advance("3m")
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1m")  # 00:04: the pause ended at 00:03:30
    assert acta_host.tick() == "completed"
    assert firings(seen) == [4]
    assert acta_app.schedules.get("tick").paused is False


def test_trigger_fires_once_now_and_the_schedule_keeps_its_instants(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    got: list[tuple[datetime, bool]] = []

    @acta_app.job("report", schedule="1h")
    async def report(ctx: JobContext) -> None:
        assert ctx.firing is not None
        got.append((ctx.firing.at, ctx.firing.triggered))

    acta_host.add_worker()
    acta_host.advance("10m")
    acta_app.schedules.pause("report")
    acta_app.schedules.trigger("report", reason="rerun for the auditors")
    assert acta_host.tick() == "completed"  # even while paused
    assert acta_host.tick() == "nothing-claimed"
    assert got == [(at(10), True)]
    acta_app.schedules.resume("report")
    acta_host.advance("50m")
    assert acta_host.tick() == "completed"
    assert got[-1] == (at(60), False)
    fired = ledger.rows(
        "SELECT message FROM {schema}.events_view WHERE event = 'fired' ORDER BY event_id"
    )
    assert fired[0][0].endswith("(triggered by an operator)")


def test_override_needs_the_current_version_and_applies_from_now(
    acta_app: Acta, acta_host: Host, ledger: Ledger, seen: list[datetime]
) -> None:
    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    version = acta_app.schedules.get("tick").version
    info = acta_app.schedules.override("tick", every="5m", expected_version=version)
    assert info.overridden and info.version == version + 1
    assert info.schedule == Schedule(every="5m")
    with pytest.raises(ConflictError, match="version"):
        acta_app.schedules.override("tick", every="10m", expected_version=version)
    assert acta_app.schedules.get("tick").schedule == Schedule(every="5m")
    acta_host.advance("4m")
    assert acta_host.tick() == "completed"
    assert firings(seen) == [1, 5]
    assert acta_app.schedules.preview("tick", n=3) == [at(10), at(15), at(20)]
    cleared = acta_app.schedules.clear_override("tick", expected_version=info.version)
    assert not cleared.overridden and cleared.schedule == Schedule(every="1m")
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert firings(seen) == [1, 5, 6]
    assert [c.split(":")[0] for c in changes(ledger)] == [
        "overridden default",
        "override cleared default",
    ]


def test_a_redeploy_keeps_an_override_and_the_cursor(
    acta_app: Acta, acta_host: Host, seen: list[datetime]
) -> None:
    first = acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick(first) == "completed"
    version = acta_app.schedules.get("tick").version
    acta_app.schedules.override("tick", cron="0 * * * *", expected_version=version)
    # A new build declares another interval: the override stays in force, nothing refires.
    acta_app.definitions["tick"].policy = JobPolicy.build(schedule="2m")
    acta_host.stop(first)
    second = acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick(second) == "nothing-claimed"
    info = acta_app.schedules.get("tick")
    assert info.overridden and info.schedule == Schedule(cron="0 * * * *")
    assert info.last_fired_at == at(1)
    acta_host.advance("58m")
    assert acta_host.tick(second) == "completed"
    assert firings(seen) == [1, 60]


def test_bad_operator_input_is_refused_and_changes_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger, seen: list[datetime]
) -> None:
    acta_host.add_worker()
    acta_host.advance("1s")
    with pytest.raises(ScheduleNotFoundError, match="no schedule"):
        acta_app.schedules.pause("nobody")
    with pytest.raises(ScheduleNotFoundError, match="it has: default"):
        acta_app.schedules.trigger("tick", "hourly")
    with pytest.raises(InvalidPolicyError, match="every"):
        acta_app.schedules.override("tick", every="10ms", expected_version=1)
    with pytest.raises(InvalidPolicyError, match="zone"):
        acta_app.schedules.override(
            "tick", cron="0 3 * * *", zone="Nowhere/Else", expected_version=1
        )
    with pytest.raises(ValidationError, match="expected_version"):
        acta_app.schedules.override("tick", every="5m", expected_version=0)
    with pytest.raises(ValidationError, match="until"):
        acta_app.schedules.pause("tick", until=datetime(2026, 1, 2))  # noqa: DTZ001 - naive
    with pytest.raises(ValidationError, match="reason"):
        acta_app.schedules.pause("tick", reason="\x1b[31mred")
    with pytest.raises(ValidationError, match="speed"):
        acta_app.schedules.resume("tick", speed="fast")
    with pytest.raises(ValidationError, match="n"):
        acta_app.schedules.preview("tick", n=0)
    assert changes(ledger) == []
    assert acta_app.schedules.get("tick").version == 1


@pytest.mark.parametrize(
    ("misfire", "expected"),
    [("skip", [31, 32, 33]), ("catch_up", [2, 32, 33])],
)
def test_preview_after_an_outage_lists_only_the_instants_that_fire(
    acta_app: Acta, acta_host: Host, misfire: str, expected: list[float]
) -> None:
    seen: list[datetime] = []

    @acta_app.job("sweep", schedule=Schedule(every="1m", misfire=misfire))
    async def sweep(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    acta_host.advance("30m")  # no worker ran meanwhile: 00:02 .. 00:31 are late
    listed = acta_app.schedules.preview("sweep", n=3)
    assert firings(listed) == expected
    assert acta_app.schedules.get("sweep").next_at == listed[0]  # the list says the same
    for _ in range(3):  # what it then fires is what the preview said
        assert acta_host.tick() == "completed"
        acta_host.advance("1m")
    assert firings(seen) == [1, *expected]


def test_preview_of_a_paused_schedule_leaves_out_the_pause(
    acta_app: Acta, acta_host: Host, seen: list[datetime]
) -> None:
    acta_host.add_worker()
    acta_app.schedules.pause("tick", until=at(3.5))
    assert acta_app.schedules.preview("tick", n=2) == [at(4), at(5)]
    acta_app.schedules.pause("tick")
    acta_host.advance("10m")
    # Paused with no end: what a resume now would fire.
    assert acta_app.schedules.preview("tick", n=2) == [at(11), at(12)]
