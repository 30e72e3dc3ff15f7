"""One clock (issue 28 item 3): ``ctx.now()`` is the runtime's clock in sync and async handlers;
under the test host it is the host's manual clock, which follows freezegun and time-machine
while either freezes time (``advance()`` moving the frozen time along); outside the host, ledger
instants come from the database's clock, frozen Python time or not, on every provider."""

from __future__ import annotations

from datetime import UTC, datetime

import freezegun
import pytest
import time_machine

from acta import Acta, JobContext
from acta_testing import AsyncHost, Host

FROZEN = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
LATER = datetime(2031, 5, 1, 12, 1, 30, tzinfo=UTC)


def test_ctx_now_is_the_host_clock_in_a_sync_handler(acta_app: Acta, acta_host: Host) -> None:
    seen: list[datetime] = []

    @acta_app.job("stamp")
    def stamp(ctx: JobContext) -> None:
        seen.append(ctx.now())

    stamp.enqueue()
    acta_host.advance("2h")
    assert acta_host.tick() == "completed"
    assert seen == [acta_host.clock.now()]
    assert seen[0] == datetime(2026, 1, 1, 2, 0, tzinfo=UTC)


async def test_ctx_now_is_the_host_clock_in_an_async_handler(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    seen: list[datetime] = []

    @acta_app.job("stamp")
    async def stamp(ctx: JobContext) -> None:
        seen.append(ctx.now())

    await stamp.enqueue_async()
    await acta_async_host.advance("15m")
    assert await acta_async_host.tick() == "completed"
    assert seen == [acta_async_host.clock.now()]
    assert seen[0] == datetime(2026, 1, 1, 0, 15, tzinfo=UTC)


def _stamped(app: Acta, seen: list[tuple[datetime, datetime]]) -> None:
    @app.job("stamp")
    def stamp(ctx: JobContext) -> None:
        seen.append((ctx.now(), datetime.now(UTC)))


def test_the_host_follows_freezegun(acta_app: Acta, acta_host: Host) -> None:
    seen: list[tuple[datetime, datetime]] = []
    _stamped(acta_app, seen)
    with freezegun.freeze_time(FROZEN):
        ref = acta_app.enqueue("stamp")
        assert acta_host.clock.now() == FROZEN
        acta_host.advance("90s")
        assert datetime.now(UTC) == LATER  # advance() moved the frozen time
        assert acta_host.tick() == "completed"
    assert seen == [(LATER, LATER)]
    job = acta_host.job(ref)
    assert (job.created_at, job.updated_at) == (FROZEN, LATER)


def test_the_host_follows_time_machine(acta_app: Acta, acta_host: Host) -> None:
    seen: list[tuple[datetime, datetime]] = []
    _stamped(acta_app, seen)
    with time_machine.travel(FROZEN, tick=False):
        ref = acta_app.enqueue("stamp")
        assert acta_host.clock.now() == FROZEN
        acta_host.advance("90s")
        assert datetime.now(UTC) == LATER
        assert acta_host.tick() == "completed"
    assert seen == [(LATER, LATER)]
    assert acta_host.job(ref).created_at == FROZEN


@pytest.mark.parametrize("freezer", ["freezegun", "time-machine"])
def test_outside_the_host_a_frozen_clock_does_not_reach_the_ledger(
    acta_provider: object, freezer: str
) -> None:
    app = Acta()  # its own clock: the system's, which leaves instants to the database
    past = datetime(2001, 2, 3, tzinfo=UTC)
    with app.bound(acta_provider):  # type: ignore[arg-type]
        freeze = freezegun.freeze_time(past) if freezer == "freezegun" else None
        travel = time_machine.travel(past, tick=False) if freeze is None else None
        with freeze or travel:  # type: ignore[union-attr]
            assert datetime.now(UTC) == past
            ref = app.enqueue(app.define("note").name)
        created = app.get(ref).created_at
    assert created.year >= 2026, created  # the database's clock, not the frozen 2001
