"""A cron schedule in a zone with daylight saving, walked for a year through the ledger with
the test clock (issue 11): every local day fires exactly once; a local time skipped by the
spring change fires once at the end of the gap, and one repeated by the autumn change fires
once, on its first pass.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from acta import Acta, JobContext
from acta.policy.schedule import Schedule
from acta_testing import Host

PARIS = ZoneInfo("Europe/Paris")


def test_a_year_of_a_dst_crossing_cron_fires_each_local_day_once(
    acta_app: Acta, acta_host: Host
) -> None:
    seen: list[datetime] = []

    @acta_app.job("nightly", schedule=Schedule(cron="30 2 * * *", zone="Europe/Paris"))
    async def nightly(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    acta_host.clock.set(datetime(2026, 1, 1, tzinfo=UTC))
    acta_host.add_worker(heartbeat="1h")
    for _ in range(365):
        acta_host.advance("1d")
        assert acta_host.tick() == "completed"
        assert acta_host.tick() == "nothing-claimed"
    days = [instant.astimezone(PARIS).date() for instant in seen]
    assert len(seen) == 365 and len(set(days)) == 365
    by_day = {instant.astimezone(PARIS).date().isoformat(): instant for instant in seen}
    # 29 March: 02:30 does not exist in Paris; it fires at 03:00 CEST, the end of the gap.
    assert by_day["2026-03-29"] == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    # 25 October: 02:30 happens twice; it fires once, at 02:30 CEST.
    assert by_day["2026-10-25"] == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert by_day["2026-01-15"] == datetime(2026, 1, 15, 1, 30, tzinfo=UTC)  # CET
    assert by_day["2026-07-15"] == datetime(2026, 7, 15, 0, 30, tzinfo=UTC)  # CEST


def test_an_hourly_cron_on_the_autumn_day_fires_once_per_local_hour(
    acta_app: Acta, acta_host: Host
) -> None:
    seen: list[datetime] = []

    @acta_app.job("hourly", schedule=Schedule(cron="0 * * * *", zone="Europe/Paris"))
    async def hourly(ctx: JobContext) -> None:
        assert ctx.firing is not None
        seen.append(ctx.firing.at)

    # 25 October 2026 in Paris runs from 24 Oct 22:00 UTC to 25 Oct 23:00 UTC: 25 hours.
    acta_host.clock.set(datetime(2026, 10, 24, 22, 0, 1, tzinfo=UTC))
    acta_host.add_worker(heartbeat="10m")
    for _ in range(25):
        acta_host.advance("1h")
        acta_host.tick()
    local = [instant.astimezone(PARIS) for instant in seen if instant.astimezone(PARIS).day == 25]
    assert [t.hour for t in local] == list(range(1, 24))  # 00:00 fired on the 24th's side
    assert len(local) == len({t.hour for t in local}) == 23
    assert all(later - earlier >= timedelta(hours=1) for earlier, later in pairwise(seen))
