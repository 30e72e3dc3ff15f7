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
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from acta.codec import check_size, codecs
from acta.context import StepOptions
from acta.definition import JobDefinition, JobRequest
from acta.duration import parse_duration
from acta.errors import (
    LeaseLostError,
    PayloadError,
    StepConflictError,
    StepInterruptedError,
    ValidationError,
)
from acta.ids import JobRef
from acta.instant import check_instant
from acta.ledger import control
from acta.ledger import durable as verbs
from acta.model.codes import AuditLevel, EventCode, JobStatus, Reason, StepState, WaitKind
from acta.model.rows import NewJob, WaitRef
from acta.names import validate_key
from acta.outcome import Cancel, ChildOutcome, Directive, SignalResult
from acta.producer import deadline_of
from acta.provider.verb import Verb
from acta.runtime.environment import RunEnv
from acta.runtime.handler import describe
from acta.runtime.run import Run, Stop
from acta.shape import codec_for, from_data, to_data

T = TypeVar("T")

NO_TIMER = datetime(9999, 1, 1, tzinfo=UTC)
"""next_run_at of a wait with no timeout: far enough that nothing claims it by time (the
ledger's queries treat anything from year 9000 on as "no timer")."""

_NAME_MAX = 200
_TEXT_MAX = 4000
_SEVERITIES = {"info": 1, "warning": 2, "critical": 3}


class Suspend(BaseException):
    """Raised through the handler to park its job on a durable wait. A BaseException, so a
    handler's ``except Exception`` does not swallow it."""

    def __init__(self, wait: WaitRef, until: datetime | None, what: str) -> None:
        super().__init__(what)
        self.wait = wait
        self.until = until
        self.what = what


class EndRun(BaseException):
    """Raised through the handler to end the run as ``directive`` says (a signal wait that
    timed out cancels the job)."""

    def __init__(self, directive: Directive, reason: Reason) -> None:
        super().__init__(directive.reason)
        self.directive = directive
        self.reason = reason


def _name(value: str, field: str) -> str:
    return validate_key(value, field=field, max_length=_NAME_MAX)


