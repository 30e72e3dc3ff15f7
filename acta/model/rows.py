"""Frozen records that cross the provider seam: commands in, rows out.

They carry decisions already made in Python (which status, which events, how long to wait), so
a provider only binds and executes. Nothing here does I/O or reads the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acta.model.codes import (
    AuditLevel,
    EventCode,
    JobStatus,
    Outcome,
    Reason,
    WorkerStatus,
)


@dataclass(frozen=True, slots=True)
class DefinitionSpec:
    """The policy of one job definition as the ledger stores it."""

    name: str
    max_attempts: int
    backoff: str
    timeout_ms: int | None
    priority: int
    audit_level: AuditLevel
    concurrency_limit: int | None = None
    meter: str | None = None
    """The rate meter the definition's starts feed (None: no rate limit)."""
    retention_ms: int | None = 7 * 86_400_000
    """How long its finished jobs are kept, in ms (None: forever); see acta.runtime.retention."""
    tenant_scope: str | None = None
    """'required', 'forbidden' or None: its enqueues must, must not, or may name a tenant."""
    tags: str = "[]"
    """The definition's own tags as a sorted JSON array."""


@dataclass(frozen=True, slots=True)
class NewJob:
    """One job to enqueue, already validated and encoded."""

    job_ref: str
    definition: str
    input_codec: int
    input: bytes
    priority: int
    run_at: datetime | None
    delay_ms: int
    dedup_key: str | None
    correlation_key: str | None
    tags: tuple[str, ...]
    audit_level: AuditLevel
    lane: str | None = None
    concurrency_key: str | None = None
    deadline_at: datetime | None = None
    deadline_strict: bool = False
    parent_id: int | None = None
    """Set for a child job: its parent, its family's root and its name under the parent."""
    root_id: int | None = None
    child_name: str | None = None
    trace_context: str | None = None
    """The enqueuing span's W3C trace context (JSON), when a recording span was current."""
    tenant: str | None = None
    """The registered tenant key the job is about (None: none, or its parent's for a child)."""
    dedup_mode: int = 1
    """How long ``dedup_key`` refuses a repeat: 1 forever, 2 while unfinished, 3 within
    ``dedup_window_ms`` of the holder's creation (acta.definition.DEDUP_MODES)."""
    dedup_window_ms: int | None = None

    @property
    def portable_only(self) -> bool:
        """Whether the one-statement enqueue cannot write it (a lane member: its place in line
        is booked row by row; a key in mode 2 or 3: its holder may have to release it first)."""
        return self.lane is not None or (self.dedup_key is not None and self.dedup_mode != 1)


@dataclass(frozen=True, slots=True)
class Enqueued:
    """What enqueue did with one NewJob: its ref, and whether it was a new row."""

    job_ref: str
    job_id: int
    created: bool


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A worker incarnation about to register."""

    incarnation: str
    host: str
    pid: int
    executors: int
    heartbeat_ms: int
    tags: str = "[]"
    """Its tags as a sorted JSON array."""


@dataclass(frozen=True, slots=True)
class Registration:
    """Ids a registered worker needs for its hot path."""

    worker_id: int
    namespace_id: int
    definition_ids: dict[str, int]
    slot_ids: dict[str, int]
    """The recurring slots the registration ensured, by their deduplication key."""
    drifts: tuple[str, ...] = ()
    """Contract drifts the ``warn`` policy let through, one line each (to log)."""

    @property
    def recovery_job_id(self) -> int:
        return self.slot_ids.get("sys.recovery", 0)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A job this worker now leases (dispatched), with what it needs to run it."""

    job_id: int
    job_ref: str
    name: str
    definition_id: int
    namespace_id: int
    epoch: int
    attempts: int
    executions: int
    priority: int
    input_codec: int
    input: bytes
    correlation_key: str | None
    created_at: datetime
    lane_id: int | None = None
    concurrency_key: str | None = None
    ticket_at: datetime | None = None
    """The rate meter turn this job booked earlier, if it holds one."""
    parent_id: int | None = None
    root_id: int | None = None
    deadline_at: datetime | None = None
    deadline_strict: bool = False
    parent_ref: str | None = None
    root_ref: str | None = None
    trace_context: str | None = None
    """The trace context stored at enqueue (acta.telemetry), if the enqueue was traced."""
    max_attempts: int | None = None
    """The job's own attempt limit (an operator's amend); None: its definition's."""


@dataclass(frozen=True, slots=True)
class Bounced:
    """A claimed job a gate turned away: it is ready again at ``until``, no attempt spent."""

    gate: str
    """Which gate: ``"concurrency"`` or ``"rate"`` (``"unknown"`` when a retried admission
    found its own earlier, committed bounce)."""
    name: str
    until: datetime | None


