"""Concurrency keys and limits: never more holders than the limit in force, a loser turned away
between claim and start without spending an attempt, slots released by every transition that
ends a lease (issue 9, items 2, 3, 5 and 7). Overlap is made real by ticking peers from inside
a running handler; what ran at once is then read back from the events ledger.
"""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from typing import TYPE_CHECKING

from acta import Acta, EventCode, JobContext, JobStatus
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

BOUNCE_LOW, BOUNCE_HIGH = timedelta(milliseconds=250), timedelta(milliseconds=750)


def peak_overlap(ledger: Ledger, job_name: str) -> int:
    """The most runs of ``job_name`` between execution-started and their end at any moment,
    swept over the events in commit order (event ids)."""
    rows = ledger.rows(
        "SELECT event FROM {schema}.events_view WHERE job_name = :name "
        "AND event IN ('execution-started', 'execution-finished', 'lease-lost') "
        "ORDER BY event_id",
        {"name": job_name},
    )
    running = peak = 0
    for (event,) in rows:
        running += 1 if event == "execution-started" else -1
        peak = max(peak, running)
    return peak


def test_never_two_run_at_once_per_key_and_the_loser_spends_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("rebuild-index")
    def rebuild(n: int) -> None:
        if n == 1:
            during.append(acta_host.tick(peer))  # the key is held: the peer is turned away
            during.append(acta_host.tick(peer))  # and the loser is not claimable meanwhile

    holder = rebuild.enqueue(1, concurrency_key="acme")
    loser = rebuild.enqueue(2, concurrency_key="acme")
    bounced_at = acta_host.clock.now()
    assert acta_host.tick() == "completed"
    assert during == ["bounced", "nothing-claimed"]

    job = acta_host.job(loser)
    assert job.status is JobStatus.READY
    assert (job.attempts, job.executions) == (0, 0)
    assert bounced_at + BOUNCE_LOW <= job.next_run_at <= bounced_at + BOUNCE_HIGH
    [bounce] = [e for e in acta_host.events(loser) if e.code is EventCode.BOUNCED]
    detail = json.loads(bounce.detail or "{}")
    assert (detail["gate"], detail["key"], detail["limit"]) == ("concurrency", "acme", 1)
    assert bounce.worker == peer.incarnation

    # The key is free now, but the loser waits for its bounce instant like any due time.
    assert acta_host.tick(peer) == "nothing-claimed"
    acta_host.advance(job.next_run_at - acta_host.clock.now())
    assert acta_host.tick(peer) == "completed"
    assert acta_host.job(loser).attempts == 0  # a success spends no attempt either
    assert acta_host.event_names(loser)[:4] == [
        "enqueued",
        "bounced",
        "admitted",
        "execution-started",
    ]
    assert acta_host.event_names(holder)[:3] == ["enqueued", "admitted", "execution-started"]
    assert peak_overlap(ledger, "rebuild-index") == 1


def test_a_failing_job_releases_its_key(acta_app: Acta, acta_host: Host) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("charge", max_attempts=3, backoff="1m")
    def charge(name: str) -> None:
        if name == "bad":
            during.append(acta_host.tick(peer))
            raise RuntimeError("card declined")

    bad = charge.enqueue("bad", concurrency_key="cust-9")
    good = charge.enqueue("good", concurrency_key="cust-9")
    assert acta_host.tick() == "rearmed"
    assert during == ["bounced"]  # held while the failing run lasted
    acta_host.advance("1s")  # past the bounce, far before the retry
    assert acta_host.tick(peer) == "completed"  # admitted: the failure released the key
    assert acta_host.job(good).status is JobStatus.SUCCEEDED
    waiting = acta_host.job(bad)
    assert waiting.status is JobStatus.READY and waiting.attempts == 1
    assert waiting.next_run_at > acta_host.clock.now()


