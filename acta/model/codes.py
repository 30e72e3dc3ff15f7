"""The small-integer code families stored in the ledger, with their names.

Rows store codes, never strings; the ``codes`` table carries each (family, code, name) so the
curated views can show names, and a test keeps that table, these enums and
docs/reference/codes.md in step. Numbers are frozen once released: add members, never renumber.
Terminal job statuses are the ones at 100 and above.
"""

from __future__ import annotations

from enum import IntEnum


class Coded(IntEnum):
    """An IntEnum whose members carry a kebab-case name and a one-line meaning."""

    description: str

    def __new__(cls, value: int, description: str = "") -> Coded:
        member = int.__new__(cls, value)
        member._value_ = value
        member.description = description
        return member

    @property
    def label(self) -> str:
        """The name shown in views and messages (``lease-lost``)."""
        return self.name.lower().replace("_", "-")

    # A printed code reads as its name (``failed``, not ``101``); the stored number stays what
    # int() and the database see (drivers bind the int, json writes the int).
    def __str__(self) -> str:
        return self.label

    def __format__(self, spec: str) -> str:
        return format(self.label, spec)

    @classmethod
    def family(cls) -> str:
        return FAMILIES[cls]


class JobStatus(Coded):
    READY = 10, "Waiting to be claimed; due at next_run_at (possibly in the future)."
    BLOCKED = 11, "Behind the head of its lane; not a claim candidate."
    DISPATCHED = 20, "Claimed under a lease; the handler has not started."
    EXECUTING = 21, "The handler is running under the lease."
    SUSPENDED = 30, "Parked on a durable wait (sleep, signal, children)."
    PAUSED = 31, "Held until an operator resumes it."
    SUCCEEDED = 100, "Terminal: the handler returned."
    FAILED = 101, "Terminal: attempts exhausted or a failure that cannot be retried."
    CANCELLED = 102, "Terminal: cancelled by an operator or by the handler."

    @property
    def terminal(self) -> bool:
        return self >= 100


