"""The enqueue verb: jobs, runtime rows, tags and enqueued events in one transaction.

Decisions (codec, priority, due time, whether to audit) were made by the caller; this verb
only writes them. A deduplication key some job already holds returns that job and writes
nothing; a batch that repeats a key is refused whole, before any statement. The ledger itself
refuses a batch naming an unregistered or suspended tenant (checked before any job is written)
or holding a job of a retired definition (the insert statements skip such rows, and a batch is
checked before its first insert), so a refused enqueue writes no job, in acta's transaction or
the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from acta.errors import (
    DefinitionRetiredError,
    TenantSuspendedError,
    UnknownTenantError,
    ValidationError,
)
from acta.ledger.events import event_params
from acta.ledger.lane import book_lane, promote_lanes
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
        "concurrency_limit": spec.concurrency_limit,
        "meter": spec.meter,
        "retention_ms": spec.retention_ms,
        "tenant_scope": spec.tenant_scope,
        "tags": spec.tags,
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
    *,
    fused: bool = False,
    channel: str | None = None,
) -> Verb[tuple[list[Enqueued], tuple[int, Mapping[str, int]]]]:
    """Write ``jobs``; ``known`` (namespace id, definition ids) skips the catalog upserts.

    ``fused`` writes the whole batch in one statement (server dialects), which also rings the
    database bell on ``channel`` when a job due now was written; a batch with lane members
    takes the portable path, which books their places in line. Returns what was written and
    the ids used, which the caller may cache once committed."""
    _refuse_repeated_dedup_keys(jobs)  # before the first statement: a refused batch writes nothing
    if known is None or any(job.definition not in known[1] for job in jobs):
        needed = [specs[name] for name in dict.fromkeys(job.definition for job in jobs)]
        known = yield from ensure_definitions(namespace, needed, now, "ensure_definition")
    namespace_id, definition_ids = known
    tenants = yield from _tenants(jobs)
    if fused and not any(job.portable_only for job in jobs):
        written = yield from _fused(
            namespace, namespace_id, definition_ids, jobs, now, channel, tenants
        )
    else:
        if len(jobs) > 1 or jobs[0].lane is not None:
            # Refuse before the first write: a later job's refusal must not leave earlier ones
            # (or a lane booking) behind in a caller's transaction that goes on to commit.
            yield from _refuse_retired({definition_ids[j.definition] for j in jobs})
        written = yield from _portable(namespace_id, definition_ids, jobs, now, fused, tenants)
        due_now = any(j.run_at is None and j.delay_ms == 0 for j in jobs)
        if channel is not None and due_now and any(w.created for w in written):
            yield fetch_all("ring", {"channel": channel, "namespace": namespace})
    return list(written), known


def _refuse_repeated_dedup_keys(jobs: Sequence[NewJob]) -> None:
    """Refuse a batch in which two requests share a deduplication key.

    Merging them would hand the caller one job for two requests, whose inputs or options may
    differ, with nothing to say which one was kept; asking for that is a mistake in the
    caller's batch, so it is refused whole. A key that an earlier transaction already holds
    is another matter: that is what deduplication is for, and it returns the existing job.
    """
    positions: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        if job.dedup_key is not None:
            positions.setdefault(job.dedup_key, []).append(index)
    for key, found in positions.items():
        if len(found) > 1:
            listed = ", ".join(str(i) for i in found[:-1]) + f" and {found[-1]}"
            raise ValidationError(
                "dedup_key",
                f"{key!r} appears at positions {listed} of the batch",
                "each request of one batch needs its own deduplication key; nothing was enqueued",
            )


def _tenants(jobs: Sequence[NewJob]) -> Verb[dict[str, int]]:
    """The ids of the tenants ``jobs`` name, by key; raises for a key no one registered and
    for a suspended tenant. No statement at all when no job names a tenant (the common call).
    On PostgreSQL the rows stay share-locked to commit, so a suspend waits for this enqueue."""
    keys = sorted({job.tenant for job in jobs if job.tenant is not None})
    if not keys:
        return {}
    rows = yield fetch_all("tenants_for_enqueue", {"keys": json.dumps(keys)})
    found = {row["tenant_key"]: row for row in rows}
    for key in keys:
        if key not in found:
            raise UnknownTenantError(key)
        if found[key]["suspended"]:
            raise TenantSuspendedError(key)
    return {key: int(row["tenant_id"]) for key, row in found.items()}


def _refuse_retired(definition_ids: Iterable[int]) -> Verb[None]:
    """Raise DefinitionRetiredError if any of ``definition_ids`` is retired."""
    rows = yield fetch_all(
        "retired_definitions", {"definition_ids": json.dumps(sorted(definition_ids))}
    )
    if rows:
        raise DefinitionRetiredError(rows[0]["name"])


def _resolve(job: NewJob, holder: Mapping[str, Any] | None) -> Enqueued:
    """A row the unique keys refused: this very job (written by an earlier try whose commit
    outcome was unknown), or the job that already holds its deduplication key."""
    if holder is None:
        raise AssertionError(f"job {job.job_ref} was refused but no job holds its keys")
    return Enqueued(holder["job_ref"], holder["job_id"], created=holder["job_ref"] == job.job_ref)


def _portable(
    namespace_id: int,
    definition_ids: Mapping[str, int],
    jobs: Sequence[NewJob],
    now: datetime | None,
    fused: bool = False,
    tenants: Mapping[str, int] | None = None,
) -> Verb[list[Enqueued]]:
    out: list[Enqueued] = []
    tenants = tenants or {}
    events: list[dict[str, object]] = []
    tags: list[dict[str, object]] = []
    places = yield from _book_lanes(namespace_id, jobs, now)
    for index, job in enumerate(jobs):
        definition_id = definition_ids[job.definition]
        lane_id, lane_seq = places.get(index, (None, None))
        if job.dedup_key is not None and job.dedup_mode != 1:
            yield execute(
                "release_dedup_key",
                {
                    "now": now,
                    "namespace_id": namespace_id,
                    "dedup_key": job.dedup_key,
                    "dedup_mode": job.dedup_mode,
                    "dedup_window_ms": job.dedup_window_ms,
                },
            )
        row = yield fetch_one(
            "insert_job",
            {
                "now": now,
                "job_ref": job.job_ref,
                "namespace_id": namespace_id,
                "definition_id": definition_id,
                "dedup_key": job.dedup_key,
                "correlation_key": job.correlation_key,
                "concurrency_key": job.concurrency_key,
                "input_codec": job.input_codec,
                "input": job.input,
                "deadline_at": job.deadline_at,
                "deadline_strict": job.deadline_strict,
                "parent_id": job.parent_id,
                "root_id": job.root_id,
                "child_name": job.child_name,
                "trace_context": job.trace_context,
                "tenant_id": None if job.tenant is None else tenants[job.tenant],
                "dedup_mode": job.dedup_mode,
                "dedup_window_ms": job.dedup_window_ms,
            },
        )
        if row is None:
            yield from _refuse_retired([definition_id])  # skipped by insert_job's guard
            holder = yield fetch_one(
                "job_by_ref_or_dedup_key",
                {
                    "namespace_id": namespace_id,
                    "job_ref": job.job_ref,
                    "dedup_key": job.dedup_key,
                    "parent_id": job.parent_id,
                    "child_name": job.child_name,
                },
            )
            out.append(_resolve(job, holder))
            continue
        job_id = row["job_id"]
        yield execute(
            "insert_runtime",
            {
                "now": now,
                "job_id": job_id,
                "namespace_id": namespace_id,
                "definition_id": definition_id,
                "status": int(JobStatus.READY if lane_id is None else JobStatus.BLOCKED),
                "priority": job.priority,
                "run_at": job.run_at,
                "delay_ms": job.delay_ms,
                "lane_id": lane_id,
                "lane_seq": lane_seq,
                "gated": job.concurrency_key is not None,
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
    # Members were written blocked; a lane that had nobody unfinished gets its head now.
    yield from promote_lanes([(lane_id, None) for lane_id, _ in places.values()], now, fused)
    return out


def _book_lanes(
    namespace_id: int, jobs: Sequence[NewJob], now: datetime | None
) -> Verb[dict[int, tuple[int, int]]]:
    """Book each lane member's place, in batch order; answers {index in batch: (lane id,
    position)}. The lock on each lane is held to commit, so members of concurrent producers
    never interleave. Existing lanes are locked in id order, the order settles use, then new
    ones by name, so a batch touching several lanes cannot deadlock with them."""
    members: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        if job.lane is not None:
            members.setdefault(job.lane, []).append(index)
    order = sorted(members)
    if len(order) > 1:
        rows = yield fetch_all(
            "lane_ids", {"namespace_id": namespace_id, "names": json.dumps(order)}
        )
        known = {row["name"]: row["lane_id"] for row in rows}
        order.sort(key=lambda lane: (lane not in known, known.get(lane, 0), lane))
    places: dict[int, tuple[int, int]] = {}
    for lane in order:
        indexes = members[lane]
        lane_id, first = yield from book_lane(namespace_id, lane, len(indexes), now)
        places.update({index: (lane_id, first + n) for n, index in enumerate(indexes)})
    return places


def _lineage(jobs: Sequence[NewJob]) -> dict[str, list[Any] | None]:
    """The deadline and lineage arrays of fused_enqueue. Most batches have neither: NULL
    arrays then (unnest pads them with NULLs), so the common enqueue sends five fewer arrays."""
    if not any(j.parent_id is not None or j.deadline_at is not None for j in jobs):
        return dict.fromkeys(
            ("deadline_ats", "deadline_stricts", "parent_ids", "root_ids", "child_names")
        )
    return {
        "deadline_ats": [j.deadline_at for j in jobs],
        "deadline_stricts": [j.deadline_strict for j in jobs],
        "parent_ids": [j.parent_id for j in jobs],
        "root_ids": [j.root_id for j in jobs],
        "child_names": [j.child_name for j in jobs],
    }


def _fused(
    namespace: str,
    namespace_id: int,
    definition_ids: Mapping[str, int],
    jobs: Sequence[NewJob],
    now: datetime | None,
    channel: str | None,
    tenants: Mapping[str, int],
) -> Verb[list[Enqueued]]:
    if len(jobs) == 1:
        rows = yield from _fused_one(namespace, namespace_id, definition_ids, jobs[0], now, channel,
                                     tenants)  # fmt: skip
    else:
        rows = yield from _fused_many(
            namespace, namespace_id, definition_ids, jobs, now, channel, tenants
        )
    for job, row in zip(jobs, rows, strict=True):
        if row["retired"]:  # the statement wrote nothing for the whole batch
            raise DefinitionRetiredError(job.definition)
    return (yield from _holders(namespace_id, jobs, rows))


def _fused_one(
    namespace: str,
    namespace_id: int,
    definition_ids: Mapping[str, int],
    job: NewJob,
    now: datetime | None,
    channel: str | None,
    tenants: Mapping[str, int],
) -> Verb[list[Mapping[str, Any]]]:
    """The common call, one job: values, not arrays (``fused_enqueue_one``)."""
    rows = yield fetch_all(
        "fused_enqueue_one",
        {
            "now": now,
            "namespace": namespace,
            "channel": channel,
            "namespace_id": namespace_id,
            "job_ref": job.job_ref,
            "definition_id": definition_ids[job.definition],
            "dedup_key": job.dedup_key,
            "correlation_key": job.correlation_key,
            "concurrency_key": job.concurrency_key,
            "codec": job.input_codec,
            "input": job.input,
            "priority": job.priority,
            "run_at": job.run_at,
            "delay": job.delay_ms,
            "audit": audited(job.audit_level, EventCode.ENQUEUED),
            "deadline_at": job.deadline_at,
            "deadline_strict": job.deadline_strict,
            "parent_id": job.parent_id,
            "root_id": job.root_id,
            "child_name": job.child_name,
            "trace_context": job.trace_context,
            "tenant_id": None if job.tenant is None else tenants[job.tenant],
            "tags": list(job.tags),
        },
        alone=True,
    )
    return list(rows)


def _fused_many(
    namespace: str,
    namespace_id: int,
    definition_ids: Mapping[str, int],
    jobs: Sequence[NewJob],
    now: datetime | None,
    channel: str | None,
    tenants: Mapping[str, int],
) -> Verb[list[Mapping[str, Any]]]:
    rows = yield fetch_all(
        "fused_enqueue",
        {
            "now": now,
            "namespace": namespace,
            "channel": channel,
            "namespace_id": namespace_id,
            "job_refs": [j.job_ref for j in jobs],
            "definition_ids": [definition_ids[j.definition] for j in jobs],
            "dedup_keys": [j.dedup_key for j in jobs],
            "correlation_keys": [j.correlation_key for j in jobs],
            "concurrency_keys": [j.concurrency_key for j in jobs],
            "codecs": [j.input_codec for j in jobs],
            "inputs": [j.input for j in jobs],
            "priorities": [j.priority for j in jobs],
            "run_ats": [j.run_at for j in jobs],
            "delays": [j.delay_ms for j in jobs],
            "audit": [audited(j.audit_level, EventCode.ENQUEUED) for j in jobs],
            **_lineage(jobs),
            # Like the lineage arrays: NULL for an untraced batch, the common case.
            "trace_contexts": [j.trace_context for j in jobs]
            if any(j.trace_context is not None for j in jobs)
            else None,
            # NULL for a batch naming no tenant; a child's NULL takes its parent's tenant.
            "tenant_ids": [None if j.tenant is None else tenants[j.tenant] for j in jobs]
            if tenants
            else None,
            "tag_refs": [j.job_ref for j in jobs for _ in j.tags],
            "tags": [tag for j in jobs for tag in j.tags],
        },
        alone=True,
    )
    return list(rows)


def _holders(
    namespace_id: int, jobs: Sequence[NewJob], rows: Sequence[Mapping[str, Any]]
) -> Verb[list[Enqueued]]:
    """What each job became: written, or the job that holds the key that refused it."""
    refused = [job for job, row in zip(jobs, rows, strict=True) if row["job_id"] is None]
    holders: dict[str, Mapping[str, Any]] = {}
    if refused:
        found = yield fetch_all(
            "jobs_by_ref_or_dedup",
            {
                "namespace_id": namespace_id,
                "job_refs": [j.job_ref for j in refused],
                "dedup_keys": [j.dedup_key for j in refused if j.dedup_key is not None],
                "parent_ids": [j.parent_id for j in refused if j.parent_id is not None],
                "child_names": [j.child_name for j in refused if j.child_name is not None],
            },
        )
        for row in found:
            holders[row["job_ref"]] = row
            if row["dedup_key"] is not None:
                holders[f"dedup:{row['dedup_key']}"] = row
            if row["parent_id"] is not None:
                holders[f"child:{row['parent_id']}:{row['child_name']}"] = row
    out = []
    for job, row in zip(jobs, rows, strict=True):
        if row["job_id"] is not None:
            out.append(Enqueued(job.job_ref, row["job_id"], created=True))
        else:
            holder = (
                holders.get(job.job_ref)
                or holders.get(f"dedup:{job.dedup_key}")
                or holders.get(f"child:{job.parent_id}:{job.child_name}")
            )
            out.append(_resolve(job, holder))
    return out
