"""Incarnation verbs: register a worker incarnation, heartbeat (renewing held leases), stop.

An incarnation is one run of one worker process, the identity its leases are fenced by. The
recurring slots the worker runs (``sys.recovery`` and the other system jobs, whose jobs the
runtime passes in) are enqueued here on registration by their deduplication keys, so every
namespace with a worker has exactly one of each, and each heartbeat also takes the recovery
slot back if the worker running it died: recovery cannot recover itself, so the peers'
heartbeats watch it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from acta.contract import Contract
from acta.ledger import contract
from acta.ledger.enqueue import enqueue, ensure_definitions
from acta.ledger.events import worker_event
from acta.ledger.policy_override import overrides_of
from acta.ledger.schedule import Declared, sync_declared
from acta.ledger.transition import apply_transition, lapsed_from_row
from acta.model.codes import EventCode, Reason
from acta.model.rows import (
    DefinitionSpec,
    Heartbeat,
    NewJob,
    Registration,
    WorkerSpec,
)
from acta.policy.recovery import recovery_transition
from acta.provider.verb import Verb, execute, fetch_all, fetch_one


def register(
    namespace: str,
    specs: Sequence[DefinitionSpec],
    worker: WorkerSpec,
    slots: Sequence[NewJob],
    now: datetime | None,
    declared: Sequence[Declared] = (),
    contracts: Sequence[Contract] = (),
    drift: str = "warn",
) -> Verb[Registration]:
    """Upsert the definitions this build declares, add the worker row, ensure the slots, and
    bring the ledger's schedules in line with the ones this build ``declared``."""
    namespace_id, ids = yield from ensure_definitions(namespace, specs, now, "register_definition")
    row = yield fetch_one(
        "insert_worker",
        {
            "now": now,
            "namespace_id": namespace_id,
            "incarnation": worker.incarnation,
            "host": worker.host,
            "pid": worker.pid,
            "executors": worker.executors,
            "heartbeat_ms": worker.heartbeat_ms,
            "tags": worker.tags,
        },
    )
    if row is None:
        # This incarnation is already in: an earlier try committed and only its reply was
        # lost. Its worker-started event is in too; the rest below is keyed (definitions by
        # name, the slot by its dedup key), so the retry writes nothing twice.
        row = yield fetch_one("worker_by_incarnation", {"incarnation": worker.incarnation})
        worker_id = row["worker_id"]
    else:
        worker_id = row["worker_id"]
        yield execute(
            "insert_event",
            worker_event(
                now, namespace_id, worker_id, EventCode.WORKER_STARTED, message=worker.incarnation
            ),
        )
    spec = {s.name: s for s in specs}
    written, _ = yield from enqueue(namespace, spec, list(slots), now, (namespace_id, ids))
    keys = {slot.dedup_key or "": row.job_id for slot, row in zip(slots, written, strict=True)}
    if declared:
        yield from sync_declared(namespace_id, ids, keys, declared, now)
    drifts: list[str] = []
    if contracts and drift != "off":
        drifts = yield from contract.check_contracts(
            namespace_id, ids, contracts, drift, worker.incarnation, now
        )
    return Registration(worker_id, namespace_id, ids, keys, tuple(drifts))


def heartbeat(
    worker_id: int,
    namespace_id: int,
    held: Sequence[tuple[int, int]],
    lease_ms: int,
    recovery_job_id: int,
    now: datetime | None,
) -> Verb[Heartbeat]:
    """Prove this incarnation is alive and renew the leases it holds.

    Returns ``alive=False`` when recovery already declared it dead: such a worker must stop
    writing and register again as a new incarnation.
    """
    beaten = yield execute("beat", {"now": now, "worker_id": worker_id})
    if not beaten:
        return Heartbeat(alive=False, lost=frozenset(job for job, _ in held))
    renewed: list[dict[str, int]] = []
    if held:
        renewed = yield fetch_all(
            "renew_leases",
            {
                "now": now,
                "worker_id": worker_id,
                "lease_ms": lease_ms,
                "held": json.dumps([[job, epoch] for job, epoch in held]),
            },
        )
    kept = {row["job_id"] for row in renewed}
    yield from reclaim_recovery_slot(namespace_id, recovery_job_id, now)
    overrides = yield from overrides_of(namespace_id)  # picked up within one heartbeat
    return Heartbeat(
        alive=True,
        lost=frozenset(job for job, _ in held if job not in kept),
        cancel_requested={row["job_id"]: row["control"] for row in renewed if row["control"]},
        policy_overrides=overrides,
    )


def reclaim_recovery_slot(
    namespace_id: int, recovery_job_id: int, now: datetime | None
) -> Verb[bool]:
    """If the worker running ``sys.recovery`` died, put the slot back to ready."""
    rows = yield fetch_all(
        "lapsed_leases",
        {"now": now, "namespace_id": namespace_id, "only_job_id": recovery_job_id, "limit": 1},
    )
    if not rows:
        return False
    lapsed = lapsed_from_row(rows[0])
    written = yield from apply_transition(recovery_transition(lapsed), now)
    return written is not None


def stop(worker_id: int, namespace_id: int, now: datetime | None) -> Verb[bool]:
    """Mark the worker stopped; False if recovery had already declared it dead."""
    stopped = yield execute("stop_worker", {"now": now, "worker_id": worker_id})
    if stopped:
        yield execute(
            "insert_event",
            worker_event(
                now,
                namespace_id,
                worker_id,
                EventCode.WORKER_STOPPED,
                reason=int(Reason.CLEAN_EXIT),
            ),
        )
    return bool(stopped)