class EventCode(Coded):
    ENQUEUED = 1, "The job was written to the ledger."
    EXECUTION_STARTED = 10, "A handler run began (pairs with execution-finished or lease-lost)."
    EXECUTION_FINISHED = 11, "A handler run ended; outcome and reason say how."
    RETRY_SCHEDULED = 12, "A failed run will be retried at next_run_at."
    HANDED_BACK = 13, "A worker returned a claimed job without spending an attempt."
    REARMED = 14, "A recurring job was set to run again at next_run_at."
    ADMITTED = 15, "The job passed its concurrency and rate gates and may start."
    BOUNCED = 16, "A gate turned the job away for now; it comes back at next_run_at."
    PROMOTED = 17, "The job became the head of its lane and may be claimed."
    GATE_CHANGED = 18, "An operator changed a concurrency limit or a rate."
    SUCCEEDED = 20, "The job reached succeeded."
    FAILED = 21, "The job reached failed."
    CANCELLED = 22, "The job reached cancelled."
    CANCEL_REQUESTED = 23, "Cancellation was asked for while the job was running."
    SUSPENDED = 24, "The job left its worker to wait (sleep, signal, children); message says why."
    SIGNALLED = 25, "A signal was sent to the job; message names it."
    RELEASED = 26, "A signal or the last child released the job's wait: it is ready again."
    RESCHEDULED = 27, "The handler asked to run again at next_run_at (no attempt spent)."
    PAUSED = 28, "The job was paused and waits for an operator to resume it."
    RESUMED = 29, "An operator resumed a paused job."
    LEASE_LOST = 30, "A lease lapsed; recovery took the job back from its worker."
    WRITE_FENCED = 31, "A worker write was refused because the lease epoch moved on."
    PURGED = 32, "Retention removed terminal job rows past their retention; message says which."
    STEP_BEGUN = 40, "An at-most-once step recorded its intent; its body runs next, at most once."
    STEP_COMPLETED = 41, "A durable step's result was recorded; re-entry returns it."
    STEP_INTERRUPTED = 42, "An at-most-once step was found begun without an outcome."
    CHILDREN_SPAWNED = 43, "The job enqueued child jobs; message says how many."
    NOTE = 44, "A note the handler wrote to its timeline."
    ALERT_OPENED = (
        45,
        "An alert was opened: by the handler (ctx.alert), or a failure incident by the settle "
        "that failed a job.",
    )
    FIRED = 46, "A recurring slot fired; message names the schedules and the scheduled instant."
    SCHEDULE_CHANGED = 47, "An operator paused, resumed, triggered or overrode a schedule."
    DELIVERED = 48, "The outbox relay delivered this job from a staged row; message names it."
    QUARANTINED = 49, "The outbox relay could not admit a staged row and quarantined it."
    QUARANTINE_DECIDED = 60, "An operator requeued or discarded a quarantined outbox row."
    POLICY_OVERRIDDEN = (
        63,
        "An operator overrode (or cleared) a definition's policy; detail: the override.",
    )
    SETTING_CHANGED = 61, "A durable setting was set or deleted; message names it and says why."
    CONTRACT_CHANGED = (
        62,
        ("A worker registered a job whose input or result shape differs from the recorded one."),
    )
    ALERT_RESOLVED = (
        80,
        "An alert was resolved: by an operator, or by sys.alerts after a later success.",
    )
    ALERT_ACKNOWLEDGED = 81, "An operator acknowledged an alert: no more reminders."
    ALERT_NOTIFIED = 82, "sys.alerts notified the channels of an alert; message says which failed."
    RESTARTED = (
        70,
        "An operator restarted a finished job with its stored input; message names the "
        "previous outcome.",
    )
    AMENDED = (
        71,
        "An operator changed the priority, attempt limit or tags of a waiting job; detail has "
        "old and new values.",
    )
    RUN_AT_CHANGED = 72, "An operator moved a waiting job's next run to next_run_at."
    CLAIMS_PAUSED = (
        73,
        "An operator paused claims of a definition or a namespace; message names which.",
    )
    CLAIMS_RESUMED = (
        74,
        "An operator resumed claims of a definition or a namespace; message names which.",
    )
    RETIRED = 75, "An operator retired a definition: paused for good, its queue cancelled."
    TENANT_REGISTERED = (
        64,
        "An operator registered a tenant; detail: its key, tags and metadata.",
    )
    TENANT_SUSPENDED = (
        65,
        "An operator suspended a tenant: its new enqueues are refused; detail names it.",
    )
    TENANT_RESUMED = 66, "An operator resumed a suspended tenant; detail names it."
    TENANT_UPDATED = (
        67,
        "An operator changed a tenant's tags or metadata; detail: old and new values.",
    )
    NAMESPACE_UPDATED = (
        68,
        "An operator changed a namespace's tags or metadata; detail: old and new values.",
    )
    WORKER_STARTED = 50, "A worker incarnation registered."
    WORKER_STOPPED = 51, "A worker shut down cleanly."
    WORKER_DIED = 52, "A silent worker was declared dead by recovery."


class Outcome(Coded):
    SUCCEEDED = 1, "The handler returned normally."
    FAILED = 2, "The handler raised, or its input could not be decoded."
    TIMED_OUT = 3, "The run exceeded the definition's execution timeout."
    CANCELLED = 4, "The run stopped because the job was cancelled."
    INTERRUPTED = 5, "The worker stopped the run (shutdown) and handed the job back."
    REARMED = 6, "A recurring run finished and re-armed its job."
    SUSPENDED = 7, "The run parked the job on a durable wait."
    RESCHEDULED = 8, "The handler asked to run again later."
    PAUSED = 9, "The handler paused the job for an operator."


class Reason(Coded):
    NONE = 0, "No reason recorded."
    HANDLER_ERROR = 1, "The handler raised an exception."
    TIMEOUT = 2, "The execution timeout elapsed."
    INPUT_UNDECODABLE = 3, "The stored input no longer decodes into the handler's input type."
    ATTEMPTS_EXHAUSTED = 4, "The last allowed attempt failed."
    LEASE_EXPIRED = 5, "The worker stopped renewing its lease."
    SHUTDOWN = 6, "The worker was shutting down."
    NO_HANDLER = 7, "This worker has no handler for the job's name."
    OPERATOR = 8, "An operator asked for it."
    WORKER_SILENT = 9, "The worker missed seven heartbeats."
    RESULT_UNENCODABLE = 10, "The handler's return value could not be encoded."
    CLEAN_EXIT = 11, "The worker exited normally."
    DEADLINE = 12, "The job's strict deadline passed."
    WAIT_TIMED_OUT = 13, "A signal or children wait expired before it was released."
    STEP_INTERRUPTED = 14, "An at-most-once step began and never recorded an outcome."
    HANDLER_DECIDED = 15, "The handler ended its run on purpose (fail, cancel, pause, reschedule)."
    PARENT_GAVE_UP = 16, "The parent's bounded wait expired before this child finished."
    MISFIRE_SKIPPED = 17, "A schedule was late and dropped its older due instants (skip)."


