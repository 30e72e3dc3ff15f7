"""Waits released by others: the latch a child holds on its parent, and the check a
suspension makes under its row lock so that it never parks on something already there.

A parent counts its unfinished children on its own runtime row (``open_children``). Each
child's terminal transition deletes its latch and takes one off that count, in the child's
transaction; the one that reaches zero releases the parent's children wait and makes it ready.
A suspension does the opposite check under the same row lock: if the signal it would wait for
was sent, or no child is open, it makes the job ready instead of suspending it. Between the
two, no wake-up is lost whichever transaction commits first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from acta.ledger.events import event_params
from acta.model.codes import EventCode, JobStatus, WaitKind
from acta.model.rows import EventRecord, Transition
from acta.provider.verb import Verb, execute, fetch_all, fetch_one


def release_latches(child_ids: Sequence[int], now: datetime | None) -> Verb[None]:
    """Children reached a terminal status: drop their latches in one statement, count each
    parent down once by how many of its children ended, and wake a parent whose last open
    child it was. Parents are updated in id order, so two batches never lock them crosswise."""
    rows = yield fetch_all("latch_release", {"child_ids": json.dumps(list(child_ids))})
    ended = Counter(row["parent_id"] for row in rows)
    for parent_id in sorted(ended):
        parent = yield fetch_one(
            "child_finished", {"parent_id": parent_id, "count": ended[parent_id], "now": now}
        )
        if parent is None or parent["open_children"] > 0:
            continue
        if parent["status"] != int(JobStatus.SUSPENDED):
            continue
        released = yield fetch_all("children_wait_release", {"job_id": parent_id, "now": now})
        if released:
            what = f"children:{released[0]['name']}"
            yield from wake(parent_id, parent["namespace_id"], parent["job_ref"], what, now)


def wake(
    job_id: int, namespace_id: int, job_ref: str, what: str, now: datetime | None
) -> Verb[bool]:
    """Make a suspended job ready now, with its released event; False if it was not
    suspended (it is running, or already woken)."""
    changed = yield execute("wake", {"job_id": job_id, "now": now})
    if changed:
        yield execute(
            "insert_event",
            event_params(now, namespace_id, job_id, job_ref, EventCode.RELEASED, message=what),
        )
    return bool(changed)


def wait_satisfied(plan: Transition, open_children: int) -> Verb[bool]:
    """Under the suspending job's row lock: is what it would wait for already here?"""
    wait = plan.wait
    assert wait is not None
    if wait.kind == WaitKind.CHILDREN:
        return open_children <= 0
    if wait.kind == WaitKind.SIGNAL:
        row = yield fetch_one("signal_of", {"job_id": plan.job_id, "name": wait.name})
        return row is not None
    return False


def park(plan: Transition) -> Verb[None]:
    """Stamp the wait a suspension parks on (what ``jobs_view.waiting_for`` shows)."""
    wait = plan.wait
    assert wait is not None
    yield execute(
        "wait_park",
        {"job_id": plan.job_id, "kind": wait.kind, "name": wait.name, "execution": wait.execution},
    )


def ready_instead(plan: Transition) -> Transition:
    """The suspension turned into "ready now": the handler re-enters at once and finds what
    it waited for. The suspended event says so."""
    assert plan.wait is not None
    kind = WaitKind(plan.wait.kind).label
    events = tuple(
        replace(e, message=f"{kind}:{plan.wait.name} (already released)")
        if e.code is EventCode.SUSPENDED
        else e
        for e in plan.events
    )
    released = EventRecord(EventCode.RELEASED, message=f"{kind}:{plan.wait.name}")
    return replace(
        plan,
        status=JobStatus.READY,
        run_at=None,
        delay_ms=0,
        wait=None,
        events=(*events, released),
    )
