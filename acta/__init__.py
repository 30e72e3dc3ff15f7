"""acta: durable background jobs whose only durable truth is SQL.

Declare jobs on an ``Acta`` application, enqueue them (alone, in a batch, delayed, or inside
your own transaction), and run peer workers against the same ledger. Every state change is a
row you can SELECT through the curated views.
"""

from acta.app import Acta
from acta.backoff import Backoff
from acta.clock import Clock, ManualClock, SystemClock
from acta.context import Cancellation, JobCancelledError, JobContext
from acta.definition import JobDefinition, JobRequest
from acta.errors import (
    ActaError,
    ConfigurationError,
    ConflictError,
    DatabaseUnavailableError,
    InputDecodeError,
    InvalidJobRefError,
    InvalidNameError,
    InvalidPolicyError,
    JobNotFoundError,
    PayloadError,
    PayloadTooLargeError,
    SchemaError,
    UnknownJobError,
    ValidationError,
)
from acta.ids import JobRef
from acta.ledger.facade import LedgerHook
from acta.model.codes import AuditLevel, EventCode, JobStatus, Outcome, Reason, WorkerStatus
from acta.model.rows import EventInfo, JobInfo, WorkerInfo
from acta.policy.job import JobPolicy

__version__ = "0.1.0"

__all__ = [
    "Acta",
    "ActaError",
    "AuditLevel",
    "Backoff",
    "Cancellation",
    "Clock",
    "ConfigurationError",
    "ConflictError",
    "DatabaseUnavailableError",
    "EventCode",
    "EventInfo",
    "InputDecodeError",
    "InvalidJobRefError",
    "InvalidNameError",
    "InvalidPolicyError",
    "JobCancelledError",
    "JobContext",
    "JobDefinition",
    "JobInfo",
    "JobNotFoundError",
    "JobPolicy",
    "JobRef",
    "JobRequest",
    "JobStatus",
    "LedgerHook",
    "ManualClock",
    "Outcome",
    "PayloadError",
    "PayloadTooLargeError",
    "Reason",
    "SchemaError",
    "SystemClock",
    "UnknownJobError",
    "ValidationError",
    "WorkerInfo",
    "WorkerStatus",
    "__version__",
]