class WorkerStatus(Coded):
    ACTIVE = 1, "Registered and heartbeating."
    STOPPED = 2, "Shut down cleanly."
    DEAD = 3, "Declared dead after missing seven heartbeats; never revived."


class AuditLevel(Coded):
    OFF = 0, "Write no per-job events except lease safety events."
    FAILURES = 1, "Write only events about failures, retries and lease safety."
    FULL = 2, "Write the full timeline (default)."


class GateKind(Coded):
    KEY = 1, "Named by the concurrency_key of an enqueue."
    JOB = 2, "Named by a definition with a concurrency_limit."


class WaitKind(Coded):
    SLEEP = 1, "A durable sleep: due at its armed instant."
    SIGNAL = 2, "A wait for a named signal, with an optional timeout."
    CHILDREN = 3, "A wait for the job's unfinished children, with an optional timeout."


class StepState(Coded):
    BEGUN = 1, "An at-most-once step's intent is recorded; no outcome yet."
    COMPLETED = 2, "The step's result is stored; re-entry returns it without running the body."
    INTERRUPTED = 3, "Begun and never completed (or its at-most-once body raised): not run again."


class AlertKind(Coded):
    MANUAL = 1, "Opened by a handler with ctx.alert."
    FAILURE = 2, "A failure incident: failures of one definition for one reason class."


class AlertSeverity(Coded):
    INFO = 1, "For the record."
    WARNING = 2, "Someone should look."
    CRITICAL = 3, "Someone should act now."


class Misfire(Coded):
    SKIP = 0, "A late schedule fires once, for its latest due instant; older ones are dropped."
    CATCH_UP = 1, "A late schedule fires once, for its oldest due instant, covering the rest."


class SettingScope(Coded):
    GLOBAL = 1, "Applies to every namespace of the ledger."
    NAMESPACE = 2, "Applies to one namespace; wins over a global value."
    DEFINITION = 3, "Applies to one job name in one namespace; wins over the other two."


class Control(Coded):
    NONE = 0, "No pending request."
    CANCEL = 1, "Cancel the job when its current run ends."
    PARENT_GAVE_UP = 2, "Cancel the job when its current run ends: its parent stopped waiting."


FAMILIES: dict[type[Coded], str] = {
    JobStatus: "job_status",
    EventCode: "event",
    Outcome: "outcome",
    Reason: "reason",
    WorkerStatus: "worker_status",
    AuditLevel: "audit_level",
    Control: "control",
    GateKind: "gate_kind",
    WaitKind: "wait_kind",
    StepState: "step_state",
    AlertKind: "alert_kind",
    AlertSeverity: "alert_severity",
    Misfire: "misfire",
    SettingScope: "setting_scope",
}

ALL_FAMILIES: tuple[type[Coded], ...] = tuple(FAMILIES)

# Events that the FAILURES audit level keeps; lease safety events are always written.
# Notes, alerts and interrupted at-most-once steps are the handler's own words or an ambiguity
# someone must reconcile; firings, operator decisions and purges are how a schedule, an outbox
# row or a vanished job is explained later: all written at every audit level.
ALWAYS_AUDITED = frozenset(
    {
        EventCode.LEASE_LOST,
        EventCode.WRITE_FENCED,
        EventCode.NOTE,
        EventCode.ALERT_OPENED,
        EventCode.STEP_INTERRUPTED,
        EventCode.FIRED,
        EventCode.SCHEDULE_CHANGED,
        EventCode.QUARANTINED,
        EventCode.QUARANTINE_DECIDED,
        EventCode.PURGED,
        EventCode.SETTING_CHANGED,
        EventCode.CONTRACT_CHANGED,
        EventCode.POLICY_OVERRIDDEN,
    }
)
FAILURE_EVENTS = frozenset({EventCode.RETRY_SCHEDULED, EventCode.FAILED}) | ALWAYS_AUDITED


def audited(level: AuditLevel, code: EventCode, outcome: Outcome | None = None) -> bool:
    """Whether a definition at ``level`` writes event ``code`` (with a run ``outcome``)."""
    if code in ALWAYS_AUDITED or level is AuditLevel.FULL:
        return True
    if level is AuditLevel.OFF:
        return False
    if code is EventCode.EXECUTION_FINISHED:
        return outcome in (Outcome.FAILED, Outcome.TIMED_OUT)
    return code in FAILURE_EVENTS
