"""A Django ``TaskResult`` read from acta's ledger: the job's row and its events.

Statuses: ready, blocked, suspended and paused jobs are READY; dispatched and executing ones
RUNNING; succeeded SUCCESSFUL; failed and cancelled FAILED. ``enqueued_at`` is the job's
creation, ``started_at`` and ``last_attempted_at`` the first and last execution's start,
``finished_at`` the terminal event's instant. Each execution's worker incarnation is one entry of
``worker_ids``; each failed execution is one ``TaskError`` (the exception's module-qualified
class and the traceback acta recorded).
"""

from __future__ import annotations

import builtins
import json
import traceback
from typing import Any

from django.tasks import TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.utils.module_loading import import_string

from acta.app import Acta
from acta.ids import JobRef
from acta.model.codes import EventCode, JobStatus, Outcome
from acta.model.rows import EventInfo

_STATUS = {
    JobStatus.DISPATCHED: TaskResultStatus.RUNNING,
    JobStatus.EXECUTING: TaskResultStatus.RUNNING,
    JobStatus.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    JobStatus.CANCELLED: TaskResultStatus.FAILED,
}
_FAILED = {Outcome.FAILED, Outcome.TIMED_OUT} if hasattr(Outcome, "TIMED_OUT") else {Outcome.FAILED}


def read_result(app: Acta, ref: JobRef, backend: str) -> TaskResult:
    """The task result of job ``ref``; JobNotFoundError when ``app``'s namespace has none."""
    info = app.get(ref)
    events = app.events(ref)
    payload: dict[str, Any] = json.loads(info.input or b"{}")
    status = _STATUS.get(info.status, TaskResultStatus.READY)
    starts = [e for e in events if e.code is EventCode.EXECUTION_STARTED]
    result = TaskResult(
        task=import_string(payload["task"]),
        id=str(ref),
        status=status,
        enqueued_at=info.created_at,
        started_at=starts[0].at if starts else None,
        last_attempted_at=starts[-1].at if starts else None,
        finished_at=events[-1].at if info.status.terminal and events else None,
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=backend,
        errors=[_error(e) for e in events if _failed(e)],
        worker_ids=[e.worker or "" for e in starts],
    )
    if info.status is JobStatus.SUCCEEDED:
        object.__setattr__(result, "_return_value", app.result(ref))
    return result


def _failed(event: EventInfo) -> bool:
    return event.code is EventCode.EXECUTION_FINISHED and event.outcome in _FAILED


class TaskRaised(Exception):
    """What the runner raises for a task's exception, so the ledger keeps what Django's
    ``TaskError`` needs: ``module.Class: message`` then the task's own traceback (acta records
    an exception as its bare class name and message)."""

    @classmethod
    def of(cls, exc: BaseException) -> TaskRaised:
        kind = type(exc)
        told = "".join(traceback.format_exception(exc)).rstrip()
        return cls(f"{kind.__module__}.{kind.__qualname__}: {exc}\n{told}")


_PREFIX = f"{TaskRaised.__name__}: "


def _error(event: EventInfo) -> TaskError:
    message = event.message or ""
    if not message.startswith(_PREFIX):  # not raised by the task (an acta timeout, say)
        head, _, rest = message.partition("\n")
        name = head.split(":")[0]
        path = f"builtins.{name}" if isinstance(getattr(builtins, name, None), type) else name
        return TaskError(exception_class_path=path, traceback=rest)
    head, _, rest = message.removeprefix(_PREFIX).partition("\n")
    return TaskError(exception_class_path=head.split(":")[0], traceback=rest)
