"""The tick scheduler keeps a wake-up that arrives while the loop it wakes is stepping."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from acta.clock import ManualClock
from acta.runtime.scheduler import Scheduler

START = datetime(2026, 1, 1, tzinfo=UTC)
POLL = timedelta(seconds=1)


def test_a_ring_during_a_step_makes_the_loop_due_again_at_once() -> None:
    clock = ManualClock(START)
    scheduler = Scheduler(clock)
    steps: list[datetime] = []

    async def claim(now: datetime) -> datetime:
        steps.append(now)
        if len(steps) == 1:
            # A run finishes (or a NOTIFY arrives) while the claim is in flight.
            scheduler.ring(loop)
        return now + POLL

    loop = scheduler.add("claim", claim)

    async def scenario() -> None:
        assert await scheduler.run_due() == START  # the ring is kept: due now, not in 1 s
        await scheduler.run_due()

    asyncio.run(scenario())
    assert steps == [START, START]
    assert loop.due == START + POLL  # the second step was not rung: its poll stands


def test_a_ring_before_a_step_is_served_by_that_step() -> None:
    clock = ManualClock(START)
    scheduler = Scheduler(clock)
    steps: list[datetime] = []

    async def claim(now: datetime) -> datetime:
        steps.append(now)
        return now + POLL

    loop = scheduler.add("claim", claim, due=START + POLL)
    scheduler.ring(loop)

    async def scenario() -> None:
        assert await scheduler.run_due() == START + POLL
        assert await scheduler.run_due() == START + POLL  # nothing due: no second step

    asyncio.run(scenario())
    assert steps == [START]
