"""One claimed job, from dispatched to settled: start, decode, run the handler, settle.

The run races three things (``acta.runtime.handler``): the handler, its timeout (judged by the
clock, so the test clock can expire it), and a stop request from the worker (lease lost, cancel
asked, shutdown, kill). Whatever ends it, the outcome becomes one guarded settle.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

from acta.definition import JobDefinition
from acta.errors import (
    InputDecodeError,
    PayloadError,
    StepInterruptedError,
)
from acta.ledger.fence import RunLease
from acta.ledger.schedule import open_slot_run
from acta.model.codes import Control, EventCode, Outcome, Reason, audited
from acta.model.rows import Bounced, Started
from acta.outcome import Directive, Fail
from acta.policy import settlement
from acta.policy.gate import NO_GATES
from acta.runtime.attempt import Attempt, keep_trying, past_deadline, settle
from acta.runtime.environment import RunEnv
from acta.runtime.handler import (
    Interrupted,
    decode_input,
    describe,
    encode_result,
    invoke,
)
from acta.runtime.port import EndRun, Suspend
from acta.runtime.run import Run, RunEnd, Stop
from acta.runtime.system_jobs import SYSTEM_JOBS, SystemJob

log = logging.getLogger("acta.worker")
T = TypeVar("T")


async def execute(env: RunEnv, run: Run) -> RunEnd:
    """Carry one claimed job to a settled state (or drop it if this worker lost it)."""
    job = run.job
    system = SYSTEM_JOBS.get(job.name)
    definition = env.definition(job.name) if system is None else system.definition
    unavailable = system is not None and not system.available(env)
    if definition is None or unavailable or (definition.handler is None and system is None):
        env.skip_definition(job.definition_id, job.name)
        plan = settlement.handed_back(
            job,
            run.started.execution if run.started else None,
            env.identity.worker_id,
            None,
            Reason.NO_HANDLER,
            f"worker {env.identity.incarnation} has no handler for {job.name!r}",
        )
        return await settle(env, run, plan, RunEnd.REARMED)
    policy = definition.policy
    if run.stop_reason is not None:
        execution = run.started.execution if run.started else None
        return await _interrupted(env, run, definition, execution, None)
    started = run.started
    if started is None and system is None and past_deadline(env, job):
        # Claimed after its strict deadline: fail it before its run starts, so the ledger
        # records no execution and no attempt (the claim never starts such a job itself).
        message = "its strict deadline passed before it ran"
        plan = settlement.expired(job, env.identity.worker_id, policy, message)
        return await settle(env, run, plan, RunEnd.FAILED)
    if started is None:
        gates = NO_GATES if system is not None else definition.gates(job.concurrency_key)
        if gates.any:
            admitted = await keep_trying(
                env, run, lambda: env.admit(job, gates, policy.audit), "admit"
            )
            if isinstance(admitted, Bounced):
                run.back_at = admitted.until
                return RunEnd.BOUNCED  # no attempt spent; the executor goes back to the pool
            kept: Started | RunEnd | None = admitted
        else:
            audit_started = audited(policy.audit, EventCode.EXECUTION_STARTED)
            kept = await keep_trying(
                env, run, lambda: env.committer.start(job, audit_started), "start"
            )
        if isinstance(kept, RunEnd):
            return kept
        started = kept
    if env.killed:
        return RunEnd.KILLED
    if started is None:
        return RunEnd.LEASE_LOST
    execution = started.execution
    if started.cancel_requested:
        plan = settlement.cancelled(
            job, execution, env.identity.worker_id, policy, 0, **_cancel(started.cancel_requested)
        )
        return await settle(env, run, plan, RunEnd.CANCELLED)
    attempt = Attempt(env, run, definition, execution)
    if system is not None:
        return await _run_system(attempt, system)
    if definition.policy.schedules or job.job_id in env.identity.schedule_slots:
        idle = await _open_firing(attempt)
        if idle is not None:
            return idle
    if attempt.past_deadline():
        return await attempt.end(Fail("its strict deadline passed"), Reason.DEADLINE)
    try:
        value = decode_input(definition, job)
    except InputDecodeError as exc:
        return await attempt.fail(
            Outcome.FAILED,
            Reason.INPUT_UNDECODABLE,
            f"stored input does not decode: {exc}",
            final=True,
        )
    try:
        try:
            returned = await invoke(env, run, definition, attempt.context, attempt.limit(), value)
        finally:
            env.slots.give_back(run)  # the next run may start while this one settles
    except Suspend as wait:
        return await attempt.suspend(wait)
    except EndRun as ended:
        return await attempt.end(ended.directive, ended.reason)
    except StepInterruptedError as exc:
        return await attempt.fail(Outcome.FAILED, Reason.STEP_INTERRUPTED, str(exc), final=True)
    except Interrupted as stop:
        if stop.reason is Stop.TIMEOUT and attempt.past_deadline():
            return await attempt.end(Fail("its strict deadline passed"), Reason.DEADLINE)
        if stop.reason is Stop.TIMEOUT:
            if run.thread_running and not attempt.is_last:
                # A retry must not start beside a thread still running this job (Python cannot
                # stop it): keep the lease, renewed by heartbeats, until the thread returns.
                await run.thread_or_stop()
                # A shutdown that came meanwhile changes nothing if the thread is back: the run
                # timed out, and that is what is recorded.
                if run.stop_reason is not None and (
                    run.stop_reason is not Stop.SHUTDOWN or run.thread_running
                ):
                    return await _interrupted(env, run, definition, execution, attempt.elapsed())
            limit = policy.timeout.total_seconds() if policy.timeout else 0
            message = f"execution timed out after {limit:g} s"
            return await attempt.fail(Outcome.TIMED_OUT, Reason.TIMEOUT, message)
        return await _interrupted(env, run, definition, execution, attempt.elapsed())
    except Exception as exc:
        return await attempt.fail(Outcome.FAILED, Reason.HANDLER_ERROR, describe(exc))
    if isinstance(returned, Directive):
        return await attempt.end(returned, Reason.HANDLER_DECIDED)
    try:
        result = encode_result(definition, returned, env.registry.payload_cap)
    except PayloadError as exc:
        # The same code returns the same value: retrying cannot help.
        message = f"the return value cannot be stored: {exc}"
        return await attempt.fail(Outcome.FAILED, Reason.RESULT_UNENCODABLE, message, final=True)
    plan = settlement.succeeded(
        job, execution, env.identity.worker_id, policy, attempt.elapsed(), result
    )
    return await settle(env, run, plan, RunEnd.COMPLETED)


async def _run_system(attempt: Attempt, system: SystemJob) -> RunEnd:
    """A recurring system job: whatever its run does, the slot re-arms for the next one."""
    env, run = attempt.env, attempt.run
    try:
        await invoke(env, run, None, attempt.context, None, system.run)
    except Interrupted:
        return await _interrupted(
            env, run, attempt.definition, attempt.execution, attempt.elapsed()
        )
    except Exception as exc:
        return await attempt.rearm(system.every(env), describe(exc))
    return await attempt.rearm(system.every(env))


async def _open_firing(attempt: Attempt) -> RunEnd | None:
    """A schedule slot's run: learn (and record) what it fires. Returns how the run ended when
    it has nothing to fire or lost its lease; None when the handler must run the firing."""
    env, run, job = attempt.env, attempt.run, attempt.run.job
    lease = RunLease(
        job.job_id,
        job.job_ref,
        job.namespace_id,
        job.epoch,
        env.identity.worker_id,
        attempt.execution,
    )
    opened = await keep_trying(
        env,
        run,
        lambda: env.ledger.run_async(lambda: open_slot_run(lease, env.ledger.now()), name="fire"),
        "open firing",
    )
    if isinstance(opened, RunEnd):
        return opened
    if opened is None:
        return RunEnd.LEASE_LOST
    if not opened.slot:
        return None  # an enqueued run of a scheduled job: no firing
    run.slot = True
    if opened.firing is None:
        plan = settlement.slot_idle(
            job,
            attempt.execution,
            env.identity.worker_id,
            attempt.definition.policy,
            opened.wake,
            attempt.elapsed(),
        )
        return await settle(env, run, plan, RunEnd.REARMED)
    run.firing = opened.firing
    return None


def _cancel(control: int) -> dict[str, Any]:
    """The reason and message of a cancel that a control request asked for."""
    if control == Control.PARENT_GAVE_UP:
        return {"reason": Reason.PARENT_GAVE_UP, "message": "cancelled: its parent stopped waiting"}
    return {}


async def _interrupted(
    env: RunEnv,
    run: Run,
    definition: JobDefinition[Any, Any],
    execution: int | None,
    duration_ms: int | None,
) -> RunEnd:
    reason = run.stop_reason
    if reason is Stop.KILLED:
        return RunEnd.KILLED
    if reason is Stop.LEASE_LOST:
        return RunEnd.LEASE_LOST  # someone else owns the row now: write nothing
    policy = definition.policy
    if reason is Stop.CANCEL:
        plan = settlement.cancelled(
            run.job,
            execution,
            env.identity.worker_id,
            policy,
            duration_ms,
            **_cancel(run.cancel_control),
        )
        return await settle(env, run, plan, RunEnd.CANCELLED)
    if run.thread_running and run.thread is not None:
        # A handler that honours its cancellation returns within moments: give it those.
        # The stop's grace, if the handler race already began it; otherwise it begins now.
        since = run.grace_from or env.clock.now()
        await env.within_grace(asyncio.wrap_future(run.thread), since)
    if run.thread_running:
        # Handing the job back would let a peer run it beside this thread. Leave it leased:
        # once this worker stops renewing, recovery takes it back and records the lease loss.
        log.warning(
            "job %s stays leased: its handler thread is still running at shutdown; recovery "
            "takes it back when the lease lapses",
            run.job.job_ref,
        )
        return RunEnd.LEFT_LEASED
    plan = settlement.handed_back(
        run.job,
        execution,
        env.identity.worker_id,
        policy,
        Reason.SHUTDOWN,
        f"worker {env.identity.incarnation} shut down before the run finished",
        duration_ms,
    )
    return await settle(env, run, plan, RunEnd.REARMED)