def test_a_lost_lease_releases_its_key_when_recovered(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("reconcile")
    def reconcile(name: str, ctx: JobContext) -> None:
        if name == "lost" and ctx.execution == 1:
            acta_host.kill(first)

    lost = reconcile.enqueue("lost", concurrency_key="acct-3")
    other = reconcile.enqueue("other", concurrency_key="acct-3")
    assert acta_host.tick(first) == "killed"
    assert acta_host.tick(peer) == "bounced"  # the dead worker's run still holds the key
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"  # recovery freed the slot: admitted at once
    assert acta_host.tick(peer) == "completed"
    for ref in (lost, other):
        assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert "lease-lost" in acta_host.event_names(lost)


def test_a_cancelled_or_handed_back_holder_releases_its_key(
    acta_app: Acta, acta_host: Host
) -> None:
    leaving = acta_host.worker
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("rebuild-index")
    def rebuild(name: str, ctx: JobContext) -> None:
        if ctx.execution > 1 or name == "other":
            return
        during.append(acta_host.tick(peer))  # held: bounced
        if name == "cancelled":
            acta_app.cancel(ctx.job)
            acta_host.advance(leaving.heartbeat)  # the worker learns of it
        else:
            acta_host.stop(leaving)  # SIGTERM: the run is handed back
        ctx.raise_if_cancelled()

    cancelled = rebuild.enqueue("cancelled", concurrency_key="acme")
    rebuild.enqueue("other", concurrency_key="acme")
    assert acta_host.tick(leaving) == "cancelled"
    acta_host.advance("1s")
    assert acta_host.tick(peer) == "completed"  # the cancelled run freed the key at once
    assert acta_host.job(cancelled).status is JobStatus.CANCELLED

    handed = rebuild.enqueue("handed-back", concurrency_key="globex")
    rebuild.enqueue("other", concurrency_key="globex")
    assert acta_host.tick(leaving) == "rearmed"
    assert acta_host.job(handed).status is JobStatus.READY
    assert during == ["bounced", "bounced"]
    acta_host.advance("1s")
    assert acta_host.tick(peer) == "completed"  # either job: the key is free again
    assert acta_host.tick(peer) == "completed"
    assert not any(g.held for g in acta_app.gates())


def test_a_fenced_zombie_does_not_release_the_new_holders_key(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    zombie = acta_host.worker
    peer, third = acta_host.add_worker(), acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("export")
    def export(name: str, ctx: JobContext) -> None:
        if name == "slow" and ctx.execution == 1:
            acta_host.pause(zombie)  # SIGSTOP: heartbeats stop, the handler goes on
            acta_host.advance(zombie.lease + peer.heartbeat)
            during.append(acta_host.tick(peer))  # recovery; the rerun holds the key, frozen
            acta_host.resume(zombie)
        elif name == "slow":
            acta_host.kill(peer)

    slow = export.enqueue("slow", concurrency_key="acme")
    assert acta_host.tick(zombie) == "lease-lost"  # its settle was refused
    assert during == ["killed"]
    assert "write-fenced" in acta_host.event_names(slow)
    [holders] = ledger.rows("SELECT holders FROM {schema}.gates_view WHERE name = 'acme'")
    assert json.loads(holders[0]) == [str(slow)]  # the rerun still holds its slot
    export.enqueue("other", concurrency_key="acme")
    assert acta_host.tick(third) == "bounced"


def test_different_keys_run_in_parallel(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("rebuild-index")
    def rebuild(key: str) -> None:
        if key == "acme":
            during.append(acta_host.tick(peer))

    rebuild.enqueue("acme", concurrency_key="acme")
    rebuild.enqueue("globex", concurrency_key="globex")
    assert acta_host.tick() == "completed"
    assert during == ["completed"]
    assert peak_overlap(ledger, "rebuild-index") == 2


def test_definitions_sharing_a_key_exclude_each_other(acta_app: Acta, acta_host: Host) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("export-account")
    def export(n: int) -> None:
        during.append(acta_host.tick(peer))

    @acta_app.job("delete-account")
    def delete(n: int) -> None:
        pass

    export.enqueue(1, concurrency_key="acct-5")
    deleting = delete.enqueue(1, concurrency_key="acct-5")
    assert acta_host.tick() == "completed"
    assert during == ["bounced"]
    assert acta_host.event_names(deleting)[-1] == "bounced"
    acta_host.run_until_idle()
    assert acta_host.job(deleting).status is JobStatus.SUCCEEDED


def test_a_limit_of_n_is_never_exceeded_by_n_plus_5_jobs_on_several_peers(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    limit = 2
    peers = [acta_host.worker, acta_host.add_worker(executors=3), acta_host.add_worker()]
    turn = itertools.cycle(peers)
    seen_running: list[int] = []
    nested: list[str] = []

    @acta_app.job("crunch", concurrency_limit=limit)
    def crunch(n: int) -> None:
        seen_running.append(len(acta_app.jobs(status="executing", name="crunch")))
        # Every running handler asks the other peers for more work, moving time past the
        # bounces, so admissions keep racing the slots that are held right now.
        for _ in range(2):
            if len(nested) < 24:
                acta_host.advance("1s")
                nested.append(acta_host.tick(next(turn)))

    refs = [crunch.enqueue(n) for n in range(limit + 5)]
    while any(not acta_host.job(r).status.terminal for r in refs):
        acta_host.tick(next(turn))
        acta_host.advance("1s")
    assert max(seen_running) == limit  # the slots were really filled at once
    assert "bounced" in nested  # and really contested
    assert peak_overlap(ledger, "crunch") == limit
    assert all(acta_host.job(r).attempts == 0 for r in refs)
    assert ledger.value("SELECT count(*) FROM {schema}.gate_holds") == 0


def test_a_limit_counts_per_key_when_the_enqueue_names_one(acta_app: Acta, acta_host: Host) -> None:
    second, third = acta_host.add_worker(), acta_host.add_worker()
    during: dict[str, list[str]] = {"a1": [], "a2": []}

    @acta_app.job("sync-feed", concurrency_limit=2)
    def sync_feed(name: str) -> None:
        if name == "a1":
            during["a1"].append(acta_host.tick(second))
        elif name == "a2":
            during["a2"].extend(acta_host.tick(third) for _ in range(2))

    for name in ("a1", "a2", "a3"):
        sync_feed.enqueue(name, concurrency_key="acme")
    globex = sync_feed.enqueue("g1", concurrency_key="globex")
    assert acta_host.tick() == "completed"
    # a2 takes acme's second slot; a3 finds both taken; globex has slots of its own.
    assert during == {"a1": ["completed"], "a2": ["bounced", "completed"]}
    assert acta_host.job(globex).status is JobStatus.SUCCEEDED
    gates = {(g.kind, g.name): g.limit for g in acta_app.gates()}
    assert gates == {("key", "acme"): 2, ("key", "globex"): 2}
    acta_host.run_until_idle()


def test_a_lane_head_passes_its_key_gate_while_the_members_stay_blocked(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("bill")
    def bill(name: str) -> None:
        if name == "holder":  # holds the key while the peer meets the lane's head
            during.extend(acta_host.tick(peer) for _ in range(2))

    bill.enqueue("holder", concurrency_key="acme")
    head = bill.enqueue("head", lane="acme-line", concurrency_key="acme")
    member = bill.enqueue("member", lane="acme-line", concurrency_key="acme")
    assert acta_host.tick() == "completed"
    assert during == ["bounced", "nothing-claimed"]  # the head re-armed; the member never tried
    assert acta_host.job(member).status is JobStatus.BLOCKED
    assert ledger.rows(
        "SELECT head_job_ref, depth FROM {schema}.lanes_view WHERE lane = 'acme-line'"
    ) == [(str(head), 2)]
    assert acta_host.event_names(head)[-2:] == ["promoted", "bounced"]
    acta_host.run_until_idle()
    assert acta_host.event_names(member).count("bounced") == 0
    [done] = [e.event_id for e in acta_host.events(head) if e.code is EventCode.SUCCEEDED]
    [promoted] = [e.event_id for e in acta_host.events(member) if e.code is EventCode.PROMOTED]
    assert promoted > done
