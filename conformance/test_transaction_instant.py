"""One transaction, one instant: every row a transaction writes carries the same time.

The data model promises it (docs/reference/data-model.md: events of one transaction share
their ``at``; order them by id). PostgreSQL's now() is the transaction's start; SQLite reads
its clock per statement, so acta binds one instant per transaction there. These specs run with
production binding, an app on the real system clock (statements bind NULL and the provider
decides the time), not on the test host's manual clock, which would bind one instant anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from acta import Acta
from acta.clock import SystemClock
from acta.provider.protocol import Provider
from acta.runtime.run import RunEnd

if TYPE_CHECKING:
    from conformance.conftest import Ledger

BATCH = 300  # enough statements that one transaction spans several milliseconds


@pytest.fixture
def app(acta_app: Acta, acta_provider: Provider) -> Iterator[Acta]:
    with acta_app.bound(acta_provider, SystemClock()):
        yield acta_app


def test_a_batch_writes_its_jobs_and_events_at_one_instant(app: Acta, ledger: Ledger) -> None:
    report = app.define("nightly-report")
    app.enqueue_batch([report.request() for _ in range(BATCH)])

    assert ledger.value("SELECT count(*) FROM {schema}.jobs_view") == BATCH
    instants = ledger.rows("SELECT DISTINCT at FROM {schema}.events_view WHERE event = 'enqueued'")
    created = ledger.rows("SELECT DISTINCT created_at FROM {schema}.jobs_view")
    assert len(instants) == 1, f"one batch's enqueued events carry {len(instants)} instants"
    assert created == instants, "the jobs' created_at is not their enqueued event's instant"


async def test_a_settle_writes_its_events_at_one_instant(app: Acta, ledger: Ledger) -> None:
    @app.job("resize-image")
    def resize(n: int) -> int:
        return n * 2

    ref = await app.enqueue_async("resize-image", 21)
    worker = app.worker(clock=SystemClock())
    try:
        await worker.ensure_registered()
        outcome, _ = await worker.run_one()
        assert outcome is RunEnd.COMPLETED
    finally:
        worker.threads.shutdown(wait=True)

    settled = ledger.rows(
        "SELECT DISTINCT e.at FROM {schema}.events_view e WHERE e.job_ref = :ref "
        "AND e.event IN ('execution-finished', 'succeeded')",
        {"ref": str(ref)},
    )
    finished = ledger.rows(
        "SELECT finished_at FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
    )
    assert len(settled) == 1, f"one settle's events carry {len(settled)} instants"
    assert finished == settled, "the job's finished_at is not its settle events' instant"
