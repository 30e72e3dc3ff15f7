"""acta: durable background jobs whose only durable truth is SQL.

Declare jobs on an ``Acta`` application, enqueue them (alone, in a batch, delayed, or inside
your own transaction), and run peer workers against the same ledger. Every state change is a
row you can SELECT through the curated views.
"""

from acta.about import __version__
from acta.app import Acta
from acta.backoff import Backoff
from acta.blobref import BlobRef
from acta.clock import Clock, ManualClock, SystemClock
from acta.codec import Codec, FunctionCodec, codecs
from acta.context import Cancellation, JobCancelledError, JobContext
from acta.definition import JobDefinition, JobRequest
from acta.errors import (
    ActaError,
    BlobIntegrityError,
    ConfigurationError,
    ConflictError,
    DatabaseUnavailableError,
    InputDecodeError,
    InvalidJobRefError,
    InvalidNameError,
    InvalidPolicyError,
    JobFailedError,
    JobNotFoundError,
    JobPurgedError,
    LeaseLostError,
    LockTimeoutError,
    PayloadError,
    PayloadTooLargeError,
    ScheduleNotFoundError,
    SchemaError,
    StepConflictError,
    StepInterruptedError,
    UnknownCodecError,
    UnknownJobError,
    UnknownOptionError,
    ValidationError,
    WaitTimeoutError,
)
from acta.ids import JobRef
from acta.ledger.facade import LedgerHook
from acta.model.codes import AuditLevel, EventCode, JobStatus, Outcome, Reason, WorkerStatus
from acta.model.rows import EventInfo, JobInfo, WorkerInfo
from acta.options import EnqueueOptions, JobOptions
from acta.outcome import (
    Cancel,
    ChildOutcome,
    Directive,
    Fail,
    Firing,
    Pause,
    Reschedule,
    SignalOutcome,
    SignalResult,
)
from acta.policy.job import JobPolicy
from acta.policy.schedule import Schedule
from acta.schedules import ScheduleInfo
from acta.settings import Setting
from acta.signals import Progress
from acta.sync_context import SyncJobContext

__all__ = [
    "Acta",
    "ActaError",
    "AuditLevel",
    "Backoff",
    "BlobIntegrityError",
    "BlobRef",
    "Cancel",
    "Cancellation",
    "ChildOutcome",
    "Clock",
    "Codec",
    "ConfigurationError",
    "ConflictError",
    "DatabaseUnavailableError",
    "Directive",
    "EnqueueOptions",
    "EventCode",
    "EventInfo",
    "Fail",
    "Firing",
    "FunctionCodec",
    "InputDecodeError",
    "InvalidJobRefError",
    "InvalidNameError",
    "InvalidPolicyError",
    "JobCancelledError",
    "JobContext",
    "JobDefinition",
    "JobFailedError",
    "JobInfo",
    "JobNotFoundError",
    "JobOptions",
    "JobPolicy",
    "JobPurgedError",
    "JobRef",
    "JobRequest",
    "JobStatus",
    "LeaseLostError",
    "LedgerHook",
    "LockTimeoutError",
    "ManualClock",
    "Outcome",
    "Pause",
    "PayloadError",
    "PayloadTooLargeError",
    "Progress",
    "Reason",
    "Reschedule",
    "Schedule",
    "ScheduleInfo",
    "ScheduleNotFoundError",
    "SchemaError",
    "Setting",
    "SignalOutcome",
    "SignalResult",
    "StepConflictError",
    "StepInterruptedError",
    "SyncJobContext",
    "SystemClock",
    "UnknownCodecError",
    "UnknownJobError",
    "UnknownOptionError",
    "ValidationError",
    "WaitTimeoutError",
    "WorkerInfo",
    "WorkerStatus",
    "__version__",
    "codecs",
]
