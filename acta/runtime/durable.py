"""The durable port of one run: what a handler's context calls to keep work across re-entry.

A handler is re-entered from the top after a crash, a retry or a wait. Completed steps return
their stored result, variables keep their values, an armed wait keeps its instant. Every write
goes through the ledger under the run's lease (``acta.ledger.durable``); a refused write means
the lease is gone, and the run is stopped. Leaving the worker to wait is an exception the
handler does not see (``Suspend``): the run settles as suspended and the claim brings the job
back when its timer is due or a signal or its last child releases it.
"""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from acta.context import StepOptions
from acta.definition import JobDefinition
from acta.errors import (
    PayloadError,
    StepConflictError,
    StepInterruptedError,
    ValidationError,
)
from acta.instant import check_instant
from acta.ledger import durable as verbs
from acta.ledger.doubt import once
from acta.model.codes import EventCode, Reason, StepState, WaitKind
from acta.model.rows import WaitRef
from acta.outcome import Cancel, SignalResult
from acta.provider.verb import Verb
from acta.runtime import locks
from acta.runtime.children import Children
from acta.runtime.environment import RunEnv
from acta.runtime.handler import describe
from acta.runtime.port import NAME_MAX, EndRun, Suspend, check_name, check_text, wait_ms
from acta.runtime.run import Run

_SEVERITIES = {"info": 1, "warning": 2, "critical": 3}


