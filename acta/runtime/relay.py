"""``sys.outbox``: the recurring system job that moves staged outbox rows into the ledger.

Only a worker given an outbox source (``Acta(outbox=OutboxSource(...))``) runs it; the others
hand its slot back and never claim it again. One run claims, delivers and settles batches
(``acta.outbox.relay``) until a claim comes back short or ``ROUNDS`` batches were moved, then
the slot re-arms for the source's poll interval. Source connections are opened in a thread,
one per source transaction, and closed at once: the source's driver is synchronous and must
not block the worker's loop.

Every delivery is fenced by the run's lease on the slot (read once, when the run begins): a
relay that lost its slot writes nothing more to the ledger, and gives its rows back.
Delivery never waits for a handler: the run ends when the jobs are in the ledger. If the
ledger refuses a delivery, the rows are released (they keep their place in their lanes) and
the run fails, which the slot records before re-arming.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from acta.context import JobContext
from acta.errors import LeaseLostError
from acta.ids import JobRef
from acta.model.rows import Enqueued
from acta.outbox.relay import (
    Delivery,
    OutboxRow,
    Refusal,
    SlotLease,
    admit,
    claim,
    deliver,
    release,
    settle,
    slot_lease,
)
from acta.outbox.source import OutboxSource, SourceConnection
from acta.runtime.environment import RunEnv

T = TypeVar("T")

ROUNDS = 20
"""Batches one run may move before it lets the slot re-arm (so a deep outbox cannot keep one
run going for ever, and a lost lease is noticed between rounds)."""


async def run_relay(env: RunEnv, ctx: JobContext) -> None:
    source = env.outbox
    if source is None:  # available() keeps such workers off the slot; never run without one
        raise AssertionError("sys.outbox ran in a worker without an outbox source")
    me, ref = env.identity.worker_id, str(ctx.job)
    lease = await env.ledger.run_async(
        lambda: slot_lease(ref, env.namespace, me), name="outbox-lease"
    )
    if lease is None:
        raise LeaseLostError(f"the outbox relay lost its slot {ref} before it began")
    for _ in range(ROUNDS):
        moved = await relay_batch(env, source, lease)
        if moved < source.batch:
            return


async def relay_batch(env: RunEnv, source: OutboxSource, lease: SlotLease) -> int:
    """Claim, deliver and settle one batch; returns how many rows were claimed."""
    me = env.identity.incarnation
    now = env.clock.now()
    _alive(env)
    rows = await _on_source(
        source,
        lambda conn: claim(conn, env.namespace, me, now, source.hold_for, source.batch),
    )
    if not rows:
        return 0
    delivery = _judge(env, source, rows, lease)
    try:
        _alive(env)
        written, late = await _deliver(env, delivery)
    except BaseException as exc:
        if not env.killed:
            error = f"{type(exc).__name__}: {exc}"
            ids = [row.id for row in rows]
            await _on_source(source, lambda conn: release(conn, ids, me, error))
        raise
    if any(w.created for w in written) and env.ring is not None:
        env.ring()  # this process's idle workers may claim the new jobs at once
    _alive(env)
    # Rows the ledger refused (a retired job) are quarantined, not delivered.
    gone = {row.id for row, _ in late}
    delivered = [row.id for row, _ in delivery.jobs if row.id not in gone]
    refused = [*delivery.refused, *late]
    await _on_source(source, lambda conn: settle(conn, delivered, refused, me, env.clock.now()))
    return len(rows)


def _judge(env: RunEnv, source: OutboxSource, rows: list[OutboxRow], lease: SlotLease) -> Delivery:
    refs = JobRef.many(int(env.clock.now().timestamp() * 1000), len(rows))
    jobs = []
    specs = {}
    refused: list[tuple[OutboxRow, Refusal]] = []
    for row, (_, ref) in zip(rows, refs, strict=True):
        judged = admit(row, env.registry, source.name, ref)
        if isinstance(judged, Refusal):
            refused.append((row, judged))
        else:
            job, spec = judged
            jobs.append((row, job))
            specs[spec.name] = spec
    return Delivery(
        source.name, env.namespace, env.identity.namespace_id, lease, jobs, specs, refused
    )


async def _deliver(
    env: RunEnv, delivery: Delivery
) -> tuple[list[Enqueued], list[tuple[OutboxRow, Refusal]]]:
    ledger = env.ledger
    known = ledger.catalog(env.namespace)
    now, fused, channel = ledger.now(), ledger.fused, ledger.channel
    done = await ledger.run_async(
        lambda: deliver(delivery, now, known, fused=fused, channel=channel),
        name="outbox-deliver",
    )
    if done is None:
        raise LeaseLostError(f"the outbox relay lost its slot {delivery.lease.job_ref}")
    written, learnt, late = done
    if learnt is not None:
        ledger.learn_catalog(env.namespace, learnt)
    return written, late


def _alive(env: RunEnv) -> None:
    if env.killed:  # a dead process writes nothing, in the ledger or in the source
        raise LeaseLostError("the outbox relay stopped: the worker is gone")


async def _on_source(source: OutboxSource, work: Callable[[SourceConnection], T]) -> T:
    def step() -> T:
        conn = source.open()
        try:
            return work(conn)
        finally:
            conn.close()

    return await asyncio.to_thread(step)


def relay_available(env: RunEnv) -> bool:
    """Whether this worker can run the relay: it was given an outbox source."""
    return env.outbox is not None


def relay_every(env: RunEnv) -> timedelta:
    """How long after a run the relay comes due again: the source's poll interval."""
    return env.outbox.poll_every if env.outbox is not None else env.heartbeat
