"""The enqueue verb: jobs, runtime rows, tags and enqueued events in one transaction.

Decisions (codec, priority, due time, whether to audit) were made by the caller; this verb
only writes them. A duplicate deduplication key returns the existing job and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from acta.model.codes import EventCode, JobStatus, audited
from acta.model.rows import DefinitionSpec, Enqueued, NewJob
from acta.provider.verb import Verb, execute, execute_many, fetch_all, fetch_one


def definition_params(
    spec: DefinitionSpec, namespace: str, now: datetime | None
) -> dict[str, object]:
    return {
        "now": now,
        "namespace": namespace,
        "name": spec.name,
        "max_attempts": spec.max_attempts,
        "backoff": spec.backoff,
        "timeout_ms": spec.timeout_ms,
        "priority": spec.priority,
        "audit_level": int(spec.audit_level),
    }


def ensure_definitions(
    namespace: str, specs: Sequence[DefinitionSpec], now: datetime | None, statement: str
) -> Verb[tuple[int, dict[str, int]]]:
    """Create the namespace and definitions if missing; return the namespace id and the ids of
    every definition in it by name. ``statement`` picks producer (keep) or worker (update)."""
    yield execute("ensure_namespace", {"now": now, "namespace": namespace})
    for spec in specs:
        yield execute(statement, definition_params(spec, namespace, now))
    rows = yield fetch_all("definition_ids", {"namespace": namespace})
    ids = {row["name"]: row["definition_id"] for row in rows}
    namespace_id = rows[0]["namespace_id"] if rows else None
    if namespace_id is None:
        row = yield fetch_one("namespace_id", {"namespace": namespace})
        namespace_id = row["namespace_id"]
    return namespace_id, ids


def enqueue(
    namespace: str,
    specs: Mapping[str, DefinitionSpec],
    jobs: Sequence[NewJob],
    now: datetime | None,
    known: tuple[int, Mapping[str, int]] | None = None,
) -> Verb[tuple[list[Enqueued], tuple[int, Mapping[str, int]]]]:
    """Write ``jobs``; ``known`` (namespace id, definition ids) skips the catalog upserts.

    Returns what was written and the ids used, which the caller may cache once committed."""
    if known is None or any(job.definition not in known[1] for job in jobs):
        needed = [specs[name] for name in dict.fromkeys(job.definition for job in jobs)]
        known = yield from ensure_definitions(namespace, needed, now, "ensure_definition")
    namespace_id, definition_ids = known
    out: list[Enqueued] = []
    events: list[dict[str, object]] = []
    tags: list[dict[str, object]] = []
    for job in jobs:
        definition_id = definition_ids[job.definition]
        row = yield fetch_one(
            "insert_job",
            {
                "now": now,
                "job_ref": job.job_ref,
                "namespace_id": namespace_id,
                "definition_id": definition_id,
                "dedup_key": job.dedup_key,
                "correlation_key": job.correlation_key,
                "input_codec": job.input_codec,
                "input": job.input,
            },
        )
        if row is None:
            existing = yield fetch_one(
                "job_by_dedup_key", {"namespace_id": namespace_id, "dedup_key": job.dedup_key}
            )
            out.append(Enqueued(existing["job_ref"], existing["job_id"], created=False))
            continue
        job_id = row["job_id"]
        yield execute(
            "insert_runtime",
            {
                "now": now,
                "job_id": job_id,
                "namespace_id": namespace_id,
                "definition_id": definition_id,
                "status": int(JobStatus.READY),
                "priority": job.priority,
                "run_at": job.run_at,
                "delay_ms": job.delay_ms,
            },
        )
        tags.extend({"job_id": job_id, "tag": tag} for tag in job.tags)
        if audited(job.audit_level, EventCode.ENQUEUED):
            events.append(event_params(now, namespace_id, job_id, job.job_ref, EventCode.ENQUEUED))
        out.append(Enqueued(job.job_ref, job_id, created=True))
    if tags:
        yield execute_many("insert_tag", tags)
    if events:
        yield execute_many("insert_event", events)
    return out, known


def event_params(
    now: datetime | None,
    namespace_id: int | None,
    job_id: int | None,
    job_ref: str | None,
    code: EventCode,
    *,
    worker_id: int | None = None,
    execution: int | None = None,
    epoch: int | None = None,
    outcome: int | None = None,
    reason: int | None = None,
    duration_ms: int | None = None,
    message: str | None = None,
    detail: str | None = None,
) -> dict[str, object]:
    """Parameters of one ``insert_event``."""
    return {
        "now": now,
        "namespace_id": namespace_id,
        "job_id": job_id,
        "job_ref": job_ref,
        "worker_id": worker_id,
        "code": int(code),
        "execution": execution,
        "epoch": epoch,
        "outcome": outcome,
        "reason": reason,
        "duration_ms": duration_ms,
        "message": message,
        "detail": detail,
    }
