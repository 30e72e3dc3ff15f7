"""Lanes: one ordered line per lane name, only its head claimable, the next member promoted by
the transaction that ends the head (issue 9, items 1 and 7). Retries, delays and lost leases
keep the head's place; priority, batches and idle executors never let a member jump the line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobContext, JobRef, JobStatus
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def lane_of(ledger: Ledger, lane: str) -> tuple[Any, ...]:
    """(head ref, head status, depth) of ``lane`` as an operator reads it."""
    [row] = ledger.rows(
        "SELECT head_job_ref, head_status, depth FROM {schema}.lanes_view WHERE lane = :lane",
        {"lane": lane},
    )
    return row[0], row[1], int(row[2])


def place(ledger: Ledger, ref: JobRef) -> tuple[Any, ...]:
    """(status, lane, lane_seq) of one job from jobs_view."""
    [row] = ledger.rows(
        "SELECT status, lane, lane_seq FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return row[0], row[1], None if row[2] is None else int(row[2])


def first_event(host: Host, ref: JobRef, code: EventCode) -> int:
    """The event_id of the job's first event with ``code`` (ids follow commit order)."""
    return next(e.event_id for e in host.events(ref) if e.code is code)


def test_a_later_member_waits_behind_the_head_even_with_higher_priority(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    a1 = step.enqueue("a1", lane="cust-a")
    a2 = step.enqueue("a2", lane="cust-a", priority=100)
    a3 = step.enqueue("a3", lane="cust-a", priority=100)
    assert place(ledger, a1) == ("ready", "cust-a", 1)
    assert place(ledger, a2) == ("blocked", "cust-a", 2)
    assert place(ledger, a3) == ("blocked", "cust-a", 3)
    assert acta_host.job(a2).status is JobStatus.BLOCKED
    assert lane_of(ledger, "cust-a") == (str(a1), "ready", 3)

    assert acta_host.tick() == "completed"
    assert seen == ["a1"]
    assert lane_of(ledger, "cust-a") == (str(a2), "ready", 2)
    assert place(ledger, a3)[0] == "blocked"
    acta_host.run_until_idle()
    assert seen == ["a1", "a2", "a3"]
    assert lane_of(ledger, "cust-a") == (None, None, 0)


def test_a_failing_head_keeps_its_place_through_retries(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("sync-account", max_attempts=3, backoff="10s")
    def sync_account(name: str) -> None:
        seen.append(name)
        if name == "head":
            raise RuntimeError("upstream down")

    head = sync_account.enqueue("head", lane="acct-7")
    member = sync_account.enqueue("member", lane="acct-7")
    for attempt in (1, 2):
        assert acta_host.tick() == "rearmed"
        assert acta_host.job(head).attempts == attempt
        assert acta_host.job(member).status is JobStatus.BLOCKED
        # The member is due, yet nothing is claimable while the head waits out its backoff.
        assert acta_host.tick() == "nothing-claimed"
        assert lane_of(ledger, "acct-7") == (str(head), "ready", 2)
        acta_host.advance("10s")
    assert acta_host.tick() == "failed"  # the third attempt is the last
    assert acta_host.job(head).status is JobStatus.FAILED
    assert acta_host.job(member).status is JobStatus.READY
    assert acta_host.tick() == "completed"
    assert seen == ["head", "head", "head", "member"]
    assert first_event(acta_host, member, EventCode.EXECUTION_STARTED) > first_event(
        acta_host, head, EventCode.FAILED
    )


@pytest.mark.parametrize("when", ["waiting", "running"])
def test_cancelling_the_head_promotes_the_next_member(
    acta_app: Acta, acta_host: Host, ledger: Ledger, when: str
) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str, ctx: JobContext) -> None:
        seen.append(name)
        if name == "head":
            assert acta_app.cancel(head) is JobStatus.EXECUTING  # asked; ends with the run
            acta_host.advance(acta_host.worker.heartbeat)  # the worker learns of it
            assert acta_host.job(member).status is JobStatus.BLOCKED
            ctx.raise_if_cancelled()

    head = step.enqueue("head", lane="cust-c")
    member = step.enqueue("member", lane="cust-c")
    if when == "waiting":
        assert acta_app.cancel(head) is JobStatus.CANCELLED
    else:
        assert acta_host.tick() == "cancelled"
    assert acta_host.job(head).status is JobStatus.CANCELLED
    assert lane_of(ledger, "cust-c") == (str(member), "ready", 1)
    assert acta_host.event_names(member)[-1] == "promoted"
    acta_host.run_until_idle()
    assert seen == (["member"] if when == "waiting" else ["head", "member"])


def test_a_head_handed_back_at_shutdown_keeps_its_place(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    leaving = acta_host.worker
    peer = acta_host.add_worker()
    seen: list[str] = []

    @acta_app.job("reindex")
    def reindex(name: str, ctx: JobContext) -> None:
        seen.append(name)
        if name == "head" and ctx.execution == 1:
            acta_host.stop(leaving)  # SIGTERM mid-run: the job goes back, no attempt spent
            ctx.raise_if_cancelled()

    head = reindex.enqueue("head", lane="cust-h")
    reindex.enqueue("member", lane="cust-h")
    assert acta_host.tick(leaving) == "rearmed"
    assert lane_of(ledger, "cust-h") == (str(head), "ready", 2)
    acta_host.run_until_idle(peer)
    assert seen == ["head", "head", "member"]


def test_cancelling_a_blocked_member_leaves_the_head_alone(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    head = step.enqueue("head", lane="cust-d")
    dropped = step.enqueue("dropped", lane="cust-d")
    last = step.enqueue("last", lane="cust-d")
    assert acta_app.cancel(dropped) is JobStatus.CANCELLED
    assert lane_of(ledger, "cust-d") == (str(head), "ready", 2)
    assert acta_host.job(last).status is JobStatus.BLOCKED
    acta_host.run_until_idle()
    assert seen == ["head", "last"]
    assert acta_host.event_names(dropped) == ["enqueued", "cancelled"]


def test_a_killed_head_is_recovered_before_the_next_member_starts(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    seen: list[str] = []

    @acta_app.job("export")
    def export(name: str, ctx: JobContext) -> None:
        seen.append(f"{name}#{ctx.execution}")
        if name == "head" and ctx.execution == 1:
            acta_host.kill(first)  # the process dies mid-run; its lease will lapse

    head = export.enqueue("head", lane="cust-k")
    member = export.enqueue("member", lane="cust-k")
    assert acta_host.tick(first) == "killed"
    assert acta_host.tick(peer) == "nothing-claimed"  # the member stays blocked
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.job(member).status is JobStatus.BLOCKED
    assert acta_host.tick(peer) == "completed"  # recovery, then the head's second run
    assert seen == ["head#1", "head#2"]
    assert acta_host.event_names(head).count("lease-lost") == 1
    assert acta_host.tick(peer) == "completed"
    assert seen == ["head#1", "head#2", "member#1"]
    assert first_event(acta_host, member, EventCode.EXECUTION_STARTED) > first_event(
        acta_host, head, EventCode.SUCCEEDED
    )
    assert lane_of(ledger, "cust-k") == (None, None, 0)


def test_a_head_failed_by_recovery_promotes_the_next_member(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("poison", max_attempts=1)
    def poison(name: str) -> None:
        if name == "head":
            acta_host.kill(first)  # its only attempt is lost with the worker

    head = poison.enqueue("head", lane="cust-p")
    member = poison.enqueue("member", lane="cust-p")
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"  # recovery fails the head, then the member runs
    assert acta_host.job(head).status is JobStatus.FAILED
    assert acta_host.job(member).status is JobStatus.SUCCEEDED
    assert lane_of(ledger, "cust-p") == (None, None, 0)


def test_a_batch_keeps_lane_order_across_mixed_lanes(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    names = ["a1", "b1", "a2", "free", "b2", "a3"]
    lanes = {"a": "lane-a", "b": "lane-b"}
    # Later requests ask for a higher priority: the lane order must still win.
    refs = acta_app.enqueue_batch(
        [acta_app.request(step, n, lane=lanes.get(n[0]), priority=i) for i, n in enumerate(names)]
    )
    by_name = dict(zip(names, refs, strict=True))
    assert place(ledger, by_name["a1"]) == ("ready", "lane-a", 1)
    assert place(ledger, by_name["a2"]) == ("blocked", "lane-a", 2)
    assert place(ledger, by_name["a3"]) == ("blocked", "lane-a", 3)
    assert place(ledger, by_name["b1"]) == ("ready", "lane-b", 1)
    assert place(ledger, by_name["b2"]) == ("blocked", "lane-b", 2)
    assert place(ledger, by_name["free"]) == ("ready", None, None)
    acta_host.run_until_idle()
    assert [n for n in seen if n[0] == "a"] == ["a1", "a2", "a3"]
    assert [n for n in seen if n[0] == "b"] == ["b1", "b2"]


async def test_a_batch_claim_takes_only_the_head_of_a_lane(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("step")
    def step(name: str) -> None:
        pass

    a1, a2, a3 = [await step.enqueue_async(n, lane="lane-a") for n in ("a1", "a2", "a3")]
    b1 = await step.enqueue_async("b1", lane="lane-b")
    free = await step.enqueue_async("free")
    wide = await acta_async_host.add_worker(executors=8)
    runs = await wide.claim(8)
    assert {r.job.job_ref for r in runs} == {str(a1), str(b1), str(free)}
    for ref in (a2, a3):
        assert (await acta_async_host.job(ref)).status is JobStatus.BLOCKED
    for run in runs:
        await wide.execute(run)
    assert await acta_async_host.run_until_idle(wide) == 2
    assert (await acta_async_host.job(a3)).status is JobStatus.SUCCEEDED


def test_different_lanes_and_unlaned_jobs_run_in_parallel(acta_app: Acta, acta_host: Host) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        if name == "a1":  # while a1 runs, the peer takes whatever else is claimable
            during.extend(acta_host.tick(peer) for _ in range(3))

    step.enqueue("a1", lane="lane-a")
    a2 = step.enqueue("a2", lane="lane-a")
    b1 = step.enqueue("b1", lane="lane-b")
    free = step.enqueue("free")
    assert acta_host.tick() == "completed"
    assert during == ["completed", "completed", "nothing-claimed"]  # b1 and free, never a2
    assert acta_host.job(b1).status is JobStatus.SUCCEEDED
    assert acta_host.job(free).status is JobStatus.SUCCEEDED
    assert acta_host.job(a2).status is JobStatus.READY  # promoted when a1 ended
    assert acta_host.tick(peer) == "completed"


def test_a_delayed_head_holds_the_lane(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    head = step.enqueue("later", lane="cust-l", delay="1h")
    due = step.enqueue("due-now", lane="cust-l")
    assert lane_of(ledger, "cust-l") == (str(head), "ready", 2)
    assert acta_host.tick() == "nothing-claimed"  # due-now is due, but not the head
    assert acta_host.job(due).status is JobStatus.BLOCKED
    acta_host.advance("59m")
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1m")
    acta_host.run_until_idle()
    assert seen == ["later", "due-now"]


def test_the_definition_lane_applies_and_an_enqueue_lane_overrides_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("post-ledger", lane="books")
    def post(n: int) -> None:
        pass

    first, second = post.enqueue(1), post.enqueue(2)
    elsewhere = post.enqueue(3, lane="books-eu")
    assert place(ledger, first) == ("ready", "books", 1)
    assert place(ledger, second) == ("blocked", "books", 2)
    assert place(ledger, elsewhere) == ("ready", "books-eu", 1)
    acta_host.run_until_idle()
    assert acta_host.job(second).status is JobStatus.SUCCEEDED


def test_every_laned_job_is_promoted_exactly_once(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("flaky-step", max_attempts=2, backoff="5s")
    def flaky(name: str, ctx: JobContext) -> None:
        if name.endswith("1") and ctx.attempt == 1:
            raise RuntimeError("first try fails")

    laned = [flaky.enqueue(n, lane=f"lane-{n[0]}") for n in ("a1", "a2", "a3", "b1", "b2")]
    free = flaky.enqueue("free")
    acta_host.run_until_idle()
    for ref in laned:
        names = acta_host.event_names(ref)
        assert names.count("promoted") == 1, names
        assert names.index("promoted") < names.index("execution-started")
        assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert "promoted" not in acta_host.event_names(free)


def test_a_deduplicated_enqueue_takes_no_place_in_the_lane(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    head = step.enqueue("head", lane="cust-q", dedup_key="order-1")
    member = step.enqueue("member", lane="cust-q")
    again = step.enqueue("again", lane="cust-q", dedup_key="order-1")
    assert again == head
    assert ledger.user_jobs() == 2
    assert lane_of(ledger, "cust-q") == (str(head), "ready", 2)
    acta_host.run_until_idle()
    assert seen == ["head", "member"]
    assert acta_host.job(member).status is JobStatus.SUCCEEDED
