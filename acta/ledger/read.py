"""Read verbs: jobs, events, results and workers, mapped to frozen records."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from acta.model.codes import Control, EventCode, JobStatus, Outcome, Reason, WorkerStatus
from acta.model.rows import EventInfo, JobInfo, WorkerInfo
from acta.provider.verb import Verb, fetch_all, fetch_one

TAG_SEPARATOR = "\x1f"


def _job(row: dict[str, Any]) -> JobInfo:
    tags = row["tags"]
    return JobInfo(
        job_id=row["job_id"],
        job_ref=row["job_ref"],
        namespace=row["namespace"],
        namespace_id=row["namespace_id"],
        name=row["name"],
        status=JobStatus(row["status"]),
        priority=row["priority"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        executions=row["executions"],
        next_run_at=row["next_run_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        lease_epoch=row["lease_epoch"],
        lease_expires_at=row["lease_expires_at"],
        dedup_key=row["dedup_key"],
        correlation_key=row["correlation_key"],
        tags=tuple(sorted(tags.split(TAG_SEPARATOR))) if tags else (),
        input_codec=row["input_codec"],
        input=None if row["input"] is None else bytes(row["input"]),
        cancel_requested=row["control"] != Control.NONE,
        lane=row["lane"],
        lane_seq=row["lane_seq"],
        concurrency_key=row["concurrency_key"],
        parent_ref=row["parent_ref"],
        root_ref=row["root_ref"],
        child_name=row["child_name"],
        deadline_at=row["deadline_at"],
        deadline_strict=bool(row["deadline_strict"]),
        tenant=row.get("tenant"),
    )


def job(job_ref: str, namespace: str | None) -> Verb[JobInfo | None]:
    """The job with this ref in ``namespace`` (None: in any namespace, for operators)."""
    row = yield fetch_one("job_by_ref", {"job_ref": job_ref, "namespace": namespace})
    return None if row is None else _job(row)


def jobs(
    *,
    namespace: str | None,
    status: JobStatus | None,
    name: str | None,
    before_id: int | None,
    limit: int,
    include_system: bool,
    tenant: str | None = None,
) -> Verb[list[JobInfo]]:
    rows = yield fetch_all(
        "list_jobs",
        {
            "namespace": namespace,
            "status": None if status is None else int(status),
            "name": name,
            "before_id": before_id,
            "limit": limit,
            "include_system": 1 if include_system else 0,
            "tenant": tenant,
        },
    )
    return [_job(row) for row in rows]


def events(job_id: int) -> Verb[list[EventInfo]]:
    rows = yield fetch_all("job_events", {"job_id": job_id})
    return [event_info(row) for row in rows]


def event_info(row: Mapping[str, Any]) -> EventInfo:
    """An event row (the columns ``job_events`` selects) as the read API returns it."""
    return EventInfo(
        event_id=row["event_id"],
        at=row["at"],
        code=EventCode(row["code"]),
        execution=row["execution"],
        epoch=row["epoch"],
        outcome=None if row["outcome"] is None else Outcome(row["outcome"]),
        reason=None if row["reason"] is None else Reason(row["reason"]),
        duration_ms=row["duration_ms"],
        message=row["message"],
        detail=row["detail"],
        worker=row["worker"],
        actor=row["actor"],
    )


def result(job_id: int) -> Verb[tuple[int, bytes] | None]:
    row = yield fetch_one("job_result", {"job_id": job_id})
    return None if row is None else (row["codec"], bytes(row["body"]))


def workers(namespace: str | None) -> Verb[list[WorkerInfo]]:
    rows = yield fetch_all("list_workers", {"namespace": namespace})
    return [
        WorkerInfo(
            worker_id=row["worker_id"],
            incarnation=row["incarnation"],
            namespace=row["namespace"],
            host=row["host"],
            pid=row["pid"],
            status=WorkerStatus(row["status"]),
            executors=row["executors"],
            heartbeat_ms=row["heartbeat_ms"],
            started_at=row["started_at"],
            heartbeat_at=row["heartbeat_at"],
            stopped_at=row["stopped_at"],
        )
        for row in rows
    ]


def pending_work(namespace_id: int) -> Verb[tuple[int, datetime | None, datetime | None]]:
    """(unfinished user jobs, earliest ready due instant, earliest lease expiry)."""
    row = yield fetch_one("pending_work", {"namespace_id": namespace_id})
    return row["unfinished"], row["next_due_at"], row["next_lease_expiry_at"]


def next_due(namespace_id: int) -> Verb[datetime | None]:
    """The earliest due instant of any ready job, system jobs included."""
    row = yield fetch_one("next_due_any", {"namespace_id": namespace_id})
    return row["next_due_at"]  # type: ignore[no-any-return]
