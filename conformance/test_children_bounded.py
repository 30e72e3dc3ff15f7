"""Children a parent stops waiting for, and children lost with their worker.

A bounded ``wait_children(timeout=...)`` gives up when its timeout passes: children still
waiting are cancelled (reason parent-gave-up), a running one is asked to stop, and the parent
gets every outcome with the late ones marked ``timed_out``. A child whose worker dies is
recovered like any job, and its parent is released exactly once whatever recovery decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acta import Acta, ChildOutcome, EventCode, JobStatus, Reason, SyncJobContext
from acta_testing import Host
from conformance.test_children import latches, view

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def test_a_bounded_wait_cancels_the_children_still_waiting_and_keeps_the_finished(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    got: list[ChildOutcome] = []

    @acta_app.job("quote")
    def quote(supplier: str) -> str:
        return f"{supplier}: 12.00"

    @acta_app.job("tender")
    def tender(suppliers: list[str], ctx: SyncJobContext) -> None:
        ctx.spawn(quote, suppliers[0], name="fast")
        for name in suppliers[1:]:
            ctx.spawn(quote, name, name=name, delay="1h")  # will not answer in time
        got.extend(ctx.wait_children(timeout="10m"))

    parent = tender.enqueue(["acme", "slowco", "later-inc"])
    assert acta_host.tick() == "suspended"
    assert view(ledger, parent, "open_children") == (3,)
    assert acta_host.tick() == "completed"  # the fast child
    assert view(ledger, parent, "status", "open_children") == ("suspended", 2)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("10m")
    assert acta_host.tick() == "completed"  # the parent, back at its timeout
    assert [(o.name, o.status, o.timed_out) for o in got] == [
        ("fast", "succeeded", False),
        ("slowco", "cancelled", True),
        ("later-inc", "cancelled", True),
    ]
    assert got[0].result == "acme: 12.00"
    assert got[1].result is None and got[2].result is None
    for late in got[1:]:
        assert acta_host.job(late.ref).status is JobStatus.CANCELLED
        [cancelled] = [e for e in acta_host.events(late.ref) if e.code is EventCode.CANCELLED]
        assert cancelled.reason is Reason.PARENT_GAVE_UP
    assert view(ledger, parent, "open_children") == (0,)
    assert latches(ledger, parent) == 0
    assert acta_host.run_until_idle() == 0  # nothing of the family is left to run


def test_a_bounded_wait_asks_a_running_child_to_stop(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    got: list[ChildOutcome] = []
    flagged: list[bool] = []

    @acta_app.job("crawl")
    def crawl(site: str, ctx: SyncJobContext) -> str:
        # While this child runs, its parent's wait expires and the parent runs on the peer.
        acta_host.advance("5m")
        assert acta_host.tick(peer) == "completed"
        flagged.append(acta_host.job(ctx.job).cancel_requested)
        # This worker learns of the cancel at its next heartbeat and settles the job cancelled
        # (possibly before this thread gets back here: a sync handler cannot be interrupted).
        acta_host.advance(acta_host.worker.heartbeat)
        ctx.raise_if_cancelled()
        return "crawled"

    @acta_app.job("index")
    def index(site: str, ctx: SyncJobContext) -> None:
        ctx.spawn(crawl, site, name="crawl")
        got.extend(ctx.wait_children(timeout="5m"))

    parent = index.enqueue("example.org")
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "cancelled"  # the child, stopped by its parent giving up
    [outcome] = got
    assert outcome.timed_out and outcome.result is None
    assert outcome.status == "executing"  # still running when its parent gave up on it
    assert flagged == [True]
    assert acta_app.result(outcome.ref) is None
    assert acta_host.job(outcome.ref).status is JobStatus.CANCELLED
    [asked] = [e for e in acta_host.events(outcome.ref) if e.code is EventCode.CANCEL_REQUESTED]
    assert asked.reason is Reason.PARENT_GAVE_UP
    assert acta_host.job(parent).status is JobStatus.SUCCEEDED
    assert view(ledger, parent, "open_children") == (0,)
    assert latches(ledger, parent) == 0


@pytest.mark.parametrize("attempts", [1, 2])
def test_a_child_whose_worker_died_is_recovered_and_the_parent_resumes_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger, attempts: int
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    resumed: list[list[ChildOutcome]] = []

    @acta_app.job("render", max_attempts=attempts)
    def render(page: int, ctx: SyncJobContext) -> str:
        if ctx.execution == 1:
            acta_host.kill(first)  # the process dies mid-run; its lease will lapse
        return f"page {page}"

    @acta_app.job("book")
    def book(pages: int, ctx: SyncJobContext) -> list[str]:
        ctx.spawn_many(render, list(range(pages)), group="pg")
        resumed.append(ctx.wait_children())
        return [o.status for o in resumed[-1]]

    parent = book.enqueue(1)
    assert acta_host.tick(first) == "suspended"
    assert acta_host.tick(first) == "killed"
    [child] = acta_host.jobs(name="render")
    assert view(ledger, parent, "status", "open_children") == ("suspended", 1)
    acta_host.advance(first.lease + peer.heartbeat)
    # Recovery takes the child back: a second run, or (out of attempts) failed for good; then
    # the released parent runs.
    acta_host.run_until_idle(peer)
    assert "lease-lost" in acta_host.event_names(child.job_ref)
    assert len(resumed) == 1
    [outcome] = resumed[0]
    assert (outcome.status, outcome.result) == (
        ("succeeded", "page 0") if attempts == 2 else ("failed", None)
    )
    assert acta_host.job(parent).status is JobStatus.SUCCEEDED
    assert acta_host.job(parent).executions == 2
    assert acta_host.event_names(parent).count("released") == 1


def test_a_running_child_stopped_by_its_parent_says_why_in_its_cancelled_event(
    acta_app: Acta, acta_host: Host
) -> None:
    peer = acta_host.add_worker()

    @acta_app.job("crawl")
    def crawl(site: str, ctx: SyncJobContext) -> None:
        acta_host.advance("1m")
        assert acta_host.tick(peer) == "completed"  # the parent gives up meanwhile
        acta_host.advance(acta_host.worker.heartbeat)
        ctx.raise_if_cancelled()

    @acta_app.job("index")
    def index(site: str, ctx: SyncJobContext) -> None:
        ctx.spawn(crawl, site, name="crawl")
        ctx.wait_children(timeout="1m")

    index.enqueue("example.org")
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "cancelled"
    [child] = acta_host.jobs(name="crawl")
    [cancelled] = [e for e in acta_host.events(child.job_ref) if e.code is EventCode.CANCELLED]
    assert cancelled.reason is Reason.PARENT_GAVE_UP
