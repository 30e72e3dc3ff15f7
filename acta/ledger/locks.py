"""Ledger verbs of the locks a running handler takes (``ctx.lock``).

A lock is one row per key naming its holder as (job, lease epoch); the holder's runtime row
says whether it still holds it. Exclusion therefore rides the holder's lease: when recovery
takes a dead worker's lease back (or the run ends), the epoch or status moves on and the lock is
free for the next taker, with nothing to clean up first. Both verbs start with the run fence, so
a fenced zombie neither takes nor releases anything; a release is also matched on holder and
epoch, so it can never drop a lock another job took since.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from acta.ledger.fence import RunLease, guard_run
from acta.provider.verb import Verb, execute, fetch_one


@dataclass(frozen=True, slots=True)
class LockAttempt:
    """What one try at a lock found: ``taken`` by this run, ``mine`` (already held by this
    run), ``busy`` (held by ``holder``), or ``fenced`` (this run lost its lease)."""

    outcome: str
    holder: str | None = None


def try_lock(lease: RunLease, name: str, now: datetime | None) -> Verb[LockAttempt]:
    """Take the lock ``name`` for this run if nobody holds it, in one transaction."""
    if not (yield from guard_run(lease, now, f"lock {name!r}")):
        return LockAttempt("fenced")
    key = {"namespace_id": lease.namespace_id, "name": name}
    row = yield fetch_one("lock_of", key)
    if row is not None and row["held"]:
        mine = row["holder_job_id"] == lease.job_id and row["holder_epoch"] == lease.epoch
        return LockAttempt("mine" if mine else "busy", row["holder_ref"])
    previous = (None, None) if row is None else (row["holder_job_id"], row["holder_epoch"])
    yield execute(
        "lock_take",
        {
            **key,
            "job_id": lease.job_id,
            "epoch": lease.epoch,
            "prev_job_id": previous[0],
            "prev_epoch": previous[1],
            "now": now,
        },
    )
    # A producer racing on a new key may have won (PostgreSQL): read who holds it now.
    row = yield fetch_one("lock_of", key)
    if row is not None and (row["holder_job_id"], row["holder_epoch"]) == (
        lease.job_id,
        lease.epoch,
    ):
        return LockAttempt("taken")
    return LockAttempt("busy", None if row is None else row["holder_ref"])


def release_lock(lease: RunLease, name: str, now: datetime | None) -> Verb[bool]:
    """Release the lock ``name`` this run holds; False when the run is fenced (the lock is
    free already, or someone else's now, and nothing is written)."""
    if not (yield from guard_run(lease, now, f"lock release {name!r}")):
        return False
    yield execute(
        "lock_release",
        {
            "namespace_id": lease.namespace_id,
            "name": name,
            "job_id": lease.job_id,
            "epoch": lease.epoch,
        },
    )
    return True
