"""Lanes in the ledger: booking positions at enqueue, and promoting the next member.

A lane is a row locked by whoever changes its line: the enqueue that books positions at its
end, and the transition that ends its head (which promotes the next member in the same
transaction). Members are written blocked; only the head is ready, so the claim scan never
sees the rest of the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from acta.ledger.events import event_params
from acta.model.codes import AuditLevel, EventCode, audited
from acta.provider.verb import Verb, execute, fetch_all, fetch_one


def book_lane(
    namespace_id: int, lane: str, count: int, now: datetime | None
) -> Verb[tuple[int, int]]:
    """Take ``count`` positions at the end of ``lane`` (locking it); returns the lane's id and
    the first position taken."""
    row = yield fetch_one(
        "lane_book", {"now": now, "namespace_id": namespace_id, "lane": lane, "count": count}
    )
    return row["lane_id"], row["last_seq"] - count + 1


def promote(lane_id: int, finished_job_id: int | None, now: datetime | None) -> Verb[int | None]:
    """Make the lane's next member its head if the lane has none, or if its head is
    ``finished_job_id`` (which just reached a terminal status). Returns the promoted job id.

    Enqueue calls it with None after writing members blocked, so a member that arrives at an
    empty lane becomes its head the same way every later head does."""
    lane = yield fetch_one("lane_lock", {"lane_id": lane_id})
    head = lane["head_job_id"]
    if head is not None and head != finished_job_id:
        return None  # the head is someone else, still unfinished: nothing moves
    member = yield fetch_one("lane_next", {"lane_id": lane_id})
    if member is None:
        if head is not None:
            yield execute("lane_set_head", {"lane_id": lane_id, "job_id": None})
        return None
    job_id: int = member["job_id"]
    yield execute("promote_member", {"now": now, "job_id": job_id})
    yield execute("lane_set_head", {"lane_id": lane_id, "job_id": job_id})
    if audited(AuditLevel(member["audit_level"]), EventCode.PROMOTED):
        yield execute(
            "insert_event",
            event_params(
                now, member["namespace_id"], job_id, member["job_ref"], EventCode.PROMOTED
            ),
        )
    return job_id


def promote_lanes(
    lanes: Iterable[tuple[int, int | None]], now: datetime | None, fused: bool = False
) -> Verb[None]:
    """Promote behind each (lane id, job id) whose run just ended for good; a None job id
    promotes only where the lane has no head (after an enqueue). Fused (server dialects), the
    whole batch takes two statements: lock the lanes, then promote; otherwise lane by lane."""
    ordered = sorted(set(lanes), key=lambda pair: (pair[0], pair[1] or 0))
    if not ordered:
        return
    if not fused:
        for lane_id, job_id in ordered:
            yield from promote(lane_id, job_id, now)
        return
    yield fetch_all("lanes_lock", {"lane_ids": sorted({lane for lane, _ in ordered})})
    yield fetch_all(
        "fused_promote",
        {
            "now": now,
            "lane_ids": [lane for lane, _ in ordered],
            "job_ids": [job for _, job in ordered],
        },
    )
