"""Run one persisted job in this process, under the debugger (``acta jobs debug``).

The job is claimed like any claim would claim it, by a worker incarnation of its own, so
nothing else can run it meanwhile and its settle is an ordinary, fenced one: succeeded,
retried, failed, exactly as a worker would have written it. Before the handler runs,
``breakpoint()`` is called (``sys.breakpointhook``: pdb unless ``PYTHONBREAKPOINT`` says
otherwise); step into the handler from there. The debugging worker's heartbeat is an hour, so
its lease lasts four: a handler paused in the debugger is not taken back by recovery. It never
heartbeats while it sits in the debugger, so stop within that time.

A job that cannot be claimed is refused with a ``DebugRefusedError`` that says why: unknown to
this application, finished, running on a worker, not due yet, parked or paused.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acta.errors import ActaError, JobNotFoundError
from acta.instant import timer
from acta.ledger import read
from acta.model.codes import JobStatus
from acta.runtime.deployment import Deployment
from acta.runtime.run import RunEnd
from acta.runtime.worker import Worker

DEBUG_HEARTBEAT = 3600.0
"""Seconds: the longest heartbeat a worker takes, so the lease lasts four hours."""


class DebugRefusedError(ActaError):
    """The job cannot be debugged now; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Debugged:
    """How the debugged run ended, and the job's status after its settle."""

    job_ref: str
    ended: RunEnd
    status: JobStatus


async def debug_job(
    deployment: Deployment, ref: str, *, stop: bool = True, hook: Callable[[], Any] | None = None
) -> Debugged:
    """Claim the job ``ref`` and run its handler here; ``stop`` False runs it without the
    breakpoint. ``hook`` replaces ``sys.breakpointhook`` (tests)."""
    ledger, namespace = deployment.ledger, deployment.namespace
    info = await ledger.run_async(lambda: read.job(ref, namespace), name="read")
    if info is None:
        raise JobNotFoundError(f"no job {ref} in namespace {namespace!r}")
    definition = deployment.registry.handled().get(info.name)
    if definition is None or definition.handler is None:
        raise DebugRefusedError(
            f"{ref} is a {info.name!r} job and this application has no handler for it: "
            "pass the --app that declares it"
        )
    _refuse_unclaimable(ref, info.status, info.next_run_at, ledger.clock.now())
    worker = Worker(deployment, executors=1, heartbeat=DEBUG_HEARTBEAT)
    handler = definition.handler
    if stop:
        definition.handler = _stopping(handler, hook or sys.breakpointhook)
    try:
        run = await worker.claim_one(info.job_id)
        if run is None:
            raise DebugRefusedError(f"{ref} could not be claimed: another worker took it first")
        ended = await worker.execute(run)
    finally:
        definition.handler = handler
        await worker.shutdown()
    after = await ledger.run_async(lambda: read.job(ref, namespace), name="read")
    assert after is not None
    return Debugged(ref, ended, after.status)


def _refuse_unclaimable(ref: str, status: JobStatus, next_run_at: Any, now: Any) -> None:
    if status.terminal:
        raise DebugRefusedError(f"{ref} has {status.label}: a finished job does not run again")
    if status in (JobStatus.DISPATCHED, JobStatus.EXECUTING):
        raise DebugRefusedError(
            f"{ref} is running on a worker now ({status.label}): it is not debugged beside it"
        )
    if status is JobStatus.PAUSED:
        raise DebugRefusedError(f"{ref} is paused: resume it first (acta jobs resume {ref})")
    if status is JobStatus.BLOCKED:
        raise DebugRefusedError(f"{ref} waits behind the head of its lane: it cannot run yet")
    due = timer(next_run_at)
    if status is JobStatus.SUSPENDED and due is None:
        raise DebugRefusedError(f"{ref} is suspended on a wait with no timer: signal it first")
    if due is not None and due > now:
        raise DebugRefusedError(f"{ref} is not due until {due.isoformat()}: it cannot run yet")


def _stopping(handler: Callable[..., Any], hook: Callable[[], Any]) -> Callable[..., Any]:
    """The handler, entered through the debugger: step in (``s``) from the breakpoint."""
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def stop_async(*args: Any, **kwargs: Any) -> Any:
            hook()
            return await handler(*args, **kwargs)

        return stop_async

    @functools.wraps(handler)
    def stop_sync(*args: Any, **kwargs: Any) -> Any:
        hook()
        return handler(*args, **kwargs)

    return stop_sync