@dataclass(frozen=True, slots=True)
class Started:
    """A run that began: its execution number and any pending control request."""

    execution: int
    cancel_requested: int
    """The pending control code (``Control``): 0 none, else why the job is to be cancelled."""


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One ledger event to append with a transition."""

    code: EventCode
    execution: int | None = None
    outcome: Outcome | None = None
    reason: Reason | None = None
    message: str | None = None
    detail: str | None = None
    duration_ms: int | None = None
    actor: str | None = None  # the operator whose verb this records; None: the runtime


@dataclass(frozen=True, slots=True)
class AlertCause:
    """A failure a settle reports to the alerting incidents (acta.ledger.alerting): its reason
    class, the error text, and whether the job failed for good. Kept apart from the events,
    which the audit level may drop."""

    reason: Reason
    error: str
    final: bool


@dataclass(frozen=True, slots=True)
class Transition:
    """A guarded change of one runtime row, with the events that explain it.

    The guard is ``(job_id, epoch, status in expect)``, plus ``owner`` for worker writes and
    ``lapsed`` for recovery. ``delay_ms`` None keeps next_run_at; otherwise it becomes now plus
    the delay. ``on_cancel`` replaces this plan when an operator asked to cancel meanwhile.
    """

    job_id: int
    job_ref: str
    namespace_id: int
    epoch: int
    expect: tuple[JobStatus, ...]
    status: JobStatus
    owner: int | None = None
    worker_id: int | None = None
    lapsed: bool = False
    delay_ms: int | None = None
    charge: int = 0
    events: tuple[EventRecord, ...] = ()
    result: tuple[int, bytes] | None = None
    on_cancel: Transition | None = None
    lane_id: int | None = None
    """The job's lane, if it has one (a settle in a lane must promote in its transaction)."""
    parent_id: int | None = None
    """The job's parent, if it is a child (its terminal settle releases the parent's latch)."""
    run_at: datetime | None = None
    """An absolute next_run_at (a durable wait's instant); wins over ``delay_ms``."""
    wait: WaitRef | None = None
    """For a suspension: the wait it parks on. Checked under the row lock: if it is already
    satisfied (the signal came, no child is open) the job is made ready instead."""
    slot: bool = False
    """A run of a recurring slot: written one by one, where the settle can close its firing."""
    alert: AlertCause | None = None
    """A failure the definition's alert profile reports: opens or joins its incident."""


@dataclass(frozen=True, slots=True)
class WaitRef:
    """The durable wait a suspension parks on: its kind code and name."""

    kind: int
    name: str
    execution: int = 0
    """The execution that parks on it."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """What a heartbeat learned: is this incarnation alive, which leases it lost, and which
    of its jobs an operator asked to cancel."""

    alive: bool
    lost: frozenset[int] = frozenset()
    cancel_requested: Mapping[int, int] = field(default_factory=dict)
    """Job id -> the control code of its pending cancel request."""
    policy_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Operators' policy overrides of the namespace, by job name (acta.policy.override)."""


@dataclass(frozen=True, slots=True)
class LapsedLease:
    """A lease recovery found expired."""

    job_id: int
    job_ref: str
    namespace_id: int
    status: JobStatus
    executions: int
    attempts: int
    epoch: int
    owner: int | None
    max_attempts: int
    audit_level: AuditLevel
    name: str


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What one recovery transaction did."""

    dead_workers: tuple[str, ...] = ()
    recovered: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    more: bool = False
    """A full batch: lapsed leases may remain for another pass."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A job as the read API returns it."""

    job_id: int
    job_ref: str
    namespace: str
    namespace_id: int
    name: str
    status: JobStatus
    priority: int
    attempts: int
    max_attempts: int
    executions: int
    next_run_at: datetime
    created_at: datetime
    updated_at: datetime
    lease_epoch: int
    lease_expires_at: datetime | None
    dedup_key: str | None
    correlation_key: str | None
    tags: tuple[str, ...]
    input_codec: int
    input: bytes | None = field(default=None, repr=False)
    cancel_requested: bool = False
    lane: str | None = None
    lane_seq: int | None = None
    """The job's place in its lane (positions grow in enqueue commit order)."""
    concurrency_key: str | None = None
    parent_ref: str | None = None
    """The job that spawned this one (a child job), and the first job of its family."""
    root_ref: str | None = None
    child_name: str | None = None
    deadline_at: datetime | None = None
    deadline_strict: bool = False
    tenant: str | None = None
    """The key of the tenant the job is about, if any."""


@dataclass(frozen=True, slots=True)
class EventInfo:
    """One ledger event as the read API returns it."""

    event_id: int
    at: datetime
    code: EventCode
    execution: int | None
    epoch: int | None
    outcome: Outcome | None
    reason: Reason | None
    duration_ms: int | None
    message: str | None
    detail: str | None
    worker: str | None
    actor: str | None = None  # the operator whose verb wrote it; None: the runtime


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker incarnation as the read API returns it."""

    worker_id: int
    incarnation: str
    namespace: str
    host: str
    pid: int
    status: WorkerStatus
    executors: int
    heartbeat_ms: int
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None


@dataclass(frozen=True, slots=True)
class GateInfo:
    """A concurrency gate as the read API returns it."""

    kind: str
    """``"key"`` (named by a concurrency_key) or ``"job"`` (a definition's limit)."""
    name: str
    limit: int
    """The limit in force: the operator's override if set, else the declared one."""
    declared_limit: int
    override: int | None
    held: int
    holders: tuple[str, ...]
    """The refs of the jobs holding a slot now."""
    version: int
    """Pass it as ``expected_version`` to change the limit."""


@dataclass(frozen=True, slots=True)
class MeterInfo:
    """A rate meter as the read API returns it."""

    name: str
    rate: str
    """The rate in force (``"10/s"``): the operator's override if set, else the declared one."""
    declared_rate: str
    overridden: bool
    next_free_at: datetime | None
    """The earliest instant a new arrival gets a turn (in the past when it has room now)."""
    version: int