def _body_id(fn: Callable[..., Any]) -> str:
    """What identifies a step body: where its code is (a bound method or a partial counts as
    its function), so the same code called again is the same body."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    name = getattr(target, "__qualname__", None) or repr(target)
    where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return f"{getattr(target, '__module__', '')}.{name}@{where}"


def _returns(fn: Callable[..., Any], options: StepOptions) -> Any:
    if options.returns is not None:
        return options.returns
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return Any
    returned = hints.get("return", Any)
    return Any if returned is type(None) else returned


class DurablePort(Children):
    """``DurableOps`` for one started run (see ``acta.context``)."""

    def __init__(
        self, env: RunEnv, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        super().__init__(env, run, definition, execution)
        self._steps: dict[str, verbs.StoredStep] | None = None
        self._variables: dict[str, tuple[int, bytes]] = {}
        self._bodies: dict[str, str] = {}
        self._types: dict[str, Any] = {}
        self._running: set[str] = set()
        self._started: dict[str, float] = {}
        """When each running step's body began, on the worker's monotonic clock (metrics)."""
        self._sleeps = 0

    async def _load(self) -> dict[str, verbs.StoredStep]:
        if self._steps is None:
            job_id = self.lease.job_id
            steps, variables = await self._read(lambda: verbs.load(job_id))
            if self._steps is None:
                self._steps, self._variables = steps, variables
        assert self._steps is not None
        return self._steps

    # -- steps --------------------------------------------------------------------------

    async def step_begin(
        self, name: str, fn: Callable[..., Any], options: StepOptions
    ) -> tuple[bool, Any]:
        check_name(name, "step name")
        if not callable(fn):
            raise ValidationError("fn", f"got {fn!r:.80}", "a function to run as the step body")
        body = _body_id(fn)
        if self._bodies.setdefault(name, body) != body:
            raise StepConflictError(
                f"step {name!r} was already used in this execution with another body "
                f"({self._bodies[name]}); give each piece of work its own step name"
            )
        steps = await self._load()
        stored = steps.get(name)
        tp = self._types[name] = _returns(fn, options)
        if stored is not None and stored.state is StepState.COMPLETED:
            self._step_ended(name, "replayed")
            return True, self._decode(stored.value, tp, f"step {name}")
        if stored is not None and stored.at_most_once:
            if stored.state is StepState.BEGUN:
                await self._mark_interrupted(name, None)
            self._step_ended(name, "interrupted")
            raise StepInterruptedError(name, stored.execution, stored.error)
        if name in self._running:
            raise StepConflictError(f"step {name!r} is already running in this execution")
        self._running.add(name)
        if options.at_most_once:
            await self._step_write(name, StepState.BEGUN, True, None, None, EventCode.STEP_BEGUN)
        self._started[name] = self.env.clock.monotonic()
        return False, None

    async def step_finish(self, name: str, value: Any, options: StepOptions) -> Any:
        self._running.discard(name)
        body_ended = self.env.clock.monotonic()  # the writes below are not the body's time
        tp = self._types.get(name, Any)
        try:
            stored = self._encode(value, tp, f"step {name}")
        except PayloadError as exc:
            self._step_ended(name, "failed", body_ended)
            if options.at_most_once:  # it ran: it must not run again, even if unrecorded
                await self._mark_interrupted(name, f"its result cannot be stored: {exc}")
            raise PayloadError(f"step {name}", f"its result cannot be stored: {exc}") from None
        event = EventCode.STEP_COMPLETED if self._audited() else None
        await self._step_write(name, StepState.COMPLETED, options.at_most_once, stored, None, event)
        self._step_ended(name, "completed", body_ended)
        return self._decode(stored, tp, f"step {name}")

    def _step_ended(self, name: str, outcome: str, until: float | None = None) -> None:
        started = self._started.pop(name, None)
        watch = self.env.ledger.telemetry
        if watch is not None:
            end = self.env.clock.monotonic() if until is None else until
            seconds = None if started is None else end - started
            watch.step_ended(self.env.namespace, self.run.job.name, outcome, seconds)

    async def step_failed(self, name: str, error: BaseException, options: StepOptions) -> None:
        self._running.discard(name)
        self._step_ended(name, "failed")
        if options.at_most_once:
            await self._mark_interrupted(name, describe(error))

    async def step_pause(self, options: StepOptions, failures: int) -> None:
        backoff = options.backoff or self.definition.policy.backoff
        delay = backoff.delay(failures, self.env.rng)
        await self.env.clock.sleep_until(self.env.clock.now() + delay)
        self.run.cancellation.raise_if_cancelled()

    async def _mark_interrupted(self, name: str, error: str | None) -> None:
        await self._step_write(
            name, StepState.INTERRUPTED, True, None, error, EventCode.STEP_INTERRUPTED
        )

    async def _step_write(
        self,
        name: str,
        state: StepState,
        at_most_once: bool,
        value: tuple[int, bytes] | None,
        error: str | None,
        event: EventCode | None,
    ) -> None:
        lease, now = self.lease, self._now()
        if event is EventCode.STEP_BEGUN and not self._audited():
            event = None

        def make() -> Verb[bool]:
            return verbs.write_step(
                lease,
                name,
                state,
                at_most_once=at_most_once,
                value=value,
                error=error,
                event=event,
                now=now,
            )

        await self._write(make, f"the write of step {name!r}")
        steps = await self._load()
        steps[name] = verbs.StoredStep(state, at_most_once, lease.execution, value, error)

    # -- variables and progress ---------------------------------------------------------

    async def get(self, name: str, tp: Any, default: Any) -> Any:
        check_name(name, "variable name")
        await self._load()
        stored = self._variables.get(name)
        if stored is None:
            return default
        return self._decode(stored, Any if tp is None else tp, f"variable {name}")

    async def set(self, name: str, value: Any, tp: Any) -> None:
        check_name(name, "variable name")
        stored = self._encode(value, Any if tp is None else tp, f"variable {name}")
        lease, now = self.lease, self._now()
        await self._load()
        await self._write(
            lambda: verbs.write_variable(lease, name, stored, now), f"variable {name!r}"
        )
        self._variables[name] = stored

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        for field, number in (("done", done), ("total", total)):
            if number is None and field == "total":
                continue
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise ValidationError(field, f"got {number!r:.80}", "a finite number >= 0")
            if not math.isfinite(number) or number < 0:
                raise ValidationError(field, f"got {number!r}", "a finite number >= 0")
        if message is not None:
            check_text(message, "message", 1000)
        lease, now = self.lease, self._now()
        value, whole = float(done), None if total is None else float(total)
        await self._write(
            lambda: verbs.write_progress(lease, value, whole, message, now), "the progress write"
        )

    # -- waits --------------------------------------------------------------------------

    async def sleep(self, name: str | None, until: datetime | None, delay: Any) -> None:
        if name is None:
            self._sleeps += 1
            name = f"sleep-{self._sleeps}"
        else:
            check_name(name, "sleep name")
        ms = None
        if until is not None:
            until = check_instant(until, "instant")
        else:
            ms = wait_ms(delay, "duration")
        state = await self._arm(WaitKind.SLEEP, name, until, ms, False)
        if state.due_at is None or state.expired:
            return
        raise Suspend(
            WaitRef(int(WaitKind.SLEEP), name, self.lease.execution), state.due_at, f"sleep:{name}"
        )

    async def wait_signal(self, name: str, tp: Any, timeout: Any, try_form: bool) -> Any:
        check_name(name, "signal name")
        ms = None if timeout is None else wait_ms(timeout, "timeout")
        state = await self._arm(WaitKind.SIGNAL, name, None, ms, False)
        signal = state.signal
        # A wait is expired from its instant on (the line the sender's release draws too): a
        # signal counts if it came before that instant, or before the wait was even armed.
        if signal is not None and (
            state.due_at is None
            or signal.sent_at < state.due_at
            or signal.sent_at <= state.armed_at
        ):
            value = self._decode(signal.value, Any if tp is None else tp, f"signal {name}")
            return SignalResult(True, value) if try_form else value
        if state.expired:
            if try_form:
                return SignalResult(False)
            raise EndRun(
                Cancel(f"signal {name!r} did not come before {state.due_at}"),
                Reason.WAIT_TIMED_OUT,
            )
        raise Suspend(
            WaitRef(int(WaitKind.SIGNAL), name, self.lease.execution),
            state.due_at,
            f"signal:{name}",
        )

    # -- notes and alerts ---------------------------------------------------------------

    async def note(self, text: str) -> None:
        check_text(text, "text")
        lease, now = self.lease, self._now()
        # One note per call, however often the provider runs the verb again.
        await self._write(once(verbs.note, lease, EventCode.NOTE, text, None, now), "the note")

    async def alert(self, title: str, detail: str | None, severity: str) -> None:
        check_text(title, "title", NAME_MAX)
        if detail is not None:
            check_text(detail, "detail")
        if severity not in _SEVERITIES:
            raise ValidationError(
                "severity", f"got {severity!r}", "'info', 'warning' or 'critical'"
            )
        lease, now, level = self.lease, self._now(), _SEVERITIES[severity]
        # One alert per call, however often the provider runs the verb again.
        await self._write(once(verbs.open_alert, lease, level, title, detail, now), "the alert")
        if self.env.ledger.telemetry is not None:
            self.env.ledger.telemetry.alert_opened(self.env.namespace, self.run.job.name, severity)

    # -- locks (acta.runtime.locks) -----------------------------------------------------

    async def lock_acquire(self, key: str, limit: timedelta | None) -> None:
        await locks.acquire(self, key, limit)

    async def lock_release(self, key: str) -> None:
        await locks.release(self, key)