def _ms(value: Any, field: str) -> int:
    wait = parse_duration(value, field=field, allow_zero=True)
    return -(-wait // timedelta(milliseconds=1))


def _text(value: object, field: str, limit: int = _TEXT_MAX) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ValidationError(field, f"got {value!r:.80}", f"1 to {limit} characters of text")
    if "\x00" in value:
        raise ValidationError(field, "contains U+0000", "text without NUL characters")
    return value


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


class DurablePort:
    """``DurableOps`` for one started run (see ``acta.context``)."""

    def __init__(
        self, env: RunEnv, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        job = run.job
        self.env, self.run, self.definition = env, run, definition
        self.lease = verbs.RunLease(
            job.job_id, job.job_ref, job.namespace_id, job.epoch, env.identity.worker_id, execution
        )
        self.audit = definition.policy.audit
        self._steps: dict[str, verbs.StoredStep] | None = None
        self._variables: dict[str, tuple[int, bytes]] = {}
        self._bodies: dict[str, str] = {}
        self._types: dict[str, Any] = {}
        self._running: set[str] = set()
        self._sleeps = 0
        self._children_waits = 0

    # -- plumbing -----------------------------------------------------------------------

    def _now(self) -> datetime | None:
        return self.env.ledger.now()

    async def _read(self, make: Callable[[], Verb[T]]) -> T:
        return await self.env.ledger.run_async(make, name="durable")

    async def _write(self, make: Callable[[], Verb[T | None]], what: str) -> T:
        done = await self.env.ledger.run_async(make, name="durable")
        if done is None or done is False:
            self.run.stop(Stop.LEASE_LOST)
            raise LeaseLostError(f"{what} was refused: job {self.lease.job_ref} lost its lease")
        return done

    def _encode(self, value: Any, tp: Any, field: str) -> tuple[int, bytes]:
        data = to_data(value, tp, field)
        codec = codec_for(type(value) if tp is Any and isinstance(value, str | bytes) else tp)
        return codec.code, check_size(codec.encode(data), self.env.registry.payload_cap, field)

    @staticmethod
    def _decode(stored: tuple[int, bytes] | None, tp: Any, field: str) -> Any:
        if stored is None:
            return None
        return from_data(codecs.by_code(stored[0]).decode(stored[1]), tp, field)

    async def _load(self) -> dict[str, verbs.StoredStep]:
        if self._steps is None:
            job_id = self.lease.job_id
            steps, variables = await self._read(lambda: verbs.load(job_id))
            if self._steps is None:
                self._steps, self._variables = steps, variables
        assert self._steps is not None
        return self._steps

    def _audited(self) -> bool:
        return self.audit is AuditLevel.FULL

    # -- steps --------------------------------------------------------------------------

    async def step_begin(
        self, name: str, fn: Callable[..., Any], options: StepOptions
    ) -> tuple[bool, Any]:
        _name(name, "step name")
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
            return True, self._decode(stored.value, tp, f"step {name}")
        if stored is not None and stored.at_most_once:
            if stored.state is StepState.BEGUN:
                await self._mark_interrupted(name, None)
            raise StepInterruptedError(name, stored.execution, stored.error)
        if name in self._running:
            raise StepConflictError(f"step {name!r} is already running in this execution")
        self._running.add(name)
        if options.at_most_once:
            await self._step_write(name, StepState.BEGUN, True, None, None, EventCode.STEP_BEGUN)
        return False, None

    async def step_finish(self, name: str, value: Any, options: StepOptions) -> Any:
        self._running.discard(name)
        tp = self._types.get(name, Any)
        try:
            stored = self._encode(value, tp, f"step {name}")
        except PayloadError as exc:
            if options.at_most_once:  # it ran: it must not run again, even if unrecorded
                await self._mark_interrupted(name, f"its result cannot be stored: {exc}")
            raise PayloadError(f"step {name}", f"its result cannot be stored: {exc}") from None
        event = EventCode.STEP_COMPLETED if self._audited() else None
        await self._step_write(name, StepState.COMPLETED, options.at_most_once, stored, None, event)
        return self._decode(stored, tp, f"step {name}")

    async def step_failed(self, name: str, error: BaseException, options: StepOptions) -> None:
        self._running.discard(name)
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
        _name(name, "variable name")
        await self._load()
        stored = self._variables.get(name)
        if stored is None:
            return default
        return self._decode(stored, Any if tp is None else tp, f"variable {name}")

    async def set(self, name: str, value: Any, tp: Any) -> None:
        _name(name, "variable name")
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
            _text(message, "message", 1000)
        lease, now = self.lease, self._now()
        value, whole = float(done), None if total is None else float(total)
        await self._write(
            lambda: verbs.write_progress(lease, value, whole, message, now), "the progress write"
        )

    # -- waits --------------------------------------------------------------------------

    async def _arm(
        self, kind: WaitKind, name: str, until: datetime | None, ms: int | None, reopen: bool
    ) -> verbs.WaitState:
        lease, now = self.lease, self._now()

        def make() -> Verb[verbs.WaitState | None]:
            return verbs.arm_wait(
                lease, int(kind), name, until=until, ms=ms, reopen=reopen, now=now
            )

        state: verbs.WaitState = await self._write(make, f"the {kind.label} wait {name!r}")
        return state

    async def sleep(self, name: str | None, until: datetime | None, delay: Any) -> None:
        if name is None:
            self._sleeps += 1
            name = f"sleep-{self._sleeps}"
        else:
            _name(name, "sleep name")
        ms = None
        if until is not None:
            until = check_instant(until, "instant")
        else:
            ms = _ms(delay, "duration")
        state = await self._arm(WaitKind.SLEEP, name, until, ms, False)
        if state.due_at is None or state.expired:
            return
        raise Suspend(WaitRef(int(WaitKind.SLEEP), name), state.due_at, f"sleep:{name}")

    async def wait_signal(self, name: str, tp: Any, timeout: Any, try_form: bool) -> Any:
        _name(name, "signal name")
        ms = None if timeout is None else _ms(timeout, "timeout")
        state = await self._arm(WaitKind.SIGNAL, name, None, ms, False)
        job_id = self.lease.job_id
        signal = await self._read(lambda: verbs.signal_of(job_id, name))
        if signal is not None and (state.due_at is None or signal.sent_at <= state.due_at):
            value = self._decode(signal.value, Any if tp is None else tp, f"signal {name}")
            return SignalResult(True, value) if try_form else value
        if state.expired:
            if try_form:
                return SignalResult(False)
            raise EndRun(
                Cancel(f"signal {name!r} did not come before {state.due_at}"),
                Reason.WAIT_TIMED_OUT,
            )
        raise Suspend(WaitRef(int(WaitKind.SIGNAL), name), state.due_at, f"signal:{name}")

    # -- children -----------------------------------------------------------------------

    async def spawn(
        self, job: Any, inputs: list[Any], names: list[str], options: dict[str, Any]
    ) -> list[JobRef]:
        definition = self.env.registry.resolve(job)
        for name in names:
            _name(name, "child name")
        if len(set(names)) != len(names):
            raise ValidationError("name", "two children of one call share a name", "unique names")
        claimed = self.run.job
        options = {"correlation_key": claimed.correlation_key, **options}
        requests = [
            JobRequest.build(
                definition, value, payload_cap=self.env.registry.payload_cap, **options
            )
            for value in inputs
        ]
        clock_now = self.env.clock.now()
        made = JobRef.many(int(clock_now.timestamp() * 1000), len(requests))
        root = claimed.root_id if claimed.root_id is not None else claimed.job_id
        children = [
            NewJob(
                job_ref=text,
                definition=definition.name,
                input_codec=definition.input_codec.code,
                input=r.payload,
                priority=r.priority,
                run_at=r.run_at,
                delay_ms=r.delay // timedelta(milliseconds=1),
                dedup_key=r.dedup_key,
                correlation_key=r.correlation_key,
                tags=r.tags,
                audit_level=definition.policy.audit,
                lane=r.lane,
                concurrency_key=r.concurrency_key,
                deadline_at=deadline_of(r, clock_now),
                deadline_strict=r.deadline_strict,
                parent_id=claimed.job_id,
                root_id=root,
                child_name=name,
            )
            for r, (_, text), name in zip(requests, made, names, strict=True)
        ]
        specs = {definition.name: definition.spec()}
        lease, now, namespace = self.lease, self._now(), self.env.namespace
        audited = self._audited()

        def make() -> Verb[list[Any] | None]:
            return verbs.spawn(lease, namespace, specs, children, audited, now)

        written = await self._write(make, "the spawn of children")
        if self.env.ring is not None:
            self.env.ring()
        return [JobRef.parse(w.job_ref) for w in written]

    async def wait_children(self, timeout: Any, try_form: bool) -> list[ChildOutcome]:
        self._children_waits += 1
        name = f"children-{self._children_waits}"
        ms = None if timeout is None else _ms(timeout, "timeout")
        job_id = self.lease.job_id
        children = await self._read(lambda: verbs.children_of(job_id))
        if any(c.status < 100 for c in children):
            state = await self._arm(WaitKind.CHILDREN, name, None, ms, True)
            if not state.expired:
                raise Suspend(
                    WaitRef(int(WaitKind.CHILDREN), name), state.due_at, f"children:{name}"
                )
            late = {c.job_ref for c in children if c.status < 100}
            await self._give_up(children)
            children = await self._read(lambda: verbs.children_of(job_id))
        else:
            late = set()
        return [self._outcome(c, c.job_ref in late) for c in children]

    async def _give_up(self, children: list[verbs.StoredChild]) -> None:
        """The bounded wait expired: cancel the children that have not finished."""
        namespace, now = self.env.namespace, self._now()
        for child in children:
            if child.status >= 100:
                continue
            ref = child.job_ref
            await self._read(
                lambda ref=ref: control.cancel(  # type: ignore[misc]
                    ref,
                    namespace,
                    "its parent's bounded wait for its children expired",
                    now,
                    code=Reason.PARENT_GAVE_UP,
                )
            )

    def _outcome(self, child: verbs.StoredChild, late: bool) -> ChildOutcome:
        definition = self.env.registry.get(child.name)
        value: Any = None
        if child.value is not None:
            tp = (
                Any
                if definition is None or definition.result_type is None
                else definition.result_type
            )
            value = self._decode(child.value, tp, f"result of {child.job_ref}")
        return ChildOutcome(
            ref=JobRef.parse(child.job_ref),
            name=child.child_name,
            job=child.name,
            status=JobStatus(child.status).label,
            result=value,
            timed_out=late,
        )

    # -- notes and alerts ---------------------------------------------------------------

    async def note(self, text: str) -> None:
        _text(text, "text")
        lease, now = self.lease, self._now()
        await self._write(lambda: verbs.note(lease, EventCode.NOTE, text, None, now), "the note")

    async def alert(self, title: str, detail: str | None, severity: str) -> None:
        _text(title, "title", _NAME_MAX)
        if detail is not None:
            _text(detail, "detail")
        if severity not in _SEVERITIES:
            raise ValidationError(
                "severity", f"got {severity!r}", "'info', 'warning' or 'critical'"
            )
        lease, now, level = self.lease, self._now(), _SEVERITIES[severity]
        await self._write(lambda: verbs.open_alert(lease, level, title, detail, now), "the alert")
