"""Lock contention is metered from real waits (``ctx.lock``): ``acta.lock.waits`` and
``acta.lock.wait.duration`` by outcome, the wait measured on the runtime clock; a lock taken at
once is not counted. On SQLite and on PostgreSQL, read back with the SDK's in-memory reader.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from telemetry_support import Sdk, job, telemetry_of

from acta import Acta, LockTimeoutError, SyncJobContext
from acta.provider.protocol import Provider
from acta_testing import Host


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    return either_dialect


@pytest.fixture
def sdk() -> Iterator[Sdk]:
    made = Sdk()
    yield made
    made.close()


@pytest.fixture
def acta_app(sdk: Sdk) -> Acta:
    return Acta(telemetry=telemetry_of(sdk))


def test_waits_are_counted_by_outcome_with_their_time(
    acta_app: Acta, acta_host: Host, sdk: Sdk
) -> None:
    peer = acta_host.add_worker()
    about_to_wait = threading.Event()
    outcomes: list[str] = []

    @acta_app.job("sync-stock", max_attempts=1)
    def sync_stock(n: int, ctx: SyncJobContext) -> None:
        if n == 1:
            with ctx.lock("warehouse-7"):  # taken at once: not contention
                outcomes.append(acta_host.tick(peer))  # n=2 tries once and gives up
                waiter = threading.Thread(target=lambda: outcomes.append(acta_host.tick(peer)))
                waiter.start()
                about_to_wait.wait()
                while waiter.is_alive():  # the clock moves until n=3's two seconds are up
                    acta_host.advance("250ms")
            return
        if n == 3:
            about_to_wait.set()
        with pytest.raises(LockTimeoutError), ctx.lock("warehouse-7", timeout=2 * (n - 2)):
            pass

    for n in (1, 2, 3):
        sync_stock.enqueue(n)
    assert acta_host.tick() == "completed"
    assert outcomes == ["completed", "completed"]

    seen = sdk.metrics()
    timed_out = job("sync-stock", **{"acta.lock.outcome": "timed-out"})
    assert seen["acta.lock.waits"] == {timed_out: 2}
    count, total = seen["acta.lock.wait.duration"][timed_out]
    assert count == 2 and total >= 2.0  # 0 s for the single try, at least 2 s for n=3
